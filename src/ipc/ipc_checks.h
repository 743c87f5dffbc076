// SPDX-License-Identifier: Apache-2.0
// What the tensor and frame messages check alike on both ends: the socket type, whether a buffer may
// be sent, and what a received fd really is (src/ipc/ipc_checks.cpp; docs/WIRE.md).
#pragma once

#include <edgetensor/ipc.h>

#include <sys/types.h>

#include <span>
#include <string_view>

#include "core/backend.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

/// Refuses a socket that does not keep message boundaries or is not AF_UNIX. `who`: "ipc::send", ...;
/// `message`: "a tensor message" or "a frame message". Errors: InvalidArgument naming the type or
/// family; from_errno of getsockopt (ENOTSOCK).
Result<void> require_message_socket(int socket_fd, std::string_view who, std::string_view message);

/// The fd of `tensor`'s buffer (borrowed from its storage) when a receiver can trust it: Shm sealed
/// against shrinking, or DmaBuf. `what` prefixes each error ("ipc::send", "ipc::send_frame: buffer 1").
/// Errors: Unsupported (heap, PBO; unsealed shared memory, with advice that fits it), Internal.
Result<int> sendable_fd(const TensorDyn& tensor, std::string_view what);

/// Refuses a Pool's buffer unless `allow_pooled` (ipc::SendOptions::allow_pooled): the pool hands it out
/// again once the last holder here is gone, while a receiver may still read it. Errors: FailedPrecondition
/// naming the pool and the channel as the way to share pooled frames.
Result<void> check_not_pooled(const TensorDyn& tensor, bool allow_pooled, std::string_view what);

/// Probes a received fd and checks it as a receiver must: what the kernel says it is, its size against
/// options.max_buffer_bytes, its kind against `declared`, a Shm fd sealed against shrinking. `what`
/// names the message or buffer in errors ("tensor message", "frame message buffer 1"). Errors: InvalidArgument, OutOfRange.
Result<FdInfo> probe_received(int fd, MemoryKind declared, const ipc::ReceiveOptions& options,
                              std::string_view what);

/// ipc::receive_fds with extra recvmsg `flags` (MSG_DONTWAIT: EAGAIN comes back as from_errno's Busy
/// with sys_errno EAGAIN, nothing read). ipc::receive_fds is this with 0.
Result<ipc::Received> receive_fds_flags(int socket_fd, std::span<std::byte> buffer, std::size_t max_fds, int flags);
/// The most messages one receive_ready takes.
inline constexpr std::size_t kMaxReadyBatch = 8;
/// The messages already queued on `socket_fd` (one recvmmsg, MSG_DONTWAIT), at most kMaxReadyBatch and one per
/// buffer: message i in buffers[i], its result (fds, size, or receive_fds_flags' error for it, e.g. Unavailable
/// for the peer's end) in out[i]. Returns how many came: 0 when none was queued. Errors: InvalidArgument (no
/// buffer, an empty one, max_fds over ipc::kMaxFdsPerMessage), from_errno of recvmmsg.
Result<std::size_t> receive_ready(int socket_fd, std::span<const std::span<std::byte>> buffers, std::size_t max_fds,
                                  std::span<Result<ipc::Received>> out);

/// One sendmsg(2) of `bytes` with `fds` (borrowed; at most ipc::kMaxFdsPerMessage, else EINVAL) as
/// SCM_RIGHTS and recvmsg-style `flags` (MSG_NOSIGNAL, MSG_DONTWAIT); EINTR retried; allocates nothing.
/// Returns sendmsg's result: the bytes sent, or -1 with errno set.
ssize_t sendmsg_fds(int socket_fd, std::span<const std::byte> bytes, ArrayRef<int> fds, int flags) noexcept;

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
