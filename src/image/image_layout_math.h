// SPDX-License-Identifier: Apache-2.0
// Pure image layout logic (no platform code): default layouts, plane sizes and validation with checked
// arithmetic. Templated on the layout type, whose offset and stride fields set the size type U, so the
// same code is tested with 32-bit sizes on a 64-bit host (tests/unit/image/image_layout_test.cpp).
// The rules are the doc comments of ImageLayout and ImageAlignment (include/edgetensor/image.h).
#pragma once

#include <edgetensor/error.h>
#include <edgetensor/pixel_format.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

#include "text/format.h"

#include "base/size_math.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

/// The size type of layout type L (ImageLayout: std::size_t).
template <class L>
using LayoutSize = std::remove_cvref_t<decltype(L{}.planes[0].offset_bytes)>;

// ImageAlignment's documented cap on either alignment (image.h), not a page size: written as a shift so
// layering.page_size_only_in_sys, which refuses page-size literals in src/, keeps its meaning.
inline constexpr std::size_t kMaxImageAlignment = std::size_t{1} << 12;

/// The row of `format`, or nullptr for Unknown or a value outside the enum.
inline const PixelFormatInfo* known_format(PixelFormat format) noexcept {
  const auto& info = pixel_format_info(format);
  return info.plane_count == 0 ? nullptr : &info;
}

/// "nv12 640x480" (or "pixel format 99 (invalid) 640x480"): how every message names the image.
template <class L>
std::string image_text(const L& l) {
  const auto name = pixel_format_name(l.format);
  if (name == "invalid")
    return text::format("pixel format {} (invalid) {}x{}", static_cast<unsigned>(l.format), l.width, l.height);
  return text::format("{} {}x{}", name, l.width, l.height);
}

/// The error for a layout whose format has no table row: Unknown (the default) or a value outside the enum.
template <class L>
Unexpected unknown_format(const L& l) {
  if (l.format == PixelFormat::Unknown)
    return fail(ErrorCode::InvalidArgument,
                text::format("{}x{} image: the pixel format is unknown (the default); name one of pixel_format.h's",
                             l.width, l.height));
  return fail(ErrorCode::InvalidArgument, text::format("{}x{} image: pixel format {} is not a PixelFormat value",
                                                       l.width, l.height, static_cast<unsigned>(l.format)));
}

/// "plane 1 (UV)".
inline std::string plane_text(const PixelFormatInfo& info, std::size_t index) {
  if (index < info.plane_count) return text::format("plane {} ({})", index, info.planes[index].samples);
  return text::format("plane {}", index);
}

/// Rows of a plane of an image `height` rows high: ceil(height / v_subsampling).
inline std::uint64_t plane_rows_of(const PlaneFormat& p, std::uint64_t height) noexcept {
  return (height + p.v_subsampling - 1) / p.v_subsampling;
}

/// Tight row bytes of a plane of an image `width` pixels wide, or nullopt when U cannot hold them.
template <class U>
std::optional<U> plane_row_bytes_of(const PlaneFormat& p, std::uint32_t width) noexcept {
  static_assert(sizeof(U) >= sizeof(std::uint32_t));
  const std::uint64_t pixels = (std::uint64_t{width} + p.h_subsampling - 1) / p.h_subsampling;
  const std::uint64_t groups = (pixels + p.pixels_per_group - 1) / p.pixels_per_group;  // <= width
  return checked_mul<U>(static_cast<U>(groups), static_cast<U>(p.bytes_per_group));
}

template <class U>
Unexpected overflow(std::string_view what) {
  return fail(ErrorCode::OutOfRange, text::format("{} overflows {}-bit size arithmetic", what, sizeof(U) * 8));
}

/// Where plane `index` of `l` ends: offset + (rows - 1) * stride + row bytes (the offset for 0 rows).
template <class L>
Result<LayoutSize<L>> plane_end(const L& l, std::size_t index) {
  using U = LayoutSize<L>;
  const auto& info = pixel_format_info(l.format);
  if (index >= info.plane_count)
    return fail(ErrorCode::OutOfRange, text::format("{}: plane index {} is past its {} planes", image_text(l), index,
                                                   info.plane_count));
  const auto& p = l.planes[index];
  const auto rows = plane_rows_of(info.planes[index], l.height);
  if (rows == 0) return p.offset_bytes;
  const auto row_bytes = plane_row_bytes_of<U>(info.planes[index], l.width);
  std::optional<U> end;
  if (row_bytes && rows - 1 <= static_cast<U>(-1)) {
    auto last_row = checked_mul<U>(static_cast<U>(rows - 1), p.row_stride_bytes);
    auto start = last_row ? checked_add<U>(p.offset_bytes, *last_row) : std::nullopt;
    end = start ? checked_add<U>(*start, *row_bytes) : std::nullopt;
  }
  if (!end)
    return overflow<U>(text::format("{} {}: offset {} B + {} rows of stride {} B", image_text(l),
                                    plane_text(info, index), p.offset_bytes, rows, p.row_stride_bytes));
  return *end;
}

/// The largest plane end: the smallest single buffer the image fits in.
template <class L>
Result<LayoutSize<L>> min_buffer(const L& l) {
  using U = LayoutSize<L>;
  const auto& info = pixel_format_info(l.format);
  if (info.plane_count == 0)
    return unknown_format(l);
  U most = 0;
  for (std::size_t i = 0; i < info.plane_count; ++i) {
    ET_TRY_ASSIGN(U end, plane_end(l, i));
    if (end > most) most = end;
  }
  return most;
}

/// Two planes' first rows that share a byte: row r of a plane is [offset + r * stride, + row bytes).
struct SharedRows {
  std::uint64_t first, second;
};

/// The first rows of planes i and j of `l` (validated: strides at least row bytes, ends computed) that
/// share a byte, or nullopt: planes whose rows interleave without touching (GStreamer accepts them) do
/// not overlap. A merge of the two sorted row lists that jumps over the rows ending before the other's
/// current row, so the two jump in turn: at most 2 * min(rows_i, rows_j) + 1 steps.
template <class L>
std::optional<SharedRows> shared_rows(const L& l, std::size_t i, std::size_t j) {
  using U = LayoutSize<L>;
  const auto& info = pixel_format_info(l.format);
  struct Rows {
    U offset, stride, bytes, count;
    U begin(U r) const { return offset + r * stride; }  // r < count: within the plane's end
    U first_ending_after(U x) const { return (x - offset - bytes) / stride + 1; }  // x >= offset + bytes
  };
  const auto rows = [&](std::size_t k) {
    return Rows{l.planes[k].offset_bytes, l.planes[k].row_stride_bytes,
                *plane_row_bytes_of<U>(info.planes[k], l.width), static_cast<U>(plane_rows_of(info.planes[k], l.height))};
  };
  const Rows a = rows(i), b = rows(j);
  U ra = 0, rb = 0;
  while (ra < a.count && rb < b.count) {
    const U a_begin = a.begin(ra), b_begin = b.begin(rb);
    if (a_begin + a.bytes <= b_begin)
      ra = a.first_ending_after(b_begin);
    else if (b_begin + b.bytes <= a_begin)
      rb = b.first_ending_after(a_begin);
    else
      return SharedRows{ra, rb};
  }
  return std::nullopt;
}

/// "plane 1 (U) [16, 22) and plane 2 (V) [16, 24) overlap<where> (row 0 [16, 18) and row 0 [16, 20))":
/// the planes' spans and the first rows that share a byte.
template <class L>
std::string overlap_text(const L& l, std::size_t i, std::size_t j, const SharedRows& rows, std::string_view where = {}) {
  const auto& info = pixel_format_info(l.format);
  const auto span = [&](std::size_t k) {
    return text::format("{} [{}, {})", plane_text(info, k), l.planes[k].offset_bytes, *plane_end(l, k));
  };
  const auto row = [&](std::size_t k, std::uint64_t r) {
    const std::uint64_t begin = l.planes[k].offset_bytes + r * l.planes[k].row_stride_bytes;
    return text::format("row {} [{}, {})", r, begin, begin + *plane_row_bytes_of<LayoutSize<L>>(info.planes[k], l.width));
  };
  return text::format("{} and {} overlap{} ({} and {})", span(i), span(j), where, row(i, rows.first),
                      row(j, rows.second));
}

/// Checks `l` on its own (buffer_bytes null) or against a buffer of *buffer_bytes bytes.
template <class L>
Result<void> validate_layout(const L& l, const LayoutSize<L>* buffer_bytes) {
  using U = LayoutSize<L>;
  const PixelFormatInfo* info = known_format(l.format);
  if (!info) return unknown_format(l);
  if (l.width == 0 || l.height == 0)
    return fail(ErrorCode::InvalidArgument, text::format("{}: width and height must be non-zero", image_text(l)));
  for (std::size_t i = info->plane_count; i < l.planes.size(); ++i)
    if (l.planes[i].offset_bytes != 0 || l.planes[i].row_stride_bytes != 0)
      return fail(ErrorCode::InvalidArgument,
                  text::format("{}: plane {} is unused ({} has {} planes) but has offset {} B and row stride {} B; "
                               "unused planes must be zero",
                               image_text(l), i, info->name, info->plane_count, l.planes[i].offset_bytes,
                               l.planes[i].row_stride_bytes));
  std::array<U, kMaxPlanes> ends{};
  for (std::size_t i = 0; i < info->plane_count; ++i) {
    const auto row_bytes = plane_row_bytes_of<U>(info->planes[i], l.width);
    if (!row_bytes) return overflow<U>(text::format("{} {}: row bytes", image_text(l), plane_text(*info, i)));
    if (l.planes[i].row_stride_bytes < *row_bytes)
      return fail(ErrorCode::InvalidArgument,
                  text::format("{} {}: row stride {} B is below the plane's row bytes {} B", image_text(l),
                               plane_text(*info, i), l.planes[i].row_stride_bytes, *row_bytes));
    // 16-bit samples (P010, Y16) are read as u16: every row must start on one.
    const unsigned sample = info->planes[i].bits_per_sample / 8u;
    if (sample > 1 && (l.planes[i].offset_bytes % sample != 0 || l.planes[i].row_stride_bytes % sample != 0))
      return fail(ErrorCode::InvalidArgument,
                  text::format("{} {}: offset {} B and row stride {} B must be multiples of its {}-byte samples",
                               image_text(l), plane_text(*info, i), l.planes[i].offset_bytes,
                               l.planes[i].row_stride_bytes, sample));
    ET_TRY_ASSIGN(ends[i], plane_end(l, i));
  }
  if (!buffer_bytes) return {};
  for (std::size_t i = 0; i < info->plane_count; ++i)
    if (ends[i] > *buffer_bytes)
      return fail(ErrorCode::OutOfRange,
                  text::format("{} {}: ends at {} B (offset {} B, {} rows of stride {} B, last row {} B) but the "
                               "buffer has {} B",
                               image_text(l), plane_text(*info, i), ends[i], l.planes[i].offset_bytes,
                               plane_rows_of(info->planes[i], l.height), l.planes[i].row_stride_bytes,
                               *plane_row_bytes_of<U>(info->planes[i], l.width), *buffer_bytes));
  for (std::size_t i = 0; i < info->plane_count; ++i)
    for (std::size_t j = i + 1; j < info->plane_count; ++j)
      if (auto rows = shared_rows(l, i, j))
        return fail(ErrorCode::InvalidArgument, text::format("{}: {}", image_text(l), overlap_text(l, i, j, *rows)));
  return {};
}

/// Checks that every 16-bit plane of `l` (P010, Y16: read as u16) starts on a sample when the image's
/// first byte lies `image_offset` bytes into its buffer: validate_layout sees only the offsets relative
/// to that byte. Errors: InvalidArgument naming the plane, both offsets and the sample size.
template <class L>
Result<void> check_image_offset(const L& l, LayoutSize<L> image_offset) {
  const PixelFormatInfo* info = known_format(l.format);
  if (!info) return unknown_format(l);
  for (std::size_t i = 0; i < info->plane_count; ++i) {
    const unsigned sample = info->planes[i].bits_per_sample / 8u;
    if (sample > 1 && (image_offset % sample + l.planes[i].offset_bytes % sample) % sample != 0)
      return fail(ErrorCode::InvalidArgument,
                  text::format("{} {}: the image starts at offset {} B of its buffer, so the plane (at {} B in the "
                               "image) does not start on a multiple of its {}-byte samples",
                               image_text(l), plane_text(*info, i), image_offset, l.planes[i].offset_bytes, sample));
  }
  return {};
}

inline Result<void> check_alignment(std::size_t value, std::string_view what) {
  if (value == 0 || (value & (value - 1)) != 0 || value > kMaxImageAlignment)
    return fail(ErrorCode::InvalidArgument,
                text::format("image alignment: {} {} is not a power of two from 1 to {}", what, value,
                             kMaxImageAlignment));
  return {};
}

/// The default layout of ImageAlignment's rule; `allocation` receives every plane's padded rows.
template <class L>
Result<L> default_layout(std::uint32_t width, std::uint32_t height, PixelFormat format, std::size_t row_align,
                         std::size_t height_align, LayoutSize<L>* allocation) {
  using U = LayoutSize<L>;
  L l{};
  l.format = format;
  l.width = width;
  l.height = height;
  const PixelFormatInfo* info = known_format(format);
  if (!info) return unknown_format(l);
  if (width == 0 || height == 0)
    return fail(ErrorCode::InvalidArgument, text::format("{}: width and height must be non-zero", image_text(l)));
  ET_TRY(check_alignment(row_align, "row_bytes"));
  ET_TRY(check_alignment(height_align, "height"));
  std::size_t rows_align = height_align;  // powers of two: the larger is a multiple of the smaller
  for (std::size_t i = 0; i < info->plane_count; ++i)
    if (info->planes[i].v_subsampling > rows_align) rows_align = info->planes[i].v_subsampling;
  const auto padded_height = checked_round_up<U>(U{height}, static_cast<U>(rows_align));
  if (!padded_height) return overflow<U>(text::format("{}: height aligned to {}", image_text(l), rows_align));
  U offset = 0;
  for (std::size_t i = 0; i < info->plane_count; ++i) {
    const auto row_bytes = plane_row_bytes_of<U>(info->planes[i], width);
    const auto stride = row_bytes ? checked_round_up<U>(*row_bytes, static_cast<U>(row_align)) : std::nullopt;
    const auto size = stride ? checked_mul<U>(*stride, *padded_height / info->planes[i].v_subsampling) : std::nullopt;
    const auto next = size ? checked_add<U>(offset, *size) : std::nullopt;
    if (!next)
      return overflow<U>(text::format("{} {} with rows aligned to {} B and height to {}", image_text(l),
                                      plane_text(*info, i), row_align, rows_align));
    l.planes[i].offset_bytes = offset;
    l.planes[i].row_stride_bytes = *stride;
    offset = *next;
  }
  if (allocation) *allocation = offset;
  return l;
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
