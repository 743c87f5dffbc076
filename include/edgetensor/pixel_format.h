// SPDX-License-Identifier: Apache-2.0
// Pixel formats: one table of the formats cameras, codecs and models produce, with their V4L2, DRM and
// GStreamer codes.
//
// Byte order. Every format here is named by the bytes it puts in memory, lowest address first:
// PixelFormat::Rgb is the bytes R, G, B. A DRM fourcc names a little-endian packed word instead, so the
// same bytes are DRM_FORMAT_BGR888; V4L2 names most RGB formats by bytes (V4L2_PIX_FMT_RGB24 = R, G, B)
// but its 32-bit RGB codes by word (V4L2_PIX_FMT_RGBA32 'AB24' is the bytes R, G, B, A, which DRM calls
// ABGR8888). The table gives each code exactly once, checked by byte layout against the comments of
// the kernel UAPI headers (linux/videodev2.h, drm/drm_fourcc.h) and GStreamer's format descriptions
// (gst_video_format_get_info), not by numeric value: tests/unit/image/pixel_format_test.cpp.
//
// Sources: Linux UAPI include/uapi/linux/videodev2.h and include/uapi/drm/drm_fourcc.h (6.12);
// GStreamer 1.22 gst-libs/gst/video/video-format.h.
#pragma once

#include <edgetensor/error.h>
#include <edgetensor/export.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {

/// Pixel formats. Values are stable: they travel in IPC headers (docs/WIRE.md) and the C API.
/// "Bytes" below are in memory order; Y, U (Cb), V (Cr) are 8-bit samples unless said otherwise.
enum class PixelFormat : std::uint16_t {
  Unknown = 0,      ///< Not an image, or not described.
  Grey = 1,         ///< 1 plane: Y.
  Rgb = 2,          ///< 1 plane: R, G, B.
  Bgr = 3,          ///< 1 plane: B, G, R.
  Rgba = 4,         ///< 1 plane: R, G, B, A.
  Bgra = 5,         ///< 1 plane: B, G, R, A.
  Nv12 = 6,         ///< 4:2:0, 2 planes: Y; then U, V interleaved (U first) at half width and height.
  Nv21 = 7,         ///< As Nv12 with V first.
  Yuyv = 8,         ///< 4:2:2 packed, 1 plane: Y0, U, Y1, V per 2 pixels.
  PlanarRgb = 9,    ///< 3 planes R, G, B, each w x h (CHW).
  Y16 = 10,         ///< 1 plane: 16-bit little-endian luma.
  Rgbx = 11,        ///< 1 plane: R, G, B, X (X ignored).
  Bgrx = 12,        ///< 1 plane: B, G, R, X.
  Nv16 = 13,        ///< 4:2:2, 2 planes: Y; U, V interleaved at half width, full height.
  Nv61 = 14,        ///< As Nv16 with V first.
  Nv24 = 15,        ///< 4:4:4, 2 planes: Y; U, V interleaved at full size.
  Nv42 = 16,        ///< As Nv24 with V first.
  I420 = 17,        ///< 4:2:0, 3 planes: Y, U, V (U and V at half width and height).
  Yv12 = 18,        ///< As I420 with the V plane before the U plane.
  Yuv422p = 19,     ///< 4:2:2, 3 planes: Y, U, V (U and V at half width, full height).
  Yvyu = 20,        ///< 4:2:2 packed: Y0, V, Y1, U.
  Uyvy = 21,        ///< 4:2:2 packed: U, Y0, V, Y1.
  Vyuy = 22,        ///< 4:2:2 packed: V, Y0, U, Y1.
  P010 = 23,        ///< As Nv12 with 16-bit little-endian samples holding the value in their top 10 bits.
  PlanarRgba = 24,  ///< 4 planes R, G, B, A, each w x h.
  BayerRggb8 = 25,  ///< 1 plane, 8-bit raw Bayer: even rows R, G, ...; odd rows G, B, ...
  BayerBggr8 = 26,  ///< Even rows B, G; odd rows G, R.
  BayerGrbg8 = 27,  ///< Even rows G, R; odd rows B, G.
  BayerGbrg8 = 28,  ///< Even rows G, B; odd rows R, G.
};
/// One past the largest PixelFormat value.
inline constexpr std::uint16_t kPixelFormatCount = 29;
/// Planes a format or layout can have (as DRM framebuffers and GstVideoInfo).
inline constexpr std::size_t kMaxPlanes = 4;

/// How one plane stores its samples.
struct PlaneFormat {
  /// Horizontal and vertical subsampling against the image size: a plane of an image w x h is
  /// ceil(w / h_subsampling) x ceil(h / v_subsampling) pixels (odd sizes round up, as in GStreamer
  /// and V4L2). 1 or 2.
  std::uint8_t h_subsampling = 1;
  std::uint8_t v_subsampling = 1;
  /// Pixels one group covers along a row (2 for packed 4:2:2 such as Yuyv, else 1) and the bytes of
  /// one group (Rgb 3, Yuyv 4, Nv12's UV 2, P010's UV 4). A plane row of p pixels holds
  /// ceil(p / pixels_per_group) * bytes_per_group bytes: its row bytes.
  std::uint8_t pixels_per_group = 1;
  std::uint8_t bytes_per_group = 1;
  /// Bits of storage per sample (8 or 16) and how many of them carry the value (P010: 10, in the top
  /// bits of a 16-bit little-endian word).
  std::uint8_t bits_per_sample = 8;
  std::uint8_t significant_bits = 8;
  /// Samples per group, in memory order, one letter each: "Y", "UV", "VU", "RGB", "BGRA", "YUYV",
  /// "R" (one plane of PlanarRgb), "RGGB" (Bayer: the 2 x 2 tile, first row then second).
  std::string_view samples;
};

/// The description of one PixelFormat.
struct PixelFormatInfo {
  PixelFormat format = PixelFormat::Unknown;
  /// Our name: lower-case, as pixel_format_name gives ("nv12", "bayer_rggb8").
  std::string_view name;
  std::uint8_t plane_count = 0;
  std::array<PlaneFormat, kMaxPlanes> planes{};
  /// V4L2 fourcc of the single-buffer format (V4L2_PIX_FMT_*), 0 where V4L2 has none.
  std::uint32_t v4l2_fourcc = 0;
  /// V4L2 fourcc of the variant whose planes are separate buffers (V4L2_PIX_FMT_NV12M, YUV420M, ...),
  /// 0 where none.
  std::uint32_t v4l2_multiplanar_fourcc = 0;
  /// DRM fourcc (DRM_FORMAT_*), 0 where none (Bayer, planar RGB).
  std::uint32_t drm_fourcc = 0;
  /// GStreamer video format name (GST_VIDEO_FORMAT_* as a caps string: "NV12", "YUY2", "GRAY8"),
  /// empty where none (Bayer is its own caps, "video/x-bayer").
  std::string_view gst_name;
};

/// The packed 32-bit code of four characters, first character in the low byte (V4L2 v4l2_fourcc,
/// DRM fourcc_code).
constexpr std::uint32_t fourcc(char a, char b, char c, char d) noexcept {
  return static_cast<std::uint32_t>(static_cast<unsigned char>(a)) |
         (static_cast<std::uint32_t>(static_cast<unsigned char>(b)) << 8) |
         (static_cast<std::uint32_t>(static_cast<unsigned char>(c)) << 16) |
         (static_cast<std::uint32_t>(static_cast<unsigned char>(d)) << 24);
}
/// The four characters of a code, low byte first ("NV12"); a byte outside printable ASCII is written
/// as \xNN. V4L2's big-endian flag (bit 31) is shown as the suffix "-BE".
ET_API std::string fourcc_to_string(std::uint32_t code);

/// The table row of `format`. Unknown has plane_count 0; a value outside the enum returns the
/// Unknown row too.
ET_API const PixelFormatInfo& pixel_format_info(PixelFormat format) noexcept;
/// Every row, Unknown excluded, in enum order.
ET_API std::span<const PixelFormatInfo> pixel_formats() noexcept;

/// Our name ("nv12"); "invalid" for a value outside the enum.
ET_API std::string_view pixel_format_name(PixelFormat format) noexcept;
/// Errors: InvalidArgument naming the text.
[[nodiscard]] ET_API Result<PixelFormat> pixel_format_from_name(std::string_view name);

/// A V4L2 pixel format: which PixelFormat, and whether its planes are separate buffers (the "M"
/// codes, used with V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE).
struct V4l2PixelFormat {
  PixelFormat format = PixelFormat::Unknown;
  bool multiplanar = false;
};
/// Errors: InvalidArgument naming the code as four characters and in hex ("unknown V4L2 pixel format
/// 'NM99' (0x3939...)").
[[nodiscard]] ET_API Result<V4l2PixelFormat> pixel_format_from_v4l2(std::uint32_t v4l2_fourcc);
/// Errors: InvalidArgument naming the code as four characters.
[[nodiscard]] ET_API Result<PixelFormat> pixel_format_from_drm(std::uint32_t drm_fourcc);
/// Errors: InvalidArgument naming the text.
[[nodiscard]] ET_API Result<PixelFormat> pixel_format_from_gst(std::string_view gst_name);
/// The code of `format`. Errors: Unsupported naming the format where V4L2 / DRM / GStreamer has none;
/// InvalidArgument naming the value for one outside the enum.
[[nodiscard]] ET_API Result<std::uint32_t> pixel_format_to_v4l2(PixelFormat format, bool multiplanar = false);
[[nodiscard]] ET_API Result<std::uint32_t> pixel_format_to_drm(PixelFormat format);
[[nodiscard]] ET_API Result<std::string_view> pixel_format_to_gst(PixelFormat format);

/// DRM format modifiers (drm/drm_fourcc.h): LINEAR is row-major memory, the only layout a CPU map or a
/// plane view understands. INVALID means "implicit" (the driver knows the layout), which is not LINEAR.
inline constexpr std::uint64_t kDrmFormatModLinear = 0;
inline constexpr std::uint64_t kDrmFormatModInvalid = 0x00ffffffffffffffULL;

}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
