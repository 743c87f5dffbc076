// SPDX-License-Identifier: Apache-2.0
// Image frames: the exact byte layout of a frame (width, height, format, per-plane offset and row
// stride, DRM format modifier) and its colorimetry.
//
// Units: width and height in pixels; offsets, row strides and sizes in bytes. A plane's rows are
// ceil(height / v_subsampling), its row bytes ceil(ceil(width / h_subsampling) / pixels_per_group) *
// bytes_per_group (pixel_format.h); odd sizes round up, as GStreamer and V4L2 do.
//
// Two sizes, kept apart:
//   min_buffer_bytes   what an imported buffer must hold: for each plane, offset + (rows - 1) * stride +
//                      row bytes (producers do not pad the last row). Imports and set_image_layout check it.
//   allocation_bytes   what allocate_image allocates for a default layout: whole padded rows of every
//                      plane (equal to GstVideoInfo.size for the same alignment).
//
// Which tensor operations keep a tensor's image layout, format, colorimetry and quantization: the
// metadata rule in tensor.h and its table in docs/ARCHITECTURE.md, "Tensor metadata".
#pragma once

#include <edgetensor/error.h>
#include <edgetensor/export.h>
#include <edgetensor/pixel_format.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {

/// Where one plane lies. For a single-buffer image (a TensorDyn) offsets count from the tensor's first
/// byte; in a Frame (frame.h) each plane's offset counts from the start of that plane's own buffer.
struct PlaneLayout {
  std::size_t offset_bytes = 0;
  /// Bytes from the start of one row to the next; at least the plane's row bytes.
  std::size_t row_stride_bytes = 0;
  friend bool operator==(const PlaneLayout&, const PlaneLayout&) = default;
};

/// Row and height alignment for default layouts. Each plane's row stride is its row bytes rounded up
/// to `row_bytes`; the image height is rounded up to `height` and to the format's largest vertical
/// subsampling, and each plane gets that padded height / its v_subsampling rows. Planes follow each
/// other in table order with no gap. `row_bytes` 4 with `height` 1 is GStreamer's default
/// (gst_video_info_set_format); 64 matches GPU pitch rules; `height` 16 matches most decoders.
/// Both must be powers of two, at most 4096.
struct ImageAlignment {
  std::size_t row_bytes = 1;
  std::size_t height = 1;
  /// GStreamer's default: rows to 4 bytes, no height padding (what gst_video_info_set_format gives;
  /// checked against it by the GStreamer oracle tests). The struct's own default is tight rows.
  static constexpr ImageAlignment gstreamer() noexcept { return {4, 1}; }
};

/// The layout of one image.
struct ET_API ImageLayout {
  PixelFormat format = PixelFormat::Unknown;
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  /// The first pixel_format_info(format).plane_count entries are used; the rest stay zero.
  std::array<PlaneLayout, kMaxPlanes> planes{};
  /// DRM format modifier. Anything but kDrmFormatModLinear makes the CPU layout opaque: CPU maps and
  /// plane views are refused (Unsupported, naming the modifier), while fd export, IPC and import work.
  std::uint64_t modifier = kDrmFormatModLinear;

  /// The default layout (ImageAlignment's rule). Errors: InvalidArgument (Unknown or invalid format,
  /// zero width or height, alignment not a power of two or above 4096), OutOfRange (a size overflows).
  [[nodiscard]] static Result<ImageLayout> make(std::uint32_t width, std::uint32_t height, PixelFormat format,
                                                ImageAlignment alignment = {});
  /// Bytes allocate_image reserves for make(width, height, format, alignment): every plane's padded
  /// rows. Errors as make.
  [[nodiscard]] static Result<std::size_t> allocation_bytes(std::uint32_t width, std::uint32_t height,
                                                            PixelFormat format, ImageAlignment alignment = {});

  std::size_t plane_count() const noexcept { return pixel_format_info(format).plane_count; }
  /// Rows of plane `index` (ceil(height / v_subsampling)). 0 for an index past plane_count().
  std::size_t plane_rows(std::size_t index) const noexcept;
  /// Tight row bytes of plane `index` (see the preamble). 0 for an index past plane_count(); SIZE_MAX
  /// where they overflow size_t (a 32-bit size_t; validate refuses such a layout).
  std::size_t plane_row_bytes(std::size_t index) const noexcept;
  /// offset + (rows - 1) * stride + row bytes of plane `index`: where its last byte ends.
  /// Errors: OutOfRange on overflow or an index past plane_count().
  [[nodiscard]] Result<std::size_t> plane_end_bytes(std::size_t index) const;
  /// The largest plane_end_bytes: the smallest buffer a single-buffer image fits in. Errors:
  /// InvalidArgument (a format with no planes), as plane_end_bytes.
  [[nodiscard]] Result<std::size_t> min_buffer_bytes() const;

  /// Checks the layout on its own: a known format, width and height non-zero, every used plane's stride
  /// at least its row bytes, unused planes zero. With `buffer_bytes` (single-buffer images), also that
  /// every plane ends inside it and no two planes share a byte, row by row (row r of a plane is
  /// [offset + r * stride, + row bytes): planes whose rows interleave without touching are fine, as in
  /// GStreamer). Each error names the plane, the numbers and the limit: InvalidArgument (format, size,
  /// stride, overlap, naming the first rows that share bytes), OutOfRange (a plane past the end;
  /// arithmetic overflow).
  [[nodiscard]] Result<void> validate() const;
  [[nodiscard]] Result<void> validate(std::size_t buffer_bytes) const;

  friend bool operator==(const ImageLayout&, const ImageLayout&) = default;
};

// ---- Colorimetry -------------------------------------------------------------------------------
// How sample values map to colours. Names and meanings follow ITU-T H.273 (the code points used by
// V4L2, GStreamer and codecs); "Unspecified" is the default and means "the producer did not say".

enum class ColorPrimaries : std::uint8_t { Unspecified = 0, Bt709, Bt470Bg /* BT.601 625 */, Smpte170M /* BT.601 525 */,
                                           Bt2020, DciP3, DisplayP3, AdobeRgb, Bt470M /* NTSC 1953 */ };
enum class TransferFunction : std::uint8_t { Unspecified = 0, Bt709, Srgb, Linear, Smpte2084 /* PQ */, AribStdB67 /* HLG */,
                                             AdobeRgb, DciP3, Smpte240M };
enum class YcbcrMatrix : std::uint8_t { Unspecified = 0, Bt601, Bt709, Bt2020, Bt2020Constant, Smpte240M, Identity /* RGB */ };
enum class ColorRange : std::uint8_t { Unspecified = 0, Full, Limited };

/// Lower-case names for messages and the CLI ("bt709", "smpte170m", "display_p3", "arib_std_b67",
/// "bt2020_constant", "limited", ...; "unspecified" for Unspecified); "invalid" for values outside the enum.
ET_API std::string_view color_primaries_name(ColorPrimaries primaries) noexcept;
ET_API std::string_view transfer_function_name(TransferFunction transfer) noexcept;
ET_API std::string_view ycbcr_matrix_name(YcbcrMatrix matrix) noexcept;
ET_API std::string_view color_range_name(ColorRange range) noexcept;

/// The colorimetry of an image.
struct Colorimetry {
  ColorPrimaries primaries = ColorPrimaries::Unspecified;
  TransferFunction transfer = TransferFunction::Unspecified;
  YcbcrMatrix matrix = YcbcrMatrix::Unspecified;
  ColorRange range = ColorRange::Unspecified;
  friend bool operator==(const Colorimetry&, const Colorimetry&) = default;
};

/// V4L2's four colorimetry fields (struct v4l2_pix_format: colorspace, ycbcr_enc, quantization,
/// xfer_func; values of enum v4l2_colorspace, v4l2_ycbcr_encoding, v4l2_quantization, v4l2_xfer_func).
struct V4l2Colorimetry {
  std::uint32_t colorspace = 0;
  std::uint32_t ycbcr_enc = 0;
  std::uint32_t quantization = 0;
  std::uint32_t xfer_func = 0;
  friend bool operator==(const V4l2Colorimetry&, const V4l2Colorimetry&) = default;
};
/// From V4L2's fields (facts: linux/videodev2.h and the kernel's V4L2 "Colorspaces" documentation).
/// The colorspace gives the primaries (SMPTE170M and SMPTE240M: Smpte170M; REC709, SRGB, JPEG: Bt709;
/// 470_SYSTEM_M: Bt470M; 470_SYSTEM_BG: Bt470Bg; OPRGB: AdobeRgb; BT2020; DCI_P3: DciP3; RAW, the
/// device's own: Unspecified). DEFAULT values resolve as V4L2_MAP_XFER_FUNC_DEFAULT,
/// V4L2_MAP_YCBCR_ENC_DEFAULT and V4L2_MAP_QUANTIZATION_DEFAULT do for the colorspace (`is_rgb`: an RGB
/// format, full range), except under colorspace DEFAULT (the driver did not say), where they stay
/// Unspecified. Lossy by V4L2's own definitions: ENC_SYCC is Bt601, and the extended-gamut ENC_XV601 /
/// ENC_XV709 are Bt601 / Bt709 (their reading of values outside the limited range is not kept). For an
/// RGB format (`is_rgb`), a DEFAULT ycbcr_enc gives matrix Identity under any colorspace, DEFAULT
/// included (RGB data has no YCbCr matrix; as GStreamer's v4l2src does). Errors:
/// InvalidArgument naming the field and the value (outside its enum, the deprecated COLORSPACE_BT878,
/// an HSV encoding in ycbcr_enc).
[[nodiscard]] ET_API Result<Colorimetry> colorimetry_from_v4l2(const V4l2Colorimetry& v4l2, bool is_rgb);
/// To V4L2's fields: an Unspecified field gives DEFAULT (so V4L2 resolves it from the colorspace), every
/// other field an explicit value, so colorimetry_from_v4l2 gives `colorimetry` back when no field is
/// Unspecified. The colorspace follows the primaries: Bt709 gives SRGB with transfer Srgb, else REC709;
/// Smpte170M gives SMPTE240M with transfer Smpte240M, else SMPTE170M (never JPEG, RAW or BT878).
/// Matrix Identity (RGB data, as GStreamer's GST_VIDEO_COLOR_MATRIX_RGB) gives ycbcr_enc DEFAULT: V4L2
/// has no identity encoding, and an RGB format's data does not use the field; colorimetry_from_v4l2 of
/// an RGB format gives Identity back (of a YUV format, the colorspace's default matrix).
/// Errors: Unsupported naming the value V4L2 cannot express (primaries DisplayP3, transfer AribStdB67);
/// InvalidArgument for a value outside its enum.
[[nodiscard]] ET_API Result<V4l2Colorimetry> colorimetry_to_v4l2(const Colorimetry& colorimetry);

}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
