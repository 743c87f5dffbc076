// SPDX-License-Identifier: Apache-2.0
// The testing seam's controls: counters, a fault hook, an ioctl emulator and page-size overrides for the
// wrappers of base/sys.h. Only the testing library (CMake target edgetensor_testing, which tests link)
// defines these: the shipped edgetensor and edgetensor_static contain the plain wrappers only, so a
// program that includes this header and links a shipped library fails to link (docs/TESTING.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>

#include "base/sys.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace sys {

enum class Call : int {
  Open, Close, Dup, Mmap, Munmap, MemfdCreate, Ftruncate, Fcntl, Fstat, Fstatfs, Ioctl,
  PosixFallocate, ShmOpen, ShmUnlink, Lseek, Sendmsg, Recvmsg, Madvise, Opendir, Stat, Read, Poll, Uname, Recvmmsg, Count
};
/// The libc name of `call` ("open", "memfd_create", ...); "unknown" for a value outside the enum.
const char* call_name(Call call) noexcept;

/// What a hook sees of one call. `request`/`arg` are set for Ioctl (and `request` = cmd for Fcntl,
/// advice for Madvise; for Poll, `fd` is fds[0].fd, `request` the timeout in ms as a long cast to
/// unsigned long, `arg` the pollfd array).
struct CallInfo {
  Call call;
  int fd;                 // -1 where no fd is involved
  unsigned long request;  // ioctl request / fcntl command / madvise advice
  const void* arg;        // ioctl argument pointer
};

/// A hook runs before each call (after it is counted). Return 0 to let the call run, or an errno value
/// to make it fail with that errno without running. Called from any thread; must be thread-safe.
using FaultHook = std::function<int(const CallInfo&)>;
/// Installs a hook (empty = none). Not for use while other threads are inside a wrapper.
void set_fault_hook(FaultHook hook);

/// Ioctl emulation: runs after the fault hook let an ioctl through. Returning a value makes sys::ioctl
/// return it without calling the kernel (-1 with errno set by the emulator to fail); the emulator may
/// write the ioctl's result through `arg` (e.g. a new fd). std::nullopt = call the kernel. Lets tests
/// drive device ioctls (dma-heap, udmabuf, DMA-BUF sync) on machines without the device.
using IoctlEmulator = std::function<std::optional<int>(int fd, unsigned long request, void* arg)>;
/// Installs an emulator (empty = none). Not for use while other threads are inside a wrapper.
void set_ioctl_emulator(IoctlEmulator emulator);

/// Calls made so far through the seam, per kind and in all. Thread-safe (relaxed counters).
std::uint64_t call_count(Call call) noexcept;
std::uint64_t total_calls() noexcept;
/// Of those, the calls that failed (returned -1, MAP_FAILED, null or an error number, whether the
/// kernel or a fault hook failed them), per kind and in all.
std::uint64_t failed_count(Call call) noexcept;
std::uint64_t total_failed() noexcept;

/// page_size() answers `bytes` (a power of two, at least 4096; anything else aborts) until called with
/// 0. While set, sys::mmap refuses an offset that is not a multiple of it with EINVAL, as such a kernel
/// would. Other threads may call page_size() meanwhile; they see the old or the new value.
void set_page_size_for_testing(std::size_t bytes) noexcept;

/// hpage_pmd_size() answers `bytes` (0: no THP) until reset_hpage_pmd_size_for_testing().
void set_hpage_pmd_size_for_testing(std::size_t bytes) noexcept;
void reset_hpage_pmd_size_for_testing() noexcept;

}  // namespace sys
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
