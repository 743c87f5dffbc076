// SPDX-License-Identifier: Apache-2.0
// Waiting on a socket within a deadline: ipc's timeouts and the frame channel's (ipc_wait.cpp).
#pragma once

#include <edgetensor/ipc.h>

#include <poll.h>

#include <chrono>
#include <span>
#include <string_view>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

using WaitClock = std::chrono::steady_clock;

/// When a wait ends, and what its errors name.
struct Wait {
  WaitClock::time_point deadline = WaitClock::time_point::max();  ///< max(): never
  std::chrono::milliseconds timeout{-1};  ///< what the deadline came from (deadline_after), for the text
  const ipc::InterruptCheck* on_interrupt = nullptr;  ///< called on EINTR; null: wait on
  /// The thread's channel::ScopedWaitCheck (current_wait_check()): polls in slices of at most
  /// channel::kWaitCheckInterval and runs it after each and on EINTR (run_wait_check); null: one poll.
  const ipc::InterruptCheck* check = nullptr;
};

/// The calling thread's channel::ScopedWaitCheck check, or null.
const ipc::InterruptCheck* current_wait_check() noexcept;
/// Runs `check`; an error also marks the thread's wait as stopped by it (wait_check_stopped).
Result<void> run_wait_check(const ipc::InterruptCheck& check);
/// Whether a run_wait_check failed on this thread since reset_wait_check_stop(): tells the check's error
/// from the wait's own (a sender keeps its channel open for it, as for a timeout).
bool wait_check_stopped() noexcept;
void reset_wait_check_stop() noexcept;

/// now + timeout, saturated: milliseconds::max() (or anything past the clock's range) never expires; a
/// negative timeout has already passed.
WaitClock::time_point deadline_after(std::chrono::milliseconds timeout) noexcept;
/// The Wait for ipc's `timeout` from now: a negative one (kWaitForever) never expires.
Wait wait_for(std::chrono::milliseconds timeout, const ipc::InterruptCheck& on_interrupt) noexcept;
/// poll(2)'s timeout for `deadline`: -1 for one that never expires, else the ms left (rounded up).
int poll_timeout_ms(WaitClock::time_point deadline) noexcept;

/// poll(2) on `fds` until `wait.deadline`. A signal (EINTR) calls wait.on_interrupt when set (its error
/// ends the wait), then polls on for the time left. With wait.check, polls in slices and runs the check
/// after each slice and on EINTR. Returns poll's count: 0 once the deadline passed. Errors: from_errno of
/// poll naming `who`; on_interrupt's; the check's.
Result<int> poll_until(std::span<pollfd> fds, const Wait& wait, std::string_view who);

/// Sends `bytes` and `fds` (borrowed) as one message on `socket_fd`, waiting (poll POLLOUT) for room in
/// the socket as `wait` says; MSG_DONTWAIT | MSG_NOSIGNAL, EINTR retried. Errors: Busy (no room before
/// the deadline, as timed_out; nothing was sent), Unavailable (EPIPE, ECONNRESET, ENOTCONN: the peer is
/// gone), Internal (a short send), from_errno otherwise, poll_until's.
Result<void> send_within(int socket_fd, std::span<const std::byte> bytes, ArrayRef<int> fds, const Wait& wait,
                         std::string_view who);

/// ipc::receive_fds, waiting (poll POLLIN) for a message as `wait` says. Errors: Busy (nothing before
/// the deadline, as timed_out), receive_fds's, poll_until's.
Result<ipc::Received> receive_within(int socket_fd, std::span<std::byte> buffer, std::size_t max_fds,
                                     const Wait& wait, std::string_view who);

/// The error of a wait that reached its deadline: Busy naming `who`, the socket, the timeout and `what`
/// did not happen; sys_errno EAGAIN for a timeout of 0 ("... the timeout is 0 (non-blocking)"),
/// ETIMEDOUT otherwise ("timed out after 0.2 s ...").
Error timed_out(std::string_view who, int socket_fd, std::chrono::milliseconds timeout, std::string_view what);

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
