// SPDX-License-Identifier: Apache-2.0
// fd passing over Unix sockets (src/ipc/ipc.cpp): SCM_RIGHTS, MSG_CMSG_CLOEXEC, MSG_CTRUNC, MSG_TRUNC, and
// the control messages the kernel adds for options of the receiving socket (credentials, pidfd, label,
// timestamps).
#include <edgetensor/edgetensor.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/net_tstamp.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "support/test_support.h"

using namespace edgetensor;
using et_test::open_fd_count;

// SO_PASSPIDFD is Linux 6.5; Debian 12's headers predate it. 76 is its value in
// include/uapi/asm-generic/socket.h, which these architectures use (alpha, mips, parisc, sparc differ).
#if !defined(SO_PASSPIDFD) && (defined(__x86_64__) || defined(__i386__) || defined(__aarch64__) || \
                               defined(__arm__) || defined(__riscv))
#define SO_PASSPIDFD 76
#endif

namespace {

struct SocketPair {
  SocketPair(int type = SOCK_SEQPACKET) {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv), 0);
    a = UniqueFd(sv[0]);
    b = UniqueFd(sv[1]);
  }
  UniqueFd a, b;
};

std::span<const std::byte> as_bytes(const std::string& s) { return std::as_bytes(std::span(s.data(), s.size())); }

UniqueFd make_memfd(const char* text) {
  UniqueFd fd(::memfd_create("et-ipc", MFD_CLOEXEC));
  EXPECT_TRUE(fd.is_valid());
  EXPECT_EQ(::write(fd.get(), text, std::strlen(text)), static_cast<ssize_t>(std::strlen(text)));
  return fd;
}

std::string read_back(int fd) {
  char buf[64] = {};
  ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

TEST(Ipc, SendsBytesAndFds) {
  const int base = open_fd_count();
  {
    SocketPair sp;
    UniqueFd one = make_memfd("first");
    UniqueFd two = make_memfd("second");
    ASSERT_OK(ipc::send_fds(sp.a.get(), as_bytes("hello"), {one.get(), two.get()}));
    std::array<std::byte, 64> buf{};
    auto r = ipc::receive_fds(sp.b.get(), buf, 4);
    ASSERT_OK(r);
    EXPECT_EQ(r->size_bytes, 5u);
    EXPECT_EQ(std::memcmp(buf.data(), "hello", 5), 0);
    ASSERT_EQ(r->fds.size(), 2u);
    EXPECT_EQ(read_back(r->fds[0].get()), "first");
    EXPECT_EQ(read_back(r->fds[1].get()), "second");
    for (auto& fd : r->fds) EXPECT_TRUE(::fcntl(fd.get(), F_GETFD) & FD_CLOEXEC) << "MSG_CMSG_CLOEXEC";
    // The sender keeps its fds.
    EXPECT_EQ(read_back(one.get()), "first");
  }
  EXPECT_EQ(open_fd_count(), base);
}

TEST(Ipc, BytesWithoutFds) {
  SocketPair sp;
  ASSERT_OK(ipc::send_fds(sp.a.get(), as_bytes("x")));
  std::array<std::byte, 8> buf{};
  auto r = ipc::receive_fds(sp.b.get(), buf);
  ASSERT_OK(r);
  EXPECT_EQ(r->size_bytes, 1u);
  EXPECT_TRUE(r->fds.empty());
}

TEST(Ipc, MoreFdsThanMaxAreAllClosedAndReported) {
  if (!et_test::recvmsg_reports_ctrunc())
    GTEST_SKIP() << "recvmsg here drops fds that do not fit without MSG_CTRUNC (QEMU user mode does so); "
                    "Linux reports it, and this test runs on every native build";
  const int base = open_fd_count();
  {
    SocketPair sp;
    std::vector<UniqueFd> fds;
    std::vector<int> raw;
    for (int i = 0; i < 8; ++i) {
      fds.push_back(make_memfd("x"));
      raw.push_back(fds.back().get());
    }
    const int with_senders = open_fd_count();
    ASSERT_OK(ipc::send_fds(sp.a.get(), as_bytes("eight"), raw));
    std::array<std::byte, 16> buf{};
    auto r = ipc::receive_fds(sp.b.get(), buf, 2);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code(), ErrorCode::OutOfRange);
    // Either the kernel truncated the control data (MSG_CTRUNC) or more fds fit than allowed.
    const auto& msg = r.error().message();
    EXPECT_TRUE(msg.find("MSG_CTRUNC") != std::string::npos || msg.find("more than the 2 allowed") != std::string::npos)
        << msg;
    EXPECT_NE(msg.find("closed"), std::string::npos) << msg;
    EXPECT_EQ(open_fd_count(), with_senders) << "received fds leaked";
  }
  EXPECT_EQ(open_fd_count(), base);
}

TEST(Ipc, ZeroMaxFdsRefusesAnyFd) {
  const int base = open_fd_count();
  {
    SocketPair sp;
    UniqueFd one = make_memfd("x");
    ASSERT_OK(ipc::send_fds(sp.a.get(), as_bytes("one"), {one.get()}));
    std::array<std::byte, 16> buf{};
    auto r = ipc::receive_fds(sp.b.get(), buf, 0);
    EXPECT_ERROR(r, ErrorCode::OutOfRange, "closed");
  }
  EXPECT_EQ(open_fd_count(), base);
}

TEST(Ipc, MessageLargerThanTheBufferIsMsgTrunc) {
  const int base = open_fd_count();
  {
    SocketPair sp;
    UniqueFd one = make_memfd("x");
    ASSERT_OK(ipc::send_fds(sp.a.get(), as_bytes("a long message"), {one.get()}));
    std::array<std::byte, 4> buf{};
    auto r = ipc::receive_fds(sp.b.get(), buf);
    EXPECT_ERROR(r, ErrorCode::OutOfRange, "message larger than the 4 B buffer (MSG_TRUNC)");
  }
  EXPECT_EQ(open_fd_count(), base) << "the fd of a truncated message leaked";
}

TEST(Ipc, PeerClosedIsUnavailable) {
  SocketPair sp;
  sp.a.reset();
  std::array<std::byte, 4> buf{};
  EXPECT_ERROR(ipc::receive_fds(sp.b.get(), buf), ErrorCode::Unavailable, "peer closed the connection");
  // Sending to a closed peer: EPIPE without SIGPIPE (MSG_NOSIGNAL).
  SocketPair sp2;
  sp2.b.reset();
  auto r = ipc::send_fds(sp2.a.get(), as_bytes("x"));
  EXPECT_ERROR(r, ErrorCode::Unavailable, "EPIPE");
}

TEST(Ipc, BadArguments) {
  SocketPair sp;
  EXPECT_ERROR(ipc::send_fds(sp.a.get(), {}), ErrorCode::InvalidArgument, "needs at least 1 byte");
  std::vector<int> many(ipc::kMaxFdsPerMessage + 1, 0);
  EXPECT_ERROR(ipc::send_fds(sp.a.get(), as_bytes("x"), many), ErrorCode::InvalidArgument,
               "17 fds exceed the limit of 16 per message");
  EXPECT_ERROR(ipc::send_fds(sp.a.get(), as_bytes("x"), {-3}), ErrorCode::InvalidArgument, "fd -3 is not a valid fd");
  std::array<std::byte, 4> buf{};
  EXPECT_ERROR(ipc::receive_fds(sp.b.get(), std::span<std::byte>()), ErrorCode::InvalidArgument, "empty buffer");
  EXPECT_ERROR(ipc::receive_fds(sp.b.get(), buf, 17), ErrorCode::InvalidArgument, "max_fds 17 exceeds the limit 16");
  // Not a socket.
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  UniqueFd r(p[0]), w(p[1]);
  EXPECT_ERROR(ipc::send_fds(w.get(), as_bytes("x")), ErrorCode::InvalidArgument, "ENOTSOCK");
  EXPECT_ERROR(ipc::receive_fds(r.get(), buf), ErrorCode::InvalidArgument, "ENOTSOCK");
}

TEST(Ipc, EintrIsRetried) {
  SocketPair sp;
  const auto sends = sys::call_count(sys::Call::Sendmsg);
  const auto recvs = sys::call_count(sys::Call::Recvmsg);
  {
    auto send_hook = et_test::fail_nth(sys::Call::Sendmsg, 1, EINTR);
    auto recv_hook = et_test::fail_nth(sys::Call::Recvmsg, 1, EINTR);
    et_test::ScopedFaultHook hook([=](const sys::CallInfo& c) {
      int e = send_hook(c);  // each counts only its own call kind
      return e ? e : recv_hook(c);
    });
    ASSERT_OK(ipc::send_fds(sp.a.get(), as_bytes("retry")));
    std::array<std::byte, 8> buf{};
    auto r = ipc::receive_fds(sp.b.get(), buf);
    ASSERT_OK(r);
    EXPECT_EQ(r->size_bytes, 5u);
  }
  EXPECT_EQ(sys::call_count(sys::Call::Sendmsg), sends + 2);
  EXPECT_EQ(sys::call_count(sys::Call::Recvmsg), recvs + 2);
}

TEST(Ipc, FdsCrossAProcessBoundary) {
  // A child receives a memfd, writes into it, and replies; the parent sees the write.
  SocketPair sp;
  UniqueFd shared = make_memfd("parent");
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    sp.a.reset();
    std::array<std::byte, 16> buf{};
    auto r = ipc::receive_fds(sp.b.get(), buf, 1);
    if (!r || r->fds.size() != 1) ::_exit(1);
    if (::pwrite(r->fds[0].get(), "child", 5, 0) != 5) ::_exit(2);
    if (!ipc::send_fds(sp.b.get(), as_bytes("ok"))) ::_exit(3);
    ::_exit(0);
  }
  sp.b.reset();
  ASSERT_OK(ipc::send_fds(sp.a.get(), as_bytes("fd"), {shared.get()}));
  std::array<std::byte, 16> buf{};
  auto reply = ipc::receive_fds(sp.a.get(), buf, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  ASSERT_OK(reply);
  EXPECT_EQ(read_back(shared.get()).substr(0, 5), "child");
}

// ---- Options of the receiving socket: the kernel adds control messages of its own ----------------

// Turns a SOL_SOCKET option on; "" when it worked, else why not (a GTEST_SKIP reason naming the kernel).
std::string enable(int fd, int option, const char* name) {
  int on = 1;
  if (::setsockopt(fd, SOL_SOCKET, option, &on, sizeof on) == 0) return {};
  const int e = errno;
  utsname u{};
  ::uname(&u);
  return std::string("setsockopt(SOL_SOCKET, ") + name + "): " + std::strerror(e) + " on Linux " + u.release +
         ": not offered here (a kernel without it, or QEMU user mode, which does not translate " + name + ")";
}

// One message with `fds` out, one receive_fds in: the bytes and every fd arrive, nothing else stays open.
void round_trip(const SocketPair& sp, std::size_t nfds, std::size_t max_fds) {
  std::vector<UniqueFd> fds;
  std::vector<int> raw;
  for (std::size_t i = 0; i < nfds; ++i) {
    fds.push_back(make_memfd("payload"));
    raw.push_back(fds.back().get());
  }
  const int before = open_fd_count();
  ASSERT_OK(ipc::send_fds(sp.a.get(), as_bytes("msg"), raw));
  std::array<std::byte, 16> buf{};
  auto r = ipc::receive_fds(sp.b.get(), buf, max_fds);
  ASSERT_OK(r);
  EXPECT_EQ(r->size_bytes, 3u);
  ASSERT_EQ(r->fds.size(), nfds);
  for (auto& fd : r->fds) EXPECT_EQ(read_back(fd.get()), "payload");
  EXPECT_EQ(open_fd_count(), before + static_cast<int>(nfds)) << "only the sent fds arrive (a pidfd is closed)";
}

// A tensor over the same socket pair (ipc::receive asks for exactly 1 fd).
void tensor_round_trip(const SocketPair& sp) {
  auto t = TensorDyn::allocate({64}, DType::U8, {.memory = MemoryKind::Shm});
  ASSERT_OK(t);
  ASSERT_OK(ipc::send(sp.a.get(), *t));
  auto r = ipc::receive(sp.b.get());
  ASSERT_OK(r);
  EXPECT_TRUE(r->same_buffer(*t));
}

TEST(Ipc, ReceivesOnASocketWithSoPasscred) {
  // systemd's PassCredentials=yes: the kernel adds SCM_CREDENTIALS (struct ucred) to every message.
  const int base = open_fd_count();
  {
    SocketPair sp;
    ASSERT_EQ(enable(sp.b.get(), SO_PASSCRED, "SO_PASSCRED"), "");
    round_trip(sp, 0, 0);
    round_trip(sp, 1, 1);
    round_trip(sp, ipc::kMaxFdsPerMessage, ipc::kMaxFdsPerMessage);
    tensor_round_trip(sp);
  }
  EXPECT_EQ(open_fd_count(), base);
}

TEST(Ipc, ReceivesOnASocketWithTimestamps) {
  // SO_TIMESTAMPNS and SO_TIMESTAMPING: datagram and seqpacket receives carry a timespec and 3 more.
  SocketPair sp;
  // Linux has offered both since 2.6.30; QEMU user mode (the ARM lanes) does not translate them and
  // answers ENOPROTOOPT.
  if (auto why = enable(sp.b.get(), SO_TIMESTAMPNS, "SO_TIMESTAMPNS"); !why.empty())
    GTEST_SKIP() << why;
  int flags = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
  ASSERT_EQ(::setsockopt(sp.b.get(), SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof flags), 0) << std::strerror(errno);
  round_trip(sp, 1, 1);
  round_trip(sp, ipc::kMaxFdsPerMessage, ipc::kMaxFdsPerMessage);
  tensor_round_trip(sp);
}

TEST(Ipc, PidfdsFromSoPasspidfdAreClosed) {
  // SO_PASSPIDFD (Linux >= 6.5): the kernel installs a pidfd of the sender in an SCM_PIDFD message.
#ifndef SO_PASSPIDFD
  GTEST_SKIP() << "SO_PASSPIDFD: no value known for this architecture's socket options";
#else
  const int base = open_fd_count();
  {
    SocketPair sp;
    if (auto why = enable(sp.b.get(), SO_PASSPIDFD, "SO_PASSPIDFD"); !why.empty()) GTEST_SKIP() << why;
    for (int i = 0; i < 200; ++i) {
      SCOPED_TRACE(i);
      round_trip(sp, static_cast<std::size_t>(i % 3), 2);  // with 0, 1 and 2 fds of the sender's
      if (i % 10 == 0) tensor_round_trip(sp);
      if (HasFatalFailure()) return;
    }
  }
  EXPECT_EQ(open_fd_count(), base) << "pidfds leaked";
#endif
}

TEST(Ipc, ReceivesOnASocketWithSoPasssec) {
  // SO_PASSSEC: the kernel adds SCM_SECURITY (the sender's LSM label) where an LSM provides one.
  SocketPair sp;
  if (auto why = enable(sp.b.get(), SO_PASSSEC, "SO_PASSSEC"); !why.empty()) GTEST_SKIP() << why;
  round_trip(sp, 1, 1);
  round_trip(sp, ipc::kMaxFdsPerMessage, ipc::kMaxFdsPerMessage);
  tensor_round_trip(sp);
}

TEST(Ipc, ReceivesWithEveryOptionAtOnce) {
  const int base = open_fd_count();
  {
    SocketPair sp;
    ASSERT_EQ(enable(sp.b.get(), SO_PASSCRED, "SO_PASSCRED"), "");
    // Each where this kernel offers it (QEMU user mode has no timestamp options).
    if (enable(sp.b.get(), SO_TIMESTAMPNS, "SO_TIMESTAMPNS").empty()) {
      int flags = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
      ASSERT_EQ(::setsockopt(sp.b.get(), SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof flags), 0) << std::strerror(errno);
    }
    (void)enable(sp.b.get(), SO_PASSSEC, "SO_PASSSEC");
#ifdef SO_PASSPIDFD
    (void)enable(sp.b.get(), SO_PASSPIDFD, "SO_PASSPIDFD");
#endif
    round_trip(sp, 0, 0);
    round_trip(sp, ipc::kMaxFdsPerMessage, ipc::kMaxFdsPerMessage);
    tensor_round_trip(sp);
  }
  EXPECT_EQ(open_fd_count(), base);
}

TEST(Ipc, TruncatedControlDataSaysWhatArrived) {
  // RLIMIT_NOFILE lets 2 of 8 fds in: the kernel stops there and sets MSG_CTRUNC.
  const int base = open_fd_count();
  {
    SocketPair sp;
    ASSERT_EQ(enable(sp.b.get(), SO_PASSCRED, "SO_PASSCRED"), "");
    std::vector<UniqueFd> fds;
    std::vector<int> raw;
    for (int i = 0; i < 8; ++i) {
      fds.push_back(make_memfd("x"));
      raw.push_back(fds.back().get());
    }
    ASSERT_OK(ipc::send_fds(sp.a.get(), as_bytes("eight"), raw));
    const int with_senders = open_fd_count();
    UniqueFd lowest_free(::fcntl(sp.a.get(), F_DUPFD_CLOEXEC, 0));
    ASSERT_TRUE(lowest_free.is_valid());
    const rlim_t room = static_cast<rlim_t>(lowest_free.get()) + 2;
    lowest_free.reset();
    rlimit saved{};
    ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
    rlimit tight = saved;
    tight.rlim_cur = room;
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &tight), 0);
    std::array<std::byte, 16> buf{};
    auto r = ipc::receive_fds(sp.b.get(), buf, 8);
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
    EXPECT_ERROR(r, ErrorCode::OutOfRange, "control data truncated (MSG_CTRUNC)");
    const std::string msg = r ? std::string() : r.error().message();
    EXPECT_NE(msg.find("arrived: SCM_CREDENTIALS, SCM_RIGHTS (2 fds)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("all closed"), std::string::npos) << msg;
    EXPECT_EQ(open_fd_count(), with_senders) << "received fds leaked";
  }
  EXPECT_EQ(open_fd_count(), base);
}

}  // namespace
