// SPDX-License-Identifier: Apache-2.0
// CUDA: the runtime's report, streams and device views of tensors (C++ cuda::, include/edgetensor/cuda.h).
#include "capi/capi_support.h"

#include <edgetensor/cuda.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <mutex>
#include <set>
#include <string>

struct et_cuda_stream {
  std::atomic<std::uint32_t> refs{1};
  edgetensor::cuda::Stream stream;
};
struct et_cuda_stream_reference {
  void operator()(et_cuda_stream* stream) const noexcept { edgetensor::capi::release_handle(stream); }
};
struct et_cuda_map {
  std::atomic<std::uint32_t> refs{1};
  // CudaMap::record creates and reuses its event, wait reads it: one of them at a time on a handle.
  mutable std::mutex mutex;
  // The options' stream (GL: the unmap is issued on it), kept alive by the map: declared first, so it goes
  // after the map (members die in reverse order).
  std::unique_ptr<et_cuda_stream, et_cuda_stream_reference> options_stream;
  edgetensor::cuda::CudaMap map;
};

using namespace edgetensor;
using namespace edgetensor::capi;

namespace {

// The report's strings for C callers, which the header gives static storage. The report is computed once per
// process, so only a few distinct texts ever come here (a fork child adds its own error and summary). Never
// freed, so that a pointer stays valid in an atexit handler too.
const char* keep_for_process(const std::string& text) {
  static auto* mutex = new std::mutex;
  static auto* kept = new std::set<std::string, std::less<>>;
  std::lock_guard lock(*mutex);
  return kept->insert(text).first->c_str();
}

std::string joined_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) {
    if (!out.empty()) out += '\n';
    out += line;
  }
  return out;
}

// The C++ MapOptions of a C struct (NULL: defaults); its stream, if any, into *stream (not yet retained).
Result<cuda::MapOptions> cuda_map_options(const et_cuda_map_options* user, const et_cuda_stream** stream) {
  ET_TRY_ASSIGN(auto c, read_options(user, ET_CUDA_MAP_OPTIONS_SIZE_VER0, "et_cuda_map_options"));
  cuda::MapOptions o;
  if (c.use_device > 1)
    return fail(ErrorCode::InvalidArgument,
                "et_cuda_map_options.use_device " + std::to_string(c.use_device) + " is not 0 or 1");
  if (c.reserved != 0)
    return fail(ErrorCode::InvalidArgument,
                "et_cuda_map_options.reserved is " + std::to_string(c.reserved) + ", must be zero");
  if (c.use_device == 1) {
    if (c.device < 0)
      return fail(ErrorCode::InvalidArgument, "et_cuda_map_options.device " + std::to_string(c.device) +
                                                  " is negative (use_device 0 takes the current one)");
    o.device = c.device;
  }
  *stream = c.stream;
  if (c.stream != nullptr) o.stream = &c.stream->stream;
  return o;
}

// The C++ teardown bound of a C struct (NULL: the default).
Result<std::chrono::milliseconds> teardown_timeout(const et_cuda_record_options* user) {
  ET_TRY_ASSIGN(auto c, read_options(user, ET_CUDA_RECORD_OPTIONS_SIZE_VER0, "et_cuda_record_options"));
  if (c.use_teardown_timeout > 1)
    return fail(ErrorCode::InvalidArgument, "et_cuda_record_options.use_teardown_timeout " +
                                                std::to_string(c.use_teardown_timeout) + " is not 0 or 1");
  if (c.use_teardown_timeout == 0) return cuda::kDefaultTeardownTimeout;
  return wait_from_ns(c.teardown_timeout_ns, std::chrono::milliseconds(-1));  // negative: no bound in C++ too
}

}  // namespace

extern "C" {

et_status et_cuda_get_report(et_cuda_report* report) {
  return guarded([&]() -> Result<void> {
    if (report == nullptr) return null_argument("et_cuda_get_report", "report");
    ET_TRY(check_struct_size(declared_struct_size(report), ET_CUDA_REPORT_SIZE_VER0, "et_cuda_report"));
    const cuda::RuntimeReport r = cuda::report();
    et_cuda_report v{};
    v.struct_size = sizeof v;
    v.available = r.available ? 1 : 0;
    v.runtime_version = r.runtime_version;
    v.driver_version = r.driver_version;
    v.device_count = r.device_count;
    v.forked_child = r.forked_child ? 1 : 0;
    v.error = keep_for_process(r.error);
    v.runtime_file = keep_for_process(r.runtime_file);
    v.unavailable_paths = keep_for_process(joined_lines(r.unavailable_paths));
    v.summary = keep_for_process(r.summary());
    return write_output(report, v, ET_CUDA_REPORT_SIZE_VER0, "et_cuda_report");
  });
}

uint32_t et_cuda_available(void) {
  const int saved = errno;  // the first call loads the runtime (dlopen)
  const bool available = cuda::available();
  errno = saved;
  return available ? 1 : 0;
}

et_status et_cuda_get_devices(et_cuda_device_info* infos, uint32_t capacity, uint32_t* out_count) {
  return guarded([&]() -> Result<void> {
    constexpr const char* kFn = "et_cuda_get_devices";
    if (out_count == nullptr) return null_argument(kFn, "out_count");
    if (capacity > 0 && infos == nullptr) return null_argument(kFn, "infos (capacity " + std::to_string(capacity) + ")");
    // The caller's element size is the stride: an older or newer caller's array steps by its own sizeof.
    const std::uint32_t stride = capacity > 0 ? declared_struct_size(infos) : 0;
    if (capacity > 0) ET_TRY(check_struct_size(stride, ET_CUDA_DEVICE_INFO_SIZE_VER0, "et_cuda_device_info"));
    const cuda::RuntimeReport r = cuda::report();
    for (std::size_t i = 0; i < r.devices.size() && i < capacity; ++i) {
      const cuda::DeviceInfo& d = r.devices[i];
      et_cuda_device_info v{};
      v.struct_size = sizeof v;
      v.ordinal = d.ordinal;
      v.total_memory_bytes = d.total_memory_bytes;
      v.compute_capability_major = d.compute_capability_major;
      v.compute_capability_minor = d.compute_capability_minor;
      v.integrated = d.integrated ? 1 : 0;
      v.can_map_host_memory = d.can_map_host_memory ? 1 : 0;
      // The report reads at most 255 bytes (cuDeviceGetName's buffer); truncated here all the same.
      const std::size_t n = std::min(d.name.size(), sizeof v.name - 1);
      std::memcpy(v.name, d.name.data(), n);
      auto* element = reinterpret_cast<unsigned char*>(infos) + i * stride;
      std::memcpy(element, &stride, sizeof stride);  // the library sets struct_size past the first element
      ET_TRY(copy_struct_to_caller(element, stride, ET_CUDA_DEVICE_INFO_SIZE_VER0, &v, sizeof v, "et_cuda_device_info"));
    }
    *out_count = static_cast<uint32_t>(r.devices.size());
    return {};
  });
}

const char* et_cuda_path_name(int32_t path) {
  if (path < 0 || path > static_cast<int32_t>(cuda::CudaPath::GlBuffer)) return "unknown";
  return cuda::cuda_path_name(static_cast<cuda::CudaPath>(path)).data();  // literals: NUL-terminated
}

et_status et_cuda_stream_create(et_cuda_stream** out) {
  return guarded([&]() -> Result<void> {
    if (out == nullptr) return null_argument("et_cuda_stream_create", "out");
    *out = nullptr;
    ET_TRY_ASSIGN(auto stream, cuda::Stream::create());
    *out = new et_cuda_stream{.stream = std::move(stream)};
    return {};
  });
}

et_cuda_stream* et_cuda_stream_retain(et_cuda_stream* stream) { return retain_handle(stream); }
void et_cuda_stream_release(et_cuda_stream* stream) { release_handle_keep_errno(stream); }

et_status et_cuda_stream_synchronize(const et_cuda_stream* stream) {
  return guarded([&]() -> Result<void> {
    if (stream == nullptr) return null_argument("et_cuda_stream_synchronize", "stream");
    return stream->stream.synchronize();
  });
}

et_status et_cuda_stream_get_native_handle(const et_cuda_stream* stream, void** out_native_handle) {
  return guarded([&]() -> Result<void> {
    constexpr const char* kFn = "et_cuda_stream_get_native_handle";
    if (stream == nullptr) return null_argument(kFn, "stream");
    if (out_native_handle == nullptr) return null_argument(kFn, "out_native_handle");
    *out_native_handle = stream->stream.native_handle();
    return {};
  });
}

et_status et_tensor_cuda_map(const et_tensor* tensor, const et_cuda_map_options* options, et_cuda_map** out_map,
                             void** out_device_ptr, size_t* out_size) {
  return guarded([&]() -> Result<void> {
    constexpr const char* kFn = "et_tensor_cuda_map";
    if (out_map == nullptr) return null_argument(kFn, "out_map");
    *out_map = nullptr;
    if (tensor == nullptr) return null_argument(kFn, "tensor");
    if (out_device_ptr == nullptr) return null_argument(kFn, "out_device_ptr");
    if (out_size == nullptr) return null_argument(kFn, "out_size");
    const et_cuda_stream* stream = nullptr;
    ET_TRY_ASSIGN(auto o, cuda_map_options(options, &stream));
    auto handle = std::make_unique<et_cuda_map>();
    // Retained before the map exists, released after it is gone (the GL path unmaps on it).
    handle->options_stream.reset(retain_handle(const_cast<et_cuda_stream*>(stream)));
    ET_TRY_ASSIGN(handle->map, cuda::map(tensor->tensor, o));
    *out_device_ptr = handle->map.device_ptr();
    *out_size = handle->map.extent_bytes();
    *out_map = handle.release();
    return {};
  });
}

et_cuda_map* et_cuda_map_retain(et_cuda_map* map) { return retain_handle(map); }
void et_cuda_map_release(et_cuda_map* map) { release_handle_keep_errno(map); }

et_status et_cuda_map_get_info(const et_cuda_map* map, et_cuda_map_info* info) {
  return guarded([&]() -> Result<void> {
    if (map == nullptr) return null_argument("et_cuda_map_get_info", "map");
    if (info == nullptr) return null_argument("et_cuda_map_get_info", "info");
    et_cuda_map_info v{};
    v.struct_size = sizeof v;
    v.path = static_cast<int32_t>(map->map.path());
    v.device = map->map.device();
    v.extent_bytes = map->map.extent_bytes();
    v.device_ptr = map->map.device_ptr();
    return write_output(info, v, ET_CUDA_MAP_INFO_SIZE_VER0, "et_cuda_map_info");
  });
}

et_status et_cuda_map_record(et_cuda_map* map, const et_cuda_stream* stream, const et_cuda_record_options* options) {
  return guarded([&]() -> Result<void> {
    if (map == nullptr) return null_argument("et_cuda_map_record", "map");
    if (stream == nullptr) return null_argument("et_cuda_map_record", "stream");
    ET_TRY_ASSIGN(auto bound, teardown_timeout(options));
    std::lock_guard lock(map->mutex);
    return map->map.record(stream->stream, bound);
  });
}

et_status et_cuda_map_wait(const et_cuda_map* map) {
  return guarded([&]() -> Result<void> {
    if (map == nullptr) return null_argument("et_cuda_map_wait", "map");
    std::lock_guard lock(map->mutex);
    return map->map.wait();
  });
}

}  // extern "C"
