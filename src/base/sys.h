// SPDX-License-Identifier: Apache-2.0
// The syscall seam: every system call of the backends goes through these wrappers. Same conventions as
// libc (-1/MAP_FAILED + errno; posix_fallocate returns the error number). In the shipped library each
// wrapper is the libc call and nothing else; test builds link the testing seam instead, which counts the
// calls and lets a test fail any of them (base/sys_testing.h, docs/TESTING.md).
#pragma once

#include <edgetensor/abi.h>  // ET_ABI_NAMESPACE

#include <dirent.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <sys/utsname.h>

#include <cstddef>

// The seam passes sizes over 2 GiB as off_t: every file that includes it is built with
// _FILE_OFFSET_BITS=64 (src/CMakeLists.txt), also on 32-bit targets.
static_assert(sizeof(off_t) == 8, "build with -D_FILE_OFFSET_BITS=64 (a 32-bit off_t truncates sizes over 2 GiB)");

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace sys {

/// The page size in bytes: sysconf(_SC_PAGESIZE) (sysconf(3); the kernel's AT_PAGESZ), read once.
/// 4 KiB on x86 and most arm64 kernels, 16 KiB on Raspberry Pi 5 kernels, 64 KiB on some arm64
/// servers: every place in the library that rounds, aligns or sizes by page asks here and never
/// assumes a value (ctest layering.page_size_only_in_sys checks src/). Thread-safe.
std::size_t page_size() noexcept;

/// The PMD-sized transparent huge page of this kernel in bytes, from
/// /sys/kernel/mm/transparent_hugepage/hpage_pmd_size (Documentation/admin-guide/mm/transhuge.rst),
/// read once: 2 MiB with 4 KiB pages, 32 MiB with 16 KiB pages, 512 MiB with 64 KiB pages on arm64.
/// 0 when the file is missing or unreadable (no THP). Thread-safe.
std::size_t hpage_pmd_size() noexcept;

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
int recvmmsg(int fd, struct mmsghdr* msgs, unsigned int vlen, int flags);  // no timeout
int madvise(void* addr, size_t length, int advice);  // the testing seam's CallInfo::request = advice
DIR* opendir(const char* path);                      // closedir is not a seam call
int stat(const char* path, struct stat* st);
ssize_t read(int fd, void* buf, size_t count);
int poll(struct pollfd* fds, nfds_t nfds, int timeout_ms);  // CallInfo: fds[0].fd, timeout_ms, fds
int uname(struct utsname* buf);

}  // namespace sys
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
