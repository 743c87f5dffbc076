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

/// Entry names of a directory, sorted; empty when it cannot be read. `problem`, when given, is set to
/// why a directory that exists could not be listed (path_kind_problem's text, or the opendir error);
/// it stays empty when there is nothing at `dir` (ENOENT).
std::vector<std::string> list_dir_names(const std::string& dir, std::string* problem = nullptr);
/// Why a file of `mode` (st_mode) is not the directory (`want_dir`) or regular file it should be: "is a
/// directory, not a regular file"; empty when it is.
std::string file_kind_problem(unsigned mode, bool want_dir);
/// Why `path` cannot be the directory (`want_dir`) or regular file it should be: "is a regular file,
/// not a directory", "is a directory, not a regular file", "has a parent that is not a directory";
/// empty when it is of that kind or does not exist.
std::string path_kind_problem(const std::string& path, bool want_dir);
/// Why the open node `fd` (borrowed) cannot be a device node: "is a regular file, not a character device";
/// empty when it is a character device or fstat fails. Asked only after a device ioctl answered ENOTTY,
/// so a working node pays nothing for it.
std::string device_kind_problem(int fd);
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
