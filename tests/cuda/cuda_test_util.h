// SPDX-License-Identifier: Apache-2.0
// Helpers for the CUDA lanes: access to the test-double runtime's control functions, external-memory
// options. Environment and allocation helpers: support/env.h, support/test_support.h.
#pragma once

#include <dlfcn.h>
#include <edgetensor/cuda.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "fake_cudart_control.h"
#include "support/test_support.h"

namespace et_cuda_test {

inline edgetensor::cuda::ExternalMemoryOptions ext_size(std::size_t size_bytes) {
  edgetensor::cuda::ExternalMemoryOptions o;
  o.buffer_bytes = size_bytes;
  return o;
}
inline edgetensor::cuda::ExternalMemoryOptions ext_dedicated() {
  edgetensor::cuda::ExternalMemoryOptions o;
  o.dedicated = true;
  return o;
}

/// How often `needle` occurs in `hay` (non-overlapping).
inline int occurrences(const std::string& hay, const std::string& needle) {
  int n = 0;
  for (auto pos = hay.find(needle); !needle.empty() && pos != std::string::npos; pos = hay.find(needle, pos + needle.size())) ++n;
  return n;
}

/// The control functions of libet_fake_cudart.so, found in the already loaded library.
struct Fake {
  void (*reset)() = nullptr;
  int (*call_count)() = nullptr;
  const EtFakeCall* (*call)(int) = nullptr;
  int (*count)(const char*) = nullptr;
  void (*fail)(const char*, int, int) = nullptr;
  int (*live)(const char*) = nullptr;
  int (*violations)() = nullptr;
  int (*owned_fds)(int*, int) = nullptr;
  void (*hold_events)(int) = nullptr;
  void (*complete_events)() = nullptr;
  int (*pending_events)() = nullptr;
  void (*hold_events_for)(int) = nullptr;
  int (*freed_while_pending)() = nullptr;

  static Fake open(const char* path) {
    Fake f;
    void* h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (!h) return f;
    f.reset = reinterpret_cast<decltype(f.reset)>(dlsym(h, "et_fake_cudart_reset"));
    f.call_count = reinterpret_cast<decltype(f.call_count)>(dlsym(h, "et_fake_cudart_call_count"));
    f.call = reinterpret_cast<decltype(f.call)>(dlsym(h, "et_fake_cudart_call"));
    f.count = reinterpret_cast<decltype(f.count)>(dlsym(h, "et_fake_cudart_count"));
    f.fail = reinterpret_cast<decltype(f.fail)>(dlsym(h, "et_fake_cudart_fail"));
    f.live = reinterpret_cast<decltype(f.live)>(dlsym(h, "et_fake_cudart_live"));
    f.violations = reinterpret_cast<decltype(f.violations)>(dlsym(h, "et_fake_cudart_violations"));
    f.owned_fds = reinterpret_cast<decltype(f.owned_fds)>(dlsym(h, "et_fake_cudart_owned_fds"));
    f.hold_events = reinterpret_cast<decltype(f.hold_events)>(dlsym(h, "et_fake_cudart_hold_events"));
    f.complete_events = reinterpret_cast<decltype(f.complete_events)>(dlsym(h, "et_fake_cudart_complete_events"));
    f.pending_events = reinterpret_cast<decltype(f.pending_events)>(dlsym(h, "et_fake_cudart_pending_events"));
    f.hold_events_for = reinterpret_cast<decltype(f.hold_events_for)>(dlsym(h, "et_fake_cudart_hold_events_for"));
    f.freed_while_pending =
        reinterpret_cast<decltype(f.freed_while_pending)>(dlsym(h, "et_fake_cudart_freed_while_pending"));
    dlclose(h);  // drops only the reference RTLD_NOLOAD added; the loader's own stays
    return f;
  }
  bool ok() const {
    return reset && call_count && call && count && fail && live && violations && owned_fds && hold_events &&
           complete_events && pending_events && hold_events_for && freed_while_pending;
  }

  /// Names of the calls since reset, leaving out entry-point lookups (made once per process).
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (int i = 0; i < call_count(); ++i) {
      std::string n = call(i)->name;
      if (n != "cudaGetDriverEntryPointByVersion") out.push_back(n);
    }
    return out;
  }
  /// The last call named `name`, or null.
  const EtFakeCall* last(const char* name) const {
    for (int i = call_count(); i-- > 0;)
      if (std::string(call(i)->name) == name) return call(i);
    return nullptr;
  }
};

}  // namespace et_cuda_test
