// SPDX-License-Identifier: Apache-2.0
// The frame channel against a broken or hostile peer (docs/WIRE.md, "The frame channel"): every
// malformed message, unknown buffer id, duplicate announce, retire or release out of turn, fence, bad
// fd, as raw messages on the other end of the socket. Each is refused with a named error, closes the
// channel at both ends (the raw peer reads the end), and leaves no fd open.
#include <edgetensor/edgetensor.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "channel/channel_wire.h"
#include "support/test_support.h"
#include "unit/ipc/ipc_wire_support.h"

using namespace edgetensor;
using namespace std::chrono_literals;
using et_test::ipc_wire::Pair;
using et_test::ipc_wire::sealed_memfd;
using et_test::ipc_wire::valid_frame_header;
using et_test::ipc_wire::valid_header;

namespace {

constexpr std::size_t kBytes = 4096;

struct Msg {
  std::vector<std::byte> bytes;
  std::vector<int> fds;  // borrowed
};

template <class T>
void poke(std::vector<std::byte>& bytes, std::size_t offset, T value) {
  std::memcpy(bytes.data() + offset, &value, sizeof value);
}

std::vector<std::byte> announce_bytes(std::uint32_t id, std::size_t bytes = kBytes, MemoryKind kind = MemoryKind::Shm) {
  return detail::encode_announce(id, kind, bytes);
}

std::vector<std::byte> tensor_frame(std::uint32_t id, std::uint64_t seq, const detail::WireHeader& h = valid_header(kBytes)) {
  const std::uint32_t ids[] = {id};
  return detail::encode_frame(detail::ChannelMessage::TensorFrame, seq, 0, ids,
                              detail::encode_tensor_message(h));
}

// Sends `msgs` on a raw end, then receives on a Receiver until an error: it must be `code` naming
// `needle`; the channel is closed (status, and the raw end reads the end) and no fd is left open.
void refused(const std::vector<Msg>& msgs, ErrorCode code, const std::string& needle,
             channel::ReceiverOptions options = {}) {
  const int fds_before = et_test::open_fd_count();
  {
    Pair p;
    auto receiver = channel::Receiver::create(std::move(p.b), options);
    ASSERT_OK(receiver);
    for (const Msg& m : msgs) ASSERT_OK(ipc::send_fds(p.a.get(), m.bytes, ArrayRef<int>(m.fds.data(), m.fds.size())));
    std::vector<channel::Delivery> held;  // frames before the bad message stay out
    for (;;) {
      auto d = receiver->receive(1s);
      if (d) {
        held.push_back(std::move(*d));
        continue;
      }
      EXPECT_EQ(d.error().code(), code) << d.error().to_string();
      EXPECT_NE(d.error().message().find(needle), std::string::npos) << d.error().to_string();
      break;
    }
    auto status = receiver->status();
    ASSERT_FALSE(status.has_value()) << "the channel closed";
    EXPECT_NE(status.error().message().find("is closed"), std::string::npos) << status.error().to_string();
    EXPECT_ERROR(receiver->receive(0ms), ErrorCode::FailedPrecondition, needle);
    std::byte b[64];
    EXPECT_EQ(::recv(p.a.get(), b, sizeof b, MSG_DONTWAIT), static_cast<ssize_t>(sizeof(detail::HelloHeader)))
        << "the receiver's hello";
    EXPECT_EQ(::recv(p.a.get(), b, sizeof b, MSG_DONTWAIT), 0) << "the peer sees the end of the channel";
  }
  EXPECT_EQ(et_test::open_fd_count(), fds_before) << "every fd that arrived is closed";
}

struct Memfds {
  UniqueFd a = sealed_memfd(kBytes);
  UniqueFd b = sealed_memfd(kBytes);
};

TEST(ChannelMalformed, PrefixIsChecked) {
  refused({{std::vector<std::byte>(15), {}}}, ErrorCode::InvalidArgument, "15 B received, every channel message starts with a 16 B prefix");
  auto m = announce_bytes(1);
  poke<std::uint32_t>(m, 0, 0x12345678);
  refused({{m, {}}}, ErrorCode::InvalidArgument, "magic 0x12345678, expected 0x31435445");
  poke<std::uint32_t>(m, 0, __builtin_bswap32(detail::kChannelMagic));
  refused({{m, {}}}, ErrorCode::InvalidArgument, "byte-swapped");
  refused({{detail::encode_tensor_message(valid_header(kBytes)), {}}}, ErrorCode::InvalidArgument,
          "a tensor message of ipc::send arrived");
  m = announce_bytes(1);
  poke<std::uint16_t>(m, 4, 1);
  refused({{m, {}}}, ErrorCode::InvalidArgument,
          "channel version 1 (an edgetensor 0.4 or 0.5 peer); this end speaks version 2");
  poke<std::uint16_t>(m, 4, 3);
  refused({{m, {}}}, ErrorCode::InvalidArgument, "channel version 3; this end speaks version 2");
  for (std::uint8_t type : {0, 9, 255}) {
    m = announce_bytes(1);
    poke<std::uint8_t>(m, 8, type);
    refused({{m, {}}}, ErrorCode::InvalidArgument, "message type " + std::to_string(type) + " is not a channel message");
  }
  m = announce_bytes(1);
  poke<std::uint16_t>(m, 6, 40);
  refused({{m, {}}}, ErrorCode::InvalidArgument, "announce header_bytes 40, expected 32");
  m = announce_bytes(1);
  poke<std::uint32_t>(m, 12, 9);
  refused({{m, {}}}, ErrorCode::InvalidArgument, "reserved prefix field 9");
  m = tensor_frame(1, 0);
  poke<std::uint8_t>(m, 9, 1);
  refused({{m, {}}}, ErrorCode::InvalidArgument, "with fence_count 1, fence_mask 0x0: no fence capability was agreed");
  m = announce_bytes(1);
  poke<std::uint8_t>(m, 9, 1);
  refused({{m, {}}}, ErrorCode::InvalidArgument, "announce with fence_count 1: only frames and releases carry fences");
  // The receiver reads one byte past the largest message: such a message is read whole and refused by
  // its length; anything longer is cut (MSG_TRUNC).
  refused({{std::vector<std::byte>(detail::kMaxChannelMessageBytes + 2), {}}}, ErrorCode::OutOfRange, "MSG_TRUNC");
}

TEST(ChannelMalformed, AnnounceIsChecked) {
  Memfds f;
  auto m = announce_bytes(1);
  refused({{std::vector<std::byte>(m.begin(), m.end() - 8), {f.a.get()}}}, ErrorCode::InvalidArgument,
          "24 B received, a announce header has 32 B");
  m.push_back(std::byte{0});
  refused({{m, {f.a.get()}}}, ErrorCode::InvalidArgument, "announce of 33 B, it has exactly 32 B");
  m = announce_bytes(1);
  poke<std::uint16_t>(m, 10, 2);
  refused({{m, {f.a.get()}}}, ErrorCode::InvalidArgument, "announce count 2");
  refused({{announce_bytes(0), {f.a.get()}}}, ErrorCode::InvalidArgument, "announce of buffer id 0");
  refused({{announce_bytes(1, kBytes, MemoryKind::Heap), {f.a.get()}}}, ErrorCode::InvalidArgument,
          "memory kind 1 (heap); only shm (2) and dmabuf (3) travel");
  m = announce_bytes(1);
  poke<std::uint8_t>(m, 22, 1);
  refused({{m, {f.a.get()}}}, ErrorCode::InvalidArgument, "reserved bytes must be 0");
  refused({{announce_bytes(1, 0), {f.a.get()}}}, ErrorCode::InvalidArgument, "announce of buffer 1 with 0 bytes");
  refused({{announce_bytes(1), {}}}, ErrorCode::InvalidArgument, "announce of buffer 1 with 0 fds; it carries exactly 1");
  refused({{announce_bytes(1), {f.a.get(), f.b.get()}}}, ErrorCode::InvalidArgument, "with 2 fds");
  const int five[] = {f.a.get(), f.b.get(), f.a.get(), f.b.get(), f.a.get()};
  refused({{announce_bytes(1), {five, five + 3}}}, ErrorCode::InvalidArgument, "with 3 fds");
  // kMaxChannelFds: an announce's 1, or a frame's 4 acquire fences.
  refused({{announce_bytes(1), {five, five + 5}}}, ErrorCode::OutOfRange, "5 fds received, more than the 4 allowed");
}

TEST(ChannelMalformed, AnnouncedFdIsCheckedAsIpcReceiveChecksIt) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  UniqueFd r(pipe_fds[0]), w(pipe_fds[1]);
  refused({{announce_bytes(1), {r.get()}}}, ErrorCode::InvalidArgument, "announce of buffer 1");
  UniqueFd unsealed = sealed_memfd(kBytes, 0);
  refused({{announce_bytes(1), {unsealed.get()}}}, ErrorCode::InvalidArgument, "not sealed against shrinking");
  UniqueFd shm = sealed_memfd(kBytes);
  refused({{announce_bytes(1, kBytes, MemoryKind::DmaBuf), {shm.get()}}}, ErrorCode::InvalidArgument,
          "says dmabuf but the fd is");
  refused({{announce_bytes(1, 8192), {shm.get()}}}, ErrorCode::InvalidArgument, "announce of buffer 1 says 8192 B");
  channel::ReceiverOptions small;
  small.limits.max_buffer_bytes = 1024;
  refused({{announce_bytes(1), {shm.get()}}}, ErrorCode::OutOfRange, "exceeds the receiver's limit of 1024 B", small);
}

TEST(ChannelMalformed, DuplicateAnnounceAndTooManyBuffers) {
  Memfds f;
  refused({{announce_bytes(1), {f.a.get()}}, {announce_bytes(1), {f.b.get()}}}, ErrorCode::InvalidArgument,
          "duplicate announce of buffer 1");
  refused({{announce_bytes(1), {f.a.get()}}, {announce_bytes(2), {f.b.get()}}}, ErrorCode::OutOfRange,
          "announce of buffer 2 would make 2 imported buffers, over ReceiverOptions::max_buffers 1", {.max_buffers = 1});
}

TEST(ChannelMalformed, TensorFrameIsChecked) {
  Memfds f;
  const Msg announce{announce_bytes(1), {f.a.get()}};
  refused({{tensor_frame(7, 0), {}}}, ErrorCode::InvalidArgument,
          "tensor frame sequence 0 names buffer 7, which was never announced");
  refused({announce, {tensor_frame(1, 0), {f.b.get()}}}, ErrorCode::InvalidArgument,
          "tensor frame sequence 0 with fence_count 0 carried 1 fd");
  auto m = tensor_frame(1, 0);
  poke<std::uint16_t>(m, 10, 2);
  poke<std::uint32_t>(m, 68, 2);
  refused({announce, {m, {}}}, ErrorCode::InvalidArgument, "tensor frame sequence 0 names 2 buffers: 1..1");
  m = tensor_frame(1, 0);
  poke<std::uint32_t>(m, 64, 0);
  refused({announce, {m, {}}}, ErrorCode::InvalidArgument, "buffer_ids[0] is 0");
  m = tensor_frame(1, 0);
  poke<std::uint32_t>(m, 72, 5);
  refused({announce, {m, {}}}, ErrorCode::InvalidArgument, "buffer_ids[2] = 5 past its 1 buffer: must be 0");
  m = tensor_frame(1, 0);
  m.resize(40);
  refused({announce, {m, {}}}, ErrorCode::InvalidArgument, "40 B received, a tensor frame header has 80 B");
  // Version 2's timing fields: a negative duration (other than "none"), and the reserved fence mask
  // and fields, which only a capability agreed in the hellos could define.
  m = tensor_frame(1, 0);
  poke<std::int64_t>(m, 40, -5);
  refused({announce, {m, {}}}, ErrorCode::InvalidArgument, "duration_ns -5 is negative");
  m = tensor_frame(1, 0);
  poke<std::uint8_t>(m, 52, 1);
  refused({announce, {m, {}}}, ErrorCode::InvalidArgument, "fence_mask 0x1: no fence capability was agreed");
  for (std::size_t offset : {53u, 56u}) {
    m = tensor_frame(1, 0);
    poke<std::uint8_t>(m, offset, 1);
    refused({announce, {m, {}}}, ErrorCode::InvalidArgument, "reserved fields must be 0");
  }
  auto h = valid_header(kBytes);
  h.rank = 9;
  refused({announce, {tensor_frame(1, 0, h), {}}}, ErrorCode::InvalidArgument,
          "malformed tensor message: rank 9 exceeds the maximum rank 8");
  h = valid_header(kBytes);
  h.memory = static_cast<std::uint8_t>(MemoryKind::DmaBuf);
  refused({announce, {tensor_frame(1, 0, h), {}}}, ErrorCode::InvalidArgument,
          "its tensor message says memory dmabuf, buffer 1 was announced as shm");
  h = valid_header(kBytes + 1);
  refused({announce, {tensor_frame(1, 0, h), {}}}, ErrorCode::OutOfRange, "tensor frame sequence 0 (buffer 1)");
  h = valid_header(kBytes);
  h.offset_bytes = 1;
  refused({announce, {tensor_frame(1, 0, h), {}}}, ErrorCode::OutOfRange, "tensor frame sequence 0 (buffer 1)");
  refused({announce, {tensor_frame(1, 5), {}}, {tensor_frame(1, 5), {}}}, ErrorCode::InvalidArgument,
          "tensor frame sequence 5 after sequence 5: sequences increase");
  auto frame_msg = detail::encode_frame_message(valid_frame_header(64, 32));
  const std::uint32_t one[] = {1};
  refused({announce, {detail::encode_frame(detail::ChannelMessage::TensorFrame, 0, 0, one, frame_msg), {}}},
          ErrorCode::InvalidArgument, "a frame message arrived");
}

TEST(ChannelMalformed, FrameIsChecked) {
  Memfds f;
  const Msg a1{announce_bytes(1), {f.a.get()}};
  const Msg a2{announce_bytes(2), {f.b.get()}};
  auto frame = [](std::vector<std::uint32_t> ids, const detail::FrameWireHeader& h) {
    return detail::encode_frame(detail::ChannelMessage::Frame, 0, 0, ids, detail::encode_frame_message(h));
  };
  const auto good = valid_frame_header(64, 32);
  refused({a1, a2, {frame({1}, good), {}}}, ErrorCode::InvalidArgument,
          "frame sequence 0 names 1 buffers, its frame message has buffer_count 2");
  refused({a1, {frame({1, 3}, good), {}}}, ErrorCode::InvalidArgument, "names buffer 3, which was never announced");
  refused({a1, a2, {frame({1, 1}, good), {}}}, ErrorCode::InvalidArgument, "buffer 1 named twice");
  auto big = valid_frame_header(256, 32);  // 8192 B of luma in a 4096 B buffer
  refused({a1, a2, {frame({1, 2}, big), {}}}, ErrorCode::OutOfRange, "plane 0 ends at 8192 B");
  auto dma = good;
  dma.memory[1] = static_cast<std::uint8_t>(MemoryKind::DmaBuf);
  refused({a1, a2, {frame({1, 2}, dma), {}}}, ErrorCode::InvalidArgument, "memory[1] is dmabuf, buffer 2 was announced as shm");
  auto bad = good;
  bad.pixel_format = 0;
  refused({a1, a2, {frame({1, 2}, bad), {}}}, ErrorCode::InvalidArgument, "malformed frame message: pixel format 0");
  // The same memfd announced under two ids: one buffer, which a frame may not name twice.
  UniqueFd dup(::fcntl(f.a.get(), F_DUPFD_CLOEXEC, 0));
  refused({a1, {announce_bytes(2), {dup.get()}}, {frame({1, 2}, good), {}}}, ErrorCode::InvalidArgument,
          "buffers 1 and 2 are one buffer");
}

// A receiver checks a frame message's layout once while frames repeat it byte for byte over buffers of
// the same sizes (the steady state); a frame that repeats it over other buffers is checked against them.
TEST(ChannelMalformed, ARepeatedFrameMessageIsCheckedAgainstItsOwnBuffers) {
  Memfds f;
  UniqueFd small = sealed_memfd(512);
  const Msg a1{announce_bytes(1), {f.a.get()}};
  const Msg a2{announce_bytes(2), {f.b.get()}};
  const Msg a3{announce_bytes(3, 512), {small.get()}};
  auto frame = [](std::uint64_t seq, std::vector<std::uint32_t> ids) {
    return detail::encode_frame(detail::ChannelMessage::Frame, seq, 0, ids,
                                detail::encode_frame_message(valid_frame_header(64, 32)));
  };
  // NV12 64x32: plane 1 (1024 B) in the frame's second buffer, which for the third frame holds 512 B.
  refused({a1, a2, a3, {frame(0, {1, 2}), {}}, {frame(1, {1, 2}), {}}, {frame(2, {1, 3}), {}}}, ErrorCode::OutOfRange,
          "frame sequence 2: plane 1 ends at 1024 B (offset 0 B, row stride 64 B), past the end of buffer 3 (512 B)");
  refused({a1, a2, a3, {frame(0, {1, 2}), {}}, {frame(1, {3, 2}), {}}}, ErrorCode::OutOfRange,
          "frame sequence 1: plane 0 ends at 2048 B (offset 0 B, row stride 64 B), past the end of buffer 3 (512 B)");
  // The same memfd under a second id, named with the first after a good frame.
  UniqueFd dup(::fcntl(f.a.get(), F_DUPFD_CLOEXEC, 0));
  refused({a1, a2, {announce_bytes(4), {dup.get()}}, {frame(0, {1, 2}), {}}, {frame(1, {1, 4}), {}}},
          ErrorCode::InvalidArgument, "frame sequence 1: buffers 1 and 4 are one buffer");
  // Good frames over each pair of same-sized buffers all arrive, each with its own buffers.
  Pair p;
  auto receiver = channel::Receiver::create(std::move(p.b));
  ASSERT_OK(receiver);
  UniqueFd c = sealed_memfd(kBytes);
  for (const Msg& m : {a1, a2, Msg{announce_bytes(5), {c.get()}}, Msg{frame(0, {1, 2}), {}}, Msg{frame(1, {5, 1}), {}},
                       Msg{frame(2, {2, 5}), {}}})
    ASSERT_OK(ipc::send_fds(p.a.get(), m.bytes, ArrayRef<int>(m.fds.data(), m.fds.size())));
  const std::uint32_t expected[3][2] = {{1, 2}, {5, 1}, {2, 5}};
  const int files[3] = {f.a.get(), f.b.get(), c.get()};
  auto key_of = [&](std::uint32_t id) {
    struct stat st{};
    ::fstat(files[id == 1 ? 0 : id == 2 ? 1 : 2], &st);
    return st.st_ino;
  };
  for (const auto& ids : expected) {
    auto d = receiver->receive(1s);
    ASSERT_OK(d);
    ASSERT_FALSE(d->frame.is_empty());
    ASSERT_EQ(d->frame.buffer_count(), 2u);
    for (std::size_t b = 0; b < 2; ++b) {
      auto buffer = d->frame.buffer(b);
      ASSERT_OK(buffer);
      auto fd = buffer->export_fd();
      ASSERT_OK(fd);
      struct stat st{};
      ASSERT_EQ(::fstat(fd->get(), &st), 0);
      EXPECT_EQ(st.st_ino, key_of(ids[b])) << "frame buffer " << b << " is buffer " << ids[b];
    }
    EXPECT_EQ(d->frame.layout().planes[1].offset_bytes, 0u);
  }
}

TEST(ChannelMalformed, RetireAndReleaseAreChecked) {
  Memfds f;
  const Msg announce{announce_bytes(1), {f.a.get()}};
  const std::uint32_t one[] = {1};
  const std::uint32_t nine[] = {9};
  refused({{detail::encode_retire(nine), {}}}, ErrorCode::InvalidArgument, "retire of buffer 9, which was never announced");
  refused({announce, {tensor_frame(1, 0), {}}, {detail::encode_retire(one), {}}}, ErrorCode::InvalidArgument,
          "retire of buffer 1 while 1 frame of it is still held here");
  auto m = detail::encode_retire(one);
  poke<std::uint16_t>(m, 10, 0);
  refused({{m, {}}}, ErrorCode::InvalidArgument, "retire of 0 ids: 1..64");
  m = detail::encode_retire(one);
  m.push_back(std::byte{0});
  refused({{m, {}}}, ErrorCode::InvalidArgument, "retire of 1 ids in 21 B, it has exactly 20 B");
  const std::uint32_t zero[] = {0};
  refused({{detail::encode_retire(zero), {}}}, ErrorCode::InvalidArgument, "retire entry 0: buffer id 0");
  std::vector<std::byte> release(detail::kMaxReleaseMessageBytes);
  const detail::ReleaseEntry e{1, 0, {}, 0};
  release.resize(detail::encode_release(std::span(&e, 1), release));
  refused({{release, {}}}, ErrorCode::InvalidArgument, "a release arrived at the receiver");
}

TEST(ChannelMalformed, HelloAndEndOfStreamAreChecked) {
  const auto sender_hello = detail::encode_hello(detail::ChannelRole::Sender, 32);
  refused({{detail::encode_hello(detail::ChannelRole::Receiver, 32), {}}}, ErrorCode::InvalidArgument,
          "a hello from another receiver");
  refused({{sender_hello, {}}, {sender_hello, {}}}, ErrorCode::InvalidArgument, "a second hello from the sender");
  auto m = sender_hello;
  poke<std::uint32_t>(m, 16, 3);
  refused({{m, {}}}, ErrorCode::InvalidArgument, "hello role 3: 1 (sender) or 2 (receiver)");
  m = sender_hello;
  poke<std::uint32_t>(m, 24, 0);
  refused({{m, {}}}, ErrorCode::InvalidArgument, "hello max_buffers 0: 1..1024");
  m = sender_hello;
  poke<std::uint16_t>(m, 10, 1);
  refused({{m, {}}}, ErrorCode::InvalidArgument, "hello count 1: must be 0");
  // Capability bits this end does not know and the reserved fields are ignored: a later release may set them.
  m = sender_hello;
  poke<std::uint32_t>(m, 20, 0xFFFFFFFFu);
  poke<std::uint64_t>(m, 40, 7);
  refused({{m, {}}, {detail::encode_retire(std::vector<std::uint32_t>{9}), {}}}, ErrorCode::InvalidArgument,
          "retire of buffer 9, which was never announced");
  auto end = detail::encode_end_of_stream(0);
  end.push_back(std::byte{0});
  refused({{end, {}}}, ErrorCode::InvalidArgument, "end of stream of 25 B, it has exactly 24 B");
  end = detail::encode_end_of_stream(0);
  poke<std::uint16_t>(end, 10, 2);
  refused({{end, {}}}, ErrorCode::InvalidArgument, "end of stream count 2: must be 0");
}

// A refuse (docs/WIRE.md, type 8): a well-formed one closes the channel with its reason's error and its text;
// a malformed one is refused as any other message.
TEST(ChannelMalformed, RefuseIsCheckedAndGivesItsReason) {
  using detail::RefuseReason;
  refused({{detail::encode_refuse(RefuseReason::NotAllowed, "uid 5 (gid 5) is not allowed"), {}}},
          ErrorCode::PermissionDenied, "the sender refused this end and closed the channel: uid 5 (gid 5) is not allowed");
  refused({{detail::encode_refuse(RefuseReason::ReceiverLimit, "64 receivers already"), {}}}, ErrorCode::OutOfRange,
          "the sender refused this end and closed the channel: 64 receivers already");
  auto m = detail::encode_refuse(RefuseReason::NotAllowed, "later");
  poke<std::uint32_t>(m, 16, 9);  // a reason of a later release: refused, with its text
  refused({{m, {}}}, ErrorCode::Unavailable, "refused this end and closed the channel: later");
  refused({{detail::encode_refuse(RefuseReason::NotAllowed, ""), {}}}, ErrorCode::PermissionDenied, "(no reason given)");
  // After the sender's hello too (any time): the same.
  refused({{detail::encode_hello(detail::ChannelRole::Sender, 32), {}},
           {detail::encode_refuse(RefuseReason::ReceiverLimit, "full"), {}}},
          ErrorCode::OutOfRange, "closed the channel: full");
  // Malformed.
  m = detail::encode_refuse(RefuseReason::NotAllowed, "abc");
  poke<std::uint16_t>(m, 10, 1);
  refused({{m, {}}}, ErrorCode::InvalidArgument, "refuse count 1: must be 0");
  m = detail::encode_refuse(RefuseReason::NotAllowed, "abc");
  poke<std::uint32_t>(m, 20, 4);
  refused({{m, {}}}, ErrorCode::InvalidArgument, "refuse of 27 B, with text_bytes 4 it has exactly 28 B");
  m = detail::encode_refuse(RefuseReason::NotAllowed, "abc");
  poke<std::uint32_t>(m, 20, 257);
  m.resize(24 + 257, std::byte{'a'});
  refused({{m, {}}}, ErrorCode::InvalidArgument, "refuse text_bytes 257, over the limit of 256");
  m = detail::encode_refuse(RefuseReason::NotAllowed, "abc");
  poke<std::uint8_t>(m, 25, 0x07);
  refused({{m, {}}}, ErrorCode::InvalidArgument, "refuse text byte 1 is 0x07: the text is printable ASCII");
  poke<std::uint8_t>(m, 25, 0xC3);
  refused({{m, {}}}, ErrorCode::InvalidArgument, "refuse text byte 1 is 0xc3");
  m = detail::encode_refuse(RefuseReason::NotAllowed, "abc");
  poke<std::uint8_t>(m, 9, 1);
  refused({{m, {}}}, ErrorCode::InvalidArgument, "refuse with fence_count 1: only frames and releases carry fences");
  m = detail::encode_refuse(RefuseReason::NotAllowed, "abc");
  poke<std::uint16_t>(m, 6, 16);
  refused({{m, {}}}, ErrorCode::InvalidArgument, "refuse header_bytes 16, expected 24");
  Memfds f;
  refused({{detail::encode_refuse(RefuseReason::NotAllowed, "abc"), {f.a.get()}}}, ErrorCode::InvalidArgument,
          "1 fd arrived with a message of type 8");
}

// What an end sends: the text cut to 256 bytes, every byte outside printable ASCII as '?'; the errors carry
// errno EACCES and EUSERS, so that a caller (edgetensorsrc) tells a refusal from other errors of the codes.
TEST(ChannelMalformed, RefuseTextIsPrintableAndBounded) {
  std::string text(300, 'x');
  text[0] = '\n';
  text[1] = '\x1b';
  text[2] = static_cast<char>(0xE9);
  const auto m = detail::encode_refuse(detail::RefuseReason::NotAllowed, text);
  ASSERT_EQ(m.size(), 24u + detail::kMaxRefuseTextBytes);
  auto r = detail::decode_refuse(m);
  ASSERT_OK(r);
  EXPECT_EQ(r->reason, 1u);
  EXPECT_EQ(r->text, "???" + std::string(253, 'x'));
  const Error denied = detail::refusal_error(*r, "sender");
  EXPECT_EQ(denied.code(), ErrorCode::PermissionDenied);
  EXPECT_EQ(denied.sys_errno(), EACCES);
  const Error limit = detail::refusal_error({2, "x"}, "sender");
  EXPECT_EQ(limit.code(), ErrorCode::OutOfRange);
  EXPECT_EQ(limit.sys_errno(), EUSERS);
  EXPECT_EQ(detail::refusal_error({0, "x"}, "receiver").sys_errno(), 0);
  EXPECT_EQ(detail::refusal_error({0, "x"}, "receiver").message(), "the receiver refused this end and closed the channel: x");
}

// Fences with the capability agreed (the raw sender's hello carries it): the count, the mask and the fds
// must agree, each fd must be a sync_file; without the capability any fence bit is refused.
TEST(ChannelMalformed, AcquireFencesAreChecked) {
  Memfds f;
  const Msg hello{detail::encode_hello(detail::ChannelRole::Sender, 32), {}};
  const Msg announce{announce_bytes(1), {f.a.get()}};
  auto fenced = [](std::uint8_t mask, std::uint8_t count) {
    auto m = tensor_frame(1, 0);
    poke<std::uint8_t>(m, 52, mask);
    poke<std::uint8_t>(m, 9, count);
    return m;
  };
  // An fd that is not a sync_file (a memfd), closed with the message.
  refused({hello, announce, {fenced(1, 1), {f.b.get()}}}, ErrorCode::InvalidArgument,
          "the acquire fence of tensor frame sequence 0 buffer 0: Fence::adopt: fd ");
  refused({hello, announce, {fenced(1, 1), {f.b.get()}}}, ErrorCode::InvalidArgument, "is not a sync_file");
  refused({hello, announce, {fenced(0, 1), {f.b.get()}}}, ErrorCode::InvalidArgument,
          "tensor frame sequence 0: fence_count 1 does not match fence_mask 0x0 (0 fences)");
  refused({hello, announce, {fenced(1, 0), {}}}, ErrorCode::InvalidArgument,
          "tensor frame sequence 0: fence_count 0 does not match fence_mask 0x1 (1 fence)");
  refused({hello, announce, {fenced(1, 1), {}}}, ErrorCode::InvalidArgument,
          "tensor frame sequence 0 with fence_count 1 carried 0 fds");
  refused({hello, announce, {fenced(2, 1), {f.b.get()}}}, ErrorCode::InvalidArgument,
          "tensor frame sequence 0: fence_mask 0x2 has a bit past its 1 buffer");
  // Without the capability: no hello, or a hello without the bit.
  refused({announce, {fenced(1, 1), {f.b.get()}}}, ErrorCode::InvalidArgument,
          "tensor frame sequence 0 with fence_count 1, fence_mask 0x1: no fence capability was agreed in the hellos");
  refused({{detail::encode_hello(detail::ChannelRole::Sender, 32, 0), {}}, announce, {fenced(1, 1), {f.b.get()}}},
          ErrorCode::InvalidArgument, "no fence capability was agreed in the hellos");
  auto m = detail::encode_retire(std::vector<std::uint32_t>{1});
  poke<std::uint8_t>(m, 9, 1);
  refused({hello, announce, {m, {f.b.get()}}}, ErrorCode::InvalidArgument,
          "retire with fence_count 1: only frames and releases carry fences");
}

TEST(ChannelMalformed, RetiredBufferIsUnknownAfterwards) {
  Memfds f;
  const std::uint32_t one[] = {1};
  refused({{announce_bytes(1), {f.a.get()}}, {detail::encode_retire(one), {}}, {tensor_frame(1, 0), {}}},
          ErrorCode::InvalidArgument, "names buffer 1, which was never announced (or was retired)");
}

// ---- the sender against a broken receiver ---------------------------------------------------------

// A Sender on one end with one frame out (buffer 1, sequence 0); `reply` comes back from the raw end.
// The sender must close (its next send names `needle`) and drop the frame; the raw end reads the end.
void sender_refuses(const std::vector<std::byte>& reply, std::vector<int> fds, const std::string& needle,
                    bool hello = false) {
  const int fds_before = et_test::open_fd_count();
  {
    Pair p;
    auto sender = channel::Sender::create(std::move(p.a), {.name = "s"});
    ASSERT_OK(sender);
    auto t = TensorDyn::allocate({64}, DType::U8, et_test::mem(MemoryKind::Shm));
    ASSERT_OK(t);
    ASSERT_OK(sender->send(*t));
    if (hello) ASSERT_OK(ipc::send_fds(p.b.get(), detail::encode_hello(detail::ChannelRole::Receiver, 32)));
    ASSERT_OK(ipc::send_fds(p.b.get(), reply, ArrayRef<int>(fds.data(), fds.size())));
    const auto deadline = std::chrono::steady_clock::now() + 2s;
    while (sender->status() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
    EXPECT_ERROR(sender->status(), ErrorCode::FailedPrecondition, needle);
    EXPECT_ERROR(sender->send(*t), ErrorCode::FailedPrecondition, needle);
    (void)sender->drain(2s);  // the references dropped by the closing are gone
    EXPECT_EQ(sender->stats().frames_out, 0u);
    std::vector<std::byte> buf(detail::kMaxChannelMessageBytes);
    ssize_t n;
    while ((n = ::recv(p.b.get(), buf.data(), buf.size(), MSG_DONTWAIT)) > 0) {
    }
    EXPECT_EQ(n, 0) << "the raw end reads the end of the channel";
  }
  EXPECT_EQ(et_test::open_fd_count(), fds_before);
}

std::vector<std::byte> release_of(std::uint32_t id, std::uint64_t seq, std::uint8_t flags = 0) {
  std::vector<std::byte> out(detail::kMaxReleaseMessageBytes);
  const detail::ReleaseEntry e{id, flags, {}, seq};
  out.resize(detail::encode_release(std::span(&e, 1), out));
  return out;
}

TEST(ChannelMalformed, SenderRefusesABrokenReceiver) {
  sender_refuses(release_of(2, 0), {}, "the receiver released buffer 2 of sequence 0, which is not out");
  sender_refuses(release_of(1, 1), {}, "the receiver released buffer 1 of sequence 1, which is not out");
  auto twice = release_of(1, 0);
  auto two = twice;
  two.insert(two.end(), twice.begin() + 16, twice.end());
  poke<std::uint16_t>(two, 10, 2);
  sender_refuses(two, {}, "the receiver released buffer 1 of sequence 0, which is not out");
  sender_refuses(release_of(1, 0, 1), {}, "with flags 0x1: no fence capability was agreed");
  auto m = release_of(1, 0);
  m.pop_back();
  sender_refuses(m, {}, "release of 1 entries in 31 B, it has exactly 32 B");
  m = release_of(1, 0);
  poke<std::uint16_t>(m, 10, 0);
  sender_refuses(m, {}, "release of 0 entries: 1..64");
  UniqueFd memfd = sealed_memfd(kBytes);
  sender_refuses(release_of(1, 0), {memfd.get()}, "a release with 0 fenced entries carried 1 fd");
  sender_refuses(announce_bytes(1), {}, "a announce where a release was expected");
  sender_refuses(std::vector<std::byte>(3), {}, "3 B received");
  // A version-1 receiver's release (edgetensor 0.4, 0.5) is refused, naming both versions.
  m = release_of(1, 0);
  poke<std::uint16_t>(m, 4, 1);
  sender_refuses(m, {}, "channel version 1 (an edgetensor 0.4 or 0.5 peer); this end speaks version 2");
  sender_refuses(detail::encode_hello(detail::ChannelRole::Sender, 4), {}, "both ends of the channel are senders");
  // A receiver's policy request (hello capability bit 1) out of range.
  auto hello = detail::encode_hello(detail::ChannelRole::Receiver, 4,
                                    detail::kOwnCapabilities, detail::PolicyRequest{channel::ReceiverPolicy::Drop, 2});
  poke<std::uint32_t>(hello, 28, 5);
  sender_refuses(hello, {}, "hello policy 5: 0 (block) or 1 (drop)");
  hello = detail::encode_hello(detail::ChannelRole::Receiver, 4, detail::kOwnCapabilities, detail::PolicyRequest{channel::ReceiverPolicy::Drop, 2});
  poke<std::uint64_t>(hello, 32, (std::uint64_t{1} << 20) + 1);
  sender_refuses(hello, {}, "hello max_frames_out 1048577: 0..1048576");
  sender_refuses(detail::encode_end_of_stream(0), {}, "a end of stream where a release was expected");
  // A listening receiver's end that will not serve this sender says why (docs/WIRE.md, refuse).
  sender_refuses(detail::encode_refuse(detail::RefuseReason::NotAllowed, "uid 7 is not allowed"), {},
                 "the receiver refused this end and closed the channel: uid 7 is not allowed");
  sender_refuses(detail::encode_refuse(detail::RefuseReason::NotAllowed, "x"), {memfd.get()},
                 "1 fd arrived with a refuse, which carries none");
  m = detail::encode_refuse(detail::RefuseReason::NotAllowed, "x");
  m.pop_back();
  sender_refuses(m, {}, "refuse of 24 B, with text_bytes 1 it has exactly 25 B");
}

// Release fences with the capability agreed (the raw receiver's hello carries it).
TEST(ChannelMalformed, SenderChecksReleaseFences) {
  UniqueFd memfd = sealed_memfd(kBytes);
  sender_refuses(release_of(1, 0, 1), {memfd.get()},
                 "the release fence of buffer 1 sequence 0 (entry 0): Fence::adopt: fd ", true);
  sender_refuses(release_of(1, 0, 1), {memfd.get()}, "is not a sync_file", true);
  sender_refuses(release_of(1, 0, 1), {}, "a release with 1 fenced entry carried 0 fds", true);
  auto m = release_of(1, 0);
  poke<std::uint8_t>(m, 9, 1);
  sender_refuses(m, {memfd.get()}, "release with fence_count 1 but 0 entries flagged with a fence", true);
  sender_refuses(release_of(1, 0, 2), {}, "with flags 0x2: only bit 0 (a release fence) is defined", true);
  m = release_of(1, 0);
  poke<std::uint8_t>(m, 9, 1);
  sender_refuses(m, {memfd.get()}, "release with fence_count 1: no fence capability was agreed", false);
  sender_refuses(detail::encode_hello(detail::ChannelRole::Receiver, 32), {memfd.get()},
                 "1 fd arrived with the receiver's hello, which carries none", false);
}

}  // namespace
