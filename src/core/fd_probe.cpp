// SPDX-License-Identifier: Apache-2.0
// Recognising an fd from the kernel's own answers: fstatfs magic (include/uapi/linux/magic.h), st_mode
// and F_GET_SEALS. Never st_dev numbers, which differ between kernels and containers.
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdint>

#include "text/format.h"

#include "core/backend.h"
#include "base/size_math.h"
#include "base/sys.h"

#ifndef DMA_BUF_MAGIC
#define DMA_BUF_MAGIC 0x444d4142  // include/uapi/linux/magic.h
#endif

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {
namespace {

struct FsName {
  std::uint64_t magic;
  const char* name;
};
// Filesystems users are likely to hand us by mistake, named in errors.
constexpr FsName kFsNames[] = {
    {EXT4_SUPER_MAGIC, "ext2/3/4"}, {0x58465342, "xfs"},      {BTRFS_SUPER_MAGIC, "btrfs"},
    {0x794c7630, "overlayfs"},      {PROC_SUPER_MAGIC, "proc"}, {SYSFS_MAGIC, "sysfs"},
    {NFS_SUPER_MAGIC, "nfs"},       {0x65735546, "fuse"},     {0x09041934, "anon_inode (eventfd, timerfd, ...)"},
    {PIPEFS_MAGIC, "pipefs"},       {SOCKFS_MAGIC, "sockfs"}, {0x1cd1, "devpts"},
    {0x9fa2, "usbdevfs"},           {0x4d44, "vfat"},         {0x2011BAB0, "exfat"},
    {0x6969, "nfs"},                {0x73717368, "squashfs"}, {0x01021997, "9p/v9fs"},
};

std::string fs_name(std::uint64_t magic) {
  for (const auto& f : kFsNames)
    if (f.magic == magic) return f.name;
  return "an unknown filesystem";
}

}  // namespace

Result<MemoryKind> classify_fd(std::uint64_t magic, unsigned mode) {
  if (magic == DMA_BUF_MAGIC) return MemoryKind::DmaBuf;
  if (S_ISFIFO(mode)) return fail(ErrorCode::InvalidArgument, "it is a pipe/FIFO, not shared memory or a DMA-BUF");
  if (S_ISSOCK(mode)) return fail(ErrorCode::InvalidArgument, "it is a socket, not shared memory or a DMA-BUF");
  if (S_ISDIR(mode)) return fail(ErrorCode::InvalidArgument, "it is a directory, not shared memory or a DMA-BUF");
  if (S_ISCHR(mode) || S_ISBLK(mode))
    return fail(ErrorCode::InvalidArgument,
                text::format("it is a {} device node, not a buffer (open the buffer, not the device)",
                            S_ISCHR(mode) ? "character" : "block"));
  if (magic == TMPFS_MAGIC || magic == HUGETLBFS_MAGIC) {
    if (!S_ISREG(mode)) return fail(ErrorCode::InvalidArgument, "it is a tmpfs object that is not a regular file");
    return MemoryKind::Shm;
  }
  return fail(ErrorCode::InvalidArgument,
              text::format("it is a file on {} (fs magic {:#x}), not shared memory (memfd, tmpfs, hugetlbfs) or a DMA-BUF",
                          fs_name(magic), magic));
}

Result<std::size_t> object_bytes(int fd, long long bytes, std::string_view what) {
  if (bytes < 0) return fail(ErrorCode::Internal, text::format("{} fd {}: negative size {}", what, fd, bytes));
  auto size = checked_narrow<std::size_t>(bytes);
  if (!size)
    return fail(ErrorCode::OutOfRange,
                text::format("{} fd {} is {} B, more than this process can address: size_t holds at most {} B "
                            "(a {}-bit build)", what, fd, bytes, SIZE_MAX, sizeof(void*) * 8));
  return *size;
}

Result<std::size_t> dmabuf_buffer_bytes(int fd) {
  // A DMA-BUF's size is answered by lseek(SEEK_END); its file position has no meaning and
  // dma_buf_llseek only accepts offset 0 with SEEK_SET/SEEK_END, so put it back at 0.
  off_t end = sys::lseek(fd, 0, SEEK_END);
  if (end < 0) return fail(Error::from_errno(errno, text::format("lseek(DMA-BUF fd {}, SEEK_END)", fd)));
  (void)sys::lseek(fd, 0, SEEK_SET);
  return object_bytes(fd, end, "DMA-BUF");
}

Result<FdInfo> probe_fd(int fd) {
  if (fd < 0) return fail(ErrorCode::InvalidArgument, text::format("fd {} is not a valid fd", fd));
  struct stat st {};
  if (sys::fstat(fd, &st) != 0) {
    int e = errno;
    if (e == EBADF) return fail(ErrorCode::InvalidArgument, text::format("fd {} is not an open file descriptor", fd), e);
    return fail(Error::from_errno(e, text::format("fstat(fd {})", fd)));
  }
  struct statfs sfs {};
  if (sys::fstatfs(fd, &sfs) != 0) return fail(Error::from_errno(errno, text::format("fstatfs(fd {})", fd)));
  const std::uint64_t magic = fs_magic(sfs.f_type);
  auto kind = classify_fd(magic, st.st_mode);
  if (!kind) return fail(kind.error().code(), text::format("fd {}: {}", fd, kind.error().message()));

  FdInfo info;
  info.kind = *kind;
  info.key = {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
  int fl = sys::fcntl(fd, F_GETFL);
  if (fl < 0) return fail(Error::from_errno(errno, text::format("fcntl(fd {}, F_GETFL)", fd)));
  // mmap needs read access: an O_PATH or write-only fd can be named but never mapped.
  if (fl & O_PATH)
    return fail(ErrorCode::InvalidArgument, text::format("fd {} was opened with O_PATH: it cannot be mapped; open the "
                                                        "buffer O_RDONLY or O_RDWR", fd));
  if ((fl & O_ACCMODE) == O_WRONLY)
    return fail(ErrorCode::InvalidArgument, text::format("fd {} is write-only (O_WRONLY): a shared mapping needs read "
                                                        "access; open the buffer O_RDONLY or O_RDWR", fd));
  info.read_only = (fl & O_ACCMODE) == O_RDONLY;
  if (info.kind == MemoryKind::Shm) {
    ET_TRY_ASSIGN(info.buffer_bytes, object_bytes(fd, st.st_size, "shared-memory"));
    int seals = sys::fcntl(fd, F_GET_SEALS);
    info.seals = seals > 0 ? static_cast<unsigned>(seals) : 0u;
    if (info.seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)) info.read_only = true;
    info.what = magic == HUGETLBFS_MAGIC ? "hugetlbfs file" : "tmpfs/memfd file";
  } else {
    ET_TRY_ASSIGN(info.buffer_bytes, dmabuf_buffer_bytes(fd));
    info.what = "DMA-BUF";
  }
  return info;
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
