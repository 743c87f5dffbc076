// SPDX-License-Identifier: Apache-2.0
// dma-heap allocation (include/uapi/linux/dma-heap.h) and node inspection for the DMA-BUF backend.
#pragma once

#include <edgetensor/unique_fd.h>

#include <cstddef>
#include <string>
#include <vector>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

/// Entry names of a directory, sorted; empty when it cannot be read.
std::vector<std::string> list_dir_names(const std::string& dir);
/// "crw-rw---- uid 0 gid 44" for a node, or "not present" / the stat error.
std::string node_permissions(const std::string& path);

/// DMA_HEAP_IOCTL_ALLOC of `size_bytes` (fd_flags O_RDWR|O_CLOEXEC, heap_flags 0) on an open heap
/// node (borrowed): the new DMA-BUF fd, or the ioctl's errno. Builds no message.
struct HeapAllocation {
  UniqueFd fd;
  int err = 0;
};
HeapAllocation heap_ioctl_allocate(int heap_fd, std::size_t size_bytes);

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
