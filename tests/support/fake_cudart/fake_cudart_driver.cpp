// SPDX-License-Identifier: Apache-2.0
// libet_fake_cudart.so, the TEST DOUBLE of the CUDA runtime: the driver API. Its functions are not
// exported; the library reaches them through cudaGetDriverEntryPointByVersion, as with the real runtime.
#include "fake_cudart_internal.h"

using namespace et_fake;

namespace {
CUresult fake_cuImportExternalMemory(CUexternalMemory* out, const CUDA_EXTERNAL_MEMORY_HANDLE_DESC* desc) {
  Rec r("cuImportExternalMemory");
  r.desc(desc, sizeof *desc);
  r.arg(static_cast<unsigned long long>(desc->type)).fd(desc->handle.fd).arg(desc->size).arg(desc->flags);
  if (int inj = r.injected()) return r.done(static_cast<CUresult>(inj));
  const int accept = driver_accepts_dmabuf() ? CU_EXTERNAL_MEMORY_HANDLE_TYPE_DMABUF_FD : -1;
  if (desc->type == CU_EXTERNAL_MEMORY_HANDLE_TYPE_DMABUF_FD && accept < 0) return r.done(CUDA_ERROR_NOT_SUPPORTED);
  void* ext = nullptr;
  int e = import_common(r, &ext, desc->type, desc->handle.fd, desc->size, desc->flags,
                        reinterpret_cast<const unsigned char*>(desc), offsetof(CUDA_EXTERNAL_MEMORY_HANDLE_DESC, flags) + 4,
                        sizeof *desc, accept);
  if (e == 0) *out = static_cast<CUexternalMemory>(ext);
  r.ptr(ext);
  return r.done(static_cast<CUresult>(e));
}
CUresult fake_cuExternalMemoryGetMappedBuffer(CUdeviceptr* p, CUexternalMemory ext, const CUDA_EXTERNAL_MEMORY_BUFFER_DESC* desc) {
  Rec r("cuExternalMemoryGetMappedBuffer");
  r.desc(desc, sizeof *desc);
  r.ptr(ext).arg(desc->offset).arg(desc->size).arg(desc->flags);
  if (int inj = r.injected()) return r.done(static_cast<CUresult>(inj));
  void* out = nullptr;
  int e = mapped_buffer_common(&out, ext, desc->offset, desc->size, desc->flags, reinterpret_cast<const unsigned char*>(desc),
                               offsetof(CUDA_EXTERNAL_MEMORY_BUFFER_DESC, flags) + 4, sizeof *desc);
  if (e == 0) *p = reinterpret_cast<CUdeviceptr>(out);
  return r.done(static_cast<CUresult>(e));
}
CUresult fake_cuMemFree(CUdeviceptr p) {
  Rec r("cuMemFree");
  r.arg(p);
  if (int inj = r.injected()) return r.done(static_cast<CUresult>(inj));
  return r.done(static_cast<CUresult>(free_common(reinterpret_cast<void*>(p))));
}
CUresult fake_cuDestroyExternalMemory(CUexternalMemory ext) {
  Rec r("cuDestroyExternalMemory");
  r.ptr(ext);
  if (int inj = r.injected()) return r.done(static_cast<CUresult>(inj));
  return r.done(static_cast<CUresult>(destroy_common(ext)));
}
CUresult fake_cuGetErrorName(CUresult e, const char** s) {
  *s = e == CUDA_ERROR_NOT_SUPPORTED ? "CUDA_ERROR_NOT_SUPPORTED" : e == 0 ? "CUDA_SUCCESS" : "CUDA_ERROR_UNKNOWN";
  return CUDA_SUCCESS;
}
CUresult fake_cuGetErrorString(CUresult e, const char** s) {
  *s = e == CUDA_ERROR_NOT_SUPPORTED ? "operation not supported" : "fake driver error";
  return CUDA_SUCCESS;
}
CUresult fake_cuDeviceGetName(char* name, int len, CUdevice) {
  std::strncpy(name, "Fake CUDA device (test double, not a GPU)", static_cast<std::size_t>(len));
  return CUDA_SUCCESS;
}
CUresult fake_cuDeviceTotalMem(size_t* b, CUdevice) {
  *b = std::size_t{8} << 30;
  return CUDA_SUCCESS;
}

void* driver_symbol(const char* s) {
  struct Entry {
    const char* name;
    void* fn;
  };
  static const Entry table[] = {
      {"cuImportExternalMemory", reinterpret_cast<void*>(&fake_cuImportExternalMemory)},
      {"cuExternalMemoryGetMappedBuffer", reinterpret_cast<void*>(&fake_cuExternalMemoryGetMappedBuffer)},
      {"cuMemFree", reinterpret_cast<void*>(&fake_cuMemFree)},
      {"cuDestroyExternalMemory", reinterpret_cast<void*>(&fake_cuDestroyExternalMemory)},
      {"cuGetErrorName", reinterpret_cast<void*>(&fake_cuGetErrorName)},
      {"cuGetErrorString", reinterpret_cast<void*>(&fake_cuGetErrorString)},
      {"cuDeviceGetName", reinterpret_cast<void*>(&fake_cuDeviceGetName)},
      {"cuDeviceTotalMem", reinterpret_cast<void*>(&fake_cuDeviceTotalMem)},
  };
  for (const auto& e : table)
    if (std::strcmp(e.name, s) == 0) return e.fn;
  return nullptr;
}
}  // namespace

extern "C" cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** fn, unsigned version,
                                                         unsigned long long flags,
                                                         cudaDriverEntryPointQueryResult* status) {
  Rec r("cudaGetDriverEntryPointByVersion");
  r.desc(symbol, std::strlen(symbol) + 1);
  r.arg(version).arg(flags);
  ET_NEED_DRIVER();
  *fn = driver_symbol(symbol);
  if (status) *status = *fn ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
  return r.done(cudaSuccess);
}
