// SPDX-License-Identifier: Apache-2.0
#include "backends/heap/heap.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "text/format.h"

#include "base/address_space.h"
#include "base/log_internal.h"
#include "base/sys.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {
namespace {

constexpr std::size_t kAlignment = 256;
// From this size on, fresh anonymous pages (already zero, untouched until used) beat malloc+memset.
constexpr std::size_t kMmapThreshold = 64 * 1024;

enum class HeapSource { Malloc, Pages, HugePages };

class HeapBacking final : public Backing {
 public:
  HeapBacking(std::byte* data, std::size_t size, HeapSource source, std::size_t mapped_bytes = 0)
      : data_(data), size_(size), mapped_bytes_(mapped_bytes ? mapped_bytes : size), source_(source) {}
  ~HeapBacking() override { give_back(data_, size_, mapped_bytes_, source_); }
  /// The backing of memory just obtained. Making it may throw std::bad_alloc: the memory is given back
  /// first, so the exception leaks nothing (the C API turns it into OutOfMemory and carries on).
  static std::unique_ptr<Backing> adopt(std::byte* data, std::size_t size, HeapSource source,
                                        std::size_t mapped_bytes = 0) {
    try {
      return std::make_unique<HeapBacking>(data, size, source, mapped_bytes);
    } catch (...) {
      give_back(data, size, mapped_bytes ? mapped_bytes : size, source);
      throw;
    }
  }
  MemoryKind kind() const noexcept override { return MemoryKind::Heap; }
  std::string detail() const override {
    switch (source_) {
      case HeapSource::Malloc: return "heap (malloc)";
      case HeapSource::Pages: return "heap (anonymous pages)";
      case HeapSource::HugePages: return "heap (anonymous pages, huge pages advised)";
    }
    return "heap";
  }
  std::size_t buffer_bytes() const noexcept override { return size_; }
  bool needs_cpu_access_bracket() const noexcept override { return false; }
  Result<std::byte*> cpu_address() override { return data_; }
  Result<std::byte*> begin_cpu_access(MapMode) override { return data_; }
  Result<UniqueFd> export_fd() const override {
    return fail(ErrorCode::Unsupported, "heap tensor is not shareable: allocate with memory Shm or DmaBuf to export an fd");
  }

 private:
  std::byte* data_;
  std::size_t size_;          // bytes asked for
  std::size_t mapped_bytes_;  // bytes mapped: what munmap gets back
  HeapSource source_;

  static void give_back(std::byte* data, std::size_t size, std::size_t mapped_bytes, HeapSource source) noexcept {
    if (source != HeapSource::Malloc) {
      if (sys::munmap(data, mapped_bytes) != 0)
        log(LogLevel::Warning, "munmap of heap tensor ({} B) failed: errno {}", size, errno);
    } else {
      std::free(data);
    }
  }
};

BackendStatus heap_status() { return {MemoryKind::Heap, true, true, "process heap"}; }

// Anonymous mappings are made without MAP_NORESERVE: they are committed memory, as malloc's are, so
// the kernel's overcommit policy (proc(5), /proc/sys/vm/overcommit_memory) refuses a tensor this machine
// could never back (ENOMEM: OutOfMemory at allocate) instead of handing out pages that would bring the
// OOM killer on their first touch.
// mapping_error, plus the other reason a committed anonymous mapping fails with ENOMEM.
Error heap_mapping_error(int err, std::size_t size, std::size_t mapped) {
  Error e = mapping_error(err, text::format("heap mmap of {} B", size), mapped);
  if (err != ENOMEM) return e;
  return Error(e.code(), e.message() + ", or more memory than the kernel will commit (RAM + swap, under "
                                      "/proc/sys/vm/overcommit_memory)", err);
}

// A tensor of at least one PMD huge page: anonymous pages starting at a huge-page boundary, advised
// MADV_HUGEPAGE (madvise(2)), so the kernel can back each aligned huge-page-sized part with one huge
// page (a fault per huge page instead of per page: the first write of a fresh 4K frame is many times
// cheaper). The mapping is over-reserved by one huge page less one page, then trimmed to the boundary.
// Huge pages are zeroed by the kernel like any anonymous page.
Result<std::unique_ptr<Backing>> huge_page_allocate(std::size_t size, std::size_t huge) {
  const std::size_t page = sys::page_size();
  const std::size_t length = (size + page - 1) & ~(page - 1);  // size <= SIZE_MAX - huge (checked by the caller)
  const std::size_t reserve = length + (huge - page);
  void* p = sys::mmap(nullptr, reserve, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    int e = errno;
    return fail(heap_mapping_error(e, size, reserve));
  }
  auto* start = static_cast<std::byte*>(p);
  const std::uintptr_t at = reinterpret_cast<std::uintptr_t>(start);
  std::byte* aligned = start + (((at + huge - 1) & ~(std::uintptr_t{huge} - 1)) - at);
  const std::size_t head = static_cast<std::size_t>(aligned - start);
  const std::size_t tail = reserve - head - length;
  if ((head != 0 && sys::munmap(start, head) != 0) || (tail != 0 && sys::munmap(aligned + length, tail) != 0)) {
    int e = errno;
    (void)sys::munmap(start, reserve);  // munmap(2) of a range with holes is fine
    return fail(Error::from_errno(e, text::format("heap: trimming the {} B reservation to a {} B boundary", reserve, huge)));
  }
  if (sys::madvise(aligned, length, MADV_HUGEPAGE) != 0) {
    // EINVAL: a kernel without THP. The memory works without the advice.
    log(LogLevel::Debug, "madvise(MADV_HUGEPAGE) of a {} B heap tensor refused: {}", size, errno_name(errno));
    return HeapBacking::adopt(aligned, size, HeapSource::Pages, length);
  }
  return HeapBacking::adopt(aligned, size, HeapSource::HugePages, length);
}

Result<std::unique_ptr<Backing>> heap_allocate(std::size_t size, const AllocateOptions&) {
  if (const std::size_t huge = sys::hpage_pmd_size(); huge != 0 && size >= huge && size <= SIZE_MAX - huge)
    return huge_page_allocate(size, huge);
  if (size >= kMmapThreshold) {
    void* p = sys::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      return fail(heap_mapping_error(e, size, size));
    }
    return HeapBacking::adopt(static_cast<std::byte*>(p), size, HeapSource::Pages);
  }
  std::size_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;  // size < 64 KiB: no overflow
  void* p = std::aligned_alloc(kAlignment, rounded);
  if (!p) return fail(ErrorCode::OutOfMemory, text::format("heap: aligned_alloc of {} B failed", rounded));
  std::memset(p, 0, rounded);
  return HeapBacking::adopt(static_cast<std::byte*>(p), size, HeapSource::Malloc);
}

Result<std::unique_ptr<Backing>> heap_import(UniqueFd, const FdInfo&) {
  return fail(ErrorCode::Unsupported, "heap memory cannot be imported from an fd");
}

}  // namespace

const BackendOps& heap_backend() {
  static constexpr BackendOps ops{MemoryKind::Heap, &heap_status, &heap_allocate, &heap_import, nullptr};
  return ops;
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
