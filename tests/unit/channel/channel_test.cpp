// SPDX-License-Identifier: Apache-2.0
// The frame channel in one process (include/edgetensor/channel.h): round trips of tensors and Frames
// with their metadata, announce once then no fd, releases back to a Pool, sequence and timestamp,
// buffer table eviction, timeouts, closing, socket checks. Two processes: channel_process_test.cpp;
// malformed messages: channel_malformed_test.cpp.
#include <edgetensor/edgetensor.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <time.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <vector>

#include "support/nv12.h"
#include "support/test_support.h"
#include "unit/channel/channel_support.h"

using namespace edgetensor;
using namespace std::chrono_literals;

using et_test::channel_support::Ends;
using et_test::channel_support::make_ends;

namespace {

std::int64_t now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

TEST(Channel, TensorRoundTripSharesTheBytesAndKeepsTheView) {
  auto ends = make_ends();
  ASSERT_TRUE(ends);
  AllocateOptions o = et_test::mem(MemoryKind::Shm);
  o.name = "cam0";
  auto t = TensorDyn::allocate({4, 6}, DType::U16, o);
  ASSERT_OK(t);
  {
    auto m = t->map_write();
    ASSERT_OK(m);
    for (std::size_t i = 0; i < m->extent_bytes(); ++i) m->data()[i] = static_cast<std::byte>(i);
  }
  auto view = t->slice(1, 2, 5);  // a strided view at an offset
  ASSERT_OK(view);
  const std::int64_t before = now_ns();
  auto seq = ends->sender.send(*view);
  ASSERT_OK(seq);
  EXPECT_EQ(*seq, 0u) << "the first sequence is 0";
  auto d = ends->receiver.receive(1s);
  ASSERT_OK(d);
  EXPECT_EQ(d->sequence, 0u);
  EXPECT_GE(d->timestamp_ns, before);
  EXPECT_LE(d->timestamp_ns, now_ns());
  EXPECT_TRUE(d->frame.is_empty());
  const TensorDyn& r = d->tensor;
  EXPECT_EQ(r.dtype(), DType::U16);
  ASSERT_EQ(r.rank(), 2u);
  EXPECT_EQ(r.shape()[0], 4u);
  EXPECT_EQ(r.shape()[1], 3u);
  EXPECT_EQ(r.strides()[0], 12);
  EXPECT_EQ(r.offset_bytes(), view->offset_bytes());
  EXPECT_EQ(r.name(), "cam0");
  EXPECT_TRUE(r.same_buffer(*t));
  auto a = view->map_read();
  auto b = r.map_read();
  ASSERT_OK(a);
  ASSERT_OK(b);
  EXPECT_EQ(std::memcmp(a->data(), b->data(), a->extent_bytes()), 0);
}

TEST(Channel, ImageMetadataQuantizationAndColorimetryTravel) {
  auto ends = make_ends();
  ASSERT_TRUE(ends);
  auto img = TensorDyn::allocate_image(64u, 32u, PixelFormat::Nv12, {}, et_test::mem(MemoryKind::Shm));
  ASSERT_OK(img);
  img->set_colorimetry({ColorPrimaries::Bt709, TransferFunction::Bt709, YcbcrMatrix::Bt709, ColorRange::Limited});
  ASSERT_OK(ends->sender.send(*img));
  auto d = ends->receiver.receive(1s);
  ASSERT_OK(d);
  ASSERT_NE(d->tensor.image_layout(), nullptr);
  EXPECT_EQ(*d->tensor.image_layout(), *img->image_layout());
  EXPECT_EQ(d->tensor.colorimetry(), img->colorimetry());

  auto q = TensorDyn::allocate({2, 3}, DType::I8, et_test::mem(MemoryKind::Shm));
  ASSERT_OK(q);
  auto per_axis = Quantization::per_axis(1, std::vector<float>{0.5f, 0.25f, 2.0f}, std::vector<std::int32_t>{1, -2, 3});
  ASSERT_OK(per_axis);
  ASSERT_OK(q->set_quantization(*per_axis));
  auto plane = img->plane(1);
  ASSERT_OK(plane);
  ASSERT_OK(ends->sender.send(*q));
  ASSERT_OK(ends->sender.send(*plane));
  auto dq = ends->receiver.receive(1s);
  auto dp = ends->receiver.receive(1s);
  ASSERT_OK(dq);
  ASSERT_OK(dp);
  EXPECT_EQ(dq->tensor.quantization(), q->quantization());
  EXPECT_EQ(dp->tensor.pixel_format(), PixelFormat::Nv12);
  EXPECT_EQ(dp->tensor.image_plane(), 1);
  EXPECT_EQ(dp->sequence, dq->sequence + 1);
}

TEST(Channel, FrameOfTwoBuffersRoundTrips) {
  auto ends = make_ends();
  ASSERT_TRUE(ends);
  auto [two, luma, chroma] = et_test::nv12_two_buffers(64, 32);
  ASSERT_OK(luma);
  ASSERT_OK(chroma);
  auto frame = et_test::import_frame({two, luma, chroma});
  ASSERT_OK(frame);
  ASSERT_EQ(frame->buffer_count(), 2u);
  auto seq = ends->sender.send_frame(*frame, {.sequence = 41, .timestamp_ns = 12345});
  ASSERT_OK(seq);
  EXPECT_EQ(*seq, 41u);
  auto d = ends->receiver.receive(1s);
  ASSERT_OK(d);
  EXPECT_EQ(d->sequence, 41u);
  EXPECT_EQ(d->timestamp_ns, 12345);
  EXPECT_TRUE(d->tensor.is_empty_handle());
  ASSERT_EQ(d->frame.buffer_count(), 2u);
  EXPECT_EQ(d->frame.layout(), two);
  auto b0 = d->frame.buffer(0);
  auto b1 = d->frame.buffer(1);
  ASSERT_OK(b0);
  ASSERT_OK(b1);
  EXPECT_TRUE(b0->same_buffer(*luma));
  EXPECT_TRUE(b1->same_buffer(*chroma));
  EXPECT_EQ(ends->sender.stats().frames_out, 2u) << "one reference per buffer of the frame";
  *d = channel::Delivery();
  b0 = TensorDyn();
  b1 = TensorDyn();
  ASSERT_OK(ends->sender.drain(1s));
  EXPECT_EQ(ends->sender.stats().releases, 2u);
}

// Writes `value` into every byte of `t` through a write map.
void fill_with(const TensorDyn& t, std::uint8_t value) {
  auto m = t.map_write();
  ASSERT_OK(m);
  std::memset(m->data(), value, m->extent_bytes());
}

// A received two-buffer frame whose second buffer starts with `value`.
void expect_second_buffer_starts_with(const Frame& frame, std::uint8_t value) {
  ASSERT_EQ(frame.buffer_count(), 2u);
  auto b1 = frame.buffer(1);
  ASSERT_OK(b1);
  auto m = b1->map_read();
  ASSERT_OK(m);
  EXPECT_EQ(m->data()[0], std::byte{value});
}

// A buffer announced through one tensor and sent again through another import of it (one BufferKey),
// after the first tensor is gone: the entry stays alive through the new import (a storage of the same fd
// in this process that is not the receiver's), so it is neither retired nor announced again.
TEST(Channel, ABufferSentAgainThroughAnotherImportIsNotAnnouncedAgain) {
  auto ends = make_ends();
  ASSERT_TRUE(ends);
  auto [two, luma, chroma] = et_test::nv12_two_buffers(64, 32);
  ASSERT_OK(luma);
  ASSERT_OK(chroma);
  ASSERT_NO_FATAL_FAILURE(fill_with(*chroma, 0x5A));
  ASSERT_OK(ends->sender.send(*chroma));  // announces chroma's buffer through this tensor
  {
    auto d = ends->receiver.receive(1s);
    ASSERT_OK(d);
  }
  ASSERT_OK(ends->sender.drain(1s));
  auto frame = et_test::import_frame({two, luma, chroma});
  ASSERT_OK(frame);
  *chroma = TensorDyn();  // the announcing tensor goes; the frame's import keeps the buffer (same key)
  *luma = TensorDyn();
  ASSERT_OK(ends->sender.send_frame(*frame));
  auto f = ends->receiver.receive(1s);
  ASSERT_OK(f);
  ASSERT_NO_FATAL_FAILURE(expect_second_buffer_starts_with(f->frame, 0x5A));
  EXPECT_EQ(ends->receiver.stats().retires, 0u);
  EXPECT_EQ(ends->receiver.stats().announces, 2u) << "chroma once, then luma";
  // Sent again as a single tensor: found by its key.
  auto again = frame->buffer(1);
  ASSERT_OK(again);
  ASSERT_OK(ends->sender.send(*again));
  auto d = ends->receiver.receive(1s);
  ASSERT_OK(d);
  EXPECT_EQ(ends->receiver.stats().announces, 2u) << "no new announce";
}

// A frame whose first buffer's announce evicts (least recently sent) the entry of its second buffer: the
// frame announces that buffer anew instead of naming the retired id (the receiver would close the channel).
TEST(Channel, ABufferRetiredForAFrameIsAnnouncedAgainNotNamed) {
  auto ends = make_ends({.max_buffers = 2}, {});
  ASSERT_TRUE(ends);
  auto [two, luma, chroma] = et_test::nv12_two_buffers(64, 32);
  ASSERT_OK(luma);
  ASSERT_OK(chroma);
  ASSERT_NO_FATAL_FAILURE(fill_with(*chroma, 0x5A));
  auto other = TensorDyn::allocate({64}, DType::U8, {.memory = MemoryKind::Shm});
  ASSERT_OK(other);
  for (const TensorDyn* t : {&*chroma, &*other}) {  // chroma is the least recently sent of the two
    ASSERT_OK(ends->sender.send(*t));
    auto d = ends->receiver.receive(1s);
    ASSERT_OK(d);
  }
  ASSERT_OK(ends->sender.drain(1s));
  auto frame = et_test::import_frame({two, luma, chroma});
  ASSERT_OK(frame);
  ASSERT_OK(ends->sender.send_frame(*frame));
  auto f = ends->receiver.receive(1s);
  ASSERT_TRUE(f.has_value()) << "the frame must not name the buffer it retired: " << f.error().to_string();
  ASSERT_NO_FATAL_FAILURE(expect_second_buffer_starts_with(f->frame, 0x5A));
  EXPECT_EQ(ends->receiver.stats().retires, 2u) << "chroma for luma, then the other buffer for chroma";
  EXPECT_EQ(ends->receiver.stats().announces, 4u) << "chroma, the other buffer, then luma and chroma again";
}

TEST(Channel, AnnouncesOnceThenSendsNoFd) {
  auto ends = make_ends();
  ASSERT_TRUE(ends);
  auto pool = Pool::create({32, 32, 4}, DType::U8, {.name = "p", .max_buffers = 2, .allocate = {.memory = MemoryKind::Shm}});
  ASSERT_OK(pool);
  for (int i = 0; i < 20; ++i) {
    auto t = ends->sender.acquire(*pool, 1s);
    ASSERT_OK(t);
    ASSERT_OK(ends->sender.send(*t));
    t = TensorDyn();
    auto d = ends->receiver.receive(1s);
    ASSERT_OK(d);
  }
  ASSERT_OK(ends->sender.drain(1s));
  const auto s = ends->sender.stats();
  EXPECT_EQ(s.frames_sent, 20u);
  EXPECT_EQ(s.releases, 20u);
  EXPECT_LE(s.announces, 2u) << "each pool buffer crosses once";
  const auto r = ends->receiver.stats();
  EXPECT_EQ(r.frames_received, 20u);
  EXPECT_EQ(r.announces, s.announces);
  EXPECT_EQ(r.frames_out, 0u);
  EXPECT_EQ(r.releases_sent, 20u);
  EXPECT_EQ(pool->stats().in_use, 0u);
}

TEST(Channel, ThePoolGetsTheBufferBackOnlyAfterTheRelease) {
  auto ends = make_ends();
  ASSERT_TRUE(ends);
  auto pool = Pool::create({16, 16}, DType::U8, {.name = "one", .max_buffers = 1, .allocate = {.memory = MemoryKind::Shm}});
  ASSERT_OK(pool);
  auto t = pool->acquire(0ms);
  ASSERT_OK(t);
  ASSERT_OK(ends->sender.send(*t));
  t = TensorDyn();  // the producer drops it: the channel still holds it for the receiver
  EXPECT_ERROR(pool->try_acquire(), ErrorCode::Busy, "pool 'one'");
  auto d = ends->receiver.receive(1s);
  ASSERT_OK(d);
  auto busy = ends->sender.acquire(*pool, 20ms);
  EXPECT_ERROR(busy, ErrorCode::Busy, "not released by the receiver (oldest: sequence 0");
  EXPECT_EQ(busy.error().sys_errno(), ETIMEDOUT) << "the pool's timeout stays one (Python: TimeoutError)";
  EXPECT_EQ(ends->sender.acquire(*pool, 0ms).error().sys_errno(), EAGAIN);
  auto view = d->tensor.reshape({256});  // a view keeps the frame held
  ASSERT_OK(view);
  *d = channel::Delivery();
  EXPECT_ERROR(pool->try_acquire(), ErrorCode::Busy, "pool 'one'");
  view = TensorDyn();  // the receiver's last holder: the release goes back
  auto again = ends->sender.acquire(*pool, 1s);
  ASSERT_OK(again);
  EXPECT_EQ(pool->stats().allocated, 1u);
}

TEST(Channel, SequencesMustIncrease) {
  auto ends = make_ends();
  ASSERT_TRUE(ends);
  auto t = TensorDyn::allocate({8}, DType::U8, et_test::mem(MemoryKind::Shm));
  ASSERT_OK(t);
  ASSERT_OK(ends->sender.send(*t, {.sequence = 10}));
  EXPECT_ERROR(ends->sender.send(*t, {.sequence = 10}), ErrorCode::InvalidArgument, "sequence 10 after 10");
  auto next = ends->sender.send(*t);
  ASSERT_OK(next);
  EXPECT_EQ(*next, 11u);
  ASSERT_OK(ends->sender.status());  // a refused argument leaves the channel open
  ASSERT_OK(ends->receiver.receive(1s));
  ASSERT_OK(ends->receiver.receive(1s));
}

TEST(Channel, RefusesWhatCannotTravelAndStaysOpen) {
  auto ends = make_ends();
  ASSERT_TRUE(ends);
  auto heap = TensorDyn::allocate({8}, DType::U8, et_test::mem(MemoryKind::Heap));
  ASSERT_OK(heap);
  EXPECT_ERROR(ends->sender.send(*heap), ErrorCode::Unsupported, "heap tensors");
  EXPECT_ERROR(ends->sender.send(TensorDyn()), ErrorCode::FailedPrecondition, "no storage");
  auto shm = TensorDyn::allocate({8}, DType::U8, et_test::mem(MemoryKind::Shm));
  ASSERT_OK(shm);
  auto empty = shm->slice(0, 2, 2);
  ASSERT_OK(empty);
  EXPECT_ERROR(ends->sender.send(*empty), ErrorCode::FailedPrecondition, "zero elements");
  EXPECT_ERROR(ends->sender.send_frame(Frame()), ErrorCode::FailedPrecondition, "empty");
  // Foreign memory (a DLPack import, here of the shm tensor's own export) has no fd to announce.
  auto managed = dlpack::export_versioned(*shm);
  ASSERT_OK(managed);
  auto foreign = dlpack::adopt_versioned(*managed);
  ASSERT_OK(foreign);
  EXPECT_ERROR(ends->sender.send(*foreign), ErrorCode::Unsupported, "foreign");
  ASSERT_OK(ends->sender.status());
  ASSERT_OK(ends->sender.send(*shm));
  ASSERT_OK(ends->receiver.receive(1s));
}

TEST(Channel, ReceiveTimesOutWithBusyAndStaysOpen) {
  auto ends = make_ends();
  ASSERT_TRUE(ends);
  const auto start = std::chrono::steady_clock::now();
  auto waited = ends->receiver.receive(30ms);
  EXPECT_ERROR(waited, ErrorCode::Busy, "no frame within 30 ms");
  EXPECT_EQ(waited.error().sys_errno(), ETIMEDOUT) << "a wait that ran out (Python: TimeoutError)";
  EXPECT_GE(std::chrono::steady_clock::now() - start, 30ms);
  auto polled = ends->receiver.receive(0ms);
  EXPECT_ERROR(polled, ErrorCode::Busy, "no frame within 0 ms");
  EXPECT_EQ(polled.error().sys_errno(), EAGAIN);
  EXPECT_ERROR(ends->receiver.receive(-1ms), ErrorCode::InvalidArgument, "negative");
  ASSERT_OK(ends->receiver.status());
}

TEST(Channel, TableEvictsTheLeastRecentlySentAndRetiresDeadBuffers) {
  auto ends = make_ends({.name = "lru", .max_buffers = 2});
  ASSERT_TRUE(ends);
  std::vector<TensorDyn> kept;
  for (int i = 0; i < 3; ++i) {
    auto t = TensorDyn::allocate({64}, DType::U8, et_test::mem(MemoryKind::Shm));
    ASSERT_OK(t);
    kept.push_back(*t);
    ASSERT_OK(ends->sender.send(*t));
    ASSERT_OK(ends->receiver.receive(1s));  // delivered and dropped at once: released
    ASSERT_OK(ends->sender.drain(1s));      // the sender's reader has seen the release
  }
  auto s = ends->sender.stats();
  EXPECT_EQ(s.announces, 3u);
  EXPECT_EQ(s.retires, 1u) << "the third announce evicted the least recently sent";
  EXPECT_EQ(s.buffers_announced, 2u);
  kept.clear();  // every buffer dead here: the next announce retires them
  auto fresh = TensorDyn::allocate({64}, DType::U8, et_test::mem(MemoryKind::Shm));
  ASSERT_OK(fresh);
  ASSERT_OK(ends->sender.send(*fresh));
  ASSERT_OK(ends->receiver.receive(1s));
  s = ends->sender.stats();
  EXPECT_EQ(s.retires, 3u);
  EXPECT_EQ(s.buffers_announced, 1u);
  EXPECT_EQ(ends->receiver.stats().buffers, 1u) << "the receiver closed the dead buffers' imports";
}

TEST(Channel, AllAnnouncedBuffersOutIsBusyAndStaysOpen) {
  auto ends = make_ends({.name = "full", .max_buffers = 1, .send_timeout = 100ms});
  ASSERT_TRUE(ends);
  auto a = TensorDyn::allocate({8}, DType::U8, et_test::mem(MemoryKind::Shm));
  auto b = TensorDyn::allocate({8}, DType::U8, et_test::mem(MemoryKind::Shm));
  ASSERT_OK(a);
  ASSERT_OK(b);
  ASSERT_OK(ends->sender.send(*a));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_ERROR(ends->sender.send(*b), ErrorCode::Busy, "all 1 announced buffers");
  EXPECT_ERROR(ends->sender.send(*b), ErrorCode::Busy, "waited SenderOptions::send_timeout, 100 ms");
  EXPECT_GE(std::chrono::steady_clock::now() - start, 200ms) << "each send waited send_timeout for a release";
  auto d = ends->receiver.receive(1s);
  ASSERT_OK(d);
  *d = channel::Delivery();
  ASSERT_OK(ends->sender.drain(1s));
  ASSERT_OK(ends->sender.send(*b));
  ASSERT_OK(ends->receiver.receive(1s));
}

// A decoder that hands out a new buffer every frame: the table is full of buffers whose frames are
// released, but the release reaches the sender's reader thread a moment after receive() returned here.
// send() waits for it (up to send_timeout) instead of failing with Busy.
TEST(Channel, SendWaitsForAReleaseOnItsWayWhenTheTableIsFull) {
  auto ends = make_ends({.name = "fresh", .max_buffers = 4});
  ASSERT_TRUE(ends);
  for (int i = 0; i < 200; ++i) {
    auto t = TensorDyn::allocate({64}, DType::U8, et_test::mem(MemoryKind::Shm));
    ASSERT_OK(t);
    auto sent = ends->sender.send(*t);
    ASSERT_TRUE(sent.has_value()) << "frame " << i << ": " << sent.error().to_string();
    auto d = ends->receiver.receive(1s);
    ASSERT_OK(d);
  }
  EXPECT_EQ(ends->sender.stats().frames_sent, 200u);
}

TEST(Channel, ReceiverGoneReleasesEverythingAtTheSender) {
  auto ends = make_ends();
  ASSERT_TRUE(ends);
  auto pool = Pool::create({8, 8}, DType::U8, {.name = "gone", .max_buffers = 2, .allocate = {.memory = MemoryKind::Shm}});
  ASSERT_OK(pool);
  for (int i = 0; i < 2; ++i) {
    auto t = pool->acquire(0ms);
    ASSERT_OK(t);
    ASSERT_OK(ends->sender.send(*t));
  }
  auto d = ends->receiver.receive(1s);  // one delivered and held, one still in the socket
  ASSERT_OK(d);
  { channel::Receiver gone = std::move(ends->receiver); }
  auto t = pool->acquire(1s);  // the sender's reader saw the end and dropped both
  ASSERT_OK(t);
  EXPECT_ERROR(ends->sender.send(*t), ErrorCode::Unavailable, "closed it or died");
  EXPECT_EQ(ends->sender.stats().frames_out, 0u);
  auto m = d->tensor.map_read();  // a delivered tensor outlives its receiver
  ASSERT_OK(m);
}

TEST(Channel, SenderGoneEndsTheReceiverWhoseTensorsStayValid) {
  auto ends = make_ends();
  ASSERT_TRUE(ends);
  auto t = TensorDyn::allocate({8}, DType::U8, et_test::mem(MemoryKind::Shm));
  ASSERT_OK(t);
  ASSERT_OK(ends->sender.send(*t));
  { channel::Sender gone = std::move(ends->sender); }
  auto d = ends->receiver.receive(1s);  // the frame sent before the end still arrives
  ASSERT_OK(d);
  EXPECT_ERROR(ends->receiver.receive(1s), ErrorCode::Unavailable, "the sender closed the channel or died");
  EXPECT_ERROR(ends->receiver.receive(1s), ErrorCode::Unavailable, "is closed");
  EXPECT_EQ(ends->receiver.stats().buffers, 0u) << "every import closed";
  auto m = d->tensor.map_read();
  ASSERT_OK(m);
  *d = channel::Delivery();  // its release goes nowhere
}

TEST(Channel, RefusesSocketsThatAreNotConnectedSeqpacket) {
  for (int type : {SOCK_STREAM, SOCK_DGRAM}) {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv), 0);
    UniqueFd other(sv[1]);
    EXPECT_ERROR(channel::Sender::create(UniqueFd(sv[0])), ErrorCode::InvalidArgument, "SOCK_SEQPACKET");
  }
  UniqueFd lone(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  EXPECT_ERROR(channel::Receiver::create(std::move(lone)), ErrorCode::InvalidArgument, "not connected");
  UniqueFd not_socket(::memfd_create("x", MFD_CLOEXEC));
  auto r = channel::Receiver::create(std::move(not_socket));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().sys_errno(), ENOTSOCK);
  auto sp = channel::socket_pair();
  ASSERT_OK(sp);
  EXPECT_ERROR(channel::Sender::create(std::move(sp->first), {.max_buffers = 0}), ErrorCode::InvalidArgument,
               "max_buffers 0");
  EXPECT_ERROR(channel::Receiver::create(std::move(sp->second), {.max_buffers = channel::kMaxChannelBuffers + 1}),
               ErrorCode::InvalidArgument, "max_buffers 1025");
}

TEST(Channel, MovedFromEndsAnswerFailedPrecondition) {
  auto ends = make_ends();
  ASSERT_TRUE(ends);
  channel::Sender s = std::move(ends->sender);
  channel::Receiver r = std::move(ends->receiver);
  EXPECT_ERROR(ends->sender.send(TensorDyn()), ErrorCode::FailedPrecondition, "moved from");
  EXPECT_ERROR(ends->receiver.receive(0ms), ErrorCode::FailedPrecondition, "moved from");
  EXPECT_EQ(ends->sender.stats().frames_sent, 0u);
}

TEST(Channel, LeavesNoFdBehind) {
  const int before = et_test::open_fd_count();
  {
    auto ends = make_ends();
    ASSERT_TRUE(ends);
    auto t = TensorDyn::allocate({8}, DType::U8, et_test::mem(MemoryKind::Shm));
    ASSERT_OK(t);
    ASSERT_OK(ends->sender.send(*t));
    auto d = ends->receiver.receive(1s);
    ASSERT_OK(d);
  }
  EXPECT_EQ(et_test::open_fd_count(), before);
}

}  // namespace

namespace {

TEST(Channel, FrameNeverRetiresItsOwnBuffersToMakeRoom) {
  // max_buffers 2, one buffer out: a two-buffer Frame of new buffers has no room. Retiring the
  // Frame's own first buffer to make room for its second would name a retired id; it is Busy instead.
  auto ends = make_ends({.name = "own", .max_buffers = 2});
  ASSERT_TRUE(ends);
  auto held = TensorDyn::allocate({64}, DType::U8, et_test::mem(MemoryKind::Shm));
  ASSERT_OK(held);
  ASSERT_OK(ends->sender.send(*held));
  auto d = ends->receiver.receive(1s);
  ASSERT_OK(d);  // held: its buffer stays out
  auto two = et_test::nv12_two_buffers(16, 8);
  ASSERT_OK(two.luma);
  ASSERT_OK(two.chroma);
  auto frame = et_test::import_frame(two);
  ASSERT_OK(frame);
  EXPECT_ERROR(ends->sender.send_frame(*frame), ErrorCode::Busy, "all 2 announced buffers");
  ASSERT_OK(ends->sender.status());
  *d = channel::Delivery();  // released: now there is room
  ASSERT_OK(ends->sender.drain(1s));
  ASSERT_OK(ends->sender.send_frame(*frame));
  auto f = ends->receiver.receive(1s);
  ASSERT_OK(f);
  EXPECT_EQ(f->frame.buffer_count(), 2u);
  auto one = channel::Sender::create(std::move(channel::socket_pair()->first), {.max_buffers = 1});
  ASSERT_OK(one);
  EXPECT_ERROR(one->send_frame(*frame), ErrorCode::InvalidArgument, "a frame of 2 buffers needs SenderOptions::max_buffers >= 2");
}

TEST(Channel, TimeoutsWhileRetiringOrAnnouncingLeaveBothEndsInStep) {
  auto sp = channel::socket_pair();
  ASSERT_OK(sp);
  int small = 1;  // the kernel's minimum: a few messages fill it
  ASSERT_EQ(::setsockopt(sp->first.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
  auto sender = channel::Sender::create(std::move(sp->first), {.name = "slow", .max_buffers = 3, .send_timeout = 20ms});
  auto receiver = channel::Receiver::create(std::move(sp->second), {.name = "slow", .max_buffers = 3});
  ASSERT_OK(sender);
  ASSERT_OK(receiver);
  std::vector<TensorDyn> t;
  for (int i = 0; i < 4; ++i) {
    auto a = TensorDyn::allocate({64}, DType::U8, et_test::mem(MemoryKind::Shm));
    ASSERT_OK(a);
    t.push_back(*a);
  }
  const TensorDyn &x = t[0], &b = t[1], &c = t[2], &d = t[3];
  // Sends b until the socket is full (the receiver does not read), then reads them all: no frame may
  // name an id the receiver does not know.
  auto fill = [&]() -> int {
    int frames = 0;
    for (auto r = sender->send(b); r; r = sender->send(b)) ++frames;
    return frames;
  };
  auto read_all = [&](int frames) {
    for (int i = 0; i < frames; ++i) {
      auto got = receiver->receive(1s);
      ASSERT_OK(got);
      EXPECT_TRUE(got->tensor.same_buffer(b));
    }
    ASSERT_OK(sender->drain(1s));
  };
  ASSERT_OK(sender->send(x));  // x announced, then released
  ASSERT_OK(receiver->receive(1s));
  int frames = fill();
  ASSERT_GT(frames, 0);
  // c has room in the table, but its announce finds no room in the socket: c is forgotten, the
  // channel stays open.
  EXPECT_ERROR(sender->send(c), ErrorCode::Busy, "no room in the socket");
  ASSERT_OK(sender->status());
  EXPECT_EQ(sender->stats().buffers_announced, 2u);
  read_all(frames);
  ASSERT_OK(sender->send(d));  // the table is full now: x, b, d
  ASSERT_OK(receiver->receive(1s));
  ASSERT_OK(sender->drain(1s));
  frames = fill();
  // c needs x retired first (the least recently sent): the retire finds no room. Nothing changes.
  EXPECT_ERROR(sender->send(c), ErrorCode::Busy, "no room in the socket");
  ASSERT_OK(sender->status());
  EXPECT_EQ(sender->stats().buffers_announced, 3u);
  EXPECT_EQ(sender->stats().retires, 0u);
  read_all(frames);
  ASSERT_OK(sender->send(c));  // now x is retired and c announced
  auto got = receiver->receive(1s);
  ASSERT_OK(got);
  EXPECT_TRUE(got->tensor.same_buffer(c));
  EXPECT_EQ(receiver->stats().retires, 1u);
  ASSERT_OK(receiver->status());
}

}  // namespace
