// SPDX-License-Identifier: Apache-2.0
// ImageLayout (image.h): the public face of the pure layout logic in image_layout_math.h.
#include <edgetensor/image.h>

#include <limits>

#include "image/image_layout_math.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {

Result<ImageLayout> ImageLayout::make(std::uint32_t width, std::uint32_t height, PixelFormat format,
                                      ImageAlignment alignment) {
  return detail::default_layout<ImageLayout>(width, height, format, alignment.row_bytes, alignment.height, nullptr);
}

Result<std::size_t> ImageLayout::allocation_bytes(std::uint32_t width, std::uint32_t height, PixelFormat format,
                                                  ImageAlignment alignment) {
  std::size_t bytes = 0;
  ET_TRY(detail::default_layout<ImageLayout>(width, height, format, alignment.row_bytes, alignment.height, &bytes));
  return bytes;
}

std::size_t ImageLayout::plane_rows(std::size_t index) const noexcept {
  const auto& info = pixel_format_info(format);
  if (index >= info.plane_count) return 0;
  return static_cast<std::size_t>(detail::plane_rows_of(info.planes[index], height));  // <= height
}

std::size_t ImageLayout::plane_row_bytes(std::size_t index) const noexcept {
  const auto& info = pixel_format_info(format);
  if (index >= info.plane_count) return 0;
  return detail::plane_row_bytes_of<std::size_t>(info.planes[index], width)
      .value_or(std::numeric_limits<std::size_t>::max());
}

Result<std::size_t> ImageLayout::plane_end_bytes(std::size_t index) const { return detail::plane_end(*this, index); }

Result<std::size_t> ImageLayout::min_buffer_bytes() const { return detail::min_buffer(*this); }

Result<void> ImageLayout::validate() const { return detail::validate_layout(*this, nullptr); }

Result<void> ImageLayout::validate(std::size_t buffer_bytes) const {
  return detail::validate_layout(*this, &buffer_bytes);
}

}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
