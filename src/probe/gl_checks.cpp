// SPDX-License-Identifier: Apache-2.0
#include "probe/gl_checks.h"

#include <edgetensor/cuda.h>
#include <edgetensor/tensor.h>

#include <chrono>
#include <cstddef>
#include <exception>
#include <vector>

#include "text/format.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {
namespace {

namespace et = edgetensor;

constexpr std::size_t kBytes = 64 * 1024;

std::byte pattern(std::size_t i, unsigned seed) { return static_cast<std::byte>((i * 131u + seed * 29u + 7u) & 0xffu); }

et::Result<et::TensorDyn> allocate_pbo(const std::shared_ptr<et::gl::Context>& context, const char* name) {
  et::AllocateOptions alloc;
  alloc.memory = et::MemoryKind::GlPbo;
  alloc.gl_context = context;
  alloc.name = name;
  return et::TensorDyn::allocate({kBytes}, et::DType::U8, alloc);
}

}  // namespace

GlCheck gl_check(const et::gl::ContextOptions& options) {
  GlCheck result;
  auto context = et::gl::Context::create(options);
  if (!context) {
    result.reason = context.error().to_string();
    return result;
  }
  result.available = true;
  result.info = (*context)->info();
  auto tensor = allocate_pbo(*context, "edgetensor-gl-probe");
  if (!tensor) {
    result.pbo_detail = "allocate: " + tensor.error().to_string();
    return result;
  }
  {
    auto m = tensor->map_read();
    if (!m) {
      result.pbo_detail = "first read map: " + m.error().to_string();
      return result;
    }
    for (std::size_t i = 0; i < kBytes; ++i)
      if (m->bytes()[i] != std::byte{0}) {
        result.pbo_detail = text::format("new PBO not zero at byte {}", i);
        return result;
      }
  }
  {
    auto m = tensor->map_write();
    if (!m) {
      result.pbo_detail = "write map: " + m.error().to_string();
      return result;
    }
    for (std::size_t i = 0; i < kBytes; ++i) m->bytes()[i] = pattern(i, 0);
  }
  auto m = tensor->map_read();
  if (!m) {
    result.pbo_detail = "read map: " + m.error().to_string();
    return result;
  }
  for (std::size_t i = 0; i < kBytes; ++i)
    if (m->bytes()[i] != pattern(i, 0)) {
      result.pbo_detail = text::format("read back differs at byte {}", i);
      return result;
    }
  result.pbo_round_trip = true;
  result.pbo_detail = text::format(
      "{} B: zeros at creation, pattern written and read back through glMapBufferRange/glUnmapBuffer", kBytes);
  return result;
}

CudaGlRoundTrip cuda_gl_round_trip(const std::shared_ptr<et::gl::Context>& context) {
  CudaGlRoundTrip out;
  try {
    if (!et::cuda::available()) {
      out.detail = "CUDA unavailable: " + et::cuda::report().error;
      return out;
    }
    std::shared_ptr<et::gl::Context> ctx = context;
    if (!ctx) {
      auto c = et::gl::Context::create();
      if (!c) {
        out.detail = "no GL context: " + c.error().to_string();
        return out;
      }
      ctx = *c;
    }
    auto t = allocate_pbo(ctx, "edgetensor-cuda-gl-probe");
    if (!t) {
      out.detail = "allocate a PBO: " + t.error().to_string();
      return out;
    }
    {
      auto w = t->map_write();
      if (!w) {
        out.detail = "CPU write map: " + w.error().to_string();
        return out;
      }
      for (std::size_t i = 0; i < kBytes; ++i) w->bytes()[i] = pattern(i, 1);
    }
    std::vector<std::byte> host(kBytes);
    const auto t0 = std::chrono::steady_clock::now();
    auto m = et::cuda::map(*t);
    if (!m) {
      out.detail = "cuda::map: " + m.error().to_string();
      return out;
    }
    if (auto r = et::cuda::copy_device_to_host(host.data(), m->device_ptr(), kBytes); !r) {
      out.detail = "CUDA read of the PBO: " + r.error().to_string();
      return out;
    }
    for (std::size_t i = 0; i < kBytes; ++i)
      if (host[i] != pattern(i, 1)) {
        out.detail = text::format(
            "CUDA read of a CPU-written PBO differs at byte {} (device pointer does not alias the GL buffer)", i);
        return out;
      }
    for (std::size_t i = 0; i < kBytes; ++i) host[i] = pattern(i, 2);
    if (auto r = et::cuda::copy_host_to_device(m->device_ptr(), host.data(), kBytes); !r) {
      out.detail = "CUDA write of the PBO: " + r.error().to_string();
      return out;
    }
    const int device = m->device();
    m->unmap();
    const auto t1 = std::chrono::steady_clock::now();
    auto rm = t->map_read();
    if (!rm) {
      out.detail = "CPU read map after the CudaMap: " + rm.error().to_string();
      return out;
    }
    for (std::size_t i = 0; i < kBytes; ++i)
      if (rm->bytes()[i] != pattern(i, 2)) {
        out.detail = text::format("CPU read of a CUDA-written PBO differs at byte {}", i);
        return out;
      }
    out.ok = true;
    out.detail = text::format("64 KiB PBO on {} <-> CUDA device {}: both directions equal ({} us map+copies+unmap)",
                              ctx->info().renderer, device,
                              std::chrono::duration_cast<std::chrono::microseconds>(t1 - t0).count());
  } catch (const std::exception& e) {
    out.ok = false;
    out.detail = std::string("unexpected exception: ") + e.what();
  }
  return out;
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
