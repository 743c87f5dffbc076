// SPDX-License-Identifier: Apache-2.0
// cuda::report() and the loader report, the usability gate every entry point passes, and CUDA error
// conversion.
#include <unistd.h>

#include <mutex>

#include "text/format.h"

#include "cuda/cuda_internal.h"
#include "cuda/loader_report.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace cuda {
namespace detail {
namespace {

using CuDeviceGetNameFn = CuResult (*)(char*, int, int);
using CuDeviceTotalMemFn = CuResult (*)(std::size_t*, int);

// Both reports, computed together once per process.
struct Reports {
  RuntimeReport runtime;
  LoaderReport loader;
};

Reports compute_reports() {
  Reports out;
  RuntimeReport& s = out.runtime;
  LoaderReport& l = out.loader;
  const LoadInfo& info = load_info();
  l.disabled = info.disabled;
  l.from_env = info.from_env;
  s.runtime_file = info.file;
  l.tried = info.tried;
  l.missing_required_symbols = info.missing_required;
  l.missing_optional_symbols = info.missing_optional;
  const CudaRuntimeApi* api = runtime();
  if (!api) {
    s.error = info.error;
    return out;
  }
  l.loaded = true;
  l.driver_entry_points = api->has_driver_entry_points();
  l.gl_interop = api->has_gl_interop();
  if (in_forked_child()) {
    s.forked_child = true;
    s.error = "this process is a fork() child of the process that loaded CUDA; CUDA does not survive fork";
    return out;
  }
  CudaError e = api->cudaRuntimeGetVersion(&s.runtime_version);
  if (e != kCudaSuccess) {
    s.error = "cudaRuntimeGetVersion: " + describe_error(*api, e);
    return out;
  }
  e = api->cudaDriverGetVersion(&s.driver_version);
  if (e != kCudaSuccess) {
    s.error = "cudaDriverGetVersion: " + describe_error(*api, e);
    return out;
  }
  int count = 0;
  e = api->cudaGetDeviceCount(&count);
  if (e != kCudaSuccess) {
    s.error = "cudaGetDeviceCount: " + describe_error(*api, e);
    if (s.driver_version == 0) s.error += " (cudaDriverGetVersion reports 0: no CUDA driver is installed)";
    return out;
  }
  s.device_count = count;
  if (s.driver_version == 0) {
    s.error = "no CUDA driver (cudaDriverGetVersion reports 0)";
    return out;
  }
  if (count <= 0) {
    s.error = "the CUDA driver reports no device (cudaGetDeviceCount = 0)";
    return out;
  }
  auto get_name = reinterpret_cast<CuDeviceGetNameFn>(driver_entry_point(*api, kCuDeviceGetName, s.driver_version, nullptr));
  auto total_mem =
      reinterpret_cast<CuDeviceTotalMemFn>(driver_entry_point(*api, kCuDeviceTotalMem, s.driver_version, nullptr));
  // Each path is gated on what it needs: host registration, streams and copies on the core symbols
  // only; the runtime's OpaqueFd import also on a descriptor table for this major (descriptor_layout.h).
  const DmaBufDriver& dmabuf = dmabuf_driver(*api, s.driver_version);
  l.dmabuf_handle_type = dmabuf.ok;
  l.external_opaque_fd = layout_for_runtime(s.runtime_version) != nullptr;
  if (!l.external_opaque_fd)
    s.unavailable_paths.push_back(
        text::format("{}: CUDA runtime {} has no external-memory descriptor table here (known: 11.x-13.x)",
                     cuda_path_name(CudaPath::ExternalOpaqueFd), version_string(s.runtime_version)));
  if (!dmabuf.ok)
    s.unavailable_paths.push_back(text::format("{}: {}", cuda_path_name(CudaPath::ExternalDmaBuf), dmabuf.reason));
  if (!l.gl_interop)
    s.unavailable_paths.push_back(
        text::format("{}: the runtime lacks the GL-interop symbols", cuda_path_name(CudaPath::GlBuffer)));
  for (int d = 0; d < count; ++d) {
    DeviceInfo di;
    di.ordinal = d;
    int v = 0;
    if (api->cudaDeviceGetAttribute(&v, kDevAttrComputeCapabilityMajor, d) == kCudaSuccess) di.compute_capability_major = v;
    if (api->cudaDeviceGetAttribute(&v, kDevAttrComputeCapabilityMinor, d) == kCudaSuccess) di.compute_capability_minor = v;
    if (api->cudaDeviceGetAttribute(&v, kDevAttrIntegrated, d) == kCudaSuccess) di.integrated = v != 0;
    if (api->cudaDeviceGetAttribute(&v, kDevAttrCanMapHostMemory, d) == kCudaSuccess) di.can_map_host_memory = v != 0;
    char name[256] = {};
    if (get_name && get_name(name, static_cast<int>(sizeof name - 1), d) == 0) di.name = name;
    std::size_t bytes = 0;
    if (total_mem && total_mem(&bytes, d) == 0) di.total_memory_bytes = bytes;
    s.devices.push_back(std::move(di));
  }
  s.available = true;
  return out;
}

const Reports& cached_reports() {
  static const Reports r = [] {
    try {
      return compute_reports();
    } catch (...) {
      Reports f;
      f.runtime.error = "CUDA report: out of memory";
      return f;
    }
  }();
  return r;
}

}  // namespace

const RuntimeReport& cached_report() { return cached_reports().runtime; }

const LoaderReport& loader_report() { return cached_reports().loader; }

ErrorCode code_for_cuda_error(CudaError e) noexcept {
  switch (e) {
    case kCudaErrorInvalidValue: return ErrorCode::InvalidArgument;
    case 17: return ErrorCode::InvalidArgument;   // cudaErrorInvalidDevicePointer
    case 101: return ErrorCode::InvalidArgument;  // cudaErrorInvalidDevice
    case 400: return ErrorCode::InvalidArgument;  // cudaErrorInvalidResourceHandle
    case kCudaErrorMemoryAllocation: return ErrorCode::OutOfMemory;
    case kCudaErrorInitializationError:
    case kCudaErrorInsufficientDriver:
    case kCudaErrorNoDevice:
    case 34:   // cudaErrorStubLibrary
    case 46:   // cudaErrorDevicesUnavailable
    case 803:  // cudaErrorSystemDriverMismatch
      return ErrorCode::Unavailable;
    case kCudaErrorHostMemoryAlreadyRegistered: return ErrorCode::AlreadyExists;
    case kCudaErrorNotSupported: return ErrorCode::Unsupported;
    default: return ErrorCode::Internal;
  }
}

Error cuda_error(const CudaRuntimeApi& api, CudaError e, std::string_view call) {
  return Error(code_for_cuda_error(e), text::format("{}: {}", call, describe_error(api, e)));
}

Result<const CudaRuntimeApi*> usable(std::string_view what) {
  const CudaRuntimeApi* api = runtime();
  if (!api) return fail(ErrorCode::Unavailable, text::format("{}: CUDA unavailable: {}", what, load_info().error));
  if (in_forked_child())
    return fail(ErrorCode::FailedPrecondition,
                text::format("{}: refused in process {}, a fork() child of process {} that loaded CUDA "
                            "(CUDA state does not survive fork)",
                            what, getpid(), load_info().load_pid));
  const RuntimeReport& s = cached_report();
  if (!s.available) return fail(ErrorCode::Unavailable, text::format("{}: CUDA unavailable: {}", what, s.error));
  return api;
}

Result<int> resolve_device(const CudaRuntimeApi& api, int requested) {
  if (requested >= 0) {
    const int count = cached_report().device_count;
    if (requested >= count)
      return fail(ErrorCode::InvalidArgument, text::format("CUDA device {} does not exist ({} device(s))", requested, count));
    return requested;
  }
  int d = 0;
  CudaError e = api.cudaGetDevice(&d);
  if (e != kCudaSuccess) return fail(cuda_error(api, e, "cudaGetDevice"));
  return d;
}

Result<DeviceGuard> DeviceGuard::enter(const CudaRuntimeApi& api, int device) {
  int previous = 0;
  CudaError e = api.cudaGetDevice(&previous);
  if (e != kCudaSuccess) return fail(cuda_error(api, e, "cudaGetDevice"));
  if (previous == device) return DeviceGuard(nullptr, previous);
  e = api.cudaSetDevice(device);
  if (e != kCudaSuccess) return fail(cuda_error(api, e, text::format("cudaSetDevice({})", device)));
  return DeviceGuard(&api, previous);
}

DeviceGuard::~DeviceGuard() {
  if (api_) (void)api_->cudaSetDevice(previous_);
}

}  // namespace detail

std::string version_string(int v) {
  if (v <= 0) return "none";
  return text::format("{}.{}", v / 1000, (v % 1000) / 10);
}

std::string RuntimeReport::summary() const {
  // A runtime that answered has a version; before that, the error is the whole story.
  if (runtime_version == 0) return "CUDA unavailable: " + (error.empty() ? std::string("no runtime") : error);
  std::string out = text::format("CUDA {} runtime ({}), driver {}, {} device(s)", version_string(runtime_version), runtime_file,
                    version_string(driver_version), device_count);
  for (const auto& d : devices)
    out += text::format("; #{} {} ({:.1f} GiB, sm_{}{}{})", d.ordinal, d.name.empty() ? "(name unknown)" : d.name,
                       static_cast<double>(d.total_memory_bytes) / (1024.0 * 1024.0 * 1024.0),
                       d.compute_capability_major, d.compute_capability_minor, d.integrated ? ", integrated" : "");
  out += available ? ": available" : ": unavailable: " + error;
  return out;
}

RuntimeReport report() {
  try {
    RuntimeReport s = detail::cached_report();
    // The fork fields follow the calling process, not the one that computed the cache.
    if (detail::in_forked_child() && !s.forked_child) {
      s.forked_child = true;
      s.available = false;
      s.error = "this process is a fork() child of the process that loaded CUDA; CUDA does not survive fork";
    }
    return s;
  } catch (...) {
    RuntimeReport s;
    s.error = "CUDA report: out of memory";
    return s;
  }
}

bool available() {
  return detail::cached_report().available && !detail::in_forked_child();
}

}  // namespace cuda
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
