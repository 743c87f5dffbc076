// SPDX-License-Identifier: Apache-2.0
#include "probes.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <edgetensor/edgetensor.h>

#include "text/format.h"

#include "gl_checks.h"
#include "round_trip.h"

namespace edgetensor_cli {

using nlohmann::json;
namespace et = edgetensor;
namespace text = edgetensor::text;

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

json system_info() {
  json sys;
  utsname u{};
  if (::uname(&u) == 0) sys["kernel"] = text::format("{} {} {}", u.sysname, u.release, u.machine);
  // 4, 16 or 64 KiB (arm64 kernels differ); an armhf program on an arm64 kernel is a 32-bit process.
  sys["page_size_bytes"] = static_cast<long long>(::sysconf(_SC_PAGESIZE));
  sys["process_bits"] = static_cast<int>(sizeof(void*) * 8);
  struct statvfs v {};
  if (::statvfs("/dev/shm", &v) == 0) {
    sys["dev_shm"] = {{"size_bytes", static_cast<unsigned long long>(v.f_blocks) * v.f_frsize},
                      {"free_bytes", static_cast<unsigned long long>(v.f_bavail) * v.f_frsize}};
  } else {
    sys["dev_shm"] = {{"error", "statvfs(/dev/shm) failed"}};
  }
  json heaps = json::array();
  if (DIR* d = ::opendir("/dev/dma_heap")) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") heaps.push_back(node_info("/dev/dma_heap/" + n));
    }
    ::closedir(d);
  }
  sys["dma_heap_nodes"] = heaps;
  sys["udmabuf"] = node_info("/dev/udmabuf");
  return sys;
}

Section probe_heap() {
  Section s{"heap", "failed", "", {}};
  auto t = et::TensorDyn::allocate(kProbeShape, et::DType::U8, {.memory = et::MemoryKind::Heap});
  if (!t) {
    s.detail = t.error().to_string();
    return s;
  }
  for (std::uint32_t seed : {1u, 2u}) {
    if (auto ok = write_pattern(*t, seed); !ok) {
      s.detail = "write: " + ok.error().to_string();
      return s;
    }
    if (auto ok = check_pattern(*t, seed); !ok) {
      s.detail = "read back: " + ok.error().to_string();
      return s;
    }
  }
  s.status = "ok";
  s.detail = text::format("{}: allocated {} B, pattern written and read back through maps", t->memory_detail(),
                         t->packed_bytes());
  return s;
}

// Allocates with `options` and runs the cross-process round trip.
Section probe_shared(const std::string& name, const et::AllocateOptions& options, const std::string& self_exe) {
  // A named POSIX shm object is shared by name; everything else travels with ipc::send.
  Section s{name, "failed", "", {}};
  auto status = et::backend_status(options.memory);
  s.fields["built"] = status.built;
  if (!status.available) {
    s.status = "unavailable";
    s.detail = status.detail;
    return s;
  }
  auto t = et::TensorDyn::allocate(kProbeShape, et::DType::U8, options);
  if (!t) {
    s.detail = t.error().to_string();
    return s;
  }
  s.fields["served_by"] = t->memory_detail();
  auto rt = cross_process_round_trip(*t, self_exe, options.shm_name);
  if (!rt) {
    s.detail = text::format("{}: round trip failed: {}", t->memory_detail(), rt.error().to_string());
    s.fields["round_trip"] = false;
    return s;
  }
  s.status = "ok";
  s.fields["round_trip"] = true;
  s.detail = text::format("{}: {}", t->memory_detail(), *rt);
  return s;
}

Section probe_named_shm(const std::string& self_exe) {
  std::string name = text::format("/edgetensor-info-{}", ::getpid());
  et::AllocateOptions o{.memory = et::MemoryKind::Shm, .shm_name = name};
  Section s = probe_shared("shm (named POSIX)", o, self_exe);
  if (s.status != "unavailable") {
    if (auto rm = et::shm::remove(name); !rm && s.status == "ok") {
      s.status = "failed";
      s.detail += "; remove: " + rm.error().to_string();
    }
  }
  return s;
}

// DMA-BUF: every heap node and udmabuf as the kernel shows them, which one serves, and a real
// cross-process round trip when one works.
Section probe_dmabuf(const std::string& self_exe) {
  auto st = et::dmabuf::default_allocator()->status();
  Section s = probe_shared("dmabuf", {.memory = et::MemoryKind::DmaBuf}, self_exe);
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
  return s;
}

// GL: a real headless EGL context (platform, vendor, renderer, GLES version) and a PBO round trip.
Section probe_gl() {
  auto p = gl_check();
  Section s{"gl_pbo", "unavailable", p.reason, {{"built", et::backend_status(et::MemoryKind::GlPbo).built}}};
  if (!p.available) return s;
  s.fields["platform"] = p.info.platform_detail;
  s.fields["egl_library"] = p.info.egl_library;
  s.fields["egl_vendor"] = p.info.egl_vendor;
  s.fields["vendor"] = p.info.vendor;
  s.fields["renderer"] = p.info.renderer;
  s.fields["gl_version"] = p.info.version;
  s.fields["pbo_round_trip"] = p.pbo_round_trip;
  s.status = p.pbo_round_trip ? "ok" : "failed";
  s.detail = text::format("{} | {} | {} | PBO: {}", p.info.platform_detail, p.info.renderer, p.info.version,
                         p.pbo_detail);
  return s;
}

// One CUDA round trip through cuda::map: pattern written on the CPU, copied device -> host through the
// tensor's device pointer, compared; then a device write (host -> device through the pointer) read back
// through a CPU map. Returns the path used, or the error.
et::Result<std::string> cuda_round_trip(et::MemoryKind kind) {
  ET_TRY_ASSIGN(auto t, et::TensorDyn::allocate({256, 1024}, et::DType::U8, {.memory = kind}));
  ET_TRY(write_pattern(t, 11));
  ET_TRY_ASSIGN(auto dev, et::cuda::map(t));
  std::vector<std::byte> host(dev.extent_bytes());
  ET_TRY(et::cuda::copy_device_to_host(host.data(), dev.device_ptr(), host.size()));
  for (std::size_t i = 0; i < host.size(); ++i)
    if (host[i] != std::byte{pattern_byte(i, 11)})
      return et::fail(et::ErrorCode::Internal, text::format("device read: byte {} differs", i));
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = std::byte{pattern_byte(i, 12)};
  ET_TRY(et::cuda::copy_host_to_device(dev.device_ptr(), host.data(), host.size()));
  ET_TRY(dev.wait());
  ET_TRY(check_pattern(t, 12));
  return std::string(et::cuda::cuda_path_name(dev.path()));
}

// CUDA: the runtime status (file, versions, devices, or exactly why not) and, with a device, which
// tensor paths worked in a real round trip.
Section probe_cuda() {
  const auto& st = et::cuda::status();
  Section s{"cuda", st.available ? "ok" : "unavailable", st.summary(), {}};
  s.fields["runtime_file"] = st.runtime_file;
  s.fields["runtime_version"] = et::cuda::version_string(st.runtime_version);
  s.fields["driver_version"] = st.driver_version == 0 ? "none" : et::cuda::version_string(st.driver_version);
  s.fields["device_count"] = st.device_count;
  s.fields["gl_interop"] = st.gl_interop;
  s.fields["dmabuf_handle_type"] = st.dmabuf_handle_type;
  s.fields["external_opaque_fd"] = st.external_opaque_fd;
  s.fields["unavailable_paths"] = st.unavailable_paths;
  s.fields["missing_required_symbols"] = st.missing_required_symbols;
  s.fields["missing_optional_symbols"] = st.missing_optional_symbols;
  s.fields["tried"] = st.tried;
  if (!st.error.empty()) s.fields["error"] = st.error;
  json devices = json::array();
  for (const auto& d : st.devices)
    devices.push_back({{"ordinal", d.ordinal}, {"name", d.name}, {"total_memory_bytes", d.total_memory_bytes},
                       {"compute_capability", text::format("{}.{}", d.compute_capability_major, d.compute_capability_minor)},
                       {"integrated", d.integrated}});
  s.fields["devices"] = devices;
  if (!st.available) return s;
  json paths = json::object();
  std::string worked;
  for (auto [kind, label] : {std::pair{et::MemoryKind::Heap, "heap"}, {et::MemoryKind::Shm, "shm"},
                             {et::MemoryKind::DmaBuf, "dmabuf"}}) {
    if (!et::backend_status(kind).available) continue;
    auto rt = cuda_round_trip(kind);
    paths[label] = rt ? json{{"ok", true}, {"path", *rt}} : json{{"ok", false}, {"error", rt.error().to_string()}};
    worked += text::format("; {}: {}", label, rt ? *rt + " ok" : "failed (" + rt.error().to_string() + ")");
  }
  // The GL path of CUDA: a PBO written by the CPU read through CUDA, and the reverse.
  auto gl = cuda_gl_round_trip();
  paths["gl_pbo"] = {{"ok", gl.ok}, {"detail", gl.detail}};
  s.fields["gl_interop"] = gl.ok;
  worked += text::format("; gl_pbo: {}", gl.ok ? "gl-buffer ok" : "failed (" + gl.detail + ")");
  s.fields["round_trips"] = paths;
  s.detail += worked;
  return s;
}

}  // namespace

Report run_info(const std::string& self_exe) {
  Report r;
  r.system = system_info();
  Section heap = probe_heap();
  r.heap_ok = heap.status == "ok";
  r.sections.push_back(heap);
  r.sections.push_back(probe_shared("shm (memfd)", {.memory = et::MemoryKind::Shm}, self_exe));
  r.sections.push_back(probe_named_shm(self_exe));
  r.sections.push_back(probe_dmabuf(self_exe));
  r.sections.push_back(probe_gl());
  r.sections.push_back(probe_cuda());
  auto automatic = et::backend_status(et::MemoryKind::Auto);
  r.system["auto_selection"] = automatic.detail;
  return r;
}

json to_json(const Report& report) {
  json j = {{"schema", kInfoSchema}, {"version", std::string(et::version())}, {"system", report.system}};
  json secs = json::array();
  for (const auto& s : report.sections) {
    json o = s.fields;
    o["name"] = s.name;
    o["status"] = s.status;
    o["detail"] = s.detail;
    secs.push_back(o);
  }
  j["sections"] = secs;
  return j;
}

std::string to_table(const Report& report) {
  std::string out = text::format("edgetensor {} — {}\n\n", et::version(), report.system.value("kernel", std::string("?")));
  out += text::format("{:<20} {:<12} {}\n", "backend", "status", "detail");
  out += text::format("{:-<20} {:-<12} {:-<50}\n", "", "", "");
  for (const auto& s : report.sections) out += text::format("{:<20} {:<12} {}\n", s.name, s.status, s.detail);
  out += "\nsystem\n";
  const json& sys = report.system;
  out += text::format("  page size          {} KiB ({}-bit process)\n", sys.value("page_size_bytes", 0LL) / 1024,
                      sys.value("process_bits", 0));
  if (sys.contains("dev_shm") && sys["dev_shm"].contains("size_bytes"))
    out += text::format("  /dev/shm           {:.1f} MiB total, {:.1f} MiB free\n",
                       sys["dev_shm"]["size_bytes"].get<double>() / 1048576.0,
                       sys["dev_shm"]["free_bytes"].get<double>() / 1048576.0);
  if (sys["dma_heap_nodes"].empty()) out += "  /dev/dma_heap      no heap nodes\n";
  for (const auto& h : sys["dma_heap_nodes"])
    out += text::format("  {:<18} {} uid {} gid {} {}{}\n", h["path"].get<std::string>(), h["mode"].get<std::string>(),
                       h["uid"].get<int>(), h["gid"].get<int>(), h["readable"].get<bool>() ? "r" : "-",
                       h["writable"].get<bool>() ? "w" : "-");
  const json& u = sys["udmabuf"];
  out += u["present"].get<bool>()
             ? text::format("  /dev/udmabuf       present, {} {}{}\n", u["mode"].get<std::string>(),
                           u["readable"].get<bool>() ? "r" : "-", u["writable"].get<bool>() ? "w" : "-")
             : "  /dev/udmabuf       absent\n";
  out += text::format("  auto selection     {}\n", sys.value("auto_selection", std::string("?")));
  return out;
}

}  // namespace edgetensor_cli
