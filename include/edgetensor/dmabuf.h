// SPDX-License-Identifier: Apache-2.0
// DMA-BUF allocators: dma-heap and udmabuf nodes, what this machine offers (for `edgetensor info`),
// and udmabuf from a caller's memfd.
//
// Tensors allocate through TensorDyn::allocate (memory DmaBuf or Auto) with
// AllocateOptions::dmabuf_allocator, or default_allocator() when it is null. Heap probe order
// (automatic): the CMA heaps by every name kernels give them — `default_cma_region` (Linux >= 6.17),
// then the legacy names `linux,cma`, `reserved`, `default-pool` (Documentation/userspace-api/
// dma-buf-heaps.rst) — then `system`; if none allocates, udmabuf (/dev/udmabuf from a memfd). Other
// heaps (vendor, uncached, secure) only by name: AllocateOptions::dma_heap, else the environment
// variable EDGETENSOR_DMA_HEAP. A heap asked for by name is required: no fallback to other heaps.
// The name "udmabuf" asks for udmabuf.
//
// The nodes are served by an Allocator (below), which keeps the nodes it opened and what it learned
// about the others until refresh(); docs/DMABUF.md has the design.
#pragma once

#include <edgetensor/error.h>
#include <edgetensor/export.h>
#include <edgetensor/unique_fd.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace dmabuf {

/// Environment variable naming a required heap (or "udmabuf"); AllocateOptions::dma_heap wins over it.
inline constexpr const char* kHeapEnvVar = "EDGETENSOR_DMA_HEAP";

/// One dma-heap device node.
struct HeapNode {
  std::string name;          ///< "system", "linux,cma", ...
  std::string path;          ///< "/dev/dma_heap/<name>"
  bool present = false;      ///< The node exists.
  bool accessible = false;   ///< This process could open it O_RDWR (a real open, closed at once).
  bool contiguous = false;   ///< A CMA heap (physically contiguous memory).
  bool in_probe_order = false;  ///< Tried by automatic allocation (false: only when asked by name).
  std::string permissions;   ///< e.g. "crw-rw---- uid 0 gid 44", or why it could not be read.
  std::string open_error;    ///< Empty when accessible or absent, else the open error (EACCES, ...).
};

/// /dev/udmabuf.
struct UdmabufNode {
  std::string path;          ///< "/dev/udmabuf"
  bool present = false;
  bool accessible = false;
  std::string permissions;
  std::string open_error;
  /// The kernel's cap in MiB (module parameter udmabuf.size_limit_mb, read from
  /// /sys/module/udmabuf/parameters/size_limit_mb); nullopt when unreadable.
  std::optional<std::size_t> size_limit_mb;
};

/// What an allocator finds on this machine (Allocator::report).
struct AllocatorReport {
  /// The probe-order heaps first (present or not), then any other node found in /dev/dma_heap.
  std::vector<HeapNode> heaps;
  /// Heaps the kernel registered (/sys/class/dma_heap), whether or not their nodes exist here.
  std::vector<std::string> kernel_heaps;
  UdmabufNode udmabuf;
  /// The required heap from AllocateOptions-less allocation: EDGETENSOR_DMA_HEAP, empty when unset.
  std::string requested;
  /// What the next automatic DMA-BUF allocation would use: "dma-heap <name>" or "udmabuf"; empty
  /// when nothing would (then `why_none` says why).
  std::string serving;
  std::string why_none;
  /// AllocatorOptions paths that exist but are the wrong kind of file, one message each naming the
  /// field, the path and what it is (heap_dir or kernel_heap_dir not a directory, udmabuf_limit not a
  /// regular file): `heaps`, `kernel_heaps` or `udmabuf.size_limit_mb` are then empty for that reason.
  std::vector<std::string> path_problems;
};

using Status [[deprecated("renamed dmabuf::AllocatorReport; removed in 0.6")]] = AllocatorReport;

/// Where an allocator looks for its devices. Every path must be absolute, without a NUL byte. A path
/// that does not exist means no such device; one of the wrong kind of file is a caller's mistake
/// (heap_dir: allocation refuses, see Allocator::allocate; the others: AllocatorReport::path_problems).
struct AllocatorOptions {
  std::string heap_dir = "/dev/dma_heap";                 ///< dma-heap nodes
  std::string kernel_heap_dir = "/sys/class/dma_heap";    ///< the kernel's heap list (for messages)
  std::string udmabuf_dev = "/dev/udmabuf";
  std::string udmabuf_limit = "/sys/module/udmabuf/parameters/size_limit_mb";
};

/// A new DMA-BUF and what served it.
struct Allocation {
  UniqueFd fd;         ///< O_RDWR | O_CLOEXEC; owned by the caller.
  std::string source;  ///< "dma-heap <name>" or "udmabuf".
};

/// Allocates DMA-BUFs from dma-heaps and udmabuf in the order of the preamble. It opens each node the
/// first time an allocation needs it and keeps the fd (open heaps are tried in order every time: a full
/// CMA heap may have room again); it remembers nodes that are missing (ENOENT) or refuse this process
/// (EACCES/EPERM), the kernel's heap list and udmabuf's size limit, so automatic allocation makes no
/// failed system call after the first. It forgets all of it, and closes its fds, only on refresh().
/// Kept fds outlive a change of credentials: after dropping privileges, create a new allocator.
/// Thread-safe: any member may run on any thread at once; ioctls run outside its lock, and refresh()
/// lets allocations in flight finish on the fds they hold.
class ET_API Allocator {
 public:
  /// Makes no system call. Errors: InvalidArgument naming an empty or relative path, or one with a NUL
  /// byte (the field and the byte).
  [[nodiscard]] static Result<std::shared_ptr<Allocator>> create(AllocatorOptions options = {});
  ~Allocator();
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  /// A DMA-BUF of at least `size_bytes` (the kernel rounds to pages), named with DMA_BUF_SET_NAME
  /// "et:<buffer_name>" (a refusal is logged). `heap_name` empty: EDGETENSOR_DMA_HEAP, else the
  /// automatic order; otherwise that heap only ("udmabuf": udmabuf only). Errors: InvalidArgument (a
  /// name that cannot be a node; a NUL byte in heap_name or buffer_name; heap_dir or udmabuf_dev of the
  /// wrong kind, named once: automatic allocation then tries nothing else), Unavailable (no node),
  /// PermissionDenied, OutOfMemory, OutOfRange (over udmabuf.size_limit_mb); automatic allocation
  /// reports every node it tried, in order, ranked by code.
  [[nodiscard]] Result<Allocation> allocate(std::size_t size_bytes, std::string_view heap_name = {},
                                            std::string_view buffer_name = {});

  /// Makes a DMA-BUF (udmabuf) of `size_bytes` at `offset_bytes` of the caller's memfd (borrowed; the
  /// caller keeps and closes it; the DMA-BUF keeps the pages alive on its own). The returned fd is
  /// CLOEXEC and owned by the caller; import it with TensorDyn::adopt_fd. Kernel rules (drivers/dma-buf/
  /// udmabuf.c): the memfd must be sealed with F_SEAL_SHRINK and not F_SEAL_WRITE; offset and size are
  /// multiples of the page size; the size is at most udmabuf.size_limit_mb MiB.
  /// Errors: InvalidArgument (not a memfd/shmem file, missing F_SEAL_SHRINK, F_SEAL_WRITE, unaligned
  /// offset/size, range past the end of the memfd, size 0), OutOfRange (over size_limit_mb, naming it),
  /// Unavailable (/dev/udmabuf missing), PermissionDenied (node not accessible), from_errno otherwise.
  [[nodiscard]] Result<UniqueFd> udmabuf_from_memfd(int memfd, std::size_t offset_bytes, std::size_t size_bytes);

  /// True when automatic allocation is known to fail for lack of a device: every node of the automatic
  /// order and udmabuf was found missing or refusing. No system call; false until an automatic
  /// allocation tried them, and false for a heap_dir that is not a directory (a configuration mistake,
  /// which allocate() names each time).
  [[nodiscard]] bool known_unusable() const;

  /// What this allocator's paths show now: opens each node once and closes it; allocates nothing, and
  /// neither reads nor changes what the allocator remembers.
  [[nodiscard]] AllocatorReport report() const;
  [[deprecated("renamed report(); removed in 0.6")]] [[nodiscard]] AllocatorReport status() const { return report(); }

  /// Forgets what was learned and drops the kept fds: the next allocation looks at every node again.
  /// Call it after adding a device node or granting access.
  void refresh();

  [[nodiscard]] const AllocatorOptions& options() const noexcept;

 private:
  struct State;
  explicit Allocator(AllocatorOptions options);
  std::unique_ptr<State> state_;
};

/// The process default allocator (AllocatorOptions{}), created on the first call (thread-safe) and
/// used by every allocation whose options name none. Destroyed at exit; a call during static
/// destruction after that gets a new allocator of its own, which works and remembers nothing.
[[nodiscard]] ET_API std::shared_ptr<Allocator> default_allocator();

/// default_allocator()->udmabuf_from_memfd(memfd, offset_bytes, size_bytes).
[[nodiscard]] ET_API Result<UniqueFd> udmabuf_from_memfd(int memfd, std::size_t offset_bytes,
                                                         std::size_t size_bytes);

}  // namespace dmabuf
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
