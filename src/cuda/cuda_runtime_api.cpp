// SPDX-License-Identifier: Apache-2.0
#include "cuda/cuda_runtime_api.h"

#include <edgetensor/cuda.h>  // version_string

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

// "<name>: <why>" for a failed dlopen(name). dlerror() itself starts with "<name>: " when it names
// the file as given (not found); that prefix is dropped so the name is not repeated.
std::string dl_failure(const char* name) {
  const char* e = dlerror();
  std::string why = e ? e : "unknown dlopen error";
  const std::string prefix = std::string(name) + ": ";
  if (why.compare(0, prefix.size(), prefix) == 0) why.erase(0, prefix.size());
  return prefix + why;
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
      info.tried.push_back(dl_failure(override_path));
      info.error = text::format("EDGETENSOR_CUDART could not be loaded: {}", info.tried.back());
      return out;
    }
  } else {
    for (const char* name : kSonames) {
      handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (handle) break;
      info.tried.push_back(dl_failure(name));
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
  std::vector<std::string>& missing = info.missing_required;
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
  // The optional groups are resolved even when a required symbol is missing, so that the status
  // lists everything the file lacks.
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
  if (!missing.empty()) {
    std::string names;
    for (const auto& m : missing) names += (names.empty() ? "" : ", ") + m;
    info.error = text::format("{} lacks required CUDA runtime symbol(s): {}", info.file, names);
    return out;
  }
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

void* driver_entry_point(const CudaRuntimeApi& api, DriverSymbol symbol, int driver_version, std::string* reason) {
  if (driver_version < symbol.abi_version) {
    if (reason)
      *reason = text::format("driver {} predates the {} we call (CUDA {})", version_string(driver_version), symbol.name,
                             version_string(symbol.abi_version));
    return nullptr;
  }
  void* fn = nullptr;
  int query = -1;
  CudaError e;
  const char* via = api.cudaGetDriverEntryPointByVersion ? "cudaGetDriverEntryPointByVersion" : "cudaGetDriverEntryPoint";
  if (api.cudaGetDriverEntryPointByVersion) {
    // The ABI version, not the runtime's: a runtime newer than the driver (minor-version
    // compatibility) would be refused, and a newer version could hand out a later _vN form.
    e = api.cudaGetDriverEntryPointByVersion(symbol.name, &fn, static_cast<unsigned>(symbol.abi_version),
                                             kEnableDefault, &query);
  } else if (api.cudaGetDriverEntryPoint) {
    // 11.3-12.4 runtimes: the runtime's own version is used; every symbol we call kept its ABI
    // through 12.4, so the form returned is the one declared.
    e = api.cudaGetDriverEntryPoint(symbol.name, &fn, kEnableDefault, &query);
    if (e == kCudaSuccess && fn) query = kDriverEntryPointSuccess;  // 11.x writes no status
  } else {
    if (reason) *reason = "the runtime has no cudaGetDriverEntryPoint";
    return nullptr;
  }
  if (e != kCudaSuccess || !fn || query != kDriverEntryPointSuccess) {
    if (reason)
      *reason = e != kCudaSuccess
                    ? text::format("{}({}, {}): {}", via, symbol.name, symbol.abi_version, describe_error(api, e))
                    : text::format("the driver does not offer {} (CUDA {} ABI; query result {})", symbol.name,
                                   version_string(symbol.abi_version), query);
    return nullptr;
  }
  return fn;
}

}  // namespace edgetensor::cuda::detail
