// SPDX-License-Identifier: Apache-2.0
// UniqueFd / SharedFd (src/base/unique_fd.cpp): ownership, CLOEXEC dups, close failures logged.
#include <edgetensor/shared_fd.h>
#include <edgetensor/unique_fd.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "support/test_support.h"

using namespace edgetensor;
using et_test::open_fd_count;

namespace {

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) >= 0; }
bool has_cloexec(int fd) { return (::fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0; }

int make_fd() {
  int p[2];
  EXPECT_EQ(::pipe(p), 0);  // no O_CLOEXEC on purpose: dups must add it
  ::close(p[1]);
  return p[0];
}

TEST(UniqueFd, ClosesExactlyOnce) {
  const int base = open_fd_count();
  int raw = make_fd();
  {
    UniqueFd fd(raw);
    EXPECT_TRUE(fd.is_valid());
    EXPECT_EQ(fd.get(), raw);
    UniqueFd moved(std::move(fd));
    EXPECT_FALSE(fd.is_valid());  // NOLINT(bugprone-use-after-move): checking the moved-from state
    EXPECT_EQ(fd.get(), -1);
    EXPECT_EQ(moved.get(), raw);
    UniqueFd assigned;
    assigned = std::move(moved);
    EXPECT_EQ(assigned.get(), raw);
    EXPECT_TRUE(is_open(raw));
  }
  EXPECT_FALSE(is_open(raw));
  EXPECT_EQ(open_fd_count(), base);
}

TEST(UniqueFd, ResetAndRelease) {
  const int base = open_fd_count();
  int a = make_fd();
  int b = make_fd();
  UniqueFd fd(a);
  fd.reset(b);
  EXPECT_FALSE(is_open(a));
  EXPECT_EQ(fd.get(), b);
  fd.reset(b);  // resetting to the same fd does not close it
  EXPECT_TRUE(is_open(b));
  int released = fd.release();
  EXPECT_EQ(released, b);
  EXPECT_FALSE(fd.is_valid());
  EXPECT_TRUE(is_open(b));
  ::close(b);
  EXPECT_EQ(open_fd_count(), base);
}

TEST(UniqueFd, DuplicateIsANewCloexecFd) {
  const int base = open_fd_count();
  int raw = make_fd();
  ASSERT_FALSE(has_cloexec(raw));
  {
    auto dup = UniqueFd::duplicate(raw);
    ASSERT_OK(dup);
    EXPECT_NE(dup->get(), raw);
    EXPECT_TRUE(has_cloexec(dup->get()));
    auto dup2 = dup->dup();
    ASSERT_OK(dup2);
    EXPECT_TRUE(has_cloexec(dup2->get()));
  }
  EXPECT_TRUE(is_open(raw));  // borrowed: still ours
  ::close(raw);
  EXPECT_EQ(open_fd_count(), base);
}

TEST(UniqueFd, DuplicateErrors) {
  EXPECT_ERROR(UniqueFd::duplicate(-1), ErrorCode::InvalidArgument, "fd -1 is not a valid fd");
  int raw = make_fd();
  ::close(raw);
  auto r = UniqueFd::duplicate(raw);
  EXPECT_ERROR(r, ErrorCode::InvalidArgument, "F_DUPFD_CLOEXEC");
  EXPECT_EQ(r.error().sys_errno(), EBADF);
  EXPECT_NE(r.error().message().find("EBADF"), std::string::npos);
  EXPECT_ERROR(UniqueFd().dup(), ErrorCode::InvalidArgument, "not a valid fd");
}

TEST(UniqueFd, EmfileOnDupIsBusyAndLeaksNothing) {
  const int base = open_fd_count();
  int raw = make_fd();
  {
    et_test::ScopedFaultHook hook(et_test::fail_nth(sys::Call::Dup, 1, EMFILE));
    auto r = UniqueFd::duplicate(raw);
    EXPECT_ERROR(r, ErrorCode::Busy, "EMFILE");
  }
  ::close(raw);
  EXPECT_EQ(open_fd_count(), base);
}

TEST(UniqueFd, CloseFailureInTheDestructorIsLogged) {
  int raw = make_fd();
  {
    et_test::ScopedLogCapture log;
    {
      et_test::ScopedFaultHook hook(et_test::fail_nth(sys::Call::Close, 1, EIO));
      UniqueFd fd(raw);
    }
    EXPECT_TRUE(log.contains("close(fd " + std::to_string(raw) + ") failed")) << ::testing::PrintToString(log.lines());
    EXPECT_TRUE(log.contains("EIO"));
  }
  // The injected failure did not run close(): the fd is still open, close it for real.
  EXPECT_TRUE(is_open(raw));
  ::close(raw);
}

TEST(UniqueFd, CloseEintrIsNotRetriedAndNotLogged) {
  int raw = make_fd();
  const auto closes = sys::call_count(sys::Call::Close);
  {
    et_test::ScopedLogCapture log;
    {
      et_test::ScopedFaultHook hook(et_test::fail_nth(sys::Call::Close, 1, EINTR));
      UniqueFd fd(raw);
    }
    EXPECT_TRUE(log.lines().empty()) << ::testing::PrintToString(log.lines());
  }
  EXPECT_EQ(sys::call_count(sys::Call::Close), closes + 1) << "close must never be retried";
  ::close(raw);
}

TEST(SharedFd, ClosesWithTheLastCopy) {
  const int base = open_fd_count();
  int raw = make_fd();
  {
    SharedFd a = SharedFd::adopt(UniqueFd(raw));
    EXPECT_EQ(a.get(), raw);
    {
      SharedFd b = a;
      SharedFd c = b;
      EXPECT_EQ(c.get(), raw);
    }
    EXPECT_TRUE(is_open(raw));
  }
  EXPECT_FALSE(is_open(raw));
  EXPECT_EQ(open_fd_count(), base);
  EXPECT_FALSE(SharedFd::adopt(UniqueFd()).is_valid());
  EXPECT_EQ(SharedFd().get(), -1);
}

TEST(SharedFd, DuplicateKeepsTheCallersFd) {
  const int base = open_fd_count();
  int raw = make_fd();
  {
    auto s = SharedFd::duplicate(raw);
    ASSERT_OK(s);
    EXPECT_NE(s->get(), raw);
    EXPECT_TRUE(has_cloexec(s->get()));
    auto d = s->dup();
    ASSERT_OK(d);
    EXPECT_TRUE(has_cloexec(d->get()));
  }
  EXPECT_TRUE(is_open(raw));
  ::close(raw);
  EXPECT_EQ(open_fd_count(), base);
  EXPECT_ERROR(SharedFd::duplicate(-5), ErrorCode::InvalidArgument, "fd -5 is not a valid fd");
}

}  // namespace
