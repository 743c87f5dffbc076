// SPDX-License-Identifier: Apache-2.0
// The PBO backing: one GL buffer object on a GL worker (src/gl). Private to the backend; another
// module reaches a PBO only through pbo_interop.h.
#pragma once

#include <edgetensor/map.h>
#include <edgetensor/tensor.h>

#include <atomic>
#include <memory>
#include <vector>

#include "backends/gl_pbo/pbo_interop.h"
#include "core/storage.h"
#include "gl/gl_worker.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

/// One buffer object, tracked by its worker. `name` and `size_bytes` are fixed after creation and
/// `disconnected` may be read from any thread; everything else is GL-thread only.
struct PboState final : GlResource {
  GLuint name = 0;
  std::size_t size_bytes = 0;
  bool mapped = false;   // a CPU map (glMapBufferRange) is open
  bool deleted = false;  // glDeleteBuffers ran (or the context is gone)
  bool orphan = false;   // the context shut down while this buffer was mapped: delete at unmap
  std::vector<std::unique_ptr<PboAttachment>> attachments;
  std::atomic<bool> disconnected{false};

  /// Disconnects; deletes the buffer unless it is CPU-mapped (then it is kept until its unmap).
  bool release_at_shutdown(GlWorker& worker) noexcept override;
};

// ---- GL thread only (pbo_buffer.cpp) ------------------------------------------------------------
/// glGenBuffers + glBufferData + zero fill; tracked by `worker`.
Result<std::shared_ptr<PboState>> create_buffer(GlWorker& worker, std::size_t size_bytes);
/// glMapBufferRange of the whole buffer with the access bits of `mode`.
Result<std::byte*> map_buffer(GlWorker& worker, PboState& state, MapMode mode);
/// glUnmapBuffer; an orphan is deleted right after.
void unmap_buffer(GlWorker& worker, PboState& state) noexcept;
/// Attachments released, unmapped if mapped, glDeleteBuffers, untracked; idempotent.
void release_buffer(GlWorker& worker, PboState& state) noexcept;

/// A GL buffer object on a worker. Holds the worker (not the gl::Context): the context may go first,
/// after which this backing is disconnected.
class PboBacking final : public Backing {
 public:
  PboBacking(std::shared_ptr<GlWorker> worker, std::shared_ptr<PboState> state) noexcept
      : worker_(std::move(worker)), state_(std::move(state)) {}
  /// Posts glDeleteBuffers to the GL thread (inline there); a no-op once disconnected or in a forked child.
  ~PboBacking() override;
  MemoryKind kind() const noexcept override { return MemoryKind::GlPbo; }
  std::string detail() const override;
  std::size_t buffer_bytes() const noexcept override { return state_->size_bytes; }
  bool single_map() const noexcept override { return true; }
  /// glMapBufferRange on the GL thread. Errors: FailedPrecondition (context gone, fork), Busy (timeout,
  /// an attachment refuses), OutOfMemory / Internal (GL error, named).
  Result<std::byte*> begin_cpu_access(MapMode mode) override;
  /// Posts glUnmapBuffer to the GL thread without waiting (inline there); failures are logged.
  void end_cpu_access(MapMode modes) noexcept override;
  Result<UniqueFd> export_fd() const override;
  /// `this` for the PBO interop key (pbo.cpp), else null.
  void* interop(const void* key) noexcept override;

  const std::shared_ptr<GlWorker>& worker() const noexcept { return worker_; }
  const std::shared_ptr<PboState>& state() const noexcept { return state_; }

 private:
  std::shared_ptr<GlWorker> worker_;
  std::shared_ptr<PboState> state_;
};

/// The PBO backing of `storage`, or null when it has none (other memory, zero-byte gl_pbo tensor).
PboBacking* pbo_backing(const Storage& storage) noexcept;

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
