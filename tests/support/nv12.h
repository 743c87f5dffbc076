// SPDX-License-Identifier: Apache-2.0
// NV12 layouts and two-buffer frames for tests, where ImageLayout::make alone does not give the layout.
#pragma once

#include <edgetensor/edgetensor.h>

#include <cstddef>
#include <cstdint>

#include "support/test_support.h"

namespace et_test {

/// NV12 `w` x `h`, both planes' rows `stride` bytes apart, Y at offset 0 and UV at `uv_offset` (0 in a
/// Frame whose planes each start their own buffer, as V4L2 NV12M). For layouts ImageLayout::make does
/// not give: strides or offsets of a test's choosing, or invalid ones a test expects refused.
inline edgetensor::ImageLayout nv12_layout(std::uint32_t w, std::uint32_t h, std::size_t stride,
                                           std::size_t uv_offset = 0) {
  edgetensor::ImageLayout l;
  l.format = edgetensor::PixelFormat::Nv12;
  l.width = w;
  l.height = h;
  l.planes[0] = {0, stride};
  l.planes[1] = {uv_offset, stride};
  return l;
}

/// NV12 `w` x `h` (tight rows) with each plane in a Shm tensor of its own, as V4L2's NV12M and libcamera
/// deliver it: the chroma plane's offset is 0, the start of its own buffer.
struct Nv12TwoBuffers {
  edgetensor::ImageLayout layout;
  edgetensor::Result<edgetensor::TensorDyn> luma, chroma;
};
inline Nv12TwoBuffers nv12_two_buffers(std::uint32_t w, std::uint32_t h) {
  using namespace edgetensor;
  ImageLayout layout = ImageLayout::make(w, h, PixelFormat::Nv12).value();
  layout.planes[1].offset_bytes = 0;
  auto plane = [&](std::size_t i) {
    return TensorDyn::allocate({layout.planes[i].row_stride_bytes * layout.plane_rows(i)}, DType::U8,
                               mem(MemoryKind::Shm));
  };
  return {layout, plane(0), plane(1)};
}

/// A Frame over fds exported from both tensors, as a consumer imports them.
inline edgetensor::Result<edgetensor::Frame> import_frame(const Nv12TwoBuffers& b) {
  auto fd0 = b.luma->export_fd();
  auto fd1 = b.chroma->export_fd();
  if (!fd0) return edgetensor::fail(fd0.error());
  if (!fd1) return edgetensor::fail(fd1.error());
  const int fds[] = {fd0->get(), fd1->get()};
  return edgetensor::Frame::import_planes_dup(fds, b.layout);
}

}  // namespace et_test
