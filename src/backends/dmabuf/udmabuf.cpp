// SPDX-License-Identifier: Apache-2.0
#include "backends/dmabuf/udmabuf.h"

#include <fcntl.h>
#include <linux/udmabuf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "text/format.h"

#include "backends/dmabuf/dma_heap.h"
#include "backends/dmabuf/dma_heap_plan.h"
#include "core/backend.h"
#include "base/memfd.h"
#include "base/sys.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {
namespace {

// In 64 bits: a limit of 4096 MiB or more wraps to 0 in a 32-bit size_t and would refuse everything.
std::uint64_t mib_to_bytes(std::size_t mib) { return std::uint64_t{mib} << 20; }

Result<void> check_limit(std::size_t size_bytes, std::optional<std::size_t> limit) {
  if (limit && size_bytes > mib_to_bytes(*limit))
    return fail(udmabuf_size_limit_error(size_bytes, *limit));
  return {};
}

}  // namespace

// The ioctl's return value is the new fd.
Result<UniqueFd> create_udmabuf(int dev, int memfd, std::size_t offset, std::size_t size,
                                std::optional<std::size_t> limit) {
  ::udmabuf_create args{};
  args.memfd = static_cast<__u32>(memfd);
  args.flags = UDMABUF_FLAGS_CLOEXEC;
  args.offset = offset;
  args.size = size;
  int fd = sys::ioctl(dev, UDMABUF_CREATE, &args);
  if (fd < 0) {
    int e = errno;
    // The kernel answers EINVAL for every refusal (size cap, seals, alignment); name the cap when it applies.
    if (e == EINVAL) {
      if (limit && size > mib_to_bytes(*limit))
        return fail(udmabuf_size_limit_error(size, *limit));
    }
    return fail(Error::from_errno(e, text::format("UDMABUF_CREATE of {} B at offset {} of memfd {}", size, offset, memfd)));
  }
  return UniqueFd(fd);
}

std::optional<std::size_t> read_udmabuf_size_limit_mb(const std::string& limit_path, std::string* problem) {
  std::string ignored;
  std::string& why = problem ? *problem : ignored;
  // Through the seam, so the memo's "no failed call after the first allocation" counts this read too.
  // O_NONBLOCK: a FIFO at this path must not block the open.
  UniqueFd f(sys::open(limit_path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!f) {
    const int e = errno;
    if (e == ENOTDIR) why = "has a parent that is not a directory";
    else if (e != ENOENT) why = text::format("cannot be opened: {}", errno_name(e));
    return std::nullopt;
  }
  struct stat st {};
  if (sys::fstat(f.get(), &st) != 0) {
    why = text::format("cannot be read: fstat: {}", errno_name(errno));
    return std::nullopt;
  }
  if (why = file_kind_problem(st.st_mode, false); !why.empty()) return std::nullopt;
  char buf[32] = {};
  const ssize_t n = sys::read(f.get(), buf, sizeof buf - 1);
  if (n < 0) why = text::format("cannot be read: {}", errno_name(errno));
  if (n <= 0) {
    if (n == 0) why = "is empty";
    return std::nullopt;
  }
  char* end = nullptr;
  const unsigned long long v = std::strtoull(buf, &end, 10);
  if (end == buf) {
    why = "holds no number";
    return std::nullopt;
  }
  return static_cast<std::size_t>(v);
}

Result<UniqueFd> udmabuf_allocate(int dev, std::optional<std::size_t> limit_mb, std::size_t size_bytes,
                                  std::string_view tensor_name) {
  ET_TRY(check_limit(size_bytes, limit_mb));
  // drivers/dma-buf/udmabuf.c requires F_SEAL_SHRINK (pages cannot vanish under the DMA-BUF) and refuses
  // F_SEAL_WRITE (and F_SEAL_FUTURE_WRITE since 6.13). No F_SEAL_SEAL: it would be accepted, but this
  // memfd is closed on return and only the DMA-BUF fd, which takes no seals, ever leaves the process.
  ET_TRY_ASSIGN(UniqueFd memfd,
                create_sealed_memfd(memfd_name("edgetensor-udmabuf", tensor_name), size_bytes, F_SEAL_SHRINK));
  return create_udmabuf(dev, memfd.get(), 0, size_bytes, limit_mb);
}

Result<void> check_udmabuf_memfd(int memfd, std::size_t offset_bytes, std::size_t size_bytes,
                                 std::optional<std::size_t> limit_mb) {
  if (memfd < 0) return fail(ErrorCode::InvalidArgument, text::format("udmabuf_from_memfd: fd {} is not a valid fd", memfd));
  if (size_bytes == 0) return fail(ErrorCode::InvalidArgument, "udmabuf_from_memfd: size is 0 B; the kernel refuses empty udmabufs");
  const std::size_t page = sys::page_size();
  if (offset_bytes % page != 0 || size_bytes % page != 0)
    return fail(ErrorCode::InvalidArgument,
                text::format("udmabuf_from_memfd: offset {} B and size {} B must be multiples of the page size {} B",
                            offset_bytes, size_bytes, page));
  int seals = sys::fcntl(memfd, F_GET_SEALS);
  if (seals < 0) {
    int e = errno;
    if (e == EBADF) return fail(ErrorCode::InvalidArgument, text::format("udmabuf_from_memfd: fd {} is not open", memfd), e);
    return fail(ErrorCode::InvalidArgument,
                text::format("udmabuf_from_memfd: fd {} is not a memfd (F_GET_SEALS: {}); udmabuf needs a memfd "
                            "sealed with F_SEAL_SHRINK", memfd, errno_name(e)), e);
  }
  if (!(seals & F_SEAL_SHRINK))
    return fail(ErrorCode::InvalidArgument,
                text::format("udmabuf_from_memfd: memfd {} is not sealed with F_SEAL_SHRINK (seals {:#x}); the kernel "
                            "requires it: fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) (create it with MFD_ALLOW_SEALING)",
                            memfd, static_cast<unsigned>(seals)));
  if (seals & F_SEAL_WRITE)
    return fail(ErrorCode::InvalidArgument,
                text::format("udmabuf_from_memfd: memfd {} is sealed with F_SEAL_WRITE; the kernel refuses such memfds",
                            memfd));
  struct stat st {};
  if (sys::fstat(memfd, &st) != 0) return fail(Error::from_errno(errno, text::format("fstat(memfd {})", memfd)));
  ET_TRY_ASSIGN(const std::size_t file_size, object_bytes(memfd, st.st_size, "udmabuf_from_memfd: memfd"));
  if (offset_bytes > file_size || size_bytes > file_size - offset_bytes)
    return fail(ErrorCode::OutOfRange,
                text::format("udmabuf_from_memfd: range [{}, +{}) B passes the end of memfd {} ({} B)", offset_bytes,
                            size_bytes, memfd, file_size));
  return check_limit(size_bytes, limit_mb);
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
