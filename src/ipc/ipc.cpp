// SPDX-License-Identifier: Apache-2.0
#include <edgetensor/ipc.h>

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "text/format.h"

#include "core/sys.h"

namespace edgetensor::inline ET_ABI_NAMESPACE::ipc {

Result<void> send_fds(int socket_fd, std::span<const std::byte> bytes, ArrayRef<int> fds) {
  if (bytes.empty()) return fail(ErrorCode::InvalidArgument, "send_fds: a message needs at least 1 byte");
  if (fds.size() > kMaxFdsPerMessage)
    return fail(ErrorCode::InvalidArgument,
                text::format("send_fds: {} fds exceed the limit of {} per message", fds.size(), kMaxFdsPerMessage));
  for (int fd : fds)
    if (fd < 0) return fail(ErrorCode::InvalidArgument, text::format("send_fds: fd {} is not a valid fd", fd));

  iovec iov{const_cast<std::byte*>(bytes.data()), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  std::vector<std::byte> control;
  if (!fds.empty()) {
    control.resize(CMSG_SPACE(sizeof(int) * fds.size()));
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  ssize_t n;
  do {
    n = sys::sendmsg(socket_fd, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return fail(Error::from_errno(errno, text::format("sendmsg on socket fd {}", socket_fd)));
  if (static_cast<std::size_t>(n) != bytes.size())
    return fail(ErrorCode::Internal, text::format("sendmsg: short send, {} of {} B", n, bytes.size()));
  return {};
}

Result<Received> receive_fds(int socket_fd, std::span<std::byte> buffer, std::size_t max_fds) {
  if (buffer.empty()) return fail(ErrorCode::InvalidArgument, "receive_fds: empty buffer");
  if (max_fds > kMaxFdsPerMessage)
    return fail(ErrorCode::InvalidArgument,
                text::format("receive_fds: max_fds {} exceeds the limit {}", max_fds, kMaxFdsPerMessage));
  iovec iov{buffer.data(), buffer.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  // Room for max_fds; CMSG_SPACE(0) still gives a valid (header-only) buffer so extra fds show MSG_CTRUNC.
  std::vector<std::byte> control(CMSG_SPACE(sizeof(int) * (max_fds == 0 ? 1 : max_fds)));
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  ssize_t n;
  do {
    n = sys::recvmsg(socket_fd, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return fail(Error::from_errno(errno, text::format("recvmsg on socket fd {}", socket_fd)));

  // Take ownership of every fd that arrived first, so each error path below closes them.
  Received out;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      out.fds.emplace_back(fd);
    }
  }
  if (n == 0 && out.fds.empty()) return fail(ErrorCode::Unavailable, "receive_fds: peer closed the connection");
  if (msg.msg_flags & MSG_CTRUNC)
    return fail(ErrorCode::OutOfRange,
                text::format("receive_fds: control data truncated (MSG_CTRUNC): the sender passed more than {} fds; "
                            "the {} that arrived were closed", max_fds, out.fds.size()));
  if (out.fds.size() > max_fds)
    return fail(ErrorCode::OutOfRange,
                text::format("receive_fds: {} fds received, more than the {} allowed; all closed", out.fds.size(), max_fds));
  if (msg.msg_flags & MSG_TRUNC)
    return fail(ErrorCode::OutOfRange,
                text::format("receive_fds: message larger than the {} B buffer (MSG_TRUNC)", buffer.size()));
  out.size_bytes = static_cast<std::size_t>(n);
  return out;
}

}  // namespace edgetensor::ipc
