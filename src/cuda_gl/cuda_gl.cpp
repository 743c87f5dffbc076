// SPDX-License-Identifier: Apache-2.0
// The CUDA-GL path: GL PBO storages reached from CUDA through cudaGraphicsGLRegisterBuffer.
// Built only with the GL backend (ET_WITH_EGL); cuda_gl_not_built.cpp answers otherwise.
//
//   Storage ──> GlHandle (DeviceHandle slot) ──shared──> GlRegistration <──shared── GlAttachment
//                                                                                  (hung on the PBO)
// The registration's CUDA state is GL-thread only. The attachment hangs on the PBO (PboHandle::attach),
// so the PBO backend unregisters it (release_on_gl_thread) before glDeleteBuffers and before its
// context shuts down; the handle only posts map/unmap jobs. The PBO is reached only through
// backends/gl_pbo/pbo_interop.h. Sources of the CUDA facts: CUDA Runtime API,
// sections "OpenGL Interoperability" (cudaGLGetDevices, cudaGraphicsGLRegisterBuffer, cudaGLDeviceList)
// and "Graphics Interoperability" (cudaGraphics{Map,Unmap}Resources, ResourceGetMappedPointer,
// UnregisterResource).
#include "text/format.h"

#include "backends/gl_pbo/pbo_interop.h"
#include "base/log_internal.h"
#include "cuda/cuda_internal.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace cuda {

using edgetensor::detail::DeviceHandle;
using edgetensor::detail::log;
using edgetensor::detail::PboAttachment;
using edgetensor::detail::PboHandle;
using edgetensor::detail::Storage;

namespace detail {
namespace {

constexpr int kGLDeviceListAll = 1;                // cudaGLDeviceListAll
constexpr unsigned kGraphicsRegisterFlagsNone = 0;  // cudaGraphicsRegisterFlagsNone
constexpr unsigned kMaxGlDevices = 16;

// One cudaGraphicsResource of one PBO. Every field after the constants is touched on the GL thread only.
struct GlRegistration {
  const CudaRuntimeApi* api = nullptr;
  int device = 0;
  unsigned buffer = 0;  // GL name, for messages
  CudaGraphicsResource resource = nullptr;
  const PboAttachment* attachment = nullptr;  // the attachment that holds it on the PBO
  bool mapped = false;
  bool released = false;
};

// GL thread. Unmaps a mapped registration; failures are logged (nothing to retry).
void unmap_on_gl_thread(GlRegistration& reg, CudaStream stream) noexcept {
  if (!reg.mapped || reg.released) return;
  reg.mapped = false;
  auto guard = DeviceGuard::enter(*reg.api, reg.device);
  CudaGraphicsResource res = reg.resource;
  CudaError e = reg.api->cudaGraphicsUnmapResources(1, &res, stream);
  if (e != kCudaSuccess)
    log(LogLevel::Warning, "cudaGraphicsUnmapResources of GL buffer {} failed: {}", reg.buffer,
        describe_error(*reg.api, e));
}

// GL thread. Unregisters (unmapping first if a CudaMap is still open); idempotent.
void unregister_on_gl_thread(GlRegistration& reg) noexcept {
  if (reg.released) return;
  if (reg.mapped) {
    log(LogLevel::Warning,
        "GL buffer {} is released while a CudaMap of it is open (its gl::Context shut down?): unmapping it from "
        "CUDA; that CudaMap's device pointer is no longer valid",
        reg.buffer);
    unmap_on_gl_thread(reg, nullptr);
  }
  reg.released = true;
  auto guard = DeviceGuard::enter(*reg.api, reg.device);
  CudaError e = reg.api->cudaGraphicsUnregisterResource(reg.resource);
  if (e != kCudaSuccess)
    log(LogLevel::Warning, "cudaGraphicsUnregisterResource of GL buffer {} failed: {}", reg.buffer,
        describe_error(*reg.api, e));
  reg.resource = nullptr;
}

class GlAttachment final : public PboAttachment {
 public:
  explicit GlAttachment(std::shared_ptr<GlRegistration> reg) : reg_(std::move(reg)) {}
  void release_on_gl_thread() noexcept override { unregister_on_gl_thread(*reg_); }
  std::optional<std::string> busy_reason() const override {
    if (!reg_->mapped) return std::nullopt;
    return text::format("it is mapped by CUDA (a cuda::CudaMap on device {} is open); release the CudaMap first",
                       reg_->device);
  }
 private:
  std::shared_ptr<GlRegistration> reg_;
};

std::string join_devices(const int* devices, unsigned n) {
  std::string out;
  for (unsigned i = 0; i < n; ++i) out += text::format("{}{}", i ? ", " : "", devices[i]);
  return out;
}

// GL thread: the device check and the registration.
Result<std::shared_ptr<GlRegistration>> register_on_gl_thread(const CudaRuntimeApi& api, const PboHandle& pbo,
                                                              int device) {
  if (pbo.deleted()) return fail(pbo.gone_error("cuda::map of a GL PBO"));
  if (pbo.cpu_mapped())
    return fail(ErrorCode::Busy, text::format("cuda::map of GL buffer {} refused: it is CPU-mapped; close the CPU map "
                                             "(ReadMap/WriteMap) first",
                                             pbo.name()));
  ET_TRY_ASSIGN(auto guard, DeviceGuard::enter(api, device));
  unsigned count = 0;
  int devices[kMaxGlDevices] = {};
  CudaError e = api.cudaGLGetDevices(&count, devices, kMaxGlDevices, kGLDeviceListAll);
  if (e == kCudaErrorNoDevice)
    return fail(ErrorCode::Unsupported,
                text::format("cuda::map of GL buffer {}: the GL context on {} is not on a CUDA device ({}); create "
                            "the gl::Context on the NVIDIA EGL device (gl::ContextOptions::device_index)",
                            pbo.name(), pbo.context_label(), describe_error(api, e)));
  if (e != kCudaSuccess) return fail(cuda_error(api, e, "cudaGLGetDevices(cudaGLDeviceListAll)"));
  if (count > kMaxGlDevices) count = kMaxGlDevices;
  bool found = false;
  for (unsigned i = 0; i < count; ++i) found = found || devices[i] == device;
  if (!found)
    return fail(ErrorCode::FailedPrecondition,
                text::format("cuda::map of GL buffer {}: the GL context on {} runs on CUDA device(s) [{}], not on the "
                            "requested CUDA device {}; map with MapOptions::device set to one of those, or create the "
                            "gl::Context on the EGL device of CUDA device {}",
                            pbo.name(), pbo.context_label(), join_devices(devices, count), device, device));
  CudaGraphicsResource res = nullptr;
  e = api.cudaGraphicsGLRegisterBuffer(&res, pbo.name(), kGraphicsRegisterFlagsNone);
  if (e != kCudaSuccess)
    return fail(cuda_error(api, e, text::format("cudaGraphicsGLRegisterBuffer(GL buffer {}, {} B, flags none) on device {}",
                                               pbo.name(), pbo.buffer_bytes(), device)));
  auto reg = std::make_shared<GlRegistration>();
  reg->api = &api;
  reg->device = device;
  reg->buffer = pbo.name();
  reg->resource = res;
  auto attachment = std::make_unique<GlAttachment>(reg);
  reg->attachment = attachment.get();
  pbo.attach(std::move(attachment));
  return reg;
}

// GL thread: undoes a registration whose caller gave up waiting.
void drop_registration(const PboHandle& pbo, const std::shared_ptr<GlRegistration>& reg) noexcept {
  unregister_on_gl_thread(*reg);
  pbo.detach(reg->attachment);
}

// GL thread: one map.
Result<void*> map_on_gl_thread(const PboHandle& pbo, GlRegistration& reg, CudaStream stream) {
  if (pbo.deleted() || reg.released) return fail(pbo.gone_error("cuda::map of a GL PBO"));
  if (pbo.cpu_mapped())
    return fail(ErrorCode::Busy, text::format("cuda::map of GL buffer {} refused: it is CPU-mapped; close the CPU map "
                                             "(ReadMap/WriteMap) first",
                                             pbo.name()));
  if (reg.mapped)
    return fail(ErrorCode::Busy, text::format("cuda::map of GL buffer {} refused: another CudaMap of it is open (one "
                                             "CUDA map per PBO at a time); release it first",
                                             pbo.name()));
  const CudaRuntimeApi& api = *reg.api;
  ET_TRY_ASSIGN(auto guard, DeviceGuard::enter(api, reg.device));
  CudaGraphicsResource res = reg.resource;
  CudaError e = api.cudaGraphicsMapResources(1, &res, stream);
  if (e != kCudaSuccess)
    return fail(cuda_error(api, e, text::format("cudaGraphicsMapResources(GL buffer {}, stream {})", pbo.name(),
                                               static_cast<void*>(stream))));
  reg.mapped = true;
  void* ptr = nullptr;
  std::size_t size = 0;
  e = api.cudaGraphicsResourceGetMappedPointer(&ptr, &size, res);
  if (e != kCudaSuccess || !ptr || size < pbo.buffer_bytes()) {
    Error err = e != kCudaSuccess
                    ? cuda_error(api, e, text::format("cudaGraphicsResourceGetMappedPointer(GL buffer {})", pbo.name()))
                    : Error(ErrorCode::Internal,
                            text::format("cudaGraphicsResourceGetMappedPointer(GL buffer {}) gave {} B at {}; the buffer "
                                        "has {} B",
                                        pbo.name(), size, ptr, pbo.buffer_bytes()));
    unmap_on_gl_thread(reg, stream);
    return fail(std::move(err));
  }
  return ptr;
}

class GlHandle final : public CudaHandle {
 public:
  GlHandle(PboHandle pbo, std::shared_ptr<GlRegistration> reg, int device)
      : pbo_(std::move(pbo)), reg_(std::move(reg)), device_(device) {}
  // Makes no CUDA call: the attachment unregisters on the GL thread when the PBO is deleted (the Backing
  // is destroyed right after this handle) or its context shuts down. No CudaMap is open here: each one
  // keeps the storage alive.
  ~GlHandle() override = default;

  CudaPath path() const noexcept override { return CudaPath::GlBuffer; }
  int device() const noexcept override { return device_; }
  /// Null: a GL buffer has a device address only while a CudaMap maps it.
  void* base() const noexcept override { return nullptr; }

  Result<void*> begin_map(CudaStream stream) override {
    if (pbo_.disconnected()) return fail(pbo_.gone_error("cuda::map of a GL PBO"));
    auto pbo = pbo_;
    auto reg = reg_;
    return pbo_.call<void*>(
        [pbo, reg, stream]() { return map_on_gl_thread(pbo, *reg, stream); },
        // The caller stopped waiting after the map was made: unmap it, or the PBO would stay CUDA-mapped.
        [reg, stream](Result<void*>&) { unmap_on_gl_thread(*reg, stream); });
  }

  void end_map(CudaStream stream) noexcept override {
    auto reg = reg_;
    // Fire and forget (a release never blocks); FIFO: a later CPU map, with_buffer or delete of this
    // buffer runs after the unmap. drain_ok: during shutdown the queue still runs it.
    if (!pbo_.post([reg, stream] { unmap_on_gl_thread(*reg, stream); }) && !pbo_.disconnected())
      log(LogLevel::Warning, "cudaGraphicsUnmapResources of GL buffer {} could not be posted to the GL thread",
          pbo_.name());
  }

 private:
  PboHandle pbo_;
  std::shared_ptr<GlRegistration> reg_;
  int device_;
};

}  // namespace

Result<std::unique_ptr<DeviceHandle>> make_gl_handle(const CudaRuntimeApi& api, Storage& storage, int device) {
  auto found = PboHandle::of(storage);
  if (!found) return fail(ErrorCode::Internal, "cuda::map: a gl_pbo storage without a PBO buffer: " + found.error().message());
  if (!api.has_gl_interop()) {
    std::string missing;
    for (const auto& m : load_info().missing_optional)
      if (m.rfind("cudaGraphics", 0) == 0 || m.rfind("cudaGL", 0) == 0) missing += (missing.empty() ? "" : ", ") + m;
    return fail(ErrorCode::Unsupported,
                text::format("cuda::map of a gl_pbo tensor: the CUDA runtime {} lacks the GL-interop symbols ({})",
                            load_info().file, missing.empty() ? "some" : missing));
  }
  PboHandle pbo = std::move(*found);
  if (pbo.disconnected()) return fail(pbo.gone_error("cuda::map of a GL PBO"));
  const CudaRuntimeApi* a = &api;
  ET_TRY_ASSIGN(auto reg, pbo.call<std::shared_ptr<GlRegistration>>(
                              [a, pbo, device]() { return register_on_gl_thread(*a, pbo, device); },
                              // The caller gave up after the registration was made: undo it.
                              [pbo](Result<std::shared_ptr<GlRegistration>>& r) { drop_registration(pbo, *r); }));
  return std::unique_ptr<DeviceHandle>(new GlHandle(std::move(pbo), std::move(reg), device));
}

}  // namespace detail

}  // namespace cuda
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
