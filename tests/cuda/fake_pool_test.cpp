// SPDX-License-Identifier: Apache-2.0
// Pools and CUDA on the test double (lane cuda.fake): device work recorded on a pooled buffer keeps it
// out of the pool until its event completes (the fake holds events pending on request), and a reused
// buffer keeps its CUDA registration; the frame channel's receiver holds a release back the same way.
#include <edgetensor/channel.h>
#include <edgetensor/log.h>
#include <edgetensor/pool.h>

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
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

// The library's log lines while it lives.
class LogCapture {
 public:
  LogCapture() {
    previous_ = edgetensor::set_log_callback([this](edgetensor::LogLevel level, std::string_view line) {
      std::lock_guard lock(mutex_);
      lines_.push_back(std::string(edgetensor::log_level_name(level)) + ": " + std::string(line));
    });
  }
  ~LogCapture() { edgetensor::set_log_callback(previous_); }
  std::string find(std::string_view needle) {
    std::lock_guard lock(mutex_);
    for (const auto& l : lines_)
      if (l.find(needle) != std::string::npos) return l;
    return {};
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> lines_;
  edgetensor::LogCallback previous_;
};

// The calls since the last reset, checked as one teardown that waited: queries of the event that
// answer cudaErrorNotReady (600) while the work runs and success once it is done, then
// cudaEventDestroy, then cudaHostUnregister (the fake checks the memory is still mapped then).
void expect_waited_then_freed(const et_cuda_test::Fake& fake) {
  const Names names = fake.names();
  ASSERT_GE(names.size(), 4u) << testing::PrintToString(names);
  EXPECT_EQ(names[names.size() - 2], "cudaEventDestroy") << testing::PrintToString(names);
  EXPECT_EQ(names.back(), "cudaHostUnregister") << testing::PrintToString(names);
  int not_ready = 0, ready = 0;
  for (int i = 0; i < fake.call_count(); ++i) {
    const EtFakeCall* c = fake.call(i);
    if (std::string(c->name) != "cudaEventQuery") continue;
    EXPECT_EQ(ready, 0) << "no query after the one that saw the work complete";
    (c->result == 0 ? ready : not_ready) += 1;
  }
  EXPECT_GE(not_ready, 1) << "the work was still running when the teardown began";
  EXPECT_EQ(ready, 1);
  EXPECT_LT(not_ready, 200) << "polls with sleeps that back off, not a busy loop";
  EXPECT_EQ(fake.count("cudaEventSynchronize"), 0) << "an unbounded wait";
  EXPECT_EQ(fake.freed_while_pending(), 0);
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

// Not a pool's buffer: the released map's event stays with the storage while the work runs (the
// storage's teardown waits for it), and a later release drops the events that completed.
TEST_F(CudaFake, UnpooledReleaseKeepsItsPendingEventWithTheStorage) {
  auto t = TensorDyn::allocate({4096}, DType::U8, et_test::mem(MemoryKind::Heap));
  ASSERT_OK(t);
  auto stream = cuda::Stream::create();
  ASSERT_OK(stream);
  fake_.hold_events(1);
  auto m = cuda::map(*t);
  ASSERT_OK(m);
  ASSERT_OK(m->record(*stream));
  m->unmap();
  EXPECT_EQ(fake_.live("event"), 1) << "kept while the work runs";
  fake_.complete_events();
  auto m2 = cuda::map(*t);
  ASSERT_OK(m2);
  ASSERT_OK(m2->record(*stream));
  m2->unmap();
  EXPECT_EQ(fake_.live("event"), 1) << "the completed one was dropped when the second was kept";
  fake_.complete_events();  // else the storage's teardown would wait for it
}

// A tensor's storage whose last holder goes while its recorded work still runs (the fake holds the
// event 300 ms, as a queued async copy would run): the teardown waits for the event, and only then
// destroys it, unregisters the memory and unmaps it, with a log line.
TEST_F(CudaFake, StorageTeardownWaitsForRecordedWorkBeforeUnregistering) {
  LogCapture logs;
  auto stream = cuda::Stream::create();
  ASSERT_OK(stream);
  auto t = TensorDyn::allocate({4096}, DType::U8, et_test::mem(MemoryKind::Heap));
  ASSERT_OK(t);
  auto m = cuda::map(*t);
  ASSERT_OK(m);
  fake_.hold_events_for(300);
  const auto recorded = std::chrono::steady_clock::now();
  ASSERT_OK(m->record(*stream));
  fake_.reset();
  *m = cuda::CudaMap();  // the map goes first: its event goes to the storage
  *t = TensorDyn();      // the last holder: the storage waits here
  const auto freed = std::chrono::steady_clock::now();
  EXPECT_GE(freed - recorded, 290ms) << "returned before the work completed";
  EXPECT_LT(freed - recorded, 3s);
  expect_waited_then_freed(fake_);
  EXPECT_NE(logs.find("for device work recorded on it before freeing it"), "") << "a log line says it waited";
}

// The pool destroyed while a returned buffer's recorded work still runs: the pool's teardown waits
// for the event before it destroys it, unregisters and unmaps the buffer.
TEST_F(CudaFake, PoolDestroyedWithPendingDeviceWorkWaitsForItBeforeFreeing) {
  LogCapture logs;
  auto stream = cuda::Stream::create();
  ASSERT_OK(stream);
  std::optional<Pool> pool(must_pool(2));
  {
    auto t = pool->acquire(0ms);
    ASSERT_OK(t);
    auto m = cuda::map(*t);
    ASSERT_OK(m);
    fake_.hold_events_for(300);
    ASSERT_OK(m->record(*stream));
  }  // back in the pool, fenced
  EXPECT_EQ(pool->stats().device_pending, 1u);
  fake_.reset();
  const auto start = std::chrono::steady_clock::now();
  pool.reset();
  EXPECT_GE(std::chrono::steady_clock::now() - start, 200ms) << "the pool freed the buffer without waiting";
  expect_waited_then_freed(fake_);
  EXPECT_NE(logs.find("waited"), "");
  EXPECT_EQ(fake_.live("event"), 0);
  EXPECT_EQ(fake_.live("host_register"), 0);
}

// Work that outlives the bound (record's teardown_timeout, 50 ms here; the event never completes):
// the storage leaks its memory with a warning naming the buffer and the bound, and never unregisters
// or unmaps it (a real device could still write it).
TEST_F(CudaFake, StorageLeaksItsMemoryWhenRecordedWorkOutlivesTheBound) {
  LogCapture logs;
  auto stream = cuda::Stream::create();
  ASSERT_OK(stream);
  auto t = TensorDyn::allocate({4096}, DType::U8, et_test::mem(MemoryKind::Heap));
  ASSERT_OK(t);
  const std::size_t abandoned = edgetensor::detail::abandoned_storage_count();
  auto* host = static_cast<void*>(const_cast<std::byte*>(t->map_read()->data()));
  auto m = cuda::map(*t);
  ASSERT_OK(m);
  fake_.hold_events(1);  // never completes
  ASSERT_OK(m->record(*stream, 50ms));
  fake_.reset();
  const auto start = std::chrono::steady_clock::now();
  *m = cuda::CudaMap();
  *t = TensorDyn();
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, 50ms);
  EXPECT_LT(waited, 2s);
  EXPECT_EQ(fake_.count("cudaHostUnregister"), 0) << "memory a device may still write was unregistered";
  EXPECT_EQ(fake_.live("host_register"), 1);
  abandoned_host_registrations_ = 1;
  EXPECT_EQ(edgetensor::detail::abandoned_storage_count(), abandoned + 1);
  const long page = sysconf(_SC_PAGESIZE);
  unsigned char vec[1];
  auto* page_start = reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(host) & ~static_cast<std::uintptr_t>(page - 1));
  EXPECT_EQ(mincore(page_start, 1, vec), 0) << "the memory was unmapped";
  const std::string line = logs.find("teardown bound of 50 ms");
  EXPECT_NE(line, "") << "no warning names the bound";
  EXPECT_EQ(line.rfind("warning: storage ", 0), 0u) << line;
  EXPECT_NE(line.find("of heap memory (heap (malloc), 4096 B)"), std::string::npos) << "names the buffer: " << line;
  EXPECT_NE(line.find("4096 B"), std::string::npos) << line;
  EXPECT_NE(line.find("its memory is leaked"), std::string::npos) << line;
  EXPECT_EQ(fake_.freed_while_pending(), 0);
}

// A pool's buffer whose work outlives the bound is leaked by the pool's teardown the same way.
TEST_F(CudaFake, PoolTeardownLeaksABufferWhoseWorkOutlivesTheBound) {
  LogCapture logs;
  auto stream = cuda::Stream::create();
  ASSERT_OK(stream);
  std::optional<Pool> pool(must_pool(1));
  {
    auto t = pool->acquire(0ms);
    ASSERT_OK(t);
    auto m = cuda::map(*t);
    ASSERT_OK(m);
    fake_.hold_events(1);
    ASSERT_OK(m->record(*stream, 30ms));
  }
  fake_.reset();
  pool.reset();
  EXPECT_EQ(fake_.count("cudaHostUnregister"), 0);
  abandoned_host_registrations_ = 1;
  const std::string line = logs.find("teardown bound of 30 ms");
  EXPECT_NE(line.find("heap"), std::string::npos) << "names the pool's buffer: " << line;
  EXPECT_NE(line.find("4096 B"), std::string::npos) << line;
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

// The receiver destroyed while device work recorded on a received frame still runs (its release held
// back): the import's teardown waits for the event before it destroys it, unregisters the import's
// memory and unmaps it.
TEST_F(CudaFake, ChannelReceiverDestroyedWithPendingDeviceWorkWaitsForIt) {
  namespace channel = edgetensor::channel;
  LogCapture logs;
  auto sp = channel::socket_pair();
  ASSERT_OK(sp);
  auto sender = channel::Sender::create(std::move(sp->first), {.name = "gpu"});
  std::optional<channel::Receiver> receiver;
  {
    auto r = channel::Receiver::create(std::move(sp->second), {.name = "gpu"});
    ASSERT_OK(r);
    receiver.emplace(std::move(*r));
  }
  ASSERT_OK(sender);
  auto t = TensorDyn::allocate({4096}, DType::U8, et_test::mem(MemoryKind::Shm));
  ASSERT_OK(t);
  ASSERT_OK(sender->send(*t));
  auto stream = cuda::Stream::create();
  ASSERT_OK(stream);
  fake_.hold_events_for(300);
  const auto recorded = std::chrono::steady_clock::now();
  ASSERT_NO_FATAL_FAILURE(run_kernel_on_next_frame(*receiver, *stream));
  EXPECT_EQ(receiver->stats().releases_sent, 0u) << "held back: the kernel still runs";
  fake_.reset();
  receiver.reset();
  EXPECT_GE(std::chrono::steady_clock::now() - recorded, 290ms) << "the import was freed under running work";
  expect_waited_then_freed(fake_);
  EXPECT_NE(logs.find("shm"), "");
}
