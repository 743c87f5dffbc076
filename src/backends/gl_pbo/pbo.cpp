// SPDX-License-Identifier: Apache-2.0
#include "backends/gl_pbo/pbo.h"

#include "text/format.h"

#include "backends/gl_pbo/gl_pbo.h"
#include "core/log_internal.h"

namespace edgetensor::inline ET_ABI_NAMESPACE::detail {

PboBacking::~PboBacking() {
  auto worker = worker_;
  auto state = state_;
  // Fire and forget: a release never waits for the GL thread. Refused (context gone: already deleted
  // by the shutdown; forked child: the parent owns the buffer) means there is nothing to do here.
  (void)worker_->post_detached([worker, state] { worker->release_buffer(*state); }, /*drain_ok=*/true);
}

std::string PboBacking::detail() const {
  if (state_->disconnected.load()) return text::format("GL PBO {} (disconnected: GL context gone)", state_->name);
  return text::format("GL PBO {} on {}", state_->name, worker_->info().renderer);
}

Result<std::byte*> PboBacking::begin_cpu_access(MapMode mode) {
  if (state_->disconnected.load()) return fail(worker_->gone_error("CPU map of a GL PBO"));
  auto worker = worker_;
  auto state = state_;
  return worker_->call<std::byte*>(
      [worker, state, mode]() -> Result<std::byte*> {
        if (state->disconnected.load()) return fail(worker->gone_error("CPU map of a GL PBO"));
        return worker->map_buffer(*state, mode);
      },
      worker_->timeout(),
      // The caller gave up after the map was made: unmap it, or the buffer would stay mapped forever.
      [worker, state](Result<std::byte*>&) { worker->unmap_buffer(*state); });
}

void PboBacking::end_cpu_access(MapMode) noexcept {
  auto worker = worker_;
  auto state = state_;
  // Fire and forget, never cancelled by a timeout: the queue is FIFO, so any later map, with_buffer or
  // delete of this buffer runs after the unmap. drain_ok: an orphan's unmap is what deletes it.
  if (!worker_->post_detached([worker, state] { worker->unmap_buffer(*state); }, /*drain_ok=*/true) &&
      !state_->disconnected.load())
    log(LogLevel::Warning, "glUnmapBuffer of GL PBO {} could not be posted to the GL thread", state_->name);
}

Result<UniqueFd> PboBacking::export_fd() const {
  return fail(ErrorCode::Unsupported,
              text::format("gl_pbo tensor is not shareable by fd (GL PBO {}): a GL buffer object has no fd; "
                          "allocate with memory DmaBuf or Shm to share, or copy into one", state_->name));
}

Result<PboBacking*> pbo_of(const TensorDyn& tensor) {
  if (!tensor.storage()) return fail(ErrorCode::InvalidArgument, "tensor has no storage (empty handle)");
  auto* pbo = dynamic_cast<PboBacking*>(&tensor.storage()->backing());
  if (!pbo)
    return fail(ErrorCode::InvalidArgument,
                text::format("tensor memory is {} ({}), not a GL PBO", memory_kind_name(tensor.memory()),
                            tensor.memory_detail()));
  return pbo;
}

namespace {

BackendStatus pbo_status() {
  BackendStatus s{MemoryKind::GlPbo, true, false, {}};
  auto egl = load_egl({});
  if (!egl) {
    s.detail = egl.error().message();
    return s;
  }
  s.available = true;
  s.detail = text::format("EGL loadable ({}); allocation needs a gl::Context", (*egl)->library);
  return s;
}

Result<std::unique_ptr<Backing>> pbo_allocate(std::size_t size_bytes, const AllocateOptions& options) {
  if (!options.gl_context)
    return fail(ErrorCode::InvalidArgument,
                text::format("allocate {} B with memory gl_pbo: AllocateOptions::gl_context is null; create one "
                            "with gl::Context::create()", size_bytes));
  const auto& worker = GlContextAccess::worker(*options.gl_context);
  auto w = worker;
  ET_TRY_ASSIGN(auto state, worker->call<std::shared_ptr<PboState>>(
                                [w, size_bytes]() { return w->create_buffer(size_bytes); }, worker->timeout(),
                                // The caller gave up after the buffer was made: delete it again.
                                [w](Result<std::shared_ptr<PboState>>& r) { w->release_buffer(**r); }));
  return std::make_unique<PboBacking>(worker, std::move(state));
}

Result<std::unique_ptr<Backing>> pbo_import(UniqueFd, const FdInfo&) {
  return fail(ErrorCode::Unsupported, "a GL PBO cannot be imported from an fd");
}

}  // namespace

const BackendOps& gl_pbo_backend() {
  static constexpr BackendOps ops{MemoryKind::GlPbo, &pbo_status, &pbo_allocate, &pbo_import};
  return ops;
}

}  // namespace edgetensor::detail
