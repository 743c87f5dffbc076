// SPDX-License-Identifier: Apache-2.0
// ipc::send_frame / ipc::receive_frame (src/ipc/ipc_frame.cpp; docs/WIRE.md, "The frame message"):
// frames of one and several buffers round trip; every malformed message, fd count, fd kind and short
// buffer is refused naming what is wrong, with every fd closed.
#include <edgetensor/edgetensor.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "ipc/ipc_wire.h"
#include "support/nv12.h"
#include "support/test_support.h"
#include "unit/ipc/ipc_wire_support.h"

using namespace edgetensor;
using et_test::nv12_layout;
using et_test::open_fd_count;
using et_test::ipc_wire::Pair;
using et_test::ipc_wire::sealed_memfd;
using et_test::ipc_wire::send_bytes;
using et_test::ipc_wire::valid_frame_header;

namespace {

std::vector<std::byte> plane_bytes(const FrameReadMap& m, std::size_t i) {
  auto s = m.plane_bytes(i);
  return {s.begin(), s.end()};
}

void send_frame_header(int sock, const detail::FrameWireHeader& h, std::initializer_list<int> fds) {
  send_bytes(sock, detail::encode_frame_message(h), fds);
}

}  // namespace

TEST(IpcFrame, PlanesInTwoBuffersRoundTrip) {
  const int fds = open_fd_count();
  {
    // Y alone in one memfd, UV 128 B into another (a producer's own header before it).
    UniqueFd y = sealed_memfd(64 * 48, F_SEAL_SHRINK | F_SEAL_GROW, 0x10);
    UniqueFd uv = sealed_memfd(128 + 64 * 24, F_SEAL_SHRINK | F_SEAL_GROW, 0x80);
    const int planes[] = {y.get(), uv.get()};
    auto f = Frame::import_planes_dup(planes, nv12_layout(64, 48, 64, 128));
    ASSERT_OK(f);
    const Colorimetry colour{ColorPrimaries::Bt709, TransferFunction::Bt709, YcbcrMatrix::Bt709, ColorRange::Limited};
    f->set_colorimetry(colour);
    Pair p;
    ASSERT_OK(ipc::send_frame(p.a.get(), *f));
    auto r = ipc::receive_frame(p.b.get());
    ASSERT_OK(r);
    EXPECT_EQ(r->layout(), f->layout());
    EXPECT_EQ(r->colorimetry(), colour);
    EXPECT_EQ(r->buffer_count(), 2u);
    EXPECT_EQ(r->plane_buffer(0), 0u);
    EXPECT_EQ(r->plane_buffer(1), 1u);
    for (std::size_t b = 0; b < 2; ++b) {
      auto got = r->buffer(b);
      auto want = f->buffer(b);
      ASSERT_OK(got);
      ASSERT_OK(want);
      EXPECT_TRUE(got->same_buffer(*want)) << b;
      EXPECT_EQ(got->buffer_bytes(), want->buffer_bytes());
    }
    auto gm = r->map_read();
    auto wm = f->map_read();
    ASSERT_OK(gm);
    ASSERT_OK(wm);
    EXPECT_EQ(plane_bytes(*gm, 0), plane_bytes(*wm, 0));
    EXPECT_EQ(plane_bytes(*gm, 1), plane_bytes(*wm, 1));
    EXPECT_EQ(plane_bytes(*gm, 1).front(), std::byte{0x80});
    auto uvv = r->plane(1);
    ASSERT_OK(uvv);
    EXPECT_EQ(uvv->colorimetry(), colour);
  }
  EXPECT_EQ(open_fd_count(), fds);
}

TEST(IpcFrame, OneBufferFrameRoundTripsWithOneFd) {
  auto layout = ImageLayout::make(33, 17, PixelFormat::I420, {.row_bytes = 16});
  ASSERT_OK(layout);
  auto f = Frame::allocate(*layout, {.memory = MemoryKind::Shm});
  ASSERT_OK(f);
  {
    auto m = f->map_write();
    ASSERT_OK(m);
    for (std::size_t i = 0; i < 3; ++i) std::memset(m->plane_bytes(i).data(), 0x20 + static_cast<int>(i), m->plane_bytes(i).size());
  }
  Pair p;
  ASSERT_OK(ipc::send_frame(p.a.get(), *f));
  auto r = ipc::receive_frame(p.b.get());
  ASSERT_OK(r);
  EXPECT_EQ(r->layout(), *layout);
  EXPECT_EQ(r->buffer_count(), 1u);
  auto m = r->map_read();
  ASSERT_OK(m);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(m->plane_bytes(i)[0], static_cast<std::byte>(0x20 + i)) << i;

  // A non-linear modifier: the layout travels; CPU access stays refused at the receiver.
  auto tiled_layout = nv12_layout(64, 32, 64, 64 * 32);
  tiled_layout.modifier = 0x0100000000000001ULL;  // I915_FORMAT_MOD_X_TILED (drm_fourcc.h)
  UniqueFd fd = sealed_memfd(64 * 48);
  const int planes[] = {fd.get(), fd.get()};
  auto tiled = Frame::import_planes_dup(planes, tiled_layout);
  ASSERT_OK(tiled);
  ASSERT_OK(ipc::send_frame(p.a.get(), *tiled));
  auto rt = ipc::receive_frame(p.b.get());
  ASSERT_OK(rt);
  EXPECT_EQ(rt->layout().modifier, tiled_layout.modifier);
  EXPECT_EQ(rt->buffer_count(), 1u);
  EXPECT_ERROR(rt->map_read(), ErrorCode::Unsupported, "is not LINEAR");
}

TEST(IpcFrame, SendRefusesEmptyFramesUntrustedBuffersAndStreams) {
  Pair p;
  EXPECT_ERROR(ipc::send_frame(p.a.get(), Frame{}), ErrorCode::FailedPrecondition, "ipc::send_frame: the frame is empty");
  auto layout = ImageLayout::make(16, 16, PixelFormat::Nv12);
  ASSERT_OK(layout);
  auto heap = Frame::allocate(*layout, {.memory = MemoryKind::Heap});
  ASSERT_OK(heap);
  EXPECT_ERROR(ipc::send_frame(p.a.get(), *heap), ErrorCode::Unsupported,
               "ipc::send_frame: buffer 0 of 1: heap tensors");
  UniqueFd plain = sealed_memfd(16 * 24, 0);
  const int planes[] = {plain.get(), plain.get()};
  auto unsealed = Frame::import_planes_dup(planes, *layout, {.allow_shrinkable = true});
  ASSERT_OK(unsealed);
  auto refused = ipc::send_frame(p.a.get(), *unsealed);
  EXPECT_ERROR(refused, ErrorCode::Unsupported, "ipc::send_frame: buffer 0 of 1: ");
  EXPECT_ERROR(refused, ErrorCode::Unsupported, "it allows sealing: seal it with fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK)");
  auto shm = Frame::allocate(*layout, {.memory = MemoryKind::Shm});
  ASSERT_OK(shm);
  Pair stream(SOCK_STREAM);
  EXPECT_ERROR(ipc::send_frame(stream.a.get(), *shm), ErrorCode::InvalidArgument,
               "is SOCK_STREAM; a frame message needs a socket that keeps message boundaries");
  EXPECT_ERROR(ipc::receive_frame(stream.b.get()), ErrorCode::InvalidArgument, "is SOCK_STREAM");
}

// A tensor message read by receive_frame and a frame message read by receive: each named, fds closed.
TEST(IpcFrame, TensorAndFrameMessagesAreNotMixedUp) {
  const int fds = open_fd_count();
  {
    Pair p;
    auto t = TensorDyn::allocate({64}, DType::U8, {.memory = MemoryKind::Shm});
    ASSERT_OK(t);
    ASSERT_OK(ipc::send(p.a.get(), *t));
    EXPECT_ERROR(ipc::receive_frame(p.b.get()), ErrorCode::InvalidArgument,
                 "malformed frame message: a tensor message arrived (magic 0x31545445, version 2): ipc::receive reads "
                 "it");
    UniqueFd y = sealed_memfd(64 * 48);
    UniqueFd uv = sealed_memfd(64 * 24);
    const int planes[] = {y.get(), uv.get()};
    auto f = Frame::import_planes_dup(planes, nv12_layout(64, 48, 64));
    ASSERT_OK(f);
    ASSERT_OK(ipc::send_frame(p.a.get(), *f));
    EXPECT_ERROR(ipc::receive(p.b.get()), ErrorCode::InvalidArgument,
                 "malformed tensor message: a frame message arrived (magic 0x31465445, version 1): ipc::receive_frame "
                 "reads it");
    // Both sockets still in step.
    ASSERT_OK(ipc::send_frame(p.a.get(), *f));
    ASSERT_OK(ipc::receive_frame(p.b.get()));
  }
  EXPECT_EQ(open_fd_count(), fds);
}

TEST(IpcFrame, MalformedFrameMessagesAreRefusedNamingTheFieldAndLeakNoFd) {
  using H = detail::FrameWireHeader;
  struct Case {
    const char* what;
    void (*mutate)(H&);
    const char* needle;
  };
  const Case cases[] = {
      {"magic", [](H& h) { h.magic = 0xdeadbeef; }, "magic 0xdeadbeef, expected 0x31465445"},
      {"byte order", [](H& h) { h.magic = __builtin_bswap32(detail::kFrameWireMagic); },
       "the sender's byte order is the other one"},
      {"version", [](H& h) { h.version = 2; }, "frame message version 2; this receiver speaks version 1"},
      {"header_bytes", [](H& h) { h.header_bytes = 96; }, "header_bytes 96, expected 104"},
      {"no format", [](H& h) { h.pixel_format = 0; }, "pixel format 0: a frame needs a known PixelFormat (1..28)"},
      {"format out of range", [](H& h) { h.pixel_format = 29; },
       "pixel format 29: a frame needs a known PixelFormat (1..28)"},
      {"plane_count", [](H& h) { h.plane_count = 3; }, "plane_count 3, a nv12 frame has 2"},
      {"no buffers", [](H& h) { h.buffer_count = 0; }, "buffer_count 0: a nv12 frame has 1..2 buffers"},
      {"more buffers than planes", [](H& h) { h.buffer_count = 3; }, "buffer_count 3: a nv12 frame has 1..2 buffers"},
      {"plane in no buffer", [](H& h) { h.plane_buffer[1] = 2; }, "plane_buffer[1] = 2: the frame has 2 buffers (0..1)"},
      {"an unused plane's buffer", [](H& h) { h.plane_buffer[3] = 1; }, "plane_buffer[3] = 1 past nv12's 2 planes: must be 0"},
      {"a buffer with no plane", [](H& h) { h.plane_buffer[1] = 0; }, "buffer 1 of 2 holds no plane"},
      {"memory kind", [](H& h) { h.memory[1] = 1; }, "memory[1] = 1 (heap); only shm (2) and dmabuf (3) travel"},
      {"an unused buffer's memory", [](H& h) { h.memory[2] = 2; }, "memory[2] = 2 past the 2 buffers: must be 0"},
      {"primaries", [](H& h) { h.colorimetry[0] = 9; }, "colorimetry.primaries 9 is not a ColorPrimaries (0..8)"},
      {"range", [](H& h) { h.colorimetry[3] = 250; }, "colorimetry.range 250 is not a ColorRange (0..2)"},
      {"an unused plane's layout", [](H& h) { h.planes[2][1] = 64; },
       "planes[2] = {offset 0, row stride 64} past nv12's 2 planes: must be 0"},
      {"stride below the row bytes", [](H& h) { h.planes[1][1] = 32; },
       "layout: nv12 64x48 plane 1 (UV): row stride 32 B is below the plane's row bytes 64 B"},
      {"zero height", [](H& h) { h.image_height = 0; }, "layout: nv12 64x0: width and height must be non-zero"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    const int fds = open_fd_count();
    {
      Pair p;
      UniqueFd y = sealed_memfd(64 * 48);
      UniqueFd uv = sealed_memfd(64 * 24);
      auto h = valid_frame_header(64, 48);
      c.mutate(h);
      send_frame_header(p.a.get(), h, {y.get(), uv.get()});
      EXPECT_ERROR(ipc::receive_frame(p.b.get()), ErrorCode::InvalidArgument, c.needle);
    }
    EXPECT_EQ(open_fd_count(), fds);
  }
  // A message of the wrong length.
  Pair p;
  UniqueFd y = sealed_memfd(64 * 48);
  auto bytes = detail::encode_frame_message(valid_frame_header(64, 48));
  bytes.push_back(std::byte{0});
  send_bytes(p.a.get(), bytes, {y.get(), y.get()});
  EXPECT_ERROR(ipc::receive_frame(p.b.get()), ErrorCode::InvalidArgument,
               "105 B received, a version-1 frame message has 104 B");
}

TEST(IpcFrame, FdCountsKindsAndBufferSizesAreCheckedAndEveryFdClosed) {
  // Probed first: where recvmsg drops fds silently (QEMU user mode) the dropped ones stay open.
  const bool ctrunc = et_test::recvmsg_reports_ctrunc();
  const int fds = open_fd_count();
  {
    Pair p;
    UniqueFd y = sealed_memfd(64 * 48);
    UniqueFd uv = sealed_memfd(64 * 24);
    const auto h = valid_frame_header(64, 48);
    send_frame_header(p.a.get(), h, {});
    EXPECT_ERROR(ipc::receive_frame(p.b.get()), ErrorCode::InvalidArgument,
                 "0 fds arrived, its buffer_count is 2 (one fd per buffer)");
    send_frame_header(p.a.get(), h, {y.get()});
    EXPECT_ERROR(ipc::receive_frame(p.b.get()), ErrorCode::InvalidArgument, "1 fds arrived, its buffer_count is 2");
    send_frame_header(p.a.get(), h, {y.get(), uv.get(), uv.get()});
    EXPECT_ERROR(ipc::receive_frame(p.b.get()), ErrorCode::InvalidArgument, "3 fds arrived, its buffer_count is 2");
    if (ctrunc) {  // more than a frame can have: refused by receive_fds, all closed
      send_frame_header(p.a.get(), h, {y.get(), uv.get(), y.get(), uv.get(), y.get()});
      auto five = ipc::receive_frame(p.b.get());
      ASSERT_FALSE(five.has_value());
      EXPECT_EQ(five.error().code(), ErrorCode::OutOfRange);
      EXPECT_TRUE(five.error().message().find("more than the 4 allowed") != std::string::npos ||
                  five.error().message().find("MSG_CTRUNC") != std::string::npos)
          << five.error().message();
    }
    // The second buffer one byte short of the UV plane's tight end (64 x 24).
    UniqueFd short_uv = sealed_memfd(64 * 24 - 1);
    send_frame_header(p.a.get(), h, {y.get(), short_uv.get()});
    EXPECT_ERROR(ipc::receive_frame(p.b.get()), ErrorCode::OutOfRange,
                 "frame message plane 1 ends at 1536 B (offset 0 B, row stride 64 B), past the end of buffer 1 (");
    UniqueFd unsealed = sealed_memfd(64 * 24, 0);
    send_frame_header(p.a.get(), h, {y.get(), unsealed.get()});
    auto open = ipc::receive_frame(p.b.get());
    EXPECT_ERROR(open, ErrorCode::InvalidArgument, "frame message buffer 1: received ");
    EXPECT_ERROR(open, ErrorCode::InvalidArgument, "is not sealed against shrinking (F_SEAL_SHRINK)");
    int pipefd[2];
    ASSERT_EQ(::pipe2(pipefd, O_CLOEXEC), 0);
    UniqueFd r(pipefd[0]), w(pipefd[1]);
    send_frame_header(p.a.get(), h, {r.get(), uv.get()});
    EXPECT_ERROR(ipc::receive_frame(p.b.get()), ErrorCode::InvalidArgument, "frame message buffer 0: ");
    auto dmabuf = h;
    dmabuf.memory[1] = static_cast<std::uint8_t>(MemoryKind::DmaBuf);
    send_frame_header(p.a.get(), dmabuf, {y.get(), uv.get()});
    EXPECT_ERROR(ipc::receive_frame(p.b.get()), ErrorCode::InvalidArgument,
                 "frame message buffer 1 says dmabuf but the fd is tmpfs/memfd");
    // Two fds of one buffer, big enough for both planes: a sender sends each buffer once.
    UniqueFd both = sealed_memfd(64 * 48);
    send_frame_header(p.a.get(), h, {both.get(), both.get()});
    EXPECT_ERROR(ipc::receive_frame(p.b.get()), ErrorCode::InvalidArgument,
                 "malformed frame message: buffers 0 and 1 are one buffer (");
    send_frame_header(p.a.get(), h, {y.get(), uv.get()});
    auto big = ipc::receive_frame(p.b.get(), {.max_buffer_bytes = 2048});
    EXPECT_ERROR(big, ErrorCode::OutOfRange, "frame message buffer 0: received ");
    EXPECT_ERROR(big, ErrorCode::OutOfRange, "of 3072 B exceeds the receiver's limit of 2048 B");
    send_frame_header(p.a.get(), h, {y.get(), uv.get()});
    ASSERT_OK(ipc::receive_frame(p.b.get()));  // and the same message, valid, is taken
    p.a.reset();
    EXPECT_ERROR(ipc::receive_frame(p.b.get()), ErrorCode::Unavailable, "peer closed");
  }
  EXPECT_EQ(open_fd_count(), fds);
}
