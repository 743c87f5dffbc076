// SPDX-License-Identifier: Apache-2.0
// dma-heap allocation (include/uapi/linux/dma-heap.h) and the device paths of the DMA-BUF backend.
#pragma once

#include <edgetensor/error.h>
#include <edgetensor/unique_fd.h>

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

/// Where the backend looks for its devices. Tests point these at a temporary directory; change them
/// only while no other thread uses the backend.
struct DmaBufPaths {
  std::string heap_dir = "/dev/dma_heap";
  std::string kernel_heap_dir = "/sys/class/dma_heap";
  std::string udmabuf_dev = "/dev/udmabuf";
  std::string udmabuf_limit = "/sys/module/udmabuf/parameters/size_limit_mb";
};
DmaBufPaths& dmabuf_paths() noexcept;

/// Entry names of a directory, sorted; empty when it cannot be read.
std::vector<std::string> list_dir_names(const std::string& dir);
/// "crw-rw---- uid 0 gid 44" for a node, or "not present" / the stat error.
std::string node_permissions(const std::string& path);

/// One dma-heap allocation without any message: the new DMA-BUF fd, or the errno of the step that
/// failed (opening the node, or DMA_HEAP_IOCTL_ALLOC). Opens /dev/dma_heap/<heap> O_RDWR|O_CLOEXEC,
/// allocates `size_bytes` (fd_flags O_RDWR|O_CLOEXEC) and closes the heap fd before returning.
struct HeapAttempt {
  UniqueFd fd;
  int open_errno = 0;
  int alloc_errno = 0;
};
HeapAttempt try_dma_heap_allocate(const std::string& heap, std::size_t size_bytes);
/// The error of a failed attempt: device_open_error (Unavailable, PermissionDenied, OutOfMemory; it
/// reads /sys/class/dma_heap and the node's permissions for the text), or from_errno of the ioctl
/// naming size and heap (ENOMEM -> OutOfMemory). Built only for an error that is returned.
Error heap_attempt_error(const std::string& heap, std::size_t size_bytes, const HeapAttempt& attempt);
/// try_dma_heap_allocate with heap_attempt_error on failure.
Result<UniqueFd> dma_heap_allocate(const std::string& heap, std::size_t size_bytes);

/// What Auto allocation learned about this machine's DMA-BUF allocator nodes (heap names, and
/// kUdmabufName for /dev/udmabuf), so that no allocation after the first repeats a failed system call:
/// a node that does not exist (ENOENT) or refuses this process (EACCES/EPERM) is not tried again, and
/// the kernel's heap list (for messages) is read once. Process-wide and thread-safe. Forgotten by
/// dmabuf::probe() (a device node added or a permission granted later is then found) and whenever
/// dmabuf_paths() change (tests).
enum class NodeState { Unknown, Absent, Refused };
struct NodeMemo {
  NodeState state = NodeState::Unknown;
  std::optional<Error> error;  // the error its attempt gave, for the final message
};
NodeMemo node_memo(std::string_view name);
/// True when every node in `names` has a remembered state (none Unknown): one lock, nothing copied.
bool all_nodes_known(std::span<const std::string_view> names);
void remember_node(std::string_view name, NodeState state, std::optional<Error> error);
/// list_dir_names(kernel_heap_dir), read once per memo.
std::vector<std::string> memo_kernel_heaps();
void forget_nodes() noexcept;

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
