// SPDX-License-Identifier: Apache-2.0
// Waiting on a socket within a deadline (ipc_wait.h).
#include "ipc/ipc_wait.h"

#include <edgetensor/channel.h>
#include <sys/socket.h>

#include <cerrno>

#include "text/format.h"

#include "ipc/ipc_checks.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

WaitClock::time_point deadline_after(std::chrono::milliseconds timeout) noexcept {
  const auto now = WaitClock::now();
  if (timeout >= std::chrono::duration_cast<std::chrono::milliseconds>(WaitClock::time_point::max() - now))
    return WaitClock::time_point::max();
  return now + timeout;
}

Wait wait_for(std::chrono::milliseconds timeout, const ipc::InterruptCheck& on_interrupt) noexcept {
  return Wait{timeout.count() < 0 ? WaitClock::time_point::max() : deadline_after(timeout), timeout,
              on_interrupt ? &on_interrupt : nullptr};
}

int poll_timeout_ms(WaitClock::time_point deadline) noexcept {
  if (deadline == WaitClock::time_point::max()) return -1;
  const auto now = WaitClock::now();
  if (deadline <= now) return 0;
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
  return left > 1'000'000'000 ? 1'000'000'000 : static_cast<int>(left);
}

namespace {
thread_local const ipc::InterruptCheck* t_wait_check = nullptr;  // channel::ScopedWaitCheck
thread_local bool t_wait_check_stopped = false;
}  // namespace

const ipc::InterruptCheck* current_wait_check() noexcept { return t_wait_check; }

Result<void> run_wait_check(const ipc::InterruptCheck& check) {
  auto r = check();
  if (!r) t_wait_check_stopped = true;
  return r;
}

bool wait_check_stopped() noexcept { return t_wait_check_stopped; }
void reset_wait_check_stop() noexcept { t_wait_check_stopped = false; }

Result<int> poll_until(std::span<pollfd> fds, const Wait& wait, std::string_view who) {
  constexpr int kSliceMs = static_cast<int>(channel::kWaitCheckInterval.count());
  for (;;) {
    int timeout = poll_timeout_ms(wait.deadline);
    if (wait.check != nullptr && (timeout < 0 || timeout > kSliceMs)) timeout = kSliceMs;
    const int n = ::poll(fds.data(), fds.size(), timeout);
    if (n > 0) return n;
    if (n == 0) {
      if (wait.check == nullptr || poll_timeout_ms(wait.deadline) == 0) return 0;
      ET_TRY(run_wait_check(*wait.check));  // a slice passed
      continue;
    }
    if (errno != EINTR)
      return fail(Error::from_errno(errno, text::format("{}: poll on socket fd {}", who, fds[0].fd)));
    if (wait.on_interrupt != nullptr) ET_TRY((*wait.on_interrupt)());
    if (wait.check != nullptr) ET_TRY(run_wait_check(*wait.check));
  }
}

Error timed_out(std::string_view who, int socket_fd, std::chrono::milliseconds timeout, std::string_view what) {
  if (timeout.count() == 0)
    return Error(ErrorCode::Busy,
                 text::format("{}: socket fd {} is not ready and the timeout is 0 (non-blocking): {}", who, socket_fd,
                              what),
                 EAGAIN);
  return Error(ErrorCode::Busy,
               text::format("{}: timed out after {} s on socket fd {}: {}", who,
                            static_cast<double>(timeout.count()) / 1000.0, socket_fd, what),
               ETIMEDOUT);
}

Result<void> send_within(int socket_fd, std::span<const std::byte> bytes, ArrayRef<int> fds, const Wait& wait,
                         std::string_view who) {
  for (;;) {
    const ssize_t n = sendmsg_fds(socket_fd, bytes, fds, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n >= 0) {
      if (static_cast<std::size_t>(n) == bytes.size()) return {};
      return fail(ErrorCode::Internal, text::format("{}: sendmsg sent {} of {} B", who, n, bytes.size()));
    }
    const int e = errno;
    if (e == EPIPE || e == ECONNRESET || e == ENOTCONN)
      return fail(Error(ErrorCode::Unavailable, text::format("{}: the receiver is gone (sendmsg: {})", who, errno_name(e)), e));
    if (e != EAGAIN && e != EWOULDBLOCK && e != ENOBUFS)
      return fail(Error::from_errno(e, text::format("{}: sendmsg of {} B on socket fd {}", who, bytes.size(), socket_fd)));
    pollfd p{socket_fd, POLLOUT, 0};
    ET_TRY_ASSIGN(const int ready, poll_until(std::span(&p, 1), wait, who));
    if (ready == 0)
      return fail(timed_out(who, socket_fd, wait.timeout,
                            text::format("no room in the socket for a {} B message: the receiver is not reading",
                                         bytes.size())));
  }
}

Result<ipc::Received> receive_within(int socket_fd, std::span<std::byte> buffer, std::size_t max_fds,
                                     const Wait& wait, std::string_view who) {
  for (;;) {
    auto r = receive_fds_flags(socket_fd, buffer, max_fds, MSG_DONTWAIT);
    if (r || r.error().sys_errno() != EAGAIN) return r;
    pollfd p{socket_fd, POLLIN, 0};
    ET_TRY_ASSIGN(const int ready, poll_until(std::span(&p, 1), wait, who));
    if (ready == 0) return fail(timed_out(who, socket_fd, wait.timeout, "no message arrived"));
  }
}

}  // namespace detail

namespace channel {

ScopedWaitCheck::ScopedWaitCheck(ipc::InterruptCheck check)
    : check_(std::move(check)), previous_(detail::t_wait_check) {
  detail::t_wait_check = check_ ? &check_ : nullptr;
}

ScopedWaitCheck::~ScopedWaitCheck() { detail::t_wait_check = previous_; }

}  // namespace channel
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
