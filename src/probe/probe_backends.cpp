// SPDX-License-Identifier: Apache-2.0
// probe(): the system section and the memory sections (heap, memfd, named POSIX shm, DMA-BUF).
#include <dirent.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <edgetensor/dmabuf.h>
#include <edgetensor/memory.h>
#include <edgetensor/shm.h>

#include <atomic>

#include "base/sys.h"
#include "text/format.h"

#include "probe/pattern.h"
#include "probe/probe_sections.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

using nlohmann::json;

namespace {

constexpr std::size_t kProbeShape[] = {480, 640, 4};  // a VGA RGBA frame

std::string mode_string(mode_t m) {
  std::string s = "---------";
  const char* rwx = "rwxrwxrwx";
  for (int i = 0; i < 9; ++i)
    if (m & (1u << (8 - i))) s[i] = rwx[i];
  return s;
}

json node_info(const std::string& path) {
  json j = {{"path", path}};
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    j["present"] = false;
    return j;
  }
  j["present"] = true;
  j["mode"] = mode_string(st.st_mode);
  j["uid"] = st.st_uid;
  j["gid"] = st.st_gid;
  j["readable"] = ::access(path.c_str(), R_OK) == 0;
  j["writable"] = ::access(path.c_str(), W_OK) == 0;
  return j;
}

// Writes the pattern for `seed` and reads it back: the check of a tensor no other process sees.
Result<void> pattern_through_maps(const TensorDyn& t, std::uint32_t seed) {
  if (auto ok = write_probe_pattern(t, seed); !ok) return fail(ok.error().code(), "write: " + ok.error().to_string());
  if (auto ok = check_probe_pattern(t, seed); !ok)
    return fail(ok.error().code(), "read back: " + ok.error().to_string());
  return {};
}

// Allocates with `alloc` and checks sharing: options.round_trip with another process, or without one a
// pattern written and read back here ("round_trip": null, and the detail says so).
ProbeDraft probe_shared(std::string name, const AllocateOptions& alloc, const ProbeOptions& options) {
  ProbeDraft s{std::move(name)};
  auto status = backend_status(alloc.memory);
  s.fields["built"] = status.built;
  if (!status.available) {
    s.status = ProbeStatus::Unavailable;
    s.detail = status.detail;
    return s;
  }
  auto t = TensorDyn::allocate(kProbeShape, DType::U8, alloc);
  if (!t) {
    s.detail = t.error().to_string();
    return s;
  }
  s.fields["served_by"] = t->memory_detail();
  if (!options.round_trip) {
    s.fields["round_trip"] = nullptr;
    if (auto ok = pattern_through_maps(*t, 3); !ok) {
      s.detail = text::format("{}: {}", t->memory_detail(), ok.error().message());
      return s;
    }
    s.status = ProbeStatus::Ok;
    s.detail = text::format("{}: allocated {} B, pattern written and read back through maps; no cross-process "
                            "round trip (ProbeOptions::round_trip not set)",
                            t->memory_detail(), t->packed_bytes());
    return s;
  }
  auto rt = options.round_trip(*t, alloc.shm_name);
  s.fields["round_trip"] = rt.has_value();
  if (!rt) {
    s.detail = text::format("{}: round trip failed: {}", t->memory_detail(), rt.error().to_string());
    return s;
  }
  s.status = ProbeStatus::Ok;
  s.detail = text::format("{}: {}", t->memory_detail(), *rt);
  return s;
}

}  // namespace

json probe_system() {
  json out;
  utsname u{};
  if (::uname(&u) == 0) out["kernel"] = text::format("{} {} {}", u.sysname, u.release, u.machine);
  // 4, 16 or 64 KiB (arm64 kernels differ); an armhf program on an arm64 kernel is a 32-bit process.
  out["page_size_bytes"] = sys::page_size();
  out["process_bits"] = static_cast<int>(sizeof(void*) * 8);
  struct statvfs v {};
  if (::statvfs("/dev/shm", &v) == 0) {
    out["dev_shm"] = {{"size_bytes", static_cast<unsigned long long>(v.f_blocks) * v.f_frsize},
                      {"free_bytes", static_cast<unsigned long long>(v.f_bavail) * v.f_frsize}};
  } else {
    out["dev_shm"] = {{"error", "statvfs(/dev/shm) failed"}};
  }
  json heaps = json::array();
  if (DIR* d = ::opendir("/dev/dma_heap")) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") heaps.push_back(node_info("/dev/dma_heap/" + n));
    }
    ::closedir(d);
  }
  out["dma_heap_nodes"] = heaps;
  out["udmabuf"] = node_info("/dev/udmabuf");
  out["auto_selection"] = backend_status(MemoryKind::Auto).detail;  // after the sections: what they left
  return out;
}

ProbeDraft probe_heap() {
  ProbeDraft s{"heap"};
  auto t = TensorDyn::allocate(kProbeShape, DType::U8, {.memory = MemoryKind::Heap});
  if (!t) {
    s.detail = t.error().to_string();
    return s;
  }
  for (std::uint32_t seed : {1u, 2u}) {
    if (auto ok = pattern_through_maps(*t, seed); !ok) {
      s.detail = ok.error().message();
      return s;
    }
  }
  s.status = ProbeStatus::Ok;
  s.detail = text::format("{}: allocated {} B, pattern written and read back through maps", t->memory_detail(),
                          t->packed_bytes());
  return s;
}

ProbeDraft probe_memfd(const ProbeOptions& options) {
  return probe_shared("shm (memfd)", {.memory = MemoryKind::Shm}, options);
}

ProbeDraft probe_named_shm(const ProbeOptions& options) {
  // Unique per call, so probes on two threads at once do not collide.
  static std::atomic<unsigned> calls{0};
  std::string name = text::format("/edgetensor-info-{}-{}", ::getpid(), calls.fetch_add(1));
  ProbeDraft s;
  try {
    s = probe_shared("shm (named POSIX)", {.memory = MemoryKind::Shm, .shm_name = name}, options);
  } catch (...) {  // a round-trip hook threw: the object goes all the same
    (void)shm::remove(name);
    throw;
  }
  if (s.status != ProbeStatus::Unavailable) {
    if (auto rm = shm::remove(name); !rm && s.status == ProbeStatus::Ok) {
      s.status = ProbeStatus::Failed;
      s.detail += "; remove: " + rm.error().to_string();
    }
  }
  return s;
}

// DMA-BUF: every heap node and udmabuf as the kernel shows them, which one serves, and a real
// allocation (and round trip) when one works.
ProbeDraft probe_dmabuf(const ProbeOptions& options) {
  auto st = dmabuf::default_allocator()->report();
  ProbeDraft s = probe_shared("dmabuf", {.memory = MemoryKind::DmaBuf}, options);
  json heaps = json::array();
  for (const auto& h : st.heaps)
    heaps.push_back({{"name", h.name}, {"path", h.path}, {"present", h.present}, {"accessible", h.accessible},
                     {"contiguous", h.contiguous}, {"permissions", h.permissions}, {"open_error", h.open_error}});
  s.fields["heaps"] = heaps;
  s.fields["kernel_heaps"] = st.kernel_heaps;
  s.fields["udmabuf"] = {{"path", st.udmabuf.path}, {"present", st.udmabuf.present},
                         {"accessible", st.udmabuf.accessible}, {"permissions", st.udmabuf.permissions},
                         {"open_error", st.udmabuf.open_error}};
  if (st.udmabuf.size_limit_mb) s.fields["udmabuf"]["size_limit_mb"] = *st.udmabuf.size_limit_mb;
  s.fields["serving"] = st.serving;
  if (!st.why_none.empty()) s.fields["why_none"] = st.why_none;
  if (!st.path_problems.empty()) s.fields["path_problems"] = st.path_problems;
  return s;
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
