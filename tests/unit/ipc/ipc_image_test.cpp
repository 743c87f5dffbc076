// SPDX-License-Identifier: Apache-2.0
// ipc::send / ipc::receive of image and quantization metadata (tensor message version 2, docs/WIRE.md):
// layouts, plane views, colorimetry, per-tensor and per-axis quantization; version 1 refused.
#include <edgetensor/edgetensor.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "ipc/ipc_wire.h"
#include "support/test_support.h"
#include "unit/ipc/ipc_wire_support.h"

using namespace edgetensor;
using et_test::open_fd_count;
using et_test::ipc_wire::Pair;
using et_test::ipc_wire::sealed_memfd;
using et_test::ipc_wire::send_bytes;
using et_test::ipc_wire::send_raw;
using et_test::ipc_wire::valid_header;

namespace {

// Fills a tensor's extent with a pattern of the byte index.
void fill(const TensorDyn& t) {
  auto m = t.map_write();
  ASSERT_OK(m);
  for (std::size_t i = 0; i < m->extent_bytes(); ++i) m->bytes()[i] = static_cast<std::byte>((i * 7u + i / 251u) & 0xffu);
}

// The bytes of a view, element by element in C order, read through its map and strides.
std::vector<std::byte> bytes_of(const TensorDyn& t) {
  std::vector<std::byte> out;
  auto m = t.map_read();
  EXPECT_TRUE(m.has_value()) << m.error().to_string();
  if (!m) return out;
  const std::size_t elem = dtype_size(t.dtype());
  std::vector<std::size_t> index(t.rank(), 0);
  for (std::size_t n = 0; n < t.element_count(); ++n) {
    std::int64_t at = 0;
    for (std::size_t d = 0; d < t.rank(); ++d) at += static_cast<std::int64_t>(index[d]) * t.strides()[d];
    for (std::size_t b = 0; b < elem; ++b) out.push_back(m->bytes()[static_cast<std::size_t>(at) + b]);
    for (std::size_t d = t.rank(); d-- > 0;) {
      if (++index[d] < t.shape()[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

template <class T>
std::vector<T> vec(std::span<const T> s) {
  return {s.begin(), s.end()};
}

Result<TensorDyn> round_trip(const TensorDyn& t) {
  Pair p;
  ET_TRY(ipc::send(p.a.get(), t));
  return ipc::receive(p.b.get());
}

}  // namespace

TEST(IpcTensor, Nv12LayoutRoundTripsWithColorimetryAndPlaneViewsReadTheSameBytes) {
  const int fds = open_fd_count();
  {
    // Decoder-style padding: rows of 64 B, height aligned to 16 (UV starts at 64 x 64).
    auto t = TensorDyn::allocate_image(60, 50, PixelFormat::Nv12, {.row_bytes = 64, .height = 16},
                                       {.memory = MemoryKind::Shm, .name = "nv12"});
    ASSERT_OK(t);
    fill(*t);
    const Colorimetry colour{ColorPrimaries::Smpte170M, TransferFunction::Bt709, YcbcrMatrix::Bt601,
                             ColorRange::Limited};
    t->set_colorimetry(colour);
    auto r = round_trip(*t);
    ASSERT_OK(r);
    ASSERT_NE(r->image_layout(), nullptr);
    EXPECT_EQ(*r->image_layout(), *t->image_layout());
    EXPECT_EQ(r->image_layout()->planes[1].offset_bytes, 64u * 64u);
    EXPECT_EQ(r->pixel_format(), PixelFormat::Nv12);
    EXPECT_EQ(r->image_plane(), -1);
    EXPECT_EQ(r->colorimetry(), colour);
    EXPECT_EQ(r->quantization().kind(), QuantizationKind::None);
    for (std::size_t i = 0; i < 2; ++i) {
      SCOPED_TRACE(i);
      auto want = t->plane(i);
      auto got = r->plane(i);
      ASSERT_OK(want);
      ASSERT_OK(got);
      EXPECT_EQ(vec(got->shape()), vec(want->shape()));
      EXPECT_EQ(vec(got->strides()), vec(want->strides()));
      EXPECT_EQ(got->colorimetry(), colour);
      EXPECT_EQ(bytes_of(*got), bytes_of(*want));
    }
  }
  EXPECT_EQ(open_fd_count(), fds);
}

TEST(IpcTensor, PlaneViewsTravelWithTheirFormatAndPlaneIndex) {
  auto t = TensorDyn::allocate_image(32, 16, PixelFormat::Nv12, {}, {.memory = MemoryKind::Shm});
  ASSERT_OK(t);
  fill(*t);
  const Colorimetry colour{ColorPrimaries::Bt2020, TransferFunction::Smpte2084, YcbcrMatrix::Bt2020, ColorRange::Full};
  t->set_colorimetry(colour);
  auto uv = t->plane(1);
  ASSERT_OK(uv);
  auto r = round_trip(*uv);
  ASSERT_OK(r);
  EXPECT_EQ(r->image_layout(), nullptr);
  EXPECT_EQ(r->pixel_format(), PixelFormat::Nv12);
  EXPECT_EQ(r->image_plane(), 1);
  EXPECT_EQ(r->colorimetry(), colour);
  EXPECT_EQ(vec(r->shape()), (std::vector<std::size_t>{8, 16, 2}));
  EXPECT_EQ(r->offset_bytes(), uv->offset_bytes());
  EXPECT_EQ(bytes_of(*r), bytes_of(*uv));

  // A whole-image view with no layout (PlanarRgb's CHW image_view): the format, plane -1.
  auto rgb = TensorDyn::allocate_image(8, 4, PixelFormat::PlanarRgb, {}, {.memory = MemoryKind::Shm});
  ASSERT_OK(rgb);
  auto chw = rgb->image_view();
  ASSERT_OK(chw);
  auto rc = round_trip(*chw);
  ASSERT_OK(rc);
  EXPECT_EQ(rc->image_layout(), nullptr);
  EXPECT_EQ(rc->pixel_format(), PixelFormat::PlanarRgb);
  EXPECT_EQ(rc->image_plane(), -1);
  EXPECT_EQ(vec(rc->shape()), (std::vector<std::size_t>{3, 4, 8}));
}

TEST(IpcTensor, PerTensorAndPerAxisQuantizationRoundTrip) {
  auto t = TensorDyn::allocate({3, 5}, DType::I8, {.memory = MemoryKind::Shm});
  ASSERT_OK(t);
  const float scales[] = {0.5f, 0.125f, 3.0f};
  const std::int32_t zero_points[] = {-128, 0, 127};
  auto q = Quantization::per_axis(0, scales, zero_points);
  ASSERT_OK(q);
  ASSERT_OK(t->set_quantization(*q));
  auto r = round_trip(*t);
  ASSERT_OK(r);
  EXPECT_EQ(r->quantization(), *q);
  EXPECT_EQ(r->quantization().kind(), QuantizationKind::PerAxis);
  EXPECT_EQ(r->quantization().axis(), 0u);
  EXPECT_EQ(vec(r->quantization().scales()), (std::vector<float>{0.5f, 0.125f, 3.0f}));
  EXPECT_EQ(vec(r->quantization().zero_points()), (std::vector<std::int32_t>{-128, 0, 127}));

  // A slice along the axis sends its own channels.
  auto rows = t->slice(0, 1, 3);
  ASSERT_OK(rows);
  auto rs = round_trip(*rows);
  ASSERT_OK(rs);
  EXPECT_EQ(vec(rs->quantization().scales()), (std::vector<float>{0.125f, 3.0f}));
  EXPECT_EQ(vec(rs->quantization().zero_points()), (std::vector<std::int32_t>{0, 127}));

  // The largest legal message: kMaxQuantizationChannels channels on the last axis.
  auto wide = TensorDyn::allocate({2, kMaxQuantizationChannels}, DType::U16, {.memory = MemoryKind::Shm});
  ASSERT_OK(wide);
  std::vector<float> many(kMaxQuantizationChannels);
  std::vector<std::int32_t> zeros(kMaxQuantizationChannels);
  for (std::size_t i = 0; i < many.size(); ++i) {
    many[i] = 1.0f + static_cast<float>(i) / 8.0f;
    zeros[i] = static_cast<std::int32_t>(i * 16);
  }
  auto qw = Quantization::per_axis(1, many, zeros);
  ASSERT_OK(qw);
  ASSERT_OK(wide->set_quantization(*qw));
  auto rw = round_trip(*wide);
  ASSERT_OK(rw);
  EXPECT_EQ(rw->quantization(), *qw);

  auto u8 = TensorDyn::allocate({16}, DType::U8, {.memory = MemoryKind::Shm});
  ASSERT_OK(u8);
  auto pt = Quantization::per_tensor(0.0078125f, 128);
  ASSERT_OK(pt);
  ASSERT_OK(u8->set_quantization(*pt));
  auto ru = round_trip(*u8);
  ASSERT_OK(ru);
  EXPECT_EQ(ru->quantization(), *pt);
  EXPECT_EQ(ru->quantization().scales()[0], 0.0078125f);
  EXPECT_EQ(ru->quantization().zero_points()[0], 128);
}

// A non-linear modifier makes the CPU layout opaque, but the layout still travels whole.
TEST(IpcTensor, NonLinearModifierLayoutTravels) {
  auto t = TensorDyn::allocate({64 * 48}, DType::U8, {.memory = MemoryKind::Shm});
  ASSERT_OK(t);
  ImageLayout l{.format = PixelFormat::Nv12, .width = 64, .height = 32, .planes = {{{0, 64}, {64 * 32, 64}}}};
  l.modifier = 0x0100000000000001ULL;  // I915_FORMAT_MOD_X_TILED (drm_fourcc.h)
  ASSERT_OK(t->set_image_layout(l));
  auto r = round_trip(*t);
  ASSERT_OK(r);
  ASSERT_NE(r->image_layout(), nullptr);
  EXPECT_EQ(*r->image_layout(), l);
  EXPECT_ERROR(r->plane(0), ErrorCode::Unsupported, "is not LINEAR");
}

// An edgetensor 0.3 sender writes version 1 (232 B): refused naming both versions, its fd closed, and
// the socket stays in step (the next message is read normally).
TEST(IpcTensor, Version1MessagesAreRefusedNamingBothVersions) {
  const int fds = open_fd_count();
  {
    Pair p;
    auto memfd = sealed_memfd(4096);
    std::vector<std::byte> v1(232);
    const std::uint32_t magic = detail::kWireMagic;
    const std::uint16_t version = 1, header_bytes = 232;
    std::memcpy(v1.data(), &magic, 4);
    std::memcpy(v1.data() + 4, &version, 2);
    std::memcpy(v1.data() + 6, &header_bytes, 2);
    send_bytes(p.a.get(), v1, {memfd.get()});
    send_raw(p.a.get(), valid_header(4096), {memfd.get()});
    EXPECT_ERROR(ipc::receive(p.b.get()), ErrorCode::InvalidArgument,
                 "malformed tensor message: tensor message version 1 from an edgetensor 0.3 (or older) sender; this "
                 "receiver speaks version 2");
    ASSERT_OK(ipc::receive(p.b.get()));
  }
  EXPECT_EQ(open_fd_count(), fds);
}
