// SPDX-License-Identifier: Apache-2.0
// Pure logic of the DMA-BUF backend (no system calls): the heap probe table, the plan built from a
// requested name, DMA-BUF names, and the wording of device-open errors. Tested on every host.
#pragma once

#include <edgetensor/error.h>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

/// One heap the automatic probe tries.
struct HeapCandidate {
  std::string_view name;
  bool contiguous;  // a CMA heap
};

/// The automatic probe order: CMA heaps by every name kernels give them, then `system`.
/// Source: Documentation/userspace-api/dma-buf-heaps.rst and drivers/dma-buf/heaps/cma_heap.c —
/// `default_cma_region` since Linux 6.17; before that the CMA heap took the CMA area's name:
/// `reserved` (area from the `cma=` command line / Kconfig size), or the devicetree node's name,
/// e.g. `linux,cma` or `default-pool`. No Debian x86 kernel has a CMA heap.
std::span<const HeapCandidate> heap_probe_table() noexcept;

/// The special requested name that selects udmabuf instead of a heap.
inline constexpr std::string_view kUdmabufName = "udmabuf";

/// What one allocation tries, in order.
struct HeapPlan {
  std::vector<std::string> heaps;  // heap names, in order
  bool required = false;           // a heap asked for by name: its failure is the answer
  bool use_udmabuf = true;         // try udmabuf after the heaps (or alone when `heaps` is empty)
};

/// Builds the plan: `requested` empty = the probe table then udmabuf; "udmabuf" = udmabuf only;
/// any other name = that heap only (required). Errors: InvalidArgument for a name that cannot be a
/// heap node (empty after trim is impossible; contains '/', NUL, is "." or "..", or is >= 255 bytes).
Result<HeapPlan> make_heap_plan(std::string_view requested);

/// Checks a heap name (see make_heap_plan).
Result<void> check_heap_name(std::string_view name);

/// DMA_BUF_NAME_LEN from include/uapi/linux/dma-buf.h (the kernel's buffer holds 31 bytes + NUL).
inline constexpr std::size_t kDmaBufNameLen = 32;

/// The name we give our own DMA-BUFs with DMA_BUF_SET_NAME: "et:<tensor name>" (or "edgetensor"),
/// cut to at most kDmaBufNameLen - 1 bytes without splitting a UTF-8 sequence. The kernel refuses a
/// longer string (strndup_user -> EINVAL) instead of truncating it.
std::string dmabuf_buffer_name(std::string_view tensor_name);

/// Rounds `bytes` up to `page` (a power of two). Errors: OutOfRange when it overflows.
Result<std::size_t> round_up_to_page(std::size_t bytes, std::size_t page);

/// Heap names for a message, each quoted (a name may hold a comma, as "linux,cma" does), in order:
/// `"system", "linux,cma"`.
std::string quoted_names(std::span<const std::string> names);
std::string quoted_names(std::span<const std::string_view> names);

/// The error for a failed open of a DMA-BUF device node.
///  `path`: the node; `err`: errno; `heap_name`: the heap's name, empty for /dev/udmabuf;
///  `kernel_heaps`: names listed in /sys/class/dma_heap; `permissions`: e.g. "crw------- uid 0 gid 0";
///  `kernel_heaps_problem`: why that list is unknown (its directory is not one), or empty.
/// ENOENT -> Unavailable: "missing node" when the kernel lists the heap (e.g. /dev not passed into a
/// container), else "this kernel has no heap <name>" listing what it has. EACCES/EPERM ->
/// PermissionDenied with the video-group / udev-rule hint. ENOMEM -> OutOfMemory. Others: from_errno.
Error device_open_error(std::string_view path, int err, std::string_view heap_name,
                        const std::vector<std::string>& kernel_heaps, std::string_view permissions,
                        std::string_view kernel_heaps_problem = {});

/// The error for udmabuf sizes over the module's cap.
Error udmabuf_size_limit_error(std::size_t size_bytes, std::size_t limit_mb);

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
