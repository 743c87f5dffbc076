// SPDX-License-Identifier: Apache-2.0
// What the DMA-BUF backend's maps need from the sync module: a bounded, EINTR-safe poll of one fd and
// the text naming a buffer's pending fences.
#pragma once

#include <edgetensor/error.h>
#include <edgetensor/fence.h>

#include <chrono>
#include <string>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

/// Wraps a sync_file fd the kernel just returned (export, merge): no check needed.
struct FenceAccess {
  static sync::Fence wrap(UniqueFd fd) noexcept { return sync::Fence(std::move(fd)); }
};

/// poll(2) of `fd` for `events` through the syscall seam until it is ready or `timeout` has passed
/// (0: once; negative: no bound). EINTR polls on for the time left, recomputed from a steady clock.
/// Returns true when ready (any revents, POLLERR and POLLHUP included: the caller's next call says
/// more), false on timeout. Errors: from_errno of poll (POLLNVAL as EBADF), naming `what` and the fd.
Result<bool> poll_within(int fd, short events, std::chrono::milliseconds timeout, std::string_view what);

/// "0.25 s" / "no bound": a timeout for messages.
std::string timeout_text(std::chrono::milliseconds timeout);

/// The error of DMA_BUF_IOCTL_EXPORT/IMPORT_SYNC_FILE (`what`) failing with `e` on `fd`: ENOTTY on a
/// DMA-BUF (`known_dmabuf`, or fstatfs says so) is Unsupported naming the kernel release (it needs
/// Linux >= 6.0 with CONFIG_SYNC_FILE), on another file InvalidArgument naming what it is; from_errno
/// otherwise.
Error dmabuf_sync_file_error(int e, int fd, std::string_view what, bool known_dmabuf);

/// What export_fence(dmabuf_fd, access) and its status() say of the fences a map of that access
/// waits for: "pending: vgem/vgem_fence (pending)" or why they could not be listed. Never fails.
std::string pending_fences_text(int dmabuf_fd, sync::Access access) noexcept;

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
