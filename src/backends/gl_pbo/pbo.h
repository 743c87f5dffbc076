// SPDX-License-Identifier: Apache-2.0
// The PBO Backing and the internal access to a gl::Context's worker. Private to the library; the
// CUDA-GL interop uses pbo_of() to reach a tensor's buffer state and worker.
#pragma once

#include <edgetensor/gl.h>
#include <edgetensor/tensor.h>

#include <memory>

#include "backends/gl_pbo/gl_worker.h"
#include "core/storage.h"

namespace edgetensor::inline ET_ABI_NAMESPACE::detail {

struct GlContextAccess {
  static const std::shared_ptr<GlWorker>& worker(const gl::Context& context) noexcept { return context.worker_; }
  static std::shared_ptr<gl::Context> wrap(std::shared_ptr<GlWorker> worker) {
    return std::shared_ptr<gl::Context>(new gl::Context(std::move(worker)));
  }
};

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

  const std::shared_ptr<GlWorker>& worker() const noexcept { return worker_; }
  const std::shared_ptr<PboState>& state() const noexcept { return state_; }

 private:
  std::shared_ptr<GlWorker> worker_;
  std::shared_ptr<PboState> state_;
};

/// The PBO backing of `tensor`. Errors: InvalidArgument naming the tensor's memory when it is not a PBO
/// (or an empty PBO tensor with no buffer).
Result<PboBacking*> pbo_of(const TensorDyn& tensor);

}  // namespace edgetensor::detail
