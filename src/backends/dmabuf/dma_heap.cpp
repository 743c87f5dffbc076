// SPDX-License-Identifier: Apache-2.0
#include "backends/dmabuf/dma_heap.h"

#include <edgetensor/error.h>

#include <dirent.h>
#include <fcntl.h>
#include <linux/dma-heap.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "text/format.h"

#include "base/sys.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

namespace {
const char* file_kind_name(unsigned mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "another kind of file";
}
}  // namespace

std::string file_kind_problem(unsigned mode, bool want_dir) {
  if (want_dir ? S_ISDIR(mode) : S_ISREG(mode)) return "";
  return text::format("is {}, not {}", file_kind_name(mode), want_dir ? "a directory" : "a regular file");
}

std::string device_kind_problem(int fd) {
  struct stat st {};
  if (sys::fstat(fd, &st) != 0 || S_ISCHR(st.st_mode)) return "";
  return text::format("is {}, not a character device", file_kind_name(st.st_mode));
}

std::string path_kind_problem(const std::string& path, bool want_dir) {
  struct stat st {};
  if (sys::stat(path.c_str(), &st) != 0)
    return errno == ENOTDIR ? "has a parent that is not a directory" : "";
  return file_kind_problem(st.st_mode, want_dir);
}

std::vector<std::string> list_dir_names(const std::string& dir, std::string* problem) {
  std::vector<std::string> names;
  DIR* d = sys::opendir(dir.c_str());
  if (!d) {
    const int e = errno;
    if (problem && e == ENOTDIR) *problem = path_kind_problem(dir, true);
    else if (problem && e != ENOENT) *problem = text::format("cannot be listed: {}", errno_name(e));
    return names;
  }
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
  if (sys::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return "not present";
    return text::format("stat failed: {}", errno_name(errno));
  }
  char type = S_ISCHR(st.st_mode) ? 'c' : S_ISBLK(st.st_mode) ? 'b' : S_ISDIR(st.st_mode) ? 'd' : '-';
  std::string bits;
  const char* rwx = "rwxrwxrwx";
  for (int i = 0; i < 9; ++i) bits += (st.st_mode & (0400 >> i)) ? rwx[i] : '-';
  return text::format("{}{} uid {} gid {}", type, bits, st.st_uid, st.st_gid);
}

HeapAllocation heap_ioctl_allocate(int heap_fd, std::size_t size_bytes) {
  dma_heap_allocation_data data{};
  data.len = size_bytes;
  data.fd_flags = O_RDWR | O_CLOEXEC;
  data.heap_flags = 0;
  if (sys::ioctl(heap_fd, DMA_HEAP_IOCTL_ALLOC, &data) != 0) return {UniqueFd(), errno};
  return {UniqueFd(static_cast<int>(data.fd)), 0};
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
