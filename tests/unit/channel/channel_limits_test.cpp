// SPDX-License-Identifier: Apache-2.0
// The frame channel's bounds (issue 25, "Defects an adversarial trial found"): releases queued at a
// receiver whose sender does not read them are bounded (the channel closes, naming the count and the
// bound); the sender finds a released frame in constant time however many are out; announce churn
// (a buffer table smaller than the pool) is warned once.
#include <edgetensor/edgetensor.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "channel/channel_wire.h"
#include "channel/receiver.h"
#include "support/test_support.h"
#include "unit/ipc/ipc_wire_support.h"

using namespace edgetensor;
using namespace std::chrono_literals;

namespace {

std::vector<std::byte> tensor_frame(std::uint32_t id, std::uint64_t seq, std::size_t bytes) {
  const std::uint32_t ids[] = {id};
  return detail::encode_frame(detail::ChannelMessage::TensorFrame, seq, 0, ids,
                              detail::encode_tensor_message(et_test::ipc_wire::valid_header(bytes)));
}

// A raw sender that never reads releases: the receiver's socket fills up, releases queue, and past
// ReceiverOptions::max_queued_releases the channel closes with a named error.
TEST(ChannelLimits, QueuedReleasesAreBoundedAndNamed) {
  using namespace et_test::ipc_wire;
  Pair p;
  int small = 1;  // the kernel's minimum: a handful of release messages fill it
  ASSERT_EQ(::setsockopt(p.b.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
  auto receiver = channel::Receiver::create(std::move(p.b), {.name = "deaf", .max_queued_releases = 16});
  ASSERT_OK(receiver);
  UniqueFd memfd = sealed_memfd(4096);
  ASSERT_OK(ipc::send_fds(p.a.get(), detail::encode_announce(1, MemoryKind::Shm, 4096), {memfd.get()}));
  Result<channel::Delivery> d = channel::Delivery();
  int frames = 0;
  for (; frames < 2000; ++frames) {
    ASSERT_OK(ipc::send_fds(p.a.get(), tensor_frame(1, static_cast<std::uint64_t>(frames), 4096)));
    d = receiver->receive(1s);
    if (!d) break;
    *d = channel::Delivery();  // released at once; the release queues once the socket is full
  }
  ASSERT_FALSE(d.has_value()) << "the receiver queued releases without a bound (" << frames << " frames)";
  EXPECT_ERROR(d, ErrorCode::OutOfRange, "releases queued");
  EXPECT_ERROR(d, ErrorCode::OutOfRange, "ReceiverOptions::max_queued_releases 16");
  EXPECT_ERROR(receiver->status(), ErrorCode::FailedPrecondition, "max_queued_releases 16");
  EXPECT_ERROR(channel::Receiver::create(std::move(channel::socket_pair()->second), {.max_queued_releases = 0}),
               ErrorCode::InvalidArgument, "max_queued_releases 0");
}

// A receiver whose max_buffer_bytes is 0 would refuse every buffer: refused when made, not at each frame.
TEST(ChannelLimits, ZeroMaxBufferBytesIsRefusedWhenMade) {
  channel::ReceiverOptions o;
  o.limits.max_buffer_bytes = 0;
  EXPECT_ERROR(channel::Receiver::create(std::move(channel::socket_pair()->second), o), ErrorCode::InvalidArgument,
               "max_buffer_bytes 0 would refuse every buffer");
}

// After the largest sequence, a send with no sequence of its own has none to take: OutOfRange naming it, not
// a wrap to 0 refused as "sequences must increase". Sender and Publisher alike.
TEST(ChannelLimits, NoSequenceFollowsTheLargest) {
  constexpr std::uint64_t kLast = std::numeric_limits<std::uint64_t>::max();
  auto p = channel::socket_pair();
  ASSERT_TRUE(p) << p.error().to_string();
  auto sender = channel::Sender::create(std::move(p->first), {.max_frames_out = 8});
  auto receiver = channel::Receiver::create(std::move(p->second));
  ASSERT_TRUE(sender && receiver);
  auto t = TensorDyn::allocate({16}, DType::U8, {.memory = MemoryKind::Shm});
  ASSERT_TRUE(t) << t.error().to_string();
  auto last = sender->send(*t, {.sequence = kLast});
  ASSERT_TRUE(last) << last.error().to_string();
  EXPECT_EQ(*last, kLast);
  EXPECT_ERROR(sender->send(*t), ErrorCode::OutOfRange, "no sequence follows 18446744073709551615");
  EXPECT_TRUE(sender->end_stream());
  auto publisher = channel::Publisher::create({});
  ASSERT_TRUE(publisher) << publisher.error().to_string();
  ASSERT_TRUE(publisher->send(*t, {.sequence = kLast}));
  EXPECT_ERROR(publisher->send(*t), ErrorCode::OutOfRange, "no sequence follows 18446744073709551615");
}

// Room for releases grows geometrically: a delivery never copies the whole queue (issue 25: libstdc++'s
// reserve(n) allocates exactly n, so reserving one more per frame reallocated the queue every frame).
TEST(ChannelLimits, ReleaseRoomGrowsGeometrically) {
  std::vector<detail::ReleaseEntry> v;
  int reallocations = 0;
  for (std::size_t n = 1; n <= 100000; ++n) {
    const std::size_t before = v.capacity();
    detail::reserve_room(v, n);
    EXPECT_GE(v.capacity(), n);
    if (v.capacity() != before) ++reallocations;
  }
  EXPECT_LE(reallocations, 20);
}

// 16384 frames of one buffer out at once, released newest first and in order: every release is
// matched to its frame and the sender gets all of them back. (Its cost, constant per release, is a
// bench row: channel/release-1024-newest-first against the in-order baseline, bench/channel_benchmark.cpp.)
TEST(ChannelLimits, ManyFramesOutAreAllReleasedInEitherOrder) {
  constexpr int kFrames = 16384;
  for (const bool newest_first : {false, true}) {
    SCOPED_TRACE(newest_first ? "newest first" : "in order");
    auto sp = channel::socket_pair();
    ASSERT_OK(sp);
    auto sender = channel::Sender::create(std::move(sp->first), {.name = "many"});
    auto receiver = channel::Receiver::create(std::move(sp->second), {.name = "many"});
    ASSERT_OK(sender);
    ASSERT_OK(receiver);
    auto t = TensorDyn::allocate({64}, DType::U8, et_test::mem(MemoryKind::Shm));
    ASSERT_OK(t);
    std::vector<channel::Delivery> held;
    held.reserve(kFrames);
    for (int i = 0; i < kFrames; ++i) {
      ASSERT_OK(sender->send(*t));
      auto d = receiver->receive(1s);
      ASSERT_OK(d);
      held.push_back(std::move(*d));
    }
    EXPECT_EQ(sender->stats().frames_out, static_cast<std::size_t>(kFrames));
    if (newest_first) {
      while (!held.empty()) held.pop_back();
    } else {
      for (auto& d : held) d = channel::Delivery();
    }
    // Releases that found the socket full wait for the receiver's next call: flush them meanwhile.
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (sender->stats().frames_out != 0 && std::chrono::steady_clock::now() < deadline) {
      ASSERT_OK(receiver->flush());
      (void)sender->drain(1ms);
    }
    EXPECT_EQ(sender->stats().frames_out, 0u);
  }
}

// A pool of 6 buffers through a table of 4, the sender not told of the pool: nearly every frame pays an
// announce and a retire. Warned once, with what to do; counted in SenderStats::reannounces.
TEST(ChannelLimits, AnnounceChurnIsWarnedOnce) {
  std::mutex m;
  std::vector<std::string> logged;
  auto old = set_log_callback([&](LogLevel level, std::string_view line) {
    std::lock_guard lock(m);
    if (level == LogLevel::Warning) logged.emplace_back(line);
  });
  {
    auto sp = channel::socket_pair();
    ASSERT_OK(sp);
    auto sender = channel::Sender::create(std::move(sp->first), {.name = "churn", .max_buffers = 4});
    auto receiver = channel::Receiver::create(std::move(sp->second), {.name = "churn", .max_buffers = 4});
    ASSERT_OK(sender);
    ASSERT_OK(receiver);
    auto pool = Pool::create({64}, DType::U8, {.name = "six", .min_buffers = 6, .max_buffers = 6,
                                               .allocate = {.memory = MemoryKind::Shm}});
    ASSERT_OK(pool);
    std::vector<TensorDyn> all;  // round-robin over the six buffers
    for (int i = 0; i < 6; ++i) {
      auto t = pool->acquire(0ms);
      ASSERT_OK(t);
      all.push_back(*t);
    }
    for (int i = 0; i < 60; ++i) {
      ASSERT_OK(sender->send(all[static_cast<std::size_t>(i % 6)]));
      ASSERT_OK(receiver->receive(1s));
      ASSERT_OK(sender->drain(1s));
    }
    EXPECT_GT(sender->stats().reannounces, 40u);
  }
  set_log_callback(old);
  std::lock_guard lock(m);
  ASSERT_EQ(logged.size(), 1u) << "warned once";
  EXPECT_NE(logged[0].find("channel 'churn'"), std::string::npos) << logged[0];
  EXPECT_NE(logged[0].find("max_buffers 4"), std::string::npos) << logged[0];
}

}  // namespace
