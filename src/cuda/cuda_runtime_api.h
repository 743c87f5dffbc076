// SPDX-License-Identifier: Apache-2.0
// The CUDA runtime, loaded with dlopen once per process and never unloaded.
//
// No toolkit header is included anywhere in the library: the few types we pass are declared here with
// the ABI of the CUDA Runtime API (cuda_runtime_api.h / driver_types.h of CUDA 11.x-13.0; every handle
// is an opaque pointer, every enum an int, cudaError_t an int). Structs whose layout changed between
// majors are never used; the external-memory descriptors go through the per-major tables in
// descriptor_layout.h.
//
// Loader order: EDGETENSOR_DISABLE_CUDA=1 disables CUDA; EDGETENSOR_CUDART=<path> loads exactly that
// file (nothing else is tried); otherwise libcudart.so.13, .12, .11.0, then the bare libcudart.so (only
// present with a toolkit's -dev files), keeping the first that has every required symbol and whose
// cudaGetDeviceCount does not answer cudaErrorInsufficientDriver (include/edgetensor/cuda.h says why
// only that error means "try the next"). The environment is read once, on first use.
#pragma once

#include <edgetensor/abi.h>  // ET_ABI_NAMESPACE

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

#include "base/process.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace cuda {
namespace detail {

// ---- Minimal ABI declarations (values from driver_types.h, CUDA 13.0; unchanged since 11.0) ----------
using CudaError = int;  // enum cudaError
using CudaStream = void*;
using CudaEvent = void*;
using CudaExternalMemory = void*;
using CudaGraphicsResource = void*;
using CuDevicePtr = unsigned long long;  // CUdeviceptr (64-bit builds)
using CuResult = int;                    // CUresult

inline constexpr CudaError kCudaSuccess = 0;
inline constexpr CudaError kCudaErrorInvalidValue = 1;
inline constexpr CudaError kCudaErrorMemoryAllocation = 2;
inline constexpr CudaError kCudaErrorInitializationError = 3;
inline constexpr CudaError kCudaErrorInsufficientDriver = 35;
inline constexpr CudaError kCudaErrorNoDevice = 100;
inline constexpr CudaError kCudaErrorNotReady = 600;  // cudaEventQuery: the recorded work is not complete
inline constexpr CudaError kCudaErrorHostMemoryAlreadyRegistered = 712;
inline constexpr CudaError kCudaErrorNotSupported = 801;

// cudaMemcpyKind
inline constexpr int kMemcpyHostToDevice = 1;
inline constexpr int kMemcpyDeviceToHost = 2;
inline constexpr int kMemcpyDeviceToDevice = 3;
// cudaHostRegister flags
inline constexpr unsigned kHostRegisterPortable = 0x01;
inline constexpr unsigned kHostRegisterMapped = 0x02;
inline constexpr unsigned kHostRegisterReadOnly = 0x08;
// cudaStreamNonBlocking, cudaEventDisableTiming
inline constexpr unsigned kStreamNonBlocking = 0x01;
inline constexpr unsigned kEventDisableTiming = 0x02;
// cudaDeviceAttr
inline constexpr int kDevAttrComputeCapabilityMajor = 75;
inline constexpr int kDevAttrComputeCapabilityMinor = 76;
inline constexpr int kDevAttrIntegrated = 18;
inline constexpr int kDevAttrCanMapHostMemory = 19;
// cudaExternalMemoryHandleType / CUexternalMemoryHandleType (cuda.h 13.0: DMABUF_FD = 9)
inline constexpr int kExternalMemoryHandleTypeOpaqueFd = 1;
inline constexpr int kCuExternalMemoryHandleTypeDmaBufFd = 9;
// cudaDriverEntryPointQueryResult
inline constexpr int kDriverEntryPointSuccess = 0;
inline constexpr unsigned long long kEnableDefault = 0;

/// The resolved symbols. Core members are never null in a loaded table; optional groups may be.
struct CudaRuntimeApi {
  // Core (required).
  const char* (*cudaGetErrorName)(CudaError);
  const char* (*cudaGetErrorString)(CudaError);
  CudaError (*cudaRuntimeGetVersion)(int*);
  CudaError (*cudaDriverGetVersion)(int*);
  CudaError (*cudaGetDeviceCount)(int*);
  CudaError (*cudaGetDevice)(int*);
  CudaError (*cudaSetDevice)(int);
  CudaError (*cudaDeviceGetAttribute)(int*, int, int);
  CudaError (*cudaMemGetInfo)(std::size_t*, std::size_t*);
  CudaError (*cudaDeviceSynchronize)();
  CudaError (*cudaMalloc)(void**, std::size_t);
  CudaError (*cudaFree)(void*);
  CudaError (*cudaMemcpy)(void*, const void*, std::size_t, int);
  CudaError (*cudaMemcpyAsync)(void*, const void*, std::size_t, int, CudaStream);
  CudaError (*cudaStreamCreateWithFlags)(CudaStream*, unsigned);
  CudaError (*cudaStreamDestroy)(CudaStream);
  CudaError (*cudaStreamSynchronize)(CudaStream);
  CudaError (*cudaEventCreateWithFlags)(CudaEvent*, unsigned);
  CudaError (*cudaEventRecord)(CudaEvent, CudaStream);
  CudaError (*cudaEventSynchronize)(CudaEvent);
  CudaError (*cudaEventQuery)(CudaEvent);
  CudaError (*cudaEventDestroy)(CudaEvent);
  CudaError (*cudaHostRegister)(void*, std::size_t, unsigned);
  CudaError (*cudaHostUnregister)(void*);
  CudaError (*cudaHostGetDevicePointer)(void**, void*, unsigned);
  CudaError (*cudaImportExternalMemory)(CudaExternalMemory*, const void* desc);
  CudaError (*cudaExternalMemoryGetMappedBuffer)(void**, CudaExternalMemory, const void* desc);
  CudaError (*cudaDestroyExternalMemory)(CudaExternalMemory);

  // Optional group "driver entry points" (cudaGetDriverEntryPointByVersion: 12.5+;
  // cudaGetDriverEntryPoint: 11.3+, deprecated in 13.0; 11.x has no status argument).
  CudaError (*cudaGetDriverEntryPointByVersion)(const char*, void**, unsigned, unsigned long long, int*);
  CudaError (*cudaGetDriverEntryPoint)(const char*, void**, unsigned long long, int*);

  // Optional group "GL interop" (cuda_gl_interop.h; used by the CUDA-GL path).
  CudaError (*cudaGraphicsGLRegisterBuffer)(CudaGraphicsResource*, unsigned /*GLuint*/, unsigned);
  CudaError (*cudaGraphicsUnregisterResource)(CudaGraphicsResource);
  CudaError (*cudaGraphicsMapResources)(int, CudaGraphicsResource*, CudaStream);
  CudaError (*cudaGraphicsUnmapResources)(int, CudaGraphicsResource*, CudaStream);
  CudaError (*cudaGraphicsResourceGetMappedPointer)(void**, std::size_t*, CudaGraphicsResource);
  CudaError (*cudaGLGetDevices)(unsigned*, int*, unsigned, int /*cudaGLDeviceList*/);

  bool has_driver_entry_points() const noexcept {
    return cudaGetDriverEntryPointByVersion != nullptr || cudaGetDriverEntryPoint != nullptr;
  }
  bool has_gl_interop() const noexcept {
    return cudaGraphicsGLRegisterBuffer && cudaGraphicsUnregisterResource && cudaGraphicsMapResources &&
           cudaGraphicsUnmapResources && cudaGraphicsResourceGetMappedPointer && cudaGLGetDevices;
  }
};

/// What the loader did. Filled once; immutable afterwards.
struct LoadInfo {
  bool disabled = false;           // EDGETENSOR_DISABLE_CUDA=1
  bool from_env = false;           // EDGETENSOR_CUDART named the file
  std::string file;                // the loaded file's path (dlinfo link map), empty when none
  std::vector<std::string> tried;  // "<name>: <why>" for every candidate that did not work (LoaderReport::tried)
  std::vector<std::string> missing_required;  // required symbols absent from `file` (then no table)
  std::vector<std::string> missing_optional;  // optional symbols absent from `file`
  std::string error;               // why no table, empty when loaded
  pid_t load_pid = 0;              // process that loaded it (for messages)
  edgetensor::detail::ProcessToken load_token = 0;  // its process token (core/process.h)
};

/// The runtime table, loading it on first call (thread-safe). Null when nothing usable loaded; then
/// load_info().error says why. Never throws, never aborts.
const CudaRuntimeApi* runtime() noexcept;
/// The loader's record (triggers the load like runtime()).
const LoadInfo& load_info() noexcept;

/// True in a child of fork() made after this process loaded the runtime: CUDA does not survive fork,
/// so every entry point fails fast there. Objects holding CUDA state record process_token() and skip
/// CUDA in their destructors when forked_since() it (core/process.h).
bool in_forked_child() noexcept;

/// The error name and text, e.g. "cudaErrorInsufficientDriver (35): CUDA driver version is
/// insufficient for CUDA runtime version". Works without a driver.
std::string describe_error(const CudaRuntimeApi& api, CudaError error);

/// A driver API function we call: its base name and the CUDA version that introduced the ABI our
/// declaration has (the PFN_<name>_v<version> typedefs of cudaTypedefs.h, CUDA 13.0).
struct DriverSymbol {
  const char* name;
  int abi_version;  // 1000 * major + 10 * minor
};
inline constexpr DriverSymbol kCuDeviceGetName{"cuDeviceGetName", 2000};
inline constexpr DriverSymbol kCuDeviceTotalMem{"cuDeviceTotalMem", 3020};  // _v2: size_t bytes
inline constexpr DriverSymbol kCuMemFree{"cuMemFree", 3020};                // _v2: 64-bit CUdeviceptr
inline constexpr DriverSymbol kCuImportExternalMemory{"cuImportExternalMemory", 10000};
inline constexpr DriverSymbol kCuExternalMemoryGetMappedBuffer{"cuExternalMemoryGetMappedBuffer", 10000};
inline constexpr DriverSymbol kCuDestroyExternalMemory{"cuDestroyExternalMemory", 10000};
inline constexpr DriverSymbol kCuGetErrorName{"cuGetErrorName", 6000};
inline constexpr DriverSymbol kCuGetErrorString{"cuGetErrorString", 6000};
inline constexpr DriverSymbol kDriverSymbols[] = {kCuDeviceGetName,         kCuDeviceTotalMem,
                                                  kCuMemFree,               kCuImportExternalMemory,
                                                  kCuExternalMemoryGetMappedBuffer, kCuDestroyExternalMemory,
                                                  kCuGetErrorName,          kCuGetErrorString};

/// Looks up a driver API function with the ABI `symbol.abi_version` names, through
/// cudaGetDriverEntryPointByVersion (never asking for more than `driver_version`, which it refuses:
/// CUDA Runtime API, "Driver Entry Point Access"), else cudaGetDriverEntryPoint. Null when
/// unavailable; `reason` (optional) receives why.
void* driver_entry_point(const CudaRuntimeApi& api, DriverSymbol symbol, int driver_version, std::string* reason);

}  // namespace detail
}  // namespace cuda
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
