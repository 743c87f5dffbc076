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
// The CUDA 2.0 ABIs, handed out for versions below 3.2 (cudaTypedefs.h: PFN_cuDeviceTotalMem_v2000 takes
// an unsigned int*, PFN_cuMemFree_v2000 a 32-bit pointer): a caller declaring the _v2 form gets garbage.
CUresult fake_cuDeviceTotalMem_v1(unsigned* b, CUdevice) {
  *b = static_cast<unsigned>((std::size_t{8} << 30) & 0xffffffffu);
  return CUDA_SUCCESS;
}
CUresult fake_cuMemFree_v1(unsigned) {
  Rec r("cuMemFree_v1");
  ++st().violations;  // nothing the library maps fits a 32-bit pointer
  return r.done(CUDA_ERROR_INVALID_VALUE);
}

// One driver symbol: the version its current ABI was introduced in, and the older ABI's function
// for versions below that (null: none; the symbol did not exist before `introduced`).
struct Entry {
  const char* name;
  unsigned introduced;
  void* fn;
  unsigned older_from = 0;
  void* older = nullptr;
};
const Entry* driver_symbol(const char* s) {
  static const Entry table[] = {
      {"cuImportExternalMemory", 10000, reinterpret_cast<void*>(&fake_cuImportExternalMemory)},
      {"cuExternalMemoryGetMappedBuffer", 10000, reinterpret_cast<void*>(&fake_cuExternalMemoryGetMappedBuffer)},
      {"cuMemFree", 3020, reinterpret_cast<void*>(&fake_cuMemFree), 2000, reinterpret_cast<void*>(&fake_cuMemFree_v1)},
      {"cuDestroyExternalMemory", 10000, reinterpret_cast<void*>(&fake_cuDestroyExternalMemory)},
      {"cuGetErrorName", 6000, reinterpret_cast<void*>(&fake_cuGetErrorName)},
      {"cuGetErrorString", 6000, reinterpret_cast<void*>(&fake_cuGetErrorString)},
      {"cuDeviceGetName", 2000, reinterpret_cast<void*>(&fake_cuDeviceGetName)},
      {"cuDeviceTotalMem", 3020, reinterpret_cast<void*>(&fake_cuDeviceTotalMem), 2000,
       reinterpret_cast<void*>(&fake_cuDeviceTotalMem_v1)},
  };
  for (const auto& e : table)
    if (std::strcmp(e.name, s) == 0) return &e;
  return nullptr;
}
}  // namespace

// Strict like the real one (CUDA Runtime API, "Driver Entry Point Access"): a version above the
// driver's is cudaErrorInvalidValue; a version below the symbol's first one finds nothing
// (VersionNotSufficent); otherwise the ABI of the newest form at or below the version.
extern "C" cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** fn, unsigned version,
                                                         unsigned long long flags,
                                                         cudaDriverEntryPointQueryResult* status) {
  Rec r("cudaGetDriverEntryPointByVersion");
  r.desc(symbol, std::strlen(symbol) + 1);
  r.arg(version).arg(flags);
  ET_NEED_DRIVER();
  if (!fn || version > static_cast<unsigned>(driver_version())) return r.done(cudaErrorInvalidValue);
  const Entry* e = driver_symbol(symbol);
  *fn = nullptr;
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  if (e && version >= e->introduced) {
    *fn = e->fn;
    q = cudaDriverEntryPointSuccess;
  } else if (e && e->older && version >= e->older_from) {
    *fn = e->older;
    q = cudaDriverEntryPointSuccess;
  } else if (e) {
    q = cudaDriverEntryPointVersionNotSufficent;
  }
  if (status) *status = q;
  return r.done(cudaSuccess);
}
