// SPDX-License-Identifier: Apache-2.0
// The C++ side of capi_dlpack_test.c's round trip C -> C++ -> C: the C++ API adopts a DLPack tensor the C
// API exported, reads it, and exports it again for the C API to adopt. In the test program only.
#include <edgetensor/c/edgetensor_c.h>
#include <edgetensor/dlpack.h>

#include <cstddef>
#include <cstdio>

namespace dl = edgetensor::dlpack;

// Adopts `in` (the C++ library owns it from here), then exports the same memory into *out. Returns the
// adopted tensor's first byte as C++ reads it, or -1 (and prints why).
extern "C" int et_test_cpp_dlpack_round_trip(DLManagedTensorVersioned* in, DLManagedTensorVersioned** out) {
  auto t = dl::adopt_versioned(reinterpret_cast<dl::ManagedTensorVersioned*>(in), {.name = "through C++"});
  if (!t) {
    std::fprintf(stderr, "C++ adopt_versioned: %s\n", t.error().message().c_str());
    return -1;
  }
  auto m = t->map_read();
  if (!m || m->extent_bytes() == 0) {
    std::fprintf(stderr, "C++ map_read failed\n");
    return -1;
  }
  const int first = std::to_integer<int>(m->data()[0]);
  auto e = dl::export_versioned(*t);
  if (!e) {
    std::fprintf(stderr, "C++ export_versioned: %s\n", e.error().message().c_str());
    return -1;
  }
  *out = reinterpret_cast<DLManagedTensorVersioned*>(*e);
  return first;
}
