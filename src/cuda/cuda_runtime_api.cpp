// SPDX-License-Identifier: Apache-2.0
#include "cuda/cuda_runtime_api.h"

#include <edgetensor/cuda.h>  // version_string

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <utility>

#include "text/format.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace cuda {
namespace detail {
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

// The table of one opened file: every symbol resolved (required and optional, so that the lists of
// what is missing are complete), `ok` when no required one is missing.
Loaded resolve_table(void* handle, const char* opened_as) {
  Loaded out;
  LoadInfo& info = out.info;
  // The file that actually loaded (a soname resolves through the loader's search path).
  struct link_map* lm = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && *lm->l_name) info.file = lm->l_name;
  if (info.file.empty()) info.file = opened_as;
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
  ET_RESOLVE_CORE(cudaEventQuery);
  ET_RESOLVE_CORE(cudaEventDestroy);
  ET_RESOLVE_CORE(cudaHostRegister);
  ET_RESOLVE_CORE(cudaHostUnregister);
  ET_RESOLVE_CORE(cudaHostGetDevicePointer);
  ET_RESOLVE_CORE(cudaImportExternalMemory);
  ET_RESOLVE_CORE(cudaExternalMemoryGetMappedBuffer);
  ET_RESOLVE_CORE(cudaDestroyExternalMemory);
#undef ET_RESOLVE_CORE
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

// Why a loaded runtime cannot reach a driver, or "" when it can (or fails for another reason).
// Only cudaErrorInsufficientDriver means "try the next runtime": there is no driver, or one older
// than this runtime, which an older runtime may still pair with. Every other answer (a device count,
// cudaErrorNoDevice, a stub or mismatched driver) comes from the driver and devices that all
// runtimes share: another runtime would only hide the real reason.
std::string cannot_reach_driver(const Loaded& c) {
  int count = 0;
  const CudaError e = c.api.cudaGetDeviceCount(&count);
  if (e != kCudaErrorInsufficientDriver) return {};
  int v = 0;
  const std::string runtime =
      c.api.cudaRuntimeGetVersion(&v) == kCudaSuccess ? text::format("runtime {}", version_string(v)) : "runtime ?";
  return text::format("{} ({}) cannot reach a CUDA driver: cudaGetDeviceCount: {}", c.info.file, runtime,
                      describe_error(c.api, e));
}

// EDGETENSOR_CUDART: exactly that file, nothing else.
Loaded load_exact(const char* path) {
  Loaded out;
  out.info.from_env = true;
  if (!std::strchr(path, '/')) {
    out.info.error = text::format("EDGETENSOR_CUDART='{}' is not a path (it must contain a '/'; a bare name "
                                  "would be searched for, not loaded exactly)", path);
    return out;
  }
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    out.info.tried.push_back(dl_failure(path));
    out.info.error = text::format("EDGETENSOR_CUDART could not be loaded: {}", out.info.tried.back());
    return out;
  }
  Loaded c = resolve_table(handle, path);
  c.info.from_env = true;
  return c;
}

// The soname search: the first candidate that loads, has every required symbol and reaches a driver.
// When none does, the first that loaded with every symbol (else the first that loaded at all) is kept,
// so report() gives its own error. tried lists every candidate that did not work, in order.
Loaded load_search() {
  std::vector<std::string> tried;
  std::vector<std::pair<void*, const char*>> opened;  // handle, the name that first opened it
  std::unique_ptr<Loaded> fallback;                   // loaded, but reached no driver / lacks symbols
  std::unique_ptr<Loaded> chosen;
  for (const char* name : kSonames) {
    void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      tried.push_back(dl_failure(name));
      continue;
    }
    const char* same = nullptr;
    for (const auto& [h, first] : opened)
      if (h == handle) same = first;
    Loaded c = resolve_table(handle, name);
    if (same) {
      tried.push_back(text::format("{}: {}: the same file as {}", name, c.info.file, same));
      continue;
    }
    opened.emplace_back(handle, name);
    std::string why = c.ok ? cannot_reach_driver(c) : c.info.error;
    if (why.empty()) {
      chosen = std::make_unique<Loaded>(std::move(c));
      break;
    }
    tried.push_back(text::format("{}: {}", name, why));
    if (!fallback || (c.ok && !fallback->ok)) fallback = std::make_unique<Loaded>(std::move(c));
  }
  if (!chosen) chosen = std::move(fallback);
  if (!chosen) {
    chosen = std::make_unique<Loaded>();
    std::string all;
    for (const auto& t : tried) all += (all.empty() ? "" : "; ") + t;
    chosen->info.error = "no CUDA runtime found (tried " + all + ")";
  }
  chosen->info.tried = std::move(tried);
  return std::move(*chosen);
}

// Never dlclose: the runtime registers atexit handlers and threads that outlive any unload (a
// candidate that was loaded and not used stays loaded too).
Loaded load() {
  Loaded out;
  if (env_flag("EDGETENSOR_DISABLE_CUDA")) {
    out.info.disabled = true;
    out.info.error = "CUDA disabled by EDGETENSOR_DISABLE_CUDA";
  } else if constexpr (sizeof(void*) != 8) {
    // NVIDIA ships libcudart for 64-bit x86-64 and aarch64 only (CUDA Installation Guide for Linux,
    // "System Requirements"); the descriptor tables (descriptor_layout.h) are LP64 too.
    out.info.error = text::format("no CUDA runtime for a {}-bit process: CUDA supports 64-bit targets only",
                                  sizeof(void*) * 8);
  } else if (const char* path = std::getenv("EDGETENSOR_CUDART"); path && *path) {
    out = load_exact(path);
  } else {
    out = load_search();
  }
  out.info.load_pid = getpid();
  out.info.load_token = edgetensor::detail::process_token();
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

}  // namespace detail
}  // namespace cuda
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
