// SPDX-License-Identifier: Apache-2.0
// A real V4L2 camera: frames captured from vivid, the kernel's virtual video driver, and imported into
// edgetensor. For single-planar YUYV and NV12 and multi-planar NV12M (NM12) at 640x360 (vivid's webcam
// input), each test sets the format (VIDIOC_S_FMT, asking for padded rows), streams MMAP buffers,
// exports each buffer plane with VIDIOC_EXPBUF and checks every dequeued frame:
//   - V4l2CaptureHardware.Expbuf*: the exported DMA-BUF, mapped on its own, holds the same bytes as V4L2's mmap
//     of the buffer (V4L2 only; no edgetensor).
//   - V4l2CaptureHardware.Import*: the DMA-BUF imported with exactly the layout V4L2 reports (bytesperline,
//     plane offsets, data_offset; TensorDyn::import_image_dup for one-buffer formats,
//     Frame::import_planes_dup for NM12) gives plane views whose bytes, walked through the views' own
//     shapes and strides, equal V4L2's mmap of the same frame row by row.
//   - V4l2CaptureHardware.FormatsAndColorimetry: pixel_format_from_v4l2 and colorimetry_from_v4l2 on what
//     vivid reports.
// Each test skips with the reason where no vivid capture node exists; ET_V4L2_REQUIRE_DEVICES=1 (set by
// tests/kernel/v4l2_lane.sh, which loads vivid with n_devs=2 multiplanar=1,2) makes that a failure.
// Built with ET_V4L2_TEST_EDGETENSOR=0 only the V4L2 part is compiled (no edgetensor symbols needed).
#ifndef ET_V4L2_TEST_EDGETENSOR
#define ET_V4L2_TEST_EDGETENSOR 1
#endif

#include <gtest/gtest.h>
#include <linux/videodev2.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "v4l2_device.h"

#if ET_V4L2_TEST_EDGETENSOR
#include <edgetensor/edgetensor.h>

#include "support/test_support.h"
#endif

namespace {

using et_test::v4l2::Capture;
using et_test::v4l2::find_vivid_capture_nodes;
using et_test::v4l2::fourcc_text;
using et_test::v4l2::Node;
using V4l2Format = et_test::v4l2::Format;
using V4l2Frame = et_test::v4l2::Frame;

// vivid's webcam input offers 320x180, 640x360 and 1280x720 (Documentation/admin-guide/media/vivid.rst).
constexpr std::uint32_t kWidth = 640;
constexpr std::uint32_t kHeight = 360;
constexpr std::uint32_t kBuffers = 4;
constexpr int kFrames = 3;
constexpr int kFrameTimeoutMs = 20000;  // TCG emulation is slow; vivid's webcam runs at up to 30 fps

bool devices_required() {
  const char* v = std::getenv("ET_V4L2_REQUIRE_DEVICES");
  return v && std::string(v) == "1";
}

std::optional<Node> vivid_node(bool multiplanar) {
  for (const auto& n : find_vivid_capture_nodes())
    if (n.multiplanar == multiplanar) return n;
  return std::nullopt;
}

#define NEED_VIVID(var, multiplanar)                                                                       \
  const auto var = vivid_node(multiplanar);                                                                \
  do {                                                                                                     \
    if (!var) {                                                                                            \
      const char* what_ = (multiplanar) ? "multi-planar" : "single-planar";                                \
      if (devices_required()) FAIL() << "no vivid " << what_ << " capture node but ET_V4L2_REQUIRE_DEVICES=1"; \
      GTEST_SKIP() << "no vivid " << what_ << " capture node in /dev/video* (load vivid with n_devs=2 "     \
                   << "multiplanar=1,2, or run tests/kernel/v4l2_lane.sh)";                                \
    }                                                                                                      \
  } while (0)

// What a test captures: a fourcc on the single- or multi-planar node, asking for rows of
// `bytesperline` bytes (the driver may answer otherwise; the tests use its answer).
struct Case {
  std::uint32_t fourcc;
  bool multiplanar;
  std::uint32_t bytesperline;
};
constexpr Case kYuyv{V4L2_PIX_FMT_YUYV, false, kWidth * 2 + 128};
constexpr Case kNv12{V4L2_PIX_FMT_NV12, false, kWidth + 64};
constexpr Case kNv12m{V4L2_PIX_FMT_NV12M, true, kWidth + 64};

std::string describe(const V4l2Format& f) {
  std::string s = fourcc_text(f.pixelformat) + " " + std::to_string(f.width) + "x" + std::to_string(f.height);
  for (std::size_t i = 0; i < f.planes.size(); ++i)
    s += ", plane " + std::to_string(i) + ": bytesperline " + std::to_string(f.planes[i].bytesperline) +
         " sizeimage " + std::to_string(f.planes[i].sizeimage);
  s += "; colorspace " + std::to_string(f.colorspace) + " ycbcr_enc " + std::to_string(f.ycbcr_enc) +
       " quantization " + std::to_string(f.quantization) + " xfer_func " + std::to_string(f.xfer_func);
  return s;
}

// Opens `node`, sets the case's format, streams and calls `check` with kFrames dequeued frames (the
// buffer is the application's during the call), requeueing each after it.
void capture(const Node& node, const Case& c, const std::function<void(const V4l2Format&, const V4l2Frame&)>& check) {
  Capture cap;
  ASSERT_EQ(cap.open(node), "") << node.path;
  ASSERT_EQ(cap.set_format(c.fourcc, kWidth, kHeight, c.bytesperline), "") << node.path;
  const V4l2Format& f = cap.format();
  ASSERT_EQ(f.width, kWidth) << describe(f);
  ASSERT_EQ(f.height, kHeight) << describe(f);
  ASSERT_EQ(f.field, static_cast<std::uint32_t>(V4L2_FIELD_NONE)) << describe(f);
  std::cout << "[          ] " << node.path << " (" << node.card << "): " << describe(f) << "\n";
  ASSERT_EQ(cap.start(kBuffers), "") << node.path;
  for (int i = 0; i < kFrames; ++i) {
    V4l2Frame frame;
    ASSERT_EQ(cap.next(frame, kFrameTimeoutMs), "") << "frame " << i;
    ASSERT_EQ(frame.planes.size(), f.planes.size());
    if (i == 0)
      for (std::size_t p = 0; p < frame.planes.size(); ++p)
        std::cout << "[          ] buffer plane " << p << ": length " << frame.planes[p].length << ", bytesused "
                  << frame.planes[p].bytesused << ", data_offset " << frame.planes[p].data_offset << "\n";
    check(f, frame);
    if (::testing::Test::HasFatalFailure()) return;
    ASSERT_EQ(cap.requeue(frame), "");
  }
}

// ---- V4L2 only: the exported DMA-BUF against V4L2's own mapping --------------------------------------

void check_expbuf(const V4l2Format& f, const V4l2Frame& frame) {
  for (std::size_t p = 0; p < frame.planes.size(); ++p) {
    const auto& plane = frame.planes[p];
    // The payload: [data_offset, bytesused), at least the plane's image size.
    EXPECT_GE(plane.bytesused - plane.data_offset, f.planes[p].sizeimage) << "plane " << p;
    EXPECT_EQ(et_test::v4l2::compare_dmabuf_with_mmap(plane, plane.data_offset, plane.bytesused), "")
        << "frame " << frame.sequence << " plane " << p;
    // vivid draws a test pattern: a frame of one byte value would mean nothing was captured.
    EXPECT_GT(et_test::v4l2::distinct_values(plane.mmap_bytes.subspan(plane.data_offset, f.planes[p].sizeimage)), 2u)
        << "plane " << p;
  }
}

TEST(V4l2CaptureHardware, VividNodes) {
  const auto nodes = find_vivid_capture_nodes();
  for (const auto& n : nodes)
    std::cout << "[          ] " << n.path << ": " << n.card << (n.multiplanar ? " (multi-planar)" : " (single-planar)")
              << "\n";
  NEED_VIVID(single, false);
  NEED_VIVID(multi, true);
}

TEST(V4l2CaptureHardware, ExpbufMatchesMmapYuyv) {
  NEED_VIVID(node, false);
  capture(*node, kYuyv, check_expbuf);
}

TEST(V4l2CaptureHardware, ExpbufMatchesMmapNv12) {
  NEED_VIVID(node, false);
  capture(*node, kNv12, check_expbuf);
}

TEST(V4l2CaptureHardware, ExpbufMatchesMmapNv12m) {
  NEED_VIVID(node, true);
  capture(*node, kNv12m, check_expbuf);
}

#if ET_V4L2_TEST_EDGETENSOR
// ---- edgetensor: the same frames imported with V4L2's layout, read through plane views ---------------

using edgetensor::Colorimetry;
using edgetensor::DType;
using edgetensor::ImageLayout;
using edgetensor::PixelFormat;
using edgetensor::TensorDyn;

// One image plane as V4L2 describes it, worked out from the V4L2 format alone: which buffer plane it
// lies in, where its first row starts there, its row stride, rows, tight row bytes and the shape
// its plane view must have (TensorDyn::plane's documented shapes).
struct ExpectedPlane {
  std::size_t buffer = 0;
  std::size_t offset = 0;
  std::size_t stride = 0;
  std::size_t rows = 0;
  std::size_t row_bytes = 0;
  std::vector<std::size_t> shape;
};

// V4L2's layouts (the V4L2 specification's pixel format pages): YUYV is one plane of Y0 U Y1 V per two
// pixels; single-planar NV12 is the Y plane followed directly by the interleaved CbCr plane at
// half height with the same bytes per line (offset bytesperline x height); NV12M puts each plane in
// its own buffer plane, starting at that plane's data_offset, rows plane_fmt[i].bytesperline apart.
std::vector<ExpectedPlane> expected_planes(const V4l2Format& f, const V4l2Frame& frame) {
  const std::size_t w = f.width, h = f.height;
  const std::size_t bpl0 = f.planes[0].bytesperline;
  switch (f.pixelformat) {
    case V4L2_PIX_FMT_YUYV:
      return {{0, 0, bpl0, h, w * 2, {h, w / 2, 4}}};
    case V4L2_PIX_FMT_NV12:
      return {{0, 0, bpl0, h, w, {h, w}}, {0, bpl0 * h, bpl0, h / 2, w, {h / 2, w / 2, 2}}};
    case V4L2_PIX_FMT_NV12M:
      return {{0, frame.planes[0].data_offset, bpl0, h, w, {h, w}},
              {1, frame.planes[1].data_offset, f.planes[1].bytesperline, h / 2, w, {h / 2, w / 2, 2}}};
    default:
      return {};
  }
}

// The layout handed to edgetensor: exactly the expected planes' offsets and strides.
ImageLayout layout_of(PixelFormat format, const V4l2Format& f, const std::vector<ExpectedPlane>& planes) {
  ImageLayout layout;
  layout.format = format;
  layout.width = f.width;
  layout.height = f.height;
  for (std::size_t i = 0; i < planes.size(); ++i) layout.planes[i] = {planes[i].offset, planes[i].stride};
  return layout;
}

// Walks `view` (a U8 plane view) through its own shape and byte strides and compares row r, its
// inner elements in C order, with bytes [offset + r * stride, + row_bytes) of V4L2's mapping.
std::string compare_view_rows(const TensorDyn& view, std::span<const std::uint8_t> v4l2, const ExpectedPlane& e) {
  auto map = view.map_read();
  if (!map) return "map_read: " + map.error().to_string();
  const auto bytes = map->bytes();
  const auto shape = view.shape();
  const auto strides = view.strides();
  std::size_t inner = 1;
  for (std::size_t d = 1; d < shape.size(); ++d) inner *= shape[d];
  if (shape.empty() || shape[0] != e.rows || inner != e.row_bytes)
    return "the view has " + std::to_string(shape.empty() ? 0 : shape[0]) + " rows of " + std::to_string(inner) +
           " bytes, V4L2 " + std::to_string(e.rows) + " of " + std::to_string(e.row_bytes);
  std::vector<std::size_t> index(shape.size(), 0);
  for (std::size_t r = 0; r < e.rows; ++r) {
    for (std::size_t k = 0; k < inner; ++k) {
      // index[1..] = k in C order; the view's byte offset from its strides.
      std::size_t rest = k;
      std::int64_t off = static_cast<std::int64_t>(r) * strides[0];
      for (std::size_t d = shape.size(); d-- > 1;) {
        off += static_cast<std::int64_t>(rest % shape[d]) * strides[d];
        rest /= shape[d];
      }
      if (off < 0 || static_cast<std::size_t>(off) >= bytes.size()) return "offset " + std::to_string(off) + " outside the map";
      const std::size_t at = e.offset + r * e.stride + k;
      const auto got = std::to_integer<std::uint8_t>(bytes[static_cast<std::size_t>(off)]);
      if (at >= v4l2.size()) return "V4L2 byte " + std::to_string(at) + " outside the buffer";
      if (got != v4l2[at])
        return "row " + std::to_string(r) + " byte " + std::to_string(k) + ": view " + std::to_string(got) +
               ", V4L2 mmap " + std::to_string(v4l2[at]);
    }
  }
  return "";
}

// Checks one plane view: dtype, shape, plane metadata (format, plane index, colorimetry) and bytes.
void check_plane_view(const edgetensor::Result<TensorDyn>& view, std::size_t i, PixelFormat format,
                      const Colorimetry& colorimetry, const ExpectedPlane& e, std::span<const std::uint8_t> v4l2) {
  ASSERT_OK(view);
  EXPECT_EQ(view->dtype(), DType::U8);
  EXPECT_EQ(std::vector<std::size_t>(view->shape().begin(), view->shape().end()), e.shape) << "plane " << i;
  EXPECT_EQ(view->pixel_format(), format);
  EXPECT_EQ(view->image_plane(), static_cast<int>(i));
  EXPECT_TRUE(view->colorimetry() == colorimetry) << "plane " << i;
  EXPECT_EQ(compare_view_rows(*view, v4l2, e), "") << "plane " << i;
}

edgetensor::Result<Colorimetry> colorimetry_of(const V4l2Format& f) {
  return edgetensor::colorimetry_from_v4l2({f.colorspace, f.ycbcr_enc, f.quantization, f.xfer_func}, /*is_rgb=*/false);
}

void check_import(const V4l2Format& f, const V4l2Frame& frame) {
  const auto v4l2_format = edgetensor::pixel_format_from_v4l2(f.pixelformat);
  ASSERT_OK(v4l2_format);
  ASSERT_EQ(v4l2_format->multiplanar, f.multiplanar);
  const PixelFormat format = v4l2_format->format;
  const auto colorimetry = colorimetry_of(f);
  ASSERT_OK(colorimetry);
  const auto planes = expected_planes(f, frame);
  ASSERT_FALSE(planes.empty()) << fourcc_text(f.pixelformat);
  const ImageLayout layout = layout_of(format, f, planes);
  ASSERT_EQ(layout.plane_count(), planes.size());
  if (!f.multiplanar) {
    // One buffer: the planes end within sizeimage (V4L2 pads no last row).
    auto min = layout.min_buffer_bytes();
    ASSERT_OK(min);
    EXPECT_LE(*min, f.planes[0].sizeimage);
    auto image = TensorDyn::import_image_dup(frame.planes[0].dmabuf_fd, layout);
    ASSERT_OK(image);
    ASSERT_NE(image->image_layout(), nullptr);
    EXPECT_TRUE(*image->image_layout() == layout);
    image->set_colorimetry(*colorimetry);
    for (std::size_t i = 0; i < planes.size(); ++i)
      check_plane_view(image->plane(i), i, format, *colorimetry, planes[i], frame.planes[0].mmap_bytes);
    return;
  }
  std::vector<int> fds;
  for (const auto& p : frame.planes) fds.push_back(p.dmabuf_fd);
  auto image = edgetensor::Frame::import_planes_dup(fds, layout);
  ASSERT_OK(image);
  EXPECT_EQ(image->buffer_count(), frame.planes.size());
  EXPECT_TRUE(image->layout() == layout);
  image->set_colorimetry(*colorimetry);
  for (std::size_t i = 0; i < planes.size(); ++i)
    check_plane_view(image->plane(i), i, format, *colorimetry, planes[i], frame.planes[planes[i].buffer].mmap_bytes);
  // The frame's own map: each plane's bytes from its offset to its tight end, as V4L2 maps them.
  auto map = image->map_read();
  ASSERT_OK(map);
  for (std::size_t i = 0; i < planes.size(); ++i) {
    const auto got = map->plane_bytes(i);
    const auto want = frame.planes[planes[i].buffer].mmap_bytes.subspan(planes[i].offset);
    ASSERT_EQ(got.size(), (planes[i].rows - 1) * planes[i].stride + planes[i].row_bytes) << "plane " << i;
    EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin(), [](std::byte a, std::uint8_t b) {
      return std::to_integer<std::uint8_t>(a) == b;
    })) << "plane " << i;
  }
}

TEST(V4l2CaptureHardware, ImportYuyv) {
  NEED_VIVID(node, false);
  capture(*node, kYuyv, check_import);
}

TEST(V4l2CaptureHardware, ImportNv12) {
  NEED_VIVID(node, false);
  capture(*node, kNv12, check_import);
}

TEST(V4l2CaptureHardware, ImportNv12m) {
  NEED_VIVID(node, true);
  capture(*node, kNv12m, check_import);
}

// What vivid reports converts: its fourccs to our formats (NM12: the same format, planes in separate
// buffers), and its colorimetry. The webcam input starts in sRGB (vivid.rst); sRGB has BT.709
// primaries, the sRGB transfer function and, for Y'CbCr, BT.601 encoding in limited range by default
// (V4L2 specification, "Detailed Colorspace Descriptions", sRGB).
TEST(V4l2CaptureHardware, FormatsAndColorimetry) {
  NEED_VIVID(single, false);
  NEED_VIVID(multi, true);
  for (const Case& c : {kYuyv, kNv12, kNv12m}) {
    Capture cap;
    ASSERT_EQ(cap.open(c.multiplanar ? *multi : *single), "");
    ASSERT_EQ(cap.set_format(c.fourcc, kWidth, kHeight), "");
    const V4l2Format& f = cap.format();
    SCOPED_TRACE(describe(f));
    const auto v = edgetensor::pixel_format_from_v4l2(f.pixelformat);
    ASSERT_OK(v);
    EXPECT_EQ(v->format, c.fourcc == V4L2_PIX_FMT_YUYV ? PixelFormat::Yuyv : PixelFormat::Nv12);
    EXPECT_EQ(v->multiplanar, c.multiplanar);
    const auto back = edgetensor::pixel_format_to_v4l2(v->format, v->multiplanar);
    ASSERT_OK(back);
    EXPECT_EQ(*back, f.pixelformat);

    EXPECT_EQ(f.colorspace, static_cast<std::uint32_t>(V4L2_COLORSPACE_SRGB));
    const auto col = colorimetry_of(f);
    ASSERT_OK(col);
    EXPECT_EQ(col->primaries, edgetensor::ColorPrimaries::Bt709);
    if (f.xfer_func == V4L2_XFER_FUNC_DEFAULT || f.xfer_func == V4L2_XFER_FUNC_SRGB) {
      EXPECT_EQ(col->transfer, edgetensor::TransferFunction::Srgb);
    }
    if (f.ycbcr_enc == V4L2_YCBCR_ENC_DEFAULT || f.ycbcr_enc == V4L2_YCBCR_ENC_601) {
      EXPECT_EQ(col->matrix, edgetensor::YcbcrMatrix::Bt601);
    }
    if (f.quantization == V4L2_QUANTIZATION_DEFAULT || f.quantization == V4L2_QUANTIZATION_LIM_RANGE) {
      EXPECT_EQ(col->range, edgetensor::ColorRange::Limited);
    }
    // Explicit V4L2 values for the same colorimetry convert back to it.
    const auto explicit_v4l2 = edgetensor::colorimetry_to_v4l2(*col);
    ASSERT_OK(explicit_v4l2);
    const auto again = edgetensor::colorimetry_from_v4l2(*explicit_v4l2, /*is_rgb=*/false);
    ASSERT_OK(again);
    EXPECT_TRUE(*again == *col);
  }
}
#endif  // ET_V4L2_TEST_EDGETENSOR

}  // namespace
