// SPDX-License-Identifier: Apache-2.0
#include "backends/heap/heap.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "text/format.h"

#include "core/address_space.h"
#include "core/log_internal.h"
#include "core/sys.h"

namespace edgetensor::inline ET_ABI_NAMESPACE::detail {
namespace {

constexpr std::size_t kAlignment = 256;
// From this size on, fresh anonymous pages (already zero, untouched until used) beat malloc+memset.
constexpr std::size_t kMmapThreshold = 64 * 1024;

class HeapBacking final : public Backing {
 public:
  HeapBacking(std::byte* data, std::size_t size, bool mmapped) : data_(data), size_(size), mmapped_(mmapped) {}
  ~HeapBacking() override {
    if (mmapped_) {
      if (sys::munmap(data_, size_) != 0)
        log(LogLevel::Warning, "munmap of heap tensor ({} B) failed: errno {}", size_, errno);
    } else {
      std::free(data_);
    }
  }
  MemoryKind kind() const noexcept override { return MemoryKind::Heap; }
  std::string detail() const override { return mmapped_ ? "heap (anonymous pages)" : "heap (malloc)"; }
  std::size_t buffer_bytes() const noexcept override { return size_; }
  bool needs_cpu_access_bracket() const noexcept override { return false; }
  Result<std::byte*> cpu_address() override { return data_; }
  Result<std::byte*> begin_cpu_access(MapMode) override { return data_; }
  Result<UniqueFd> export_fd() const override {
    return fail(ErrorCode::Unsupported, "heap tensor is not shareable: allocate with memory Shm or DmaBuf to export an fd");
  }

 private:
  std::byte* data_;
  std::size_t size_;
  bool mmapped_;
};

BackendStatus heap_status() { return {MemoryKind::Heap, true, true, "process heap"}; }

Result<std::unique_ptr<Backing>> heap_allocate(std::size_t size, const AllocateOptions&) {
  if (size >= kMmapThreshold) {
    void* p = sys::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      return fail(mapping_error(e, text::format("heap mmap of {} B", size), size));
    }
    return std::make_unique<HeapBacking>(static_cast<std::byte*>(p), size, true);
  }
  std::size_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;  // size < 64 KiB: no overflow
  void* p = std::aligned_alloc(kAlignment, rounded);
  if (!p) return fail(ErrorCode::OutOfMemory, text::format("heap: aligned_alloc of {} B failed", rounded));
  std::memset(p, 0, rounded);
  return std::make_unique<HeapBacking>(static_cast<std::byte*>(p), size, false);
}

Result<std::unique_ptr<Backing>> heap_import(UniqueFd, const FdInfo&) {
  return fail(ErrorCode::Unsupported, "heap memory cannot be imported from an fd");
}

}  // namespace

const BackendOps& heap_backend() {
  static constexpr BackendOps ops{MemoryKind::Heap, &heap_status, &heap_allocate, &heap_import};
  return ops;
}

}  // namespace edgetensor::detail
