// SPDX-License-Identifier: Apache-2.0
// The frame channel's threads (ChannelConcurrent.*; the TSan lane runs every Channel* test): releases
// dropped on eight threads while a sender thread sends and the receiver receives; releases that find
// the socket full are queued and sent by a receive() waiting in another thread (eventfd wake-up); a
// Publisher streaming Pool frames to receivers that hold a few frames each on their own threads, so its
// pool runs dry again and again: the sending thread reads releases, the readers stand back and are called
// back by the starved acquires.
#include <edgetensor/edgetensor.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "channel/channel_wire.h"
#include "support/test_support.h"
#include "unit/channel/channel_support.h"
#include "unit/ipc/ipc_wire_support.h"

using namespace edgetensor;
using namespace std::chrono_literals;

namespace {

// A queue of deliveries one worker drops.
struct Inbox {
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<channel::Delivery> items;
  bool done = false;
};

TEST(ChannelConcurrent, EightThreadsReleaseWhileASenderThreadSends) {
  constexpr int kFrames = 2000;
  constexpr int kWorkers = 8;
  auto sp = channel::socket_pair();
  ASSERT_OK(sp);
  auto sender = channel::Sender::create(std::move(sp->first), {.name = "mt"});
  auto receiver = channel::Receiver::create(std::move(sp->second), {.name = "mt"});
  ASSERT_OK(sender);
  ASSERT_OK(receiver);
  auto pool = Pool::create({16, 16}, DType::U8, {.name = "mt", .max_buffers = 12, .allocate = {.memory = MemoryKind::Shm}});
  ASSERT_OK(pool);
  std::atomic<int> send_errors{0};
  std::thread producer([&] {
    for (int i = 0; i < kFrames; ++i) {
      auto t = sender->acquire(*pool, 10s);
      if (!t || !sender->send(*t)) {
        ++send_errors;
        return;
      }
    }
  });
  std::vector<Inbox> inboxes(kWorkers);
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w)
    workers.emplace_back([&, w] {
      Inbox& in = inboxes[w];
      std::unique_lock lock(in.mutex);
      for (;;) {
        in.cv.wait(lock, [&] { return in.done || !in.items.empty(); });
        if (in.items.empty()) return;
        channel::Delivery d = std::move(in.items.front());
        in.items.pop_front();
        lock.unlock();
        if (d.sequence % 3 == 0) std::this_thread::yield();
        auto view = d.tensor.reshape({256});  // a view on this thread holds the frame too
        d = channel::Delivery();
        view = Result<TensorDyn>(TensorDyn());  // the last holder drops it here: the release goes from this thread
        lock.lock();
      }
    });
  for (int i = 0; i < kFrames; ++i) {
    auto d = receiver->receive(10s);
    ASSERT_OK(d);
    ASSERT_EQ(d->sequence, static_cast<std::uint64_t>(i));
    Inbox& in = inboxes[static_cast<std::size_t>(i) % kWorkers];
    {
      std::lock_guard lock(in.mutex);
      in.items.push_back(std::move(*d));
    }
    in.cv.notify_one();
  }
  for (Inbox& in : inboxes) {
    {
      std::lock_guard lock(in.mutex);
      in.done = true;
    }
    in.cv.notify_one();
  }
  for (auto& w : workers) w.join();
  producer.join();
  EXPECT_EQ(send_errors.load(), 0);
  ASSERT_OK(receiver->flush());
  ASSERT_OK(sender->drain(10s));
  const auto s = sender->stats();
  EXPECT_EQ(s.frames_sent, static_cast<std::uint64_t>(kFrames));
  EXPECT_EQ(s.releases, static_cast<std::uint64_t>(kFrames));
  EXPECT_LE(s.announces, 12u);
  EXPECT_EQ(pool->stats().in_use, 0u);
  EXPECT_EQ(receiver->stats().frames_out, 0u);
}

TEST(ChannelConcurrent, APublishersStarvedPoolCallsItsStandingBackReadersBack) {
  constexpr std::uint64_t kFrames = 600;
  constexpr int kReceivers = 3;
  auto p = channel::Publisher::create({.name = "mt-pub"});
  ASSERT_OK(p);
  std::vector<channel::Receiver> receivers;
  for (int i = 0; i < kReceivers; ++i) {
    auto sp = channel::socket_pair();
    ASSERT_OK(sp);
    ASSERT_OK(p->add_receiver(std::move(sp->first)));
    auto r = channel::Receiver::create(std::move(sp->second));
    ASSERT_OK(r);
    receivers.push_back(std::move(*r));
  }
  // Each receiver holds up to i + 1 frames: 6 of the pool's 8 buffers at the worst, so the producer's
  // acquire finds the pool empty whenever releases wait unread.
  auto pool = et_test::channel_support::shm_pool("mt-pub", 8, {32, 32});
  ASSERT_OK(pool);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kReceivers; ++i)
    threads.emplace_back([&, i] {
      std::deque<channel::Delivery> held;
      for (std::uint64_t f = 0; f < kFrames; ++f) {
        auto d = receivers[static_cast<std::size_t>(i)].receive(10s);
        if (!d || d->sequence != f || !et_test::channel_support::stamped(d->tensor, f)) {
          ++wrong;
          return;
        }
        held.push_back(std::move(*d));
        if (held.size() > static_cast<std::size_t>(i) + 1) held.pop_front();  // the release goes from here
        if (f % 7 == static_cast<std::uint64_t>(i)) std::this_thread::yield();
      }
    });
  for (std::uint64_t f = 0; f < kFrames; ++f) {
    auto t = p->acquire(*pool, 10s);
    ASSERT_OK(t);
    ASSERT_TRUE(et_test::channel_support::stamp(*t, f));
    auto sent = p->send(*t);
    ASSERT_OK(sent);
    ASSERT_EQ(sent->delivered, static_cast<std::uint64_t>(kReceivers));
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  for (auto& r : receivers) ASSERT_OK(r.flush());
  ASSERT_OK(p->drain(10s));
  EXPECT_EQ(pool->stats().in_use, 0u);
  EXPECT_LE(pool->stats().allocated, 8u);
  // How often the pool ran dry (each a recall): a race test, so only shown.
  std::printf("pool waits: %llu of %llu acquires\n", static_cast<unsigned long long>(pool->stats().waits),
              static_cast<unsigned long long>(pool->stats().acquired));
}

TEST(ChannelConcurrent, ReleasesThatFindTheSocketFullWakeAWaitingReceive) {
  using namespace et_test::ipc_wire;
  constexpr int kFrames = 300;
  Pair p;
  int small = 1;  // the kernel raises it to its minimum: a handful of releases fill it
  ASSERT_EQ(::setsockopt(p.b.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
  auto receiver = channel::Receiver::create(std::move(p.b), {.name = "full"});
  ASSERT_OK(receiver);
  UniqueFd memfd = sealed_memfd(4096);
  ASSERT_OK(ipc::send_fds(p.a.get(), detail::encode_announce(1, MemoryKind::Shm, 4096), {memfd.get()}));
  std::vector<channel::Delivery> held;
  for (int i = 0; i < kFrames; ++i) {
    const std::uint32_t ids[] = {1};
    ASSERT_OK(ipc::send_fds(p.a.get(), detail::encode_frame(detail::ChannelMessage::TensorFrame,
                                                            static_cast<std::uint64_t>(i), 0, ids,
                                                            detail::encode_tensor_message(valid_header(4096)))));
    auto d = receiver->receive(1s);
    ASSERT_OK(d);
    held.push_back(std::move(*d));
  }
  // A receive() waits in another thread; the releases are dropped here while nobody reads them.
  std::atomic<bool> waiting_done{false};
  Result<channel::Delivery> waited = channel::Delivery();
  std::thread waiter([&] {
    waited = receiver->receive(10s);
    waiting_done = true;
  });
  std::this_thread::sleep_for(20ms);
  held.clear();
  EXPECT_GT(receiver->stats().releases_queued, 0u) << "the socket filled up: some releases wait";
  // Now read them: room in the socket lets the waiting receive() send the rest.
  std::size_t released = 0;
  std::vector<std::byte> buf(detail::kMaxReleaseMessageBytes + 1);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (released < static_cast<std::size_t>(kFrames) && std::chrono::steady_clock::now() < deadline) {
    auto r = ipc::receive_fds(p.a.get(), buf, 0);
    ASSERT_OK(r);
    if (r->size_bytes == sizeof(detail::HelloHeader)) continue;  // the receiver's hello
    auto entries = detail::decode_release(std::span(buf.data(), r->size_bytes));
    ASSERT_OK(entries);
    released += entries->size();
  }
  EXPECT_EQ(released, static_cast<std::size_t>(kFrames));
  EXPECT_FALSE(waiting_done.load()) << "the waiting receive() sent releases, it returned nothing";
  // End the wait with a frame.
  const std::uint32_t ids[] = {1};
  ASSERT_OK(ipc::send_fds(p.a.get(), detail::encode_frame(detail::ChannelMessage::TensorFrame, kFrames, 0, ids,
                                                          detail::encode_tensor_message(valid_header(4096)))));
  waiter.join();
  ASSERT_OK(waited);
  EXPECT_EQ(waited->sequence, static_cast<std::uint64_t>(kFrames));
  EXPECT_EQ(receiver->stats().releases_queued, 0u);
}

}  // namespace

namespace {

TEST(ChannelConcurrent, FlushDoesNotWaitForAReceiveBlockedInAnotherThread) {
  auto sp = channel::socket_pair();
  ASSERT_OK(sp);
  auto receiver = channel::Receiver::create(std::move(sp->second));
  ASSERT_OK(receiver);
  std::thread waiting([&] { (void)receiver->receive(2s); });  // nothing comes: it waits the whole 2 s
  std::this_thread::sleep_for(50ms);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_OK(receiver->flush());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s) << "flush sends what is queued without waiting";
  waiting.join();
}

}  // namespace
