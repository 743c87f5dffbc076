// SPDX-License-Identifier: Apache-2.0
// The frame channel's stream (channel version 2, issue 25): per-frame presentation time, duration and
// flags; the table sized from a Pool the sender knows; the end of stream, which is not an error and
// unblocks a consumer that holds frames while it waits for the next one (no stall in drain());
// receive_latest(), which skips to the newest frame and releases the older ones at once.
#include <edgetensor/edgetensor.h>
#include <gtest/gtest.h>
#include <poll.h>

#include <poll.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <deque>
#include <optional>
#include <thread>
#include <vector>

#include "channel/channel_wire.h"
#include "support/test_support.h"
#include "unit/channel/channel_support.h"
#include "unit/ipc/ipc_wire_support.h"

using namespace edgetensor;
using namespace std::chrono_literals;
using et_test::eventually;

using et_test::channel_support::Ends;
using et_test::channel_support::make_ends;
using et_test::channel_support::shm_pool;

namespace {


TEST(ChannelStream, PresentationTimeDurationAndFlagsTravel) {
  auto ends = make_ends();
  ASSERT_TRUE(ends);
  auto t = TensorDyn::allocate({8}, DType::U8, et_test::mem(MemoryKind::Shm));
  ASSERT_OK(t);
  ASSERT_OK(ends->sender.send(*t, {.timestamp_ns = 77, .pts_ns = -40'000'000, .duration_ns = 33'333'333, .flags = 0x8001}));
  ASSERT_OK(ends->sender.send(*t));
  auto a = ends->receiver.receive(1s);
  auto b = ends->receiver.receive(1s);
  ASSERT_OK(a);
  ASSERT_OK(b);
  EXPECT_EQ(a->timestamp_ns, 77);
  EXPECT_EQ(a->pts_ns, std::optional<std::int64_t>(-40'000'000)) << "a negative PTS (before a segment start) travels";
  EXPECT_EQ(a->duration_ns, std::optional<std::int64_t>(33'333'333));
  EXPECT_EQ(a->flags, 0x8001u);
  EXPECT_FALSE(a->end_of_stream);
  EXPECT_FALSE(b->pts_ns.has_value()) << "none sent, none delivered";
  EXPECT_FALSE(b->duration_ns.has_value());
  EXPECT_EQ(b->flags, 0u);
  EXPECT_ERROR(ends->sender.send(*t, {.duration_ns = -1}), ErrorCode::InvalidArgument, "duration_ns -1 is negative");
  EXPECT_ERROR(ends->sender.send(*t, {.pts_ns = INT64_MIN}), ErrorCode::InvalidArgument, "pts_ns INT64_MIN");
  ASSERT_OK(ends->sender.status());
}

// The case: 6 pooled buffers, SenderOptions::max_buffers 4. Acquired through Sender::acquire, the
// table grows to the pool (the receiver's hello allows 32): each buffer is announced once.
TEST(ChannelStream, TheTableIsSizedFromThePoolTheSenderKnows) {
  auto ends = make_ends({.name = "sized", .max_buffers = 4});
  ASSERT_TRUE(ends);
  auto warm = TensorDyn::allocate({8}, DType::U8, et_test::mem(MemoryKind::Shm));
  ASSERT_OK(warm);
  ASSERT_OK(ends->sender.send(*warm));  // one round trip: the receiver's hello has reached the sender
  ASSERT_OK(ends->receiver.receive(1s));
  ASSERT_OK(ends->sender.drain(1s));
  auto pool = shm_pool("six", 6);
  ASSERT_OK(pool);
  std::vector<TensorDyn> all;
  for (int i = 0; i < 6; ++i) {
    auto t = ends->sender.acquire(*pool, 0ms);
    ASSERT_OK(t);
    all.push_back(*t);
  }
  for (int i = 0; i < 60; ++i) {
    ASSERT_OK(ends->sender.send(all[static_cast<std::size_t>(i % 6)]));
    ASSERT_OK(ends->receiver.receive(1s));
    ASSERT_OK(ends->sender.drain(1s));
  }
  const auto s = ends->sender.stats();
  EXPECT_EQ(s.reannounces, 0u);
  EXPECT_EQ(s.announces, 7u) << "the warm-up buffer and each pool buffer once";
  EXPECT_EQ(s.buffers_announced, 6u) << "the table holds the pool (the warm-up buffer was evicted for it)";
  // Never past the receiver's max_buffers, which its hello told the sender.
  auto small = make_ends({.name = "capped", .max_buffers = 2}, {.max_buffers = 3});
  ASSERT_TRUE(small);
  ASSERT_OK(small->sender.send(*warm));
  ASSERT_OK(small->receiver.receive(1s));
  ASSERT_OK(small->sender.drain(1s));
  auto pool8 = shm_pool("eight", 8);
  ASSERT_OK(pool8);
  std::vector<TensorDyn> eight;
  for (int i = 0; i < 8; ++i) {
    auto t = small->sender.acquire(*pool8, 0ms);
    ASSERT_OK(t);
    eight.push_back(*t);
  }
  for (const TensorDyn& t : eight) {
    ASSERT_OK(small->sender.send(t));
    ASSERT_OK(small->receiver.receive(1s));
    ASSERT_OK(small->sender.drain(1s));
  }
  EXPECT_EQ(small->sender.stats().buffers_announced, 3u);
  ASSERT_OK(small->receiver.status());
}

TEST(ChannelStream, EndOfStreamComesAfterTheFramesAndIsNotAnError) {
  auto ends = make_ends({.name = "eos"});
  ASSERT_TRUE(ends);
  auto t = TensorDyn::allocate({8}, DType::U8, et_test::mem(MemoryKind::Shm));
  ASSERT_OK(t);
  for (int i = 0; i < 3; ++i) ASSERT_OK(ends->sender.send(*t));
  ASSERT_OK(ends->sender.end_stream());
  ASSERT_OK(ends->sender.end_stream());  // "again: nothing more"
  EXPECT_ERROR(ends->sender.send(*t), ErrorCode::FailedPrecondition, "the stream ended");
  for (std::uint64_t i = 0; i < 3; ++i) {
    auto d = ends->receiver.receive(1s);
    ASSERT_OK(d);
    EXPECT_FALSE(d->end_of_stream);
    EXPECT_EQ(d->sequence, i);
  }
  for (int i = 0; i < 2; ++i) {  // answered at once, on every later call
    auto end = ends->receiver.receive(0ms);
    ASSERT_OK(end);
    EXPECT_TRUE(end->end_of_stream);
    EXPECT_EQ(end->sequence, 3u) << "the frames the sender sent";
    EXPECT_TRUE(end->tensor.is_empty_handle());
    EXPECT_TRUE(end->frame.is_empty());
  }
  EXPECT_TRUE(ends->receiver.stats().end_of_stream);
  ASSERT_OK(ends->receiver.status());
  ASSERT_OK(ends->sender.drain(1s));  // "the releases still travel after the end"
  { channel::Sender gone = std::move(ends->sender); }
  auto end = ends->receiver.receive(1s);
  ASSERT_OK(end);  // "the end stays the answer once the sender is gone"
  EXPECT_TRUE(end->end_of_stream);
}

// The stall of issue 25: a consumer keeps its last frames until the next one arrives and waits in
// receive(); the producer stops. drain() alone waits on frames that consumer will never drop (bounded
// by its timeout: Busy); end_stream() first lets the consumer drop them, and drain() returns at once.
TEST(ChannelStream, EndingAStreamNeverStallsOnAConsumerThatHoldsFrames) {
  auto ends = make_ends({.name = "stall"});
  ASSERT_TRUE(ends);
  auto pool = shm_pool("stall", 4);
  ASSERT_OK(pool);
  std::atomic<int> frames{0};
  std::atomic<bool> got_end{false};
  std::optional<Error> failed;
  std::thread consumer([&] {
    std::deque<channel::Delivery> ring;  // keeps the last two frames, as a tracker or a smoother would
    for (;;) {
      auto d = ends->receiver.receive(10s);
      if (!d) {
        failed = d.error();
        return;
      }
      if (d->end_of_stream) {
        ring.clear();
        got_end = true;
        return;
      }
      ring.push_back(std::move(*d));
      if (ring.size() > 2) ring.pop_front();
      ++frames;
    }
  });
  for (int i = 0; i < 6; ++i) {
    auto t = ends->sender.acquire(*pool, 1s);
    ASSERT_OK(t);
    ASSERT_OK(ends->sender.send(*t));
  }
  ASSERT_TRUE(eventually([&] { return frames.load() == 6; }));
  auto busy = ends->sender.drain(100ms);
  EXPECT_ERROR(busy, ErrorCode::Busy, "2 frame buffers still out after 100 ms");
  // A wait that ran out says so, as receive() and Pool::acquire do (Python maps it to TimeoutError).
  EXPECT_EQ(busy.error().sys_errno(), ETIMEDOUT);
  EXPECT_EQ(ends->sender.drain(0ms).error().sys_errno(), EAGAIN);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_OK(ends->sender.end_stream());
  ASSERT_OK(ends->sender.drain(10s));
  const auto took = std::chrono::steady_clock::now() - start;
  consumer.join();
  EXPECT_LT(took, 1s) << "no stall: the consumer dropped its frames at the end of stream";
  EXPECT_TRUE(got_end.load());
  EXPECT_FALSE(failed.has_value()) << failed->to_string();
  EXPECT_EQ(pool->stats().in_use, 0u);
  // Shutdown does not wait on the consumer either: a Sender with frames out goes at once.
  auto held = make_ends();
  ASSERT_TRUE(held);
  auto t = pool->acquire(0ms);
  ASSERT_OK(t);
  ASSERT_OK(held->sender.send(*t));
  auto d = held->receiver.receive(1s);
  ASSERT_OK(d);
  const auto stop = std::chrono::steady_clock::now();
  { channel::Sender gone = std::move(held->sender); }
  EXPECT_LT(std::chrono::steady_clock::now() - stop, 1s);
}

// Five frames arrive while the consumer sleeps: receive_latest() gets the fifth, and the four others
// are back in the sender's pool at once.
TEST(ChannelStream, ReceiveLatestSkipsToTheNewestAndReleasesTheRest) {
  auto ends = make_ends({.name = "latest"});
  ASSERT_TRUE(ends);
  auto pool = shm_pool("latest", 5);
  ASSERT_OK(pool);
  for (int i = 0; i < 5; ++i) {
    auto t = ends->sender.acquire(*pool, 0ms);
    ASSERT_OK(t);
    ASSERT_OK(ends->sender.send(*t));
  }
  EXPECT_EQ(pool->stats().in_use, 5u);
  auto d = ends->receiver.receive_latest(1s);
  ASSERT_OK(d);
  EXPECT_EQ(d->sequence, 4u);
  EXPECT_EQ(ends->receiver.stats().frames_skipped, 4u);
  EXPECT_EQ(ends->receiver.stats().frames_out, 1u);
  EXPECT_TRUE(eventually([&] { return pool->stats().in_use == 1; })) << "in use: " << pool->stats().in_use;
  *d = channel::Delivery();
  EXPECT_TRUE(eventually([&] { return pool->stats().in_use == 0; }));
  // With one frame there, it is that frame; an end of stream behind the newest frame waits for the next call.
  auto t = ends->sender.acquire(*pool, 1s);
  ASSERT_OK(t);
  ASSERT_OK(ends->sender.send(*t));
  ASSERT_OK(ends->sender.send(*t));
  ASSERT_OK(ends->sender.end_stream());
  auto last = ends->receiver.receive_latest(1s);
  ASSERT_OK(last);
  EXPECT_EQ(last->sequence, 6u);
  EXPECT_FALSE(last->end_of_stream);
  auto end = ends->receiver.receive_latest(1s);
  ASSERT_OK(end);
  EXPECT_TRUE(end->end_of_stream);
  EXPECT_EQ(ends->receiver.stats().frames_skipped, 5u);
  EXPECT_ERROR(ends->receiver.receive_latest(-1ms), ErrorCode::InvalidArgument, "negative");
}

// Receiver::fd(): the socket a consumer's poll loop waits on (POLLIN for a frame, and for the channel's
// end), owned by the Receiver; -1 once moved from.
TEST(ChannelStream, TheReceiverFdPollsReadableForAFrameAndForTheEnd) {
  auto ends = make_ends({.name = "poll"});
  ASSERT_TRUE(ends);
  const int fd = ends->receiver.fd();
  ASSERT_GE(fd, 0);
  auto readable = [&](int timeout_ms) {
    pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
    return ::poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN) != 0;
  };
  // The sender's hello is a message too: POLLIN, and receive(0ms) reads it and answers Busy.
  ASSERT_TRUE(readable(1000));
  auto none = ends->receiver.receive(0ms);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code(), ErrorCode::Busy);
  EXPECT_FALSE(readable(0));
  auto t = TensorDyn::allocate({4}, DType::U8, {.memory = MemoryKind::Shm});
  ASSERT_OK(t);
  ASSERT_OK(ends->sender.send(*t));
  ASSERT_TRUE(readable(1000));
  // The announce comes first: receive(0ms) takes it on the way to the frame.
  auto d = ends->receiver.receive(0ms);
  ASSERT_OK(d);
  EXPECT_EQ(d->sequence, 0u);
  ASSERT_OK(ends->sender.end_stream());
  ASSERT_TRUE(readable(1000));
  auto end = ends->receiver.receive(0ms);
  ASSERT_OK(end);
  EXPECT_TRUE(end->end_of_stream);
  channel::Receiver moved = std::move(ends->receiver);
  EXPECT_EQ(ends->receiver.fd(), -1);
  EXPECT_EQ(moved.fd(), fd);
}

// A receiver made after its sender sent and closed: its hello finds no peer (skipped, not an error),
// and the frames sent before the end still arrive.
TEST(ChannelStream, AReceiverMadeAfterTheSenderClosedStillReadsItsFrames) {
  using namespace et_test::ipc_wire;
  Pair p;
  UniqueFd memfd = sealed_memfd(4096);
  ASSERT_OK(ipc::send_fds(p.a.get(), detail::encode_hello(detail::ChannelRole::Sender, 32)));
  ASSERT_OK(ipc::send_fds(p.a.get(), detail::encode_announce(1, MemoryKind::Shm, 4096), {memfd.get()}));
  const std::uint32_t ids[] = {1};
  ASSERT_OK(ipc::send_fds(p.a.get(), detail::encode_frame(detail::ChannelMessage::TensorFrame, 0, 0, ids,
                                                          detail::encode_tensor_message(valid_header(4096)))));
  p.a.reset();
  auto receiver = channel::Receiver::create(std::move(p.b));
  ASSERT_OK(receiver);
  auto d = receiver->receive(1s);
  ASSERT_OK(d);
  EXPECT_EQ(d->sequence, 0u);
  EXPECT_ERROR(receiver->receive(1s), ErrorCode::Unavailable, "the sender closed the channel or died");
}

}  // namespace

// Receiver::fd() is the channel's socket, for an event loop: POLLIN once a frame is there, and then
// receive(0ms) takes it without waiting.
TEST(ChannelStream, TheReceiverFdTurnsReadableWhenAFrameArrives) {
  auto ends = make_ends({.name = "fd"});
  ASSERT_TRUE(ends);
  const int fd = ends->receiver.fd();
  ASSERT_GE(fd, 0);
  (void)ends->receiver.receive(0ms);  // reads the sender's hello, if it is there
  pollfd p{fd, POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 0) << "nothing to read yet";
  auto pool = shm_pool("fd", 2);
  ASSERT_OK(pool);
  auto t = ends->sender.acquire(*pool, 1s);
  ASSERT_OK(t);
  ASSERT_OK(ends->sender.send(*t));
  p.revents = 0;
  ASSERT_EQ(::poll(&p, 1, 1000), 1);
  EXPECT_NE(p.revents & POLLIN, 0);
  std::optional<channel::Delivery> d;
  for (int i = 0; i < 3 && !d; ++i) {  // an announce comes before the frame
    auto got = ends->receiver.receive(0ms);
    if (got) d = std::move(*got);
  }
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->sequence, 0u);
  channel::Receiver moved = std::move(ends->receiver);
  EXPECT_EQ(ends->receiver.fd(), -1);  // NOLINT(bugprone-use-after-move): moved-from answers -1
  EXPECT_EQ(moved.fd(), fd);
}

// A producer that ends the stream and goes at once: a consumer that releases a frame after that (the
// release meets a closed socket) still gets every frame sent before and the end of stream (the GStreamer
// sink's finding: it used to close the channel and lose them).
TEST(ChannelStream, AReleaseAfterTheSenderWentLosesNothingQueued) {
  auto sp = channel::socket_pair();
  ASSERT_OK(sp);
  auto r = channel::Receiver::create(std::move(sp->second));
  ASSERT_OK(r);
  auto t = TensorDyn::allocate({8}, DType::U8, et_test::mem(MemoryKind::Shm));
  ASSERT_OK(t);
  auto first = [&] {
    auto s = channel::Sender::create(std::move(sp->first));
    EXPECT_TRUE(s.has_value());
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(s->send(*t).has_value());
    EXPECT_TRUE(s->end_stream().has_value());
  };
  first();  // the Sender is gone: its socket shut down
  auto d0 = r->receive(1s);
  ASSERT_OK(d0);
  d0->tensor = TensorDyn{};  // the release meets the closed socket
  for (std::uint64_t seq = 1; seq < 3; ++seq) {
    auto d = r->receive(1s);
    ASSERT_OK(d);
    EXPECT_EQ(d->sequence, seq);
    d->tensor = TensorDyn{};
  }
  auto end = r->receive(1s);
  ASSERT_OK(end);
  EXPECT_TRUE(end->end_of_stream);
}

// Sender::acquire waits by reading the releases on its own thread (pool_wait.h; the reader thread stands
// back): a one-buffer pool, so every acquire waits for the previous frame's release, 300 times.
TEST(ChannelStream, AcquireThatReadsItsOwnReleasesServesEveryFrameOfAOneBufferPool) {
  auto ends = make_ends({.name = "inline"});
  ASSERT_TRUE(ends);
  auto pool = shm_pool("inline", 1);
  ASSERT_OK(pool);
  constexpr int kFrames = 300;
  std::atomic<int> received{0};
  std::thread consumer([&] {
    for (int i = 0; i < kFrames; ++i) {
      auto d = ends->receiver.receive(5s);
      if (!d || d->sequence != static_cast<std::uint64_t>(i)) return;
      ++received;  // `d` goes here: its release
    }
  });
  for (int i = 0; i < kFrames; ++i) {
    auto t = ends->sender.acquire(*pool, 5s);
    ASSERT_OK(t);
    ASSERT_OK(ends->sender.send(*t));
  }
  consumer.join();
  EXPECT_EQ(received.load(), kFrames);
  ASSERT_OK(ends->sender.drain(2s));
  EXPECT_EQ(pool->stats().in_use, 0u);
  EXPECT_EQ(ends->sender.stats().releases, static_cast<std::uint64_t>(kFrames));
}

// While an acquire waits on the channel's socket, a buffer that comes back another way (the producer's
// own tensor dropped on another thread) wakes it: it does not wait for a release or its timeout.
TEST(ChannelStream, AcquireWaitingOnTheSocketWakesForABufferGivenBackElsewhere) {
  auto ends = make_ends({.name = "kick"});
  ASSERT_TRUE(ends);
  auto pool = shm_pool("kick", 2);
  ASSERT_OK(pool);
  auto sent = ends->sender.acquire(*pool, 0ms);
  ASSERT_OK(sent);
  ASSERT_OK(ends->sender.send(*sent));
  *sent = TensorDyn();
  auto held = ends->sender.acquire(*pool, 0ms);  // the pool's second buffer, never sent
  ASSERT_OK(held);
  auto d = ends->receiver.receive(1s);  // held by the consumer until the end: no release comes
  ASSERT_OK(d);
  std::thread dropper([&] {
    std::this_thread::sleep_for(100ms);
    *held = TensorDyn();
  });
  const auto start = std::chrono::steady_clock::now();
  auto t = ends->sender.acquire(*pool, 20s);
  const auto waited = std::chrono::steady_clock::now() - start;
  dropper.join();
  ASSERT_OK(t);
  EXPECT_LT(waited, 10s) << "woken by the give-back, not by the 20 s timeout";
  EXPECT_EQ(ends->receiver.stats().frames_out, 1u);
}

// After acquires that read inline, the reader thread stands back; a producer that stops acquiring still
// gets its buffers back for a direct Pool::acquire and drain(), once the consumer releases.
TEST(ChannelStream, ReleasesReachThePoolWhenTheProducerStopsAcquiring) {
  auto ends = make_ends({.name = "idle"});
  ASSERT_TRUE(ends);
  auto pool = shm_pool("idle", 1);
  ASSERT_OK(pool);
  auto t = ends->sender.acquire(*pool, 0ms);
  ASSERT_OK(t);
  ASSERT_OK(ends->sender.send(*t));
  *t = TensorDyn();
  auto d = ends->receiver.receive(1s);
  ASSERT_OK(d);
  *d = channel::Delivery();
  auto u = ends->sender.acquire(*pool, 5s);  // reads that release inline
  ASSERT_OK(u);
  ASSERT_OK(ends->sender.send(*u));
  *u = TensorDyn();
  auto e = ends->receiver.receive(1s);
  ASSERT_OK(e);
  *e = channel::Delivery();
  auto direct = pool->acquire(5s);  // not through the Sender: the reader thread must come back for it
  ASSERT_OK(direct);
  *direct = TensorDyn();
  ASSERT_OK(ends->sender.drain(5s));
}
