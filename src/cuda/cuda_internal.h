// SPDX-License-Identifier: Apache-2.0
// Internals shared by the CUDA files: the usability gate, CUDA error conversion, the per-storage
// handle types and the storage-level map used by cuda::map (tests call it with hand-made storages).
#pragma once

#include <edgetensor/cuda.h>

#include <sys/types.h>

#include <memory>
#include <string>
#include <string_view>

#include "core/storage.h"
#include "cuda/cuda_runtime_api.h"
#include "cuda/descriptor_layout.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace cuda {
namespace detail {

/// The runtime table when CUDA may be called from here: fails fast (no CUDA call) when the runtime
/// is not loaded (Unavailable), in a fork child (FailedPrecondition) or when report() found it
/// unusable (Unavailable, with the reason). `what` names the caller's operation.
Result<const CudaRuntimeApi*> usable(std::string_view what);

/// Our Error for a CUDA error: "<call>: <name> (<n>): <text>", code mapped from the CUDA error.
Error cuda_error(const CudaRuntimeApi& api, CudaError e, std::string_view call);
ErrorCode code_for_cuda_error(CudaError e) noexcept;

/// The report computed once per process (no fork adjustment).
const RuntimeReport& cached_report();

/// The device to use: `requested` (>= 0) or the calling thread's current device.
Result<int> resolve_device(const CudaRuntimeApi& api, int requested);

/// Makes `device` current for the guard's scope and restores the previous one.
class DeviceGuard {
 public:
  static Result<DeviceGuard> enter(const CudaRuntimeApi& api, int device);
  DeviceGuard(DeviceGuard&& o) noexcept : api_(o.api_), previous_(o.previous_) { o.api_ = nullptr; }
  DeviceGuard& operator=(DeviceGuard&&) = delete;
  ~DeviceGuard();

 private:
  DeviceGuard(const CudaRuntimeApi* api, int previous) : api_(api), previous_(previous) {}
  const CudaRuntimeApi* api_;  // null = nothing to restore
  int previous_;
};

/// The CUDA handle attached to one Storage (its DeviceHandle slot). Destroyed before the Backing
/// frees the memory. begin_map/end_map bracket each CudaMap (a GL buffer maps per view; the other
/// paths are persistently mapped and do nothing there).
class CudaHandle : public edgetensor::detail::DeviceHandle {
 public:
  virtual CudaPath path() const noexcept = 0;
  virtual int device() const noexcept = 0;
  /// Device address of byte 0 of the storage, valid while the handle lives.
  virtual void* base() const noexcept = 0;
  /// `stream` is MapOptions::stream's cudaStream_t (null = default stream).
  virtual Result<void*> begin_map(CudaStream /*stream*/) { return base(); }
  virtual void end_map(CudaStream /*stream*/) noexcept {}
};

/// The CUDA-GL handle of a GL PBO storage (src/cuda/cuda_gl.cpp; Unsupported when built without EGL).
Result<std::unique_ptr<edgetensor::detail::DeviceHandle>> make_gl_handle(const CudaRuntimeApi& api,
                                                                          edgetensor::detail::Storage& storage,
                                                                          int device);

/// The driver functions of the DMA-BUF path (cuda.h 13.0 signatures, requested at the ABI versions of
/// cuda_runtime_api.h), looked up once per process. `ok` when the four the path needs are there.
struct DmaBufDriver {
  CuResult (*import)(void**, const void*) = nullptr;                         // cuImportExternalMemory
  CuResult (*get_mapped_buffer)(CuDevicePtr*, void*, const void*) = nullptr;  // cuExternalMemoryGetMappedBuffer
  CuResult (*mem_free)(CuDevicePtr) = nullptr;                                // cuMemFree_v2
  CuResult (*destroy)(void*) = nullptr;                                       // cuDestroyExternalMemory
  CuResult (*get_error_name)(CuResult, const char**) = nullptr;               // cuGetErrorName
  CuResult (*get_error_string)(CuResult, const char**) = nullptr;             // cuGetErrorString
  bool ok = false;
  std::string reason;  // why not ok
};
/// The process's DmaBufDriver (the first call's arguments are the ones used: report() makes it).
const DmaBufDriver& dmabuf_driver(const CudaRuntimeApi& api, int driver_version);

/// One imported external-memory object mapped whole (runtime OpaqueFd path or driver DMA-BUF path).
class ExternalImport {
 public:
  /// Imports a dup of `borrowed_fd` (closed here if the import fails; CUDA's after success).
  static Result<std::unique_ptr<ExternalImport>> create(const CudaRuntimeApi& api, int borrowed_fd,
                                                        ExternalMemoryHandleType type, std::size_t buffer_bytes,
                                                        bool dedicated, int device);
  ~ExternalImport();
  ExternalImport(const ExternalImport&) = delete;
  ExternalImport& operator=(const ExternalImport&) = delete;

  void* device_ptr() const noexcept { return ptr_; }
  std::size_t buffer_bytes() const noexcept { return buffer_bytes_; }
  ExternalMemoryHandleType type() const noexcept { return type_; }
  int device() const noexcept { return device_; }

 private:
  ExternalImport() = default;
  const CudaRuntimeApi* api_ = nullptr;
  const DmaBufDriver* driver_ = nullptr;  // set on the DMA-BUF path: teardown uses the driver API
  void* ext_ = nullptr;                // cudaExternalMemory_t / CUexternalMemory
  void* ptr_ = nullptr;
  std::size_t buffer_bytes_ = 0;
  ExternalMemoryHandleType type_ = ExternalMemoryHandleType::OpaqueFd;
  int device_ = 0;
  edgetensor::detail::ProcessToken process_ = 0;  // core/process.h: skip CUDA in a fork child
};

/// What CudaMap::event_ points at (owned by the map): the event record() made and the teardown bound
/// of the work it marks, handed to the storage (a DeviceFence) when the map is released.
struct RecordedEvent {
  CudaEvent event = nullptr;
  std::chrono::milliseconds teardown_timeout = kDefaultTeardownTimeout;
};

/// cuda::map on a storage: `offset_bytes`/`extent_bytes` locate the view inside it.
Result<CudaMap> map_storage(const std::shared_ptr<edgetensor::detail::Storage>& storage, std::size_t offset_bytes,
                            std::size_t extent_bytes, const MapOptions& options);

}  // namespace detail
}  // namespace cuda
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
