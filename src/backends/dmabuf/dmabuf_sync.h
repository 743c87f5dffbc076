// SPDX-License-Identifier: Apache-2.0
// Pure logic of the DMA_BUF_IOCTL_SYNC bracket (include/uapi/linux/dma-buf.h). The Storage keeps one
// bracket per storage (START when its first map opens, END with the union of the directions when its
// last map closes); this file turns map modes into sync flags and owns the retry policy.
#pragma once

#include <edgetensor/map.h>

#include <cstdint>
#include <functional>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

/// DMA_BUF_SYNC_* values from include/uapi/linux/dma-buf.h (checked against the header in dmabuf.cpp).
inline constexpr std::uint64_t kSyncRead = 1u << 0;
inline constexpr std::uint64_t kSyncWrite = 2u << 0;
inline constexpr std::uint64_t kSyncStart = 0u << 2;
inline constexpr std::uint64_t kSyncEnd = 1u << 2;

/// Flags of the START that opens a bracket for a first map of `mode`.
std::uint64_t sync_start_flags(MapMode mode) noexcept;
/// Flags of the END that closes a bracket whose maps had the union of directions `modes`.
std::uint64_t sync_end_flags(MapMode modes) noexcept;

/// EINTR and EAGAIN are retried (the ioctl waits on fences interruptibly); at most this many attempts,
/// so a device that answers EAGAIN forever gives an error instead of a hang.
inline constexpr int kMaxSyncAttempts = 64;

struct SyncOutcome {
  int err = 0;       // 0 on success, else the last errno
  int attempts = 0;  // calls made
};
/// Runs `attempt` (returns 0 or an errno) until it succeeds, fails with another errno, or
/// kMaxSyncAttempts calls were made.
SyncOutcome run_sync_with_retry(const std::function<int()>& attempt);

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
