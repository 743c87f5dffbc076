// SPDX-License-Identifier: Apache-2.0
#include "core/sys.h"

#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <memory>
#include <mutex>

namespace edgetensor::inline ET_ABI_NAMESPACE::sys {
namespace {

std::atomic<std::uint64_t> g_counts[static_cast<int>(Call::Count)];
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
  return hook && *hook ? (*hook)(CallInfo{call, fd, request, arg}) : 0;
}

}  // namespace

const char* call_name(Call call) noexcept {
  static constexpr const char* kNames[] = {"open", "close", "dup", "mmap", "munmap", "memfd_create",
                                           "ftruncate", "fcntl", "fstat", "fstatfs", "ioctl",
                                           "posix_fallocate", "shm_open", "shm_unlink", "lseek",
                                           "sendmsg", "recvmsg"};
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

#define ET_SYS_FAIL_IF(expr, failed) \
  if (int e = (expr)) {              \
    errno = e;                       \
    return failed;                   \
  }

int open(const char* path, int flags, mode_t mode) {
  ET_SYS_FAIL_IF(before(Call::Open), -1);
  return ::open(path, flags, mode);
}
int close(int fd) {
  ET_SYS_FAIL_IF(before(Call::Close, fd), -1);
  return ::close(fd);
}
int dup_cloexec(int fd) {
  ET_SYS_FAIL_IF(before(Call::Dup, fd), -1);
  return ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
}
void* mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) {
  ET_SYS_FAIL_IF(before(Call::Mmap, fd), MAP_FAILED);
  if (std::size_t p = g_page_size_override.load(std::memory_order_relaxed);
      p != 0 && static_cast<std::uint64_t>(offset) % p != 0) {
    errno = EINVAL;  // mmap(2): offset must be a multiple of the page size
    return MAP_FAILED;
  }
  return ::mmap(addr, length, prot, flags, fd, offset);
}
int munmap(void* addr, size_t length) {
  ET_SYS_FAIL_IF(before(Call::Munmap), -1);
  return ::munmap(addr, length);
}
int memfd_create(const char* name, unsigned flags) {
  ET_SYS_FAIL_IF(before(Call::MemfdCreate), -1);
  return ::memfd_create(name, flags);
}
int ftruncate(int fd, off_t length) {
  ET_SYS_FAIL_IF(before(Call::Ftruncate, fd), -1);
  return ::ftruncate(fd, length);
}
int fcntl(int fd, int cmd, long arg) {
  ET_SYS_FAIL_IF(before(Call::Fcntl, fd, static_cast<unsigned long>(cmd)), -1);
  return ::fcntl(fd, cmd, arg);
}
int fstat(int fd, struct stat* st) {
  ET_SYS_FAIL_IF(before(Call::Fstat, fd), -1);
  return ::fstat(fd, st);
}
int fstatfs(int fd, struct statfs* st) {
  ET_SYS_FAIL_IF(before(Call::Fstatfs, fd), -1);
  return ::fstatfs(fd, st);
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
      if (auto r = (*emulator)(fd, request, arg)) return *r;
  }
  return ::ioctl(fd, request, arg);
}
int posix_fallocate(int fd, off_t offset, off_t length) {
  if (int e = before(Call::PosixFallocate, fd)) return e;
  return ::posix_fallocate(fd, offset, length);
}
int shm_open(const char* name, int flags, mode_t mode) {
  ET_SYS_FAIL_IF(before(Call::ShmOpen), -1);
  return ::shm_open(name, flags, mode);
}
int shm_unlink(const char* name) {
  ET_SYS_FAIL_IF(before(Call::ShmUnlink), -1);
  return ::shm_unlink(name);
}
off_t lseek(int fd, off_t offset, int whence) {
  ET_SYS_FAIL_IF(before(Call::Lseek, fd), -1);
  return ::lseek(fd, offset, whence);
}
ssize_t sendmsg(int fd, const struct msghdr* msg, int flags) {
  ET_SYS_FAIL_IF(before(Call::Sendmsg, fd), -1);
  return ::sendmsg(fd, msg, flags);
}
ssize_t recvmsg(int fd, struct msghdr* msg, int flags) {
  ET_SYS_FAIL_IF(before(Call::Recvmsg, fd), -1);
  return ::recvmsg(fd, msg, flags);
}

}  // namespace edgetensor::sys
