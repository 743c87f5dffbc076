// SPDX-License-Identifier: Apache-2.0
// Shared test helpers: fd and mapping counts, fd paths, shm names, allocation options, syscall-seam
// scopes, log capture, error assertions. The environment (env vars, GL/DMA-BUF switches): env.h.
#pragma once

#include <edgetensor/edgetensor.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/sys_testing.h"
#include "support/env.h"

namespace et_test {

/// Entries in /proc/self/fd.
int open_fd_count();
/// Threads of this process (entries in /proc/self/task); a joined thread is gone from it.
int thread_count();
/// waitpid status of child `pid`, polled for up to `hang_bound` (a hang check, not a timing
/// assertion); -1 when it had not ended by then (it is killed with SIGKILL and reaped).
int wait_child_or_kill(int pid, int hang_bound_ms);
/// "/proc/self/fd/<fd>": reopening it gives a new open file description (e.g. O_RDONLY of a RW fd).
std::string proc_fd_path(int fd);
/// Where /proc/self/fd/<fd> points ("memfd:name (deleted)", "/dev/dma_heap/system"), or "" on error.
std::string fd_link(int fd);
/// Lines in /proc/self/maps.
int mapping_count();
/// Lines in /proc/self/maps that map a file (memfds, DMA-BUFs, shm objects and the binaries): what a
/// buffer's CPU map adds. Anonymous memory, [heap] and [stack] are not counted: malloc creates and
/// grows them as it likes (a forked child may start its brk heap long after its first frames).
int file_mapping_count();

// gcc defines __SANITIZE_ADDRESS__ / __SANITIZE_THREAD__; clang answers __has_feature instead.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define ET_TEST_SANITIZED_MAPS 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(ET_TEST_SANITIZED_MAPS)
/// False in ASan and TSan builds: ASan's allocator maps memory on demand (its quarantine keeps freed
/// blocks), TSan maps shadow memory for address ranges it has not seen (a freed buffer's range reused
/// elsewhere), so /proc/self/maps grows without any leak. Exact in normal builds; fd counts always are.
inline constexpr bool kExactMappingCount = false;
#else
inline constexpr bool kExactMappingCount = true;
#endif
/// Entries in /dev/shm.
int dev_shm_entry_count();
/// Resident set size in bytes (VmRSS).
long rss_bytes();

/// A POSIX shm name no other test or process uses: "/et-test-<pid>-<tag>-<n>".
std::string unique_shm_name(const char* tag);
/// Whether recvmsg sets MSG_CTRUNC when more fds arrive than the control buffer holds (unix(7)); false
/// under QEMU user mode (the ARM lanes: 7.2 and 10.0), which passes on what fits without the flag.
bool recvmsg_reports_ctrunc();

/// AllocateOptions asking for memory of `kind`, everything else default.
inline edgetensor::AllocateOptions mem(edgetensor::MemoryKind kind) {
  edgetensor::AllocateOptions o;
  o.memory = kind;
  return o;
}

/// Installs a fault hook for the scope of this object.
class ScopedFaultHook {
 public:
  explicit ScopedFaultHook(edgetensor::sys::FaultHook hook) { edgetensor::sys::set_fault_hook(std::move(hook)); }
  ~ScopedFaultHook() { edgetensor::sys::set_fault_hook({}); }
};

/// Fails the n-th (1-based) call of `call` with `err`.
edgetensor::sys::FaultHook fail_nth(edgetensor::sys::Call call, int n, int err);

/// Polls `done` every millisecond until it is true (returns true) or `limit` passed (returns false):
/// for what another thread does, such as a sender's reader thread reading a release.
template <class F>
bool eventually(F done, std::chrono::milliseconds limit = std::chrono::milliseconds(2000)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

/// Captures the library's log lines for the scope of this object (restores the previous callback).
class ScopedLogCapture {
 public:
  ScopedLogCapture();
  ~ScopedLogCapture();
  ScopedLogCapture(const ScopedLogCapture&) = delete;
  ScopedLogCapture& operator=(const ScopedLogCapture&) = delete;
  std::vector<std::string> lines() const;
  /// True when some captured line contains `needle`.
  bool contains(const std::string& needle) const;

 private:
  struct State {
    mutable std::mutex mutex;
    std::vector<std::string> lines;
  };
  std::shared_ptr<State> state_;
  edgetensor::LogCallback previous_;
};

}  // namespace et_test

/// Asserts that a Result failed with `code` and that its message contains `needle`.
#define EXPECT_ERROR(result, expected_code, needle)                                              \
  do {                                                                                           \
    const auto& et_r_ = (result);                                                                \
    ASSERT_FALSE(et_r_.has_value()) << "expected an error containing: " << (needle);             \
    EXPECT_EQ(et_r_.error().code(), (expected_code)) << et_r_.error().to_string();               \
    EXPECT_NE(et_r_.error().message().find(needle), std::string::npos) << et_r_.error().to_string(); \
  } while (0)

#define ASSERT_OK(result)                                                                    \
  do {                                                                                       \
    const auto& et_r_ = (result);                                                            \
    ASSERT_TRUE(et_r_.has_value()) << et_r_.error().to_string();                              \
  } while (0)
