// SPDX-License-Identifier: Apache-2.0
// Internals of libet_fake_cudart.so, a TEST DOUBLE of the CUDA runtime (see fake_cudart_control.h),
// shared by its files:
//   fake_cudart_state.cpp    the state, the ET_FAKE_CUDART_* knobs, call recording, object bookkeeping
//                            shared by the runtime and driver entry points, the control functions
//   fake_cudart_runtime.cpp  the runtime API (cuda*)
//   fake_cudart_driver.cpp   the driver API, reached through cudaGetDriverEntryPointByVersion
//   fake_cudart_gl.cpp       GL interop (left out of the ET_FAKE_OMIT_GL_INTEROP variant)
// Everything declared here has hidden visibility: the double exports only the runtime and control symbols.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "fake_cudart_control.h"

#define ET_FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace et_fake __attribute__((visibility("hidden"))) {

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
  // Device work: while hold_events, cudaEventRecord leaves its event pending (not complete) until its
  // due time (hold_ms after the record; hold_ms < 0: never), et_fake_cudart_complete_events() or a
  // cudaEventSynchronize of it.
  bool hold_events = false;
  int hold_ms = -1;
  std::map<void*, std::chrono::steady_clock::time_point> pending_events;  // event -> due
  std::vector<std::chrono::steady_clock::time_point> orphan_work;  // due times of destroyed pending events
  int violations = 0;
  int freed_while_pending = 0;  // memory unregistered or destroyed while an event was pending
};
State& st();
// Forgets the pending events whose due time has passed (their work completed). Under st().mu.
void expire_events(State& s);
// Counts a free of device-reachable memory while recorded work is pending. Under st().mu.
void note_free(State& s);

// ---- Knobs: the environment, read at each call -------------------------------------------------------
int runtime_version();  // ET_FAKE_CUDART_RUNTIME_VERSION, default: CUDART_VERSION of the headers
int driver_version();   // ET_FAKE_CUDART_DRIVER_VERSION, default 13000; 0 = no driver
                        // (a variant may change both defaults: ET_FAKE_DEFAULT_{RUNTIME,DRIVER}_VERSION)
int device_count();     // ET_FAKE_CUDART_DEVICES, default 1
bool has_driver();
bool driver_accepts_dmabuf();  // ET_FAKE_CUDART_DMABUF set: the driver imports DMA-BUF fds
std::string gl_devices();      // ET_FAKE_CUDART_GL_DEVICES, default "0": "none" or a list "1,0"

// ---- GL state of the calling thread (through the libEGL the process has loaded; never loads it) ------
bool gl_current();
int gl_buffer_alive(unsigned name);       // glIsBuffer with a current context, else -1
std::size_t gl_buffer_size(unsigned name);

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

// ---- Bookkeeping shared by the runtime and the driver entry points (call with the state lock held) ----
bool in_device_range(const void* p, std::size_t n);
// Validates, maps the fd, takes ownership of it.
int import_common(Rec& r, void** out, int type, int fd, unsigned long long size, unsigned flags,
                  const unsigned char* desc, std::size_t flags_end, std::size_t desc_size, int accepted_type2);
int mapped_buffer_common(void** out, void* ext, unsigned long long offset, unsigned long long size, unsigned flags,
                         const unsigned char* desc, std::size_t flags_end, std::size_t desc_size);
int free_common(void* p);
int destroy_common(void* ext);

}  // namespace et_fake

#define ET_NEED_DRIVER()                                   \
  do {                                                     \
    if (int inj_ = r.injected()) return r.done(static_cast<cudaError_t>(inj_)); \
    if (!has_driver()) return r.done(cudaErrorInsufficientDriver); \
  } while (0)
