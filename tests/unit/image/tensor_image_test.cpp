// SPDX-License-Identifier: Apache-2.0
// TensorDyn's image side: image layouts attached to tensors, plane views and their shapes,
// the decoder and tight-last-row cases, non-linear modifiers, and the metadata rule of image.h.
#include <edgetensor/edgetensor.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "support/nv12.h"
#include "support/test_support.h"

using namespace edgetensor;
using et_test::nv12_layout;

namespace {

std::vector<std::size_t> shape_of(const TensorDyn& t) { return {t.shape().begin(), t.shape().end()}; }
std::vector<std::int64_t> strides_of(const TensorDyn& t) { return {t.strides().begin(), t.strides().end()}; }

// A memfd of `size` bytes, sealed against shrinking (what a careful producer sends).
UniqueFd image_memfd(std::size_t size) {
  UniqueFd fd(::memfd_create("et-image", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  EXPECT_TRUE(fd.is_valid());
  EXPECT_EQ(::ftruncate(fd.get(), static_cast<off_t>(size)), 0);
  EXPECT_EQ(::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
  return fd;
}

void write_bytes(int fd, std::size_t offset, std::size_t count, std::uint8_t value) {
  std::vector<std::uint8_t> buf(count, value);
  ASSERT_EQ(::pwrite(fd, buf.data(), count, static_cast<off_t>(offset)), static_cast<ssize_t>(count));
}

// Every element of a U8 rank-2/3 view, read through its strides from a map of the same tensor.
template <class F>
void for_each_byte(const TensorDyn& v, F f) {
  auto m = v.map_read();
  ASSERT_OK(m);
  const std::byte* base = m->bytes().data();
  const auto s = v.strides();
  const auto n = v.shape();
  const std::size_t inner = v.rank() == 3 ? n[2] : 1;
  for (std::size_t r = 0; r < n[0]; ++r)
    for (std::size_t c = 0; c < n[1]; ++c)
      for (std::size_t k = 0; k < inner; ++k)
        f(static_cast<std::uint8_t>(base[r * s[0] + c * s[1] + (v.rank() == 3 ? k * s[2] : 0)]));
}

}  // namespace

// The decoder case: NV12 1920x1080 whose UV plane starts at 1920 x 1088; the 8 padding rows
// between the planes hold 0xEE, which no plane view may show.
TEST(TensorImage, DecoderPaddingRowsAreNeverInAPlaneView) {
  const std::size_t w = 1920, h = 1080, stride = 1920, uv = 1920 * 1088;
  const std::size_t size = uv + stride * 540;
  UniqueFd fd = image_memfd(size);
  write_bytes(fd.get(), 0, stride * h, 0x10);
  write_bytes(fd.get(), stride * h, uv - stride * h, 0xEE);
  write_bytes(fd.get(), uv, stride * 540, 0x80);
  auto t = TensorDyn::import_image_dup(fd.get(), nv12_layout(w, h, stride, uv));
  ASSERT_OK(t);
  auto y = t->plane(0);
  ASSERT_OK(y);
  EXPECT_EQ(shape_of(*y), (std::vector<std::size_t>{1080, 1920}));
  auto c = t->plane(1);
  ASSERT_OK(c);
  EXPECT_EQ(shape_of(*c), (std::vector<std::size_t>{540, 960, 2}));
  EXPECT_EQ(strides_of(*c), (std::vector<std::int64_t>{1920, 2, 1}));
  std::size_t seen = 0, wrong = 0;
  for_each_byte(*c, [&](std::uint8_t b) { ++seen, wrong += b != 0x80; });
  EXPECT_EQ(seen, 540u * 960u * 2u);
  EXPECT_EQ(wrong, 0u) << "the UV view reached the 0xEE padding rows";
  wrong = 0;
  for_each_byte(*y, [&](std::uint8_t b) { wrong += b != 0x10; });
  EXPECT_EQ(wrong, 0u);
}

// The tight-last-row case: producers do not pad the last row of the last plane.
TEST(TensorImage, TightLastRowIsAcceptedAndOneByteLessIsRefused) {
  const std::size_t stride = 768, uv = 768 * 480;
  const std::size_t tight = 768 * 480 + 768 * 239 + 640;
  const ImageLayout l = nv12_layout(640, 480, stride, uv);
  {
    UniqueFd fd = image_memfd(tight);
    write_bytes(fd.get(), tight - 1, 1, 0x5a);  // the very last UV byte
    auto t = TensorDyn::import_image_dup(fd.get(), l);
    ASSERT_OK(t);
    EXPECT_EQ(t->extent_bytes(), tight);
    auto c = t->plane(1);
    ASSERT_OK(c);
    auto m = c->map_read();
    ASSERT_OK(m);
    EXPECT_EQ(m->extent_bytes(), 768u * 239u + 640u);
    EXPECT_EQ(m->bytes()[m->extent_bytes() - 1], std::byte{0x5a});
  }
  UniqueFd short_fd = image_memfd(tight - 1);
  auto t = TensorDyn::import_image_dup(short_fd.get(), l);
  EXPECT_ERROR(t, ErrorCode::OutOfRange, std::to_string(tight));
  EXPECT_NE(t.error().message().find(std::to_string(tight - 1)), std::string::npos) << t.error().message();
  // The plane that does not fit is named (the UV plane: the Y plane still fits).
  EXPECT_NE(t.error().message().find("plane 1"), std::string::npos) << t.error().message();
  EXPECT_EQ(t.error().message().find("plane 0"), std::string::npos) << t.error().message();
  // An image at an offset: the offset is said too.
  UniqueFd fd = image_memfd(tight + 64);
  ImportOptions at;
  at.offset_bytes = 128;
  auto o = TensorDyn::import_image_dup(fd.get(), l, at);
  EXPECT_ERROR(o, ErrorCode::OutOfRange, "plane 1");
  EXPECT_NE(o.error().message().find("offset 128 B"), std::string::npos) << o.error().message();
}

TEST(TensorImage, PlaneViewsHaveTheNaturalShapes) {
  struct Case {
    PixelFormat format;
    std::size_t plane;
    DType dtype;
    std::vector<std::size_t> shape;
  };
  const std::uint32_t w = 9, h = 5;  // odd: chroma rounds up
  const std::vector<Case> cases = {
      {PixelFormat::Nv12, 0, DType::U8, {5, 9}},        {PixelFormat::Nv12, 1, DType::U8, {3, 5, 2}},
      {PixelFormat::I420, 1, DType::U8, {3, 5}},        {PixelFormat::I420, 2, DType::U8, {3, 5}},
      {PixelFormat::Yuyv, 0, DType::U8, {5, 5, 4}},     {PixelFormat::Rgb, 0, DType::U8, {5, 9, 3}},
      {PixelFormat::Bgra, 0, DType::U8, {5, 9, 4}},     {PixelFormat::PlanarRgb, 2, DType::U8, {5, 9}},
      {PixelFormat::P010, 0, DType::U16, {5, 9}},       {PixelFormat::P010, 1, DType::U16, {3, 5, 2}},
      {PixelFormat::Y16, 0, DType::U16, {5, 9}},        {PixelFormat::Nv24, 1, DType::U8, {5, 9, 2}},
      {PixelFormat::Yuv422p, 1, DType::U8, {5, 5}},     {PixelFormat::BayerRggb8, 0, DType::U8, {5, 9}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(pixel_format_name(c.format)) + " plane " + std::to_string(c.plane));
    auto t = TensorDyn::allocate_image(w, h, c.format, {.row_bytes = 64});
    ASSERT_OK(t);
    ASSERT_NE(t->image_layout(), nullptr);
    auto p = t->plane(c.plane);
    ASSERT_OK(p);
    EXPECT_EQ(p->dtype(), c.dtype);
    EXPECT_EQ(shape_of(*p), c.shape);
    EXPECT_EQ(p->strides()[0], static_cast<std::int64_t>(t->image_layout()->planes[c.plane].row_stride_bytes));
    EXPECT_EQ(p->pixel_format(), c.format);
    EXPECT_EQ(p->image_plane(), static_cast<int>(c.plane));
    EXPECT_EQ(p->image_layout(), nullptr);
  }
}

TEST(TensorImage, PlanarRgbImageViewIsChw) {
  auto t = TensorDyn::allocate_image(7, 3, PixelFormat::PlanarRgb, {.row_bytes = 16});
  ASSERT_OK(t);
  auto v = t->image_view();
  ASSERT_OK(v);
  EXPECT_EQ(shape_of(*v), (std::vector<std::size_t>{3, 3, 7}));
  EXPECT_EQ(strides_of(*v), (std::vector<std::int64_t>{48, 16, 1}));
  EXPECT_EQ(v->image_plane(), -1);
  auto rgb = TensorDyn::allocate_image(7, 3, PixelFormat::Rgb);
  ASSERT_OK(rgb);
  auto hwc = rgb->image_view();
  ASSERT_OK(hwc);
  EXPECT_EQ(shape_of(*hwc), (std::vector<std::size_t>{3, 7, 3}));
  auto yuv = TensorDyn::allocate_image(8, 8, PixelFormat::Nv12);
  ASSERT_OK(yuv);
  EXPECT_ERROR(yuv->image_view(), ErrorCode::FailedPrecondition, "take plane(i)");
}

TEST(TensorImage, LayoutThatDoesNotFitTheTensorIsRefusedAndNothingChanges) {
  auto t = TensorDyn::allocate({768 * 480 + 768 * 240}, DType::U8);
  ASSERT_OK(t);
  EXPECT_ERROR(t->set_image_layout(nv12_layout(640, 480, 100, 768 * 480)), ErrorCode::InvalidArgument, "100");
  EXPECT_ERROR(t->set_image_layout(nv12_layout(640, 480, 768, 768 * 480 + 768 * 240)), ErrorCode::OutOfRange, "plane 1");
  EXPECT_EQ(t->image_layout(), nullptr);
  EXPECT_EQ(t->pixel_format(), PixelFormat::Unknown);
  ASSERT_OK(t->set_image_layout(nv12_layout(640, 480, 768, 768 * 480)));
  EXPECT_EQ(t->pixel_format(), PixelFormat::Nv12);
  EXPECT_ERROR(TensorDyn{}.set_image_layout(nv12_layout(2, 2, 2, 4)), ErrorCode::FailedPrecondition, "no storage");
  auto plain = TensorDyn::allocate({16}, DType::U8);
  ASSERT_OK(plain);
  EXPECT_ERROR(plain->plane(0), ErrorCode::FailedPrecondition, "no image layout");
  EXPECT_ERROR(t->plane(2), ErrorCode::OutOfRange, "2 planes");
}

TEST(TensorImage, NonLinearModifierRefusesPlaneViewsButExports) {
  ImageLayout l = nv12_layout(64, 64, 64, 64 * 64);
  l.modifier = kDrmFormatModInvalid;  // implicit: not LINEAR
  auto t = TensorDyn::allocate_image(l, et_test::mem(MemoryKind::Shm));
  ASSERT_OK(t);
  EXPECT_ERROR(t->plane(0), ErrorCode::Unsupported, "0x00ffffffffffffff");
  EXPECT_ERROR(t->map_read(), ErrorCode::Unsupported, "not LINEAR");  // (fresh-user trial: was allowed)
  EXPECT_ERROR(t->map_write(), ErrorCode::Unsupported, "not LINEAR");
  auto f = Frame::from_tensor(*t);
  ASSERT_OK(f);
  EXPECT_ERROR(f->map_read(), ErrorCode::Unsupported, "not LINEAR");
  auto fd = t->export_fd();
  ASSERT_OK(fd);
  auto fds = f->export_plane_fds();
  ASSERT_OK(fds);
  EXPECT_EQ(fds->size(), 2u);
}

TEST(TensorImage, ImportRefusesStridesInOptions) {
  UniqueFd fd = image_memfd(4096);
  ImportOptions o;
  o.strides_bytes = {1};
  EXPECT_ERROR(TensorDyn::import_image_dup(fd.get(), nv12_layout(8, 8, 8, 64), o), ErrorCode::InvalidArgument, "strides_bytes");
}

// ---- The metadata rule (image.h preamble) ---------------------------------------------------------

TEST(MetadataRule, LayoutFollowsTheSameBytesOnly) {
  auto t = TensorDyn::allocate_image(4, 2, PixelFormat::Rgb);  // 24 bytes, [24] u8
  ASSERT_OK(t);
  t->set_colorimetry({ColorPrimaries::Bt709, TransferFunction::Bt709, YcbcrMatrix::Bt709, ColorRange::Limited});
  const ImageLayout* layout = t->image_layout();
  ASSERT_NE(layout, nullptr);
  auto r = t->reshape({2, 4, 3});
  ASSERT_OK(r);
  EXPECT_EQ(r->image_layout(), nullptr) << "a reshape that changes the geometry drops the layout";
  EXPECT_EQ(r->pixel_format(), PixelFormat::Rgb) << "the format follows the bytes";
  EXPECT_EQ(r->image_plane(), -1);
  auto same_shape = t->reshape({24});
  ASSERT_OK(same_shape);
  EXPECT_EQ(same_shape->image_layout(), layout) << "same geometry: shared, not copied";
  auto same = t->view(0, {24});
  ASSERT_OK(same);
  EXPECT_EQ(same->image_layout(), layout);
  auto part = t->view(0, {12});
  ASSERT_OK(part);
  EXPECT_EQ(part->image_layout(), nullptr);
  EXPECT_EQ(part->pixel_format(), PixelFormat::Unknown);
  EXPECT_EQ(part->colorimetry(), t->colorimetry()) << "colorimetry follows the bytes";
  auto b = t->batch(1);
  ASSERT_OK(b);
  EXPECT_EQ(b->image_layout(), nullptr);
  auto s = t->slice(0, 0, 24);  // the whole dimension: same geometry
  ASSERT_OK(s);
  EXPECT_EQ(s->image_layout(), layout);
  auto narrower = t->slice(0, 0, 23);
  ASSERT_OK(narrower);
  EXPECT_EQ(narrower->image_layout(), nullptr);
  auto p = t->plane(0);
  ASSERT_OK(p);
  auto pv = p->batch(1);  // a row of a plane view is still that plane's samples
  ASSERT_OK(pv);
  EXPECT_EQ(pv->pixel_format(), PixelFormat::Rgb);
  EXPECT_EQ(pv->image_plane(), 0);
  EXPECT_EQ(pv->colorimetry(), t->colorimetry());
  t->clear_image_layout();
  EXPECT_EQ(t->image_layout(), nullptr);
  EXPECT_EQ(same_shape->image_layout(), layout) << "other tensors keep their shared layout";
}

TEST(MetadataRule, ViewsOfAnImageViewKeepTheFormat) {
  auto t = TensorDyn::allocate_image(4, 2, PixelFormat::PlanarRgb);
  ASSERT_OK(t);
  auto chw = t->image_view();
  ASSERT_OK(chw);
  ASSERT_EQ(chw->rank(), 3u);
  for (auto v : {chw->batch(0), chw->slice(1, 0, 1), chw->reshape({3, 8}), chw->view(0, {4})}) {
    ASSERT_OK(v);
    EXPECT_EQ(v->pixel_format(), PixelFormat::PlanarRgb);
    EXPECT_EQ(v->image_plane(), -1);
    EXPECT_EQ(v->image_layout(), nullptr);
  }
}

TEST(MetadataRule, PlanarImageQuantizedPerChannelGivesEachPlaneItsChannel) {
  auto t = TensorDyn::allocate({3, 2, 4}, DType::U8);
  ASSERT_OK(t);
  ImageLayout l{.format = PixelFormat::PlanarRgb, .width = 4, .height = 2, .planes = {{{0, 4}, {8, 4}, {16, 4}}}};
  ASSERT_OK(t->set_image_layout(l));
  const std::vector<float> scales = {0.1f, 0.2f, 0.3f};
  const std::vector<std::int32_t> zps = {1, 2, 3};
  auto q = Quantization::per_axis(0, scales, zps);
  ASSERT_OK(q);
  ASSERT_OK(t->set_quantization(*q));
  auto g = t->plane(1);
  ASSERT_OK(g);
  EXPECT_EQ(g->pixel_format(), PixelFormat::PlanarRgb);
  EXPECT_EQ(g->image_plane(), 1);
  ASSERT_EQ(g->quantization().kind(), QuantizationKind::PerTensor);
  EXPECT_EQ(g->quantization().scales()[0], 0.2f);
  EXPECT_EQ(g->quantization().zero_points()[0], 2);
  auto chw = t->image_view();  // the tensor's own geometry: per-axis kept
  ASSERT_OK(chw);
  EXPECT_EQ(chw->quantization(), *q);
  auto nchw = chw->unsqueeze(0);
  ASSERT_OK(nchw);
  EXPECT_EQ(nchw->pixel_format(), PixelFormat::PlanarRgb);
  EXPECT_EQ(nchw->quantization().axis(), 1u);
  auto n2 = t->unsqueeze(0);  // from the image tensor itself: layout dropped, format kept (same bytes)
  ASSERT_OK(n2);
  EXPECT_EQ(n2->image_layout(), nullptr);
  EXPECT_EQ(n2->pixel_format(), PixelFormat::PlanarRgb);
  // Planes with padding between them are not the tensor's batch(i): per-axis dropped there.
  auto padded = TensorDyn::allocate({3, 16}, DType::U8);
  ASSERT_OK(padded);
  ImageLayout lp{.format = PixelFormat::PlanarRgb, .width = 2, .height = 2, .planes = {{{0, 4}, {16, 4}, {32, 4}}}};
  ASSERT_OK(padded->set_image_layout(lp));
  ASSERT_OK(padded->set_quantization(*q));
  auto r = padded->plane(1);
  ASSERT_OK(r);
  EXPECT_EQ(r->quantization().kind(), QuantizationKind::None);
}

TEST(TensorImage, Int8TensorsHoldImagesAndGiveInt8PlaneViews) {
  auto t = TensorDyn::allocate({2, 4, 3}, DType::I8);
  ASSERT_OK(t);
  auto l = ImageLayout::make(4, 2, PixelFormat::Rgb);
  ASSERT_OK(l);
  ASSERT_OK(t->set_image_layout(*l));
  auto q = Quantization::per_tensor(0.5f, -3);
  ASSERT_OK(q);
  ASSERT_OK(t->set_quantization(*q));
  auto v = t->image_view();
  ASSERT_OK(v);
  EXPECT_EQ(v->dtype(), DType::I8);
  EXPECT_EQ(v->quantization(), *q);
  EXPECT_EQ(v->pixel_format(), PixelFormat::Rgb);
}

TEST(TensorImage, StridedTensorsCannotTakeALayout) {
  auto t = TensorDyn::allocate({48 * 384}, DType::U8);
  ASSERT_OK(t);
  auto v = t->view(0, {48, 64, 3}, {384, 3, 1});
  ASSERT_OK(v);
  ImageLayout l{.format = PixelFormat::Rgb, .width = 64, .height = 48, .planes = {{{0, 192}}}};
  auto r = v->set_image_layout(l);
  EXPECT_ERROR(r, ErrorCode::FailedPrecondition, "not contiguous");
  EXPECT_NE(r.error().message().find("[384, 3, 1]"), std::string::npos) << r.error().message();
}

TEST(TensorImage, TiledImagesGiveNoPartialViews) {
  auto t = TensorDyn::allocate({64 * 48}, DType::U8);
  ASSERT_OK(t);
  ImageLayout l{.format = PixelFormat::Nv12, .width = 64, .height = 32, .planes = {{{0, 64}, {64 * 32, 64}}}};
  l.modifier = 0x0100000000000001ULL;  // I915_FORMAT_MOD_X_TILED (drm_fourcc.h)
  ASSERT_OK(t->set_image_layout(l));
  EXPECT_ERROR(t->view(0, {16}), ErrorCode::Unsupported, "view: the tensor holds a nv12 image with DRM format modifier 0x0100000000000001");
  EXPECT_ERROR(t->batch(0), ErrorCode::Unsupported, "batch:");
  EXPECT_ERROR(t->slice(0, 0, 16), ErrorCode::Unsupported, "slice:");
  EXPECT_ERROR(t->reshape({48, 64}), ErrorCode::Unsupported, "reshape:");
  EXPECT_ERROR(t->unsqueeze(0), ErrorCode::Unsupported, "unsqueeze:");
  auto whole = t->view(0, {64 * 48});  // the whole tensor keeps the layout (and stays opaque)
  ASSERT_OK(whole);
  EXPECT_EQ(whole->image_layout()->modifier, l.modifier);
  EXPECT_ERROR(whole->map_read(), ErrorCode::Unsupported, "not LINEAR");
}

TEST(ImageLayoutValidate, SixteenBitPlanesStartOnASample) {
  auto p010 = ImageLayout::make(64, 8, PixelFormat::P010);
  ASSERT_OK(p010);
  ImageLayout odd = *p010;
  odd.planes[0].row_stride_bytes += 1;
  odd.planes[1].offset_bytes = odd.planes[0].row_stride_bytes * 8;
  odd.planes[1].row_stride_bytes += 2;
  EXPECT_ERROR(odd.validate(), ErrorCode::InvalidArgument, "plane 0 (Y): offset 0 B and row stride 129 B must be multiples of its 2-byte samples");
  ImageLayout shifted = *p010;
  shifted.planes[1].offset_bytes += 1;
  EXPECT_ERROR(shifted.validate(), ErrorCode::InvalidArgument, "plane 1 (UV): offset 1025 B");
}

// Adversarial trial: a P010 or Y16 layout attached or imported at an odd byte offset was accepted, and
// every plane() and image_view() failed afterwards ("offset 1 B is not a multiple of the element size
// 2 B"): the 16-bit check saw only offsets relative to the first element. Now refused up front.
TEST(TensorImage, SixteenBitImageAtAnOddByteOffsetIsRefused) {
  auto p010 = ImageLayout::make(4, 4, PixelFormat::P010);
  ASSERT_OK(p010);
  auto y16 = ImageLayout::make(4, 4, PixelFormat::Y16);
  ASSERT_OK(y16);
  auto grey = ImageLayout::make(4, 4, PixelFormat::Grey);
  ASSERT_OK(grey);
  auto whole = TensorDyn::allocate({256}, DType::U8, et_test::mem(MemoryKind::Shm));
  ASSERT_OK(whole);
  auto odd = whole->view(1, {128});
  ASSERT_OK(odd);
  EXPECT_ERROR(odd->set_image_layout(*p010), ErrorCode::InvalidArgument,
               "set_image_layout: p010 4x4 plane 0 (Y): the image starts at offset 1 B of its buffer, so the plane "
               "(at 0 B in the image) does not start on a multiple of its 2-byte samples");
  EXPECT_ERROR(odd->set_image_layout(*y16), ErrorCode::InvalidArgument, "offset 1 B");
  EXPECT_EQ(odd->image_layout(), nullptr);
  EXPECT_ERROR(Frame::from_tensor(*odd), ErrorCode::InvalidArgument, "no image layout");
  ASSERT_OK(odd->set_image_layout(*grey));  // 8-bit samples start anywhere
  // At an even offset both work, and so do their planes.
  auto even = whole->view(2, {128});
  ASSERT_OK(even);
  ASSERT_OK(even->set_image_layout(*p010));
  ASSERT_OK(even->plane(1));
  auto frame = Frame::from_tensor(*even);
  ASSERT_OK(frame);
  ASSERT_OK(frame->plane(0));
  // import_image_dup at offset_bytes 1, before anything is imported.
  UniqueFd fd = image_memfd(256);
  ImportOptions at1;
  at1.offset_bytes = 1;
  const int fds = et_test::open_fd_count();
  EXPECT_ERROR(TensorDyn::import_image_dup(fd.get(), *p010, at1), ErrorCode::InvalidArgument,
               "at offset_bytes 1: p010 4x4 plane 0 (Y): the image starts at offset 1 B");
  EXPECT_ERROR(TensorDyn::import_image_dup(fd.get(), *y16, at1), ErrorCode::InvalidArgument, "2-byte samples");
  EXPECT_EQ(et_test::open_fd_count(), fds);
  ImportOptions at2;
  at2.offset_bytes = 2;
  auto ok = TensorDyn::import_image_dup(fd.get(), *p010, at2);
  ASSERT_OK(ok);
  ASSERT_OK(ok->plane(1));
  ASSERT_OK(TensorDyn::import_image_dup(fd.get(), *grey, at1));
}

TEST(TensorImage, SetImageLayoutTakesU8OrU16ForSixteenBitFormats) {
  auto f = TensorDyn::allocate({16}, DType::F32);
  ASSERT_OK(f);
  auto grey = ImageLayout::make(8, 8, PixelFormat::Grey);
  ASSERT_OK(grey);
  auto r = f->set_image_layout(*grey);
  EXPECT_ERROR(r, ErrorCode::InvalidArgument, "a tensor of dtype f32 cannot hold a grey image: its tensor must be u8 or i8");
  EXPECT_NE(r.error().message().find("grey"), std::string::npos) << r.error().message();
  EXPECT_EQ(f->image_layout(), nullptr);
  auto w = TensorDyn::allocate({64}, DType::U16);
  ASSERT_OK(w);
  auto y16 = ImageLayout::make(8, 8, PixelFormat::Y16);
  ASSERT_OK(y16);
  ASSERT_OK(w->set_image_layout(*y16));
  auto p = w->plane(0);
  ASSERT_OK(p);
  EXPECT_EQ(p->dtype(), DType::U16);
  EXPECT_ERROR(w->set_image_layout(*grey), ErrorCode::InvalidArgument, "dtype u16 cannot hold a grey image");
}

TEST(MetadataRule, PerTensorQuantizationIsKeptEverywhere) {
  auto t = TensorDyn::allocate({2, 3, 4}, DType::I8);
  ASSERT_OK(t);
  auto q = Quantization::per_tensor(0.5f, -3);
  ASSERT_OK(q);
  ASSERT_OK(t->set_quantization(*q));
  for (auto v : {t->batch(1), t->slice(2, 1, 3), t->view(4, {5}), t->reshape({24})}) {
    ASSERT_OK(v);
    EXPECT_EQ(v->quantization(), *q);
  }
}

TEST(MetadataRule, PerAxisQuantizationIsSlicedAndNeverReallocated) {
  auto t = TensorDyn::allocate({3, 4}, DType::U8);
  ASSERT_OK(t);
  const std::vector<float> scales = {0.1f, 0.2f, 0.3f};
  const std::vector<std::int32_t> zps = {1, 2, 3};
  auto q = Quantization::per_axis(0, scales, zps);
  ASSERT_OK(q);
  ASSERT_OK(t->set_quantization(*q));
  const float* shared = t->quantization().scales().data();
  // batch along the axis: one channel's per-tensor parameters
  auto b = t->batch(2);
  ASSERT_OK(b);
  EXPECT_EQ(b->quantization().kind(), QuantizationKind::PerTensor);
  EXPECT_EQ(b->quantization().scales()[0], 0.3f);
  EXPECT_EQ(b->quantization().zero_points()[0], 3);
  // slice along the axis: a window into the same array
  auto s = t->slice(0, 1, 3);
  ASSERT_OK(s);
  ASSERT_EQ(s->quantization().kind(), QuantizationKind::PerAxis);
  EXPECT_EQ(s->quantization().scales().size(), 2u);
  EXPECT_EQ(s->quantization().scales().data(), shared + 1);
  EXPECT_EQ(s->quantization().zero_points()[0], 2);
  // slice along another dimension, or a view keeping the axis: unchanged
  auto s1 = t->slice(1, 1, 2);
  ASSERT_OK(s1);
  EXPECT_EQ(s1->quantization().scales().data(), shared);
  // reshape that loses the axis: dropped
  auto r = t->reshape({12});
  ASSERT_OK(r);
  EXPECT_EQ(r->quantization().kind(), QuantizationKind::None);
  // quantized along axis 1: batch removes dimension 0, the axis becomes 0
  auto t2 = TensorDyn::allocate({2, 3}, DType::U8);
  ASSERT_OK(t2);
  EXPECT_ERROR(t2->set_quantization(*q), ErrorCode::InvalidArgument, "2");  // axis 0 has 2 entries, not 3
  auto q1 = Quantization::per_axis(1, scales, zps);
  ASSERT_OK(q1);
  EXPECT_ERROR(t->set_quantization(*q1), ErrorCode::InvalidArgument, "4");  // shape[1] is 4, not 3 channels
  ASSERT_OK(t2->set_quantization(*q1));
  auto b2 = t2->batch(1);
  ASSERT_OK(b2);
  EXPECT_EQ(b2->quantization().kind(), QuantizationKind::PerAxis);
  EXPECT_EQ(b2->quantization().axis(), 0u);
  EXPECT_EQ(b2->quantization().scales().data(), t2->quantization().scales().data());
}

TEST(TensorSlice, BoundsAndZeroLength) {
  auto t = TensorDyn::allocate({4, 5}, DType::U16);
  ASSERT_OK(t);
  auto s = t->slice(1, 1, 4);
  ASSERT_OK(s);
  EXPECT_EQ(shape_of(*s), (std::vector<std::size_t>{4, 3}));
  EXPECT_EQ(s->offset_bytes(), 2u);
  EXPECT_EQ(strides_of(*s), (std::vector<std::int64_t>{10, 2}));
  EXPECT_FALSE(s->is_contiguous());
  auto empty = t->slice(0, 4, 4);
  ASSERT_OK(empty);
  EXPECT_EQ(empty->element_count(), 0u);
  EXPECT_ERROR(t->slice(2, 0, 1), ErrorCode::InvalidArgument, "dimension 2 of a rank-2");
  EXPECT_ERROR(t->slice(0, 3, 2), ErrorCode::OutOfRange, "[3, 2)");
  EXPECT_ERROR(t->slice(1, 0, 6), ErrorCode::OutOfRange, "its size is 5");
  EXPECT_ERROR(TensorDyn{}.slice(0, 0, 0), ErrorCode::FailedPrecondition, "no storage");
}

TEST(TensorUnsqueeze, ChwToNchwKeepsPerAxisQuantizationOnItsChannels) {
  auto t = TensorDyn::allocate({3, 2, 4}, DType::U8);
  ASSERT_OK(t);
  const std::vector<float> scales = {0.1f, 0.2f, 0.3f};
  const std::vector<std::int32_t> zps = {1, 2, 3};
  auto q = Quantization::per_axis(0, scales, zps);
  ASSERT_OK(q);
  ASSERT_OK(t->set_quantization(*q));
  auto n = t->unsqueeze(0);
  ASSERT_OK(n);
  ASSERT_EQ(n->rank(), 4u);
  EXPECT_EQ(n->shape()[0], 1u);
  EXPECT_EQ(n->shape()[1], 3u);
  EXPECT_EQ(n->strides()[0], 24);
  EXPECT_TRUE(n->is_contiguous());
  EXPECT_EQ(n->offset_bytes(), t->offset_bytes());
  ASSERT_EQ(n->quantization().kind(), QuantizationKind::PerAxis);
  EXPECT_EQ(n->quantization().axis(), 1u);
  EXPECT_EQ(n->quantization().scales().data(), t->quantization().scales().data()) << "shared, not copied";
  auto last = t->unsqueeze(3);  // after the axis: it stays
  ASSERT_OK(last);
  EXPECT_EQ(last->shape()[3], 1u);
  EXPECT_EQ(last->strides()[3], 1);
  EXPECT_EQ(last->quantization().axis(), 0u);
  // Strided views keep their strides around the new dimension.
  auto s = t->slice(2, 1, 3);
  ASSERT_OK(s);
  auto su = s->unsqueeze(1);
  ASSERT_OK(su);
  EXPECT_EQ(su->strides()[0], 8);
  EXPECT_EQ(su->strides()[1], 8);
  EXPECT_EQ(su->strides()[2], 4);
  EXPECT_EQ(su->strides()[3], 1);
}

TEST(TensorUnsqueeze, BadDimensionsAreNamed) {
  auto t = TensorDyn::allocate({2, 3}, DType::U8);
  ASSERT_OK(t);
  EXPECT_ERROR(t->unsqueeze(3), ErrorCode::InvalidArgument, "dimension 3 of a rank-2 tensor (0 to 2)");
  auto full = TensorDyn::allocate({1, 1, 1, 1, 1, 1, 1, 2}, DType::U8);
  ASSERT_OK(full);
  EXPECT_ERROR(full->unsqueeze(0), ErrorCode::InvalidArgument, "at most 8");
  EXPECT_ERROR(TensorDyn().unsqueeze(0), ErrorCode::FailedPrecondition, "no storage");
  // An image tensor loses its layout (the geometry changes); a plane view keeps its format.
  auto img = TensorDyn::allocate_image(4, 2, PixelFormat::Nv12);
  ASSERT_OK(img);
  auto u = img->unsqueeze(0);
  ASSERT_OK(u);
  EXPECT_EQ(u->image_layout(), nullptr);
  auto y = img->plane(0);
  ASSERT_OK(y);
  auto yu = y->unsqueeze(0);
  ASSERT_OK(yu);
  EXPECT_EQ(yu->pixel_format(), PixelFormat::Nv12);
  EXPECT_EQ(yu->image_plane(), 0);
}
