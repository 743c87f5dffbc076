// SPDX-License-Identifier: Apache-2.0
// The pixel format table (pixel_format.h) and its lookups.
//
// Codes: Linux UAPI include/uapi/linux/videodev2.h (V4L2_PIX_FMT_*) and include/uapi/drm/drm_fourcc.h
// (DRM_FORMAT_*), GStreamer 1.22 video-format.h names. Each row is checked by byte layout in
// tests/unit/image/pixel_format_test.cpp (against the headers' comments) and by the GStreamer oracle.
#include <edgetensor/pixel_format.h>

#include <array>

#include "text/format.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace {

using PF = PixelFormat;

// One plane: subsampling, pixels and bytes per group, bits per sample, significant bits, samples.
constexpr PlaneFormat plane(std::uint8_t hs, std::uint8_t vs, std::uint8_t ppg, std::uint8_t bpg, std::string_view samples,
                            std::uint8_t bits = 8, std::uint8_t significant = 8) {
  return PlaneFormat{hs, vs, ppg, bpg, bits, significant, samples};
}
constexpr PixelFormatInfo row(PF f, std::string_view name, std::array<PlaneFormat, kMaxPlanes> planes, std::uint8_t n,
                              std::uint32_t v4l2, std::uint32_t v4l2_m, std::uint32_t drm, std::string_view gst) {
  return PixelFormatInfo{f, name, n, planes, v4l2, v4l2_m, drm, gst};
}
constexpr PlaneFormat kNone{};

// Rows in enum order (index == value). V4L2 names most RGB formats by bytes, its 32-bit RGB codes and
// all DRM codes by a little-endian word: RGB bytes = V4L2 RGB24 'RGB3' = DRM BGR888 'BG24'.
constexpr std::array<PixelFormatInfo, kPixelFormatCount> kTable = {{
    row(PF::Unknown, "unknown", {kNone, kNone, kNone, kNone}, 0, 0, 0, 0, ""),
    row(PF::Grey, "grey", {plane(1, 1, 1, 1, "Y"), kNone, kNone, kNone}, 1, fourcc('G', 'R', 'E', 'Y'), 0,
        fourcc('R', '8', ' ', ' '), "GRAY8"),
    row(PF::Rgb, "rgb", {plane(1, 1, 1, 3, "RGB"), kNone, kNone, kNone}, 1, fourcc('R', 'G', 'B', '3'), 0,
        fourcc('B', 'G', '2', '4'), "RGB"),
    row(PF::Bgr, "bgr", {plane(1, 1, 1, 3, "BGR"), kNone, kNone, kNone}, 1, fourcc('B', 'G', 'R', '3'), 0,
        fourcc('R', 'G', '2', '4'), "BGR"),
    row(PF::Rgba, "rgba", {plane(1, 1, 1, 4, "RGBA"), kNone, kNone, kNone}, 1, fourcc('A', 'B', '2', '4'), 0,
        fourcc('A', 'B', '2', '4'), "RGBA"),
    row(PF::Bgra, "bgra", {plane(1, 1, 1, 4, "BGRA"), kNone, kNone, kNone}, 1, fourcc('A', 'R', '2', '4'), 0,
        fourcc('A', 'R', '2', '4'), "BGRA"),
    row(PF::Nv12, "nv12", {plane(1, 1, 1, 1, "Y"), plane(2, 2, 1, 2, "UV"), kNone, kNone}, 2,
        fourcc('N', 'V', '1', '2'), fourcc('N', 'M', '1', '2'), fourcc('N', 'V', '1', '2'), "NV12"),
    row(PF::Nv21, "nv21", {plane(1, 1, 1, 1, "Y"), plane(2, 2, 1, 2, "VU"), kNone, kNone}, 2,
        fourcc('N', 'V', '2', '1'), fourcc('N', 'M', '2', '1'), fourcc('N', 'V', '2', '1'), "NV21"),
    row(PF::Yuyv, "yuyv", {plane(1, 1, 2, 4, "YUYV"), kNone, kNone, kNone}, 1, fourcc('Y', 'U', 'Y', 'V'), 0,
        fourcc('Y', 'U', 'Y', 'V'), "YUY2"),
    row(PF::PlanarRgb, "planar_rgb", {plane(1, 1, 1, 1, "R"), plane(1, 1, 1, 1, "G"), plane(1, 1, 1, 1, "B"), kNone}, 3,
        0, 0, 0, "RGBP"),
    row(PF::Y16, "y16", {plane(1, 1, 1, 2, "Y", 16, 16), kNone, kNone, kNone}, 1, fourcc('Y', '1', '6', ' '), 0,
        fourcc('R', '1', '6', ' '), "GRAY16_LE"),
    row(PF::Rgbx, "rgbx", {plane(1, 1, 1, 4, "RGBX"), kNone, kNone, kNone}, 1, fourcc('X', 'B', '2', '4'), 0,
        fourcc('X', 'B', '2', '4'), "RGBx"),
    row(PF::Bgrx, "bgrx", {plane(1, 1, 1, 4, "BGRX"), kNone, kNone, kNone}, 1, fourcc('X', 'R', '2', '4'), 0,
        fourcc('X', 'R', '2', '4'), "BGRx"),
    row(PF::Nv16, "nv16", {plane(1, 1, 1, 1, "Y"), plane(2, 1, 1, 2, "UV"), kNone, kNone}, 2,
        fourcc('N', 'V', '1', '6'), fourcc('N', 'M', '1', '6'), fourcc('N', 'V', '1', '6'), "NV16"),
    row(PF::Nv61, "nv61", {plane(1, 1, 1, 1, "Y"), plane(2, 1, 1, 2, "VU"), kNone, kNone}, 2,
        fourcc('N', 'V', '6', '1'), fourcc('N', 'M', '6', '1'), fourcc('N', 'V', '6', '1'), "NV61"),
    row(PF::Nv24, "nv24", {plane(1, 1, 1, 1, "Y"), plane(1, 1, 1, 2, "UV"), kNone, kNone}, 2,
        fourcc('N', 'V', '2', '4'), 0, fourcc('N', 'V', '2', '4'), "NV24"),
    row(PF::Nv42, "nv42", {plane(1, 1, 1, 1, "Y"), plane(1, 1, 1, 2, "VU"), kNone, kNone}, 2,
        fourcc('N', 'V', '4', '2'), 0, fourcc('N', 'V', '4', '2'), ""),
    row(PF::I420, "i420", {plane(1, 1, 1, 1, "Y"), plane(2, 2, 1, 1, "U"), plane(2, 2, 1, 1, "V"), kNone}, 3,
        fourcc('Y', 'U', '1', '2'), fourcc('Y', 'M', '1', '2'), fourcc('Y', 'U', '1', '2'), "I420"),
    row(PF::Yv12, "yv12", {plane(1, 1, 1, 1, "Y"), plane(2, 2, 1, 1, "V"), plane(2, 2, 1, 1, "U"), kNone}, 3,
        fourcc('Y', 'V', '1', '2'), fourcc('Y', 'M', '2', '1'), fourcc('Y', 'V', '1', '2'), "YV12"),
    row(PF::Yuv422p, "yuv422p", {plane(1, 1, 1, 1, "Y"), plane(2, 1, 1, 1, "U"), plane(2, 1, 1, 1, "V"), kNone}, 3,
        fourcc('4', '2', '2', 'P'), fourcc('Y', 'M', '1', '6'), fourcc('Y', 'U', '1', '6'), "Y42B"),
    row(PF::Yvyu, "yvyu", {plane(1, 1, 2, 4, "YVYU"), kNone, kNone, kNone}, 1, fourcc('Y', 'V', 'Y', 'U'), 0,
        fourcc('Y', 'V', 'Y', 'U'), "YVYU"),
    row(PF::Uyvy, "uyvy", {plane(1, 1, 2, 4, "UYVY"), kNone, kNone, kNone}, 1, fourcc('U', 'Y', 'V', 'Y'), 0,
        fourcc('U', 'Y', 'V', 'Y'), "UYVY"),
    row(PF::Vyuy, "vyuy", {plane(1, 1, 2, 4, "VYUY"), kNone, kNone, kNone}, 1, fourcc('V', 'Y', 'U', 'Y'), 0,
        fourcc('V', 'Y', 'U', 'Y'), "VYUY"),
    row(PF::P010, "p010", {plane(1, 1, 1, 2, "Y", 16, 10), plane(2, 2, 1, 4, "UV", 16, 10), kNone, kNone}, 2,
        fourcc('P', '0', '1', '0'), 0, fourcc('P', '0', '1', '0'), "P010_10LE"),
    row(PF::PlanarRgba, "planar_rgba",
        {plane(1, 1, 1, 1, "R"), plane(1, 1, 1, 1, "G"), plane(1, 1, 1, 1, "B"), plane(1, 1, 1, 1, "A")}, 4, 0, 0, 0,
        ""),
    row(PF::BayerRggb8, "bayer_rggb8", {plane(1, 1, 1, 1, "RGGB"), kNone, kNone, kNone}, 1, fourcc('R', 'G', 'G', 'B'),
        0, 0, ""),
    row(PF::BayerBggr8, "bayer_bggr8", {plane(1, 1, 1, 1, "BGGR"), kNone, kNone, kNone}, 1, fourcc('B', 'A', '8', '1'),
        0, 0, ""),
    row(PF::BayerGrbg8, "bayer_grbg8", {plane(1, 1, 1, 1, "GRBG"), kNone, kNone, kNone}, 1, fourcc('G', 'R', 'B', 'G'),
        0, 0, ""),
    row(PF::BayerGbrg8, "bayer_gbrg8", {plane(1, 1, 1, 1, "GBRG"), kNone, kNone, kNone}, 1, fourcc('G', 'B', 'R', 'G'),
        0, 0, ""),
}};

constexpr bool table_in_enum_order() {
  for (std::size_t i = 0; i < kTable.size(); ++i)
    if (static_cast<std::size_t>(kTable[i].format) != i) return false;
  return true;
}
static_assert(table_in_enum_order(), "kTable row i must describe PixelFormat value i");

// videodev2.h v4l2_fourcc_be(): a big-endian variant sets bit 31 of the code.
constexpr std::uint32_t kV4l2BigEndian = 1u << 31;

std::string code_text(std::uint32_t code) { return text::format("'{}' (0x{:08x})", fourcc_to_string(code), code); }

}  // namespace

std::string fourcc_to_string(std::uint32_t code) {
  std::string out;
  for (int i = 0; i < 4; ++i) {
    auto c = static_cast<unsigned char>((code >> (8 * i)) & 0xff);
    if (i == 3 && (code & kV4l2BigEndian) && c >= 0x80 && (c & 0x7f) >= 0x20 && (c & 0x7f) < 0x7f) {
      out += static_cast<char>(c & 0x7f);
      out += "-BE";
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += text::format("\\x{:02x}", c);
    }
  }
  return out;
}

const PixelFormatInfo& pixel_format_info(PixelFormat format) noexcept {
  const auto i = static_cast<std::size_t>(format);
  return i < kTable.size() ? kTable[i] : kTable[0];
}

std::span<const PixelFormatInfo> pixel_formats() noexcept { return std::span(kTable).subspan(1); }

std::string_view pixel_format_name(PixelFormat format) noexcept {
  const auto i = static_cast<std::size_t>(format);
  return i < kTable.size() ? kTable[i].name : std::string_view("invalid");
}

Result<PixelFormat> pixel_format_from_name(std::string_view name) {
  for (const auto& r : kTable)
    if (r.name == name) return r.format;
  return fail(ErrorCode::InvalidArgument, text::format("unknown pixel format name '{}'", name));
}

Result<V4l2PixelFormat> pixel_format_from_v4l2(std::uint32_t code) {
  if (code != 0)
    for (const auto& r : kTable) {
      if (r.v4l2_fourcc == code) return V4l2PixelFormat{r.format, false};
      if (r.v4l2_multiplanar_fourcc == code) return V4l2PixelFormat{r.format, true};
    }
  return fail(ErrorCode::InvalidArgument, "unknown V4L2 pixel format " + code_text(code));
}

Result<PixelFormat> pixel_format_from_drm(std::uint32_t code) {
  if (code != 0)
    for (const auto& r : kTable)
      if (r.drm_fourcc == code) return r.format;
  return fail(ErrorCode::InvalidArgument, "unknown DRM format " + code_text(code));
}

Result<PixelFormat> pixel_format_from_gst(std::string_view name) {
  if (!name.empty())
    for (const auto& r : kTable)
      if (r.gst_name == name) return r.format;
  return fail(ErrorCode::InvalidArgument, text::format("unknown GStreamer video format '{}'", name));
}

// A value outside the enum is the caller's mistake, not a format without a code.
Result<const PixelFormatInfo*> known_format(PixelFormat format, std::string_view what) {
  const auto v = static_cast<unsigned>(format);
  if (v >= kPixelFormatCount)
    return fail(ErrorCode::InvalidArgument,
                text::format("{}: pixel format {} is not a PixelFormat (0..{})", what, v, kPixelFormatCount - 1));
  return &kTable[v];
}

Result<std::uint32_t> pixel_format_to_v4l2(PixelFormat format, bool multiplanar) {
  ET_TRY_ASSIGN(const PixelFormatInfo* info, known_format(format, "pixel_format_to_v4l2"));
  const auto& r = *info;
  const std::uint32_t code = multiplanar ? r.v4l2_multiplanar_fourcc : r.v4l2_fourcc;
  if (code == 0)
    return fail(ErrorCode::Unsupported, text::format("pixel format {} has no V4L2 {}code", pixel_format_name(format),
                                                     multiplanar ? "multi-planar " : ""));
  return code;
}

Result<std::uint32_t> pixel_format_to_drm(PixelFormat format) {
  ET_TRY_ASSIGN(const PixelFormatInfo* info, known_format(format, "pixel_format_to_drm"));
  const auto& r = *info;
  if (r.drm_fourcc == 0)
    return fail(ErrorCode::Unsupported, text::format("pixel format {} has no DRM fourcc", pixel_format_name(format)));
  return r.drm_fourcc;
}

Result<std::string_view> pixel_format_to_gst(PixelFormat format) {
  ET_TRY_ASSIGN(const PixelFormatInfo* info, known_format(format, "pixel_format_to_gst"));
  const auto& r = *info;
  if (r.gst_name.empty())
    return fail(ErrorCode::Unsupported,
                text::format("pixel format {} has no GStreamer video format", pixel_format_name(format)));
  return r.gst_name;
}

}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
