// SPDX-License-Identifier: Apache-2.0
// Fences on the frame channel (docs/CHANNEL.md, "Fences"): acquire fences with frames (the receiver's maps
// wait for them, the Delivery shows them), release fences with releases (the sender's pool hands the
// buffer out again only once they signal), and what each end does when the other's hello lacks the
// capability. This host has no sync_file source: as in tests/unit/sync/fence_test.cpp, pipes stand in
// (POLLIN once a byte is written: "signalled") and the ioctl emulator answers SYNC_IOC_FILE_INFO and
// SYNC_IOC_MERGE for them. Real vgem fences: tests/hardware/fence_channel_test.cpp (the kernel lane).
#include <edgetensor/edgetensor.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/sync_file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/sys_testing.h"
#include "channel/channel_wire.h"
#include "support/nv12.h"
#include "support/test_support.h"
#include "unit/channel/channel_support.h"
#include "unit/ipc/ipc_wire_support.h"

using namespace edgetensor;
using namespace std::chrono_literals;
using et_test::ipc_wire::Pair;
using et_test::ipc_wire::sealed_memfd;
using et_test::ipc_wire::valid_header;

using et_test::channel_support::Ends;
using et_test::channel_support::make_ends;

namespace {

// make_ends with both ends named "fences" (unless `so` names the sender otherwise).
std::optional<Ends> fence_ends(channel::SenderOptions so = {.name = "fences"}) {
  return make_ends(so, {.name = "fences"});
}

std::uint64_t inode_of(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 ? static_cast<std::uint64_t>(st.st_ino) : 0;
}

// Fake sync_files: a pipe's read end, "signalled" once its write end has a byte.
class ChannelFence : public ::testing::Test {
 protected:
  void SetUp() override {
    fds_before_ = et_test::open_fd_count();
    sys::set_ioctl_emulator([this](int fd, unsigned long req, void* arg) { return emulate(fd, req, arg); });
  }
  void TearDown() override {
    sys::set_ioctl_emulator({});
    {
      std::lock_guard lock(mutex_);
      for (auto& [inode, writer] : writers_) ::close(writer);
      writers_.clear();
    }
    EXPECT_EQ(et_test::open_fd_count(), fds_before_) << "fd leak";
  }

  sync::Fence pending_fence() {
    int p[2];
    EXPECT_EQ(::pipe2(p, O_CLOEXEC), 0);
    {
      std::lock_guard lock(mutex_);
      writers_[inode_of(p[0])] = p[1];
    }
    auto f = sync::Fence::adopt(UniqueFd(p[0]));
    EXPECT_TRUE(f.has_value());
    return f ? std::move(*f) : sync::Fence();
  }
  void signal(const sync::Fence& f) {
    std::lock_guard lock(mutex_);
    auto it = writers_.find(inode_of(f.fd()));
    ASSERT_NE(it, writers_.end());
    ASSERT_EQ(::write(it->second, "x", 1), 1);
  }

  std::optional<int> emulate(int fd, unsigned long req, void* arg) {
    std::lock_guard lock(mutex_);
    if (req != SYNC_IOC_FILE_INFO && req != SYNC_IOC_MERGE) return std::nullopt;
    if (writers_.count(inode_of(fd)) == 0) return std::nullopt;  // not ours: the kernel answers (ENOTTY)
    if (req == SYNC_IOC_MERGE) {  // a new pipe, signalled when both are
      auto* m = static_cast<sync_merge_data*>(arg);
      ++merges_;
      int p[2];
      if (::pipe2(p, O_CLOEXEC) != 0) return -1;
      pollfd both[2] = {{fd, POLLIN, 0}, {m->fd2, POLLIN, 0}};
      if (::poll(both, 2, 0) == 2) (void)!::write(p[1], "x", 1);
      writers_[inode_of(p[0])] = p[1];
      merged_inode_ = inode_of(p[0]);
      m->fence = p[0];
      return 0;
    }
    auto* info = static_cast<sync_file_info*>(arg);
    std::snprintf(info->name, sizeof info->name, "fake");
    pollfd p{fd, POLLIN, 0};
    info->status = ::poll(&p, 1, 0) == 1 ? 1 : 0;
    info->num_fences = 0;
    return 0;
  }

  std::mutex mutex_;
  std::map<std::uint64_t, int> writers_;  // fake sync_file inode -> its pipe's write end
  int merges_ = 0;
  std::uint64_t merged_inode_ = 0;  // the latest merge's pipe
  int fds_before_ = 0;
};

TensorDyn shm_tensor(std::size_t bytes = 4096) {
  auto t = TensorDyn::allocate({bytes}, DType::U8, et_test::mem(MemoryKind::Shm));
  EXPECT_TRUE(t.has_value());
  return t ? std::move(*t) : TensorDyn();
}

// ---- acquire fences ----------------------------------------------------------------------------

TEST_F(ChannelFence, AcquireFenceHoldsTheReceiversMapsUntilSignalled) {
  auto ends = fence_ends();
  ASSERT_TRUE(ends);
  const TensorDyn t = shm_tensor();
  sync::Fence fence = pending_fence();
  ASSERT_OK(ends->sender.send(t, {.acquire_fences = std::span(&fence, 1)}));
  EXPECT_EQ(ends->sender.stats().acquire_fences_sent, 1u);
  auto d = ends->receiver.receive(1s);
  ASSERT_OK(d);
  EXPECT_EQ(ends->receiver.stats().acquire_fences, 1u);
  ASSERT_EQ(d->acquire_fences.size(), 1u);
  ASSERT_TRUE(d->acquire_fences[0]);
  EXPECT_GE(d->acquire_fences[0]->fd(), 0) << "the consumer can hand it to its own device API";
  EXPECT_NE(inode_of(d->acquire_fences[0]->fd()), 0u);
  EXPECT_EQ(inode_of(d->acquire_fences[0]->fd()), inode_of(fence.fd())) << "the same sync_file, its own fd";
  // A map waits for the writer, bounded: Timeout, naming the fence; 0 only checks (Busy).
  EXPECT_ERROR(d->tensor.map_read(MapOptions{.timeout = 50ms}), ErrorCode::Timeout,
               "read map of shm (imported tmpfs/memfd file, 4096 B): the acquire fence");
  EXPECT_ERROR(d->tensor.map_read(MapOptions{.timeout = 50ms}), ErrorCode::Timeout,
               "the acquire fence of channel 'fences' tensor frame sequence 0 (buffer 0): Fence::wait");
  EXPECT_ERROR(d->tensor.map_read(MapOptions{.timeout = 0ms}), ErrorCode::Busy, "the timeout is 0");
  EXPECT_ERROR(d->tensor.reshape({64, 64})->map_write(MapOptions{.timeout = 20ms}), ErrorCode::Timeout,
               "write map of shm (imported");
  signal(fence);
  ASSERT_OK(d->tensor.map_read(MapOptions{.timeout = 0ms}));  // signalled: the map passes at once
  ASSERT_OK(d->tensor.map_read());  // and the fence is forgotten
}

TEST_F(ChannelFence, OneAcquireFenceCoversEveryBufferOfAFrame) {
  auto ends = fence_ends();
  ASSERT_TRUE(ends);
  auto [two, luma, chroma] = et_test::nv12_two_buffers(64, 32);
  ASSERT_OK(luma);
  ASSERT_OK(chroma);
  auto frame = et_test::import_frame({two, luma, chroma});
  ASSERT_OK(frame);
  sync::Fence fence = pending_fence();
  ASSERT_OK(ends->sender.send_frame(*frame, {.acquire_fences = std::span(&fence, 1)}));
  EXPECT_EQ(ends->sender.stats().acquire_fences_sent, 2u) << "the fd once per buffer";
  auto d = ends->receiver.receive(1s);
  ASSERT_OK(d);
  ASSERT_EQ(d->acquire_fences.size(), 2u);
  for (std::size_t b = 0; b < 2; ++b) {
    ASSERT_TRUE(d->acquire_fences[b]);
    auto buffer = d->frame.buffer(b);
    ASSERT_OK(buffer);
    EXPECT_ERROR(buffer->map_read(MapOptions{.timeout = 20ms}), ErrorCode::Timeout,
                 "frame sequence 0 (buffer " + std::to_string(b) + ")");
  }
  signal(fence);
  for (std::size_t b = 0; b < 2; ++b) ASSERT_OK(d->frame.buffer(b)->map_read(MapOptions{.timeout = 0ms}));
}

TEST_F(ChannelFence, PerBufferFencesAndSignalledOnesSendNothingForTheirBuffer) {
  auto ends = fence_ends();
  ASSERT_TRUE(ends);
  auto [two, luma, chroma] = et_test::nv12_two_buffers(64, 32);
  auto frame = et_test::import_frame({two, luma, chroma});
  ASSERT_OK(frame);
  std::vector<sync::Fence> fences;
  fences.emplace_back();  // buffer 0: signalled, nothing sent
  fences.push_back(pending_fence());
  ASSERT_OK(ends->sender.send_frame(*frame, {.acquire_fences = fences}));
  auto d = ends->receiver.receive(1s);
  ASSERT_OK(d);
  ASSERT_EQ(d->acquire_fences.size(), 2u);
  EXPECT_FALSE(d->acquire_fences[0]);
  EXPECT_TRUE(d->acquire_fences[1]);
  ASSERT_OK(d->frame.buffer(0)->map_read(MapOptions{.timeout = 0ms}));
  EXPECT_ERROR(d->frame.buffer(1)->map_read(MapOptions{.timeout = 0ms}), ErrorCode::Busy, "buffer 1");
  signal(fences[1]);
  // Only signalled fences: nothing travels, the Delivery has none.
  const sync::Fence signalled;
  ASSERT_OK(ends->sender.send(shm_tensor(), {.acquire_fences = std::span(&signalled, 1)}));
  auto e = ends->receiver.receive(1s);
  ASSERT_OK(e);
  EXPECT_TRUE(e->acquire_fences.empty());
  EXPECT_EQ(ends->sender.stats().acquire_fences_sent, 1u);
}

TEST_F(ChannelFence, AcquireFenceCountIsCheckedBeforeSending) {
  auto ends = fence_ends();
  ASSERT_TRUE(ends);
  std::vector<sync::Fence> three;
  for (int i = 0; i < 3; ++i) three.push_back(pending_fence());
  EXPECT_ERROR(ends->sender.send(shm_tensor(), {.acquire_fences = three}), ErrorCode::InvalidArgument,
               "3 acquire fences for a frame of 1 buffer: give none, one for every buffer, or one per buffer");
  ASSERT_OK(ends->sender.status());  // refused before anything went out: the channel stays open
  EXPECT_EQ(ends->sender.stats().frames_sent, 0u);
}

// A receiver whose hello lacks the capability (a raw end here) gets the frame only once its fences have
// signalled, and never a fence fd: the send waits (send_timeout) and fails with Timeout meanwhile.
TEST_F(ChannelFence, SenderWaitsOnTheFenceForAReceiverWithoutTheCapability) {
  Pair p;
  auto sender = channel::Sender::create(std::move(p.a), {.name = "old", .send_timeout = 100ms});
  ASSERT_OK(sender);
  ASSERT_OK(ipc::send_fds(p.b.get(), detail::encode_hello(detail::ChannelRole::Receiver, 32, 0)));
  const TensorDyn t = shm_tensor();
  sync::Fence fence = pending_fence();
  EXPECT_ERROR(sender->send(t, {.acquire_fences = std::span(&fence, 1)}), ErrorCode::Timeout,
               "channel 'old': the receiver's hello does not carry the fence capability, so the send waits for the "
               "acquire fence of buffer 0 itself (SenderOptions::send_timeout, 100 ms): Fence::wait");
  ASSERT_OK(sender->status());  // nothing went out: the channel stays open
  signal(fence);
  ASSERT_OK(sender->send(t, {.acquire_fences = std::span(&fence, 1)}));
  EXPECT_EQ(sender->stats().acquire_fences_waited, 1u);
  EXPECT_EQ(sender->stats().acquire_fences_sent, 0u);
  std::vector<std::byte> buf(detail::kMaxChannelMessageBytes);
  std::byte hello[64];
  ASSERT_EQ(::recv(p.b.get(), hello, sizeof hello, 0), static_cast<ssize_t>(sizeof(detail::HelloHeader)));
  auto announce = ipc::receive_fds(p.b.get(), buf, 4);
  ASSERT_OK(announce);
  EXPECT_EQ(announce->fds.size(), 1u);
  auto frame = ipc::receive_fds(p.b.get(), buf, 4);
  ASSERT_OK(frame);
  EXPECT_TRUE(frame->fds.empty()) << "no fence fd for a receiver without the capability";
  auto m = detail::decode_frame(std::span(buf.data(), frame->size_bytes), false);
  ASSERT_OK(m);
  EXPECT_EQ(m->fence_mask, 0u);
}

// ---- release fences ----------------------------------------------------------------------------

TEST_F(ChannelFence, ReleaseFenceHoldsThePoolsBufferBackUntilSignalled) {
  auto ends = fence_ends();
  ASSERT_TRUE(ends);
  auto pool = Pool::create({4096}, DType::U8, {.name = "held", .max_buffers = 1, .allocate = {.memory = MemoryKind::Shm}});
  ASSERT_OK(pool);
  {
    auto t = ends->sender.acquire(*pool, 100ms);
    ASSERT_OK(t);
    ASSERT_OK(ends->sender.send(*t));
  }
  auto d = ends->receiver.receive(1s);
  ASSERT_OK(d);
  sync::Fence fence = pending_fence();
  const std::uint64_t fence_inode = inode_of(fence.fd());
  // Attached to a view: it is the frame's buffer all the same.
  ASSERT_OK(ends->receiver.add_release_fence(*d->tensor.reshape({64, 64}), std::move(fence)));
  d = channel::Delivery();  // the last holder: the release goes, with the fence
  ASSERT_OK(ends->sender.drain(1s));  // the release arrived
  EXPECT_EQ(ends->sender.stats().release_fences, 1u);
  EXPECT_EQ(ends->receiver.stats().release_fences_sent, 1u);
  EXPECT_EQ(pool->stats().device_pending, 1u) << "back in the pool, fenced";
  EXPECT_ERROR(ends->sender.acquire(*pool, 50ms), ErrorCode::Busy,
               "pool 'held': no buffer free after waiting");
  EXPECT_ERROR(ends->sender.acquire(*pool, 0ms), ErrorCode::Busy,
               "1 more back but waiting for device work recorded on it (cuda::CudaMap::record, or a channel release "
               "fence)");
  {
    std::lock_guard lock(mutex_);
    ASSERT_EQ(::write(writers_.at(fence_inode), "x", 1), 1);  // the consumer's device is done
  }
  auto again = ends->sender.acquire(*pool, 1s);
  ASSERT_OK(again);  // signalled: the pool hands it out again
  EXPECT_EQ(pool->stats().device_pending, 0u);
}

TEST_F(ChannelFence, SecondReleaseFenceIsMergedWithTheFirst) {
  auto ends = fence_ends();
  ASSERT_TRUE(ends);
  auto pool = Pool::create({4096}, DType::U8, {.name = "two", .max_buffers = 1, .allocate = {.memory = MemoryKind::Shm}});
  ASSERT_OK(pool);
  ASSERT_OK(ends->sender.send(*ends->sender.acquire(*pool, 100ms)));
  auto d = ends->receiver.receive(1s);
  ASSERT_OK(d);
  sync::Fence a = pending_fence();
  sync::Fence b = pending_fence();
  signal(a);
  ASSERT_OK(ends->receiver.add_release_fence(d->tensor, std::move(a)));
  ASSERT_OK(ends->receiver.add_release_fence(d->tensor, sync::Fence()));  // signalled: nothing
  ASSERT_OK(ends->receiver.add_release_fence(d->tensor, std::move(b)));
  EXPECT_EQ(merges_, 1);
  d = channel::Delivery();
  ASSERT_OK(ends->sender.drain(1s));
  EXPECT_ERROR(ends->sender.acquire(*pool, 20ms), ErrorCode::Busy, "pool 'two'");
  {
    // The merge's pipe (a and b are closed: the merged fence replaced them).
    std::lock_guard lock(mutex_);
    ASSERT_EQ(::write(writers_.at(merged_inode_), "x", 1), 1);
  }
  ASSERT_OK(ends->sender.acquire(*pool, 1s));
}

TEST_F(ChannelFence, AddReleaseFenceRefusesWhatItCannotHonour) {
  auto ends = fence_ends();
  ASSERT_TRUE(ends);
  EXPECT_ERROR(ends->receiver.add_release_fence(shm_tensor(), pending_fence()), ErrorCode::InvalidArgument,
               "channel 'fences': add_release_fence: the tensor is not a frame buffer this receiver delivered");
  EXPECT_ERROR(ends->receiver.add_release_fence(TensorDyn(), pending_fence()), ErrorCode::InvalidArgument,
               "not a frame buffer this receiver delivered");
  EXPECT_ERROR(ends->receiver.add_release_fence(Frame(), pending_fence()), ErrorCode::InvalidArgument, "the frame is empty");
  // Another receiver's tensor.
  auto other = fence_ends();
  ASSERT_TRUE(other);
  ASSERT_OK(other->sender.send(shm_tensor()));
  auto d = other->receiver.receive(1s);
  ASSERT_OK(d);
  EXPECT_ERROR(ends->receiver.add_release_fence(d->tensor, pending_fence()), ErrorCode::InvalidArgument,
               "not a frame buffer this receiver delivered");
  channel::Receiver moved = std::move(other->receiver);
  EXPECT_ERROR(other->receiver.add_release_fence(d->tensor, sync::Fence()), ErrorCode::FailedPrecondition, "moved from");
}

// A sender whose hello lacks the capability (a raw end) cannot take a release fence: Unsupported, and the
// consumer waits on the fence itself. A signalled Fence() is no fence at all.
TEST_F(ChannelFence, ReleaseFenceToASenderWithoutTheCapabilityIsUnsupported) {
  Pair p;
  auto receiver = channel::Receiver::create(std::move(p.b), {.name = "old"});
  ASSERT_OK(receiver);
  UniqueFd memfd = sealed_memfd(4096);
  const int fd = memfd.get();
  const std::uint32_t one[] = {1};
  ASSERT_OK(ipc::send_fds(p.a.get(), detail::encode_hello(detail::ChannelRole::Sender, 32, 0)));
  ASSERT_OK(ipc::send_fds(p.a.get(), detail::encode_announce(1, MemoryKind::Shm, 4096), ArrayRef<int>(&fd, 1)));
  ASSERT_OK(ipc::send_fds(p.a.get(), detail::encode_frame(detail::ChannelMessage::TensorFrame, 0, 0, one,
                                                           detail::encode_tensor_message(valid_header(4096)))));
  auto d = receiver->receive(1s);
  ASSERT_OK(d);
  EXPECT_ERROR(receiver->add_release_fence(d->tensor, pending_fence()), ErrorCode::Unsupported,
               "channel 'old': the sender's hello does not carry the fence capability, so a release cannot carry a "
               "fence; wait on it (sync::Fence::wait) before dropping buffer 1 of sequence 0");
  ASSERT_OK(receiver->add_release_fence(d->tensor, sync::Fence()));
  ASSERT_OK(receiver->status());
}

}  // namespace
