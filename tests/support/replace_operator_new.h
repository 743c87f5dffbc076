// SPDX-License-Identifier: Apache-2.0
// Replaces the global operator new and delete of a test program with et_test_allocate (defined by the
// including file) and free(): the executable's definitions interpose the shared libraries' references, so
// the library's allocations reach them too. Include it in exactly one file of a program.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>

/// Every allocation of the program: `n` bytes aligned to `align` (0: the default). Throws std::bad_alloc.
void* et_test_allocate(std::size_t n, std::size_t align);

/// malloc or aligned_alloc, for et_test_allocate; throws std::bad_alloc when they fail.
inline void* et_test_malloc(std::size_t n, std::size_t align) {
  if (n == 0) n = 1;
  void* p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, (n + align - 1) / align * align)
                                              : std::malloc(n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void* operator new(std::size_t n) { return et_test_allocate(n, 0); }
void* operator new[](std::size_t n) { return et_test_allocate(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) { return et_test_allocate(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return et_test_allocate(n, static_cast<std::size_t>(a)); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return et_test_allocate(n, 0);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return et_test_allocate(n, 0);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
