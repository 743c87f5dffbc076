// SPDX-License-Identifier: Apache-2.0
#include "backends/dmabuf/dmabuf_sync.h"

#include <cerrno>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {
namespace {
std::uint64_t direction_flags(MapMode mode) noexcept {
  const auto m = static_cast<unsigned>(mode);
  std::uint64_t flags = 0;
  if (m & static_cast<unsigned>(MapMode::Read)) flags |= kSyncRead;
  if (m & static_cast<unsigned>(MapMode::Write)) flags |= kSyncWrite;
  // A bracket always names a direction: the kernel rejects a sync without one (EINVAL).
  return flags ? flags : kSyncRead;
}
}  // namespace

std::uint64_t sync_start_flags(MapMode mode) noexcept { return kSyncStart | direction_flags(mode); }
std::uint64_t sync_end_flags(MapMode modes) noexcept { return kSyncEnd | direction_flags(modes); }

SyncOutcome run_sync_with_retry(const std::function<int()>& attempt) {
  SyncOutcome out;
  while (out.attempts < kMaxSyncAttempts) {
    ++out.attempts;
    out.err = attempt();
    if (out.err != EINTR && out.err != EAGAIN) break;
  }
  return out;
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
