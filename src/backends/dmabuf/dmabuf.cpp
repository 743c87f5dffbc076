// SPDX-License-Identifier: Apache-2.0
#include "backends/dmabuf/dmabuf.h"

#include <edgetensor/dmabuf.h>

#include <fcntl.h>
#include <poll.h>
#include <linux/dma-buf.h>
#include <linux/ioctl.h>  // _IOW/_IOWR: Linux 6.1.4's <linux/dma-buf.h> (Debian's cross headers) omits it
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "text/format.h"

#include "backends/dmabuf/dma_heap_plan.h"
#include "backends/dmabuf/dmabuf_sync.h"
#include "base/address_space.h"
#include "core/fd_backing.h"
#include "base/log_internal.h"
#include "base/sys.h"
#include "sync/sync_internal.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

static_assert(kSyncRead == DMA_BUF_SYNC_READ && kSyncWrite == DMA_BUF_SYNC_WRITE &&
              kSyncStart == DMA_BUF_SYNC_START && kSyncEnd == DMA_BUF_SYNC_END);
static_assert(kDmaBufNameLen == DMA_BUF_NAME_LEN);

namespace {

std::string sync_flags_name(std::uint64_t flags) {
  std::string dir = (flags & kSyncRead) && (flags & kSyncWrite) ? "RW" : (flags & kSyncWrite) ? "WRITE" : "READ";
  return text::format("{}|{}", (flags & kSyncEnd) ? "END" : "START", dir);
}

// DMA_BUF_IOCTL_SYNC through the seam, retried on EINTR/EAGAIN. Returns the outcome (err 0 = done).
SyncOutcome dmabuf_sync(int fd, std::uint64_t flags) {
  return run_sync_with_retry([&] {
    dma_buf_sync sync{};
    sync.flags = flags;
    return sys::ioctl(fd, DMA_BUF_IOCTL_SYNC, &sync) == 0 ? 0 : errno;
  });
}

class DmaBufBacking final : public FdBacking {
 public:
  DmaBufBacking(UniqueFd fd, std::size_t size, bool read_only, ObjectKey key, std::string detail)
      : FdBacking(std::move(fd), size, read_only, key, std::move(detail)) {}
  MemoryKind kind() const noexcept override { return MemoryKind::DmaBuf; }

  // Under the storage's map lock, for the first map of a bracket only, before START: poll(2) of a
  // DMA-BUF waits on the same fences START would (dma_buf_poll), but with a bound. A fence added after
  // the poll can still make START wait in full (docs/SYNC.md, "Timeouts").
  Result<void> await_device(MapMode mode, std::chrono::milliseconds timeout) override {
    const bool writes = (static_cast<unsigned>(mode) & static_cast<unsigned>(MapMode::Write)) && !read_only_;
    ET_TRY_ASSIGN(const bool ready, poll_within(fd_.get(), writes ? POLLOUT : POLLIN, timeout, detail_));
    if (ready) return {};
    const std::string fences = pending_fences_text(fd_.get(), writes ? sync::Access::Write : sync::Access::Read);
    const std::string what =
        text::format("{} map of {} ({} B, fd {})", writes ? "write" : "read", detail_, buffer_bytes_, fd_.get());
    if (timeout.count() == 0)
      return fail(Error(ErrorCode::Busy,
                        text::format("{}: device work on the buffer is pending and the timeout is 0 "
                                     "(non-blocking); {}", what, fences),
                        EAGAIN));
    return fail(Error(ErrorCode::Timeout,
                      text::format("{}: the buffer's fences did not signal within {} (MapOptions::timeout); {}", what,
                                   timeout_text(timeout), fences),
                      ETIMEDOUT));
  }

  // Under the storage's map lock, for the first map of a bracket only: no START while a map is open.
  Result<std::byte*> begin_cpu_access(MapMode mode) override {
    if (int e = ensure_mapping(); e != 0)
      return fail(ErrorCode::Unsupported,
                  text::format("{} ({} B, fd {}) is not CPU-mappable: mmap failed: {} ({}){}; export_fd() and device "
                              "use still work",
                              detail_, buffer_bytes_, fd_.get(), std::strerror(e), errno_name(e),
                              address_space_note(buffer_bytes_, e)),
                  e);
    const std::uint64_t flags = sync_start_flags(read_only_ ? MapMode::Read : mode);
    if (auto out = dmabuf_sync(fd_.get(), flags); out.err != 0)
      return fail(Error::from_errno(out.err, text::format("DMA_BUF_IOCTL_SYNC {} on {} (fd {}, {} attempt{})",
                                                         sync_flags_name(flags), detail_, fd_.get(), out.attempts,
                                                         out.attempts == 1 ? "" : "s")));
    return base();
  }

  void end_cpu_access(MapMode modes) noexcept override {
    const std::uint64_t flags = sync_end_flags(modes);
    if (auto out = dmabuf_sync(fd_.get(), flags); out.err != 0)
      log(LogLevel::Warning, "DMA_BUF_IOCTL_SYNC {} on {} (fd {}) failed after {} attempt(s): {}",
          sync_flags_name(flags), detail_, fd_.get(), out.attempts, errno_name(out.err));
  }

};

Result<std::unique_ptr<Backing>> finish(dmabuf::Allocation a, std::size_t requested) {
  ET_TRY_ASSIGN(auto key, object_key_of(a.fd.get(), "DMA-BUF"));
  ET_TRY_ASSIGN(std::size_t size, dmabuf_buffer_bytes(a.fd.get()));
  if (size < requested)
    return fail(ErrorCode::Internal, text::format("{} returned a DMA-BUF of {} B for a request of {} B", a.source, size,
                                                 requested));
  return make_dmabuf_backing(std::move(a.fd), size, false, key, std::move(a.source));
}

Result<std::unique_ptr<Backing>> allocate_with(dmabuf::Allocator& allocator, std::size_t size,
                                               const AllocateOptions& options) {
  ET_TRY_ASSIGN(auto a, allocator.allocate(size, options.dma_heap, options.name));
  return finish(std::move(a), size);
}

Result<std::unique_ptr<Backing>> dmabuf_allocate(std::size_t size, const AllocateOptions& options) {
  if (options.dmabuf_allocator) return allocate_with(*options.dmabuf_allocator, size, options);
  return allocate_with(*dmabuf::default_allocator(), size, options);
}

// Auto's shortcut: no heap is requested and the allocator knows every node of the automatic order is
// missing or refuses us. Then allocating would make no system call and only build a text Auto drops.
bool dmabuf_auto_skips(const AllocateOptions& options) {
  if (!options.dma_heap.empty() || std::getenv(dmabuf::kHeapEnvVar) != nullptr) return false;
  if (options.dmabuf_allocator) return options.dmabuf_allocator->known_unusable();
  return dmabuf::default_allocator()->known_unusable();
}

// The exporter's name from /proc/self/fdinfo ("exp_name:"), so memory_detail() says where it came from.
std::string exporter_name(int fd) {
  std::ifstream f(text::format("/proc/self/fdinfo/{}", fd));
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("exp_name:", 0) == 0) {
      auto v = line.substr(9);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  }
  return {};
}

Result<std::unique_ptr<Backing>> dmabuf_import(UniqueFd fd, const FdInfo& info) {
  std::string exporter = exporter_name(fd.get());
  std::string detail = exporter.empty() ? "imported DMA-BUF" : text::format("imported DMA-BUF ({})", exporter);
  if (info.read_only) detail += ", read-only";
  return make_dmabuf_backing(std::move(fd), info.buffer_bytes, info.read_only, info.key, std::move(detail));
}

BackendStatus dmabuf_status() { return dmabuf_backend_status(dmabuf::default_allocator()->report()); }

}  // namespace

BackendStatus dmabuf_backend_status(const dmabuf::AllocatorReport& st) {
  BackendStatus s{MemoryKind::DmaBuf, true, !st.serving.empty(), {}};
  std::vector<std::string> heaps;
  for (const auto& h : st.heaps)
    if (h.present) heaps.push_back(text::format("\"{}\" ({})", h.name, h.accessible ? "rw" : "no access"));
  std::string udmabuf = st.udmabuf.present ? (st.udmabuf.accessible ? "present" : "no access") : "absent";
  if (st.udmabuf.size_limit_mb) udmabuf += text::format(", limit {} MiB", *st.udmabuf.size_limit_mb);
  std::string found = text::format("heaps: {}; udmabuf: {}", heaps.empty() ? std::string("none") : text::format("{}", text::join(heaps, ", ")), udmabuf);
  for (const auto& p : st.path_problems) found += "; " + p;
  s.detail = s.available ? text::format("{} ({})", st.serving, found) : text::format("{} ({})", st.why_none, found);
  return s;
}

std::unique_ptr<Backing> make_dmabuf_backing(UniqueFd fd, std::size_t size_bytes, bool read_only, ObjectKey key,
                                             std::string detail) {
  return std::make_unique<DmaBufBacking>(std::move(fd), size_bytes, read_only, key, std::move(detail));
}

void name_dmabuf(int fd, std::string_view tensor_name) noexcept {
  try {
    std::string name = dmabuf_buffer_name(tensor_name);
    if (sys::ioctl(fd, DMA_BUF_SET_NAME, name.data()) != 0)
      log(LogLevel::Info, "DMA_BUF_SET_NAME '{}' on fd {} refused: {}", name, fd, errno_name(errno));
  } catch (...) {
  }
}

const BackendOps& dmabuf_backend() {
  static constexpr BackendOps ops{MemoryKind::DmaBuf, &dmabuf_status, &dmabuf_allocate, &dmabuf_import,
                                  &dmabuf_auto_skips};
  return ops;
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
