// SPDX-License-Identifier: Apache-2.0
// dmabuf::Allocator: the dma-heap and udmabuf nodes of one set of paths, opened once, with what was
// learned about them (docs/DMABUF.md), and the process default allocator.
#include <edgetensor/dmabuf.h>
#include <edgetensor/shared_fd.h>

#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <mutex>

#include "text/format.h"

#include "backends/dmabuf/dma_heap.h"
#include "backends/dmabuf/dma_heap_plan.h"
#include "backends/dmabuf/dmabuf.h"
#include "backends/dmabuf/udmabuf.h"
#include "base/c_string.h"
#include "base/log_internal.h"
#include "base/sys.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace dmabuf {
namespace {

// What an allocator knows of one node. Absent and Refused are remembered so that automatic allocation
// does not repeat a failed open; other open errors (EMFILE, ENOMEM, ...) pass and are not remembered.
enum class NodeState { Unknown, Open, Absent, Refused };
struct Node {
  NodeState state = NodeState::Unknown;
  SharedFd fd;        // while Open; shared so that refresh() never closes an fd an ioctl is using
  int open_errno = 0; // while Absent or Refused
};

// A node's fd, or the errno of its (remembered) open.
struct Opened {
  SharedFd fd;
  int err = 0;
};

// A heap that did not serve an automatic allocation: its error is built only if it is returned.
struct HeapFailure {
  std::string_view heap;
  int open_errno = 0;
  int alloc_errno = 0;
  SharedFd node;  // the node the ioctl failed on, for the message (empty when the open failed)
};

ErrorCode rank_code(ErrorCode a, ErrorCode b) {
  // The most actionable code wins: permissions, then memory/size, then "not here".
  auto rank = [](ErrorCode c) {
    switch (c) {
      case ErrorCode::PermissionDenied: return 3;
      case ErrorCode::OutOfMemory: case ErrorCode::OutOfRange: return 2;
      case ErrorCode::Unavailable: return 0;
      default: return 1;
    }
  };
  return rank(b) > rank(a) ? b : a;
}

std::string env_heap() {
  const char* env = std::getenv(kHeapEnvVar);
  return env ? std::string(env) : std::string();
}

// `dmabuf::AllocatorOptions::heap_dir "/tmp/x" is a regular file, not a directory`.
std::string path_problem(std::string_view field, const std::string& path, std::string_view problem) {
  return text::format("dmabuf::AllocatorOptions::{} \"{}\" {}", field, path, problem);
}

}  // namespace

struct Allocator::State {
  explicit State(AllocatorOptions o) : options(std::move(o)) {}

  const AllocatorOptions options;
  mutable std::mutex mutex;  // guards everything below; held for opens and reads, never for an ioctl
  std::map<std::string, Node, std::less<>> heaps;  // by heap name
  Node udmabuf;
  std::optional<std::vector<std::string>> kernel_heaps;  // the kernel's heap list, for messages
  std::string kernel_heaps_problem;  // once kernel_heaps: why kernel_heap_dir could not be listed
  bool limit_read = false;
  std::optional<std::size_t> limit_mb;  // udmabuf.size_limit_mb, once limit_read
  std::string heap_dir_problem;  // heap_dir is not a directory (an open gave ENOTDIR): no heap is tried

  std::string heap_path(std::string_view heap) const { return text::format("{}/{}", options.heap_dir, heap); }

  // The node's kept fd, opening it now if nothing is known. `retry`: open again a node remembered as
  // missing or refusing (a required node: its answer is always live).
  Opened open_node(Node& node, const std::string& path, bool retry) {
    if (node.state == NodeState::Open) return {node.fd, 0};
    if (node.state != NodeState::Unknown && !retry) return {{}, node.open_errno};
    UniqueFd fd(sys::open(path.c_str(), O_RDWR | O_CLOEXEC));
    if (fd) {
      node = Node{NodeState::Open, SharedFd::adopt(std::move(fd)), 0};
      return {node.fd, 0};
    }
    const int e = errno;
    if (e == ENOENT) node = Node{NodeState::Absent, {}, e};
    else if (e == EACCES || e == EPERM) node = Node{NodeState::Refused, {}, e};
    else node = Node{};
    return {{}, e};
  }
  Opened open_heap(std::string_view heap, bool retry) {
    std::lock_guard lock(mutex);
    if (!heap_dir_problem.empty() && !retry) return {{}, ENOTDIR};
    auto it = heaps.find(heap);
    if (it == heaps.end()) it = heaps.emplace(std::string(heap), Node{}).first;
    if (it->second.state == NodeState::Open) return {it->second.fd, 0};  // no path built
    Opened opened = open_node(it->second, heap_path(heap), retry);
    if (opened.err == ENOTDIR) {  // the name holds no '/': heap_dir itself is not a directory
      heap_dir_problem = detail::path_kind_problem(options.heap_dir, true);
      if (heap_dir_problem.empty()) heap_dir_problem = "is not a directory";
    }
    return opened;
  }
  Opened open_udmabuf(bool retry) {
    std::lock_guard lock(mutex);
    return open_node(udmabuf, options.udmabuf_dev, retry);
  }

  // The kernel's heap list, and why it is unknown (a kernel_heap_dir that is not a directory) or "".
  std::pair<std::vector<std::string>, std::string> kernel_heap_list() {
    std::lock_guard lock(mutex);
    if (!kernel_heaps) {
      std::string problem;
      kernel_heaps = detail::list_dir_names(options.kernel_heap_dir, &problem);
      if (!problem.empty()) kernel_heaps_problem = path_problem("kernel_heap_dir", options.kernel_heap_dir, problem);
    }
    return {*kernel_heaps, kernel_heaps_problem};
  }
  std::optional<std::size_t> udmabuf_limit_mb() {
    std::lock_guard lock(mutex);
    if (!limit_read) {
      std::string problem;
      limit_mb = detail::read_udmabuf_size_limit_mb(options.udmabuf_limit, &problem);
      limit_read = true;
      if (!problem.empty())  // swallowed (the kernel still enforces its limit): logged once per refresh
        detail::log(LogLevel::Warning,
                    "udmabuf's size limit is unknown: {}; a size over it fails with the kernel's EINVAL",
                    path_problem("udmabuf_limit", options.udmabuf_limit, problem));
    }
    return limit_mb;
  }

  Error heap_dir_error() {
    std::lock_guard lock(mutex);
    const std::string problem = path_problem("heap_dir", options.heap_dir, heap_dir_problem);
    return Error(ErrorCode::InvalidArgument, text::format("{}: no dma-heap node can be in it", problem), ENOTDIR);
  }
  // `heap_fd`: the node's fd when the ioctl failed (borrowed), else -1.
  Error heap_error(std::string_view heap, std::size_t size, int open_errno, int alloc_errno, int heap_fd = -1) {
    if (open_errno == ENOTDIR) return heap_dir_error();
    const std::string path = heap_path(heap);
    if (open_errno != 0) {
      auto [kernel, kernel_problem] = kernel_heap_list();
      return detail::device_open_error(path, open_errno, heap, kernel,
                                       open_errno == ENOENT ? "" : detail::node_permissions(path), kernel_problem);
    }
    Error e = Error::from_errno(alloc_errno, text::format("DMA_HEAP_IOCTL_ALLOC of {} B on {}", size, path));
    return alloc_errno == ENOTTY ? not_a_device(std::move(e), "heap_dir", path, heap_fd) : e;
  }
  // A device ioctl that answered ENOTTY on a node that is no character device (a regular file at the
  // configured path): the configuration is wrong, and the error says so. Other errors pass unchanged.
  Error not_a_device(Error e, std::string_view field, const std::string& path, int fd) const {
    if (e.sys_errno() != ENOTTY || fd < 0) return e;
    const std::string problem = detail::device_kind_problem(fd);
    if (problem.empty()) return e;
    const std::string& configured = field == "heap_dir" ? options.heap_dir : path;
    const std::string what = field == "heap_dir" ? text::format("holds \"{}\", which {}", path, problem) : problem;
    return Error(ErrorCode::InvalidArgument, text::format("{} ({})", path_problem(field, configured, what), e.message()),
                 ENOTTY);
  }
  Error udmabuf_open_error(int err) const {
    const std::string& path = options.udmabuf_dev;
    if (err == ENOTDIR || err == EISDIR) {
      const char* what = err == EISDIR ? "is a directory, not a device node" : "has a parent that is not a directory";
      return Error(ErrorCode::InvalidArgument, path_problem("udmabuf_dev", path, what), err);
    }
    return detail::device_open_error(path, err, "", {}, err == ENOENT ? "" : detail::node_permissions(path));
  }

  Result<Allocation> allocate_udmabuf(std::size_t size, std::string_view name, bool retry) {
    ET_TRY_ASSIGN(std::size_t rounded, detail::round_up_to_page(size, sys::page_size()));
    Opened dev = open_udmabuf(retry);
    if (!dev.fd) return fail(udmabuf_open_error(dev.err));
    auto fd = detail::udmabuf_allocate(dev.fd.get(), udmabuf_limit_mb(), rounded, name);
    if (!fd) return fail(not_a_device(std::move(fd).error(), "udmabuf_dev", options.udmabuf_dev, dev.fd.get()));
    return Allocation{std::move(*fd), "udmabuf"};
  }

  Result<Allocation> allocate_required(const detail::HeapPlan& plan, std::size_t size, std::string_view name) {
    if (plan.heaps.empty()) return allocate_udmabuf(size, name, true);
    const std::string& heap = plan.heaps.front();
    Opened node = open_heap(heap, true);
    if (!node.fd) return fail(heap_error(heap, size, node.err, 0));
    detail::HeapAllocation a = detail::heap_ioctl_allocate(node.fd.get(), size);
    if (!a.fd) return fail(heap_error(heap, size, 0, a.err, node.fd.get()));
    return Allocation{std::move(a.fd), "dma-heap " + heap};
  }

  // The automatic order. Nodes remembered as missing or refusing are not opened again; messages are
  // built only for an error that is returned (or logged).
  Result<Allocation> allocate_auto(const detail::HeapPlan& plan, std::size_t size, std::string_view name) {
    std::vector<std::string_view> missing;
    std::vector<HeapFailure> failures;
    for (const auto& heap : plan.heaps) {
      Opened node = open_heap(heap, false);
      if (!node.fd) {
        // A heap_dir that is not a directory is the caller's mistake: no other device is tried.
        if (node.err == ENOTDIR) return fail(heap_dir_error());
        if (node.err == ENOENT) missing.push_back(heap);
        else failures.push_back({heap, node.err, 0});
        continue;
      }
      detail::HeapAllocation a = detail::heap_ioctl_allocate(node.fd.get(), size);
      if (a.fd) {
        if (!failures.empty()) {
          const HeapFailure& f = failures.front();
          detail::log(LogLevel::Info, "dma-heap {} serves {} B after: {}", heap, size,
                      heap_error(f.heap, size, f.open_errno, f.alloc_errno, f.node.get()).message());
        }
        return Allocation{std::move(a.fd), "dma-heap " + heap};
      }
      failures.push_back({heap, 0, a.err, node.fd});
    }
    std::optional<Error> udmabuf_failure;
    if (plan.use_udmabuf) {
      auto r = allocate_udmabuf(size, name, false);
      if (r) {
        detail::log(LogLevel::Info, "no dma-heap served {} B ({} missing, {} failed): udmabuf serves", size,
                    missing.size(), failures.size());
        return r;
      }
      udmabuf_failure = std::move(r).error();
    }
    ErrorCode code = ErrorCode::Unavailable;
    int err = 0;
    std::vector<std::string> parts;
    if (!missing.empty()) {
      auto [kernel, kernel_problem] = kernel_heap_list();
      parts.push_back(text::format("no node in {} for {} (the kernel's heaps: {})", options.heap_dir,
                                   detail::quoted_names(missing),
                                   !kernel_problem.empty() ? "unknown, " + kernel_problem
                                   : kernel.empty()        ? std::string("none")
                                                           : detail::quoted_names(kernel)));
      err = ENOENT;
    }
    auto add = [&](const Error& e) {
      code = rank_code(code, e.code());
      if (e.code() == code) err = e.sys_errno();
      parts.push_back(e.message());
    };
    for (const auto& f : failures) add(heap_error(f.heap, size, f.open_errno, f.alloc_errno, f.node.get()));
    if (udmabuf_failure) add(*udmabuf_failure);
    return fail(code,
                text::format("no DMA-BUF allocator served {} B (heaps tried in this order: {}{}): {}", size,
                             detail::quoted_names(plan.heaps), plan.use_udmabuf ? ", then udmabuf" : "",
                             text::join(parts, "; ")),
                err);
  }
};

Allocator::Allocator(AllocatorOptions options) : state_(std::make_unique<State>(std::move(options))) {}
Allocator::~Allocator() = default;

Result<std::shared_ptr<Allocator>> Allocator::create(AllocatorOptions options) {
  const std::pair<const char*, const std::string*> paths[] = {{"heap_dir", &options.heap_dir},
                                                              {"kernel_heap_dir", &options.kernel_heap_dir},
                                                              {"udmabuf_dev", &options.udmabuf_dev},
                                                              {"udmabuf_limit", &options.udmabuf_limit}};
  for (const auto& [field, path] : paths) {
    ET_TRY(detail::check_c_string(*path, text::format("dmabuf::AllocatorOptions::{}", field)));
    if (path->empty() || path->front() != '/')
      return fail(ErrorCode::InvalidArgument,
                  text::format("dmabuf::AllocatorOptions::{} '{}' is not an absolute path", field, *path));
  }
  return std::shared_ptr<Allocator>(new Allocator(std::move(options)));
}

const AllocatorOptions& Allocator::options() const noexcept { return state_->options; }

Result<Allocation> Allocator::allocate(std::size_t size_bytes, std::string_view heap_name,
                                       std::string_view buffer_name) {
  if (size_bytes == 0)
    return fail(ErrorCode::InvalidArgument, "dmabuf::Allocator::allocate: size 0 B (a DMA-BUF holds at least one page)");
  ET_TRY(detail::check_c_string(heap_name, "dmabuf::Allocator::allocate: heap_name"));
  ET_TRY(detail::check_c_string(buffer_name, "dmabuf::Allocator::allocate: buffer_name"));
  const std::string requested = heap_name.empty() ? env_heap() : std::string(heap_name);
  auto plan = detail::make_heap_plan(requested);
  if (!plan)
    return fail(plan.error().code(),
                text::format("{}{}", plan.error().message(), heap_name.empty() ? text::format(" (from {})", kHeapEnvVar) : ""));
  ET_TRY_ASSIGN(Allocation a, requested.empty() ? state_->allocate_auto(*plan, size_bytes, buffer_name)
                                                : state_->allocate_required(*plan, size_bytes, buffer_name));
  detail::name_dmabuf(a.fd.get(), buffer_name);
  return a;
}

Result<UniqueFd> Allocator::udmabuf_from_memfd(int memfd, std::size_t offset_bytes, std::size_t size_bytes) {
  const auto limit = state_->udmabuf_limit_mb();
  ET_TRY(detail::check_udmabuf_memfd(memfd, offset_bytes, size_bytes, limit));
  Opened dev = state_->open_udmabuf(true);
  if (!dev.fd) return fail(state_->udmabuf_open_error(dev.err));
  auto fd = detail::create_udmabuf(dev.fd.get(), memfd, offset_bytes, size_bytes, limit);
  if (!fd) return fail(state_->not_a_device(std::move(fd).error(), "udmabuf_dev", state_->options.udmabuf_dev, dev.fd.get()));
  return fd;
}

bool Allocator::known_unusable() const {
  auto refuses = [](const Node& n) { return n.state == NodeState::Absent || n.state == NodeState::Refused; };
  std::lock_guard lock(state_->mutex);
  // A heap_dir that is not a directory is the caller's mistake, not a missing device: allocate() names
  // it every time (remembered, without a system call), so Auto can return it for a named allocator.
  if (!state_->heap_dir_problem.empty()) return false;
  if (!refuses(state_->udmabuf)) return false;
  return std::all_of(detail::heap_probe_table().begin(), detail::heap_probe_table().end(), [&](const auto& c) {
    auto it = state_->heaps.find(c.name);
    return it != state_->heaps.end() && refuses(it->second);
  });
}

void Allocator::refresh() {
  std::lock_guard lock(state_->mutex);
  state_->heaps.clear();  // fds in use by an allocation in flight stay open until it finishes
  state_->udmabuf = Node{};
  state_->kernel_heaps.reset();
  state_->kernel_heaps_problem.clear();
  state_->limit_read = false;
  state_->limit_mb.reset();
  state_->heap_dir_problem.clear();
}

namespace {

void fill_access(const std::string& path, bool& present, bool& accessible, std::string& permissions,
                 std::string& open_error) {
  int fd = sys::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd >= 0) {
    sys::close(fd);
    present = accessible = true;
  } else {
    int e = errno;
    present = e != ENOENT && e != ENOTDIR;  // ENOTDIR: its directory is not one (AllocatorReport::path_problems)
    if (present) open_error = Error::from_errno(e, "open").message();
  }
  permissions = detail::node_permissions(path);
}

}  // namespace

AllocatorReport Allocator::report() const {
  using namespace detail;
  const AllocatorOptions& paths = state_->options;
  AllocatorReport st;
  std::string problem;
  auto note = [&](std::string_view field, const std::string& path) {
    if (!problem.empty()) st.path_problems.push_back(path_problem(field, path, problem));
    problem.clear();
  };
  auto nodes = list_dir_names(paths.heap_dir, &problem);
  const bool heap_dir_unusable = !problem.empty();
  note("heap_dir", paths.heap_dir);
  st.kernel_heaps = list_dir_names(paths.kernel_heap_dir, &problem);
  note("kernel_heap_dir", paths.kernel_heap_dir);
  auto add = [&](std::string_view name, bool contiguous, bool in_order) {
    HeapNode h;
    h.name = std::string(name);
    h.path = state_->heap_path(name);
    h.contiguous = contiguous;
    h.in_probe_order = in_order;
    fill_access(h.path, h.present, h.accessible, h.permissions, h.open_error);
    st.heaps.push_back(std::move(h));
  };
  for (const auto& c : heap_probe_table()) add(c.name, c.contiguous, true);
  for (const auto& n : nodes) {
    bool known = false;
    for (const auto& c : heap_probe_table()) known = known || c.name == n;
    if (!known) add(n, false, false);
  }
  st.udmabuf.path = paths.udmabuf_dev;
  fill_access(st.udmabuf.path, st.udmabuf.present, st.udmabuf.accessible, st.udmabuf.permissions,
              st.udmabuf.open_error);
  st.udmabuf.size_limit_mb = read_udmabuf_size_limit_mb(paths.udmabuf_limit, &problem);
  note("udmabuf_limit", paths.udmabuf_limit);
  st.requested = env_heap();

  auto heap = [&](std::string_view name) -> const HeapNode* {
    for (const auto& h : st.heaps)
      if (h.name == name) return &h;
    return nullptr;
  };
  if (!st.requested.empty() && st.requested != kUdmabufName) {
    const HeapNode* h = heap(st.requested);
    if (h && h->accessible) {
      st.serving = "dma-heap " + h->name;
    } else {
      st.why_none = text::format("{}={} is required but {}", kHeapEnvVar, st.requested,
                                 !h || !h->present ? "its node is missing" : "it cannot be opened (" + h->open_error + ")");
    }
    return st;
  }
  if (st.requested.empty()) {
    for (const auto& c : heap_probe_table()) {
      const HeapNode* h = heap(c.name);
      if (h && h->accessible) {
        st.serving = "dma-heap " + h->name;
        return st;
      }
    }
  }
  if (st.udmabuf.accessible) {
    st.serving = "udmabuf";
    return st;
  }
  std::vector<std::string> why;
  for (const auto& h : st.heaps)
    if (h.present && h.in_probe_order) why.push_back(text::format("{}: {}", h.path, h.open_error));
  if (why.empty())
    why.push_back(heap_dir_unusable ? st.path_problems.front()
                                    : text::format("no dma-heap node in {}", paths.heap_dir));
  why.push_back(st.udmabuf.present ? text::format("{}: {}", st.udmabuf.path, st.udmabuf.open_error)
                                   : text::format("no {}", st.udmabuf.path));
  st.why_none = text::format("no DMA-BUF allocator usable: {}", text::join(why, "; "));
  return st;
}

// ---- The process default ---------------------------------------------------------------------------
namespace {

// Set when the default's holder is destroyed at exit (trivially destructible: readable after that).
constinit std::atomic<bool> g_default_destroyed{false};

struct DefaultHolder {
  std::shared_ptr<Allocator> allocator = *Allocator::create();  // the default paths are absolute
  ~DefaultHolder() { g_default_destroyed.store(true, std::memory_order_release); }
};

}  // namespace

std::shared_ptr<Allocator> default_allocator() {
  // During static destruction, after the holder: a fresh allocator serves (it works, remembers nothing).
  if (g_default_destroyed.load(std::memory_order_acquire)) return *Allocator::create();
  static DefaultHolder holder;
  return holder.allocator;
}

Result<UniqueFd> udmabuf_from_memfd(int memfd, std::size_t offset_bytes, std::size_t size_bytes) {
  return default_allocator()->udmabuf_from_memfd(memfd, offset_bytes, size_bytes);
}

}  // namespace dmabuf
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
