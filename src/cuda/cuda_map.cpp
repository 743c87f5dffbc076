// SPDX-License-Identifier: Apache-2.0
// Device views of storages: the per-storage CUDA handle (host registration of heap/shm, external-memory
// import of DMA-BUF, CUDA-GL for PBOs), cuda::map and CudaMap.
#include <unistd.h>

#include <new>

#include "text/format.h"

#include "base/log_internal.h"
#include "cuda/cuda_internal.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace cuda {

using edgetensor::detail::DeviceHandle;
using edgetensor::detail::Storage;
using edgetensor::detail::log;

namespace detail {

namespace {

// ---- Per-storage handles ------------------------------------------------------------------------
class HostRegistration final : public CudaHandle {
 public:
  static Result<std::unique_ptr<DeviceHandle>> create(const CudaRuntimeApi& api, Storage& storage, int device) {
    // Heap and shm keep one persistent CPU mapping for the backing's whole life (unmapped only when
    // the Backing dies, which is after this handle): register its address; no CPU map is opened.
    ET_TRY_ASSIGN(std::byte* host, storage.cpu_address());
    const std::size_t size = storage.buffer_bytes();
    const bool ro = storage.backing().read_only();
    unsigned flags = kHostRegisterMapped | kHostRegisterPortable | (ro ? kHostRegisterReadOnly : 0u);
    ET_TRY_ASSIGN(auto guard, DeviceGuard::enter(api, device));
    CudaError e = api.cudaHostRegister(host, size, flags);
    if (e != kCudaSuccess)
      return fail(cuda_error(api, e, text::format("cudaHostRegister({}, {} B, flags {:#x}) of {} storage ({})",
                                                 static_cast<void*>(host), size, flags,
                                                 memory_kind_name(storage.kind()), storage.backing().detail())));
    void* dptr = nullptr;
    e = api.cudaHostGetDevicePointer(&dptr, host, 0);
    if (e != kCudaSuccess) {
      Error err = cuda_error(api, e, text::format("cudaHostGetDevicePointer({})", static_cast<void*>(host)));
      (void)api.cudaHostUnregister(host);
      return fail(std::move(err));
    }
    return std::unique_ptr<DeviceHandle>(new HostRegistration(api, host, dptr, device));
  }
  ~HostRegistration() override {
    if (edgetensor::detail::forked_since(process_)) return;
    CudaError e = api_.cudaHostUnregister(host_);
    if (e != kCudaSuccess) log(LogLevel::Warning, "cudaHostUnregister({}) failed: {}", host_, describe_error(api_, e));
  }
  CudaPath path() const noexcept override { return CudaPath::HostRegistered; }
  int device() const noexcept override { return device_; }
  void* base() const noexcept override { return device_ptr_; }

 private:
  HostRegistration(const CudaRuntimeApi& api, void* host, void* dptr, int device)
      : api_(api), host_(host), device_ptr_(dptr), device_(device), process_(edgetensor::detail::process_token()) {}
  const CudaRuntimeApi& api_;
  void* host_;
  void* device_ptr_;
  int device_;
  edgetensor::detail::ProcessToken process_;
};

class ExternalHandle final : public CudaHandle {
 public:
  explicit ExternalHandle(std::unique_ptr<ExternalImport> imp) : imp_(std::move(imp)) {}
  CudaPath path() const noexcept override {
    return imp_->type() == ExternalMemoryHandleType::DmaBufFd ? CudaPath::ExternalDmaBuf : CudaPath::ExternalOpaqueFd;
  }
  int device() const noexcept override { return imp_->device(); }
  void* base() const noexcept override { return imp_->device_ptr(); }

 private:
  std::unique_ptr<ExternalImport> imp_;
};

// The recorded work of a released CudaMap, kept by its storage: a pool reuses the buffer, and the
// storage frees it, only once cudaEventQuery says the event completed (pool.h). Owns the event.
class EventFence final : public edgetensor::detail::DeviceFence {
 public:
  EventFence(const CudaRuntimeApi& api, CudaEvent event, std::chrono::milliseconds teardown_timeout)
      : api_(api), event_(event), teardown_timeout_(teardown_timeout), process_(edgetensor::detail::process_token()) {}
  ~EventFence() override {
    if (edgetensor::detail::forked_since(process_)) return;
    CudaError e = api_.cudaEventDestroy(event_);
    if (e != kCudaSuccess) log(LogLevel::Warning, "cudaEventDestroy failed: {}", describe_error(api_, e));
  }
  bool complete() noexcept override {
    if (edgetensor::detail::forked_since(process_)) return true;  // no CUDA in a fork child
    CudaError e = api_.cudaEventQuery(event_);
    if (e == kCudaErrorNotReady) return false;
    if (e != kCudaSuccess)
      log(LogLevel::Warning, "cudaEventQuery of a buffer's recorded work failed: {}; the work counts as done",
          describe_error(api_, e));
    return true;
  }
  std::chrono::milliseconds teardown_timeout() const noexcept override { return teardown_timeout_; }

 private:
  const CudaRuntimeApi& api_;
  CudaEvent event_;
  std::chrono::milliseconds teardown_timeout_;
  edgetensor::detail::ProcessToken process_;
};

Result<std::unique_ptr<DeviceHandle>> import_dmabuf_storage(const CudaRuntimeApi& api, Storage& storage, int device) {
  const int fd = storage.backing().fd();
  const std::size_t size = storage.buffer_bytes();
  if (fd < 0)
    return fail(ErrorCode::Unsupported,
                text::format("cuda::map: dmabuf storage ({}) has no fd to import", storage.backing().detail()));
  std::string dmabuf_reason, opaque_reason;
  auto a = ExternalImport::create(api, fd, ExternalMemoryHandleType::DmaBufFd, size, false, device);
  if (a) return std::unique_ptr<DeviceHandle>(new ExternalHandle(std::move(*a)));
  dmabuf_reason = a.error().message();
  auto b = ExternalImport::create(api, fd, ExternalMemoryHandleType::OpaqueFd, size, false, device);
  if (b) {
    log(LogLevel::Debug, "cuda::map: DMA-BUF handle type failed ({}); imported as OpaqueFd", dmabuf_reason);
    return std::unique_ptr<DeviceHandle>(new ExternalHandle(std::move(*b)));
  }
  opaque_reason = b.error().message();
  return fail(ErrorCode::Unsupported,
              text::format("cuda::map: this platform cannot give CUDA the dmabuf storage ({}, {} B): [1] {}; [2] {}. "
                          "dma-heap buffers are PFN mappings that cudaHostRegister cannot pin, and desktop GPUs "
                          "do not import DMA-BUFs: use map_read() with cuda::copy_to_device instead",
                          storage.backing().detail(), size, dmabuf_reason, opaque_reason));
}

}  // namespace

struct MapAccess {
  static CudaMap make(std::shared_ptr<Storage> storage, CudaHandle* handle, void* ptr, std::size_t extent_bytes, int device,
                      CudaStream stream) {
    CudaMap m;
    m.stream_ = stream;
    m.storage_ = std::move(storage);
    m.handle_ = handle;
    m.ptr_ = ptr;
    m.extent_bytes_ = extent_bytes;
    m.path_ = handle->path();
    m.device_ = device;
    m.process_ = edgetensor::detail::process_token();
    return m;
  }
};

Result<CudaMap> map_storage(const std::shared_ptr<Storage>& storage, std::size_t offset_bytes,
                            std::size_t extent_bytes, const MapOptions& options) {
  if (!storage) return fail(ErrorCode::FailedPrecondition, "cuda::map: empty tensor handle (no storage)");
  if (extent_bytes == 0)
    return fail(ErrorCode::FailedPrecondition, "cuda::map: the tensor has no bytes (a zero-size dimension)");
  ET_TRY_ASSIGN(const CudaRuntimeApi* api, usable("cuda::map"));
  // A channel frame's acquire fence: the device reads only after the producer's device is done.
  ET_TRY(storage->await_access_fences(kDefaultMapTimeout, "cuda::map"));
  ET_TRY_ASSIGN(int device, resolve_device(*api, options.device));
  CudaStream stream = options.stream ? options.stream->native_handle() : nullptr;
  if (options.stream && !stream) return fail(ErrorCode::InvalidArgument, "cuda::map: MapOptions::stream is a moved-from Stream");
  auto make = [api, device](Storage& s) -> Result<std::unique_ptr<DeviceHandle>> {
    switch (s.kind()) {
      case MemoryKind::Heap:
      case MemoryKind::Shm:
        return HostRegistration::create(*api, s, device);
      case MemoryKind::DmaBuf:
        return import_dmabuf_storage(*api, s, device);
      case MemoryKind::GlPbo:
        return make_gl_handle(*api, s, device);
      default:
        return fail(ErrorCode::Unsupported,
                    text::format("cuda::map: no CUDA path for {} storage", memory_kind_name(s.kind())));
    }
  };
  ET_TRY_ASSIGN(DeviceHandle* dh, storage->device_handle(make));
  auto* h = dynamic_cast<CudaHandle*>(dh);
  if (!h) return fail(ErrorCode::Internal, "cuda::map: the storage's device handle is not a CUDA handle");
  if (h->device() != device)
    return fail(ErrorCode::FailedPrecondition,
                text::format("cuda::map: the storage is bound to CUDA device {} (where it was first mapped); "
                            "a map for device {} is refused",
                            h->device(), device));
  ET_TRY_ASSIGN(void* base, h->begin_map(stream));
  return MapAccess::make(storage, h, static_cast<std::byte*>(base) + offset_bytes, extent_bytes, device, stream);
}

}  // namespace detail

// ---- Public: map, CudaMap ----------------------------------------------------------------------
Result<CudaMap> map(const TensorDyn& tensor, const MapOptions& options) noexcept {
  try {
    return detail::map_storage(edgetensor::detail::storage_of(tensor), tensor.offset_bytes(), tensor.extent_bytes(),
                               options);
  } catch (const std::bad_alloc&) {
    return fail(ErrorCode::OutOfMemory, "cuda::map: out of memory");
  } catch (...) {
    return fail(ErrorCode::Internal, "cuda::map: unexpected exception");
  }
}

std::string_view cuda_path_name(CudaPath path) noexcept {
  switch (path) {
    case CudaPath::HostRegistered: return "host-registered";
    case CudaPath::ExternalOpaqueFd: return "external-opaque-fd";
    case CudaPath::ExternalDmaBuf: return "external-dmabuf";
    case CudaPath::GlBuffer: return "gl-buffer";
  }
  return "unknown";
}

CudaMap::CudaMap(CudaMap&& o) noexcept
    : storage_(std::move(o.storage_)), handle_(o.handle_), ptr_(o.ptr_), extent_bytes_(o.extent_bytes_), path_(o.path_),
      device_(o.device_), event_(o.event_), stream_(o.stream_), process_(o.process_) {
  o.handle_ = nullptr;
  o.ptr_ = nullptr;
  o.extent_bytes_ = 0;
  o.event_ = nullptr;
}

CudaMap& CudaMap::operator=(CudaMap&& o) noexcept {
  if (this != &o) {
    unmap();
    storage_ = std::move(o.storage_);
    handle_ = o.handle_;
    ptr_ = o.ptr_;
    extent_bytes_ = o.extent_bytes_;
    path_ = o.path_;
    device_ = o.device_;
    event_ = o.event_;
    stream_ = o.stream_;
    process_ = o.process_;
    o.handle_ = nullptr;
    o.ptr_ = nullptr;
    o.extent_bytes_ = 0;
    o.event_ = nullptr;
  }
  return *this;
}

CudaMap::~CudaMap() { unmap(); }

void CudaMap::unmap() noexcept {
  const bool own_process = !edgetensor::detail::forked_since(process_);
  std::unique_ptr<detail::RecordedEvent> recorded(static_cast<detail::RecordedEvent*>(event_));
  event_ = nullptr;
  if (recorded && own_process) {
    if (const auto* api = detail::runtime()) {
      // The recorded work goes with the storage: a pool's or a channel's return waits for it, and so
      // does the storage's teardown (bounded). If that fails, wait here.
      bool kept = false;
      if (storage_) {
        try {
          storage_->keep_fence(std::make_unique<detail::EventFence>(*api, recorded->event, recorded->teardown_timeout));
          kept = true;
        } catch (...) {
          (void)api->cudaEventSynchronize(recorded->event);
        }
      }
      if (!kept) {
        detail::CudaError e = api->cudaEventDestroy(recorded->event);
        if (e != detail::kCudaSuccess)
          log(LogLevel::Warning, "cudaEventDestroy failed: {}", detail::describe_error(*api, e));
      }
    }
  }
  if (handle_ && storage_ && own_process) handle_->end_map(stream_);
  handle_ = nullptr;
  stream_ = nullptr;
  ptr_ = nullptr;
  extent_bytes_ = 0;
  storage_.reset();
}

Result<void> CudaMap::record(const Stream& stream) { return record(stream, kDefaultTeardownTimeout); }

Result<void> CudaMap::record(const Stream& stream, std::chrono::milliseconds teardown_timeout) {
  ET_TRY_ASSIGN(const auto* api, detail::usable("CudaMap::record"));
  if (!is_mapped()) return fail(ErrorCode::FailedPrecondition, "CudaMap::record: the map was released");
  if (!stream.native_handle()) return fail(ErrorCode::InvalidArgument, "CudaMap::record: moved-from stream");
  if (!event_) {
    std::unique_ptr<detail::RecordedEvent> recorded(new (std::nothrow) detail::RecordedEvent);
    if (!recorded) return fail(ErrorCode::OutOfMemory, "CudaMap::record: out of memory");
    detail::CudaError e = api->cudaEventCreateWithFlags(&recorded->event, detail::kEventDisableTiming);
    if (e != detail::kCudaSuccess) return fail(detail::cuda_error(*api, e, "cudaEventCreateWithFlags(DisableTiming)"));
    event_ = recorded.release();
  }
  auto* recorded = static_cast<detail::RecordedEvent*>(event_);
  detail::CudaError e = api->cudaEventRecord(recorded->event, stream.native_handle());
  if (e != detail::kCudaSuccess) return fail(detail::cuda_error(*api, e, "cudaEventRecord"));
  recorded->teardown_timeout = teardown_timeout;
  return {};
}

Result<void> CudaMap::wait() const {
  ET_TRY_ASSIGN(const auto* api, detail::usable("CudaMap::wait"));
  if (!is_mapped()) return fail(ErrorCode::FailedPrecondition, "CudaMap::wait: the map was released");
  if (event_) {
    detail::CudaError e = api->cudaEventSynchronize(static_cast<detail::RecordedEvent*>(event_)->event);
    if (e != detail::kCudaSuccess) return fail(detail::cuda_error(*api, e, "cudaEventSynchronize"));
    return {};
  }
  ET_TRY_ASSIGN(auto guard, detail::DeviceGuard::enter(*api, device_));
  detail::CudaError e = api->cudaDeviceSynchronize();
  if (e != detail::kCudaSuccess) return fail(detail::cuda_error(*api, e, "cudaDeviceSynchronize"));
  return {};
}

}  // namespace cuda
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
