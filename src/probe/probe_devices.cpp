// SPDX-License-Identifier: Apache-2.0
// probe(): the device sections (a real GL context with a PBO; the CUDA runtime and its round trips).
#include <edgetensor/cuda.h>
#include <edgetensor/memory.h>

#include <utility>
#include <vector>

#include "cuda/loader_report.h"
#include "text/format.h"

#include "probe/gl_checks.h"
#include "probe/pattern.h"
#include "probe/probe_sections.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

using nlohmann::json;

namespace {

// One CUDA round trip through cuda::map: pattern written on the CPU, copied device -> host through the
// tensor's device pointer, compared; then a device write (host -> device through the pointer) read back
// through a CPU map. Returns the path used, or the error.
Result<std::string> cuda_round_trip(MemoryKind kind) {
  ET_TRY_ASSIGN(auto t, TensorDyn::allocate({256, 1024}, DType::U8, {.memory = kind}));
  ET_TRY(write_probe_pattern(t, 11));
  ET_TRY_ASSIGN(auto dev, cuda::map(t));
  std::vector<std::byte> host(dev.extent_bytes());
  ET_TRY(cuda::copy_device_to_host(host.data(), dev.device_ptr(), host.size()));
  for (std::size_t i = 0; i < host.size(); ++i)
    if (host[i] != std::byte{probe_pattern_byte(i, 11)})
      return fail(ErrorCode::Internal, text::format("device read: byte {} differs", i));
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = std::byte{probe_pattern_byte(i, 12)};
  ET_TRY(cuda::copy_host_to_device(dev.device_ptr(), host.data(), host.size()));
  ET_TRY(dev.wait());
  ET_TRY(check_probe_pattern(t, 12));
  return std::string(cuda::cuda_path_name(dev.path()));
}

}  // namespace

// GL: a real headless EGL context (platform, vendor, renderer, GLES version) and a PBO round trip.
ProbeDraft probe_gl() {
  auto p = gl_check();
  ProbeDraft s{"gl_pbo", ProbeStatus::Unavailable, p.reason, {{"built", backend_status(MemoryKind::GlPbo).built}}};
  if (!p.available) return s;
  s.fields["platform"] = p.info.platform_detail;
  s.fields["egl_library"] = p.info.egl_library;
  s.fields["egl_vendor"] = p.info.egl_vendor;
  s.fields["vendor"] = p.info.vendor;
  s.fields["renderer"] = p.info.renderer;
  s.fields["gl_version"] = p.info.version;
  s.fields["pbo_round_trip"] = p.pbo_round_trip;
  s.status = p.pbo_round_trip ? ProbeStatus::Ok : ProbeStatus::Failed;
  s.detail = text::format("{} | {} | {} | PBO: {}", p.info.platform_detail, p.info.renderer, p.info.version,
                          p.pbo_detail);
  return s;
}

// CUDA: the runtime's report (file, versions, devices, or exactly why not), the loader's diagnostics
// and, with a device, which tensor paths worked in a real round trip.
ProbeDraft probe_cuda() {
  const cuda::RuntimeReport st = cuda::report();
  const cuda::detail::LoaderReport& loader = cuda::detail::loader_report();
  ProbeDraft s{"cuda", st.available ? ProbeStatus::Ok : ProbeStatus::Unavailable, st.summary()};
  s.fields["runtime_file"] = st.runtime_file;
  s.fields["runtime_version"] = cuda::version_string(st.runtime_version);
  s.fields["driver_version"] = st.driver_version == 0 ? "none" : cuda::version_string(st.driver_version);
  s.fields["device_count"] = st.device_count;
  s.fields["gl_interop"] = loader.gl_interop;
  s.fields["dmabuf_handle_type"] = loader.dmabuf_handle_type;
  s.fields["external_opaque_fd"] = loader.external_opaque_fd;
  s.fields["unavailable_paths"] = st.unavailable_paths;
  s.fields["missing_required_symbols"] = loader.missing_required_symbols;
  s.fields["missing_optional_symbols"] = loader.missing_optional_symbols;
  s.fields["tried"] = loader.tried;
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
  for (auto [kind, label] : {std::pair{MemoryKind::Heap, "heap"}, {MemoryKind::Shm, "shm"},
                             {MemoryKind::DmaBuf, "dmabuf"}}) {
    if (!backend_status(kind).available) continue;
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

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
