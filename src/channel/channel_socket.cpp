// SPDX-License-Identifier: Apache-2.0
// Socket plumbing of the frame channel (channel_socket.h) and channel::socket_pair.
#include "channel/channel_socket.h"

#include <edgetensor/channel.h>

#include <poll.h>
#include <sys/socket.h>
#include <time.h>

#include <cerrno>
#include <string>

#include "text/format.h"

#include "base/sys.h"
#include "ipc/ipc_checks.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

Result<void> require_channel_socket(int socket_fd, std::string_view who) {
  int type = 0;
  socklen_t len = sizeof type;
  if (::getsockopt(socket_fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0)
    return fail(Error::from_errno(errno, text::format("{}: getsockopt(SO_TYPE) of socket fd {}", who, socket_fd)));
  int domain = 0;
  len = sizeof domain;
  if (::getsockopt(socket_fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0)
    return fail(Error::from_errno(errno, text::format("{}: getsockopt(SO_DOMAIN) of socket fd {}", who, socket_fd)));
  if (domain != AF_UNIX || type != SOCK_SEQPACKET) {
    const char* name = type == SOCK_STREAM ? "SOCK_STREAM (no message boundaries)"
                       : type == SOCK_DGRAM ? "SOCK_DGRAM (no connection: a dead peer goes unnoticed)"
                                            : "another socket type";
    return fail(ErrorCode::InvalidArgument,
                text::format("{}: socket fd {} is {} of address family {}; a frame channel needs a connected AF_UNIX "
                             "SOCK_SEQPACKET socket (channel::socket_pair(); docs/WIRE.md)",
                             who, socket_fd, type == SOCK_SEQPACKET ? "SOCK_SEQPACKET" : name, domain));
  }
  sockaddr_storage peer{};
  len = sizeof peer;
  if (::getpeername(socket_fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) {
    const int e = errno;
    return fail(Error(ErrorCode::InvalidArgument,
                      text::format("{}: socket fd {} is not connected (getpeername: {}); connect it, accept a "
                                   "connection, or use channel::socket_pair()", who, socket_fd, errno_name(e)), e));
  }
  return {};
}

std::int64_t monotonic_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

int send_now(int socket_fd, std::span<const std::byte> bytes, ArrayRef<int> fds) noexcept {
  const ssize_t n = sendmsg_fds(socket_fd, bytes, fds, MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n < 0) return errno == EWOULDBLOCK ? EAGAIN : errno;
  return static_cast<std::size_t>(n) == bytes.size() ? 0 : EMSGSIZE;
}

void send_refusal(int socket_fd, RefuseReason reason, std::string_view text) noexcept {
  try {
    (void)send_now(socket_fd, encode_refuse(reason, text));
  } catch (...) {  // no memory for the message: the peer sees the channel close without a reason
  }
}

Result<Ready> wait_input(int socket_fd, int wake_fd, bool want_write, ChannelClock::time_point deadline) {
  pollfd p[2] = {{socket_fd, static_cast<short>(POLLIN | (want_write ? POLLOUT : 0)), 0}, {wake_fd, POLLIN, 0}};
  ET_TRY(poll_until(std::span(p, wake_fd >= 0 ? 2 : 1), Wait{deadline, {}, nullptr}, "channel"));
  Ready r;
  r.socket = (p[0].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)) != 0;
  r.writable = (p[0].revents & POLLOUT) != 0;
  r.wake = wake_fd >= 0 && (p[1].revents & POLLIN) != 0;
  return r;
}

}  // namespace detail

namespace channel {

Result<std::pair<UniqueFd, UniqueFd>> socket_pair() {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    return fail(Error::from_errno(errno, "channel::socket_pair: socketpair(AF_UNIX, SOCK_SEQPACKET)"));
  return std::pair<UniqueFd, UniqueFd>(UniqueFd(sv[0]), UniqueFd(sv[1]));
}

}  // namespace channel
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
