// SPDX-License-Identifier: Apache-2.0
// The frame channel between two processes (fork): 1000 frames reusing a pool's buffers with no new fd
// or mapping after warm-up on either side and no buffer reused while the receiver holds it; a Frame of
// two buffers; a receiver that never releases (the sender's acquire times out, naming the channel)
// and is then killed with SIGKILL (everything comes back); a sender killed with SIGKILL (the
// receiver ends, no hang, delivered tensors stay valid). Each process is forked before either end
// exists (a Sender's thread would not be in the child). Children report through their exit status.
#include <edgetensor/edgetensor.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>

#include "support/nv12.h"
#include "support/test_support.h"
#include "unit/channel/channel_support.h"

using namespace edgetensor;
using namespace std::chrono_literals;

using et_test::channel_support::stamp;
using et_test::channel_support::stamped;

namespace {

// Runs `body` in a forked child; its return value is the child's exit status.
pid_t spawn(const std::function<int()>& body) {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  return pid;
}

// The child's exit status, or 128 + the signal that ended it.
int wait_child(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Blocks until the peer writes one byte on `fd` (or closes it).
void wait_byte(int fd) {
  char c;
  (void)!::read(fd, &c, 1);
}

TEST(ChannelProcess, ThousandFramesReuseBuffersWithNoNewFdOrMappingAndNoEarlyReuse) {
  constexpr int kFrames = 1000;
  constexpr int kWarmUp = 50;
  constexpr std::size_t kHeld = 2;  // frames the receiver keeps before dropping the oldest
  auto sp = channel::socket_pair();
  ASSERT_OK(sp);
  const pid_t child = spawn([&]() -> int {  // the sender
    sp->second.reset();
    auto pool = Pool::create({120, 160, 4}, DType::U8,
                             {.name = "cam", .max_buffers = kHeld + 2, .allocate = {.memory = MemoryKind::Shm}});
    if (!pool) return 10;
    auto sender = channel::Sender::create(std::move(sp->first), {.name = "cam"});
    if (!sender) return 11;
    int fds = 0, maps = 0;
    for (int i = 0; i < kFrames; ++i) {
      if (i == kWarmUp) {
        fds = et_test::open_fd_count();
        maps = et_test::file_mapping_count();
      }
      auto t = sender->acquire(*pool, 5s);
      if (!t) return 12;
      if (!stamp(*t, static_cast<std::uint64_t>(i))) return 13;
      if (!sender->send(*t)) return 14;
    }
    if (auto drained = sender->drain(5s); !drained) {
      std::fprintf(stderr, "sender: %s\n", drained.error().to_string().c_str());
      return 15;
    }
    if (et_test::open_fd_count() != fds) return 16;
    if (et_test::file_mapping_count() != maps) return 17;  // file mappings: exact under the sanitizers too
    if (pool->stats().allocated != kHeld + 2 || sender->stats().announces != kHeld + 2) return 18;
    return 0;
  });
  ASSERT_GT(child, 0);
  sp->first.reset();
  {
    auto receiver = channel::Receiver::create(std::move(sp->second), {.name = "cam"});
    ASSERT_OK(receiver);
    std::deque<channel::Delivery> held;
    int fds = 0, maps = 0;
    for (int i = 0; i < kFrames; ++i) {
      if (i == kWarmUp) {
        fds = et_test::open_fd_count();
        maps = et_test::file_mapping_count();
      }
      auto d = receiver->receive(5s);
      ASSERT_OK(d);
      ASSERT_EQ(d->sequence, static_cast<std::uint64_t>(i));
      ASSERT_TRUE(stamped(d->tensor, d->sequence)) << "frame " << i << " arrived with other bytes";
      held.push_back(std::move(*d));
      if (held.size() > kHeld) {
        // Still this frame's bytes: the sender did not reuse the buffer while it was held here.
        ASSERT_TRUE(stamped(held.front().tensor, held.front().sequence)) << "buffer reused before its release";
        held.pop_front();
      }
    }
    EXPECT_EQ(et_test::open_fd_count(), fds) << "no fd per frame after warm-up";
    EXPECT_EQ(et_test::file_mapping_count(), maps) << "no mmap per frame after warm-up";
    const auto s = receiver->stats();
    EXPECT_EQ(s.frames_received, static_cast<std::uint64_t>(kFrames));
    EXPECT_EQ(s.announces, kHeld + 2) << "each buffer crossed once";
    EXPECT_EQ(s.frames_out, kHeld);
    held.clear();
    ASSERT_OK(receiver->flush());
    EXPECT_EQ(receiver->stats().releases_sent, static_cast<std::uint64_t>(kFrames));
  }
  EXPECT_EQ(wait_child(child), 0) << "the sender's checks (exit 16: new fds, 17: new mappings)";
}

TEST(ChannelProcess, FrameOfTwoBuffersCrossesAndComesBack) {
  auto sp = channel::socket_pair();
  ASSERT_OK(sp);
  const pid_t child = spawn([&]() -> int {  // the receiver: checks both planes, releases, then ends
    sp->first.reset();
    auto receiver = channel::Receiver::create(std::move(sp->second));
    if (!receiver) return 10;
    auto d = receiver->receive(5s);
    if (!d || d->frame.buffer_count() != 2 || d->sequence != 7) return 11;
    auto map = d->frame.map_read();
    if (!map) return 12;
    const auto y = map->plane_bytes(0);
    const auto uv = map->plane_bytes(1);
    if (y.empty() || uv.empty() || y[0] != std::byte{0x11} || uv[0] != std::byte{0x22}) return 13;
    return 0;
  });
  ASSERT_GT(child, 0);
  sp->second.reset();
  auto sender = channel::Sender::create(std::move(sp->first));
  ASSERT_OK(sender);
  auto two = et_test::nv12_two_buffers(64, 32);
  ASSERT_OK(two.luma);
  ASSERT_OK(two.chroma);
  ASSERT_TRUE(stamp(*two.luma, 0x11) && stamp(*two.chroma, 0x22));
  auto frame = et_test::import_frame(two);
  ASSERT_OK(frame);
  ASSERT_OK(sender->send_frame(*frame, {.sequence = 7}));
  EXPECT_EQ(wait_child(child), 0);
  // The receiver released both buffers (or died, which releases everything): nothing is held here.
  auto drained = sender->drain(5s);
  EXPECT_TRUE(drained || drained.error().code() == ErrorCode::Unavailable) << drained.error().to_string();
  EXPECT_EQ(sender->stats().frames_out, 0u);
}

TEST(ChannelProcess, ReceiverThatNeverReleasesTimesOutAcquireThenItsDeathReleasesAll) {
  auto sp = channel::socket_pair();
  ASSERT_OK(sp);
  int ready[2];
  ASSERT_EQ(::pipe2(ready, O_CLOEXEC), 0);
  const pid_t child = spawn([&]() -> int {  // a receiver that holds everything and never returns
    sp->first.reset();
    ::close(ready[0]);
    auto receiver = channel::Receiver::create(std::move(sp->second));
    if (!receiver) return 10;
    std::deque<channel::Delivery> held;
    for (int i = 0; i < 2; ++i) {
      auto d = receiver->receive(5s);
      if (!d) return 11;
      held.push_back(std::move(*d));
    }
    (void)!::write(ready[1], "h", 1);
    for (;;) ::pause();
  });
  ASSERT_GT(child, 0);
  ::close(ready[1]);
  sp->second.reset();
  const int fds_before = et_test::open_fd_count();
  {
    auto pool = Pool::create({64, 64}, DType::U8, {.name = "cam", .max_buffers = 2, .allocate = {.memory = MemoryKind::Shm}});
    ASSERT_OK(pool);
    auto sender = channel::Sender::create(std::move(sp->first), {.name = "cam"});
    ASSERT_OK(sender);
    for (int i = 0; i < 2; ++i) {
      auto t = sender->acquire(*pool, 1s);
      ASSERT_OK(t);
      ASSERT_OK(sender->send(*t));
    }
    wait_byte(ready[0]);
    const auto start = std::chrono::steady_clock::now();
    EXPECT_ERROR(sender->acquire(*pool, 100ms), ErrorCode::Busy,
                 "channel 'cam': 2 frame buffers sent and not released by the receiver (oldest: sequence 0");
    EXPECT_GE(std::chrono::steady_clock::now() - start, 100ms);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s) << "never blocks longer than asked";
    ASSERT_EQ(::kill(child, SIGKILL), 0);
    EXPECT_EQ(wait_child(child), 128 + SIGKILL);
    auto t = pool->acquire(5s);  // the sender's reader saw the death and dropped both references
    ASSERT_OK(t);
    EXPECT_ERROR(sender->send(*t), ErrorCode::Unavailable, "channel 'cam' is closed");
    // drain returns once both references are dropped (the acquire above woke at the first one); the
    // frames were dropped by the closing, not released, so it says the channel is closed.
    EXPECT_ERROR(sender->drain(5s), ErrorCode::Unavailable, "channel 'cam' is closed");
    EXPECT_EQ(sender->stats().frames_out, 0u);
    EXPECT_EQ(pool->stats().in_use, 1u) << "only the buffer acquired here";
  }
  ::close(ready[0]);
  EXPECT_EQ(et_test::open_fd_count(), fds_before - 2) << "the socket and the pipe are closed; nothing else is left open";
}

TEST(ChannelProcess, SenderKilledEndsTheReceiverWithoutAHang) {
  auto sp = channel::socket_pair();
  ASSERT_OK(sp);
  int sent[2];
  ASSERT_EQ(::pipe2(sent, O_CLOEXEC), 0);
  const pid_t child = spawn([&]() -> int {  // sends two frames, then waits to be killed
    sp->second.reset();
    ::close(sent[0]);
    auto sender = channel::Sender::create(std::move(sp->first));
    if (!sender) return 10;
    for (std::uint64_t i = 0; i < 2; ++i) {
      auto t = TensorDyn::allocate({4096}, DType::U8, et_test::mem(MemoryKind::Shm));
      if (!t || !stamp(*t, 0x40 + i) || !sender->send(*t)) return 11;
    }
    (void)!::write(sent[1], "s", 1);
    for (;;) ::pause();
  });
  ASSERT_GT(child, 0);
  sp->first.reset();
  ::close(sent[1]);
  const int fds_before = et_test::open_fd_count() - 1;  // without the pipe, closed below
  {
    auto receiver = channel::Receiver::create(std::move(sp->second));
    ASSERT_OK(receiver);
    auto first = receiver->receive(5s);
    ASSERT_OK(first);
    wait_byte(sent[0]);
    ::close(sent[0]);
    ASSERT_EQ(::kill(child, SIGKILL), 0);
    EXPECT_EQ(wait_child(child), 128 + SIGKILL);
    auto second = receiver->receive(5s);  // sent before the death: still in the socket
    ASSERT_OK(second);
    const auto start = std::chrono::steady_clock::now();
    EXPECT_ERROR(receiver->receive(10s), ErrorCode::Unavailable, "the sender closed the channel or died");
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s) << "the end is seen at once";
    EXPECT_EQ(receiver->stats().buffers, 0u) << "every import closed";
    EXPECT_TRUE(stamped(first->tensor, 0x40)) << "a delivered tensor outlives its sender";
    EXPECT_TRUE(stamped(second->tensor, 0x41));
  }
  EXPECT_EQ(et_test::open_fd_count(), fds_before - 1) << "the socket is closed; nothing else is left open";
}

}  // namespace
