// SPDX-License-Identifier: Apache-2.0
// The public gl:: API on top of the worker.
#include <edgetensor/gl.h>

#include <cstring>

#include "text/format.h"

#include "backends/gl_pbo/gl_worker.h"
#include "backends/gl_pbo/pbo.h"

namespace edgetensor::inline ET_ABI_NAMESPACE::gl {

using detail::GlContextAccess;
using detail::GlWorker;

std::string_view platform_name(Platform platform) noexcept {
  switch (platform) {
    case Platform::Auto: return "auto";
    case Platform::Device: return "device";
    case Platform::Surfaceless: return "surfaceless";
  }
  return "unknown";
}

Context::Context(std::shared_ptr<GlWorker> worker) noexcept : worker_(std::move(worker)) {}

Context::~Context() {
  if (worker_) worker_->shutdown();
}

Result<std::shared_ptr<Context>> Context::create(const ContextOptions& options) {
  ET_TRY_ASSIGN(auto worker, GlWorker::start(options));
  return GlContextAccess::wrap(std::move(worker));
}

const ContextInfo& Context::info() const noexcept { return worker_->info(); }
std::chrono::milliseconds Context::timeout() const noexcept { return worker_->timeout(); }
bool Context::on_gl_thread() const noexcept { return worker_->on_thread(); }

Result<void> Context::run(std::function<Result<void>()> fn) const { return run(std::move(fn), worker_->timeout()); }

Result<void> Context::run(std::function<Result<void>()> fn, std::chrono::milliseconds timeout) const {
  if (!fn) return fail(ErrorCode::InvalidArgument, "gl::Context::run: empty callable");
  return worker_->call<void>(std::move(fn), timeout);
}

void* Context::proc_address(const char* name) const noexcept {
  if (!name) return nullptr;
  return reinterpret_cast<void*>(worker_->egl().GetProcAddress(name));
}

std::size_t Context::live_buffer_count() const noexcept { return worker_->live_buffers(); }

Result<void> with_buffer(const TensorDyn& tensor, std::function<Result<void>(const GlBuffer&)> fn) {
  ET_TRY_ASSIGN(auto* pbo, detail::pbo_of(tensor));
  return with_buffer(tensor, std::move(fn), pbo->worker()->timeout());
}

Result<void> with_buffer(const TensorDyn& tensor, std::function<Result<void>(const GlBuffer&)> fn,
                         std::chrono::milliseconds timeout) {
  if (!fn) return fail(ErrorCode::InvalidArgument, "gl::with_buffer: empty callable");
  ET_TRY_ASSIGN(auto* pbo, detail::pbo_of(tensor));
  auto worker = pbo->worker();
  auto state = pbo->state();
  if (state->disconnected.load()) return fail(worker->gone_error("gl::with_buffer"));
  // The storage (and so the buffer) stays alive for the job even if the caller stops waiting.
  auto storage = tensor.storage();
  GlBuffer buffer{state->name, state->size_bytes, tensor.offset_bytes(), tensor.extent_bytes()};
  return worker->call<void>(
      [worker, state, storage, buffer, fn = std::move(fn)]() -> Result<void> {
        if (state->deleted) return fail(worker->gone_error("gl::with_buffer"));
        if (state->mapped)
          return fail(ErrorCode::Busy, text::format("gl::with_buffer: GL buffer {} is CPU-mapped; close the map first "
                                                   "(GLES forbids GL use of a mapped buffer)", state->name));
        for (auto& a : state->attachments)
          if (auto why = a->busy_reason())
            return fail(ErrorCode::Busy, text::format("gl::with_buffer: GL buffer {} is busy: {}", state->name, *why));
        return fn(buffer);
      },
      timeout);
}

ProbeResult probe(const ContextOptions& options) {
  ProbeResult result;
  auto context = Context::create(options);
  if (!context) {
    result.reason = context.error().to_string();
    return result;
  }
  result.available = true;
  result.info = (*context)->info();
  constexpr std::size_t kBytes = 64 * 1024;
  AllocateOptions alloc;
  alloc.memory = MemoryKind::GlPbo;
  alloc.gl_context = *context;
  alloc.name = "edgetensor-gl-probe";
  auto tensor = TensorDyn::allocate({kBytes}, DType::U8, alloc);
  if (!tensor) {
    result.pbo_detail = "allocate: " + tensor.error().to_string();
    return result;
  }
  auto pattern = [](std::size_t i) { return static_cast<std::byte>((i * 131u + 7u) & 0xffu); };
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
    for (std::size_t i = 0; i < kBytes; ++i) m->bytes()[i] = pattern(i);
  }
  auto m = tensor->map_read();
  if (!m) {
    result.pbo_detail = "read map: " + m.error().to_string();
    return result;
  }
  for (std::size_t i = 0; i < kBytes; ++i)
    if (m->bytes()[i] != pattern(i)) {
      result.pbo_detail = text::format("read back differs at byte {}", i);
      return result;
    }
  result.pbo_round_trip = true;
  result.pbo_detail = text::format("{} B: zeros at creation, pattern written and read back through "
                                  "glMapBufferRange/glUnmapBuffer", kBytes);
  return result;
}

}  // namespace edgetensor::gl
