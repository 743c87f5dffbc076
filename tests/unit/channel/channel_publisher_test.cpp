// SPDX-License-Identifier: Apache-2.0
// channel::Publisher (issue 25, "many consumers"): one producer, N receivers, each with its own policy;
// a buffer goes back to its pool only when every receiver released it; a late joiner is announced the
// buffers it needs; a slow receiver under Drop and a dying one hold nobody back; the end of stream
// reaches everyone, late joiners included; named sockets with accept on the publisher's thread.
#include <edgetensor/edgetensor.h>
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/sys_testing.h"
#include "channel/sender.h"
#include "support/test_support.h"
#include "unit/channel/channel_support.h"

using namespace edgetensor;
using namespace std::chrono_literals;
using et_test::eventually;

using et_test::channel_support::stamp;
using et_test::channel_support::stamped;
using et_test::channel_support::shm_pool;

namespace {

// A receiver on a socket pair whose other end `publisher` serves with `options` (its defaults when unset).
std::optional<channel::Receiver> join(channel::Publisher& publisher, std::optional<channel::SenderOptions> options = {},
                                      std::uint64_t* id = nullptr) {
  auto sp = channel::socket_pair();
  EXPECT_TRUE(sp.has_value());
  if (!sp) return std::nullopt;
  auto added = options ? publisher.add_receiver(std::move(sp->first), *options) : publisher.add_receiver(std::move(sp->first));
  EXPECT_TRUE(added.has_value()) << added.error().to_string();
  if (!added) return std::nullopt;
  if (id != nullptr) *id = *added;
  auto r = channel::Receiver::create(std::move(sp->second));
  EXPECT_TRUE(r.has_value()) << r.error().to_string();
  if (!r) return std::nullopt;
  return std::move(*r);
}

std::string socket_path(const char* name) {
  return (std::filesystem::temp_directory_path() / (std::string("et-pub-") + name + "-" + std::to_string(::getpid())))
      .string();
}

TEST(ChannelPublisher, EveryReceiverGetsEveryFrameWithOneSequence) {
  auto p = channel::Publisher::create({.name = "three"});
  ASSERT_OK(p);
  std::vector<channel::Receiver> rs;
  for (int i = 0; i < 3; ++i) {
    auto r = join(*p);
    ASSERT_TRUE(r);
    rs.push_back(std::move(*r));
  }
  auto pool = shm_pool("three", 4, {64, 64});
  ASSERT_OK(pool);
  for (std::uint64_t f = 0; f < 20; ++f) {
    auto t = p->acquire(*pool, 1s);
    ASSERT_OK(t);
    ASSERT_TRUE(stamp(*t, f));
    auto sent = p->send(*t, {.pts_ns = static_cast<std::int64_t>(f) * 1000});
    ASSERT_OK(sent);
    EXPECT_EQ(sent->sequence, f);
    EXPECT_EQ(sent->delivered, 3u);
    EXPECT_EQ(sent->dropped, 0u);
    std::optional<std::int64_t> stamp_seen;
    for (auto& r : rs) {
      auto d = r.receive(2s);
      ASSERT_OK(d);
      EXPECT_EQ(d->sequence, f);
      EXPECT_EQ(d->pts_ns, std::optional<std::int64_t>(static_cast<std::int64_t>(f) * 1000));
      if (stamp_seen) {
        EXPECT_EQ(d->timestamp_ns, *stamp_seen) << "one capture stamp for every receiver";
      }
      stamp_seen = d->timestamp_ns;
      EXPECT_TRUE(stamped(d->tensor, f));
    }
  }
  const auto st = p->stats();
  EXPECT_EQ(st.frames_published, 20u);
  EXPECT_EQ(st.deliveries, 60u);
  EXPECT_EQ(st.receivers, 3u);
  for (const auto& info : p->receivers()) EXPECT_LE(info.stats.announces, 4u) << "each pool buffer announced once";
  ASSERT_OK(p->drain(2s));
}

// A pooled buffer comes back only when the last receiver releases it.
TEST(ChannelPublisher, ABufferReturnsWhenEveryReceiverReleasedIt) {
  auto p = channel::Publisher::create();
  ASSERT_OK(p);
  std::uint64_t holder_id = 0;
  auto a = join(*p, std::nullopt, &holder_id);
  auto b = join(*p);
  ASSERT_TRUE(a && b);
  auto pool = shm_pool("last-release", 1, {64, 64});
  ASSERT_OK(pool);
  auto t = p->acquire(*pool, 1s);
  ASSERT_OK(t);
  ASSERT_OK(p->send(*t));
  t = TensorDyn{};
  auto da = a->receive(1s);
  auto db = b->receive(1s);
  ASSERT_OK(da);
  ASSERT_OK(db);
  db->tensor = TensorDyn{};  // b releases; a still holds it
  ASSERT_OK(b->flush());
  std::this_thread::sleep_for(50ms);
  auto busy = p->acquire(*pool, 0ms);
  EXPECT_ERROR(busy, ErrorCode::Busy, "receiver " + std::to_string(holder_id));
  EXPECT_EQ(busy.error().sys_errno(), EAGAIN);
  auto timed = p->acquire(*pool, 20ms);  // a wait that ran out keeps the pool's ETIMEDOUT (Python: TimeoutError)
  EXPECT_ERROR(timed, ErrorCode::Busy, "receiver " + std::to_string(holder_id));
  EXPECT_EQ(timed.error().sys_errno(), ETIMEDOUT);
  auto undrained = p->drain(0ms);
  EXPECT_ERROR(undrained, ErrorCode::Busy, "1 frame buffer still out");
  EXPECT_EQ(undrained.error().sys_errno(), EAGAIN) << "a zero timeout, as Sender::drain";
  EXPECT_EQ(p->drain(20ms).error().sys_errno(), ETIMEDOUT);
  da->tensor = TensorDyn{};
  ASSERT_OK(a->flush());
  EXPECT_TRUE(eventually([&] { return p->acquire(*pool, 0ms).has_value(); }));
}

// Frames of Pool buffers (issue 27, case (a)): after each frame the sending thread reads the releases that
// came, and the receiver's reader thread stands back (kPublisherStandBack), so a frame wakes no reader
// thread. Whatever waits for a release reads it or calls the reader back. The fixture makes the stand-back
// 60 s, so that only such a call ends it, never the clock (a loaded machine may stall a thread longer than
// the real 200 ms), and counts the reads on the publisher's end of the socket by thread.
class ChannelPublisherStandBack : public ::testing::Test {
 protected:
  void start(const channel::SenderOptions& options = {}) {
    auto sp = channel::socket_pair();
    ASSERT_OK(sp);
    fd_ = sp->first.get();
    // Before any channel thread runs; removed after they are joined (TearDown).
    sys::set_fault_hook([this](const sys::CallInfo& c) {
      if (c.fd != fd_ || (c.call != sys::Call::Recvmsg && c.call != sys::Call::Recvmmsg)) return 0;
      ++(std::this_thread::get_id() == test_thread_ ? test_reads : reader_reads);
      return 0;
    });
    p.emplace(*channel::Publisher::create({.name = "stand-back"}));
    ASSERT_OK(p->add_receiver(std::move(sp->first), options));
    auto receiver = channel::Receiver::create(std::move(sp->second));
    ASSERT_OK(receiver);
    r.emplace(std::move(*receiver));
    auto made = shm_pool("stand-back", 2, {64, 64});
    ASSERT_OK(made);
    pool.emplace(std::move(*made));
    // The receiver's hello, read by the reader thread before any frame stands it back.
    ASSERT_TRUE(eventually([&] { return reader_reads.load() > 0; }));
  }
  void SetUp() override { edgetensor::detail::set_publisher_stand_back_for_testing(60s); }
  void TearDown() override {
    pool.reset();
    r.reset();
    p.reset();
    sys::set_fault_hook({});
    edgetensor::detail::set_publisher_stand_back_for_testing(edgetensor::detail::kPublisherStandBack);
  }
  // Acquires, stamps and sends frame `f`; the receiver takes it and, with `release`, lets go of it at once.
  void frame(std::uint64_t f, bool release = true) {
    auto t = p->acquire(*pool, 2s);
    ASSERT_OK(t);
    ASSERT_TRUE(stamp(*t, f));
    auto sent = p->send(*t);
    ASSERT_OK(sent);
    EXPECT_EQ(sent->delivered, 1u) << "frame " << f;
    t = TensorDyn{};
    auto d = r->receive(2s);
    ASSERT_OK(d);
    EXPECT_EQ(d->sequence, f);
    EXPECT_TRUE(stamped(d->tensor, f)) << "frame " << f;
    if (!release) {
      held.push_back(std::move(*d));
      return;
    }
    d->tensor = TensorDyn{};
    ASSERT_OK(r->flush());
  }
  void release_held() {
    held.clear();
    ASSERT_OK(r->flush());
  }


  std::optional<channel::Publisher> p;
  std::optional<channel::Receiver> r;
  std::optional<Pool> pool;
  std::vector<channel::Delivery> held;
  std::atomic<int> test_reads{0}, reader_reads{0};

 private:
  int fd_ = -1;
  const std::thread::id test_thread_ = std::this_thread::get_id();
};

TEST_F(ChannelPublisherStandBack, TheSendingThreadReadsTheReleasesOfPoolFrames) {
  start();
  constexpr std::uint64_t kFrames = 40;
  for (std::uint64_t f = 0; f < kFrames; ++f) frame(f);
  // The first frame's release is the reader thread's (nothing stood back yet; it may take one more message
  // it was already waiting for); from then on the sending thread reads one batch a frame.
  EXPECT_GE(test_reads.load(), static_cast<int>(kFrames) - 2);
  EXPECT_LE(reader_reads.load(), 3) << test_reads.load() << " reads by the sending thread";
}

// Each case: both buffers out and released, the reader thread standing back since the last frame (60 s
// here), so only the acquire can have the releases read in time. (If the reader thread happened to be
// awake and read them first, the case proves nothing but still passes.)
TEST_F(ChannelPublisherStandBack, AnAcquireOfAnEmptyPoolReadsTheReleasesOrCallsTheReaderBack) {
  start();
  frame(0);
  frame(1, false);
  frame(2, false);
  release_held();
  // A try_acquire (a producer that polls) reads them on its own thread and gets a buffer at once.
  auto polled = pool->try_acquire();
  ASSERT_TRUE(polled.has_value()) << "a poll found the released buffers unread: " << polled.error().to_string();
  polled = TensorDyn{};
  // The same for an acquire that would wait.
  frame(3);
  frame(4, false);
  frame(5, false);
  release_held();
  auto waited = p->acquire(*pool, 10s);
  ASSERT_TRUE(waited.has_value()) << "waited out the reader's stand-back: " << waited.error().to_string();
  waited = TensorDyn{};
  // Released only once the acquire waits: it finds nothing to read, so it calls the reader thread back,
  // which reads the release when it comes.
  frame(6);
  frame(7, false);
  frame(8, false);
  std::thread releaser([this] {
    std::this_thread::sleep_for(50ms);
    release_held();
  });
  auto late = p->acquire(*pool, 10s);
  releaser.join();
  ASSERT_TRUE(late.has_value()) << "waited out the reader's stand-back: " << late.error().to_string();
}

// A Drop receiver at max_frames_out 1 that lets go of each frame before the next one ("Latest frame" in
// docs/CHANNEL.md) gets every frame: its release, unread while the reader stands back, is read by the send
// that finds it at its limit.
TEST_F(ChannelPublisherStandBack, ADropReceiverAtItsLimitThatReleasedGetsTheNextFrame) {
  start({.policy = channel::ReceiverPolicy::Drop, .max_frames_out = 1});
  frame(0);
  // The first release is the reader thread's (it stands back once it has read it).
  ASSERT_TRUE(eventually([&] { return p->receivers().at(0).stats.frames_out == 0; }));
  for (std::uint64_t f = 1; f < 30; ++f) frame(f);
  const auto stats = p->stats();
  EXPECT_EQ(stats.deliveries, 30u);
  EXPECT_EQ(stats.drops, 0u);
  EXPECT_EQ(r->stats().frames_missing, 0u);
}

// After a frame holding a buffer of no pool (an import, say, whose owner may wait for its release with no
// Pool to call the reader back), the reader thread reads again, though it stood back after a Pool frame;
// the sending thread does not read after such a frame.
TEST_F(ChannelPublisherStandBack, AFrameOfNoPoolsBufferCallsTheReaderBack) {
  start();
  frame(0);
  frame(1);  // the reader stands back since this frame
  auto plain = TensorDyn::allocate({64, 64}, DType::U8, et_test::mem(MemoryKind::Shm));
  ASSERT_OK(plain);
  const int reads = test_reads.load();
  const int reader_before = reader_reads.load();
  ASSERT_OK(p->send(*plain));
  EXPECT_EQ(test_reads.load(), reads) << "read after a frame of no pool's buffer";
  plain = TensorDyn{};
  auto d = r->receive(2s);
  ASSERT_OK(d);
  d->tensor = TensorDyn{};
  ASSERT_OK(r->flush());
  // No drain (it calls the reader back itself): the release is read by the reader thread.
  EXPECT_TRUE(eventually([&] { return p->receivers().at(0).stats.frames_out == 0; }, 5s))
      << "the import's release stayed unread";
  EXPECT_GT(reader_reads.load(), reader_before);
}

// The fan-out: a fast Block receiver, a slow Drop receiver that holds its frames, and one that
// dies after 3 frames. The producer never stalls and the fast one misses nothing; the slow one counts
// its drops as gaps; frames it holds are never overwritten; the dead one is removed.
TEST(ChannelPublisher, SlowFastAndDyingReceivers) {
  auto dying = channel::socket_pair();
  ASSERT_OK(dying);
  const pid_t child = ::fork();
  if (child == 0) {
    dying->first.reset();
    auto r = channel::Receiver::create(std::move(dying->second));
    if (!r) ::_exit(2);
    for (int i = 0; i < 3; ++i)
      if (!r->receive(5s)) ::_exit(3);
    ::_exit(0);  // dies holding nothing in particular: the kernel closes its end
  }
  dying->second.reset();

  auto p = channel::Publisher::create({.name = "mixed", .receiver = {.send_timeout = 2s}});
  ASSERT_OK(p);
  auto fast = join(*p);
  auto slow = join(*p, channel::SenderOptions{.policy = channel::ReceiverPolicy::Drop, .max_frames_out = 2});
  ASSERT_TRUE(fast && slow);
  ASSERT_OK(p->add_receiver(std::move(dying->first)));
  // Pool: fast holds 1 at a time, slow 2, the producer 1; the dying one may hold a few until it goes.
  auto pool = shm_pool("mixed", 8, {64, 64});
  ASSERT_OK(pool);

  std::deque<channel::Delivery> slow_held;
  std::uint64_t fast_seen = 0, slow_seen = 0, last_slow = 0;
  constexpr std::uint64_t kFrames = 60;
  for (std::uint64_t f = 0; f < kFrames; ++f) {
    auto t = p->acquire(*pool, 2s);
    ASSERT_OK(t);
    ASSERT_TRUE(stamp(*t, f));
    auto sent = p->send(*t);
    ASSERT_OK(sent);
    auto d = fast->receive(2s);
    ASSERT_OK(d);
    EXPECT_EQ(d->sequence, f) << "the fast receiver misses nothing";
    EXPECT_TRUE(stamped(d->tensor, f));
    ++fast_seen;
    // The slow one reads what arrived, holds it, and lets a frame go only every 5 frames.
    while (auto s = slow->receive(0ms)) {
      ++slow_seen;
      last_slow = s->sequence;
      slow_held.push_back(std::move(*s));
    }
    if (f % 5 == 4 && !slow_held.empty()) {
      EXPECT_TRUE(stamped(slow_held.front().tensor, slow_held.front().sequence)) << "a held frame was overwritten";
      slow_held.pop_front();
    }
    for (const auto& h : slow_held) EXPECT_TRUE(stamped(h.tensor, h.sequence)) << "a held frame was overwritten";
  }
  const int status = et_test::wait_child_or_kill(child, 20000);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  EXPECT_EQ(fast_seen, kFrames);
  EXPECT_LT(slow_seen, kFrames);
  const auto st = p->stats();
  EXPECT_EQ(st.receivers_left, 1u) << "the dead receiver is removed";
  EXPECT_EQ(st.receivers, 2u);
  bool found_slow = false;
  for (const auto& info : p->receivers())
    if (info.policy == channel::ReceiverPolicy::Drop) {
      found_slow = true;
      EXPECT_EQ(info.stats.frames_dropped, kFrames - slow_seen);
    }
  EXPECT_TRUE(found_slow);
  slow_held.clear();
  std::uint64_t last = last_slow;
  while (auto s = slow->receive(0ms)) last = s->sequence;
  const auto rs = slow->stats();
  if (last != 0) {
    EXPECT_EQ(rs.frames_missing + rs.frames_received, last + 1) << "gaps + frames = every sequence sent";
  }
}


// A receiver that joins after 10 frames gets the buffers it needs announced with its first frames, and
// counts no gap before its first one.
TEST(ChannelPublisher, ALateJoinerIsAnnouncedWhatItNeeds) {
  auto p = channel::Publisher::create();
  ASSERT_OK(p);
  auto early = join(*p);
  ASSERT_TRUE(early);
  auto pool = shm_pool("late", 3, {64, 64});
  ASSERT_OK(pool);
  std::optional<channel::Receiver> late;
  for (std::uint64_t f = 0; f < 20; ++f) {
    if (f == 10) {
      late = join(*p);
      ASSERT_TRUE(late);
    }
    auto t = p->acquire(*pool, 1s);
    ASSERT_OK(t);
    ASSERT_TRUE(stamp(*t, f));
    ASSERT_OK(p->send(*t));
    auto d = early->receive(1s);
    ASSERT_OK(d);
    if (late) {
      auto l = late->receive(1s);
      ASSERT_OK(l);
      EXPECT_EQ(l->sequence, f);
      EXPECT_TRUE(stamped(l->tensor, f));
    }
  }
  EXPECT_EQ(late->stats().frames_received, 10u);
  EXPECT_EQ(late->stats().frames_missing, 0u) << "no gap before a late joiner's first frame";
  // The pool's 3 buffers (fewer when releases come back before the next acquire): each announced once.
  EXPECT_GE(late->stats().announces, 1u);
  EXPECT_LE(late->stats().announces, 3u) << "each pool buffer announced to it once";
  for (const auto& info : p->receivers()) EXPECT_EQ(info.stats.reannounces, 0u);
}

// EOS reaches every receiver (one holding frames too: no stall in drain), and a receiver that joins
// after it gets the end at once. Sends after it fail.
TEST(ChannelPublisher, EndOfStreamReachesEveryReceiverAndLateJoiners) {
  auto p = channel::Publisher::create();
  ASSERT_OK(p);
  auto a = join(*p);
  auto b = join(*p);
  ASSERT_TRUE(a && b);
  auto t = TensorDyn::allocate({16}, DType::U8, et_test::mem(MemoryKind::Shm));
  ASSERT_OK(t);
  ASSERT_OK(p->send(*t));
  ASSERT_OK(p->send(*t));
  ASSERT_OK(p->end_stream());
  ASSERT_OK(p->end_stream());  // again: nothing to do
  EXPECT_ERROR(p->send(*t), ErrorCode::FailedPrecondition, "the stream ended");
  // a holds its first frame while it waits for the next: the end arrives instead.
  auto held = a->receive(1s);
  ASSERT_OK(held);
  auto second = a->receive(1s);
  ASSERT_OK(second);
  auto end_a = a->receive(1s);
  ASSERT_OK(end_a);
  EXPECT_TRUE(end_a->end_of_stream);
  EXPECT_EQ(end_a->sequence, 2u);
  for (int i = 0; i < 2; ++i) ASSERT_OK(b->receive(1s));
  auto end_b = b->receive(1s);
  ASSERT_OK(end_b);
  EXPECT_TRUE(end_b->end_of_stream);
  auto late = join(*p);
  ASSERT_TRUE(late);
  auto end_late = late->receive(1s);
  ASSERT_OK(end_late);
  EXPECT_TRUE(end_late->end_of_stream);
  EXPECT_EQ(end_late->sequence, 0u) << "it was sent no frame";
  EXPECT_ERROR(p->drain(0ms), ErrorCode::Busy, "still out");
  held->tensor = TensorDyn{};
  second->tensor = TensorDyn{};
  ASSERT_OK(a->flush());
  ASSERT_OK(p->drain(2s));
}

TEST(ChannelPublisher, WithNoReceiverAFrameIsCheckedAndItsSequenceUsed) {
  auto p = channel::Publisher::create();
  ASSERT_OK(p);
  auto t = TensorDyn::allocate({16}, DType::U8, et_test::mem(MemoryKind::Shm));
  ASSERT_OK(t);
  auto sent = p->send(*t);
  ASSERT_OK(sent);
  EXPECT_EQ(sent->sequence, 0u);
  EXPECT_EQ(sent->delivered, 0u);
  auto heap = TensorDyn::allocate({16}, DType::U8, et_test::mem(MemoryKind::Heap));
  ASSERT_OK(heap);
  EXPECT_ERROR(p->send(*heap), ErrorCode::Unsupported, "heap");
  EXPECT_ERROR(p->send(*t, {.sequence = 0}), ErrorCode::InvalidArgument, "sequence 0 after 0");
  EXPECT_ERROR(p->send(TensorDyn{}), ErrorCode::FailedPrecondition, "no storage");
  // The Publisher's own name, not the Sender's (a new user's trial found "channel::Sender::send" here).
  EXPECT_ERROR(p->send(*t, {.duration_ns = -5}), ErrorCode::InvalidArgument,
               "channel::Publisher: send: duration_ns -5 is negative");
  EXPECT_ERROR(p->send_frame(Frame{}), ErrorCode::FailedPrecondition, "channel::Publisher: send_frame: the frame is empty");
  auto next = p->send(*t, {.sequence = 9});
  ASSERT_OK(next);
  EXPECT_EQ(next->sequence, 9u);
  EXPECT_EQ(p->stats().frames_published, 2u);
}

TEST(ChannelPublisher, BadOptionsAndSocketsAreNamed) {
  EXPECT_ERROR(channel::Publisher::create({.max_receivers = 0}), ErrorCode::InvalidArgument, "max_receivers 0 is outside 1..1024");
  EXPECT_ERROR(channel::Publisher::create({.max_receivers = 1025}), ErrorCode::InvalidArgument, "max_receivers 1025");
  EXPECT_ERROR(channel::Publisher::create({.receiver = {.max_buffers = 0}}), ErrorCode::InvalidArgument,
               "PublisherOptions::receiver: max_buffers 0");
  EXPECT_ERROR(channel::Publisher::create({.receiver = {.send_timeout = -1ms}}), ErrorCode::InvalidArgument, "send_timeout -1 ms");
  auto p = channel::Publisher::create({.max_receivers = 1});
  ASSERT_OK(p);
  EXPECT_ERROR(p->add_receiver(UniqueFd(::eventfd(0, EFD_CLOEXEC))), ErrorCode::InvalidArgument, "add_receiver");
  EXPECT_ERROR(p->add_receiver(UniqueFd()), ErrorCode::InvalidArgument, "add_receiver");
  auto sp = channel::socket_pair();
  ASSERT_OK(sp);
  EXPECT_ERROR(p->add_receiver(std::move(sp->first), {.policy = static_cast<channel::ReceiverPolicy>(7)}),
               ErrorCode::InvalidArgument, "policy 7");
  auto r1 = join(*p);
  ASSERT_TRUE(r1);
  auto sp2 = channel::socket_pair();
  ASSERT_OK(sp2);
  EXPECT_ERROR(p->add_receiver(std::move(sp2->first)), ErrorCode::OutOfRange, "1 receivers served already (PublisherOptions::max_receivers 1)");
  EXPECT_ERROR(p->disconnect(42), ErrorCode::NotFound, "no receiver 42 (ids served: 1)");
  EXPECT_ERROR(p->drain(-1ms), ErrorCode::InvalidArgument, "negative");
  channel::Publisher moved = std::move(*p);
  EXPECT_ERROR(p->send(TensorDyn{}), ErrorCode::FailedPrecondition, "moved from");
  EXPECT_ERROR(p->end_stream(), ErrorCode::FailedPrecondition, "moved from");
  EXPECT_TRUE(p->receivers().empty());
  EXPECT_EQ(moved.stats().receivers, 1u);
}

// disconnect(): the receiver's channel ends and its frames count as released (the pool has them back).
TEST(ChannelPublisher, DisconnectTakesTheBuffersBack) {
  auto p = channel::Publisher::create();
  ASSERT_OK(p);
  std::uint64_t id = 0;
  auto r = join(*p, std::nullopt, &id);
  ASSERT_TRUE(r);
  auto pool = shm_pool("disconnect", 1, {64, 64});
  ASSERT_OK(pool);
  auto t = p->acquire(*pool, 1s);
  ASSERT_OK(t);
  ASSERT_OK(p->send(*t));
  t = TensorDyn{};
  auto held = r->receive(1s);
  ASSERT_OK(held);
  EXPECT_ERROR(p->acquire(*pool, 0ms), ErrorCode::Busy, "receiver 1 (pid ");
  ASSERT_OK(p->disconnect(id));
  EXPECT_TRUE(p->acquire(*pool, 0ms).has_value()) << "the buffer came back when the receiver was disconnected";
  EXPECT_ERROR(r->receive(1s), ErrorCode::Unavailable, "");
  EXPECT_EQ(p->stats().receivers_left, 1u);
  EXPECT_TRUE(p->receivers().empty());
}

// listen(): receivers connect by path while the producer runs; each is served (its pid known); a peer
// past max_receivers is closed and counted; a peer the allow rule refuses is never served.
TEST(ChannelPublisher, ListenAcceptsReceiversWhileItRuns) {
  const auto path = socket_path("listen");
  auto p = channel::Publisher::listen(path, {}, {.name = "cam", .max_receivers = 2});
  ASSERT_OK(p);
  EXPECT_EQ(p->path(), path);
  std::vector<channel::Receiver> rs;
  for (int i = 0; i < 2; ++i) {
    auto fd = channel::connect(path);
    ASSERT_OK(fd);
    auto r = channel::Receiver::create(std::move(*fd));
    ASSERT_OK(r);
    rs.push_back(std::move(*r));
  }
  ASSERT_TRUE(eventually([&] { return p->stats().receivers == 2; }));
  for (const auto& info : p->receivers()) {
    ASSERT_TRUE(info.peer.has_value());
    EXPECT_EQ(info.peer->pid, ::getpid());
  }
  auto third = channel::connect(path);
  ASSERT_OK(third);
  ASSERT_TRUE(eventually([&] { return p->stats().receivers_refused == 1; }));
  auto r3 = channel::Receiver::create(std::move(*third));
  ASSERT_OK(r3);
  // Told why, then closed by the publisher: OutOfRange with errno EUSERS.
  auto refused = r3->receive(2s);
  EXPECT_ERROR(refused, ErrorCode::OutOfRange,
               "the sender refused this end and closed the channel: the publisher serves 2 receivers already, its "
               "limit (max_receivers 2); try again when one leaves");
  if (!refused) {
    EXPECT_EQ(refused.error().sys_errno(), EUSERS);
  }
  auto t = TensorDyn::allocate({16}, DType::U8, et_test::mem(MemoryKind::Shm));
  ASSERT_OK(t);
  ASSERT_TRUE(stamp(*t, 5));
  auto sent = p->send(*t);
  ASSERT_OK(sent);
  EXPECT_EQ(sent->delivered, 2u);
  for (auto& r : rs) {
    auto d = r.receive(1s);
    ASSERT_OK(d);
    EXPECT_TRUE(stamped(d->tensor, 5));
  }
  p = Result<channel::Publisher>(fail(ErrorCode::Internal, "gone"));  // destroys the publisher
  EXPECT_FALSE(std::filesystem::exists(path)) << "the socket file goes with the publisher";
}

TEST(ChannelPublisher, APeerTheAllowRuleRefusesIsNeverServed) {
  const auto path = socket_path("refuse");
  auto p = channel::Publisher::listen(path, {.allow = {.same_uid = false}});
  ASSERT_OK(p);
  auto fd = channel::connect(path);
  ASSERT_OK(fd);
  auto r = channel::Receiver::create(std::move(*fd));
  ASSERT_OK(r);
  // Told why (PermissionDenied, errno EACCES, naming its uid and the path), then closed.
  auto refused = r->receive(2s);
  EXPECT_ERROR(refused, ErrorCode::PermissionDenied,
               "the sender refused this end and closed the channel: uid " + std::to_string(::geteuid()) + " (gid " +
                   std::to_string(::getegid()) + ") is not allowed to connect to '" + path + "'");
  if (!refused) {
    EXPECT_EQ(refused.error().sys_errno(), EACCES);
  }
  EXPECT_ERROR(r->receive(0ms), ErrorCode::FailedPrecondition, "is not allowed to connect");
  EXPECT_EQ(p->stats().receivers_joined, 0u);
  EXPECT_EQ(p->stats().receivers_refused, 1u) << "the listener's refusals count too";
}


// A receiver asks for its own policy in its hello (ReceiverOptions::policy): a latest-frame consumer
// that connects by path gets Drop with its limit; a producer that says no (receiver_may_choose false)
// keeps its own.
TEST(ChannelPublisher, AReceiverMayAskForItsPolicy) {
  const auto path = socket_path("ask");
  auto p = channel::Publisher::listen(path, {}, {.receiver = {.send_timeout = 5s}});
  ASSERT_OK(p);
  auto fd = channel::connect(path);
  ASSERT_OK(fd);
  auto r = channel::Receiver::create(std::move(*fd), {.policy = channel::ReceiverPolicy::Drop, .max_frames_out = 1});
  ASSERT_OK(r);
  ASSERT_TRUE(eventually([&] {
    auto rs = p->receivers();
    return rs.size() == 1 && rs[0].policy == channel::ReceiverPolicy::Drop && rs[0].max_frames_out == 1;
  }));
  auto t = TensorDyn::allocate({16}, DType::U8, et_test::mem(MemoryKind::Shm));
  ASSERT_OK(t);
  auto first = p->send(*t);
  ASSERT_OK(first);
  EXPECT_EQ(first->delivered, 1u);
  auto second = p->send(*t);  // the receiver holds 1 (its limit): dropped at once, not a 5 s wait
  ASSERT_OK(second);
  EXPECT_EQ(second->dropped, 1u);

  auto sp = channel::socket_pair();
  ASSERT_OK(sp);
  ASSERT_OK(p->add_receiver(std::move(sp->first), {.policy = channel::ReceiverPolicy::Block, .receiver_may_choose = false}));
  auto r2 = channel::Receiver::create(std::move(sp->second), {.policy = channel::ReceiverPolicy::Drop, .max_frames_out = 1});
  ASSERT_OK(r2);
  ASSERT_OK(p->send(*t));
  ASSERT_OK(r2->receive(1s));  // dropped at once: its release follows its hello on the socket
  ASSERT_OK(r2->flush());
  auto second_receiver = [&] {
    for (const auto& info : p->receivers())
      if (info.id == 2) return info;
    return channel::ReceiverInfo{};
  };
  ASSERT_TRUE(eventually([&] { return second_receiver().stats.releases == 1; })) << "the hello has been read";
  EXPECT_EQ(second_receiver().policy, channel::ReceiverPolicy::Block) << "the producer said no";

  EXPECT_ERROR(channel::Receiver::create(UniqueFd(), {.policy = static_cast<channel::ReceiverPolicy>(3)}),
               ErrorCode::InvalidArgument, "policy 3");
  EXPECT_ERROR(channel::Receiver::create(UniqueFd(), {.policy = channel::ReceiverPolicy::Drop, .max_frames_out = (1u << 20) + 1}),
               ErrorCode::InvalidArgument, "max_frames_out 1048577 is outside 0..1048576");
  // A frame limit goes with a policy: alone it would be dropped from the hello, silently.
  EXPECT_ERROR(channel::Receiver::create(UniqueFd(), {.max_frames_out = 5}), ErrorCode::InvalidArgument,
               "max_frames_out 5 without a policy");
}

}  // namespace

// channel::ScopedWaitCheck (the Python module's Ctrl-C): a send that waits for a receiver at its frame limit
// without a time bound runs the thread's check every kWaitCheckInterval and ends with its error, in step:
// the receiver served before the stuck one has the frame, the one after it does not, every channel stays
// open, and the next send (no check) reaches all three. Outside the check's scope nothing is sliced.
TEST(ChannelPublisher, AScopedWaitCheckStopsASendWaitingForAReceiver) {
  auto p = channel::Publisher::create({.name = "checked"});
  ASSERT_OK(p);
  auto before = join(*p);
  auto stuck = join(*p, channel::SenderOptions{.send_timeout = std::chrono::milliseconds::max(), .max_frames_out = 1});
  auto after = join(*p);
  ASSERT_TRUE(before && stuck && after);
  auto pool = shm_pool("wait-check", 6, {64, 64});
  ASSERT_OK(pool);
  auto send = [&](std::uint64_t sequence) -> Result<channel::PublishResult> {
    auto t = p->acquire(*pool, 1s);
    if (!t) return fail(std::move(t).error());
    if (!stamp(*t, sequence)) return fail(ErrorCode::Internal, "stamp");
    return p->send(*t, {.sequence = sequence});
  };
  ASSERT_OK(send(0));
  auto held = stuck->receive(1s);  // held: the stuck receiver is at its limit of 1
  ASSERT_OK(held);
  for (auto* r : {&before, &after}) ASSERT_OK((*r)->receive(1s));
  int calls = 0;
  const auto start = std::chrono::steady_clock::now();
  {
    channel::ScopedWaitCheck check([&]() -> Result<void> {
      if (++calls < 3) return {};
      return fail(ErrorCode::FailedPrecondition, "stopped by the test's check");
    });
    auto stopped = send(1);
    EXPECT_ERROR(stopped, ErrorCode::FailedPrecondition, "stopped by the test's check");
  }
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(calls, 3);
  EXPECT_GE(took, 2 * channel::kWaitCheckInterval);
  EXPECT_LT(took, 2s);
  auto first = before->receive(1s);
  ASSERT_OK(first);
  EXPECT_EQ(first->sequence, 1u) << "served before the stuck receiver";
  EXPECT_ERROR(after->receive(100ms), ErrorCode::Busy, "");  // stopped before it
  first->tensor = TensorDyn{};
  held->tensor = TensorDyn{};  // the stuck receiver releases frame 0
  ASSERT_OK(stuck->flush());
  auto next = send(2);  // no check: waits as before, and the release lets it through
  ASSERT_OK(next);
  EXPECT_EQ(next->delivered, 3u);
  EXPECT_EQ(next->removed, 0u);
  for (auto* r : {&before, &stuck, &after}) {
    auto d = (*r)->receive(1s);
    ASSERT_OK(d);
    EXPECT_EQ(d->sequence, 2u);
    EXPECT_TRUE(stamped(d->tensor, 2));
  }
  for (auto* r : {&before, &stuck, &after}) EXPECT_TRUE(((*r)->status()).has_value());
}

// A Sender whose receiver stopped reading: the socket fills (a small send buffer) and the next send waits
// in poll; the check ends it (the poll slices), in step, and end_stream under a check that fails at once
// is stopped the same way. Checks nest: the inner one is used, the outer one is back after it.
TEST(ChannelPublisher, AScopedWaitCheckStopsAWaitForRoomInTheSocket) {
  auto sp = channel::socket_pair();
  ASSERT_OK(sp);
  const int small = 4096;
  ASSERT_EQ(::setsockopt(sp->first.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
  auto s = channel::Sender::create(std::move(sp->first), {.send_timeout = std::chrono::milliseconds::max()});
  ASSERT_OK(s);
  auto r = channel::Receiver::create(std::move(sp->second));
  ASSERT_OK(r);
  auto t = TensorDyn::allocate({64}, DType::U8, {.memory = MemoryKind::Shm});
  ASSERT_OK(t);
  int outer = 0, inner = 0;
  channel::ScopedWaitCheck outer_check([&]() -> Result<void> {
    ++outer;
    return fail(ErrorCode::FailedPrecondition, "outer check");
  });
  std::size_t sent = 0;
  Result<std::uint64_t> last = std::uint64_t{0};
  {
    channel::ScopedWaitCheck inner_check([&]() -> Result<void> {
      if (++inner < 2) return {};
      return fail(ErrorCode::FailedPrecondition, "inner check");
    });
    for (; sent < 100000; ++sent) {
      last = s->send(*t);
      if (!last) break;
    }
  }
  EXPECT_ERROR(last, ErrorCode::FailedPrecondition, "inner check");
  EXPECT_GT(sent, 0u);
  EXPECT_EQ(inner, 2);
  EXPECT_EQ(outer, 0);
  EXPECT_TRUE((s->status()).has_value()) << "in step: the channel stays open";
  EXPECT_ERROR(s->end_stream(), ErrorCode::FailedPrecondition, "outer check");  // the outer one is back
  EXPECT_EQ(outer, 1);
  EXPECT_TRUE((s->status()).has_value());
  std::size_t got = 0;
  while (auto d = r->receive(0ms)) {
    ++got;
    if (d->end_of_stream) break;
  }
  EXPECT_EQ(got, sent) << "every frame sent arrived, the stopped one did not";
}
