// SPDX-License-Identifier: Apache-2.0
// Waiting in Pool::acquire on something other than the pool's condition variable (pool.cpp).
//
// The frame channel's Sender::acquire waits for a buffer that only a release on its socket brings back.
// With the condition variable, that release wakes the sender's reader thread, which gives the buffer back
// and wakes the acquiring thread: two wake-ups in series per frame. With a hook, the acquiring thread
// reads the release itself (channel/sender.cpp), one wake-up, as a raw request-reply round trip has
// (issue 25, the channel's fixed cost per frame).
#pragma once

#include <edgetensor/pool.h>

#include <chrono>
#include <memory>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

class PoolState;
class Storage;

class PoolWaitHook {
 public:
  /// Called by acquire, with no lock of the pool held, instead of its condition variable's wait: returns
  /// by `until` (steady clock), or earlier after wake() or after work of its own that may have given a
  /// buffer back; the pool then looks again. false: the hook cannot wait any more (e.g. its channel
  /// closed); the rest of that acquire waits on the condition variable. Must not acquire from this pool.
  virtual bool wait(std::chrono::steady_clock::time_point until) noexcept = 0;
  /// A buffer came back (or the pool changed) while wait() may be running: called under the pool's lock,
  /// on the thread that gave the buffer back, so it must not block or take the pool's lock.
  virtual void wake() noexcept = 0;

 protected:
  PoolWaitHook() = default;
  PoolWaitHook(const PoolWaitHook&) = delete;
  PoolWaitHook& operator=(const PoolWaitHook&) = delete;
  virtual ~PoolWaitHook() = default;

 private:
  friend class PoolState;
class Storage;
  PoolWaitHook* next_ = nullptr;  // the pool's list of hooks in wait(), under its lock
};

/// Whatever reads the messages that bring a pool's buffers back, where that reading may stand back: a
/// channel Publisher's receivers, whose reader threads stand back while the publishing thread reads their
/// releases itself (channel/sender.h, kPublisherStandBack). An acquire that finds no buffer free
/// (try_acquire and a 0 ms timeout included) calls recall() once, then looks again before it waits or
/// answers Busy, so that it never waits out a stand-back.
class PoolRecall {
 public:
  /// Any thread, no lock of the pool held. Must not wait: reads what is already there (which may give
  /// buffers back to this pool, or run an import's release callback) and wakes the reader for the rest.
  virtual void recall() noexcept = 0;

 protected:
  PoolRecall() = default;
  PoolRecall(const PoolRecall&) = delete;
  PoolRecall& operator=(const PoolRecall&) = delete;
  virtual ~PoolRecall() = default;
};

/// Registers `recall` (weakly: one that is gone is skipped and dropped) with the pool that handed out
/// `storage`, once (the same recall again is a no-op). false, registering nothing, for storage of no
/// pool.
bool add_pool_recall(const std::shared_ptr<Storage>& storage, const std::shared_ptr<PoolRecall>& recall);

/// Pool::acquire(timeout) that waits through `hook` (registered with the pool only while its wait()
/// runs, so a buffer given back between two looks is never missed). Errors: Pool::acquire's.
Result<TensorDyn> acquire_with_hook(Pool& pool, std::chrono::milliseconds timeout, PoolWaitHook& hook);

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
