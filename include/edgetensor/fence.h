// SPDX-License-Identifier: Apache-2.0
// Explicit sync: a Fence (a kernel sync_file, or already signalled) and its export from and import
// into DMA-BUFs. The rules, the timeouts and the race between a map's wait and its sync are in
// docs/SYNC.md.
//
// A sync_file (include/uapi/linux/sync_file.h) is an fd holding one dma-fence that a device driver
// signals when its work is done; poll(2) reports POLLIN once it has. The library never makes a
// sync_file of its own: the kernel forbids dma-fences that user space signals, so every fence comes
// from a driver (a DMA-BUF's export below, a GPU, a codec, a camera). "Already signalled" needs no fd,
// as in Vulkan's SYNC_FD (-1) and the wire formats that carry fence_fd = -1.
//
// Thread rules: a Fence is a value like UniqueFd; distinct fences may be used from any threads, and
// the const calls on one fence may run at once.
#pragma once

#include <edgetensor/error.h>
#include <edgetensor/export.h>
#include <edgetensor/unique_fd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {

class TensorDyn;

namespace detail {
struct FenceAccess;  // defined inside the library only (src/sync/fence.cpp)
}

namespace sync {

/// Which access a DMA-BUF fence covers (DMA_BUF_SYNC_READ / DMA_BUF_SYNC_WRITE of
/// include/uapi/linux/dma-buf.h).
enum class Access : unsigned {
  /// Export: the writers' fences (what a reader waits for). Import: a reader's fence (later writers wait).
  Read = 1,
  /// Export: every fence, readers' and writers' (what a writer waits for). Import: a writer's fence
  /// (every later access waits).
  Write = 2,
};

/// One dma-fence inside a sync_file (struct sync_fence_info).
struct FenceInfo {
  std::string driver;    ///< The driver that signals it, e.g. "vgem" or a GPU's.
  std::string timeline;  ///< Its timeline's name, e.g. "unbound" (vgem's).
  int status = 0;        ///< 1 signalled, 0 pending, negative: signalled with that -errno.
  std::uint64_t timestamp_ns = 0;  ///< CLOCK_MONOTONIC time it signalled, 0 while pending.
};

/// What SYNC_IOC_FILE_INFO says of a sync_file (struct sync_file_info).
struct FenceStatus {
  /// The sync_file's name: a merge's, else the kernel's "<driver>-<timeline>-<context>-<seqno>" (an idle
  /// buffer's export: "stub-stub0-0"); empty for a signalled Fence.
  std::string name;
  int status = 1;    ///< 1 signalled, 0 pending, negative: an error (-errno) of one of its fences.
  std::vector<FenceInfo> fences;  ///< Empty for a signalled Fence.
  /// One line for messages: "pending: vgem/vgem_fence (pending), ..." or "signalled".
  ET_API std::string to_string() const;
};

/// A sync_file fd, or "already signalled" (no fd). Move-only; dup() makes a second one.
class ET_API Fence {
 public:
  /// An already signalled fence (no fd).
  Fence() noexcept = default;

  /// Takes ownership of `fd`, which must be a sync_file (checked with SYNC_IOC_FILE_INFO); on every
  /// error the fd is closed. Errors: InvalidArgument for an empty fd, and naming the fd when it is
  /// not a sync_file (ENOTTY: a DMA-BUF, a pipe, an eventfd); from_errno otherwise.
  [[nodiscard]] static Result<Fence> adopt(UniqueFd fd);
  /// As adopt, of a CLOEXEC duplicate of the borrowed `fd` (the caller keeps and closes its own);
  /// -1 gives a signalled fence (the wire convention). Errors: as adopt, and UniqueFd::duplicate's.
  [[nodiscard]] static Result<Fence> duplicate(int borrowed_fd);
  /// A fence that signals once both have (SYNC_IOC_MERGE, flags 0). When either is signalled, a dup
  /// of the other; both signalled, a signalled fence. `name` (at most 31 bytes are kept) names the new
  /// sync_file. Errors: InvalidArgument for a NUL byte in name; from_errno (EMFILE -> Busy).
  [[nodiscard]] static Result<Fence> merge(const Fence& a, const Fence& b, std::string_view name = "edgetensor");

  /// True when this fence has no fd (known signalled without asking the kernel).
  bool is_signalled_without_fd() const noexcept { return !fd_; }
  /// The sync_file fd, still owned by this fence, for poll(2) or an API that borrows it; -1 when it
  /// has none.
  int fd() const noexcept { return fd_.get(); }

  /// Waits until the fence signals, at most `timeout` (0: only checks; negative: no bound), polling
  /// the fd for POLLIN; a signal (EINTR) does not end the wait early. A fence that signalled with an
  /// error counts as signalled: status() tells. Errors: Timeout (sys_errno ETIMEDOUT) when the
  /// timeout passes, Busy (EAGAIN) for a timeout of 0, each naming the fd, the timeout and the pending
  /// fences (Python: edgetensor.TimeoutError, a TimeoutError); from_errno of poll.
  [[nodiscard]] Result<void> wait(std::chrono::milliseconds timeout) const;
  /// True when the fence has signalled (poll with timeout 0). Errors: from_errno of poll.
  [[nodiscard]] Result<bool> is_signalled() const;
  /// The sync_file's name and every fence in it with driver and timeline names (SYNC_IOC_FILE_INFO,
  /// called twice: the count, then the entries); status 1 and no entries for a signalled fence.
  /// Errors: from_errno of the ioctl; OutOfMemory for a count too large to hold.
  [[nodiscard]] Result<FenceStatus> status() const;
  /// A second fence on the same sync_file (F_DUPFD_CLOEXEC); a signalled fence for a signalled one.
  /// Errors: from_errno (EMFILE -> Busy).
  [[nodiscard]] Result<Fence> dup() const;
  /// Gives up the fd (-1 when it had none): the caller owns it; this fence becomes signalled. For
  /// APIs that take ownership of a sync_file (Vulkan's SYNC_FD import, EGL_ANDROID_native_fence_sync).
  [[nodiscard]] UniqueFd release() noexcept { return std::move(fd_); }

 private:
  friend struct detail::FenceAccess;  // wraps the sync_files the kernel returns (export, merge)
  explicit Fence(UniqueFd fd) noexcept : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

/// The fences of the DMA-BUF `dmabuf_fd` (borrowed) as one new sync_file (DMA_BUF_IOCTL_EXPORT_SYNC_FILE,
/// Linux >= 6.0): a snapshot, which later device work does not join. Read: its writers; Write: every
/// user. A buffer without fences gives a sync_file that is already signalled. The fd is CLOEXEC.
/// Errors: InvalidArgument (negative fd; not a DMA-BUF, naming what it is), Unsupported (ENOTTY on a
/// DMA-BUF: the kernel, named by release, is older than 6.0 or lacks CONFIG_SYNC_FILE), from_errno.
[[nodiscard]] ET_API Result<Fence> export_fence(int dmabuf_fd, Access access);
/// Adds `fence` to the DMA-BUF `dmabuf_fd` (borrowed) as a reader's (Read) or a writer's (Write)
/// fence (DMA_BUF_IOCTL_IMPORT_SYNC_FILE, Linux >= 6.0): implicitly synchronised users of the buffer
/// (a map, a GPU driver) wait for it from now on. A signalled fence without an fd adds nothing and
/// makes no system call. Errors: as export_fence.
[[nodiscard]] ET_API Result<void> import_fence(int dmabuf_fd, const Fence& fence, Access access);
/// export_fence on the DMA-BUF of `tensor` (the whole buffer, whatever the view). Errors:
/// FailedPrecondition (empty handle), Unsupported (memory that is not a DMA-BUF, naming its kind),
/// export_fence's.
[[nodiscard]] ET_API Result<Fence> export_fence(const TensorDyn& tensor, Access access);
/// import_fence into the DMA-BUF of `tensor`. Errors: as export_fence(tensor, ...), import_fence's.
///
/// Export, device submission and import are three calls, not one atomic step: another thread or
/// process that submits work or maps the buffer between them is not ordered by these fences. The
/// caller serialises the buffer's users across the three (docs/SYNC.md, "Rules").
[[nodiscard]] ET_API Result<void> import_fence(const TensorDyn& tensor, const Fence& fence, Access access);

}  // namespace sync
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
