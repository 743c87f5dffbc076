// SPDX-License-Identifier: Apache-2.0
// Device views of storages (host registration, external memory), ExternalMemory and CudaMap.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>

#include "text/format.h"

#include "core/backend.h"
#include "core/log_internal.h"
#include "core/sys.h"
#include "cuda/cuda_internal.h"

namespace edgetensor::inline ET_ABI_NAMESPACE::cuda {

using edgetensor::detail::DeviceHandle;
using edgetensor::detail::Storage;
using edgetensor::detail::log;

namespace detail {

// ---- Driver API symbols of the DMA-BUF path (cuda.h 13.0 signatures) -----------------------------
struct ExternalImport::DriverApi {
  CuResult (*import)(void**, const void*) = nullptr;                         // cuImportExternalMemory
  CuResult (*get_mapped_buffer)(CuDevicePtr*, void*, const void*) = nullptr;  // cuExternalMemoryGetMappedBuffer
  CuResult (*mem_free)(CuDevicePtr) = nullptr;                                // cuMemFree (_v2)
  CuResult (*destroy)(void*) = nullptr;                                       // cuDestroyExternalMemory
  CuResult (*get_error_name)(CuResult, const char**) = nullptr;               // cuGetErrorName
  CuResult (*get_error_string)(CuResult, const char**) = nullptr;             // cuGetErrorString
};

namespace {

struct DriverLookup {
  ExternalImport::DriverApi api;
  bool ok = false;
  std::string reason;
};

const DriverLookup& driver_lookup(const CudaRuntimeApi& rt) {
  static const DriverLookup lookup = [&rt] {
    DriverLookup l;
    const Status& s = cached_status();
    if (s.driver_version < 13000) {
      l.reason = text::format("driver {} predates CU_EXTERNAL_MEMORY_HANDLE_TYPE_DMABUF_FD (CUDA 13.0)",
                             version_string(s.driver_version));
      return l;
    }
    const int v = s.runtime_version;
    std::string why;
    auto get = [&](const char* name) { return driver_entry_point(rt, name, v, &why); };
    l.api.import = reinterpret_cast<decltype(l.api.import)>(get("cuImportExternalMemory"));
    l.api.get_mapped_buffer = reinterpret_cast<decltype(l.api.get_mapped_buffer)>(get("cuExternalMemoryGetMappedBuffer"));
    l.api.mem_free = reinterpret_cast<decltype(l.api.mem_free)>(get("cuMemFree"));
    l.api.destroy = reinterpret_cast<decltype(l.api.destroy)>(get("cuDestroyExternalMemory"));
    l.api.get_error_name = reinterpret_cast<decltype(l.api.get_error_name)>(get("cuGetErrorName"));
    l.api.get_error_string = reinterpret_cast<decltype(l.api.get_error_string)>(get("cuGetErrorString"));
    l.ok = l.api.import && l.api.get_mapped_buffer && l.api.mem_free && l.api.destroy;
    if (!l.ok) l.reason = why.empty() ? "driver entry points missing" : why;
    return l;
  }();
  return lookup;
}

Error driver_error(const ExternalImport::DriverApi& d, CuResult r, std::string_view call) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (d.get_error_name) d.get_error_name(r, &name);
  if (d.get_error_string) d.get_error_string(r, &text);
  // CUresult and cudaError share the values that matter here (1, 2, 3, 100, 400, 801).
  return Error(code_for_cuda_error(r), text::format("{}: {} ({}): {}", call, name ? name : "CUresult", r,
                                                   text ? text : "no description"));
}

const char* handle_type_name(ExternalMemoryHandleType t) {
  return t == ExternalMemoryHandleType::DmaBufFd ? "DMA-BUF fd" : "opaque fd";
}

}  // namespace

// ---- ExternalImport ------------------------------------------------------------------------------
Result<std::unique_ptr<ExternalImport>> ExternalImport::create(const CudaRuntimeApi& api, int borrowed_fd,
                                                               ExternalMemoryHandleType type, std::size_t size_bytes,
                                                               bool dedicated, int device) {
  const DescriptorLayout* layout = nullptr;
  const DriverApi* drv = nullptr;
  int cuda_type = kExternalMemoryHandleTypeOpaqueFd;
  if (type == ExternalMemoryHandleType::DmaBufFd) {
    const DriverLookup& l = driver_lookup(api);
    if (!l.ok) return fail(ErrorCode::Unsupported, "DMA-BUF handle type unavailable: " + l.reason);
    drv = &l.api;
    layout = &kLayoutDriverV1;
    cuda_type = kCuExternalMemoryHandleTypeDmaBufFd;
  } else {
    const int rv = cached_status().runtime_version;
    layout = layout_for_runtime(rv);
    if (!layout)
      return fail(ErrorCode::Unsupported,
                  text::format("no cudaExternalMemoryHandleDesc layout for CUDA runtime {} (known: 11.x-13.x)",
                              version_string(rv)));
  }
  ET_TRY_ASSIGN(auto guard, DeviceGuard::enter(api, device));
  // CUDA owns the fd after a successful import and closes it; until then this UniqueFd does.
  ET_TRY_ASSIGN(UniqueFd dup, UniqueFd::duplicate(borrowed_fd));
  auto desc = make_handle_desc(*layout, cuda_type, dup.get(), size_bytes, dedicated ? 1u : 0u);
  std::unique_ptr<ExternalImport> imp(new ExternalImport());
  imp->api_ = &api;
  imp->driver_ = drv;
  imp->size_ = size_bytes;
  imp->type_ = type;
  imp->device_ = device;
  imp->pid_ = getpid();
  const std::string what = text::format("({}, fd {} dup of {}, {} B, device {})", handle_type_name(type), dup.get(),
                                       borrowed_fd, size_bytes, device);
  void* ext = nullptr;
  if (drv) {
    // Driver calls need a current context: cudaSetDevice makes the primary context current (12.0+).
    CudaError se = api.cudaSetDevice(device);
    if (se != kCudaSuccess) return fail(cuda_error(api, se, text::format("cudaSetDevice({})", device)));
    CuResult r = drv->import(&ext, desc.data());
    if (r != 0) return fail(driver_error(*drv, r, "cuImportExternalMemory" + what));
  } else {
    CudaError e = api.cudaImportExternalMemory(&ext, desc.data());
    if (e != kCudaSuccess) return fail(cuda_error(api, e, "cudaImportExternalMemory" + what));
  }
  (void)dup.release();
  imp->ext_ = ext;  // from here on the destructor destroys it (which closes CUDA's fd)
  auto bdesc = make_buffer_desc(*layout, 0, size_bytes);
  if (drv) {
    CuDevicePtr p = 0;
    CuResult r = drv->get_mapped_buffer(&p, ext, bdesc.data());
    if (r != 0) return fail(driver_error(*drv, r, text::format("cuExternalMemoryGetMappedBuffer(0, {} B)", size_bytes)));
    imp->ptr_ = reinterpret_cast<void*>(static_cast<std::uintptr_t>(p));
  } else {
    void* p = nullptr;
    CudaError e = api.cudaExternalMemoryGetMappedBuffer(&p, ext, bdesc.data());
    if (e != kCudaSuccess)
      return fail(cuda_error(api, e, text::format("cudaExternalMemoryGetMappedBuffer(0, {} B)", size_bytes)));
    imp->ptr_ = p;
  }
  return imp;
}

ExternalImport::~ExternalImport() {
  // A fork child must not touch the parent's CUDA objects; the parent still owns them.
  if (!api_ || (!ext_ && !ptr_) || foreign_process(pid_)) return;
  auto guard = DeviceGuard::enter(*api_, device_);
  if (driver_) (void)api_->cudaSetDevice(device_);  // the driver API needs the primary context current
  // CUDA Runtime API: the mapped buffer "must be freed using cudaFree"; all mapped buffers must be
  // freed before cudaDestroyExternalMemory. Each exactly once.
  if (ptr_) {
    if (driver_) {
      CuResult r = driver_->mem_free(static_cast<CuDevicePtr>(reinterpret_cast<std::uintptr_t>(ptr_)));
      if (r != 0) log(LogLevel::Warning, "cuMemFree of an external-memory buffer failed: CUresult {}", r);
    } else {
      CudaError e = api_->cudaFree(ptr_);
      if (e != kCudaSuccess)
        log(LogLevel::Warning, "cudaFree of an external-memory buffer failed: {}", describe_error(*api_, e));
    }
  }
  if (ext_) {
    if (driver_) {
      CuResult r = driver_->destroy(ext_);
      if (r != 0) log(LogLevel::Warning, "cuDestroyExternalMemory failed: CUresult {}", r);
    } else {
      CudaError e = api_->cudaDestroyExternalMemory(ext_);
      if (e != kCudaSuccess) log(LogLevel::Warning, "cudaDestroyExternalMemory failed: {}", describe_error(*api_, e));
    }
  }
}

namespace {

// ---- Per-storage handles ------------------------------------------------------------------------
class HostRegistration final : public CudaHandle {
 public:
  static Result<std::unique_ptr<DeviceHandle>> create(const CudaRuntimeApi& api, Storage& storage, int device) {
    // Heap and shm keep one persistent CPU mapping for the backing's whole life (made on the first
    // map, unmapped only when the Backing dies, which is after this handle): take its address.
    ET_TRY_ASSIGN(std::byte* host, storage.acquire_cpu(MapMode::Read));
    storage.release_cpu(MapMode::Read);
    const std::size_t size = storage.size_bytes();
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
    if (foreign_process(pid_)) return;
    CudaError e = api_.cudaHostUnregister(host_);
    if (e != kCudaSuccess) log(LogLevel::Warning, "cudaHostUnregister({}) failed: {}", host_, describe_error(api_, e));
  }
  CudaPath path() const noexcept override { return CudaPath::HostRegistered; }
  int device() const noexcept override { return device_; }
  void* base() const noexcept override { return device_ptr_; }

 private:
  HostRegistration(const CudaRuntimeApi& api, void* host, void* dptr, int device)
      : api_(api), host_(host), device_ptr_(dptr), device_(device), pid_(getpid()) {}
  const CudaRuntimeApi& api_;
  void* host_;
  void* device_ptr_;
  int device_;
  pid_t pid_;
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

Result<std::unique_ptr<DeviceHandle>> import_dmabuf_storage(const CudaRuntimeApi& api, Storage& storage, int device) {
  const int fd = storage.backing().fd();
  const std::size_t size = storage.size_bytes();
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
  static CudaMap make(std::shared_ptr<Storage> storage, CudaHandle* handle, void* ptr, std::size_t size, int device,
                      CudaStream stream) {
    CudaMap m;
    m.stream_ = stream;
    m.storage_ = std::move(storage);
    m.handle_ = handle;
    m.ptr_ = ptr;
    m.size_ = size;
    m.path_ = handle->path();
    m.device_ = device;
    m.pid_ = getpid();
    return m;
  }
};

Result<CudaMap> map_storage(const std::shared_ptr<Storage>& storage, std::size_t offset_bytes,
                            std::size_t extent_bytes, const MapOptions& options) {
  if (!storage) return fail(ErrorCode::FailedPrecondition, "cuda::map: empty tensor handle (no storage)");
  if (extent_bytes == 0)
    return fail(ErrorCode::FailedPrecondition, "cuda::map: the tensor has no bytes (a zero-size dimension)");
  ET_TRY_ASSIGN(const CudaRuntimeApi* api, usable("cuda::map"));
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
    return detail::map_storage(tensor.storage(), tensor.offset_bytes(), tensor.extent_bytes(), options);
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
    : storage_(std::move(o.storage_)), handle_(o.handle_), ptr_(o.ptr_), size_(o.size_), path_(o.path_),
      device_(o.device_), event_(o.event_), stream_(o.stream_), pid_(o.pid_) {
  o.handle_ = nullptr;
  o.ptr_ = nullptr;
  o.size_ = 0;
  o.event_ = nullptr;
}

CudaMap& CudaMap::operator=(CudaMap&& o) noexcept {
  if (this != &o) {
    release();
    storage_ = std::move(o.storage_);
    handle_ = o.handle_;
    ptr_ = o.ptr_;
    size_ = o.size_;
    path_ = o.path_;
    device_ = o.device_;
    event_ = o.event_;
    stream_ = o.stream_;
    pid_ = o.pid_;
    o.handle_ = nullptr;
    o.ptr_ = nullptr;
    o.size_ = 0;
    o.event_ = nullptr;
  }
  return *this;
}

CudaMap::~CudaMap() { release(); }

void CudaMap::release() noexcept {
  const bool own_process = !detail::foreign_process(pid_);
  if (event_ && own_process) {
    if (const auto* api = detail::runtime()) {
      detail::CudaError e = api->cudaEventDestroy(event_);
      if (e != detail::kCudaSuccess)
        log(LogLevel::Warning, "cudaEventDestroy failed: {}", detail::describe_error(*api, e));
    }
  }
  event_ = nullptr;
  if (handle_ && storage_ && own_process) handle_->end_map(stream_);
  handle_ = nullptr;
  stream_ = nullptr;
  ptr_ = nullptr;
  size_ = 0;
  storage_.reset();
}

Result<void> CudaMap::record(const Stream& stream) {
  ET_TRY_ASSIGN(const auto* api, detail::usable("CudaMap::record"));
  if (!is_mapped()) return fail(ErrorCode::FailedPrecondition, "CudaMap::record: the map was released");
  if (!stream.native_handle()) return fail(ErrorCode::InvalidArgument, "CudaMap::record: moved-from stream");
  if (!event_) {
    detail::CudaEvent ev = nullptr;
    detail::CudaError e = api->cudaEventCreateWithFlags(&ev, detail::kEventDisableTiming);
    if (e != detail::kCudaSuccess) return fail(detail::cuda_error(*api, e, "cudaEventCreateWithFlags(DisableTiming)"));
    event_ = ev;
  }
  detail::CudaError e = api->cudaEventRecord(event_, stream.native_handle());
  if (e != detail::kCudaSuccess) return fail(detail::cuda_error(*api, e, "cudaEventRecord"));
  return {};
}

Result<void> CudaMap::wait() const {
  ET_TRY_ASSIGN(const auto* api, detail::usable("CudaMap::wait"));
  if (!is_mapped()) return fail(ErrorCode::FailedPrecondition, "CudaMap::wait: the map was released");
  if (event_) {
    detail::CudaError e = api->cudaEventSynchronize(event_);
    if (e != detail::kCudaSuccess) return fail(detail::cuda_error(*api, e, "cudaEventSynchronize"));
    return {};
  }
  ET_TRY_ASSIGN(auto guard, detail::DeviceGuard::enter(*api, device_));
  detail::CudaError e = api->cudaDeviceSynchronize();
  if (e != detail::kCudaSuccess) return fail(detail::cuda_error(*api, e, "cudaDeviceSynchronize"));
  return {};
}

// ---- Public: ExternalMemory ---------------------------------------------------------------------
Result<ExternalMemory> ExternalMemory::import_fd_dup(int borrowed_fd, ExternalMemoryHandleType type,
                                                     const ExternalMemoryOptions& options) {
  try {
    ET_TRY_ASSIGN(const auto* api, detail::usable("ExternalMemory::import_fd_dup"));
    if (borrowed_fd < 0)
      return fail(ErrorCode::InvalidArgument, text::format("ExternalMemory::import_fd_dup: fd {} is not valid", borrowed_fd));
    if (sys::fcntl(borrowed_fd, F_GETFD) < 0)
      return fail(ErrorCode::InvalidArgument,
                  text::format("ExternalMemory::import_fd_dup: fd {} is not an open file descriptor", borrowed_fd), errno);
    if (type == ExternalMemoryHandleType::DmaBufFd && options.dedicated)
      return fail(ErrorCode::InvalidArgument,
                  "ExternalMemory::import_fd_dup: a DMA-BUF import takes no flags (cuda.h: flags must be zero); "
                  "dedicated is not allowed");
    std::size_t size = options.size_bytes;
    auto info = edgetensor::detail::probe_fd(borrowed_fd);
    if (info) {
      if (type == ExternalMemoryHandleType::DmaBufFd && info->kind != MemoryKind::DmaBuf)
        return fail(ErrorCode::InvalidArgument,
                    text::format("ExternalMemory::import_fd_dup: fd {} is a {}, not a DMA-BUF", borrowed_fd, info->what));
      if (info->size_bytes == 0)
        return fail(ErrorCode::InvalidArgument,
                    text::format("ExternalMemory::import_fd_dup: fd {} ({}) has size 0", borrowed_fd, info->what));
      if (size != 0 && size != info->size_bytes)
        return fail(ErrorCode::InvalidArgument,
                    text::format("ExternalMemory::import_fd_dup: size_bytes {} differs from the real size {} B of fd {} ({})",
                                size, info->size_bytes, borrowed_fd, info->what));
      size = info->size_bytes;
    } else {
      if (type == ExternalMemoryHandleType::DmaBufFd)
        return fail(ErrorCode::InvalidArgument,
                    text::format("ExternalMemory::import_fd_dup: DmaBufFd given an fd that is not a DMA-BUF: {}",
                                info.error().message()));
      if (size == 0)
        return fail(ErrorCode::InvalidArgument,
                    text::format("ExternalMemory::import_fd_dup: the kernel reports no size for fd {} ({}); pass "
                                "ExternalMemoryOptions::size_bytes",
                                borrowed_fd, info.error().message()));
    }
    ET_TRY_ASSIGN(int device, detail::resolve_device(*api, options.device));
    ET_TRY_ASSIGN(auto imp, detail::ExternalImport::create(*api, borrowed_fd, type, size, options.dedicated, device));
    return ExternalMemory(std::move(imp));
  } catch (const std::bad_alloc&) {
    return fail(ErrorCode::OutOfMemory, "ExternalMemory::import_fd_dup: out of memory");
  }
}

ExternalMemory::ExternalMemory(std::unique_ptr<detail::ExternalImport> impl) noexcept : impl_(std::move(impl)) {}
ExternalMemory::ExternalMemory(ExternalMemory&&) noexcept = default;
ExternalMemory& ExternalMemory::operator=(ExternalMemory&&) noexcept = default;
ExternalMemory::~ExternalMemory() = default;
void* ExternalMemory::device_ptr() const noexcept { return impl_ ? impl_->device_ptr() : nullptr; }
std::size_t ExternalMemory::size_bytes() const noexcept { return impl_ ? impl_->size_bytes() : 0; }
ExternalMemoryHandleType ExternalMemory::type() const noexcept {
  return impl_ ? impl_->type() : ExternalMemoryHandleType::OpaqueFd;
}
int ExternalMemory::device() const noexcept { return impl_ ? impl_->device() : -1; }

}  // namespace edgetensor::cuda
