// SPDX-License-Identifier: Apache-2.0
#include "backends/dmabuf/dmabuf.h"

#include <edgetensor/dmabuf.h>

#include <fcntl.h>
#include <linux/dma-buf.h>
#include <linux/ioctl.h>  // _IOW/_IOWR: Linux 6.1.4's <linux/dma-buf.h> (Debian's cross headers) omits it
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

#include "text/format.h"

#include "backends/dmabuf/dma_heap.h"
#include "backends/dmabuf/dma_heap_plan.h"
#include "backends/dmabuf/dmabuf_sync.h"
#include "backends/dmabuf/udmabuf.h"
#include "base/address_space.h"
#include "core/fd_backing.h"
#include "base/log_internal.h"
#include "base/sys.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

static_assert(kSyncRead == DMA_BUF_SYNC_READ && kSyncWrite == DMA_BUF_SYNC_WRITE &&
              kSyncStart == DMA_BUF_SYNC_START && kSyncEnd == DMA_BUF_SYNC_END);
static_assert(kDmaBufNameLen == DMA_BUF_NAME_LEN);

namespace {

std::string sync_flags_name(std::uint64_t flags) {
  std::string dir = (flags & kSyncRead) && (flags & kSyncWrite) ? "RW" : (flags & kSyncWrite) ? "WRITE" : "READ";
  return text::format("{}|{}", (flags & kSyncEnd) ? "END" : "START", dir);
}

// DMA_BUF_IOCTL_SYNC through the seam, retried on EINTR/EAGAIN. Returns the outcome (err 0 = done).
SyncOutcome dmabuf_sync(int fd, std::uint64_t flags) {
  return run_sync_with_retry([&] {
    dma_buf_sync sync{};
    sync.flags = flags;
    return sys::ioctl(fd, DMA_BUF_IOCTL_SYNC, &sync) == 0 ? 0 : errno;
  });
}

class DmaBufBacking final : public FdBacking {
 public:
  DmaBufBacking(UniqueFd fd, std::size_t size, bool read_only, ObjectKey key, std::string detail)
      : FdBacking(std::move(fd), size, read_only, key, std::move(detail)) {}
  MemoryKind kind() const noexcept override { return MemoryKind::DmaBuf; }

  // Under the storage's map lock, for the first map of a bracket only: no START while a map is open.
  Result<std::byte*> begin_cpu_access(MapMode mode) override {
    if (int e = ensure_mapping(); e != 0)
      return fail(ErrorCode::Unsupported,
                  text::format("{} ({} B, fd {}) is not CPU-mappable: mmap failed: {} ({}){}; export_fd() and device "
                              "use still work",
                              detail_, buffer_bytes_, fd_.get(), std::strerror(e), errno_name(e),
                              address_space_note(buffer_bytes_, e)),
                  e);
    const std::uint64_t flags = sync_start_flags(read_only_ ? MapMode::Read : mode);
    if (auto out = dmabuf_sync(fd_.get(), flags); out.err != 0)
      return fail(Error::from_errno(out.err, text::format("DMA_BUF_IOCTL_SYNC {} on {} (fd {}, {} attempt{})",
                                                         sync_flags_name(flags), detail_, fd_.get(), out.attempts,
                                                         out.attempts == 1 ? "" : "s")));
    return base();
  }

  void end_cpu_access(MapMode modes) noexcept override {
    const std::uint64_t flags = sync_end_flags(modes);
    if (auto out = dmabuf_sync(fd_.get(), flags); out.err != 0)
      log(LogLevel::Warning, "DMA_BUF_IOCTL_SYNC {} on {} (fd {}) failed after {} attempt(s): {}",
          sync_flags_name(flags), detail_, fd_.get(), out.attempts, errno_name(out.err));
  }

};

Result<std::unique_ptr<Backing>> finish(UniqueFd fd, std::size_t requested, const std::string& tensor_name,
                                        std::string detail) {
  name_dmabuf(fd.get(), tensor_name);
  ET_TRY_ASSIGN(auto key, object_key_of(fd.get(), "DMA-BUF"));
  ET_TRY_ASSIGN(std::size_t size, dmabuf_buffer_bytes(fd.get()));
  if (size < requested)
    return fail(ErrorCode::Internal, text::format("{} returned a DMA-BUF of {} B for a request of {} B", detail, size,
                                                 requested));
  return make_dmabuf_backing(std::move(fd), size, false, key, std::move(detail));
}

std::string requested_heap(const AllocateOptions& options) {
  if (!options.dma_heap.empty()) return options.dma_heap;
  const char* env = std::getenv(dmabuf::kHeapEnvVar);
  return env ? std::string(env) : std::string();
}

// Auto's shortcut: the automatic plan (no heap requested) has failed before on every node, and the memo
// still says so. Then dmabuf_allocate would make no system call and only build a text Auto drops.
bool dmabuf_auto_skips(const AllocateOptions& options) {
  if (!options.dma_heap.empty() || std::getenv(dmabuf::kHeapEnvVar) != nullptr) return false;
  static const std::vector<std::string_view> nodes = [] {  // the automatic plan's nodes, listed once
    std::vector<std::string_view> v;
    for (const auto& c : heap_probe_table()) v.push_back(c.name);
    v.push_back(kUdmabufName);
    return v;
  }();
  return all_nodes_known(nodes);
}

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

// A heap or udmabuf asked for by name: one attempt, its error is the answer (no memo).
Result<std::unique_ptr<Backing>> allocate_required(const HeapPlan& plan, std::size_t size, const AllocateOptions& options) {
  if (plan.heaps.empty()) {
    ET_TRY_ASSIGN(auto fd, udmabuf_allocate(size, options.name));
    return finish(std::move(fd), size, options.name, "udmabuf");
  }
  const std::string& heap = plan.heaps.front();
  HeapAttempt a = try_dma_heap_allocate(heap, size);
  if (!a.fd) return fail(heap_attempt_error(heap, size, a));
  return finish(std::move(a.fd), size, options.name, "dma-heap " + heap);
}

Result<std::unique_ptr<Backing>> dmabuf_allocate(std::size_t size, const AllocateOptions& options) {
  const std::string requested = requested_heap(options);
  auto plan = make_heap_plan(requested);
  if (!plan)
    return fail(plan.error().code(), text::format("{}{}", plan.error().message(),
                                                 options.dma_heap.empty() ? text::format(" (from {})", dmabuf::kHeapEnvVar) : ""));
  if (!requested.empty()) return allocate_required(*plan, size, options);
  // The automatic probe order. Nodes that were missing or refused us are skipped (dma_heap.h, the
  // memo); messages are built only for an error that is returned.
  std::vector<std::string> missing;
  std::vector<Error> failures;
  for (const auto& heap : plan->heaps) {
    NodeMemo known = node_memo(heap);
    if (known.state == NodeState::Absent) {
      missing.push_back(heap);
      continue;
    }
    if (known.state == NodeState::Refused) {
      failures.push_back(std::move(*known.error));
      continue;
    }
    HeapAttempt a = try_dma_heap_allocate(heap, size);
    if (a.fd) {
      if (!failures.empty())
        log(LogLevel::Info, "dma-heap {} serves {} B after: {}", heap, size, failures.front().message());
      return finish(std::move(a.fd), size, options.name, "dma-heap " + heap);
    }
    if (a.open_errno == ENOENT) {
      remember_node(heap, NodeState::Absent, std::nullopt);
      missing.push_back(heap);
      continue;
    }
    Error e = heap_attempt_error(heap, size, a);
    if (a.open_errno == EACCES || a.open_errno == EPERM) remember_node(heap, NodeState::Refused, e);
    failures.push_back(std::move(e));
  }
  if (plan->use_udmabuf) {
    NodeMemo known = node_memo(kUdmabufName);
    if (known.state != NodeState::Unknown) {
      failures.push_back(std::move(*known.error));
    } else {
      auto fd = udmabuf_allocate(size, options.name);
      if (fd) {
        log(LogLevel::Info, "no dma-heap served {} B ({} missing, {} failed): udmabuf serves", size, missing.size(),
            failures.size());
        return finish(std::move(*fd), size, options.name, "udmabuf");
      }
      const int e = fd.error().sys_errno();
      // Only the device node's open answers Unavailable/PermissionDenied with these errnos.
      if (fd.error().code() == ErrorCode::Unavailable && e == ENOENT)
        remember_node(kUdmabufName, NodeState::Absent, fd.error());
      else if (fd.error().code() == ErrorCode::PermissionDenied && (e == EACCES || e == EPERM))
        remember_node(kUdmabufName, NodeState::Refused, fd.error());
      failures.push_back(std::move(fd).error());
    }
  }
  ErrorCode code = ErrorCode::Unavailable;
  int err = 0;
  std::vector<std::string> parts;
  if (!missing.empty()) {
    auto kernel = memo_kernel_heaps();
    parts.push_back(text::format("no node {}/{{{}}} (kernel heaps: {})", dmabuf_paths().heap_dir, text::join(missing, ","),
                                kernel.empty() ? std::string("none") : text::format("{}", text::join(kernel, ", "))));
    err = ENOENT;
  }
  for (const auto& f : failures) {
    code = rank_code(code, f.code());
    if (f.code() == code) err = f.sys_errno();
    parts.push_back(f.message());
  }
  return fail(code, text::format("no DMA-BUF allocator served {} B: {}", size, text::join(parts, "; ")), err);
}

// The exporter's name from /proc/self/fdinfo ("exp_name:"), so memory_detail() says where it came from.
std::string exporter_name(int fd) {
  std::ifstream f(text::format("/proc/self/fdinfo/{}", fd));
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("exp_name:", 0) == 0) {
      auto v = line.substr(9);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  }
  return {};
}

Result<std::unique_ptr<Backing>> dmabuf_import(UniqueFd fd, const FdInfo& info) {
  std::string exporter = exporter_name(fd.get());
  std::string detail = exporter.empty() ? "imported DMA-BUF" : text::format("imported DMA-BUF ({})", exporter);
  if (info.read_only) detail += ", read-only";
  return make_dmabuf_backing(std::move(fd), info.buffer_bytes, info.read_only, info.key, std::move(detail));
}

BackendStatus dmabuf_status() {
  auto st = dmabuf::probe();
  BackendStatus s{MemoryKind::DmaBuf, true, !st.serving.empty(), {}};
  std::vector<std::string> heaps;
  for (const auto& h : st.heaps)
    if (h.present) heaps.push_back(text::format("{} ({})", h.name, h.accessible ? "rw" : "no access"));
  std::string udmabuf = st.udmabuf.present ? (st.udmabuf.accessible ? "present" : "no access") : "absent";
  if (st.udmabuf.size_limit_mb) udmabuf += text::format(", limit {} MiB", *st.udmabuf.size_limit_mb);
  std::string found = text::format("heaps: {}; udmabuf: {}", heaps.empty() ? std::string("none") : text::format("{}", text::join(heaps, ", ")), udmabuf);
  s.detail = s.available ? text::format("{} ({})", st.serving, found) : text::format("{} ({})", st.why_none, found);
  return s;
}

}  // namespace

std::unique_ptr<Backing> make_dmabuf_backing(UniqueFd fd, std::size_t size_bytes, bool read_only, ObjectKey key,
                                             std::string detail) {
  return std::make_unique<DmaBufBacking>(std::move(fd), size_bytes, read_only, key, std::move(detail));
}

void name_dmabuf(int fd, std::string_view tensor_name) noexcept {
  try {
    std::string name = dmabuf_buffer_name(tensor_name);
    if (sys::ioctl(fd, DMA_BUF_SET_NAME, name.data()) != 0)
      log(LogLevel::Info, "DMA_BUF_SET_NAME '{}' on fd {} refused: {}", name, fd, errno_name(errno));
  } catch (...) {
  }
}

const BackendOps& dmabuf_backend() {
  static constexpr BackendOps ops{MemoryKind::DmaBuf, &dmabuf_status, &dmabuf_allocate, &dmabuf_import,
                                  &dmabuf_auto_skips};
  return ops;
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace dmabuf {
namespace {

void fill_access(const std::string& path, bool& present, bool& accessible, std::string& permissions,
                 std::string& open_error) {
  int fd = sys::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd >= 0) {
    sys::close(fd);
    present = accessible = true;
  } else {
    int e = errno;
    present = e != ENOENT;
    if (present) open_error = Error::from_errno(e, "open").message();
  }
  permissions = detail::node_permissions(path);
}

}  // namespace

Status probe() {
  using namespace detail;
  forget_nodes();  // what Auto allocation remembered is probed again (dma_heap.h, the memo)
  Status st;
  const auto& paths = dmabuf_paths();
  st.kernel_heaps = list_dir_names(paths.kernel_heap_dir);
  auto nodes = list_dir_names(paths.heap_dir);
  auto add = [&](std::string_view name, bool contiguous, bool in_order) {
    HeapNode h;
    h.name = std::string(name);
    h.path = paths.heap_dir + "/" + h.name;
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
  st.udmabuf.size_limit_mb = udmabuf_size_limit_mb();
  if (const char* env = std::getenv(kHeapEnvVar)) st.requested = env;

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
  if (why.empty()) why.push_back(text::format("no dma-heap node in {}", paths.heap_dir));
  why.push_back(st.udmabuf.present ? text::format("{}: {}", st.udmabuf.path, st.udmabuf.open_error)
                                   : text::format("no {}", st.udmabuf.path));
  st.why_none = text::format("no DMA-BUF allocator usable: {}", text::join(why, "; "));
  return st;
}

}  // namespace dmabuf
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
