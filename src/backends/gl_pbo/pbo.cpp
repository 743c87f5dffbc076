// SPDX-License-Identifier: Apache-2.0
// The PBO Backing, the backend's table entry, gl::with_buffer and the interop handle (pbo_interop.h).
#include "backends/gl_pbo/pbo.h"

#include <edgetensor/gl.h>

#include "text/format.h"

#include "backends/gl_pbo/gl_pbo.h"
#include "base/log_internal.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {
namespace {
// Its address is the key PboBacking answers in Backing::interop.
constexpr char kPboInteropKey = 0;
}  // namespace

// Jobs take the worker by plain pointer: a job runs on the worker's thread, which the worker joins
// before it dies, so a job never holds (nor drops) a reference to it.

PboBacking::~PboBacking() {
  GlWorker* worker = worker_.get();
  auto state = state_;
  // Fire and forget: a release never waits for the GL thread. Refused (context gone: already deleted
  // by the shutdown; forked child: the parent owns the buffer) means there is nothing to do here.
  (void)worker_->post_detached([worker, state] { release_buffer(*worker, *state); }, /*drain_ok=*/true);
}

std::string PboBacking::detail() const {
  if (state_->disconnected.load()) return text::format("GL PBO {} (disconnected: GL context gone)", state_->name);
  return text::format("GL PBO {} on {}", state_->name, worker_->info().renderer);
}

Result<std::byte*> PboBacking::begin_cpu_access(MapMode mode) {
  if (state_->disconnected.load()) return fail(worker_->gone_error("CPU map of a GL PBO"));
  GlWorker* worker = worker_.get();
  auto state = state_;
  return worker_->call<std::byte*>(
      [worker, state, mode]() -> Result<std::byte*> {
        if (state->disconnected.load()) return fail(worker->gone_error("CPU map of a GL PBO"));
        return map_buffer(*worker, *state, mode);
      },
      worker_->timeout(),
      // The caller gave up after the map was made: unmap it, or the buffer would stay mapped forever.
      [worker, state](Result<std::byte*>&) { unmap_buffer(*worker, *state); });
}

void PboBacking::end_cpu_access(MapMode) noexcept {
  GlWorker* worker = worker_.get();
  auto state = state_;
  // Fire and forget, never cancelled by a timeout: the queue is FIFO, so any later map, with_buffer or
  // delete of this buffer runs after the unmap. drain_ok: an orphan's unmap is what deletes it.
  if (!worker_->post_detached([worker, state] { unmap_buffer(*worker, *state); }, /*drain_ok=*/true) &&
      !state_->disconnected.load())
    log(LogLevel::Warning, "glUnmapBuffer of GL PBO {} could not be posted to the GL thread", state_->name);
}

Result<UniqueFd> PboBacking::export_fd() const {
  return fail(ErrorCode::Unsupported,
              text::format("gl_pbo tensor is not shareable by fd (GL PBO {}): a GL buffer object has no fd; "
                          "allocate with memory DmaBuf or Shm to share, or copy into one", state_->name));
}

void* PboBacking::interop(const void* key) noexcept { return key == &kPboInteropKey ? this : nullptr; }

PboBacking* pbo_backing(const Storage& storage) noexcept {
  return static_cast<PboBacking*>(storage.backing().interop(&kPboInteropKey));
}

// ---- PboHandle (pbo_interop.h) --------------------------------------------------------------------

Result<PboHandle> PboHandle::of(const Storage& storage) {
  PboBacking* pbo = pbo_backing(storage);
  if (!pbo)
    return fail(ErrorCode::InvalidArgument, text::format("storage memory is {} ({}), not a GL PBO buffer",
                                                        memory_kind_name(storage.kind()), storage.backing().detail()));
  return PboHandle(pbo->worker(), pbo->state());
}

GLuint PboHandle::name() const noexcept { return state_->name; }
std::size_t PboHandle::buffer_bytes() const noexcept { return state_->size_bytes; }
bool PboHandle::disconnected() const noexcept { return state_->disconnected.load(); }
std::string PboHandle::context_label() const {
  const auto& i = worker_->info();
  return text::format("{} ({})", i.platform_detail, i.renderer);
}
bool PboHandle::deleted() const noexcept { return state_->deleted; }
bool PboHandle::cpu_mapped() const noexcept { return state_->mapped; }
void PboHandle::attach(std::unique_ptr<PboAttachment> attachment) const { state_->attachments.push_back(std::move(attachment)); }
void PboHandle::detach(const PboAttachment* attachment) const noexcept {
  auto& a = state_->attachments;
  for (auto it = a.begin(); it != a.end(); ++it)
    if (it->get() == attachment) {
      a.erase(it);
      return;
    }
}

// ---- the backend ----------------------------------------------------------------------------------
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
  GlWorker* w = worker.get();
  ET_TRY_ASSIGN(auto state, worker->call<std::shared_ptr<PboState>>(
                                [w, size_bytes]() { return create_buffer(*w, size_bytes); }, worker->timeout(),
                                // The caller gave up after the buffer was made: delete it again.
                                [w](Result<std::shared_ptr<PboState>>& r) { release_buffer(*w, **r); }));
  return std::make_unique<PboBacking>(worker, std::move(state));
}

Result<std::unique_ptr<Backing>> pbo_import(UniqueFd, const FdInfo&) {
  return fail(ErrorCode::Unsupported, "a GL PBO cannot be imported from an fd");
}

// The PBO backing of `tensor`. Errors: InvalidArgument naming the tensor's memory when it is not a PBO
// (or an empty PBO tensor with no buffer).
Result<PboBacking*> pbo_of(const TensorDyn& tensor) {
  if (!storage_of(tensor)) return fail(ErrorCode::InvalidArgument, "tensor has no storage (empty handle)");
  PboBacking* pbo = pbo_backing(*storage_of(tensor));
  if (!pbo)
    return fail(ErrorCode::InvalidArgument,
                text::format("tensor memory is {} ({}), not a GL PBO", memory_kind_name(tensor.memory()),
                            tensor.memory_detail()));
  return pbo;
}

}  // namespace

const BackendOps& gl_pbo_backend() {
  static constexpr BackendOps ops{MemoryKind::GlPbo, &pbo_status, &pbo_allocate, &pbo_import, nullptr};
  return ops;
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor

// ---- gl::with_buffer (declared in gl.h; it needs a PBO, so it lives with the backend) -------------
namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace gl {

Result<void> with_buffer(const TensorDyn& tensor, std::function<Result<void>(const GlBuffer&)> fn) {
  ET_TRY_ASSIGN(auto* pbo, detail::pbo_of(tensor));
  return with_buffer(tensor, std::move(fn), pbo->worker()->timeout());
}

Result<void> with_buffer(const TensorDyn& tensor, std::function<Result<void>(const GlBuffer&)> fn,
                         std::chrono::milliseconds timeout) {
  if (!fn) return fail(ErrorCode::InvalidArgument, "gl::with_buffer: empty callable");
  ET_TRY_ASSIGN(auto* pbo, detail::pbo_of(tensor));
  detail::GlWorker* worker = pbo->worker().get();
  auto state = pbo->state();
  if (state->disconnected.load()) return fail(worker->gone_error("gl::with_buffer"));
  // The storage (and so the buffer) stays alive for the job even if the caller stops waiting.
  auto storage = edgetensor::detail::storage_of(tensor);
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

}  // namespace gl
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
