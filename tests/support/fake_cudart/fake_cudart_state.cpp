// SPDX-License-Identifier: Apache-2.0
// libet_fake_cudart.so: the state, the ET_FAKE_CUDART_* knobs, the GL probe, the bookkeeping shared by
// the runtime and driver entry points, and the control functions (fake_cudart_control.h).
#include <dlfcn.h>
#include <sys/mman.h>

#include <cstdlib>

#include "fake_cudart_internal.h"

namespace et_fake __attribute__((visibility("hidden"))) {

State& st() {
  static State* s = new State();  // never destroyed: calls may come during exit
  return *s;
}

static int env_int(const char* name, int dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : dflt;
}
// Build-time defaults of a variant (the soname variants of the loader-fallback lane); the
// environment still overrides them.
#ifndef ET_FAKE_DEFAULT_RUNTIME_VERSION
#define ET_FAKE_DEFAULT_RUNTIME_VERSION CUDART_VERSION
#endif
#ifndef ET_FAKE_DEFAULT_DRIVER_VERSION
#define ET_FAKE_DEFAULT_DRIVER_VERSION 13000
#endif
int runtime_version() { return env_int("ET_FAKE_CUDART_RUNTIME_VERSION", ET_FAKE_DEFAULT_RUNTIME_VERSION); }
int driver_version() { return env_int("ET_FAKE_CUDART_DRIVER_VERSION", ET_FAKE_DEFAULT_DRIVER_VERSION); }
int device_count() { return env_int("ET_FAKE_CUDART_DEVICES", 1); }
bool has_driver() { return driver_version() > 0; }
bool driver_accepts_dmabuf() { return std::getenv("ET_FAKE_CUDART_DMABUF") != nullptr; }
std::string gl_devices() {
  const char* env = std::getenv("ET_FAKE_CUDART_GL_DEVICES");
  return env && *env ? env : "0";
}

namespace {
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
}  // namespace

bool gl_current() {
  const GlProbe& g = gl_probe();
  return g.ok() && g.get_current_context() != nullptr;
}
int gl_buffer_alive(unsigned name) {
  if (!gl_current()) return -1;
  return gl_probe().is_buffer(name) ? 1 : 0;
}
// The size of a live GL buffer (GL_COPY_READ_BUFFER, left unbound; the library uses COPY_WRITE).
std::size_t gl_buffer_size(unsigned name) {
  const GlProbe& g = gl_probe();
  constexpr unsigned kCopyRead = 0x8F36, kBufferSize = 0x8764;
  long long size = 0;
  g.bind_buffer(kCopyRead, name);
  g.get_buffer_parameteri64v(kCopyRead, kBufferSize, &size);
  g.bind_buffer(kCopyRead, 0);
  return size > 0 ? static_cast<std::size_t>(size) : 0;
}

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

static bool all_zero(const unsigned char* p, std::size_t from, std::size_t to) {
  for (std::size_t i = from; i < to; ++i)
    if (p[i]) return false;
  return true;
}

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

void expire_events(State& s) {
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(s.pending_events, [now](const auto& p) { return p.second <= now; });
  std::erase_if(s.orphan_work, [now](const auto& due) { return due <= now; });
}

void note_free(State& s) {
  expire_events(s);
  if (!s.pending_events.empty() || !s.orphan_work.empty()) ++s.freed_while_pending;
}

int destroy_common(void* ext) {
  State& s = st();
  auto* e = static_cast<Ext*>(ext);
  if (!s.exts.count(e)) {
    ++s.violations;
    return cudaErrorInvalidResourceHandle;
  }
  note_free(s);
  if (e->live_buffers != 0) ++s.violations;  // mapped buffers must be freed first
  munmap(e->base, e->size);
  if (close(e->fd) != 0) ++s.violations;  // CUDA owns the imported fd and closes it; EBADF = closed twice
  s.exts.erase(e);
  delete e;
  return cudaSuccess;
}

}  // namespace et_fake

using namespace et_fake;

// ---- Control ---------------------------------------------------------------------------------------
ET_FAKE_EXPORT void et_fake_cudart_reset(void) {
  std::lock_guard<std::mutex> l(st().mu);
  st().calls.clear();
  st().plans.clear();
  st().violations = 0;
  st().freed_while_pending = 0;
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
ET_FAKE_EXPORT void et_fake_cudart_hold_events(int hold) {
  std::lock_guard<std::mutex> l(st().mu);
  st().hold_events = hold != 0;
  st().hold_ms = -1;
}
ET_FAKE_EXPORT void et_fake_cudart_hold_events_for(int ms) {
  std::lock_guard<std::mutex> l(st().mu);
  st().hold_events = true;
  st().hold_ms = ms < 0 ? 0 : ms;
}
ET_FAKE_EXPORT int et_fake_cudart_freed_while_pending(void) {
  std::lock_guard<std::mutex> l(st().mu);
  return st().freed_while_pending;
}
ET_FAKE_EXPORT void et_fake_cudart_complete_events(void) {
  std::lock_guard<std::mutex> l(st().mu);
  st().pending_events.clear();
  st().orphan_work.clear();
}
ET_FAKE_EXPORT int et_fake_cudart_pending_events(void) {
  std::lock_guard<std::mutex> l(st().mu);
  expire_events(st());
  return static_cast<int>(st().pending_events.size());
}
ET_FAKE_EXPORT int et_fake_cudart_owned_fds(int* out, int max) {
  std::lock_guard<std::mutex> l(st().mu);
  int n = 0;
  for (auto& [e, _] : st().exts)
    if (n < max) out[n++] = e->fd;
  return n;
}
