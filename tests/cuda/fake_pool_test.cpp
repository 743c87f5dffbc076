// SPDX-License-Identifier: Apache-2.0
// Pools and CUDA on the test double (lane cuda.fake): device work recorded on a pooled buffer keeps it
// out of the pool until its event completes (the fake holds events pending on request), and a reused
// buffer keeps its CUDA registration; the frame channel's receiver holds a release back the same way.
#include <edgetensor/channel.h>
#include <edgetensor/pool.h>

#include <chrono>
#include <thread>

#include "fake_support.h"

namespace cuda = edgetensor::cuda;
using edgetensor::BufferKey;
using edgetensor::DType;
using edgetensor::ErrorCode;
using edgetensor::MemoryKind;
using edgetensor::Pool;
using edgetensor::PoolOptions;
using edgetensor::TensorDyn;
using Names = std::vector<std::string>;
using namespace std::chrono_literals;

namespace {

using et_cuda_test::CudaFake;

// A consumer: maps the next received frame for the device, records its queued work on `stream`, and
// drops the map and the frame (the frame's last holder goes while the work still runs).
void run_kernel_on_next_frame(edgetensor::channel::Receiver& receiver, const cuda::Stream& stream) {
  auto d = receiver.receive(1s);
  ASSERT_OK(d);
  auto m = cuda::map(d->tensor);
  ASSERT_OK(m);
  ASSERT_OK(m->record(stream));
}

Pool must_pool(std::size_t max_buffers) {
  auto pool = Pool::create({4096}, DType::U8,
                           {.name = "gpu", .max_buffers = max_buffers, .allocate = {.memory = MemoryKind::Heap}});
  EXPECT_TRUE(pool.has_value());
  return std::move(*pool);
}

TEST_F(CudaFake, PooledBufferIsReusedOnlyAfterItsRecordedWorkCompletes) {
  Pool pool = must_pool(1);
  auto stream = cuda::Stream::create();
  ASSERT_OK(stream);
  fake_.hold_events(1);  // queued work stays incomplete until complete_events()
  BufferKey key;
  {
    auto t = pool.acquire(0ms);
    ASSERT_OK(t);
    key = t->buffer_key();
    auto m = cuda::map(*t);
    ASSERT_OK(m);
    ASSERT_OK(m->record(*stream));
  }  // the CudaMap and the tensor are released without waiting for the work
  EXPECT_EQ(fake_.pending_events(), 1);
  EXPECT_EQ(fake_.live("event"), 1) << "the event went with the buffer, not destroyed";
  EXPECT_EQ(pool.stats().device_pending, 1u);
  EXPECT_ERROR(pool.try_acquire(), ErrorCode::Busy, "1 more back but waiting for device work recorded on it");
  EXPECT_ERROR(pool.acquire(3ms), ErrorCode::Busy, "after waiting");
  EXPECT_GE(fake_.count("cudaEventQuery"), 2) << "asked at each attempt, never waited on";
  EXPECT_EQ(fake_.count("cudaEventSynchronize"), 0);

  fake_.complete_events();
  fake_.reset();
  auto t = pool.acquire(0ms);
  ASSERT_OK(t);
  EXPECT_EQ(t->buffer_key(), key);
  EXPECT_EQ(fake_.names(), (Names{"cudaEventQuery", "cudaEventDestroy"}));
  EXPECT_EQ(fake_.live("event"), 0);
  fake_.reset();
  auto m = cuda::map(*t);
  ASSERT_OK(m);
  EXPECT_EQ(fake_.count("cudaHostRegister"), 0) << "the reused buffer keeps its registration";
  EXPECT_EQ(fake_.live("host_register"), 1);
}

TEST_F(CudaFake, AcquireWaitingForDeviceWorkReturnsWhenItCompletes) {
  Pool pool = must_pool(1);
  auto stream = cuda::Stream::create();
  ASSERT_OK(stream);
  fake_.hold_events(1);
  {
    auto t = pool.acquire(0ms);
    ASSERT_OK(t);
    auto m = cuda::map(*t);
    ASSERT_OK(m);
    ASSERT_OK(m->record(*stream));
  }
  std::thread device([this] {
    std::this_thread::sleep_for(10ms);
    fake_.complete_events();
  });
  auto t = pool.acquire(60s);
  device.join();
  ASSERT_OK(t);
  EXPECT_EQ(pool.stats().waits, 1u);
}

// Not a pool's buffer: the event is destroyed at release, as before pools existed.
TEST_F(CudaFake, UnpooledReleaseStillDestroysItsEventAtOnce) {
  auto t = TensorDyn::allocate({4096}, DType::U8, et_test::mem(MemoryKind::Heap));
  ASSERT_OK(t);
  auto stream = cuda::Stream::create();
  ASSERT_OK(stream);
  fake_.hold_events(1);
  auto m = cuda::map(*t);
  ASSERT_OK(m);
  ASSERT_OK(m->record(*stream));
  m->unmap();
  EXPECT_EQ(fake_.live("event"), 0);
}

// The pool destroyed while a returned buffer's work is pending: the buffer, its event and its
// registration are freed (no leak in the fake's books).
TEST_F(CudaFake, PoolDestroyedWithPendingDeviceWorkFreesEverything) {
  auto stream = cuda::Stream::create();
  ASSERT_OK(stream);
  fake_.hold_events(1);
  {
    Pool pool = must_pool(2);
    auto t = pool.acquire(0ms);
    ASSERT_OK(t);
    auto m = cuda::map(*t);
    ASSERT_OK(m);
    ASSERT_OK(m->record(*stream));
  }
  EXPECT_EQ(fake_.live("event"), 0);
  EXPECT_EQ(fake_.live("host_register"), 0);
}

}  // namespace

// The frame channel's receiver: device work recorded on a received frame holds its release back
// until the work completes, so the sender's pool cannot hand the buffer out while a kernel still
// reads it; the receiver asks at each call (receive(), flush()), never waits on the event.
TEST_F(CudaFake, ChannelReleaseWaitsForDeviceWorkRecordedOnAReceivedFrame) {
  namespace channel = edgetensor::channel;
  auto sp = channel::socket_pair();
  ASSERT_OK(sp);
  auto sender = channel::Sender::create(std::move(sp->first), {.name = "gpu"});
  auto receiver = channel::Receiver::create(std::move(sp->second), {.name = "gpu"});
  ASSERT_OK(sender);
  ASSERT_OK(receiver);
  auto pool = Pool::create({4096}, DType::U8, {.name = "cam", .max_buffers = 1, .allocate = {.memory = MemoryKind::Shm}});
  ASSERT_OK(pool);
  auto stream = cuda::Stream::create();
  ASSERT_OK(stream);
  {
    auto t = pool->acquire(0ms);
    ASSERT_OK(t);
    ASSERT_OK(sender->send(*t));
  }
  fake_.hold_events(1);
  ASSERT_NO_FATAL_FAILURE(run_kernel_on_next_frame(*receiver, *stream));
  EXPECT_EQ(fake_.live("event"), 1) << "the event went with the import, not destroyed";
  EXPECT_EQ(receiver->stats().frames_out, 1u) << "still out: device work runs on it";
  EXPECT_EQ(receiver->stats().releases_queued, 1u);
  EXPECT_EQ(receiver->stats().releases_sent, 0u);
  ASSERT_OK(receiver->flush());
  EXPECT_ERROR(receiver->receive(5ms), ErrorCode::Busy, "no frame within 5 ms");
  EXPECT_ERROR(sender->acquire(*pool, 10ms), ErrorCode::Busy, "not released by the receiver");
  EXPECT_EQ(receiver->stats().releases_sent, 0u);
  EXPECT_EQ(fake_.count("cudaEventSynchronize"), 0) << "no thread blocks on the device";
  EXPECT_GE(fake_.count("cudaEventQuery"), 2) << "asked again at each call and while receive() waited";

  fake_.complete_events();
  ASSERT_OK(receiver->flush());  // the work is done: the release goes back
  EXPECT_EQ(receiver->stats().releases_sent, 1u);
  EXPECT_EQ(receiver->stats().frames_out, 0u);
  EXPECT_EQ(fake_.live("event"), 0);
  auto again = sender->acquire(*pool, 1s);
  ASSERT_OK(again);
  EXPECT_EQ(pool->stats().allocated, 1u);
}

// A receive() already waiting picks the completion up by itself (it asks every millisecond).
TEST_F(CudaFake, ChannelReceiveWaitingSendsTheReleaseWhenDeviceWorkCompletes) {
  namespace channel = edgetensor::channel;
  auto sp = channel::socket_pair();
  ASSERT_OK(sp);
  auto sender = channel::Sender::create(std::move(sp->first));
  auto receiver = channel::Receiver::create(std::move(sp->second));
  ASSERT_OK(sender);
  ASSERT_OK(receiver);
  auto t = TensorDyn::allocate({4096}, DType::U8, et_test::mem(MemoryKind::Shm));
  ASSERT_OK(t);
  ASSERT_OK(sender->send(*t));
  auto stream = cuda::Stream::create();
  ASSERT_OK(stream);
  fake_.hold_events(1);
  ASSERT_NO_FATAL_FAILURE(run_kernel_on_next_frame(*receiver, *stream));
  EXPECT_EQ(receiver->stats().releases_sent, 0u) << "held back: the kernel still runs";
  std::thread device([this] {
    std::this_thread::sleep_for(20ms);
    fake_.complete_events();
  });
  EXPECT_ERROR(receiver->receive(300ms), ErrorCode::Busy, "no frame within 300 ms");
  device.join();
  EXPECT_EQ(receiver->stats().releases_sent, 1u) << "sent while receive() waited for a frame";
  ASSERT_OK(sender->drain(1s));
}
