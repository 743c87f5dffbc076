// SPDX-License-Identifier: Apache-2.0
// detail::FrameAccess: builds a Frame from validated parts (ipc::receive_frame). The public ways to
// make a frame (frame.h) import fds or wrap a tensor; a received frame's buffers are already imported.
#pragma once

#include <edgetensor/frame.h>

#include <cstddef>
#include <cstdint>
#include <span>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

/// Planes that share a buffer must not share a byte (row by row: interleaved rows that do not touch are
/// fine). Call on a validated layout. Errors: InvalidArgument naming both planes, their ranges and the
/// first rows that overlap; the layout's own errors.
Result<void> check_shared_buffer_planes(const ImageLayout& layout, std::span<const std::uint8_t> plane_buffer);

struct FrameAccess {
  /// A frame of `layout` and `colorimetry` whose distinct buffers are `buffers` (whole-buffer U8
  /// tensors, offset 0; 1 to kMaxPlanes) and whose plane i lies in buffers[plane_buffer[i]]. No checks:
  /// the caller validated the layout, the map and that each buffer holds its planes.
  static Frame make(const ImageLayout& layout, const Colorimetry& colorimetry, std::span<const TensorDyn> buffers,
                    std::span<const std::uint8_t> plane_buffer) {
    Frame f;
    f.layout_ = layout;
    f.colorimetry_ = colorimetry;
    for (std::size_t b = 0; b < buffers.size() && b < kMaxPlanes; ++b) f.buffers_[b] = buffers[b];
    f.buffer_count_ = buffers.size();
    for (std::size_t i = 0; i < plane_buffer.size() && i < kMaxPlanes; ++i) f.plane_buffer_[i] = plane_buffer[i];
    return f;
  }
};

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
