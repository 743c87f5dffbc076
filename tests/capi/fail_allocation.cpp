// SPDX-License-Identifier: Apache-2.0
// The allocation-failure hook of capi_alloc_failure_test.c, in the test program only: it replaces the
// global operator new (the executable's definition interposes the references of libedgetensor.so and
// libedgetensor-c.so), so the shipped libraries carry no hook at all.
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

#include "support/replace_operator_new.h"

namespace {
// Allocations left before one fails; negative: none fails. Counted on every thread.
std::atomic<long> g_left{-1};
}  // namespace

void* et_test_allocate(std::size_t n, std::size_t align) {
  long left = g_left.load(std::memory_order_relaxed);
  while (left >= 0) {
    if (g_left.compare_exchange_weak(left, left - 1, std::memory_order_relaxed)) {
      if (left == 0) throw std::bad_alloc();
      break;
    }
  }
  return et_test_malloc(n, align);
}

extern "C" {
/// The `nth` allocation from now (0: the next one) throws std::bad_alloc; negative: none.
void et_test_fail_allocation(long nth) { g_left.store(nth, std::memory_order_relaxed); }
/// Whether the armed failure is still to come.
int et_test_failure_pending(void) { return g_left.load(std::memory_order_relaxed) >= 0; }
}
