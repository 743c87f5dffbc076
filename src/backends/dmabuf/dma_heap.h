// SPDX-License-Identifier: Apache-2.0
// dma-heap allocation (include/uapi/linux/dma-heap.h) and the device paths of the DMA-BUF backend.
#pragma once

#include <edgetensor/error.h>
#include <edgetensor/unique_fd.h>

#include <cstddef>
#include <string>
#include <vector>

namespace edgetensor::inline ET_ABI_NAMESPACE::detail {

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

/// Opens /dev/dma_heap/<heap> O_RDWR|O_CLOEXEC and allocates `size_bytes` with DMA_HEAP_IOCTL_ALLOC
/// (fd_flags O_RDWR|O_CLOEXEC). Returns the new DMA-BUF fd; the heap fd is closed before returning.
/// Errors: device_open_error (Unavailable, PermissionDenied, OutOfMemory), from_errno of the ioctl
/// naming size and heap (ENOMEM -> OutOfMemory).
Result<UniqueFd> dma_heap_allocate(const std::string& heap, std::size_t size_bytes);

}  // namespace edgetensor::detail
