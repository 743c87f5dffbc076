// SPDX-License-Identifier: Apache-2.0
#include <edgetensor/ipc.h>

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "text/format.h"

#include "base/sys.h"
#include "ipc/ipc_checks.h"
#include "ipc/ipc_codec.h"
#include "ipc/ipc_wait.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace ipc {

Result<void> send_fds(int socket_fd, std::span<const std::byte> bytes, ArrayRef<int> fds) {
  if (bytes.empty()) return fail(ErrorCode::InvalidArgument, "send_fds: a message needs at least 1 byte");
  if (fds.size() > kMaxFdsPerMessage)
    return fail(ErrorCode::InvalidArgument,
                text::format("send_fds: {} fds exceed the limit of {} per message", fds.size(), kMaxFdsPerMessage));
  for (int fd : fds)
    if (fd < 0) return fail(ErrorCode::InvalidArgument, text::format("send_fds: fd {} is not a valid fd", fd));

  const ssize_t n = detail::sendmsg_fds(socket_fd, bytes, fds, MSG_NOSIGNAL);
  if (n < 0) return fail(Error::from_errno(errno, text::format("sendmsg on socket fd {}", socket_fd)));
  if (static_cast<std::size_t>(n) != bytes.size())
    return fail(ErrorCode::Internal, text::format("sendmsg: short send, {} of {} B", n, bytes.size()));
  return {};
}

}  // namespace ipc

namespace detail {
namespace {

// What the kernel may add to a message on an AF_UNIX socket besides SCM_RIGHTS, each for an option of the
// receiving socket (net/core/scm.c, net/unix/af_unix.c; values from include/linux/socket.h):
//   SO_PASSCRED   SCM_CREDENTIALS: struct ucred
//   SO_PASSPIDFD  SCM_PIDFD: one int, a pidfd the kernel installs here (Linux >= 6.5)
//   SO_PASSSEC    SCM_SECURITY: the sender's LSM label, variable size
//   SO_TIMESTAMP(NS), SO_TIMESTAMPING: a timeval/timespec, and 3 timespecs (datagram and seqpacket only)
constexpr int kScmSecurity = 0x03;  // glibc names these only from 2.39
constexpr int kScmPidfd = 0x04;
// Room for an SCM_SECURITY label: one page. A process's label comes from policy or a write to
// /proc/<pid>/attr/*, which the kernel cuts at one page (fs/proc/base.c, proc_pid_attr_write); Smack
// labels stop at 255 B (SMK_LONGLABEL). A longer label shows as MSG_CTRUNC, and the error says so.
std::size_t max_security_label_bytes() noexcept { return sys::page_size(); }
constexpr std::size_t kTimespecBytes = 16;  // struct __kernel_timespec / __kernel_sock_timeval
// What the kernel may add for the socket's options besides the fds.
std::size_t kernel_control_bytes() noexcept {
  return CMSG_SPACE(sizeof(ucred)) + CMSG_SPACE(sizeof(int)) + CMSG_SPACE(max_security_label_bytes()) +
         CMSG_SPACE(kTimespecBytes) + CMSG_SPACE(3 * kTimespecBytes);
}

// One control message as it arrived (for the error text, built only on error).
struct Arrived {
  int level = 0;
  int type = 0;
  std::size_t data_bytes = 0;
};

std::string describe(const Arrived& a) {
  if (a.level != SOL_SOCKET) return text::format("level {} type {}", a.level, a.type);
  switch (a.type) {
    case SCM_RIGHTS: return text::format("SCM_RIGHTS ({} fds)", a.data_bytes / sizeof(int));
    case SCM_CREDENTIALS: return "SCM_CREDENTIALS";
    case kScmSecurity: return text::format("SCM_SECURITY ({} B)", a.data_bytes);
    case kScmPidfd: return "SCM_PIDFD";
    default: return text::format("SOL_SOCKET type {}", a.type);
  }
}

}  // namespace

ssize_t sendmsg_fds(int socket_fd, std::span<const std::byte> bytes, ArrayRef<int> fds, int flags) noexcept {
  if (fds.size() > ipc::kMaxFdsPerMessage) {
    errno = EINVAL;
    return -1;
  }
  iovec iov{const_cast<std::byte*>(bytes.data()), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  // Room for kMaxFdsPerMessage fds on the stack (no allocation on the channel's hot path), aligned for cmsghdr.
  constexpr std::size_t kControlBytes = CMSG_SPACE(sizeof(int) * ipc::kMaxFdsPerMessage);
  std::array<cmsghdr, (kControlBytes + sizeof(cmsghdr) - 1) / sizeof(cmsghdr)> control{};
  if (!fds.empty()) {
    msg.msg_control = control.data();
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  ssize_t n;
  do {
    n = sys::sendmsg(socket_fd, &msg, flags);
  } while (n < 0 && errno == EINTR);
  return n;
}

Result<ReceivedMessage> receive_message(int socket_fd, const ipc::ReceiveOptions& options, std::string_view who,
                                        std::string_view message) {
  ET_TRY(require_message_socket(socket_fd, who, message));
  // Not zeroed: only the bytes received are read.
  constexpr std::size_t kRoom = kMaxWireMessageBytes + 1;
  ReceivedMessage out{std::make_unique_for_overwrite<std::byte[]>(kRoom), {}};
  ET_TRY_ASSIGN(out.received, receive_within(socket_fd, std::span(out.buffer.get(), kRoom), kMaxWireFds,
                                             wait_for(options.timeout, options.on_interrupt), who));
  return out;
}

namespace {

// Control bytes to receive a message of at most `max_fds` fds with: room for them plus everything the kernel
// may add for the socket's options. Extra fds from the sender may use the spare room: they are counted and
// refused (collect_received), or show as MSG_CTRUNC.
std::size_t control_bytes_for(std::size_t max_fds) noexcept {
  return CMSG_SPACE(sizeof(int) * max_fds) + kernel_control_bytes();
}

// One message as recvmsg (or one entry of recvmmsg) left it in `msg`, `n` bytes: its fds taken first (each
// error path closes them), then the checks: truncated control data, too many fds, a truncated message.
Result<ipc::Received> collect_received(const msghdr& msg, ssize_t n, std::size_t buffer_bytes, std::size_t max_fds) {
  using ipc::Received;
  Received out;
  std::vector<UniqueFd> pidfds;
  std::array<Arrived, 8> arrived{};
  std::size_t arrived_count = 0;
  const std::byte* control_end = static_cast<const std::byte*>(msg.msg_control) + msg.msg_controllen;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(const_cast<msghdr*>(&msg), c)) {
    if (c->cmsg_len < CMSG_LEN(0)) break;
    const auto* data = reinterpret_cast<const std::byte*>(CMSG_DATA(c));
    const std::size_t data_bytes = std::min<std::size_t>(c->cmsg_len - CMSG_LEN(0),
                                                         static_cast<std::size_t>(control_end - data));
    if (arrived_count < arrived.size()) arrived[arrived_count++] = {c->cmsg_level, c->cmsg_type, data_bytes};
    if (c->cmsg_level != SOL_SOCKET || (c->cmsg_type != SCM_RIGHTS && c->cmsg_type != kScmPidfd)) continue;
    auto& into = c->cmsg_type == SCM_RIGHTS ? out.fds : pidfds;
    for (std::size_t i = 0; i < data_bytes / sizeof(int); ++i) {
      int fd;
      std::memcpy(&fd, data + i * sizeof(int), sizeof(int));
      into.emplace_back(fd);
    }
  }
  if (n == 0 && out.fds.empty()) return fail(ErrorCode::Unavailable, "receive_fds: peer closed the connection");
  if (msg.msg_flags & MSG_CTRUNC) {
    // Close first: when the kernel stopped at RLIMIT_NOFILE, building the text may itself need an fd.
    out.fds.clear();
    pidfds.clear();
    std::vector<std::string> parts;
    for (std::size_t i = 0; i < arrived_count; ++i) parts.push_back(describe(arrived[i]));
    return fail(ErrorCode::OutOfRange,
                text::format("receive_fds: control data truncated (MSG_CTRUNC): the kernel dropped what did not fit "
                            "in {} B (room for {} fds, credentials, a pidfd, a {} B security label and timestamps) "
                            "or could not install an fd (RLIMIT_NOFILE); arrived: {}; all closed",
                            control_bytes_for(max_fds), max_fds, max_security_label_bytes(),
                            parts.empty() ? std::string("nothing") : text::join(parts, ", ")));
  }
  if (out.fds.size() > max_fds) {
    const std::size_t received = out.fds.size();
    out.fds.clear();
    return fail(ErrorCode::OutOfRange,
                text::format("receive_fds: {} fds received, more than the {} allowed; all closed", received, max_fds));
  }
  if (msg.msg_flags & MSG_TRUNC)
    return fail(ErrorCode::OutOfRange,
                text::format("receive_fds: message larger than the {} B buffer (MSG_TRUNC)", buffer_bytes));
  out.size_bytes = static_cast<std::size_t>(n);
  return out;
}

Result<void> check_receive_args(std::size_t max_fds) {
  if (max_fds > ipc::kMaxFdsPerMessage)
    return fail(ErrorCode::InvalidArgument,
                text::format("receive_fds: max_fds {} exceeds the limit {}", max_fds, ipc::kMaxFdsPerMessage));
  return {};
}

}  // namespace

Result<ipc::Received> receive_fds_flags(int socket_fd, std::span<std::byte> buffer, std::size_t max_fds, int flags) {
  if (buffer.empty()) return fail(ErrorCode::InvalidArgument, "receive_fds: empty buffer");
  ET_TRY(check_receive_args(max_fds));
  iovec iov{buffer.data(), buffer.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  const std::size_t control_bytes = control_bytes_for(max_fds);
  // One buffer per thread, aligned for cmsghdr, grown when needed and never cleared: the kernel writes the
  // control messages and sets msg_controllen, and only those bytes are read. (A new zeroed buffer of over a
  // page on every call was a third of a frame's receive.)
  thread_local std::vector<cmsghdr> control;
  const std::size_t control_words = (control_bytes + sizeof(cmsghdr) - 1) / sizeof(cmsghdr);
  if (control.size() < control_words) control.resize(control_words);
  msg.msg_control = control.data();
  msg.msg_controllen = control_bytes;
  ssize_t n;
  do {
    n = sys::recvmsg(socket_fd, &msg, MSG_CMSG_CLOEXEC | flags);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return fail(Error::from_errno(errno, text::format("recvmsg on socket fd {}", socket_fd)));
  return collect_received(msg, n, buffer.size(), max_fds);
}

Result<std::size_t> receive_ready(int socket_fd, std::span<const std::span<std::byte>> buffers, std::size_t max_fds,
                                  std::span<Result<ipc::Received>> out) {
  const std::size_t count = std::min({buffers.size(), out.size(), kMaxReadyBatch});
  if (count == 0) return fail(ErrorCode::InvalidArgument, "receive_ready: no buffer");
  ET_TRY(check_receive_args(max_fds));
  const std::size_t control_bytes = control_bytes_for(max_fds);
  const std::size_t control_words = (control_bytes + sizeof(cmsghdr) - 1) / sizeof(cmsghdr);
  // As receive_fds_flags': one buffer per thread, never cleared (only what the kernel wrote is read).
  thread_local std::vector<cmsghdr> control;
  if (control.size() < control_words * count) control.resize(control_words * count);
  std::array<iovec, kMaxReadyBatch> iov{};
  std::array<mmsghdr, kMaxReadyBatch> msgs{};
  for (std::size_t i = 0; i < count; ++i) {
    if (buffers[i].empty()) return fail(ErrorCode::InvalidArgument, text::format("receive_ready: buffer {} is empty", i));
    iov[i] = {buffers[i].data(), buffers[i].size()};
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
    msgs[i].msg_hdr.msg_control = control.data() + i * control_words;
    msgs[i].msg_hdr.msg_controllen = control_bytes;
  }
  int n;
  do {
    n = sys::recvmmsg(socket_fd, msgs.data(), static_cast<unsigned>(count), MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return std::size_t{0};
    return fail(Error::from_errno(errno, text::format("recvmmsg on socket fd {}", socket_fd)));
  }
  const auto got = static_cast<std::size_t>(n);
  for (std::size_t i = 0; i < got; ++i)
    out[i] = collect_received(msgs[i].msg_hdr, static_cast<ssize_t>(msgs[i].msg_len), buffers[i].size(), max_fds);
  return got;
}

}  // namespace detail

namespace ipc {

Result<Received> receive_fds(int socket_fd, std::span<std::byte> buffer, std::size_t max_fds) {
  return detail::receive_fds_flags(socket_fd, buffer, max_fds, 0);
}

}  // namespace ipc
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
