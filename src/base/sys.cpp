// SPDX-License-Identifier: Apache-2.0
#include "base/sys.h"

#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <memory>
#include <mutex>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace sys {
namespace {

std::atomic<std::uint64_t> g_counts[static_cast<int>(Call::Count)];
std::atomic<std::uint64_t> g_failed[static_cast<int>(Call::Count)];
constexpr std::size_t kNoHpageOverride = ~std::size_t{0};
std::atomic<std::size_t> g_hpage_override{kNoHpageOverride};

void count_failure(Call call) noexcept { g_failed[static_cast<int>(call)].fetch_add(1, std::memory_order_relaxed); }
// Passes `result` through, counting it as a failure when `failed`.
template <class T>
T counted(Call call, T result, bool failed) noexcept {
  if (failed) count_failure(call);
  return result;
}
std::atomic<bool> g_has_hook{false};
std::mutex g_hook_mutex;
std::shared_ptr<const FaultHook> g_hook;  // guarded by g_hook_mutex
std::atomic<bool> g_has_emulator{false};
std::atomic<std::size_t> g_page_size_override{0};
std::shared_ptr<const IoctlEmulator> g_emulator;  // guarded by g_hook_mutex

// Counts the call and asks the hook; returns the errno to fail with, or 0.
int before(Call call, int fd = -1, unsigned long request = 0, const void* arg = nullptr) {
  g_counts[static_cast<int>(call)].fetch_add(1, std::memory_order_relaxed);
  if (!g_has_hook.load(std::memory_order_acquire)) return 0;
  std::shared_ptr<const FaultHook> hook;
  {
    std::lock_guard lock(g_hook_mutex);
    hook = g_hook;
  }
  const int injected = hook && *hook ? (*hook)(CallInfo{call, fd, request, arg}) : 0;
  if (injected) count_failure(call);
  return injected;
}

}  // namespace

const char* call_name(Call call) noexcept {
  static constexpr const char* kNames[] = {"open", "close", "dup", "mmap", "munmap", "memfd_create",
                                           "ftruncate", "fcntl", "fstat", "fstatfs", "ioctl",
                                           "posix_fallocate", "shm_open", "shm_unlink", "lseek",
                                           "sendmsg", "recvmsg", "madvise", "opendir", "stat", "read"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<int>(Call::Count));
  int i = static_cast<int>(call);
  return i >= 0 && i < static_cast<int>(Call::Count) ? kNames[i] : "unknown";
}

void set_fault_hook(FaultHook hook) {
  std::lock_guard lock(g_hook_mutex);
  g_hook = hook ? std::make_shared<const FaultHook>(std::move(hook)) : nullptr;
  g_has_hook.store(g_hook != nullptr, std::memory_order_release);
}

void set_ioctl_emulator(IoctlEmulator emulator) {
  std::lock_guard lock(g_hook_mutex);
  g_emulator = emulator ? std::make_shared<const IoctlEmulator>(std::move(emulator)) : nullptr;
  g_has_emulator.store(g_emulator != nullptr, std::memory_order_release);
}

std::size_t page_size() noexcept {
  if (std::size_t p = g_page_size_override.load(std::memory_order_relaxed)) return p;
  static const std::size_t real = [] {
    long p = ::sysconf(_SC_PAGESIZE);
    if (p > 0) return static_cast<std::size_t>(p);
    // glibc answers sysconf from the same auxv entry; a kernel always passes AT_PAGESZ (getauxval(3)).
    unsigned long aux = ::getauxval(AT_PAGESZ);
    if (aux == 0) std::abort();  // no page size at all: not a Linux process
    return static_cast<std::size_t>(aux);
  }();
  return real;
}

void set_page_size_for_testing(std::size_t bytes) noexcept {
  if (bytes != 0 && (bytes < 4096 || (bytes & (bytes - 1)) != 0)) std::abort();  // a test's own mistake
  g_page_size_override.store(bytes, std::memory_order_relaxed);
}

std::uint64_t call_count(Call call) noexcept {
  return g_counts[static_cast<int>(call)].load(std::memory_order_relaxed);
}

std::uint64_t total_calls() noexcept {
  std::uint64_t total = 0;
  for (const auto& c : g_counts) total += c.load(std::memory_order_relaxed);
  return total;
}

std::uint64_t failed_count(Call call) noexcept {
  return g_failed[static_cast<int>(call)].load(std::memory_order_relaxed);
}

std::uint64_t total_failed() noexcept {
  std::uint64_t total = 0;
  for (const auto& c : g_failed) total += c.load(std::memory_order_relaxed);
  return total;
}

std::size_t hpage_pmd_size() noexcept {
  if (std::size_t o = g_hpage_override.load(std::memory_order_relaxed); o != kNoHpageOverride) return o;
  static const std::size_t real = [] {
    // Read with libc directly, once: a fact of the kernel, like page_size()'s sysconf, not a backend call.
    int fd = ::open("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::size_t{0};
    char buf[32] = {};
    ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0) return std::size_t{0};
    char* end = nullptr;
    unsigned long long v = std::strtoull(buf, &end, 10);
    // A power of two larger than a page, or nothing (a malformed answer is treated as no THP).
    if (end == buf || v == 0 || (v & (v - 1)) != 0 || v <= page_size()) return std::size_t{0};
    return static_cast<std::size_t>(v);
  }();
  return real;
}

void set_hpage_pmd_size_for_testing(std::size_t bytes) noexcept {
  g_hpage_override.store(bytes, std::memory_order_relaxed);
}
void reset_hpage_pmd_size_for_testing() noexcept {
  g_hpage_override.store(kNoHpageOverride, std::memory_order_relaxed);
}

#define ET_SYS_FAIL_IF(expr, failed) \
  if (int e = (expr)) {              \
    errno = e;                       \
    return failed;                   \
  }

int open(const char* path, int flags, mode_t mode) {
  ET_SYS_FAIL_IF(before(Call::Open), -1);
  int r = ::open(path, flags, mode);
  return counted(Call::Open, r, r < 0);
}
int close(int fd) {
  ET_SYS_FAIL_IF(before(Call::Close, fd), -1);
  int r = ::close(fd);
  return counted(Call::Close, r, r != 0);
}
int dup_cloexec(int fd) {
  ET_SYS_FAIL_IF(before(Call::Dup, fd), -1);
  int r = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  return counted(Call::Dup, r, r < 0);
}
void* mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) {
  ET_SYS_FAIL_IF(before(Call::Mmap, fd), MAP_FAILED);
  if (std::size_t p = g_page_size_override.load(std::memory_order_relaxed);
      p != 0 && static_cast<std::uint64_t>(offset) % p != 0) {
    errno = EINVAL;  // mmap(2): offset must be a multiple of the page size
    return counted(Call::Mmap, MAP_FAILED, true);
  }
  void* r = ::mmap(addr, length, prot, flags, fd, offset);
  return counted(Call::Mmap, r, r == MAP_FAILED);
}
int munmap(void* addr, size_t length) {
  ET_SYS_FAIL_IF(before(Call::Munmap), -1);
  int r = ::munmap(addr, length);
  return counted(Call::Munmap, r, r != 0);
}
int memfd_create(const char* name, unsigned flags) {
  ET_SYS_FAIL_IF(before(Call::MemfdCreate), -1);
  int r = ::memfd_create(name, flags);
  return counted(Call::MemfdCreate, r, r < 0);
}
int ftruncate(int fd, off_t length) {
  ET_SYS_FAIL_IF(before(Call::Ftruncate, fd), -1);
  int r = ::ftruncate(fd, length);
  return counted(Call::Ftruncate, r, r != 0);
}
int fcntl(int fd, int cmd, long arg) {
  ET_SYS_FAIL_IF(before(Call::Fcntl, fd, static_cast<unsigned long>(cmd)), -1);
  int r = ::fcntl(fd, cmd, arg);
  return counted(Call::Fcntl, r, r < 0);
}
int fstat(int fd, struct stat* st) {
  ET_SYS_FAIL_IF(before(Call::Fstat, fd), -1);
  int r = ::fstat(fd, st);
  return counted(Call::Fstat, r, r != 0);
}
int fstatfs(int fd, struct statfs* st) {
  ET_SYS_FAIL_IF(before(Call::Fstatfs, fd), -1);
  int r = ::fstatfs(fd, st);
  return counted(Call::Fstatfs, r, r != 0);
}
int ioctl(int fd, unsigned long request, void* arg) {
  ET_SYS_FAIL_IF(before(Call::Ioctl, fd, request, arg), -1);
  if (g_has_emulator.load(std::memory_order_acquire)) {
    std::shared_ptr<const IoctlEmulator> emulator;
    {
      std::lock_guard lock(g_hook_mutex);
      emulator = g_emulator;
    }
    if (emulator && *emulator)
      if (auto r = (*emulator)(fd, request, arg)) return counted(Call::Ioctl, *r, *r < 0);
  }
  int r = ::ioctl(fd, request, arg);
  return counted(Call::Ioctl, r, r < 0);
}
int posix_fallocate(int fd, off_t offset, off_t length) {
  if (int e = before(Call::PosixFallocate, fd)) return e;
  int r = ::posix_fallocate(fd, offset, length);
  return counted(Call::PosixFallocate, r, r != 0);
}
int shm_open(const char* name, int flags, mode_t mode) {
  ET_SYS_FAIL_IF(before(Call::ShmOpen), -1);
  int r = ::shm_open(name, flags, mode);
  return counted(Call::ShmOpen, r, r < 0);
}
int shm_unlink(const char* name) {
  ET_SYS_FAIL_IF(before(Call::ShmUnlink), -1);
  int r = ::shm_unlink(name);
  return counted(Call::ShmUnlink, r, r != 0);
}
off_t lseek(int fd, off_t offset, int whence) {
  ET_SYS_FAIL_IF(before(Call::Lseek, fd), -1);
  off_t r = ::lseek(fd, offset, whence);
  return counted(Call::Lseek, r, r < 0);
}
ssize_t sendmsg(int fd, const struct msghdr* msg, int flags) {
  ET_SYS_FAIL_IF(before(Call::Sendmsg, fd), -1);
  ssize_t r = ::sendmsg(fd, msg, flags);
  return counted(Call::Sendmsg, r, r < 0);
}
ssize_t recvmsg(int fd, struct msghdr* msg, int flags) {
  ET_SYS_FAIL_IF(before(Call::Recvmsg, fd), -1);
  ssize_t r = ::recvmsg(fd, msg, flags);
  return counted(Call::Recvmsg, r, r < 0);
}
int madvise(void* addr, size_t length, int advice) {
  ET_SYS_FAIL_IF(before(Call::Madvise, -1, static_cast<unsigned long>(advice)), -1);
  int r = ::madvise(addr, length, advice);
  return counted(Call::Madvise, r, r != 0);
}
DIR* opendir(const char* path) {
  ET_SYS_FAIL_IF(before(Call::Opendir), nullptr);
  DIR* r = ::opendir(path);
  return counted(Call::Opendir, r, r == nullptr);
}
int stat(const char* path, struct stat* st) {
  ET_SYS_FAIL_IF(before(Call::Stat), -1);
  int r = ::stat(path, st);
  return counted(Call::Stat, r, r != 0);
}
ssize_t read(int fd, void* buf, size_t count) {
  ET_SYS_FAIL_IF(before(Call::Read, fd), -1);
  ssize_t r = ::read(fd, buf, count);
  return counted(Call::Read, r, r < 0);
}

}  // namespace sys
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
