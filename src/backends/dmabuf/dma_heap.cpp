// SPDX-License-Identifier: Apache-2.0
#include "backends/dmabuf/dma_heap.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/dma-heap.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "text/format.h"

#include "backends/dmabuf/dma_heap_plan.h"
#include "core/sys.h"

namespace edgetensor::inline ET_ABI_NAMESPACE::detail {

DmaBufPaths& dmabuf_paths() noexcept {
  static DmaBufPaths paths;
  return paths;
}

std::vector<std::string> list_dir_names(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return names;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

std::string node_permissions(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return "not present";
    return text::format("stat failed: {}", errno_name(errno));
  }
  char type = S_ISCHR(st.st_mode) ? 'c' : S_ISBLK(st.st_mode) ? 'b' : S_ISDIR(st.st_mode) ? 'd' : '-';
  std::string bits;
  const char* rwx = "rwxrwxrwx";
  for (int i = 0; i < 9; ++i) bits += (st.st_mode & (0400 >> i)) ? rwx[i] : '-';
  return text::format("{}{} uid {} gid {}", type, bits, st.st_uid, st.st_gid);
}

Result<UniqueFd> dma_heap_allocate(const std::string& heap, std::size_t size_bytes) {
  const std::string path = dmabuf_paths().heap_dir + "/" + heap;
  UniqueFd heap_fd(sys::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!heap_fd) {
    int e = errno;
    return fail(device_open_error(path, e, heap, list_dir_names(dmabuf_paths().kernel_heap_dir),
                                  e == ENOENT ? "" : node_permissions(path)));
  }
  dma_heap_allocation_data data{};
  data.len = size_bytes;
  data.fd_flags = O_RDWR | O_CLOEXEC;
  data.heap_flags = 0;
  if (sys::ioctl(heap_fd.get(), DMA_HEAP_IOCTL_ALLOC, &data) != 0) {
    int e = errno;
    return fail(Error::from_errno(e, text::format("DMA_HEAP_IOCTL_ALLOC of {} B on {}", size_bytes, path)));
  }
  return UniqueFd(static_cast<int>(data.fd));
}

}  // namespace edgetensor::detail
