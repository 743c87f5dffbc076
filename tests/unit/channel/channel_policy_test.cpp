// SPDX-License-Identifier: Apache-2.0
// The per-receiver policy (issue 25): Block waits for a release as before; Drop never waits: a receiver
// holding its limit of frames gets no new ones until it releases, the drops are counted on both ends, and
// a pool sized by the rule in channel.h never stalls the producer in acquire.
#include <edgetensor/edgetensor.h>
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <vector>

#include "support/test_support.h"
#include "unit/channel/channel_support.h"

using namespace edgetensor;
using namespace std::chrono_literals;
using et_test::eventually;

using et_test::channel_support::Ends;
using et_test::channel_support::make_ends;

namespace {

// make_ends with the receiver named as the sender.
std::optional<Ends> policy_ends(channel::SenderOptions so) { return make_ends(so, {.name = so.name}); }

TensorDyn shm_tensor() {
  auto t = TensorDyn::allocate({256}, DType::U8, {.memory = MemoryKind::Shm});
  EXPECT_TRUE(t.has_value());
  return t ? *t : TensorDyn();
}


// Sends `t` twice; the receiver keeps both frames.
std::vector<channel::Delivery> hold_two(Ends& ends, const TensorDyn& t) {
  std::vector<channel::Delivery> held;
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(ends.sender.send(t).has_value());
    auto d = ends.receiver.receive(1s);
    EXPECT_TRUE(d.has_value());
    if (d) held.push_back(std::move(*d));
  }
  EXPECT_EQ(held.size(), 2u);
  return held;
}

TEST(ChannelPolicy, DropSendsNothingToAReceiverAtItsLimitAndNeverWaits) {
  auto ends = policy_ends({.name = "drop", .send_timeout = 2000ms, .policy = channel::ReceiverPolicy::Drop,
                         .max_frames_out = 2});
  ASSERT_TRUE(ends);
  const TensorDyn t = shm_tensor();
  std::vector<channel::Delivery> held = hold_two(*ends, t);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i) {
    auto seq = ends->sender.send(t);
    ASSERT_OK(seq);
    EXPECT_EQ(*seq, static_cast<std::uint64_t>(2 + i));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 500ms) << "Drop waited (send_timeout is 2 s)";
  auto s = ends->sender.stats();
  EXPECT_EQ(s.frames_dropped, 10u);
  EXPECT_EQ(s.frames_sent, 2u);
  auto none = ends->receiver.receive(0ms);
  ASSERT_FALSE(none) << "a frame reached a receiver at its limit";
  EXPECT_EQ(none.error().code(), ErrorCode::Busy);
  held.erase(held.begin());  // one release: room for one frame
  ASSERT_TRUE(eventually([&] { return ends->sender.stats().frames_out == 1; }));
  ASSERT_OK(ends->sender.send(t));
  auto d = ends->receiver.receive(1s);
  ASSERT_OK(d);
  EXPECT_EQ(d->sequence, 12u);
  EXPECT_EQ(ends->receiver.stats().frames_missing, 10u);
  EXPECT_EQ(ends->sender.stats().frames_dropped, 10u);
}

TEST(ChannelPolicy, BlockWaitsAtTheFrameLimitThenBusy) {
  auto ends = policy_ends({.name = "block", .send_timeout = 60ms, .max_frames_out = 2});
  ASSERT_TRUE(ends);
  const TensorDyn t = shm_tensor();
  std::vector<channel::Delivery> held = hold_two(*ends, t);
  const auto start = std::chrono::steady_clock::now();
  auto busy = ends->sender.send(t);
  ASSERT_FALSE(busy);
  EXPECT_EQ(busy.error().code(), ErrorCode::Busy);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 60ms);
  EXPECT_NE(busy.error().message().find("max_frames_out 2"), std::string::npos) << busy.error().message();
  EXPECT_EQ(ends->sender.stats().frames_dropped, 0u);
  held.clear();
  ASSERT_OK(ends->sender.send(t));
  auto d = ends->receiver.receive(1s);
  ASSERT_OK(d);
  EXPECT_EQ(d->sequence, 2u);
  EXPECT_EQ(ends->receiver.stats().frames_missing, 0u);
}

// No frame limit: every announced buffer out is the limit; Drop drops instead of waiting send_timeout.
TEST(ChannelPolicy, DropAtAFullBufferTable) {
  auto ends = policy_ends({.name = "table", .max_buffers = 2, .send_timeout = 2000ms,
                         .policy = channel::ReceiverPolicy::Drop});
  ASSERT_TRUE(ends);
  std::vector<TensorDyn> ts{shm_tensor(), shm_tensor(), shm_tensor()};
  std::vector<channel::Delivery> held;
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK(ends->sender.send(ts[static_cast<std::size_t>(i)]));
    auto d = ends->receiver.receive(1s);
    ASSERT_OK(d);
    held.push_back(std::move(*d));
  }
  const auto start = std::chrono::steady_clock::now();
  ASSERT_OK(ends->sender.send(ts[2]));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 500ms);
  EXPECT_EQ(ends->sender.stats().frames_dropped, 1u);
  EXPECT_EQ(ends->sender.stats().announces, 2u);
}

// The sizing rule: a pool of max_frames_out + 1 buffers (one being filled) never makes the producer wait
// in acquire, whatever the receiver holds; one buffer fewer does.
TEST(ChannelPolicy, PoolSizedByTheRuleNeverStallsAcquire) {
  for (const std::size_t pool_buffers : {std::size_t{3}, std::size_t{2}}) {
    auto ends = policy_ends({.name = "sized", .policy = channel::ReceiverPolicy::Drop, .max_frames_out = 2});
    ASSERT_TRUE(ends);
    auto pool = Pool::create({256}, DType::U8, {.name = "rule", .max_buffers = pool_buffers,
                                                .allocate = {.memory = MemoryKind::Shm}});
    ASSERT_OK(pool);
    std::vector<channel::Delivery> held;  // the receiver keeps everything it gets
    int busy = 0;
    for (int i = 0; i < 20; ++i) {
      auto t = ends->sender.acquire(*pool, 0ms);
      if (!t) {
        ++busy;
        continue;
      }
      ASSERT_OK(ends->sender.send(*t));
      if (auto d = ends->receiver.receive(0ms)) held.push_back(std::move(*d));
    }
    if (pool_buffers == 3) {
      EXPECT_EQ(busy, 0) << "a pool of max_frames_out + 1 stalled";
      EXPECT_EQ(held.size(), 2u);
      EXPECT_EQ(ends->sender.stats().frames_dropped, 18u);
    } else {
      EXPECT_GT(busy, 0) << "the rule is not tight";
    }
  }
}

TEST(ChannelPolicy, BadPolicyOptionsAreRefusedNamingValueAndLimit) {
  auto sp = channel::socket_pair();
  ASSERT_OK(sp);
  auto big = channel::Sender::create(std::move(sp->first), {.max_frames_out = channel::kMaxQueuedReleases + 1});
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(big.error().message().find("max_frames_out 1048577 is outside 0..1048576"), std::string::npos)
      << big.error().message();
  auto sp2 = channel::socket_pair();
  ASSERT_OK(sp2);
  auto policy = channel::Sender::create(std::move(sp2->first), {.policy = static_cast<channel::ReceiverPolicy>(7)});
  ASSERT_FALSE(policy);
  EXPECT_NE(policy.error().message().find("policy 7"), std::string::npos) << policy.error().message();
}

}  // namespace
