// SPDX-License-Identifier: Apache-2.0
// Socket plumbing of the frame channel: the socket check, sending without waiting, waiting for input
// (channel_socket.cpp). Deadlines and sending within one: ipc/ipc_wait.h.
#pragma once

#include <edgetensor/array_ref.h>
#include <edgetensor/error.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "channel/channel_wire.h"
#include "ipc/ipc_wait.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

using ChannelClock = WaitClock;  // deadline_after, poll_timeout_ms, send_within: ipc/ipc_wait.h

/// Refuses anything but a connected AF_UNIX SOCK_SEQPACKET socket (docs/WIRE.md, "The frame channel":
/// a peer to lose, message boundaries, fds). Errors: InvalidArgument naming the type or family (and
/// an unconnected socket); from_errno of getsockopt (ENOTSOCK).
Result<void> require_channel_socket(int socket_fd, std::string_view who);

/// CLOCK_MONOTONIC now, in ns (clock_gettime(2)).
std::int64_t monotonic_ns() noexcept;

/// Sends `bytes` and `fds` (borrowed) without waiting and without allocating: 0 when sent, else the
/// errno (EAGAIN: no room now). For releases sent from a deleter.
int send_now(int socket_fd, std::span<const std::byte> bytes, ArrayRef<int> fds = {}) noexcept;

/// Tells a peer this end will not serve why, before the caller closes the socket (a refuse message,
/// docs/WIRE.md): best effort, without waiting; a peer gone or a full socket gets nothing.
void send_refusal(int socket_fd, RefuseReason reason, std::string_view text) noexcept;

/// What wait_input saw.
struct Ready {
  bool socket = false;  // readable, or hung up / in error (a read tells which)
  bool wake = false;    // `wake_fd` readable
  bool writable = false;
};
/// poll(2) on `socket_fd` (POLLIN, and POLLOUT when `want_write`) and `wake_fd` (POLLIN; -1 for none)
/// until `deadline`; EINTR retried with the time left. All false: the deadline passed.
/// Errors: from_errno of poll.
Result<Ready> wait_input(int socket_fd, int wake_fd, bool want_write, ChannelClock::time_point deadline);

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
