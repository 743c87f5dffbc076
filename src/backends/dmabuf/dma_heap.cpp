// SPDX-License-Identifier: Apache-2.0
#include "backends/dmabuf/dma_heap.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/dma-heap.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "text/format.h"

#include "backends/dmabuf/dma_heap_plan.h"
#include "base/sys.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

DmaBufPaths& dmabuf_paths() noexcept {
  static DmaBufPaths paths;
  return paths;
}

std::vector<std::string> list_dir_names(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = sys::opendir(dir.c_str());
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

HeapAttempt try_dma_heap_allocate(const std::string& heap, std::size_t size_bytes) {
  HeapAttempt a;
  const std::string path = dmabuf_paths().heap_dir + "/" + heap;
  UniqueFd heap_fd(sys::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!heap_fd) {
    a.open_errno = errno;
    return a;
  }
  dma_heap_allocation_data data{};
  data.len = size_bytes;
  data.fd_flags = O_RDWR | O_CLOEXEC;
  data.heap_flags = 0;
  if (sys::ioctl(heap_fd.get(), DMA_HEAP_IOCTL_ALLOC, &data) != 0) {
    a.alloc_errno = errno;
    return a;
  }
  a.fd = UniqueFd(static_cast<int>(data.fd));
  return a;
}

Error heap_attempt_error(const std::string& heap, std::size_t size_bytes, const HeapAttempt& attempt) {
  const std::string path = dmabuf_paths().heap_dir + "/" + heap;
  if (const int e = attempt.open_errno)
    return device_open_error(path, e, heap, list_dir_names(dmabuf_paths().kernel_heap_dir),
                             e == ENOENT ? "" : node_permissions(path));
  return Error::from_errno(attempt.alloc_errno, text::format("DMA_HEAP_IOCTL_ALLOC of {} B on {}", size_bytes, path));
}

Result<UniqueFd> dma_heap_allocate(const std::string& heap, std::size_t size_bytes) {
  HeapAttempt a = try_dma_heap_allocate(heap, size_bytes);
  if (!a.fd) return fail(heap_attempt_error(heap, size_bytes, a));
  return std::move(a.fd);
}

// ---- The allocator memo ---------------------------------------------------------------------------
namespace {

struct Memo {
  std::mutex mutex;
  std::string paths;  // the dmabuf_paths() it describes
  std::map<std::string, NodeMemo, std::less<>> nodes;
  std::optional<std::vector<std::string>> kernel_heaps;
};
Memo& memo() {
  static Memo* m = new Memo;  // never destroyed: allocations may run during static destruction
  return *m;
}
std::string paths_signature() {
  const DmaBufPaths& p = dmabuf_paths();
  return p.heap_dir + '\n' + p.kernel_heap_dir + '\n' + p.udmabuf_dev + '\n' + p.udmabuf_limit;
}
// Under m.mutex: drops what was learned under other paths.
void check_paths(Memo& m) {
  std::string now = paths_signature();
  if (now != m.paths) {
    m.paths = std::move(now);
    m.nodes.clear();
    m.kernel_heaps.reset();
  }
}

}  // namespace

NodeMemo node_memo(std::string_view name) {
  Memo& m = memo();
  std::lock_guard lock(m.mutex);
  check_paths(m);
  auto it = m.nodes.find(name);
  return it == m.nodes.end() ? NodeMemo{} : it->second;
}

bool all_nodes_known(std::span<const std::string_view> names) {
  Memo& m = memo();
  std::lock_guard lock(m.mutex);
  check_paths(m);
  return std::all_of(names.begin(), names.end(), [&](std::string_view name) {
    auto it = m.nodes.find(name);
    return it != m.nodes.end() && it->second.state != NodeState::Unknown;
  });
}

void remember_node(std::string_view name, NodeState state, std::optional<Error> error) {
  Memo& m = memo();
  std::lock_guard lock(m.mutex);
  check_paths(m);
  m.nodes[std::string(name)] = NodeMemo{state, std::move(error)};
}

std::vector<std::string> memo_kernel_heaps() {
  Memo& m = memo();
  std::lock_guard lock(m.mutex);
  check_paths(m);
  if (!m.kernel_heaps) m.kernel_heaps = list_dir_names(dmabuf_paths().kernel_heap_dir);
  return *m.kernel_heaps;
}

void forget_nodes() noexcept {
  Memo& m = memo();
  std::lock_guard lock(m.mutex);
  m.nodes.clear();
  m.kernel_heaps.reset();
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
