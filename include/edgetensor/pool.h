// SPDX-License-Identifier: Apache-2.0
// Pool: buffers of one layout, allocated once and handed out again and again, so a pipeline's steady
// state pays for the data only (no allocation, no page faults, no fd, no mmap per frame).
//
// A pool holds tensors of one shape and dtype, or single-buffer images of one ImageLayout (each a
// TensorDyn with that layout attached; Frame::from_tensor makes a Frame of one). Every buffer has the
// same memory kind and the pool's name. `min_buffers` are allocated by create(); more are allocated by
// acquire() when none is free, never more than `max_buffers` at once. The pool keeps what it allocated
// until it is destroyed (it never shrinks).
//
// Return is automatic: a buffer goes back to the pool when its last holder is gone (the tensor, its
// copies, views, batches, plane views, CPU maps, CUDA maps and anything else that shares its storage;
// a tensor sent with ipc::send is held only for the call, which is why ipc::send refuses a pool's
// buffer unless SendOptions::allow_pooled: share pooled frames with channel::Sender). Nothing is
// returned by hand. A buffer on which device work was recorded (cuda::CudaMap::record) is handed out
// again only after that work is complete: the CUDA map's release gives its event to the buffer, and
// acquire() asks the event (cudaEventQuery, CUDA Runtime API "Event Management") before it reuses the
// buffer, never blocking on it longer than its timeout.
//
// A reused buffer is the same storage: its persistent CPU mapping, its DMA-BUF, its CUDA registration
// or import and its BufferKey (TensorDyn::buffer_key) are kept. Its bytes are what the last holder left
// unless PoolOptions::zero_on_reuse is set (a new buffer always reads as zeros). Each acquisition is a
// new allocation for TensorDyn::identity(): a new id, alive() until this acquisition's holders are gone.
//
// Outcomes (tests/unit/pool/pool_test.cpp):
//   - Exhaustion: acquire() waits up to its timeout for a buffer to come back, then fails with Busy
//     naming the pool, max_buffers, how long it waited and how many buffers wait for device work;
//     try_acquire() fails at once. Neither ever blocks longer than asked.
//   - Acquire racing release (other threads): a buffer released while acquire() waits wakes it; every
//     buffer is handed to at most one acquisition at a time.
//   - The pool destroyed with buffers out: those tensors stay valid; each buffer frees its memory when
//     its last holder is gone, as a tensor from TensorDyn::allocate does. Free buffers are freed by the
//     destructor. Destroy the Pool only when no thread is inside one of its calls.
//   - A buffer that outlives its pool frees its memory normally.
//
// Threads: acquire, try_acquire and stats may be called from any threads at once; a buffer may come
// back from any thread. Holders of different acquisitions never share anything but the pool's lock.
#pragma once

#include <edgetensor/array_ref.h>
#include <edgetensor/dtype.h>
#include <edgetensor/error.h>
#include <edgetensor/export.h>
#include <edgetensor/image.h>
#include <edgetensor/tensor.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {

namespace detail {
class PoolState;  // src/pool/pool.cpp
struct PoolAccess;
}

/// What a pool allocates and how far it grows.
struct PoolOptions {
  /// Names the pool in errors and stats, and every tensor it hands out (and so each memfd and DMA-BUF).
  std::string name;
  /// Buffers allocated by create(). At most max_buffers.
  std::size_t min_buffers = 0;
  /// Buffers that may exist at once (free plus in use). At least 1.
  std::size_t max_buffers = 4;
  /// How each buffer is allocated (TensorDyn::allocate): memory kind, dma_heap, dmabuf_allocator (the
  /// pool keeps it alive), gl_context. `name` is
  /// replaced by the pool's name; a shm_name is refused (a named object can be created only once).
  AllocateOptions allocate;
  /// Zero a reused buffer before handing it out again (through a write map: a DMA-BUF sync bracket, a
  /// PBO map). Off by default: a producer that writes every byte would pay for it twice.
  bool zero_on_reuse = false;
  /// Called on the thread waiting in acquire() every kPoolWaitCheckInterval of its wait, with no lock
  /// held (a condition-variable wait is not ended by a signal: the Python binding runs its signal
  /// handlers here, so Ctrl-C ends the wait). An error it returns ends that acquire() with the error
  /// (not counted in PoolStats::timeouts). Unset: nothing is called. Threads: as acquire().
  std::function<Result<void>()> on_wait;
};

/// How often acquire() calls PoolOptions::on_wait while it waits.
inline constexpr std::chrono::milliseconds kPoolWaitCheckInterval{50};

/// A snapshot of a pool's counters (one lock; consistent with each other).
struct PoolStats {
  /// Buffers that exist now: free + in_use.
  std::size_t allocated = 0;
  /// Back in the pool (including those still waiting for device work).
  std::size_t free = 0;
  /// Of `free`: buffers whose device work (a CudaMap::record event, a channel release fence) had not
  /// completed when last asked.
  std::size_t device_pending = 0;
  /// Handed out and not yet back (a holder is alive).
  std::size_t in_use = 0;
  /// The most buffers in use at once since create().
  std::size_t peak_in_use = 0;
  /// Successful acquisitions.
  std::uint64_t acquired = 0;
  /// Acquisitions that found no buffer at first and waited (acquire() only).
  std::uint64_t waits = 0;
  /// Acquisitions that failed with Busy (timed out, or try_acquire found none).
  std::uint64_t timeouts = 0;
};

/// A bounded pool of same-layout buffers. Move-only; a moved-from pool answers FailedPrecondition.
class ET_API Pool {
 public:
  /// A pool of C-contiguous tensors of `shape` (elements) and `dtype`; allocates min_buffers now.
  /// Errors: InvalidArgument (max_buffers 0, min_buffers > max_buffers, a shm_name, a NUL byte in the
  /// name, a zero-element shape: a pool of buffers with no bytes has nothing to reuse), then
  /// TensorDyn::allocate's errors for the first buffers (all freed again).
  [[nodiscard]] static Result<Pool> create(ArrayRef<std::size_t> shape, DType dtype, const PoolOptions& options = {});
  /// A pool of single-buffer images of `layout` (TensorDyn::allocate_image(layout): min_buffer_bytes per
  /// buffer, the layout attached to every tensor). Build the layout with ImageLayout::make(width, height,
  /// format, alignment), which gives the row strides and plane offsets (a layout of width, height and
  /// format alone has zero strides and is refused). Errors: as create, and the layout's validation,
  /// prefixed "pool '<name>': ".
  [[nodiscard]] static Result<Pool> create_image(const ImageLayout& layout, const PoolOptions& options = {});

  Pool(Pool&& other) noexcept;
  Pool& operator=(Pool&& other) noexcept;
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  /// Frees the free buffers; buffers out stay valid (see the preamble). A buffer with device work
  /// recorded on it still running waits for it first (cuda::CudaMap::record's teardown_timeout; past it the
  /// buffer's memory is leaked with a warning, never unmapped).
  ~Pool();

  /// A buffer: a free one whose device work is complete (the one returned last first: its pages are
  /// the warmest), else a new one while fewer than max_buffers exist, else the first to come back
  /// within `timeout` (0: do not wait; milliseconds::max(): no limit). While only buffers with pending
  /// device work are free, their events are asked again every millisecond.
  /// Errors: Busy ("pool 'cam0': no buffer free after waiting 100 ms: 4 of max_buffers 4 in use; ...";
  /// sys_errno ETIMEDOUT, or EAGAIN for a timeout of 0),
  /// InvalidArgument (negative timeout), FailedPrecondition (moved-from pool), a new buffer's allocation
  /// error (the pool named), the write map's error with zero_on_reuse.
  [[nodiscard]] Result<TensorDyn> acquire(std::chrono::milliseconds timeout);
  /// acquire() without waiting: a free or new buffer, or Busy at once ("... (try_acquire does not
  /// wait)"). Not counted in stats().waits.
  [[nodiscard]] Result<TensorDyn> try_acquire();

  /// The counters now. A moved-from pool gives zeros.
  PoolStats stats() const;
  /// PoolOptions::name.
  const std::string& name() const noexcept;
  std::size_t max_buffers() const noexcept;
  /// packed_bytes() of every tensor acquire returns (its buffer may be larger: a DMA-BUF is page-rounded).
  std::size_t packed_bytes() const noexcept;

 private:
  explicit Pool(std::shared_ptr<detail::PoolState> state) noexcept;
  friend struct detail::PoolAccess;  // src/pool/pool_wait.h: an acquire that waits through a hook
  // Shared with every buffer out: a buffer that comes back after the pool is gone finds it closed.
  std::shared_ptr<detail::PoolState> state_;
};

}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
