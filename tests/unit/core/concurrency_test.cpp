// SPDX-License-Identifier: Apache-2.0
// Concurrency: 8 threads mapping, viewing, exporting/importing and releasing the same tensors.
// CI runs the suites named Concurrency* under ThreadSanitizer (--gtest_filter='Concurrency*').
#include <edgetensor/edgetensor.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <latch>
#include <mutex>
#include <thread>
#include <vector>

#include "core/storage.h"
#include "support/test_support.h"

using namespace edgetensor;

namespace {

constexpr int kThreads = 8;
constexpr int kIterations = 400;

// Plain (not parameterised) tests, so that every full test name starts with "Concurrency".
void eight_threads_map_view_release(MemoryKind kind) {
  const int fds = et_test::open_fd_count();
  {
    AllocateOptions o;
    o.memory = kind;
    // Two shared tensors; each thread owns one row (batch) of each and writes only there.
    auto a = TensorDyn::allocate({kThreads, 1024}, DType::U32, o);
    auto b = TensorDyn::allocate({kThreads, 64, 64}, DType::U8, o);
    ASSERT_OK(a);
    ASSERT_OK(b);
    std::atomic<int> failures{0};
    std::latch start(kThreads);
    std::vector<std::thread> threads;
    for (int id = 0; id < kThreads; ++id) {
      // Each thread gets its own copies (values); the originals are dropped below while threads run.
      threads.emplace_back([&, kind, id, ta = *a, tb = *b]() mutable {
        start.arrive_and_wait();
        for (int it = 0; it < kIterations; ++it) {
          auto row = ta.batch(static_cast<std::size_t>(id));
          if (!row) { ++failures; return; }
          {
            auto w = Tensor<std::uint32_t>::from(*row);
            if (!w) { ++failures; return; }
            auto m = w->map_write();
            if (!m) { ++failures; return; }
            for (std::size_t i = 0; i < m->size(); ++i) (*m)[i] = static_cast<std::uint32_t>(id * 1000000 + it);
          }
          {
            auto whole = ta.map_read();  // maps of the whole tensor overlap other threads' writes:
            if (!whole || whole->extent_bytes() != kThreads * 1024 * 4) { ++failures; return; }  // no reads of them
            auto m = row->map_read();
            if (!m) { ++failures; return; }
            std::uint32_t v;
            std::memcpy(&v, m->data() + 4 * (it % 1024), 4);
            if (v != static_cast<std::uint32_t>(id * 1000000 + it)) { ++failures; return; }
          }
          // Views of the other tensor: a column of this thread's plane, mapped read-write.
          auto plane = tb.batch(static_cast<std::size_t>(id));
          if (!plane) { ++failures; return; }
          auto col = plane->view(static_cast<std::size_t>(it % 64), {64}, {64});
          if (!col) { ++failures; return; }
          {
            auto m = col->map_read_write();
            if (!m) { ++failures; return; }
            m->bytes()[0] = static_cast<std::byte>(it);
          }
          auto flat = plane->reshape({4096});
          if (!flat || !flat->identity().alive() || !(flat->identity() == tb.identity())) { ++failures; return; }
          if (kind == MemoryKind::Shm && it % 16 == 0) {
            auto fd = ta.export_fd();
            if (!fd) { ++failures; return; }
            auto imp = TensorDyn::import_fd_dup(fd->get(), {kThreads, 1024}, DType::U32);
            if (!imp || !imp->same_buffer(ta)) { ++failures; return; }
            auto m = imp->batch(static_cast<std::size_t>(id))->map_read();
            if (!m) { ++failures; return; }
          }
        }
        // Release this thread's references in varying order.
        if (id % 2) ta = TensorDyn();
        else tb = TensorDyn();
      });
    }
    BufferIdentity ida = a->identity();
    BufferIdentity idb = b->identity();
    a = TensorDyn();  // the threads now hold the only references
    b = TensorDyn();
    for (auto& t : threads) t.join();
    EXPECT_EQ(failures.load(), 0);
    EXPECT_FALSE(ida.alive()) << "the last holder was a thread's copy; it is gone";
    EXPECT_FALSE(idb.alive());
  }
  EXPECT_EQ(et_test::open_fd_count(), fds);
}

void maps_held_by_threads_outlive_the_tensor(MemoryKind kind) {
  AllocateOptions o;
  o.memory = kind;
  auto t = TensorDyn::allocate({1 << 16}, DType::U8, o);
  ASSERT_OK(t);
  std::vector<ReadWriteMap> maps;
  std::vector<std::thread> threads;
  std::mutex mu;
  for (int id = 0; id < kThreads; ++id) {
    threads.emplace_back([&, id, copy = *t] {
      auto m = copy.map_read_write();
      if (!m) {
        ADD_FAILURE() << m.error().to_string();
        return;
      }
      std::memset(m->data() + id * 1024, id + 1, 1024);
      std::lock_guard lock(mu);
      maps.push_back(std::move(*m));
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(maps.size(), static_cast<std::size_t>(kThreads));
  BufferIdentity id = t->identity();
  EXPECT_EQ(detail::storage_of(*t)->open_map_count(), kThreads);
  *t = TensorDyn();
  ASSERT_TRUE(id.alive());  // maps hold the storage
  for (int i = 0; i < kThreads; ++i) EXPECT_EQ(maps[0].bytes()[static_cast<std::size_t>(i) * 1024 + 7], std::byte(i + 1));
  // Unmap from several threads at once.
  std::vector<std::thread> unmappers;
  for (auto& m : maps) unmappers.emplace_back([&m] { m.unmap(); });
  for (auto& th : unmappers) th.join();
  EXPECT_FALSE(id.alive());
}

TEST(Concurrency, HeapEightThreadsMapViewAndRelease) { eight_threads_map_view_release(MemoryKind::Heap); }
TEST(Concurrency, ShmEightThreadsMapViewExportImportAndRelease) { eight_threads_map_view_release(MemoryKind::Shm); }
TEST(Concurrency, HeapMapsHeldByThreadsOutliveTheTensor) { maps_held_by_threads_outlive_the_tensor(MemoryKind::Heap); }
TEST(Concurrency, ShmMapsHeldByThreadsOutliveTheTensor) { maps_held_by_threads_outlive_the_tensor(MemoryKind::Shm); }

}  // namespace
