// SPDX-License-Identifier: Apache-2.0
// DMA-BUF specifics: what this machine offers (for `edgetensor info`) and udmabuf from a caller's memfd.
//
// Allocation itself goes through TensorDyn::allocate (memory DmaBuf or Auto). Heap probe order
// (automatic): the CMA heaps by every name kernels give them — `default_cma_region` (Linux >= 6.17),
// then the legacy names `linux,cma`, `reserved`, `default-pool` (Documentation/userspace-api/
// dma-buf-heaps.rst) — then `system`; if none allocates, udmabuf (/dev/udmabuf from a memfd). Other
// heaps (vendor, uncached, secure) only by name: AllocateOptions::dma_heap, else the environment
// variable EDGETENSOR_DMA_HEAP. A heap asked for by name is required: no fallback to other heaps.
// The name "udmabuf" asks for udmabuf.
//
// Automatic allocation remembers what it found: a node that does not exist or refuses this process
// (ENOENT, EACCES/EPERM) is not opened again, and the kernel's heap list is read once, so after the
// first allocation an Auto allocation on a machine without DMA-BUF devices makes no failed system call
// (heaps that exist are still tried in order each time: a CMA heap that was full may have room again).
// probe() forgets it all: call it after adding a device node or granting access.
#pragma once

#include <edgetensor/error.h>
#include <edgetensor/export.h>
#include <edgetensor/unique_fd.h>

#include <cstddef>
#include <optional>
#include <string>
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

/// What the DMA-BUF backend finds on this machine. Opens each node once (and closes it); allocates
/// nothing.
struct Status {
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
};

/// Probes heaps and udmabuf, and makes the next automatic allocation look at every node again (see the
/// preamble). Thread-safe.
[[nodiscard]] ET_API Status probe();

/// Makes a DMA-BUF (udmabuf) of `size_bytes` at `offset_bytes` of the caller's memfd (borrowed; the
/// caller keeps and closes it; the DMA-BUF keeps the pages alive on its own). The returned fd is
/// CLOEXEC and owned by the caller; import it with TensorDyn::adopt_fd. Kernel rules (drivers/dma-buf/
/// udmabuf.c): the memfd must be sealed with F_SEAL_SHRINK and not F_SEAL_WRITE; offset and size are
/// multiples of the page size; the size is at most udmabuf.size_limit_mb MiB.
/// Errors: InvalidArgument (not a memfd/shmem file, missing F_SEAL_SHRINK, F_SEAL_WRITE, unaligned
/// offset/size, range past the end of the memfd, size 0), OutOfRange (over size_limit_mb, naming it),
/// Unavailable (/dev/udmabuf missing), PermissionDenied (node not accessible), from_errno otherwise.
[[nodiscard]] ET_API Result<UniqueFd> udmabuf_from_memfd(int memfd, std::size_t offset_bytes,
                                                         std::size_t size_bytes);

}  // namespace dmabuf
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
