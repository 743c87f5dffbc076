// SPDX-License-Identifier: Apache-2.0
// The CUDA-GL path (issue 6): GL PBO storages reached from CUDA through cudaGraphicsGLRegisterBuffer.
// Built only with the GL backend (ET_WITH_EGL); cuda_gl_not_built.cpp answers otherwise.
//
//   Storage ──> GlHandle (DeviceHandle slot) ──shared──> GlRegistration <──shared── GlAttachment
//                                                                                  (PboState::attachments)
// The registration's CUDA state is GL-thread only. The attachment lives in the PBO's state, so the
// GL worker unregisters it (release_on_gl_thread) before glDeleteBuffers and before its context
// shuts down; the handle only posts map/unmap jobs. Sources of the CUDA facts: CUDA Runtime API,
// sections "OpenGL Interoperability" (cudaGLGetDevices, cudaGraphicsGLRegisterBuffer, cudaGLDeviceList)
// and "Graphics Interoperability" (cudaGraphics{Map,Unmap}Resources, ResourceGetMappedPointer,
// UnregisterResource).
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "text/format.h"

#include <edgetensor/gl.h>

#include "backends/gl_pbo/pbo.h"
#include "core/log_internal.h"
#include "cuda/cuda_internal.h"

namespace edgetensor::inline ET_ABI_NAMESPACE::cuda {

using edgetensor::detail::DeviceHandle;
using edgetensor::detail::GlWorker;
using edgetensor::detail::log;
using edgetensor::detail::PboAttachment;
using edgetensor::detail::PboBacking;
using edgetensor::detail::PboState;
using edgetensor::detail::Storage;

namespace detail {
namespace {

constexpr int kGLDeviceListAll = 1;                // cudaGLDeviceListAll
constexpr unsigned kGraphicsRegisterFlagsNone = 0;  // cudaGraphicsRegisterFlagsNone
constexpr unsigned kMaxGlDevices = 16;

// One cudaGraphicsResource of one PBO. Every field after the constants is touched on the GL thread only.
struct GlRegistration {
  const CudaRuntimeApi* api = nullptr;
  int device = 0;
  unsigned buffer = 0;  // GL name, for messages
  CudaGraphicsResource resource = nullptr;
  bool mapped = false;
  bool released = false;
};

// GL thread. Unmaps a mapped registration; failures are logged (nothing to retry).
void unmap_on_gl_thread(GlRegistration& reg, CudaStream stream) noexcept {
  if (!reg.mapped || reg.released) return;
  reg.mapped = false;
  auto guard = DeviceGuard::enter(*reg.api, reg.device);
  CudaGraphicsResource res = reg.resource;
  CudaError e = reg.api->cudaGraphicsUnmapResources(1, &res, stream);
  if (e != kCudaSuccess)
    log(LogLevel::Warning, "cudaGraphicsUnmapResources of GL buffer {} failed: {}", reg.buffer,
        describe_error(*reg.api, e));
}

// GL thread. Unregisters (unmapping first if a CudaMap is still open); idempotent.
void unregister_on_gl_thread(GlRegistration& reg) noexcept {
  if (reg.released) return;
  if (reg.mapped) {
    log(LogLevel::Warning,
        "GL buffer {} is released while a CudaMap of it is open (its gl::Context shut down?): unmapping it from "
        "CUDA; that CudaMap's device pointer is no longer valid",
        reg.buffer);
    unmap_on_gl_thread(reg, nullptr);
  }
  reg.released = true;
  auto guard = DeviceGuard::enter(*reg.api, reg.device);
  CudaError e = reg.api->cudaGraphicsUnregisterResource(reg.resource);
  if (e != kCudaSuccess)
    log(LogLevel::Warning, "cudaGraphicsUnregisterResource of GL buffer {} failed: {}", reg.buffer,
        describe_error(*reg.api, e));
  reg.resource = nullptr;
}

class GlAttachment final : public PboAttachment {
 public:
  explicit GlAttachment(std::shared_ptr<GlRegistration> reg) : reg_(std::move(reg)) {}
  void release_on_gl_thread() noexcept override { unregister_on_gl_thread(*reg_); }
  std::optional<std::string> busy_reason() const override {
    if (!reg_->mapped) return std::nullopt;
    return text::format("it is mapped by CUDA (a cuda::CudaMap on device {} is open); release the CudaMap first",
                       reg_->device);
  }
  const GlRegistration* registration() const noexcept { return reg_.get(); }

 private:
  std::shared_ptr<GlRegistration> reg_;
};

std::string join_devices(const int* devices, unsigned n) {
  std::string out;
  for (unsigned i = 0; i < n; ++i) out += text::format("{}{}", i ? ", " : "", devices[i]);
  return out;
}

std::string context_label(const GlWorker& worker) {
  const auto& i = worker.info();
  return text::format("{} ({})", i.platform_detail, i.renderer);
}

// GL thread: the device check and the registration.
Result<std::shared_ptr<GlRegistration>> register_on_gl_thread(const CudaRuntimeApi& api, GlWorker& worker,
                                                              PboState& state, int device) {
  if (state.deleted) return fail(worker.gone_error("cuda::map of a GL PBO"));
  if (state.mapped)
    return fail(ErrorCode::Busy, text::format("cuda::map of GL buffer {} refused: it is CPU-mapped; close the CPU map "
                                             "(ReadMap/WriteMap) first",
                                             state.name));
  ET_TRY_ASSIGN(auto guard, DeviceGuard::enter(api, device));
  unsigned count = 0;
  int devices[kMaxGlDevices] = {};
  CudaError e = api.cudaGLGetDevices(&count, devices, kMaxGlDevices, kGLDeviceListAll);
  if (e == kCudaErrorNoDevice)
    return fail(ErrorCode::Unsupported,
                text::format("cuda::map of GL buffer {}: the GL context on {} is not on a CUDA device ({}); create "
                            "the gl::Context on the NVIDIA EGL device (gl::ContextOptions::device_index)",
                            state.name, context_label(worker), describe_error(api, e)));
  if (e != kCudaSuccess) return fail(cuda_error(api, e, "cudaGLGetDevices(cudaGLDeviceListAll)"));
  if (count > kMaxGlDevices) count = kMaxGlDevices;
  bool found = false;
  for (unsigned i = 0; i < count; ++i) found = found || devices[i] == device;
  if (!found)
    return fail(ErrorCode::FailedPrecondition,
                text::format("cuda::map of GL buffer {}: the GL context on {} runs on CUDA device(s) [{}], not on the "
                            "requested CUDA device {}; map with MapOptions::device set to one of those, or create the "
                            "gl::Context on the EGL device of CUDA device {}",
                            state.name, context_label(worker), join_devices(devices, count), device, device));
  CudaGraphicsResource res = nullptr;
  e = api.cudaGraphicsGLRegisterBuffer(&res, state.name, kGraphicsRegisterFlagsNone);
  if (e != kCudaSuccess)
    return fail(cuda_error(api, e, text::format("cudaGraphicsGLRegisterBuffer(GL buffer {}, {} B, flags none) on device {}",
                                               state.name, state.size_bytes, device)));
  auto reg = std::make_shared<GlRegistration>();
  reg->api = &api;
  reg->device = device;
  reg->buffer = state.name;
  reg->resource = res;
  state.attachments.push_back(std::make_unique<GlAttachment>(reg));
  return reg;
}

// GL thread: undoes a registration whose caller gave up waiting.
void drop_registration(PboState& state, const std::shared_ptr<GlRegistration>& reg) noexcept {
  unregister_on_gl_thread(*reg);
  auto& a = state.attachments;
  for (auto it = a.begin(); it != a.end(); ++it) {
    auto* g = dynamic_cast<GlAttachment*>(it->get());
    if (g && g->registration() == reg.get()) {
      a.erase(it);
      break;
    }
  }
}

// GL thread: one map.
Result<void*> map_on_gl_thread(GlWorker& worker, PboState& state, GlRegistration& reg, CudaStream stream) {
  if (state.deleted || reg.released) return fail(worker.gone_error("cuda::map of a GL PBO"));
  if (state.mapped)
    return fail(ErrorCode::Busy, text::format("cuda::map of GL buffer {} refused: it is CPU-mapped; close the CPU map "
                                             "(ReadMap/WriteMap) first",
                                             state.name));
  if (reg.mapped)
    return fail(ErrorCode::Busy, text::format("cuda::map of GL buffer {} refused: another CudaMap of it is open (one "
                                             "CUDA map per PBO at a time); release it first",
                                             state.name));
  const CudaRuntimeApi& api = *reg.api;
  ET_TRY_ASSIGN(auto guard, DeviceGuard::enter(api, reg.device));
  CudaGraphicsResource res = reg.resource;
  CudaError e = api.cudaGraphicsMapResources(1, &res, stream);
  if (e != kCudaSuccess)
    return fail(cuda_error(api, e, text::format("cudaGraphicsMapResources(GL buffer {}, stream {})", state.name,
                                               static_cast<void*>(stream))));
  reg.mapped = true;
  void* ptr = nullptr;
  std::size_t size = 0;
  e = api.cudaGraphicsResourceGetMappedPointer(&ptr, &size, res);
  if (e != kCudaSuccess || !ptr || size < state.size_bytes) {
    Error err = e != kCudaSuccess
                    ? cuda_error(api, e, text::format("cudaGraphicsResourceGetMappedPointer(GL buffer {})", state.name))
                    : Error(ErrorCode::Internal,
                            text::format("cudaGraphicsResourceGetMappedPointer(GL buffer {}) gave {} B at {}; the buffer "
                                        "has {} B",
                                        state.name, size, ptr, state.size_bytes));
    unmap_on_gl_thread(reg, stream);
    return fail(std::move(err));
  }
  return ptr;
}

class GlHandle final : public CudaHandle {
 public:
  GlHandle(std::shared_ptr<GlWorker> worker, std::shared_ptr<PboState> state, std::shared_ptr<GlRegistration> reg,
           int device)
      : worker_(std::move(worker)), state_(std::move(state)), reg_(std::move(reg)), device_(device) {}
  // Makes no CUDA call: the attachment unregisters on the GL thread when the PBO is deleted (the Backing
  // is destroyed right after this handle) or its context shuts down. No CudaMap is open here: each one
  // keeps the storage alive.
  ~GlHandle() override = default;

  CudaPath path() const noexcept override { return CudaPath::GlBuffer; }
  int device() const noexcept override { return device_; }
  /// Null: a GL buffer has a device address only while a CudaMap maps it.
  void* base() const noexcept override { return nullptr; }

  Result<void*> begin_map(CudaStream stream) override {
    if (state_->disconnected.load()) return fail(worker_->gone_error("cuda::map of a GL PBO"));
    auto worker = worker_;
    auto state = state_;
    auto reg = reg_;
    return worker_->call<void*>(
        [worker, state, reg, stream]() { return map_on_gl_thread(*worker, *state, *reg, stream); }, worker_->timeout(),
        // The caller stopped waiting after the map was made: unmap it, or the PBO would stay CUDA-mapped.
        [reg, stream](Result<void*>&) { unmap_on_gl_thread(*reg, stream); });
  }

  void end_map(CudaStream stream) noexcept override {
    auto reg = reg_;
    // Fire and forget (a release never blocks); FIFO: a later CPU map, with_buffer or delete of this
    // buffer runs after the unmap. drain_ok: during shutdown the queue still runs it.
    if (!worker_->post_detached([reg, stream] { unmap_on_gl_thread(*reg, stream); }, /*drain_ok=*/true) &&
        !state_->disconnected.load())
      log(LogLevel::Warning, "cudaGraphicsUnmapResources of GL buffer {} could not be posted to the GL thread",
          state_->name);
  }

 private:
  std::shared_ptr<GlWorker> worker_;
  std::shared_ptr<PboState> state_;
  std::shared_ptr<GlRegistration> reg_;
  int device_;
};

}  // namespace

Result<std::unique_ptr<DeviceHandle>> make_gl_handle(const CudaRuntimeApi& api, Storage& storage, int device) {
  auto* pbo = dynamic_cast<PboBacking*>(&storage.backing());
  if (!pbo) return fail(ErrorCode::Internal, "cuda::map: a gl_pbo storage without a PBO backing");
  if (!api.has_gl_interop()) {
    std::string missing;
    for (const auto& m : load_info().missing_optional)
      if (m.rfind("cudaGraphics", 0) == 0 || m.rfind("cudaGL", 0) == 0) missing += (missing.empty() ? "" : ", ") + m;
    return fail(ErrorCode::Unsupported,
                text::format("cuda::map of a gl_pbo tensor: the CUDA runtime {} lacks the GL-interop symbols ({})",
                            load_info().file, missing.empty() ? "some" : missing));
  }
  auto worker = pbo->worker();
  auto state = pbo->state();
  if (state->disconnected.load()) return fail(worker->gone_error("cuda::map of a GL PBO"));
  const CudaRuntimeApi* a = &api;
  ET_TRY_ASSIGN(auto reg, worker->call<std::shared_ptr<GlRegistration>>(
                              [a, worker, state, device]() { return register_on_gl_thread(*a, *worker, *state, device); },
                              worker->timeout(),
                              // The caller gave up after the registration was made: undo it.
                              [state](Result<std::shared_ptr<GlRegistration>>& r) { drop_registration(*state, *r); }));
  return std::unique_ptr<DeviceHandle>(new GlHandle(std::move(worker), std::move(state), std::move(reg), device));
}

}  // namespace detail

GlRoundTrip gl_round_trip(const std::shared_ptr<gl::Context>& context) {
  GlRoundTrip out;
  try {
    if (!available()) {
      out.detail = "CUDA unavailable: " + status().error;
      return out;
    }
    std::shared_ptr<gl::Context> ctx = context;
    if (!ctx) {
      auto c = gl::Context::create();
      if (!c) {
        out.detail = "no GL context: " + c.error().to_string();
        return out;
      }
      ctx = *c;
    }
    constexpr std::size_t kBytes = 64 * 1024;
    AllocateOptions alloc;
    alloc.memory = MemoryKind::GlPbo;
    alloc.gl_context = ctx;
    alloc.name = "edgetensor-cuda-gl-probe";
    auto t = TensorDyn::allocate({kBytes}, DType::U8, alloc);
    if (!t) {
      out.detail = "allocate a PBO: " + t.error().to_string();
      return out;
    }
    auto pattern = [](std::size_t i, unsigned seed) { return static_cast<std::byte>((i * 131u + seed * 29u + 7u) & 0xffu); };
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
    auto m = map(*t);
    if (!m) {
      out.detail = "cuda::map: " + m.error().to_string();
      return out;
    }
    if (auto r = copy_device_to_host(host.data(), m->device_ptr(), kBytes); !r) {
      out.detail = "CUDA read of the PBO: " + r.error().to_string();
      return out;
    }
    for (std::size_t i = 0; i < kBytes; ++i)
      if (host[i] != pattern(i, 1)) {
        out.detail = text::format("CUDA read of a CPU-written PBO differs at byte {} (device pointer does not alias "
                                 "the GL buffer)",
                                 i);
        return out;
      }
    for (std::size_t i = 0; i < kBytes; ++i) host[i] = pattern(i, 2);
    if (auto r = copy_host_to_device(m->device_ptr(), host.data(), kBytes); !r) {
      out.detail = "CUDA write of the PBO: " + r.error().to_string();
      return out;
    }
    const int device = m->device();
    m->release();
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

}  // namespace edgetensor::cuda
