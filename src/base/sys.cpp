// SPDX-License-Identifier: Apache-2.0
// The syscall seam, compiled twice (src/CMakeLists.txt): as the release seam (et_sys, in the shipped
// libraries), where each wrapper is its libc call and nothing else, and with ET_SYS_TESTING=1 as the
// testing seam (et_sys_testing, only in edgetensor_testing), where each call is counted and first asks
// the fault hook (base/sys_testing.h). Everything else in this file is the same in both.
#include "base/sys.h"

#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>

#if ET_SYS_TESTING
#include <atomic>
#include <memory>
#include <mutex>
#include <type_traits>

#include "base/sys_testing.h"
#endif

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace sys {
namespace {

std::size_t kernel_page_size() noexcept {
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

std::size_t kernel_hpage_pmd_size() noexcept {
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

#if !ET_SYS_TESTING
// ---- release seam: the libc call itself ----------------------------------------------------------
namespace libc {
using ::ioctl;
using ::mmap;
}  // namespace libc
}  // namespace

// ET_SYS_CALL(kind, fd, request, arg, expr) is `expr`, the libc call: no counter, no hook.
#define ET_SYS_CALL(kind, fd, request, arg, expr) (expr)
#define ET_SYS_CALL_ERRNUM(kind, fd, expr) (expr)

std::size_t page_size() noexcept { return kernel_page_size(); }
std::size_t hpage_pmd_size() noexcept { return kernel_hpage_pmd_size(); }

#else
// ---- testing seam: counters, fault hook, ioctl emulator, page-size overrides ---------------------
std::atomic<std::uint64_t> g_counts[static_cast<int>(Call::Count)];
std::atomic<std::uint64_t> g_failed[static_cast<int>(Call::Count)];
std::atomic<std::size_t> g_page_size_override{0};
constexpr std::size_t kNoHpageOverride = ~std::size_t{0};
std::atomic<std::size_t> g_hpage_override{kNoHpageOverride};
std::mutex g_hook_mutex;
std::atomic<bool> g_has_hook{false};
std::shared_ptr<const FaultHook> g_hook;  // guarded by g_hook_mutex
std::atomic<bool> g_has_emulator{false};
std::shared_ptr<const IoctlEmulator> g_emulator;  // guarded by g_hook_mutex

void count_failure(Call call) noexcept { g_failed[static_cast<int>(call)].fetch_add(1, std::memory_order_relaxed); }

// Counts the call and asks the hook; returns the errno to fail it with (counted as a failure), or 0.
int before(Call call, int fd, unsigned long request, const void* arg) {
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

// What a call of type T returns on failure in the -1/MAP_FAILED/null + errno convention.
template <class T>
T failed_result() noexcept {
  if constexpr (std::is_same_v<T, void*>) return MAP_FAILED;
  else if constexpr (std::is_pointer_v<T>) return nullptr;
  else return T{-1};
}

// A call of that convention through the seam: counted; failed with the hook's errno without running,
// else run, and counted as failed when it returns -1 (any negative), MAP_FAILED or null.
template <class Run>
auto seam(Call call, int fd, unsigned long request, const void* arg, Run run) {
  using T = decltype(run());
  if (int e = before(call, fd, request, arg)) {
    errno = e;
    return failed_result<T>();
  }
  T r = run();
  bool failed;
  if constexpr (std::is_pointer_v<T>) failed = r == failed_result<T>();
  else failed = r < 0;
  if (failed) count_failure(call);
  return r;
}

// posix_fallocate's convention: the error number is the result (errno untouched).
template <class Run>
int seam_errnum(Call call, int fd, Run run) {
  if (int e = before(call, fd, 0, nullptr)) return e;
  int r = run();
  if (r != 0) count_failure(call);
  return r;
}

// mmap and ioctl as the test set them up: mmap refuses offsets that are no multiple of an overridden
// page size, ioctl goes to the emulator first.
namespace libc {
void* mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) {
  if (std::size_t p = g_page_size_override.load(std::memory_order_relaxed);
      p != 0 && static_cast<std::uint64_t>(offset) % p != 0) {
    errno = EINVAL;  // mmap(2): offset must be a multiple of the page size
    return MAP_FAILED;
  }
  return ::mmap(addr, length, prot, flags, fd, offset);
}
int ioctl(int fd, unsigned long request, void* arg) {
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
}  // namespace libc
}  // namespace

#define ET_SYS_CALL(kind, fd, request, arg, expr) seam(Call::kind, fd, request, arg, [&] { return expr; })
#define ET_SYS_CALL_ERRNUM(kind, fd, expr) seam_errnum(Call::kind, fd, [&] { return expr; })

const char* call_name(Call call) noexcept {
  static constexpr const char* kNames[] = {"open", "close", "dup", "mmap", "munmap", "memfd_create",
                                           "ftruncate", "fcntl", "fstat", "fstatfs", "ioctl",
                                           "posix_fallocate", "shm_open", "shm_unlink", "lseek",
                                           "sendmsg", "recvmsg", "madvise", "opendir", "stat", "read",
                                           "poll", "uname", "recvmmsg"};
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

std::size_t page_size() noexcept {
  if (std::size_t p = g_page_size_override.load(std::memory_order_relaxed)) return p;
  return kernel_page_size();
}

void set_page_size_for_testing(std::size_t bytes) noexcept {
  if (bytes != 0 && (bytes < 4096 || (bytes & (bytes - 1)) != 0)) std::abort();  // a test's own mistake
  g_page_size_override.store(bytes, std::memory_order_relaxed);
}

std::size_t hpage_pmd_size() noexcept {
  if (std::size_t o = g_hpage_override.load(std::memory_order_relaxed); o != kNoHpageOverride) return o;
  return kernel_hpage_pmd_size();
}

void set_hpage_pmd_size_for_testing(std::size_t bytes) noexcept {
  g_hpage_override.store(bytes, std::memory_order_relaxed);
}
void reset_hpage_pmd_size_for_testing() noexcept {
  g_hpage_override.store(kNoHpageOverride, std::memory_order_relaxed);
}
#endif

// ---- the wrappers, the same in both seams ---------------------------------------------------------
// ET_SYS_CALL(kind, fd, request, arg, expr): the call `expr` of Call::kind; `request`/`arg` as in CallInfo.
int open(const char* path, int flags, mode_t mode) {
  return ET_SYS_CALL(Open, -1, 0, nullptr, ::open(path, flags, mode));
}
int close(int fd) { return ET_SYS_CALL(Close, fd, 0, nullptr, ::close(fd)); }
int dup_cloexec(int fd) { return ET_SYS_CALL(Dup, fd, 0, nullptr, ::fcntl(fd, F_DUPFD_CLOEXEC, 0)); }
void* mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) {
  return ET_SYS_CALL(Mmap, fd, 0, nullptr, libc::mmap(addr, length, prot, flags, fd, offset));
}
int munmap(void* addr, size_t length) { return ET_SYS_CALL(Munmap, -1, 0, nullptr, ::munmap(addr, length)); }
int memfd_create(const char* name, unsigned flags) {
  return ET_SYS_CALL(MemfdCreate, -1, 0, nullptr, ::memfd_create(name, flags));
}
int ftruncate(int fd, off_t length) { return ET_SYS_CALL(Ftruncate, fd, 0, nullptr, ::ftruncate(fd, length)); }
int fcntl(int fd, int cmd, long arg) {
  return ET_SYS_CALL(Fcntl, fd, static_cast<unsigned long>(cmd), nullptr, ::fcntl(fd, cmd, arg));
}
int fstat(int fd, struct stat* st) { return ET_SYS_CALL(Fstat, fd, 0, nullptr, ::fstat(fd, st)); }
int fstatfs(int fd, struct statfs* st) { return ET_SYS_CALL(Fstatfs, fd, 0, nullptr, ::fstatfs(fd, st)); }
int ioctl(int fd, unsigned long request, void* arg) {
  return ET_SYS_CALL(Ioctl, fd, request, arg, libc::ioctl(fd, request, arg));
}
int posix_fallocate(int fd, off_t offset, off_t length) {
  return ET_SYS_CALL_ERRNUM(PosixFallocate, fd, ::posix_fallocate(fd, offset, length));
}
int shm_open(const char* name, int flags, mode_t mode) {
  return ET_SYS_CALL(ShmOpen, -1, 0, nullptr, ::shm_open(name, flags, mode));
}
int shm_unlink(const char* name) { return ET_SYS_CALL(ShmUnlink, -1, 0, nullptr, ::shm_unlink(name)); }
off_t lseek(int fd, off_t offset, int whence) {
  return ET_SYS_CALL(Lseek, fd, 0, nullptr, ::lseek(fd, offset, whence));
}
ssize_t sendmsg(int fd, const struct msghdr* msg, int flags) {
  return ET_SYS_CALL(Sendmsg, fd, 0, nullptr, ::sendmsg(fd, msg, flags));
}
ssize_t recvmsg(int fd, struct msghdr* msg, int flags) {
  return ET_SYS_CALL(Recvmsg, fd, 0, nullptr, ::recvmsg(fd, msg, flags));
}
int recvmmsg(int fd, struct mmsghdr* msgs, unsigned int vlen, int flags) {
  return ET_SYS_CALL(Recvmmsg, fd, 0, nullptr, ::recvmmsg(fd, msgs, vlen, flags, nullptr));
}
int madvise(void* addr, size_t length, int advice) {
  return ET_SYS_CALL(Madvise, -1, static_cast<unsigned long>(advice), nullptr, ::madvise(addr, length, advice));
}
DIR* opendir(const char* path) { return ET_SYS_CALL(Opendir, -1, 0, nullptr, ::opendir(path)); }
int stat(const char* path, struct stat* st) { return ET_SYS_CALL(Stat, -1, 0, nullptr, ::stat(path, st)); }
ssize_t read(int fd, void* buf, size_t count) {
  return ET_SYS_CALL(Read, fd, 0, nullptr, ::read(fd, buf, count));
}
int poll(struct pollfd* fds, nfds_t nfds, int timeout_ms) {
  return ET_SYS_CALL(Poll, nfds > 0 ? fds[0].fd : -1, static_cast<unsigned long>(static_cast<long>(timeout_ms)), fds,
                     ::poll(fds, nfds, timeout_ms));
}
int uname(struct utsname* buf) { return ET_SYS_CALL(Uname, -1, 0, nullptr, ::uname(buf)); }

#undef ET_SYS_CALL
#undef ET_SYS_CALL_ERRNUM

}  // namespace sys
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
