// SPDX-License-Identifier: Apache-2.0
// Leak regression: 10 000 allocate / map / export / import / release cycles per backend; the fd table
// and the mapping list must return to their baselines.
#include <edgetensor/edgetensor.h>
#include <gtest/gtest.h>

#include <cstring>

#include "support/test_support.h"

using namespace edgetensor;
using et_test::mem;

namespace {

constexpr int kCycles = 10000;

// One heap cycle: allocate (alternating the malloc and the anonymous-page paths), map, view, release.
void heap_cycle(int i) {
  const std::size_t size = i % 2 ? 4096 : 256 * 1024;
  auto t = TensorDyn::allocate({size / 4}, DType::F32, mem(MemoryKind::Heap));
  ASSERT_OK(t);
  {
    auto w = t->map_write();
    ASSERT_OK(w);
    w->bytes()[static_cast<std::size_t>(i + 1) % size] = std::byte{1};
  }
  auto v = t->view(256, {16});
  ASSERT_OK(v);
  auto r = v->map_read();
  ASSERT_OK(r);
  EXPECT_ERROR(t->export_fd(), ErrorCode::Unsupported, "not shareable");
}

// One shm cycle: allocate a memfd, map, export, import (borrowed and adopted), map the imports, release.
void shm_cycle(int i) {
  auto t = TensorDyn::allocate({64, 64}, DType::U8, mem(MemoryKind::Shm));
  ASSERT_OK(t);
  {
    auto w = t->map_write();
    ASSERT_OK(w);
    w->bytes()[0] = static_cast<std::byte>(i);
  }
  auto fd = t->export_fd();
  ASSERT_OK(fd);
  auto borrowed = TensorDyn::import_fd_dup(fd->get(), {64, 64}, DType::U8);
  ASSERT_OK(borrowed);
  // An error path in every cycle, too: the library's dup must not leak.
  EXPECT_ERROR(TensorDyn::import_fd_dup(fd->get(), {64, 65}, DType::U8), ErrorCode::OutOfRange, "has 4096 B");
  auto adopted = TensorDyn::adopt_fd(std::move(*fd), {64, 64}, DType::U8);
  ASSERT_OK(adopted);
  auto r = adopted->map_read();
  ASSERT_OK(r);
  ASSERT_EQ(r->bytes()[0], static_cast<std::byte>(i));
  auto b = borrowed->batch(63);
  ASSERT_OK(b);
  ASSERT_OK(b->map_read_write());
}

template <class Cycle>
void run_cycles(Cycle cycle) {
  cycle(-1);  // warm-up: first-use allocations of the allocator and the test framework
  const int fds = et_test::open_fd_count();
  const int maps = et_test::mapping_count();
  for (int i = 0; i < kCycles; ++i) {
    cycle(i);
    if (::testing::Test::HasFatalFailure()) return;
  }
  EXPECT_EQ(et_test::open_fd_count(), fds) << "fds leaked over " << kCycles << " cycles";
  if (et_test::kExactMappingCount) {
    EXPECT_EQ(et_test::mapping_count(), maps) << "mappings leaked over " << kCycles << " cycles";
  }
}

TEST(LeakRegression, HeapTenThousandCycles) { run_cycles(heap_cycle); }
TEST(LeakRegression, ShmTenThousandCyclesWithExportAndImport) { run_cycles(shm_cycle); }

}  // namespace
