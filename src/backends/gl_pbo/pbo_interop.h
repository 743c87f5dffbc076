// SPDX-License-Identifier: Apache-2.0
// The one header of the PBO backend meant for another module (CUDA-GL): find a storage's PBO, run work
// on its GL thread, read its buffer name and size, and hang per-PBO state on it with release and busy
// hooks. The Backing and the GL calls stay private to the backend (pbo.h).
#pragma once

#include <edgetensor/error.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/storage.h"
#include "gl/gl_worker.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

/// Per-PBO state owned by another module (e.g. a CUDA graphics registration). Methods run on the GL
/// thread with the context current.
class PboAttachment {
 public:
  virtual ~PboAttachment() = default;
  /// Undo whatever was done to the buffer (unregister); called once, before glDeleteBuffers or the
  /// context shutdown, whichever comes first.
  virtual void release_on_gl_thread() noexcept = 0;
  /// Non-empty while the buffer must not be CPU-mapped or handed to user GL code (e.g. CUDA-mapped).
  virtual std::optional<std::string> busy_reason() const { return std::nullopt; }
};

struct PboState;

/// One PBO as another module sees it. Copyable; keeps the buffer's state and its GL thread's worker
/// alive, not its gl::Context (once the context is gone the PBO is disconnected).
class PboHandle {
 public:
  /// The PBO of `storage`. Errors: InvalidArgument when the storage has no PBO buffer (other memory,
  /// or a zero-byte gl_pbo tensor).
  static Result<PboHandle> of(const Storage& storage);

  // ---- any thread ----
  /// The GL buffer name (use it on the GL thread only) and the buffer's size; fixed for its life.
  GLuint name() const noexcept;
  std::size_t buffer_bytes() const noexcept;
  /// True once the context is gone: the buffer is deleted, or will be at the close of its CPU map.
  bool disconnected() const noexcept;
  /// "<platform detail> (<renderer>)" of the PBO's context, for messages.
  std::string context_label() const;
  /// FailedPrecondition "<what>: GL context gone (...)".
  Error gone_error(std::string_view what) const { return worker_->gone_error(what); }
  /// Runs `fn` on the GL thread with the context current and waits up to the context's timeout;
  /// `undo` as in GlWorker::call (runs there when the caller stopped waiting after `fn` succeeded).
  template <class T>
  Result<T> call(std::function<Result<T>()> fn, std::function<void(Result<T>&)> undo = {}) const {
    return worker_->call<T>(std::move(fn), worker_->timeout(), std::move(undo));
  }
  /// Queues `fn` on the GL thread without waiting (inline there), also while the context drains; FIFO
  /// with every other job of the context. False when refused (context gone, fork() child).
  bool post(std::function<void()> fn) const noexcept { return worker_->post_detached(std::move(fn), true); }

  // ---- GL thread only ----
  /// glDeleteBuffers ran (or the context is gone).
  bool deleted() const noexcept;
  /// A CPU map (glMapBufferRange) is open.
  bool cpu_mapped() const noexcept;
  /// Hangs `attachment` on the buffer; see PboAttachment for when it is released.
  void attach(std::unique_ptr<PboAttachment> attachment) const;
  /// Destroys one attachment without calling its release (the caller undid it); no-op when absent.
  void detach(const PboAttachment* attachment) const noexcept;

 private:
  PboHandle(std::shared_ptr<GlWorker> worker, std::shared_ptr<PboState> state) noexcept
      : worker_(std::move(worker)), state_(std::move(state)) {}
  std::shared_ptr<GlWorker> worker_;
  std::shared_ptr<PboState> state_;
};

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
