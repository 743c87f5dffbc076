// SPDX-License-Identifier: Apache-2.0
// The syscall seam: every system call of the backends goes through these wrappers, so tests can count
// them and make any chosen call fail. Same conventions as libc (-1/MAP_FAILED + errno; posix_fallocate
// returns the error number). Counting costs one relaxed atomic add; the fault hook is off by default.
#pragma once

#include <edgetensor/abi.h>  // ET_ABI_NAMESPACE

#include <dirent.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>

// The seam passes sizes over 2 GiB as off_t: every file that includes it is built with
// _FILE_OFFSET_BITS=64 (src/CMakeLists.txt), also on 32-bit targets.
static_assert(sizeof(off_t) == 8, "build with -D_FILE_OFFSET_BITS=64 (a 32-bit off_t truncates sizes over 2 GiB)");

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace sys {

enum class Call : int {
  Open, Close, Dup, Mmap, Munmap, MemfdCreate, Ftruncate, Fcntl, Fstat, Fstatfs, Ioctl,
  PosixFallocate, ShmOpen, ShmUnlink, Lseek, Sendmsg, Recvmsg, Madvise, Opendir, Stat, Read, Count
};
const char* call_name(Call call) noexcept;

/// What a hook sees of one call. `request`/`arg` are set for Ioctl (and `request` = cmd for Fcntl).
struct CallInfo {
  Call call;
  int fd;                 // -1 where no fd is involved
  unsigned long request;  // ioctl request / fcntl command
  const void* arg;        // ioctl argument pointer
};

/// A hook runs before each call (after it is counted). Return 0 to let the call run, or an errno value
/// to make it fail with that errno without running. Called from any thread; must be thread-safe.
using FaultHook = std::function<int(const CallInfo&)>;
/// Installs a hook (empty = none). Not for use while other threads are inside a wrapper.
void set_fault_hook(FaultHook hook);

/// Test-only ioctl emulation: runs after the fault hook let an ioctl through. Returning a value makes
/// sys::ioctl return it without calling the kernel (-1 with errno set by the emulator to fail); the
/// emulator may write the ioctl's result through `arg` (e.g. a new fd). std::nullopt = call the kernel.
/// Lets tests drive device ioctls (dma-heap, udmabuf, DMA-BUF sync) on machines without the device.
using IoctlEmulator = std::function<std::optional<int>(int fd, unsigned long request, void* arg)>;
/// Installs an emulator (empty = none). Not for use while other threads are inside a wrapper.
void set_ioctl_emulator(IoctlEmulator emulator);

/// Calls made so far through the seam, per kind and in all.
std::uint64_t call_count(Call call) noexcept;
std::uint64_t total_calls() noexcept;
/// Of those, the calls that failed (returned -1, MAP_FAILED, null or an error number, whether the
/// kernel or a fault hook failed them), per kind and in all.
std::uint64_t failed_count(Call call) noexcept;
std::uint64_t total_failed() noexcept;

/// The page size in bytes: sysconf(_SC_PAGESIZE) (sysconf(3); the kernel's AT_PAGESZ), read once.
/// 4 KiB on x86 and most arm64 kernels, 16 KiB on Raspberry Pi 5 kernels, 64 KiB on some arm64
/// servers: every place in the library that rounds, aligns or sizes by page asks here and never
/// assumes a value (ctest layering.page_size_only_in_sys checks src/). Thread-safe.
std::size_t page_size() noexcept;
/// Test-only: page_size() answers `bytes` (a power of two, at least 4096) until called with 0. While
/// set, sys::mmap refuses an offset that is not a multiple of it with EINVAL, as such a kernel would.
/// Other threads may call page_size() meanwhile; they see the old or the new value.
void set_page_size_for_testing(std::size_t bytes) noexcept;

/// The PMD-sized transparent huge page of this kernel in bytes, from
/// /sys/kernel/mm/transparent_hugepage/hpage_pmd_size (Documentation/admin-guide/mm/transhuge.rst),
/// read once: 2 MiB with 4 KiB pages, 32 MiB with 16 KiB pages, 512 MiB with 64 KiB pages on arm64.
/// 0 when the file is missing or unreadable (no THP). Thread-safe.
std::size_t hpage_pmd_size() noexcept;
/// Test-only: hpage_pmd_size() answers `bytes` (0: no THP) until reset_hpage_pmd_size_for_testing().
void set_hpage_pmd_size_for_testing(std::size_t bytes) noexcept;
void reset_hpage_pmd_size_for_testing() noexcept;

int open(const char* path, int flags, mode_t mode = 0);
int close(int fd);
int dup_cloexec(int fd);  // fcntl(fd, F_DUPFD_CLOEXEC, 0)
void* mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset);
int munmap(void* addr, size_t length);
int memfd_create(const char* name, unsigned flags);
int ftruncate(int fd, off_t length);
int fcntl(int fd, int cmd, long arg = 0);
int fstat(int fd, struct stat* st);
int fstatfs(int fd, struct statfs* st);
int ioctl(int fd, unsigned long request, void* arg);
int posix_fallocate(int fd, off_t offset, off_t length);
int shm_open(const char* name, int flags, mode_t mode);
int shm_unlink(const char* name);
off_t lseek(int fd, off_t offset, int whence);
ssize_t sendmsg(int fd, const struct msghdr* msg, int flags);
ssize_t recvmsg(int fd, struct msghdr* msg, int flags);
int madvise(void* addr, size_t length, int advice);  // CallInfo::request = advice
DIR* opendir(const char* path);                      // closedir is not a seam call
int stat(const char* path, struct stat* st);
ssize_t read(int fd, void* buf, size_t count);

}  // namespace sys
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
