// SPDX-License-Identifier: Apache-2.0
// Frame: planes in separate buffers (V4L2 multi-planar, libcamera), the same buffer passed
// once per plane, maps, plane views and per-plane export.
#include <edgetensor/edgetensor.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "support/nv12.h"
#include "support/test_support.h"

using namespace edgetensor;
using et_test::nv12_layout;
using et_test::open_fd_count;

namespace {

UniqueFd filled_memfd(std::size_t size, std::uint8_t fill) {
  UniqueFd fd(::memfd_create("et-frame", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  EXPECT_TRUE(fd.is_valid());
  EXPECT_EQ(::ftruncate(fd.get(), static_cast<off_t>(size)), 0);
  std::vector<std::uint8_t> buf(size, fill);
  EXPECT_EQ(::pwrite(fd.get(), buf.data(), size, 0), static_cast<ssize_t>(size));
  EXPECT_EQ(::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
  return fd;
}

}  // namespace

TEST(Frame, PlanesInSeparateBuffers) {
  const int fds_before = open_fd_count();
  {
    UniqueFd y = filled_memfd(64 * 48, 0x10);
    UniqueFd uv = filled_memfd(64 * 24, 0x80);
    const int planes[] = {y.get(), uv.get()};
    auto f = Frame::import_planes_dup(planes, nv12_layout(64, 48, 64));
    ASSERT_OK(f);
    EXPECT_EQ(f->plane_count(), 2u);
    EXPECT_EQ(f->buffer_count(), 2u);
    EXPECT_EQ(f->plane_buffer(1), 1u);
    auto m = f->map_read();
    ASSERT_OK(m);
    EXPECT_EQ(m->plane_bytes(0).size(), 64u * 48u);
    EXPECT_EQ(m->plane_bytes(1).size(), 64u * 24u);
    EXPECT_EQ(m->plane_bytes(0)[0], std::byte{0x10});
    EXPECT_EQ(m->plane_bytes(1)[64 * 24 - 1], std::byte{0x80});
    EXPECT_TRUE(m->plane_bytes(2).empty());
    auto uvv = f->plane(1);
    ASSERT_OK(uvv);
    EXPECT_EQ(std::vector<std::size_t>(uvv->shape().begin(), uvv->shape().end()),
              (std::vector<std::size_t>{24, 32, 2}));
    auto out = f->export_plane_fds();
    ASSERT_OK(out);
    ASSERT_EQ(out->size(), 2u);
    // What export gives, import takes back.
    const int again[] = {(*out)[0].get(), (*out)[1].get()};
    auto g = Frame::import_planes_dup(again, f->layout());
    ASSERT_OK(g);
    auto b0 = g->buffer(0);
    auto a0 = f->buffer(0);
    ASSERT_OK(b0);
    ASSERT_OK(a0);
    EXPECT_TRUE(b0->same_buffer(*a0));
  }
  EXPECT_EQ(open_fd_count(), fds_before);
}

// libcamera passes one fd per plane even when the planes share one buffer: it is imported and mapped once.
TEST(Frame, OneBufferPassedOncePerPlaneIsImportedOnce) {
  const int fds_before = open_fd_count();
  {
    UniqueFd buf = filled_memfd(64 * 48 + 64 * 24, 0x33);
    UniqueFd dup(::dup(buf.get()));  // another fd of the same buffer
    const ImageLayout l = nv12_layout(64, 48, 64, 64 * 48);
    const int planes[] = {buf.get(), dup.get()};
    auto f = Frame::import_planes_dup(planes, l);
    ASSERT_OK(f);
    EXPECT_EQ(f->buffer_count(), 1u);
    EXPECT_EQ(f->plane_buffer(1), 0u);
    const int maps_before = et_test::mapping_count();
    auto m = f->map_read();
    ASSERT_OK(m);
    EXPECT_EQ(m->plane_bytes(1).data(), m->plane_bytes(0).data() + 64 * 48);
    if (et_test::kExactMappingCount) {
      EXPECT_EQ(et_test::mapping_count(), maps_before + 1) << "one mapping for the one buffer";
    }
  }
  EXPECT_EQ(open_fd_count(), fds_before);
}

TEST(Frame, BadImportsAreNamed) {
  UniqueFd y = filled_memfd(64 * 48, 0);
  UniqueFd small = filled_memfd(64 * 24 - 1, 0);
  const int one[] = {y.get()};
  EXPECT_ERROR(Frame::import_planes_dup(one, nv12_layout(64, 48, 64)), ErrorCode::InvalidArgument, "1 fds for a nv12 image of 2 planes");
  const int planes[] = {y.get(), small.get()};
  auto r = Frame::import_planes_dup(planes, nv12_layout(64, 48, 64));
  EXPECT_ERROR(r, ErrorCode::OutOfRange, "nv12 plane 1 (UV) ends at 1536 B (offset 0 B, 24 rows of stride 64 B, last row 64 B) but its fd");
  EXPECT_NE(r.error().message().find("holds " + std::to_string(64 * 24 - 1) + " B"), std::string::npos) << r.error().message();
  const int bad[] = {y.get(), -1};
  EXPECT_ERROR(Frame::import_planes_dup(bad, nv12_layout(64, 48, 64)), ErrorCode::InvalidArgument, "plane 1 (fd -1)");
  ImportOptions o;
  o.offset_bytes = 16;
  const int two[] = {y.get(), y.get()};
  EXPECT_ERROR(Frame::import_planes_dup(two, nv12_layout(64, 48, 64), o), ErrorCode::InvalidArgument, "offset_bytes 16");
  Frame empty;
  EXPECT_ERROR(empty.map_read(), ErrorCode::FailedPrecondition, "empty");
  EXPECT_ERROR(empty.plane(0), ErrorCode::FailedPrecondition, "empty");
}

TEST(Frame, FromTensorCountsOffsetsFromTheBuffer) {
  auto whole = TensorDyn::allocate({4096}, DType::U8, et_test::mem(MemoryKind::Shm));
  ASSERT_OK(whole);
  auto part = whole->view(1024, {64 * 6});
  ASSERT_OK(part);
  auto l = ImageLayout::make(16, 16, PixelFormat::Nv12);  // rows 16 B, UV at 256
  ASSERT_OK(l);
  ASSERT_OK(part->set_image_layout(*l));
  auto f = Frame::from_tensor(*part);
  ASSERT_OK(f);
  EXPECT_EQ(f->layout().planes[0].offset_bytes, 1024u);
  EXPECT_EQ(f->layout().planes[1].offset_bytes, 1024u + 256u);
  auto b = f->buffer(0);
  ASSERT_OK(b);
  EXPECT_EQ(b->element_count(), 4096u);
  auto p = f->plane(1);
  auto q = part->plane(1);
  ASSERT_OK(p);
  ASSERT_OK(q);
  EXPECT_EQ(p->offset_bytes(), q->offset_bytes());
  EXPECT_ERROR(Frame::from_tensor(*whole), ErrorCode::InvalidArgument, "no image layout");
  auto a = Frame::allocate(*l);
  ASSERT_OK(a);
  EXPECT_EQ(a->buffer_count(), 1u);
}

// A 16-bit plane at an odd offset of its buffer (adversarial trial: accepted through tensors) is refused
// by import_planes_dup too: a frame's offsets count from the buffer's start.
TEST(Frame, SixteenBitPlaneAtAnOddOffsetIsRefused) {
  UniqueFd buf = filled_memfd(256, 0);
  auto l = ImageLayout::make(4, 4, PixelFormat::P010);
  ASSERT_OK(l);
  const int planes[] = {buf.get(), buf.get()};
  ASSERT_OK(Frame::import_planes_dup(planes, *l));
  l->planes[1].offset_bytes += 1;
  EXPECT_ERROR(Frame::import_planes_dup(planes, *l), ErrorCode::InvalidArgument,
               "plane 1 (UV): offset 33 B and row stride 8 B must be multiples of its 2-byte samples");
}

// Planes that share one buffer must not overlap, however they arrive (fresh-user trial: was accepted).
TEST(Frame, OverlappingPlanesInOneBufferAreRefused) {
  const int fds_before = open_fd_count();
  {
    UniqueFd buf = filled_memfd(1280 * 720 * 2, 0);
    ImageLayout l = nv12_layout(1280, 720, 1280, 1280 * 100);  // UV inside the Y plane
    const int planes[] = {buf.get(), buf.get()};
    EXPECT_ERROR(Frame::import_planes_dup(planes, l), ErrorCode::InvalidArgument,
                 "plane 0 (Y) [0, 921600) and plane 1 (UV) [128000, 588800) overlap in buffer 0");
    UniqueFd other = filled_memfd(1280 * 360, 0);
    const int separate[] = {buf.get(), other.get()};
    l.planes[1].offset_bytes = 0;  // the same offsets in two buffers are fine
    ASSERT_OK(Frame::import_planes_dup(separate, l));
  }
  EXPECT_EQ(open_fd_count(), fds_before);
}

// Adversarial trial: I420 4x4 with U rows at 16 and 20 and V rows at 18 and 22 (2 bytes each, stride 4)
// share no byte, but were refused as overlapping spans by validate and both imports; GStreamer accepts
// them. Accepted now, through Frame::import_planes_dup and set_image_layout, and each plane is written
// through its own view without touching the other's bytes.
TEST(Frame, InterleavedPlaneRowsThatShareNoByteAreAcceptedAndKeptApart) {
  const int fds_before = open_fd_count();
  {
    ImageLayout l;
    l.format = PixelFormat::I420;
    l.width = 4;
    l.height = 4;
    l.planes[0] = {0, 4};
    l.planes[1] = {16, 4};
    l.planes[2] = {18, 4};
    UniqueFd buf = filled_memfd(24, 0);
    const int planes[] = {buf.get(), buf.get(), buf.get()};
    auto f = Frame::import_planes_dup(planes, l);
    ASSERT_OK(f);
    EXPECT_EQ(f->buffer_count(), 1u);
    const std::uint8_t fill[] = {0x01, 0x11, 0x22};
    for (std::size_t p = 0; p < 3; ++p) {
      auto v = f->plane(p);
      ASSERT_OK(v);
      auto m = v->map_write();
      ASSERT_OK(m);
      for (std::size_t r = 0; r < v->shape()[0]; ++r)
        for (std::size_t c = 0; c < v->shape()[1]; ++c)
          m->bytes()[r * static_cast<std::size_t>(v->strides()[0]) + c] = std::byte{fill[p]};
    }
    std::vector<std::uint8_t> bytes(24);
    ASSERT_EQ(::pread(buf.get(), bytes.data(), bytes.size(), 0), 24);
    std::vector<std::uint8_t> expected(16, 0x01);
    for (std::uint8_t b : {0x11, 0x11, 0x22, 0x22, 0x11, 0x11, 0x22, 0x22}) expected.push_back(b);
    EXPECT_EQ(bytes, expected);
    // The same layout attached to a tensor (ImageLayout::validate(extent)) and the frame made of it.
    auto t = TensorDyn::allocate({24}, DType::U8, et_test::mem(MemoryKind::Shm));
    ASSERT_OK(t);
    ASSERT_OK(t->set_image_layout(l));
    ASSERT_OK(Frame::from_tensor(*t));
    // A V plane one byte closer shares bytes with U: refused, both planes and rows named.
    l.planes[2].offset_bytes = 17;
    EXPECT_ERROR(Frame::import_planes_dup(planes, l), ErrorCode::InvalidArgument,
                 "plane 1 (U) [16, 22) and plane 2 (V) [17, 23) overlap in buffer 0 (row 0 [16, 18) and row 0 [17, "
                 "19))");
    EXPECT_ERROR(t->set_image_layout(l), ErrorCode::InvalidArgument, "plane 1 (U) [16, 22) and plane 2 (V) [17, 23) overlap");
  }
  EXPECT_EQ(open_fd_count(), fds_before);
}
