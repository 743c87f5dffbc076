// SPDX-License-Identifier: Apache-2.0
// The syscall seam (src/base/sys.cpp): counts every call, lets a hook fail any of them.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>
#include <string>

#include "base/sys_testing.h"
#include "support/test_support.h"

using namespace edgetensor;

namespace {

TEST(Sys, EveryCallHasADistinctName) {
  std::set<std::string> names;
  for (int i = 0; i < static_cast<int>(sys::Call::Count); ++i) {
    std::string n = sys::call_name(static_cast<sys::Call>(i));
    EXPECT_NE(n, "unknown");
    names.insert(n);
  }
  EXPECT_EQ(names.size(), static_cast<std::size_t>(sys::Call::Count));
  EXPECT_STREQ(sys::call_name(sys::Call::MemfdCreate), "memfd_create");
  EXPECT_STREQ(sys::call_name(static_cast<sys::Call>(1000)), "unknown");
}

TEST(Sys, CallsAreCounted) {
  const auto total = sys::total_calls();
  const auto memfds = sys::call_count(sys::Call::MemfdCreate);
  const auto closes = sys::call_count(sys::Call::Close);
  int fd = sys::memfd_create("et-sys-test", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(sys::close(fd), 0);
  EXPECT_EQ(sys::call_count(sys::Call::MemfdCreate), memfds + 1);
  EXPECT_EQ(sys::call_count(sys::Call::Close), closes + 1);
  EXPECT_EQ(sys::total_calls(), total + 2);
}

// Failed calls are counted apart, whether the kernel or a fault hook failed them (the DMA-BUF cache's
// "no failed system call after the first Auto allocation" is measured with this).
TEST(Sys, FailedCallsAreCountedApart) {
  const auto opens = sys::call_count(sys::Call::Open);
  const auto failed_opens = sys::failed_count(sys::Call::Open);
  const auto failed = sys::total_failed();
  EXPECT_EQ(sys::open("/nonexistent/et-sys-test", O_RDONLY | O_CLOEXEC), -1);
  int fd = sys::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  char c;
  EXPECT_EQ(sys::read(fd, &c, 1), 0) << "end of file is no failure";
  EXPECT_EQ(sys::close(fd), 0);
  EXPECT_EQ(sys::call_count(sys::Call::Open), opens + 2);
  EXPECT_EQ(sys::failed_count(sys::Call::Open), failed_opens + 1);
  EXPECT_EQ(sys::opendir("/nonexistent/et-sys-test"), nullptr);
  struct stat st {};
  EXPECT_EQ(sys::stat("/nonexistent/et-sys-test", &st), -1);
  {
    et_test::ScopedFaultHook hook(et_test::fail_nth(sys::Call::Madvise, 1, EINVAL));
    EXPECT_EQ(sys::madvise(nullptr, 0, MADV_NORMAL), -1);
  }
  EXPECT_EQ(sys::total_failed(), failed + 4);
  EXPECT_EQ(sys::failed_count(sys::Call::Madvise) >= 1, true);
}

// hpage_pmd_size: this kernel's answer (0 or a power of two above the page size), or the test's.
TEST(Sys, HugePageSizeIsReadOnceOrFaked) {
  const std::size_t real = sys::hpage_pmd_size();
  EXPECT_TRUE(real == 0 || ((real & (real - 1)) == 0 && real > sys::page_size())) << real;
  sys::set_hpage_pmd_size_for_testing(std::size_t{32} << 20);
  EXPECT_EQ(sys::hpage_pmd_size(), std::size_t{32} << 20);
  sys::set_hpage_pmd_size_for_testing(0);
  EXPECT_EQ(sys::hpage_pmd_size(), 0u);
  sys::reset_hpage_pmd_size_for_testing();
  EXPECT_EQ(sys::hpage_pmd_size(), real);
}

TEST(Sys, HookFailsTheChosenCallWithoutRunningIt) {
  const int base = et_test::open_fd_count();
  {
    et_test::ScopedFaultHook hook(et_test::fail_nth(sys::Call::MemfdCreate, 2, ENOMEM));
    int a = sys::memfd_create("a", MFD_CLOEXEC);
    EXPECT_GE(a, 0);
    errno = 0;
    EXPECT_EQ(sys::memfd_create("b", MFD_CLOEXEC), -1);
    EXPECT_EQ(errno, ENOMEM);
    int c = sys::memfd_create("c", MFD_CLOEXEC);
    EXPECT_GE(c, 0);
    sys::close(a);
    sys::close(c);
  }
  EXPECT_EQ(et_test::open_fd_count(), base);
}

TEST(Sys, HookSeesFdAndRequest) {
  int fd = sys::memfd_create("et-sys-hook", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_GE(fd, 0);
  sys::CallInfo seen{sys::Call::Count, -1, 0, nullptr};
  {
    et_test::ScopedFaultHook hook([&](const sys::CallInfo& c) {
      seen = c;
      return 0;
    });
    EXPECT_EQ(sys::fcntl(fd, F_GET_SEALS), 0);
  }
  EXPECT_EQ(seen.call, sys::Call::Fcntl);
  EXPECT_EQ(seen.fd, fd);
  EXPECT_EQ(seen.request, static_cast<unsigned long>(F_GET_SEALS));
  sys::close(fd);
}

TEST(Sys, MmapAndPosixFallocateFailureConventions) {
  {
    et_test::ScopedFaultHook hook(et_test::fail_nth(sys::Call::Mmap, 1, ENOMEM));
    errno = 0;
    EXPECT_EQ(sys::mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), MAP_FAILED);
    EXPECT_EQ(errno, ENOMEM);
  }
  int fd = sys::memfd_create("et-sys-fallocate", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  {
    // posix_fallocate reports the error number as its result, like libc.
    et_test::ScopedFaultHook hook(et_test::fail_nth(sys::Call::PosixFallocate, 1, ENOSPC));
    EXPECT_EQ(sys::posix_fallocate(fd, 0, 4096), ENOSPC);
  }
  EXPECT_EQ(sys::posix_fallocate(fd, 0, 4096), 0);
  sys::close(fd);
}

TEST(Sys, NoHookAfterTheScope) {
  {
    et_test::ScopedFaultHook hook([](const sys::CallInfo&) { return EPERM; });
    EXPECT_EQ(sys::memfd_create("x", MFD_CLOEXEC), -1);
  }
  int fd = sys::memfd_create("x", MFD_CLOEXEC);
  EXPECT_GE(fd, 0);
  sys::close(fd);
}

}  // namespace
