// SPDX-License-Identifier: Apache-2.0
// libet_fake_cudart.so: a TEST DOUBLE of the CUDA runtime. It is NOT GPU support: it runs no device
// code, touches no driver, and backs every "device" pointer with host memory. It is compiled against
// the toolkit's own headers (cuda_runtime_api.h, driver_types.h, cuda.h), so its exported functions
// have the real signatures and its descriptor sizes are the real ones. See fake_cudart_control.h.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "fake_cudart_control.h"

#define ET_FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

struct Plan {
  std::string name;
  int nth;  // 0 = always
  int error;
  int seen = 0;
};
struct Ext {
  int fd = -1;
  void* base = nullptr;
  std::size_t size = 0;
  int live_buffers = 0;
};
// One registered GL buffer (cudaGraphicsResource_t points at it).
struct GlRes {
  unsigned buffer = 0;
  std::size_t size = 0;
  char* mapped = nullptr;  // host allocation while mapped
};
struct State {
  std::mutex mu;
  std::set<GlRes*> gl_resources;
  std::vector<EtFakeCall> calls;
  std::vector<Plan> plans;
  std::map<void*, std::size_t> allocs;
  std::map<char*, std::pair<std::size_t, unsigned>> host_regs;  // base -> (size, flags)
  std::map<Ext*, bool> exts;
  std::map<char*, Ext*> ext_buffers;  // mapped pointer -> owner
  std::set<void*> streams, events;
  int violations = 0;
};
State& st() {
  static State* s = new State();  // never destroyed: calls may come during exit
  return *s;
}
thread_local int t_device = 0;

int env_int(const char* name, int dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : dflt;
}
int runtime_version() { return env_int("ET_FAKE_CUDART_RUNTIME_VERSION", CUDART_VERSION); }
int driver_version() { return env_int("ET_FAKE_CUDART_DRIVER_VERSION", 13000); }
int device_count() { return env_int("ET_FAKE_CUDART_DEVICES", 1); }
bool has_driver() { return driver_version() > 0; }

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

// The GL state of the calling thread, through the libEGL the process has already loaded (never loads it).
struct GlProbe {
  void* (*get_current_context)() = nullptr;  // eglGetCurrentContext
  unsigned char (*is_buffer)(unsigned) = nullptr;                       // glIsBuffer
  void (*bind_buffer)(unsigned, unsigned) = nullptr;                    // glBindBuffer
  void (*get_buffer_parameteri64v)(unsigned, unsigned, long long*) = nullptr;  // glGetBufferParameteri64v
  bool ok() const { return get_current_context && is_buffer && bind_buffer && get_buffer_parameteri64v; }
};
const GlProbe& gl_probe() {
  static GlProbe found;
  if (found.ok()) return found;
  static GlProbe none;
  void* h = dlopen("libEGL.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!h) return none;
  using GetProc = void* (*)(const char*);
  auto get_proc = reinterpret_cast<GetProc>(dlsym(h, "eglGetProcAddress"));
  GlProbe p;
  p.get_current_context = reinterpret_cast<void* (*)()>(dlsym(h, "eglGetCurrentContext"));
  if (get_proc) {
    p.is_buffer = reinterpret_cast<unsigned char (*)(unsigned)>(get_proc("glIsBuffer"));
    p.bind_buffer = reinterpret_cast<void (*)(unsigned, unsigned)>(get_proc("glBindBuffer"));
    p.get_buffer_parameteri64v =
        reinterpret_cast<void (*)(unsigned, unsigned, long long*)>(get_proc("glGetBufferParameteri64v"));
  }
  dlclose(h);  // drops only the reference RTLD_NOLOAD added
  if (p.ok()) found = p;
  return p.ok() ? found : none;
}
bool gl_current() {
  const GlProbe& g = gl_probe();
  return g.ok() && g.get_current_context() != nullptr;
}
[[maybe_unused]] int gl_buffer_alive(unsigned name) {
  if (!gl_current()) return -1;
  return gl_probe().is_buffer(name) ? 1 : 0;
}
// The size of a live GL buffer (GL_COPY_READ_BUFFER, left unbound; the library uses COPY_WRITE).
[[maybe_unused]] std::size_t gl_buffer_size(unsigned name) {
  const GlProbe& g = gl_probe();
  constexpr unsigned kCopyRead = 0x8F36, kBufferSize = 0x8764;
  long long size = 0;
  g.bind_buffer(kCopyRead, name);
  g.get_buffer_parameteri64v(kCopyRead, kBufferSize, &size);
  g.bind_buffer(kCopyRead, 0);
  return size > 0 ? static_cast<std::size_t>(size) : 0;
}

// Records one call. Holds the state lock for its lifetime (calls are serialised, like a log).
class Rec {
 public:
  explicit Rec(const char* name) : lock_(st().mu) {
    std::memset(&c_, 0, sizeof c_);
    std::strncpy(c_.name, name, sizeof c_.name - 1);
    c_.pid = getpid();
    c_.tid = static_cast<int>(syscall(SYS_gettid));
    c_.gl_current = gl_current() ? 1 : 0;
    c_.gl_buffer_alive = -1;
  }
  Rec& arg(unsigned long long v) {
    if (n_ < 6) c_.args[n_++] = v;
    return *this;
  }
  Rec& ptr(const void* p) { return arg(reinterpret_cast<unsigned long long>(p)); }
  Rec& desc(const void* p, std::size_t n) {
    if (n > sizeof c_.desc) n = sizeof c_.desc;
    std::memcpy(c_.desc, p, n);  // reads exactly n bytes of the caller's descriptor (ASan checks it)
    c_.desc_size = static_cast<unsigned>(n);
    return *this;
  }
  Rec& fd(int fd) {
    c_.fd_open = fcntl(fd, F_GETFD) >= 0;
    return arg(static_cast<unsigned long long>(static_cast<long long>(fd)));
  }
  // An injected failure for this call, or 0.
  int injected() {
    for (auto& p : st().plans) {
      if (p.name != c_.name) continue;
      ++p.seen;
      if (p.nth == 0 || p.seen == p.nth) return p.error;
    }
    return 0;
  }
  template <class T>
  T done(T result) {
    c_.result = static_cast<int>(result);
    st().calls.push_back(c_);
    return result;
  }
  EtFakeCall& call() { return c_; }

 private:
  std::lock_guard<std::mutex> lock_;
  EtFakeCall c_;
  int n_ = 0;
};

bool in_device_range(const void* p, std::size_t n) {
  auto* c = static_cast<const char*>(p);
  State& s = st();
  for (auto& [b, sz] : s.allocs)
    if (c >= static_cast<char*>(b) && c + n <= static_cast<char*>(b) + sz) return true;
  for (auto& [b, v] : s.host_regs)
    if ((v.second & cudaHostRegisterMapped) && c >= b && c + n <= b + v.first) return true;
  for (auto& [b, e] : s.ext_buffers)
    if (c >= b && c + n <= b + e->size) return true;
  for (GlRes* g : s.gl_resources)
    if (g->mapped && c >= g->mapped && c + n <= g->mapped + g->size) return true;
  return false;
}

bool all_zero(const unsigned char* p, std::size_t from, std::size_t to) {
  for (std::size_t i = from; i < to; ++i)
    if (p[i]) return false;
  return true;
}

// Shared by the runtime and the driver import: validates, maps the fd, takes ownership of it.
int import_common(Rec& r, void** out, int type, int fd, unsigned long long size, unsigned flags,
                  const unsigned char* desc, std::size_t flags_end, std::size_t desc_size, int accepted_type2) {
  if (!out) return cudaErrorInvalidValue;
  if (!all_zero(desc, flags_end, desc_size)) {
    ++st().violations;  // reserved bytes must be zero
    return cudaErrorInvalidValue;
  }
  if (type != cudaExternalMemoryHandleTypeOpaqueFd && type != accepted_type2) return cudaErrorNotSupported;
  if (!r.call().fd_open || size == 0 || (flags & ~1u)) return cudaErrorInvalidValue;
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) return cudaErrorOperatingSystem;
  auto* e = new Ext{fd, base, static_cast<std::size_t>(size), 0};
  st().exts[e] = true;
  *out = e;
  return cudaSuccess;
}

int mapped_buffer_common(void** out, void* ext, unsigned long long offset, unsigned long long size, unsigned flags,
                         const unsigned char* desc, std::size_t flags_end, std::size_t desc_size) {
  auto* e = static_cast<Ext*>(ext);
  if (!out || !st().exts.count(e)) return cudaErrorInvalidResourceHandle;
  if (!all_zero(desc, flags_end, desc_size)) {
    ++st().violations;
    return cudaErrorInvalidValue;
  }
  if (flags != 0 || size == 0 || offset + size > e->size) return cudaErrorInvalidValue;
  char* p = static_cast<char*>(e->base) + offset;
  st().ext_buffers[p] = e;
  ++e->live_buffers;
  *out = p;
  return cudaSuccess;
}

int free_common(void* p) {
  State& s = st();
  if (!p) return cudaSuccess;
  auto a = s.allocs.find(p);
  if (a != s.allocs.end()) {
    std::free(p);
    s.allocs.erase(a);
    return cudaSuccess;
  }
  auto b = s.ext_buffers.find(static_cast<char*>(p));
  if (b != s.ext_buffers.end()) {
    --b->second->live_buffers;
    s.ext_buffers.erase(b);
    return cudaSuccess;
  }
  ++s.violations;  // double free or unknown pointer
  return cudaErrorInvalidValue;
}

int destroy_common(void* ext) {
  State& s = st();
  auto* e = static_cast<Ext*>(ext);
  if (!s.exts.count(e)) {
    ++s.violations;
    return cudaErrorInvalidResourceHandle;
  }
  if (e->live_buffers != 0) ++s.violations;  // mapped buffers must be freed first
  munmap(e->base, e->size);
  if (close(e->fd) != 0) ++s.violations;  // CUDA owns the imported fd and closes it; EBADF = closed twice
  s.exts.erase(e);
  delete e;
  return cudaSuccess;
}

#define ET_NEED_DRIVER()                                   \
  do {                                                     \
    if (int inj_ = r.injected()) return r.done(static_cast<cudaError_t>(inj_)); \
    if (!has_driver()) return r.done(cudaErrorInsufficientDriver); \
  } while (0)

}  // namespace

// ---- Control ---------------------------------------------------------------------------------------
ET_FAKE_EXPORT void et_fake_cudart_reset(void) {
  std::lock_guard<std::mutex> l(st().mu);
  st().calls.clear();
  st().plans.clear();
  st().violations = 0;
}
ET_FAKE_EXPORT int et_fake_cudart_call_count(void) {
  std::lock_guard<std::mutex> l(st().mu);
  return static_cast<int>(st().calls.size());
}
ET_FAKE_EXPORT const EtFakeCall* et_fake_cudart_call(int i) {
  std::lock_guard<std::mutex> l(st().mu);
  if (i < 0 || i >= static_cast<int>(st().calls.size())) return nullptr;
  return &st().calls[static_cast<std::size_t>(i)];
}
ET_FAKE_EXPORT int et_fake_cudart_count(const char* name) {
  std::lock_guard<std::mutex> l(st().mu);
  int n = 0;
  for (auto& c : st().calls) n += std::strcmp(c.name, name) == 0;
  return n;
}
ET_FAKE_EXPORT void et_fake_cudart_fail(const char* name, int nth, int error) {
  std::lock_guard<std::mutex> l(st().mu);
  st().plans.push_back(Plan{name, nth, error});
}
ET_FAKE_EXPORT int et_fake_cudart_live(const char* what) {
  std::lock_guard<std::mutex> l(st().mu);
  State& s = st();
  std::string w = what;
  if (w == "alloc") return static_cast<int>(s.allocs.size());
  if (w == "host_register") return static_cast<int>(s.host_regs.size());
  if (w == "ext_mem" || w == "owned_fd") return static_cast<int>(s.exts.size());
  if (w == "ext_buffer") return static_cast<int>(s.ext_buffers.size());
  if (w == "stream") return static_cast<int>(s.streams.size());
  if (w == "event") return static_cast<int>(s.events.size());
  if (w == "gl_resource") return static_cast<int>(s.gl_resources.size());
  if (w == "gl_mapped") {
    int n = 0;
    for (GlRes* g : s.gl_resources) n += g->mapped != nullptr;
    return n;
  }
  return -1;
}
ET_FAKE_EXPORT int et_fake_cudart_violations(void) {
  std::lock_guard<std::mutex> l(st().mu);
  return st().violations;
}
ET_FAKE_EXPORT int et_fake_cudart_owned_fds(int* out, int max) {
  std::lock_guard<std::mutex> l(st().mu);
  int n = 0;
  for (auto& [e, _] : st().exts)
    if (n < max) out[n++] = e->fd;
  return n;
}

// ---- Runtime API -------------------------------------------------------------------------------
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
  return r.done(cudaSuccess);
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  Rec r("cudaEventSynchronize");
  r.ptr(e);
  ET_NEED_DRIVER();
  if (!st().events.count(e)) return r.done(cudaErrorInvalidResourceHandle);
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

// ---- Driver API reached through cudaGetDriverEntryPoint (not exported) --------------------------------
namespace {
CUresult fake_cuImportExternalMemory(CUexternalMemory* out, const CUDA_EXTERNAL_MEMORY_HANDLE_DESC* desc) {
  Rec r("cuImportExternalMemory");
  r.desc(desc, sizeof *desc);
  r.arg(static_cast<unsigned long long>(desc->type)).fd(desc->handle.fd).arg(desc->size).arg(desc->flags);
  if (int inj = r.injected()) return r.done(static_cast<CUresult>(inj));
  const int accept = std::getenv("ET_FAKE_CUDART_DMABUF") ? CU_EXTERNAL_MEMORY_HANDLE_TYPE_DMABUF_FD : -1;
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

// ---- GL interop (cuda_gl_interop.h and the graphics-agnostic part of cuda_runtime_api.h) --------------
#ifndef ET_FAKE_OMIT_GL_INTEROP  // the "no GL interop" variant lacks the optional group
namespace {
// The resource, or null after counting a violation.
GlRes* known_resource(cudaGraphicsResource_t r) {
  auto* g = reinterpret_cast<GlRes*>(r);
  if (!st().gl_resources.count(g)) {
    ++st().violations;
    return nullptr;
  }
  return g;
}
// Every GL-interop call needs the GL context current on the calling thread.
#define ET_NEED_GL()                                   \
  do {                                                 \
    if (!r.call().gl_current) {                        \
      ++st().violations;                               \
      return r.done(cudaErrorInvalidGraphicsContext);  \
    }                                                  \
  } while (0)
}  // namespace

extern "C" {
cudaError_t cudaGLGetDevices(unsigned* count, int* devices, unsigned capacity, int list) {
  Rec r("cudaGLGetDevices");
  r.arg(capacity).arg(static_cast<unsigned long long>(list));
  ET_NEED_DRIVER();
  ET_NEED_GL();
  const char* env = std::getenv("ET_FAKE_CUDART_GL_DEVICES");
  std::string v = env && *env ? env : "0";
  if (v == "none") return r.done(cudaErrorNoDevice);
  if (!count || list < 1 || list > 3) return r.done(cudaErrorInvalidValue);
  unsigned n = 0;
  for (std::size_t pos = 0; pos <= v.size();) {
    std::size_t comma = v.find(',', pos);
    if (comma == std::string::npos) comma = v.size();
    if (n < capacity && devices) devices[n] = std::atoi(v.substr(pos, comma - pos).c_str());
    ++n;
    pos = comma + 1;
  }
  *count = n < capacity ? n : capacity;
  return r.done(cudaSuccess);
}

cudaError_t cudaGraphicsGLRegisterBuffer(cudaGraphicsResource_t* out, unsigned buffer, unsigned flags) {
  Rec r("cudaGraphicsGLRegisterBuffer");
  r.arg(buffer).arg(flags);
  r.call().gl_buffer_alive = gl_buffer_alive(buffer);
  ET_NEED_DRIVER();
  ET_NEED_GL();
  if (!out || flags > 2) return r.done(cudaErrorInvalidValue);
  if (r.call().gl_buffer_alive != 1) {
    ++st().violations;
    return r.done(cudaErrorInvalidValue);
  }
  for (GlRes* g : st().gl_resources)
    if (g->buffer == buffer) {
      ++st().violations;  // registered twice
      return r.done(cudaErrorInvalidValue);
    }
  auto* g = new GlRes{buffer, gl_buffer_size(buffer), nullptr};
  st().gl_resources.insert(g);
  *out = reinterpret_cast<cudaGraphicsResource_t>(g);
  r.ptr(g);
  return r.done(cudaSuccess);
}

cudaError_t cudaGraphicsMapResources(int count, cudaGraphicsResource_t* resources, cudaStream_t stream) {
  Rec r("cudaGraphicsMapResources");
  r.arg(static_cast<unsigned long long>(count)).ptr(resources && count > 0 ? resources[0] : nullptr).ptr(stream);
  ET_NEED_DRIVER();
  ET_NEED_GL();
  if (count != 1 || !resources) return r.done(cudaErrorInvalidValue);
  if (stream && !st().streams.count(stream)) return r.done(cudaErrorInvalidResourceHandle);
  GlRes* g = known_resource(resources[0]);
  if (!g) return r.done(cudaErrorInvalidResourceHandle);
  r.call().gl_buffer_alive = gl_buffer_alive(g->buffer);
  if (g->mapped) {
    ++st().violations;
    return r.done(cudaErrorAlreadyMapped);
  }
  g->mapped = static_cast<char*>(std::calloc(g->size ? g->size : 1, 1));
  return r.done(cudaSuccess);
}

cudaError_t cudaGraphicsResourceGetMappedPointer(void** ptr, size_t* size, cudaGraphicsResource_t resource) {
  Rec r("cudaGraphicsResourceGetMappedPointer");
  r.ptr(resource);
  ET_NEED_DRIVER();
  ET_NEED_GL();
  GlRes* g = known_resource(resource);
  if (!g) return r.done(cudaErrorInvalidResourceHandle);
  if (!g->mapped || !ptr || !size) return r.done(cudaErrorNotMapped);
  *ptr = g->mapped;
  *size = g->size;
  r.ptr(g->mapped).arg(g->size);
  return r.done(cudaSuccess);
}

cudaError_t cudaGraphicsUnmapResources(int count, cudaGraphicsResource_t* resources, cudaStream_t stream) {
  Rec r("cudaGraphicsUnmapResources");
  r.arg(static_cast<unsigned long long>(count)).ptr(resources && count > 0 ? resources[0] : nullptr).ptr(stream);
  ET_NEED_DRIVER();
  ET_NEED_GL();
  if (count != 1 || !resources) return r.done(cudaErrorInvalidValue);
  GlRes* g = known_resource(resources[0]);
  if (!g) return r.done(cudaErrorInvalidResourceHandle);
  r.call().gl_buffer_alive = gl_buffer_alive(g->buffer);
  if (!g->mapped) {
    ++st().violations;
    return r.done(cudaErrorNotMapped);
  }
  std::free(g->mapped);
  g->mapped = nullptr;
  return r.done(cudaSuccess);
}

cudaError_t cudaGraphicsUnregisterResource(cudaGraphicsResource_t resource) {
  Rec r("cudaGraphicsUnregisterResource");
  r.ptr(resource);
  ET_NEED_DRIVER();
  ET_NEED_GL();
  GlRes* g = known_resource(resource);
  if (!g) return r.done(cudaErrorInvalidResourceHandle);
  r.call().gl_buffer_alive = gl_buffer_alive(g->buffer);
  if (r.call().gl_buffer_alive != 1) ++st().violations;  // must come before glDeleteBuffers
  if (g->mapped) {
    ++st().violations;  // must be unmapped first
    std::free(g->mapped);
  }
  st().gl_resources.erase(g);
  delete g;
  return r.done(cudaSuccess);
}
}  // extern "C"
#endif
