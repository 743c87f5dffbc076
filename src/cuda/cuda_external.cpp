// SPDX-License-Identifier: Apache-2.0
// External memory: one imported fd mapped whole as a device buffer (ExternalImport: the runtime's
// OpaqueFd path or the driver's DMA-BUF path) and the public ExternalMemory around it.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "text/format.h"

#include "core/backend.h"
#include "base/log_internal.h"
#include "base/sys.h"
#include "cuda/cuda_internal.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace cuda {

using edgetensor::detail::log;

namespace detail {

namespace {

DmaBufDriver lookup_dmabuf_driver(const CudaRuntimeApi& rt, int driver_version) {
  DmaBufDriver d;
  if (driver_version < 13000) {
    d.reason = text::format("driver {} predates CU_EXTERNAL_MEMORY_HANDLE_TYPE_DMABUF_FD (CUDA 13.0)",
                            version_string(driver_version));
    return d;
  }
  std::string why;
  auto get = [&](DriverSymbol sym) { return driver_entry_point(rt, sym, driver_version, &why); };
  d.import = reinterpret_cast<decltype(d.import)>(get(kCuImportExternalMemory));
  d.get_mapped_buffer = reinterpret_cast<decltype(d.get_mapped_buffer)>(get(kCuExternalMemoryGetMappedBuffer));
  d.mem_free = reinterpret_cast<decltype(d.mem_free)>(get(kCuMemFree));
  d.destroy = reinterpret_cast<decltype(d.destroy)>(get(kCuDestroyExternalMemory));
  d.get_error_name = reinterpret_cast<decltype(d.get_error_name)>(get(kCuGetErrorName));
  d.get_error_string = reinterpret_cast<decltype(d.get_error_string)>(get(kCuGetErrorString));
  d.ok = d.import && d.get_mapped_buffer && d.mem_free && d.destroy;
  if (!d.ok) d.reason = why.empty() ? "driver entry points missing" : why;
  return d;
}

Error driver_error(const DmaBufDriver& d, CuResult r, std::string_view call) {
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

const DmaBufDriver& dmabuf_driver(const CudaRuntimeApi& api, int driver_version) {
  static const DmaBufDriver d = lookup_dmabuf_driver(api, driver_version);
  return d;
}

// ---- ExternalImport ------------------------------------------------------------------------------
Result<std::unique_ptr<ExternalImport>> ExternalImport::create(const CudaRuntimeApi& api, int borrowed_fd,
                                                               ExternalMemoryHandleType type, std::size_t buffer_bytes,
                                                               bool dedicated, int device) {
  const DescriptorLayout* layout = nullptr;
  const DmaBufDriver* drv = nullptr;
  int cuda_type = kExternalMemoryHandleTypeOpaqueFd;
  if (type == ExternalMemoryHandleType::DmaBufFd) {
    const DmaBufDriver& d = dmabuf_driver(api, cached_report().driver_version);
    if (!d.ok) return fail(ErrorCode::Unsupported, "DMA-BUF handle type unavailable: " + d.reason);
    drv = &d;
    layout = &kLayoutDriverV1;
    cuda_type = kCuExternalMemoryHandleTypeDmaBufFd;
  } else {
    const int rv = cached_report().runtime_version;
    layout = layout_for_runtime(rv);
    if (!layout)
      return fail(ErrorCode::Unsupported,
                  text::format("no cudaExternalMemoryHandleDesc layout for CUDA runtime {} (known: 11.x-13.x)",
                              version_string(rv)));
  }
  ET_TRY_ASSIGN(auto guard, DeviceGuard::enter(api, device));
  // Until a successful import this UniqueFd owns the dup. After it, CUDA does: CUDA Runtime/Driver API
  // "External Resource Interoperability" says so for OpaqueFd and says nothing for DMABUF_FD; treated
  // alike, at worst one fd leaks per import, never a double close (docs/CUDA.md "External memory").
  ET_TRY_ASSIGN(UniqueFd dup, UniqueFd::duplicate(borrowed_fd));
  auto desc = make_handle_desc(*layout, cuda_type, dup.get(), buffer_bytes, dedicated ? 1u : 0u);
  std::unique_ptr<ExternalImport> imp(new ExternalImport());
  imp->api_ = &api;
  imp->driver_ = drv;
  imp->buffer_bytes_ = buffer_bytes;
  imp->type_ = type;
  imp->device_ = device;
  imp->process_ = edgetensor::detail::process_token();
  const std::string what = text::format("({}, fd {} dup of {}, {} B, device {})", handle_type_name(type), dup.get(),
                                       borrowed_fd, buffer_bytes, device);
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
  auto bdesc = make_buffer_desc(*layout, 0, buffer_bytes);
  if (drv) {
    CuDevicePtr p = 0;
    CuResult r = drv->get_mapped_buffer(&p, ext, bdesc.data());
    if (r != 0) return fail(driver_error(*drv, r, text::format("cuExternalMemoryGetMappedBuffer(0, {} B)", buffer_bytes)));
    imp->ptr_ = reinterpret_cast<void*>(static_cast<std::uintptr_t>(p));
  } else {
    void* p = nullptr;
    CudaError e = api.cudaExternalMemoryGetMappedBuffer(&p, ext, bdesc.data());
    if (e != kCudaSuccess)
      return fail(cuda_error(api, e, text::format("cudaExternalMemoryGetMappedBuffer(0, {} B)", buffer_bytes)));
    imp->ptr_ = p;
  }
  return imp;
}

ExternalImport::~ExternalImport() {
  // A fork child must not touch the parent's CUDA objects; the parent still owns them.
  if (!api_ || (!ext_ && !ptr_) || edgetensor::detail::forked_since(process_)) return;
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

}  // namespace detail

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
    std::size_t size = options.buffer_bytes;
    auto info = edgetensor::detail::probe_fd(borrowed_fd);
    if (info) {
      if (type == ExternalMemoryHandleType::DmaBufFd && info->kind != MemoryKind::DmaBuf)
        return fail(ErrorCode::InvalidArgument,
                    text::format("ExternalMemory::import_fd_dup: fd {} is a {}, not a DMA-BUF", borrowed_fd, info->what));
      if (info->buffer_bytes == 0)
        return fail(ErrorCode::InvalidArgument,
                    text::format("ExternalMemory::import_fd_dup: fd {} ({}) has size 0", borrowed_fd, info->what));
      if (size != 0 && size != info->buffer_bytes)
        return fail(ErrorCode::InvalidArgument,
                    text::format("ExternalMemory::import_fd_dup: buffer_bytes {} differs from the real size {} B of fd {} ({})",
                                size, info->buffer_bytes, borrowed_fd, info->what));
      size = info->buffer_bytes;
    } else {
      if (type == ExternalMemoryHandleType::DmaBufFd)
        return fail(ErrorCode::InvalidArgument,
                    text::format("ExternalMemory::import_fd_dup: DmaBufFd given an fd that is not a DMA-BUF: {}",
                                info.error().message()));
      if (size == 0)
        return fail(ErrorCode::InvalidArgument,
                    text::format("ExternalMemory::import_fd_dup: the kernel reports no size for fd {} ({}); pass "
                                "ExternalMemoryOptions::buffer_bytes",
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
std::size_t ExternalMemory::buffer_bytes() const noexcept { return impl_ ? impl_->buffer_bytes() : 0; }
ExternalMemoryHandleType ExternalMemory::type() const noexcept {
  return impl_ ? impl_->type() : ExternalMemoryHandleType::OpaqueFd;
}
int ExternalMemory::device() const noexcept { return impl_ ? impl_->device() : -1; }

}  // namespace cuda
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
