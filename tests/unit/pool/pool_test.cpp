// SPDX-License-Identifier: Apache-2.0
// Pool (include/edgetensor/pool.h): automatic return, reuse of the same storage, bounds, exhaustion,
// the pool destroyed with buffers out, device work kept on a returned buffer, and acquire racing
// release on eight threads (PoolConcurrent.*; the TSan lane runs every test named *Concurrent*), and
// the recall an acquire about to wait makes (pool_wait.h: a channel Publisher's standing-back readers).
#include <edgetensor/edgetensor.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/storage.h"
#include "base/sys_testing.h"
#include "pool/pool_wait.h"
#include "support/test_support.h"

using namespace edgetensor;
using namespace std::chrono_literals;

namespace {

PoolOptions options(const char* name, MemoryKind kind, std::size_t max, std::size_t min = 0) {
  PoolOptions o;
  o.name = name;
  o.max_buffers = max;
  o.min_buffers = min;
  o.allocate.memory = kind;
  return o;
}

const std::byte* cpu_address(const TensorDyn& t) {
  auto m = t.map_read();
  return m ? m->data() : nullptr;
}

// Device work that completes when the test says so (what a CUDA event is to the pool).
class TestFence final : public detail::DeviceFence {
 public:
  explicit TestFence(std::shared_ptr<std::atomic<bool>> done) : done_(std::move(done)) {}
  bool complete() noexcept override { return done_->load(); }
  std::chrono::milliseconds teardown_timeout() const noexcept override { return std::chrono::seconds(5); }

 private:
  std::shared_ptr<std::atomic<bool>> done_;
};

class PoolKinds : public ::testing::TestWithParam<MemoryKind> {};

TEST_P(PoolKinds, AcquireGivesTheShapeNameAndZerosAndCountsIt) {
  auto pool = Pool::create({720, 1280, 4}, DType::U8, options("cam0", GetParam(), 3, 1));
  ASSERT_OK(pool);
  EXPECT_EQ(pool->name(), "cam0");
  EXPECT_EQ(pool->max_buffers(), 3u);
  EXPECT_EQ(pool->packed_bytes(), 720u * 1280 * 4);
  PoolStats s = pool->stats();
  EXPECT_EQ(s.allocated, 1u) << "min_buffers are made by create";
  EXPECT_EQ(s.free, 1u);
  auto t = pool->acquire(100ms);
  ASSERT_OK(t);
  EXPECT_EQ(t->memory(), GetParam());
  EXPECT_EQ(t->name(), "cam0");
  EXPECT_EQ(t->dtype(), DType::U8);
  ASSERT_EQ(t->rank(), 3u);
  EXPECT_EQ(t->shape()[0], 720u);
  EXPECT_TRUE(t->is_contiguous());
  {
    auto m = t->map_read();
    ASSERT_OK(m);
    EXPECT_TRUE(std::all_of(m->bytes().begin(), m->bytes().end(), [](std::byte b) { return b == std::byte{0}; }));
  }
  s = pool->stats();
  EXPECT_EQ(s.allocated, 1u);
  EXPECT_EQ(s.free, 0u);
  EXPECT_EQ(s.in_use, 1u);
  EXPECT_EQ(s.acquired, 1u);
  EXPECT_EQ(s.peak_in_use, 1u);
}

// Every kind of holder keeps the buffer out; the last one sends it back, with its storage intact.
TEST_P(PoolKinds, BufferComesBackWhenItsLastHolderIsGoneAndKeepsItsMapping) {
  auto pool = Pool::create({256, 1024}, DType::U8, options("holders", GetParam(), 2));
  ASSERT_OK(pool);
  auto t = pool->acquire(0ms);
  ASSERT_OK(t);
  const BufferKey key = t->buffer_key();
  const std::byte* address = cpu_address(*t);
  ASSERT_NE(address, nullptr);
  TensorDyn copy = *t;
  auto view = t->batch(3);
  ASSERT_OK(view);
  auto map = t->map_write();
  ASSERT_OK(map);
  *t = TensorDyn();
  EXPECT_EQ(pool->stats().in_use, 1u) << "a copy, a view and a map still hold it";
  copy = TensorDyn();
  *view = TensorDyn();
  EXPECT_EQ(pool->stats().in_use, 1u) << "the map still holds it";
  map->unmap();
  PoolStats s = pool->stats();
  EXPECT_EQ(s.in_use, 0u);
  EXPECT_EQ(s.free, 1u);

  const auto mmaps = sys::call_count(sys::Call::Mmap);
  auto again = pool->acquire(0ms);
  ASSERT_OK(again);
  EXPECT_EQ(again->buffer_key(), key) << "the same buffer";
  EXPECT_EQ(cpu_address(*again), address) << "its persistent CPU mapping is kept";
  EXPECT_EQ(sys::call_count(sys::Call::Mmap), mmaps) << "no new mapping";
  EXPECT_EQ(pool->stats().allocated, 1u) << "nothing new allocated";
}

// A DLPack export is a holder too (dlpack.h: the capsule keeps a map and a storage reference): the
// buffer comes back only when the consumer calls the deleter, whichever form was exported.
TEST_P(PoolKinds, DlpackExportsKeepTheBufferOutUntilTheirDeleterRuns) {
  auto pool = Pool::create({64}, DType::F32, options("dlpack", GetParam(), 1));
  ASSERT_OK(pool);
  auto t = pool->acquire(0ms);
  ASSERT_OK(t);
  const BufferKey key = t->buffer_key();
  auto versioned = dlpack::export_versioned(*t);
  ASSERT_OK(versioned);
  auto legacy = dlpack::export_legacy(*t);
  ASSERT_OK(legacy);
  *t = TensorDyn();
  EXPECT_EQ(pool->stats().in_use, 1u) << "two exports still hold it";
  EXPECT_ERROR(pool->acquire(0ms), ErrorCode::Busy, "dlpack");
  (*versioned)->deleter(*versioned);
  EXPECT_EQ(pool->stats().in_use, 1u) << "the legacy export still holds it";
  // A consumer that imports the export (a Foreign tensor) holds it until its last view goes.
  auto imported = dlpack::adopt_legacy(*legacy);
  ASSERT_OK(imported);
  EXPECT_EQ(imported->memory(), MemoryKind::Foreign);
  EXPECT_EQ(pool->stats().in_use, 1u);
  *imported = TensorDyn();
  EXPECT_EQ(pool->stats().in_use, 0u);
  auto again = pool->acquire(0ms);
  ASSERT_OK(again);
  EXPECT_EQ(again->buffer_key(), key);
}

TEST_P(PoolKinds, ReusedBufferKeepsItsBytesUnlessZeroOnReuse) {
  for (bool zero : {false, true}) {
    PoolOptions o = options("reuse", GetParam(), 1);
    o.zero_on_reuse = zero;
    auto pool = Pool::create({4096}, DType::U8, o);
    ASSERT_OK(pool);
    {
      auto t = pool->acquire(0ms);
      ASSERT_OK(t);
      auto m = t->map_write();
      ASSERT_OK(m);
      std::memset(m->data(), 0x5a, m->extent_bytes());
    }
    auto t = pool->acquire(0ms);
    ASSERT_OK(t);
    auto m = t->map_read();
    ASSERT_OK(m);
    EXPECT_EQ(m->bytes()[17], zero ? std::byte{0} : std::byte{0x5a}) << "zero_on_reuse " << zero;
  }
}

INSTANTIATE_TEST_SUITE_P(Pool, PoolKinds, ::testing::Values(MemoryKind::Heap, MemoryKind::Shm),
                         [](const auto& i) { return std::string(memory_kind_name(i.param)); });

TEST(Pool, ExhaustionWaitsForTheTimeoutThenNamesPoolMaxAndWait) {
  auto pool = Pool::create({64}, DType::F32, options("cam1", MemoryKind::Heap, 2));
  ASSERT_OK(pool);
  auto a = pool->acquire(0ms);
  auto b = pool->acquire(0ms);
  ASSERT_OK(a);
  ASSERT_OK(b);
  const auto start = std::chrono::steady_clock::now();
  auto c = pool->acquire(30ms);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 30ms) << "it waited the whole timeout";
  EXPECT_ERROR(c, ErrorCode::Busy, "pool 'cam1': no buffer free after waiting ");
  EXPECT_ERROR(c, ErrorCode::Busy, "2 of max_buffers 2 in use");
  EXPECT_EQ(c.error().sys_errno(), ETIMEDOUT) << "a wait that ran out (Python: TimeoutError)";
  PoolStats s = pool->stats();
  EXPECT_EQ(s.waits, 1u);
  EXPECT_EQ(s.timeouts, 1u);
  EXPECT_EQ(s.allocated, 2u);

  auto d = pool->try_acquire();
  EXPECT_ERROR(d, ErrorCode::Busy, "pool 'cam1': no buffer free (try_acquire does not wait): 2 of max_buffers 2 in use");
  EXPECT_EQ(d.error().sys_errno(), EAGAIN);
  EXPECT_EQ(pool->stats().waits, 1u) << "try_acquire never waits";
  EXPECT_EQ(pool->stats().timeouts, 2u);
  *a = TensorDyn();
  auto e = pool->try_acquire();
  ASSERT_OK(e);
  EXPECT_EQ(pool->stats().peak_in_use, 2u);
}

TEST(Pool, AcquireWakesWhenAnotherThreadReleases) {
  auto pool = Pool::create({1024}, DType::U8, options("wake", MemoryKind::Heap, 1));
  ASSERT_OK(pool);
  auto held = pool->acquire(0ms);
  ASSERT_OK(held);
  std::thread releaser([t = std::move(*held)]() mutable {
    std::this_thread::sleep_for(20ms);
    t = TensorDyn();
  });
  auto got = pool->acquire(60s);  // returns when the buffer comes back, long before the timeout
  releaser.join();
  ASSERT_OK(got);
  EXPECT_EQ(pool->stats().waits, 1u);
  EXPECT_EQ(pool->stats().allocated, 1u);

  // The largest timeout there is: the deadline saturates instead of overflowing into the past.
  std::thread again([t = std::move(*got)]() mutable {
    std::this_thread::sleep_for(20ms);
    t = TensorDyn();
  });
  auto last = pool->acquire(std::chrono::milliseconds::max());
  again.join();
  ASSERT_OK(last);
  EXPECT_EQ(pool->stats().waits, 2u);
}

// PoolOptions::on_wait runs every kPoolWaitCheckInterval of a wait, with the lock free (it may touch the
// pool), and its error ends the wait at once; a wait that finds a buffer before the interval never calls it.
TEST(Pool, OnWaitRunsWhileAcquireWaitsAndItsErrorEndsTheWait) {
  std::atomic<int> calls{0};
  std::atomic<bool> stop{false};
  Pool* self = nullptr;
  PoolOptions o = options("waiting", MemoryKind::Heap, 1);
  o.on_wait = [&]() -> Result<void> {
    ++calls;
    (void)self->stats();  // no lock held
    if (stop) return fail(ErrorCode::Internal, "interrupted");
    return {};
  };
  auto pool = Pool::create({8}, DType::U8, o);
  ASSERT_OK(pool);
  self = &*pool;
  auto held = pool->acquire(0ms);
  ASSERT_OK(held);
  auto timed = pool->acquire(180ms);  // about three checks, then the timeout as without on_wait
  EXPECT_ERROR(timed, ErrorCode::Busy, "pool 'waiting'");
  EXPECT_EQ(timed.error().sys_errno(), ETIMEDOUT);
  EXPECT_GE(calls.load(), 2);
  EXPECT_LE(calls.load(), 4);
  stop = true;
  const auto start = std::chrono::steady_clock::now();
  auto ended = pool->acquire(60s);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s) << "the check's error ended the wait";
  EXPECT_ERROR(ended, ErrorCode::Internal, "interrupted");
  EXPECT_EQ(pool->stats().timeouts, 1u) << "an ended wait is not a timeout";
  EXPECT_EQ(pool->stats().waits, 2u);
  calls = 0;
  std::thread releaser([t = std::move(*held)]() mutable {
    std::this_thread::sleep_for(10ms);
    t = TensorDyn();
  });
  ASSERT_OK(pool->acquire(60s));
  releaser.join();
  EXPECT_EQ(calls.load(), 0);
}

TEST(Pool, DestroyedWithBuffersOutLeavesThemValidAndEachFreesItsMemory) {
  const int fds = et_test::open_fd_count();
  const int maps = et_test::mapping_count();
  TensorDyn out;
  {
    auto pool = Pool::create({1 << 20}, DType::U8, options("gone", MemoryKind::Shm, 3, 3));
    ASSERT_OK(pool);
    EXPECT_EQ(et_test::open_fd_count(), fds + 3);
    auto t = pool->acquire(0ms);
    ASSERT_OK(t);
    out = std::move(*t);
  }  // the two free buffers are freed here; `out` is not
  EXPECT_EQ(et_test::open_fd_count(), fds + 1);
  {
    auto m = out.map_write();
    ASSERT_OK(m);
    std::memset(m->data(), 7, m->extent_bytes());
  }
  auto key = out.buffer_key();
  EXPECT_NE(key.value(), 0u);
  out = TensorDyn();  // its last holder: the buffer frees its memory, as an allocated tensor's does
  EXPECT_EQ(et_test::open_fd_count(), fds);
  if (et_test::kExactMappingCount) {
    EXPECT_EQ(et_test::mapping_count(), maps);
  }
}

TEST(Pool, MoveAssignmentClosesTheOldPool) {
  const int fds = et_test::open_fd_count();
  auto a = Pool::create({4096}, DType::U8, options("a", MemoryKind::Shm, 1, 1));
  auto b = Pool::create({4096}, DType::U8, options("b", MemoryKind::Shm, 1, 1));
  ASSERT_OK(a);
  ASSERT_OK(b);
  *a = std::move(*b);
  EXPECT_EQ(a->name(), "b");
  EXPECT_EQ(et_test::open_fd_count(), fds + 1) << "pool a's buffer was freed";
  EXPECT_ERROR(b->acquire(0ms), ErrorCode::FailedPrecondition, "moved from");
  EXPECT_ERROR(b->try_acquire(), ErrorCode::FailedPrecondition, "moved from");
  EXPECT_EQ(b->stats().allocated, 0u);
  EXPECT_EQ(b->name(), "");
}

TEST(Pool, BadOptionsAreRefusedNamingThem) {
  EXPECT_ERROR(Pool::create({4}, DType::U8, options("p", MemoryKind::Heap, 0)), ErrorCode::InvalidArgument,
               "pool 'p': max_buffers is 0");
  EXPECT_ERROR(Pool::create({4}, DType::U8, options("p", MemoryKind::Heap, 2, 3)), ErrorCode::InvalidArgument,
               "pool 'p': min_buffers 3 exceeds max_buffers 2");
  PoolOptions nul = options("p", MemoryKind::Shm, 2);
  nul.name = std::string("cam\0", 4);  // it names every buffer's memfd
  EXPECT_ERROR(Pool::create({4}, DType::U8, nul), ErrorCode::InvalidArgument,
               "PoolOptions::name has a NUL byte at byte 3 of 4");
  PoolOptions named = options("p", MemoryKind::Shm, 2);
  named.allocate.shm_name = "/cam";
  EXPECT_ERROR(Pool::create({4}, DType::U8, named), ErrorCode::InvalidArgument, "shm_name '/cam' names one object");
  EXPECT_ERROR(Pool::create({4, 0}, DType::U8, options("p", MemoryKind::Heap, 2)), ErrorCode::InvalidArgument,
               "shape [4, 0] has zero elements");
  EXPECT_ERROR(Pool::create({4}, static_cast<DType>(99), options("p", MemoryKind::Heap, 2)),
               ErrorCode::InvalidArgument, "invalid dtype 99");
  EXPECT_ERROR(Pool::create({1, 1, 1, 1, 1, 1, 1, 1, 1}, DType::U8, options("p", MemoryKind::Heap, 2)),
               ErrorCode::InvalidArgument, "rank 9 exceeds the maximum rank 8");
  EXPECT_ERROR(Pool::create({SIZE_MAX / 2, 8}, DType::U8, options("p", MemoryKind::Heap, 2)),
               ErrorCode::OutOfRange, "overflows");
  EXPECT_ERROR(Pool::create_image(ImageLayout{}, options("p", MemoryKind::Heap, 2)), ErrorCode::InvalidArgument,
               "");
  auto pool = Pool::create({4}, DType::U8, options("p", MemoryKind::Heap, 2));
  ASSERT_OK(pool);
  EXPECT_ERROR(pool->acquire(-1ms), ErrorCode::InvalidArgument, "pool 'p': acquire timeout -1 ms is negative");
}

TEST(Pool, AllocationFailureNamesThePoolAndFreesTheSlot) {
  auto pool = Pool::create({4096}, DType::U8, options("fails", MemoryKind::Shm, 1));
  ASSERT_OK(pool);
  {
    et_test::ScopedFaultHook hook(et_test::fail_nth(sys::Call::MemfdCreate, 1, ENOMEM));
    EXPECT_ERROR(pool->acquire(0ms), ErrorCode::OutOfMemory, "pool 'fails': allocating a buffer (1 of max_buffers 1): ");
  }
  EXPECT_EQ(pool->stats().allocated, 0u);
  ASSERT_OK(pool->acquire(0ms));  // the failed allocation left its slot free
  const int fds = et_test::open_fd_count();
  {
    et_test::ScopedFaultHook hook(et_test::fail_nth(sys::Call::MemfdCreate, 1, ENOMEM));
    EXPECT_ERROR(Pool::create({4096}, DType::U8, options("pre", MemoryKind::Shm, 3, 3)), ErrorCode::OutOfMemory,
                 "pool 'pre'");
  }
  EXPECT_EQ(et_test::open_fd_count(), fds);
  {
    et_test::ScopedFaultHook hook(et_test::fail_nth(sys::Call::MemfdCreate, 3, ENOMEM));
    EXPECT_ERROR(Pool::create({4096}, DType::U8, options("pre", MemoryKind::Shm, 3, 3)), ErrorCode::OutOfMemory,
                 "pool 'pre': allocating a buffer (3 of max_buffers 3)");
  }
  EXPECT_EQ(et_test::open_fd_count(), fds) << "the two buffers made before the failure were freed";
}

// BufferIdentity: each acquisition is an allocation; BufferKey: the buffer, across acquisitions.
TEST(Pool, EachAcquisitionHasItsOwnIdentityAndTheBufferKeepsItsKey) {
  auto pool = Pool::create({16}, DType::U8, options("ids", MemoryKind::Heap, 1));
  ASSERT_OK(pool);
  auto first = pool->acquire(0ms);
  ASSERT_OK(first);
  const BufferIdentity id1 = first->identity();
  const BufferKey key = first->buffer_key();
  EXPECT_TRUE(id1.alive());
  *first = TensorDyn();
  EXPECT_FALSE(id1.alive()) << "this acquisition's holders are gone, though the buffer lives on in the pool";
  auto second = pool->acquire(0ms);
  ASSERT_OK(second);
  EXPECT_NE(second->identity().id(), id1.id());
  EXPECT_TRUE(second->identity().alive());
  EXPECT_FALSE(id1.alive());
  EXPECT_EQ(second->buffer_key(), key);
}

TEST(Pool, ImagePoolLayoutErrorsNameThePool) {
  ImageLayout bare;  // width, height and format, but no strides: ImageLayout::make gives those
  bare.width = 1920;
  bare.height = 1080;
  bare.format = PixelFormat::Nv12;
  EXPECT_ERROR(Pool::create_image(bare, options("camA", MemoryKind::Heap, 2)), ErrorCode::InvalidArgument,
               "pool 'camA': nv12 1920x1080 plane 0 (Y): row stride 0 B");
  // Planes that share bytes: refused by create_image, not first at an acquire.
  auto overlap = ImageLayout::make(16, 8, PixelFormat::Nv12);
  ASSERT_OK(overlap);
  overlap->planes[1].offset_bytes = 16 * 4;  // inside the Y plane
  EXPECT_ERROR(Pool::create_image(*overlap, options("camB", MemoryKind::Heap, 2)), ErrorCode::InvalidArgument,
               "pool 'camB': nv12 16x8: plane 0 (Y)");
}

TEST(Pool, ImagePoolHandsOutImagesAndFrames) {
  auto layout = ImageLayout::make(1920, 1080, PixelFormat::Nv12, {.row_bytes = 64, .height = 16});
  ASSERT_OK(layout);
  auto pool = Pool::create_image(*layout, options("nv12", MemoryKind::Shm, 2));
  ASSERT_OK(pool);
  EXPECT_EQ(pool->packed_bytes(), *layout->min_buffer_bytes());
  auto t = pool->acquire(0ms);
  ASSERT_OK(t);
  ASSERT_NE(t->image_layout(), nullptr);
  EXPECT_EQ(*t->image_layout(), *layout);
  auto uv = t->plane(1);
  ASSERT_OK(uv);
  EXPECT_EQ(uv->shape()[0], 540u);
  auto frame = Frame::from_tensor(*t);
  ASSERT_OK(frame);
  *t = TensorDyn();
  *uv = TensorDyn();
  EXPECT_EQ(pool->stats().in_use, 1u) << "the frame holds the buffer";
  *frame = Frame();
  EXPECT_EQ(pool->stats().in_use, 0u);
  auto again = pool->acquire(0ms);
  ASSERT_OK(again);
  ASSERT_NE(again->image_layout(), nullptr) << "a reused buffer has the layout too";
  EXPECT_EQ(again->pixel_format(), PixelFormat::Nv12);
}

// A returned buffer with device work still running is not handed out; once the work is done it is.
TEST(Pool, BufferWithPendingDeviceWorkIsNotReusedUntilTheWorkCompletes) {
  auto pool = Pool::create({4096}, DType::U8, options("fenced", MemoryKind::Heap, 1));
  ASSERT_OK(pool);
  auto done = std::make_shared<std::atomic<bool>>(false);
  {
    auto t = pool->acquire(0ms);
    ASSERT_OK(t);
    const auto& storage = detail::StorageAccess::of(*t);
    ASSERT_TRUE(storage->pooled());
    storage->keep_fence(std::make_unique<TestFence>(done));  // what a released CudaMap does
  }
  PoolStats s = pool->stats();
  EXPECT_EQ(s.free, 1u);
  EXPECT_EQ(s.device_pending, 1u);
  EXPECT_ERROR(pool->try_acquire(), ErrorCode::Busy,
               "0 of max_buffers 1 in use, 1 more back but waiting for device work recorded on it");
  auto waited = pool->acquire(5ms);
  EXPECT_ERROR(waited, ErrorCode::Busy, "after waiting");
  std::thread device([done] {
    std::this_thread::sleep_for(10ms);
    done->store(true);
  });
  auto t = pool->acquire(60s);  // asks the fence again every millisecond while it waits
  device.join();
  ASSERT_OK(t);
  EXPECT_EQ(pool->stats().device_pending, 0u);
}

// A fenced buffer does not block a free one: the pool hands out the one that is ready.
TEST(Pool, AReadyBufferIsPreferredToOneWithPendingDeviceWork) {
  auto pool = Pool::create({4096}, DType::U8, options("two", MemoryKind::Heap, 2, 2));
  ASSERT_OK(pool);
  auto never = std::make_shared<std::atomic<bool>>(false);
  auto a = pool->acquire(0ms);
  auto b = pool->acquire(0ms);
  ASSERT_OK(a);
  ASSERT_OK(b);
  const BufferKey ready = b->buffer_key();
  detail::StorageAccess::of(*a)->keep_fence(std::make_unique<TestFence>(never));
  *b = TensorDyn();
  *a = TensorDyn();  // returned last (the warmest), but fenced
  auto t = pool->acquire(0ms);
  ASSERT_OK(t);
  EXPECT_EQ(t->buffer_key(), ready);
  never->store(true);  // the pool's teardown would wait for it (Storage's bound)
}

// Eight threads acquire, fill and release buffers of a pool smaller than the thread count: every
// buffer has at most one holder at a time, no acquisition is lost, and the counters add up.
// A PoolRecall that counts its calls and gives a buffer back from its own thread, as a channel reader
// thread called back reads the release that frees one.
class CountingRecall final : public detail::PoolRecall {
 public:
  void recall() noexcept override {
    ++calls;
    if (on_recall) on_recall();
  }
  std::atomic<int> calls{0};
  std::function<void()> on_recall;
};

TEST(Pool, AnAcquireOfAnEmptyPoolCallsItsRecallsOnceThenLooksAgain) {
  auto pool = Pool::create({16}, DType::U8, options("recall", MemoryKind::Heap, 2));
  ASSERT_OK(pool);
  auto a = pool->acquire(0ms);
  auto b = pool->acquire(0ms);
  ASSERT_OK(a);
  ASSERT_OK(b);
  auto recall = std::make_shared<CountingRecall>();
  ASSERT_TRUE(detail::add_pool_recall(detail::storage_of(*a), recall));
  ASSERT_TRUE(detail::add_pool_recall(detail::storage_of(*b), recall));  // the same pool: registered once
  // A storage of no pool registers nothing.
  auto plain = TensorDyn::allocate({16}, DType::U8, et_test::mem(MemoryKind::Heap));
  ASSERT_OK(plain);
  EXPECT_FALSE(detail::add_pool_recall(detail::storage_of(*plain), recall));

  // A producer that polls (try_acquire, a 0 ms timeout) calls it too: once per call, then Busy.
  EXPECT_FALSE(pool->try_acquire().has_value());
  EXPECT_EQ(recall->calls.load(), 1);
  auto busy = pool->acquire(0ms);
  EXPECT_ERROR(busy, ErrorCode::Busy, "no buffer free");
  EXPECT_EQ(recall->calls.load(), 2);

  // A recall that gives a buffer back on the acquiring thread (a channel reading the releases that are
  // there): the same call has it.
  recall->on_recall = [&] { *a = TensorDyn(); };
  auto c = pool->try_acquire();
  ASSERT_OK(c);
  EXPECT_EQ(recall->calls.load(), 3);

  // An acquire that waits: the buffer the recall has another thread free ends the wait.
  std::thread giver;
  recall->on_recall = [&] { giver = std::thread([&] { *b = TensorDyn(); }); };
  auto d = pool->acquire(10s);
  ASSERT_OK(d);
  giver.join();
  EXPECT_EQ(recall->calls.load(), 4);

  // A recall that frees nothing: called once, and the acquire times out as before.
  recall->on_recall = nullptr;
  auto e = pool->acquire(20ms);
  EXPECT_ERROR(e, ErrorCode::Busy, "after waiting");
  EXPECT_EQ(recall->calls.load(), 5);

  // A recall that is gone is skipped (and dropped at the next registration).
  recall.reset();
  EXPECT_FALSE(pool->acquire(5ms).has_value());
  auto other = std::make_shared<CountingRecall>();
  ASSERT_TRUE(detail::add_pool_recall(detail::storage_of(*c), other));
  EXPECT_FALSE(pool->acquire(5ms).has_value());
  EXPECT_EQ(other->calls.load(), 1);
}

TEST(PoolConcurrent, EightThreadsAcquireAndReleaseRacing) {
  constexpr int kThreads = 8;
  constexpr int kIterations = 300;
  auto pool = Pool::create({4096}, DType::U32, options("race", MemoryKind::Heap, 3));
  ASSERT_OK(pool);
  std::mutex owners_mutex;
  std::map<BufferKey, int> owners;  // holders per buffer, must stay <= 1
  std::atomic<int> failures{0};
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int id = 0; id < kThreads; ++id) {
    threads.emplace_back([&, id] {
      start.arrive_and_wait();
      for (int it = 0; it < kIterations; ++it) {
        auto t = pool->acquire(30s);
        if (!t) {
          ++failures;
          return;
        }
        {
          std::lock_guard lock(owners_mutex);
          if (++owners[t->buffer_key()] != 1) ++failures;
        }
        {
          auto m = Tensor<std::uint32_t>::from(*t);
          auto w = m->map_write();
          const auto v = static_cast<std::uint32_t>(id * 100000 + it);
          std::fill(w->span().begin(), w->span().end(), v);
          if ((*w)[4095] != v || (*w)[0] != v) ++failures;
        }
        {
          std::lock_guard lock(owners_mutex);
          --owners[t->buffer_key()];
        }
        if (it % 2 == 0) {
          *t = TensorDyn();  // released on this thread
        } else {
          std::thread([t = std::move(*t)]() mutable { t = TensorDyn(); }).join();  // or on another one
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  PoolStats s = pool->stats();
  EXPECT_EQ(s.acquired, std::uint64_t{kThreads} * kIterations);
  EXPECT_EQ(s.in_use, 0u);
  EXPECT_EQ(s.free, s.allocated);
  EXPECT_LE(s.allocated, 3u);
  EXPECT_LE(s.peak_in_use, 3u);
  EXPECT_EQ(s.timeouts, 0u);
}

// The pool destroyed on one thread while other threads still drop its buffers.
TEST(PoolConcurrent, PoolDestroyedWhileOtherThreadsReleaseBuffers) {
  const int fds = et_test::open_fd_count();
  for (int round = 0; round < 20; ++round) {
    std::vector<TensorDyn> out;
    std::optional<Pool> pool;
    {
      auto p = Pool::create({65536}, DType::U8, options("close", MemoryKind::Shm, 6, 6));
      ASSERT_OK(p);
      pool.emplace(std::move(*p));
    }
    for (int i = 0; i < 4; ++i) {
      auto t = pool->acquire(0ms);
      ASSERT_OK(t);
      out.push_back(std::move(*t));
    }
    std::latch start(5);
    std::vector<std::thread> threads;
    for (auto& t : out)
      threads.emplace_back([&start, t = std::move(t)]() mutable {
        start.arrive_and_wait();
        t = TensorDyn();
      });
    start.arrive_and_wait();
    pool.reset();
    for (auto& th : threads) th.join();
  }
  EXPECT_EQ(et_test::open_fd_count(), fds);
}

}  // namespace
