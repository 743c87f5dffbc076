// SPDX-License-Identifier: Apache-2.0
// fd passing over Unix sockets (src/core/ipc.cpp): SCM_RIGHTS, MSG_CMSG_CLOEXEC, MSG_CTRUNC, MSG_TRUNC.
#include <edgetensor/edgetensor.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "support/test_support.h"

using namespace edgetensor;
using et_test::open_fd_count;

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
    GTEST_SKIP() << "recvmsg here drops fds that do not fit without MSG_CTRUNC (QEMU 7.2 user mode); "
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

}  // namespace
