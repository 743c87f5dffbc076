// SPDX-License-Identifier: Apache-2.0
// Image metadata carried by a tensor: pixel format, row stride and plane offset (both in bytes).
#pragma once

#include <edgetensor/export.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace edgetensor::inline ET_ABI_NAMESPACE {

/// Pixel formats, named as in V4L2/DRM fourcc usage. Values are stable (IPC, C API).
enum class PixelFormat : std::uint8_t {
  Unknown = 0,  ///< Not an image, or not described.
  Grey = 1,     ///< 8-bit luma.
  Rgb = 2,      ///< R, G, B bytes.
  Bgr = 3,
  Rgba = 4,     ///< R, G, B, A bytes.
  Bgra = 5,
  Nv12 = 6,     ///< Y plane, then interleaved UV plane at plane_offset_bytes.
  Nv21 = 7,
  Yuyv = 8,     ///< Packed 4:2:2.
  PlanarRgb = 9,///< Three planes R, G, B (NCHW-style).
};

/// "unknown", "grey", "rgb", "bgr", "rgba", "bgra", "nv12", "nv21", "yuyv", "planar_rgb".
ET_API std::string_view pixel_format_name(PixelFormat format) noexcept;
ET_API std::optional<PixelFormat> pixel_format_from_name(std::string_view name) noexcept;

/// Image layout of a tensor's bytes. Zero means "not set" for both byte counts.
struct ImageMeta {
  PixelFormat format = PixelFormat::Unknown;
  std::size_t row_stride_bytes = 0;    ///< Bytes from the start of one row to the next (first plane).
  std::size_t plane_offset_bytes = 0;  ///< Offset of the second plane (NV12 UV) from the tensor start.
  friend bool operator==(const ImageMeta&, const ImageMeta&) = default;
};

}  // namespace edgetensor
