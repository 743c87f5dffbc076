// SPDX-License-Identifier: Apache-2.0
// Logging (src/base/log.cpp): the library prints nothing itself; swallowed failures reach the callback.
#include <edgetensor/edgetensor.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <stdexcept>
#include <cstdint>
#include <string>

#include "core/storage.h"
#include "support/test_support.h"

using namespace edgetensor;

namespace {

// Redirects fds 1 and 2 into a memfd for its lifetime; `captured()` returns what was written.
class CaptureStdio {
 public:
  CaptureStdio() : sink_(::memfd_create("et-stdio", MFD_CLOEXEC)) {
    std::fflush(stdout);
    std::fflush(stderr);
    saved_out_ = ::dup(1);
    saved_err_ = ::dup(2);
    ::dup2(sink_, 1);
    ::dup2(sink_, 2);
  }
  ~CaptureStdio() { restore(); ::close(sink_); }
  void restore() {
    if (saved_out_ < 0) return;
    std::fflush(stdout);
    std::fflush(stderr);
    ::dup2(saved_out_, 1);
    ::dup2(saved_err_, 2);
    ::close(saved_out_);
    ::close(saved_err_);
    saved_out_ = saved_err_ = -1;
  }
  std::string captured() const {
    char buf[4096];
    ssize_t n = ::pread(sink_, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
  }

 private:
  int sink_;
  int saved_out_ = -1;
  int saved_err_ = -1;
};

// Failures the library swallows or returns, with no callback installed.
void exercise_failures() {
  AllocateOptions shm;
  shm.memory = MemoryKind::Shm;
  (void)TensorDyn::allocate({SIZE_MAX / 4 + 1, 8}, DType::U8);  // byte size overflows size_t
  (void)TensorDyn::allocate(std::vector<std::size_t>(9, 1), DType::U8);
  (void)TensorDyn::import_fd_dup(0, {1}, DType::U8);
  (void)TensorDyn::import_fd_dup(-1, {1}, DType::U8);
  (void)shm::open("/et-log-test-missing", {1}, DType::U8);  // refused: not allow_shrinkable
  (void)shm::open("/et-log-test-missing", {1}, DType::U8, false, ImportOptions{.allow_shrinkable = true});
  {
    et_test::ScopedFaultHook hook(et_test::fail_nth(sys::Call::MemfdCreate, 1, ENOMEM));
    (void)TensorDyn::allocate({4096}, DType::U8);  // Auto falls back
    (void)TensorDyn::allocate({4096}, DType::U8, shm);
  }
  auto t = TensorDyn::allocate({4096}, DType::U8, shm);
  if (t) {
    (void)t->map_read();
    int fd = detail::storage_of(*t)->backing().fd();
    {
      et_test::ScopedFaultHook hook(et_test::fail_nth(sys::Call::Close, 1, EIO));
      t = TensorDyn();  // close failure swallowed by the destructor
    }
    ::close(fd);
  }
}

TEST(Log, TheLibraryWritesNothingToStdoutOrStderr) {
  et_test::ScopedLogCapture log;  // a callback is set, and then cleared below
  set_log_callback({});
  CaptureStdio cap;
  exercise_failures();
  cap.restore();
  EXPECT_EQ(cap.captured(), "");
}

TEST(Log, SwallowedFailuresReachTheCallback) {
  et_test::ScopedLogCapture log;
  CaptureStdio cap;
  exercise_failures();
  cap.restore();
  EXPECT_EQ(cap.captured(), "") << "the library printed although a callback was set";
  EXPECT_TRUE(log.contains("warning: close(fd")) << ::testing::PrintToString(log.lines());
  EXPECT_TRUE(log.contains("EIO"));
  EXPECT_TRUE(log.contains("debug: auto allocation of 4096 B: shm failed")) << ::testing::PrintToString(log.lines());
  // Errors returned to the caller are not logged as well ("return or log, never both").
  EXPECT_FALSE(log.contains("rank 9"));
  EXPECT_FALSE(log.contains("does not exist"));
}

TEST(Log, AThrowingCallbackIsContained) {
  auto prev = set_log_callback([](LogLevel, std::string_view) { throw std::runtime_error("callback threw"); });
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  ::close(p[1]);
  {
    et_test::ScopedFaultHook hook(et_test::fail_nth(sys::Call::Close, 1, EIO));
    UniqueFd fd(p[0]);  // destructor logs; the callback throws; nothing escapes the noexcept destructor
  }
  ::close(p[0]);
  set_log_callback(prev);
  SUCCEED();
}

TEST(Log, SetReturnsThePreviousCallbackAndLevelsHaveNames) {
  int calls = 0;
  auto first = [&](LogLevel, std::string_view) { ++calls; };
  auto prev = set_log_callback(first);
  auto mine = set_log_callback(prev);
  ASSERT_TRUE(static_cast<bool>(mine));
  mine(LogLevel::Info, "x");
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(log_level_name(LogLevel::Debug), "debug");
  EXPECT_EQ(log_level_name(LogLevel::Info), "info");
  EXPECT_EQ(log_level_name(LogLevel::Warning), "warning");
  EXPECT_EQ(log_level_name(LogLevel::Error), "error");
}

}  // namespace
