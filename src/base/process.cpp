// SPDX-License-Identifier: Apache-2.0
#include "base/process.h"

#include <pthread.h>

#include <atomic>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {
namespace {

std::atomic<ProcessToken> g_token{1};
// The child handler runs in the new child, where only async-signal-safe work is allowed: one
// lock-free atomic add, no allocation, no lock.
static_assert(std::atomic<ProcessToken>::is_always_lock_free);

void on_fork_child() noexcept { g_token.fetch_add(1, std::memory_order_relaxed); }

}  // namespace

ProcessToken process_token() noexcept {
  // Before the first call no token exists to compare, so forks before the registration need no count.
  static const bool registered = ::pthread_atfork(nullptr, nullptr, &on_fork_child) == 0;
  (void)registered;
  return g_token.load(std::memory_order_relaxed);
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
