// SPDX-License-Identifier: Apache-2.0
// Socket plumbing of the frame channel: the socket check, deadlines, sending one message within a
// deadline, waiting for input (channel_socket.cpp).
#pragma once

#include <edgetensor/array_ref.h>
#include <edgetensor/error.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

using ChannelClock = std::chrono::steady_clock;

/// Refuses anything but a connected AF_UNIX SOCK_SEQPACKET socket (docs/WIRE.md, "The frame channel":
/// a peer to lose, message boundaries, fds). Errors: InvalidArgument naming the type or family (and
/// an unconnected socket); from_errno of getsockopt (ENOTSOCK).
Result<void> require_channel_socket(int socket_fd, std::string_view who);

/// now + timeout, saturated: milliseconds::max() (or anything past the clock's range) never expires.
ChannelClock::time_point deadline_after(std::chrono::milliseconds timeout) noexcept;
/// poll(2)'s timeout for `deadline`: -1 for a deadline that never expires, else the ms left (rounded up).
int poll_timeout_ms(ChannelClock::time_point deadline) noexcept;

/// CLOCK_MONOTONIC now, in ns (clock_gettime(2)).
std::int64_t monotonic_ns() noexcept;

/// Sends `bytes` and `fds` (borrowed) as one message, waiting (poll POLLOUT) until `deadline` for room
/// in the socket; MSG_DONTWAIT | MSG_NOSIGNAL, EINTR retried. Errors: Busy (no room before the
/// deadline: nothing was sent), Unavailable (EPIPE, ECONNRESET: the peer is gone), from_errno otherwise.
Result<void> send_message(int socket_fd, std::span<const std::byte> bytes, ArrayRef<int> fds,
                          ChannelClock::time_point deadline, std::string_view who);

/// Sends `bytes` (no fd) without waiting and without allocating: 0 when sent, else the errno (EAGAIN:
/// no room now). For releases sent from a deleter.
int send_now(int socket_fd, std::span<const std::byte> bytes) noexcept;

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
