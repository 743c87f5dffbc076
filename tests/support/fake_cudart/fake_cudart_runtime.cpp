// SPDX-License-Identifier: Apache-2.0
// libet_fake_cudart.so: a TEST DOUBLE of the CUDA runtime. It is NOT GPU support: it runs no device
// code, touches no driver, and backs every "device" pointer with host memory. It is compiled against
// the toolkit's own headers (cuda_runtime_api.h, driver_types.h, cuda.h), so its exported functions
// have the real signatures and its descriptor sizes are the real ones. See fake_cudart_control.h.
// This file: the runtime API (cuda*); fake_cudart_internal.h lists the other files.
#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>

#include "fake_cudart_internal.h"

using namespace et_fake;

namespace {
thread_local int t_device = 0;

// The handle descriptor size of the runtime major being emulated (13.0 added reserved[16]).
std::size_t runtime_handle_desc_size() {
#if CUDART_VERSION >= 13000
  if (runtime_version() >= 13000) return sizeof(cudaExternalMemoryHandleDesc);
  return (offsetof(cudaExternalMemoryHandleDesc, reserved) + 7) & ~std::size_t{7};
#else
  return sizeof(cudaExternalMemoryHandleDesc);
#endif
}
std::size_t runtime_buffer_desc_size() {
#if CUDART_VERSION >= 13000
  if (runtime_version() >= 13000) return sizeof(cudaExternalMemoryBufferDesc);
  return (offsetof(cudaExternalMemoryBufferDesc, reserved) + 7) & ~std::size_t{7};
#else
  return sizeof(cudaExternalMemoryBufferDesc);
#endif
}
}  // namespace

extern "C" {

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorHostMemoryAlreadyRegistered: return "cudaErrorHostMemoryAlreadyRegistered";
    case cudaErrorHostMemoryNotRegistered: return "cudaErrorHostMemoryNotRegistered";
    case cudaErrorNotSupported: return "cudaErrorNotSupported";
    case cudaErrorOperatingSystem: return "cudaErrorOperatingSystem";
    case cudaErrorInvalidGraphicsContext: return "cudaErrorInvalidGraphicsContext";
    case cudaErrorAlreadyMapped: return "cudaErrorAlreadyMapped";
    case cudaErrorNotMapped: return "cudaErrorNotMapped";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    default: return "cudaErrorUnknown";
  }
}
const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInsufficientDriver: return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorNotSupported: return "operation not supported";
    default: return "fake cudart error";
  }
}
cudaError_t cudaRuntimeGetVersion(int* v) {
  Rec r("cudaRuntimeGetVersion");
  if (int inj = r.injected()) return r.done(static_cast<cudaError_t>(inj));
  *v = runtime_version();
  return r.done(cudaSuccess);
}
cudaError_t cudaDriverGetVersion(int* v) {
  Rec r("cudaDriverGetVersion");
  if (int inj = r.injected()) return r.done(static_cast<cudaError_t>(inj));
  *v = driver_version();
  return r.done(cudaSuccess);
}
cudaError_t cudaGetDeviceCount(int* n) {
  Rec r("cudaGetDeviceCount");
  ET_NEED_DRIVER();
  *n = device_count();
  if (*n == 0) return r.done(cudaErrorNoDevice);
  r.arg(static_cast<unsigned long long>(*n));
  return r.done(cudaSuccess);
}
cudaError_t cudaGetDevice(int* d) {
  Rec r("cudaGetDevice");
  ET_NEED_DRIVER();
  *d = t_device;
  return r.done(cudaSuccess);
}
cudaError_t cudaSetDevice(int d) {
  Rec r("cudaSetDevice");
  r.arg(static_cast<unsigned long long>(d));
  ET_NEED_DRIVER();
  if (d < 0 || d >= device_count()) return r.done(cudaErrorInvalidDevice);
  t_device = d;
  return r.done(cudaSuccess);
}
cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr a, int d) {
  Rec r("cudaDeviceGetAttribute");
  r.arg(static_cast<unsigned long long>(a)).arg(static_cast<unsigned long long>(d));
  ET_NEED_DRIVER();
  switch (a) {
    case cudaDevAttrComputeCapabilityMajor: *v = 8; break;
    case cudaDevAttrComputeCapabilityMinor: *v = 7; break;
    case cudaDevAttrIntegrated: *v = 1; break;
    case cudaDevAttrCanMapHostMemory: *v = 1; break;
    default: *v = 0;
  }
  return r.done(cudaSuccess);
}
cudaError_t cudaMemGetInfo(size_t* free_b, size_t* total_b) {
  Rec r("cudaMemGetInfo");
  ET_NEED_DRIVER();
  *free_b = *total_b = std::size_t{8} << 30;
  return r.done(cudaSuccess);
}
cudaError_t cudaDeviceSynchronize(void) {
  Rec r("cudaDeviceSynchronize");
  ET_NEED_DRIVER();
  return r.done(cudaSuccess);
}
cudaError_t cudaMalloc(void** p, size_t n) {
  Rec r("cudaMalloc");
  r.arg(n);
  ET_NEED_DRIVER();
  void* m = std::aligned_alloc(256, (n + 255) & ~std::size_t{255});
  if (!m) return r.done(cudaErrorMemoryAllocation);
  st().allocs[m] = n;
  *p = m;
  r.ptr(m);
  return r.done(cudaSuccess);
}
cudaError_t cudaFree(void* p) {
  Rec r("cudaFree");
  r.ptr(p);
  ET_NEED_DRIVER();
  return r.done(static_cast<cudaError_t>(free_common(p)));
}
static cudaError_t memcpy_checked(void* d, const void* s, size_t n, cudaMemcpyKind k) {
  bool ok = true;
  if (k == cudaMemcpyHostToDevice) ok = in_device_range(d, n);
  else if (k == cudaMemcpyDeviceToHost) ok = in_device_range(s, n);
  else if (k == cudaMemcpyDeviceToDevice) ok = in_device_range(d, n) && in_device_range(s, n);
  else ok = false;
  if (!ok) return cudaErrorInvalidValue;
  std::memmove(d, s, n);
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind k) {
  Rec r("cudaMemcpy");
  r.ptr(d).ptr(s).arg(n).arg(static_cast<unsigned long long>(k));
  ET_NEED_DRIVER();
  return r.done(memcpy_checked(d, s, n, k));
}
cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind k, cudaStream_t stream) {
  Rec r("cudaMemcpyAsync");
  r.ptr(d).ptr(s).arg(n).arg(static_cast<unsigned long long>(k)).ptr(stream);
  ET_NEED_DRIVER();
  if (stream && !st().streams.count(stream)) return r.done(cudaErrorInvalidResourceHandle);
  return r.done(memcpy_checked(d, s, n, k));  // the fake completes copies at once
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags) {
  Rec r("cudaStreamCreateWithFlags");
  r.arg(flags);
  ET_NEED_DRIVER();
  auto* token = new char(0);
  st().streams.insert(token);
  *s = reinterpret_cast<cudaStream_t>(token);
  r.ptr(token);
  return r.done(cudaSuccess);
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  Rec r("cudaStreamDestroy");
  r.ptr(s);
  ET_NEED_DRIVER();
  if (!st().streams.erase(s)) {
    ++st().violations;
    return r.done(cudaErrorInvalidResourceHandle);
  }
  delete reinterpret_cast<char*>(s);
  return r.done(cudaSuccess);
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  Rec r("cudaStreamSynchronize");
  r.ptr(s);
  ET_NEED_DRIVER();
  if (s && !st().streams.count(s)) return r.done(cudaErrorInvalidResourceHandle);
  return r.done(cudaSuccess);
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned flags) {
  Rec r("cudaEventCreateWithFlags");
  r.arg(flags);
  ET_NEED_DRIVER();
  auto* token = new char(0);
  st().events.insert(token);
  *e = reinterpret_cast<cudaEvent_t>(token);
  r.ptr(token);
  return r.done(cudaSuccess);
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  Rec r("cudaEventRecord");
  r.ptr(e).ptr(s);
  ET_NEED_DRIVER();
  if (!st().events.count(e) || (s && !st().streams.count(s))) return r.done(cudaErrorInvalidResourceHandle);
  if (st().hold_events)
    st().pending_events[e] = st().hold_ms < 0 ? std::chrono::steady_clock::time_point::max()
                                              : std::chrono::steady_clock::now() + std::chrono::milliseconds(st().hold_ms);
  return r.done(cudaSuccess);
}
cudaError_t cudaEventQuery(cudaEvent_t e) {
  Rec r("cudaEventQuery");
  r.ptr(e);
  ET_NEED_DRIVER();
  if (!st().events.count(e)) return r.done(cudaErrorInvalidResourceHandle);
  expire_events(st());
  return r.done(st().pending_events.count(e) ? cudaErrorNotReady : cudaSuccess);
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  Rec r("cudaEventSynchronize");
  r.ptr(e);
  ET_NEED_DRIVER();
  if (!st().events.count(e)) return r.done(cudaErrorInvalidResourceHandle);
  st().pending_events.erase(e);  // the caller waited until the work completed
  return r.done(cudaSuccess);
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  Rec r("cudaEventDestroy");
  r.ptr(e);
  ET_NEED_DRIVER();
  if (!st().events.erase(e)) {
    ++st().violations;
    return r.done(cudaErrorInvalidResourceHandle);
  }
  // CUDA frees a pending event's resources once it completes; the work itself still runs.
  if (auto it = st().pending_events.find(e); it != st().pending_events.end()) {
    st().orphan_work.push_back(it->second);
    st().pending_events.erase(it);
  }
  delete reinterpret_cast<char*>(e);
  return r.done(cudaSuccess);
}
#ifndef ET_FAKE_OMIT_HOST_REGISTER  // the "incomplete runtime" variant lacks this required symbol
cudaError_t cudaHostRegister(void* p, size_t n, unsigned flags) {
  Rec r("cudaHostRegister");
  r.ptr(p).arg(n).arg(flags);
  ET_NEED_DRIVER();
  if (!p || n == 0 || (flags & ~0x0fu)) return r.done(cudaErrorInvalidValue);
  auto* c = static_cast<char*>(p);
  for (auto& [b, v] : st().host_regs)
    if (c < b + v.first && b < c + n) return r.done(cudaErrorHostMemoryAlreadyRegistered);
  st().host_regs[c] = {n, flags};
  return r.done(cudaSuccess);
}
#endif
cudaError_t cudaHostUnregister(void* p) {
  Rec r("cudaHostUnregister");
  r.ptr(p);
  ET_NEED_DRIVER();
  auto it = st().host_regs.find(static_cast<char*>(p));
  if (it == st().host_regs.end()) {
    ++st().violations;
    return r.done(cudaErrorHostMemoryNotRegistered);
  }
  note_free(st());
  // Teardown order: the memory must still be mapped when it is unregistered (mincore: ENOMEM if not).
  const std::uintptr_t page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const std::uintptr_t lo = reinterpret_cast<std::uintptr_t>(it->first) & ~(page - 1);
  const std::uintptr_t hi = reinterpret_cast<std::uintptr_t>(it->first) + it->second.first;
  std::vector<unsigned char> vec((hi - lo + page - 1) / page);
  if (mincore(reinterpret_cast<void*>(lo), hi - lo, vec.data()) != 0) ++st().violations;
  st().host_regs.erase(it);
  return r.done(cudaSuccess);
}
cudaError_t cudaHostGetDevicePointer(void** d, void* h, unsigned flags) {
  Rec r("cudaHostGetDevicePointer");
  r.ptr(h).arg(flags);
  ET_NEED_DRIVER();
  auto* c = static_cast<char*>(h);
  for (auto& [b, v] : st().host_regs)
    if (c >= b && c < b + v.first && (v.second & cudaHostRegisterMapped) && flags == 0) {
      *d = h;  // unified addressing: the device sees the host address
      return r.done(cudaSuccess);
    }
  return r.done(cudaErrorInvalidValue);
}
cudaError_t cudaImportExternalMemory(cudaExternalMemory_t* out, const cudaExternalMemoryHandleDesc* desc) {
  Rec r("cudaImportExternalMemory");
  const std::size_t n = runtime_handle_desc_size();
  r.desc(desc, n);
  const auto* b = reinterpret_cast<const unsigned char*>(desc);
  int type, fd;
  unsigned long long size;
  unsigned flags;
  std::memcpy(&type, b + offsetof(cudaExternalMemoryHandleDesc, type), sizeof type);
  std::memcpy(&fd, b + offsetof(cudaExternalMemoryHandleDesc, handle), sizeof fd);
  std::memcpy(&size, b + offsetof(cudaExternalMemoryHandleDesc, size), sizeof size);
  std::memcpy(&flags, b + offsetof(cudaExternalMemoryHandleDesc, flags), sizeof flags);
  r.arg(static_cast<unsigned long long>(type)).fd(fd);
  r.arg(size).arg(flags);
  ET_NEED_DRIVER();
  void* ext = nullptr;
  int e = import_common(r, &ext, type, fd, size, flags, b, offsetof(cudaExternalMemoryHandleDesc, flags) + 4, n, -1);
  if (e == cudaSuccess) *out = static_cast<cudaExternalMemory_t>(ext);
  r.ptr(ext);
  return r.done(static_cast<cudaError_t>(e));
}
cudaError_t cudaExternalMemoryGetMappedBuffer(void** p, cudaExternalMemory_t ext, const cudaExternalMemoryBufferDesc* desc) {
  Rec r("cudaExternalMemoryGetMappedBuffer");
  const std::size_t n = runtime_buffer_desc_size();
  r.desc(desc, n);
  r.ptr(ext).arg(desc->offset).arg(desc->size).arg(desc->flags);
  ET_NEED_DRIVER();
  int e = mapped_buffer_common(p, ext, desc->offset, desc->size, desc->flags, reinterpret_cast<const unsigned char*>(desc),
                               offsetof(cudaExternalMemoryBufferDesc, flags) + 4, n);
  return r.done(static_cast<cudaError_t>(e));
}
cudaError_t cudaDestroyExternalMemory(cudaExternalMemory_t ext) {
  Rec r("cudaDestroyExternalMemory");
  r.ptr(ext);
  ET_NEED_DRIVER();
  return r.done(static_cast<cudaError_t>(destroy_common(ext)));
}

}  // extern "C"
