// SPDX-License-Identifier: Apache-2.0
#include "cuda/cuda_runtime_api.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "text/format.h"

namespace edgetensor::inline ET_ABI_NAMESPACE::cuda::detail {
namespace {

// Sonames, newest major first. The bare name exists only with a toolkit's -dev files, so it is last.
constexpr const char* kSonames[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"};

struct Loaded {
  CudaRuntimeApi api{};
  bool ok = false;
  LoadInfo info;
};

std::string dl_error_text() {
  const char* e = dlerror();
  return e ? e : "unknown dlopen error";
}

template <class Fn>
bool resolve(void* handle, const char* name, Fn& slot, std::vector<std::string>& missing) {
  dlerror();
  void* p = dlsym(handle, name);
  if (!p) {
    missing.emplace_back(name);
    slot = nullptr;
    return false;
  }
  slot = reinterpret_cast<Fn>(p);
  return true;
}

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

Loaded load() {
  Loaded out;
  LoadInfo& info = out.info;
  info.load_pid = getpid();
  info.load_token = edgetensor::detail::process_token();
  if (env_flag("EDGETENSOR_DISABLE_CUDA")) {
    info.disabled = true;
    info.error = "CUDA disabled by EDGETENSOR_DISABLE_CUDA";
    return out;
  }
  if constexpr (sizeof(void*) != 8) {
    // NVIDIA ships libcudart for 64-bit x86-64 and aarch64 only (CUDA Installation Guide for Linux,
    // "System Requirements"); the descriptor tables (descriptor_layout.h) are LP64 too.
    info.error = text::format("no CUDA runtime for a {}-bit process: CUDA supports 64-bit targets only",
                              sizeof(void*) * 8);
    return out;
  }
  void* handle = nullptr;
  const char* override_path = std::getenv("EDGETENSOR_CUDART");
  if (override_path && *override_path) {
    info.from_env = true;
    if (!std::strchr(override_path, '/')) {
      info.error = text::format("EDGETENSOR_CUDART='{}' is not a path (it must contain a '/'; a bare name "
                               "would be searched for, not loaded exactly)", override_path);
      return out;
    }
    handle = dlopen(override_path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      info.tried.push_back(text::format("{}: {}", override_path, dl_error_text()));
      info.error = text::format("EDGETENSOR_CUDART={} could not be loaded: {}", override_path, info.tried.back());
      return out;
    }
  } else {
    for (const char* name : kSonames) {
      handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (handle) break;
      info.tried.push_back(text::format("{}: {}", name, dl_error_text()));
    }
    if (!handle) {
      std::string all;
      for (const auto& t : info.tried) all += (all.empty() ? "" : "; ") + t;
      info.error = "no CUDA runtime found (tried " + all + ")";
      return out;
    }
  }
  // The file that actually loaded (a soname resolves through the loader's search path).
  struct link_map* lm = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name) info.file = lm->l_name;
  if (info.file.empty()) info.file = override_path ? override_path : "(unknown path)";

  // Never dlclose: the runtime registers atexit handlers and threads that outlive any unload.
  CudaRuntimeApi& a = out.api;
  std::vector<std::string> missing;
#define ET_RESOLVE_CORE(name) resolve(handle, #name, a.name, missing)
  ET_RESOLVE_CORE(cudaGetErrorName);
  ET_RESOLVE_CORE(cudaGetErrorString);
  ET_RESOLVE_CORE(cudaRuntimeGetVersion);
  ET_RESOLVE_CORE(cudaDriverGetVersion);
  ET_RESOLVE_CORE(cudaGetDeviceCount);
  ET_RESOLVE_CORE(cudaGetDevice);
  ET_RESOLVE_CORE(cudaSetDevice);
  ET_RESOLVE_CORE(cudaDeviceGetAttribute);
  ET_RESOLVE_CORE(cudaMemGetInfo);
  ET_RESOLVE_CORE(cudaDeviceSynchronize);
  ET_RESOLVE_CORE(cudaMalloc);
  ET_RESOLVE_CORE(cudaFree);
  ET_RESOLVE_CORE(cudaMemcpy);
  ET_RESOLVE_CORE(cudaMemcpyAsync);
  ET_RESOLVE_CORE(cudaStreamCreateWithFlags);
  ET_RESOLVE_CORE(cudaStreamDestroy);
  ET_RESOLVE_CORE(cudaStreamSynchronize);
  ET_RESOLVE_CORE(cudaEventCreateWithFlags);
  ET_RESOLVE_CORE(cudaEventRecord);
  ET_RESOLVE_CORE(cudaEventSynchronize);
  ET_RESOLVE_CORE(cudaEventDestroy);
  ET_RESOLVE_CORE(cudaHostRegister);
  ET_RESOLVE_CORE(cudaHostUnregister);
  ET_RESOLVE_CORE(cudaHostGetDevicePointer);
  ET_RESOLVE_CORE(cudaImportExternalMemory);
  ET_RESOLVE_CORE(cudaExternalMemoryGetMappedBuffer);
  ET_RESOLVE_CORE(cudaDestroyExternalMemory);
#undef ET_RESOLVE_CORE
  if (!missing.empty()) {
    std::string names;
    for (const auto& m : missing) names += (names.empty() ? "" : ", ") + m;
    info.error = text::format("{} lacks required CUDA runtime symbol(s): {}", info.file, names);
    return out;
  }
#define ET_RESOLVE_OPTIONAL(name) resolve(handle, #name, a.name, info.missing_optional)
  ET_RESOLVE_OPTIONAL(cudaGetDriverEntryPointByVersion);
  ET_RESOLVE_OPTIONAL(cudaGetDriverEntryPoint);
  ET_RESOLVE_OPTIONAL(cudaGraphicsGLRegisterBuffer);
  ET_RESOLVE_OPTIONAL(cudaGraphicsUnregisterResource);
  ET_RESOLVE_OPTIONAL(cudaGraphicsMapResources);
  ET_RESOLVE_OPTIONAL(cudaGraphicsUnmapResources);
  ET_RESOLVE_OPTIONAL(cudaGraphicsResourceGetMappedPointer);
  ET_RESOLVE_OPTIONAL(cudaGLGetDevices);
#undef ET_RESOLVE_OPTIONAL
  out.ok = true;
  return out;
}

const Loaded& loaded() noexcept {
  // A function-local static: initialised once, thread-safely, on first use (never at load time).
  static const Loaded instance = [] {
    try {
      return load();
    } catch (...) {
      Loaded l;
      l.info.error = "CUDA loader failed: out of memory";
      return l;
    }
  }();
  return instance;
}

}  // namespace

const CudaRuntimeApi* runtime() noexcept {
  const Loaded& l = loaded();
  return l.ok ? &l.api : nullptr;
}

const LoadInfo& load_info() noexcept { return loaded().info; }

bool in_forked_child() noexcept {
  const Loaded& l = loaded();
  if (!l.ok) return false;
  return edgetensor::detail::forked_since(l.info.load_token);
}

std::string describe_error(const CudaRuntimeApi& api, CudaError error) {
  const char* name = api.cudaGetErrorName ? api.cudaGetErrorName(error) : nullptr;
  const char* text = api.cudaGetErrorString ? api.cudaGetErrorString(error) : nullptr;
  return text::format("{} ({}): {}", name ? name : "cudaError?", error, text ? text : "no description");
}

void* driver_entry_point(const CudaRuntimeApi& api, const char* symbol, int cuda_version, std::string* reason) {
  void* fn = nullptr;
  int query = -1;
  CudaError e;
  if (api.cudaGetDriverEntryPointByVersion) {
    e = api.cudaGetDriverEntryPointByVersion(symbol, &fn, static_cast<unsigned>(cuda_version), kEnableDefault, &query);
  } else if (api.cudaGetDriverEntryPoint) {
    e = api.cudaGetDriverEntryPoint(symbol, &fn, kEnableDefault, &query);
    if (e == kCudaSuccess && fn) query = kDriverEntryPointSuccess;  // 11.x writes no status
  } else {
    if (reason) *reason = "the runtime has no cudaGetDriverEntryPoint";
    return nullptr;
  }
  if (e != kCudaSuccess || !fn || query != kDriverEntryPointSuccess) {
    if (reason)
      *reason = e != kCudaSuccess
                    ? text::format("cudaGetDriverEntryPoint({}): {}", symbol, describe_error(api, e))
                    : text::format("the driver does not offer {} (query result {})", symbol, query);
    return nullptr;
  }
  return fn;
}

}  // namespace edgetensor::cuda::detail
