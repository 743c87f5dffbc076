// SPDX-License-Identifier: Apache-2.0
// Frame: an image whose planes may live in separate buffers (frame.h).
#include <edgetensor/frame.h>

#include <type_traits>

#include "text/format.h"

#include "core/backend.h"
#include "image/frame_access.h"
#include "image/image_layout_math.h"
#include "core/tensor_access.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {

using detail::TensorAccess;

namespace {

Result<void> require_frame(const Frame& f, std::string_view what) {
  if (f.is_empty()) return fail(ErrorCode::FailedPrecondition, text::format("{}: the frame is empty", what));
  return {};
}

Result<void> require_linear(const ImageLayout& layout, std::string_view what) {
  if (layout.modifier != kDrmFormatModLinear)
    return fail(ErrorCode::Unsupported,
                text::format("{}: DRM format modifier 0x{:016x} is not LINEAR (0): the CPU layout of a tiled or "
                            "compressed image is opaque; export or send it instead", what, layout.modifier));
  return {};
}

}  // namespace

namespace detail {
Result<void> check_shared_buffer_planes(const ImageLayout& layout, std::span<const std::uint8_t> plane_buffer) {
  for (std::size_t i = 0; i < plane_buffer.size(); ++i) {
    ET_TRY(layout.plane_end_bytes(i));
    for (std::size_t j = i + 1; j < plane_buffer.size(); ++j) {
      if (plane_buffer[i] != plane_buffer[j]) continue;
      ET_TRY(layout.plane_end_bytes(j));
      if (auto rows = shared_rows(layout, i, j))
        return fail(ErrorCode::InvalidArgument,
                    overlap_text(layout, i, j, *rows, text::format(" in buffer {}", plane_buffer[i])));
    }
  }
  return {};
}
}  // namespace detail

Result<Frame> Frame::allocate(const ImageLayout& layout, const AllocateOptions& options) {
  ET_TRY_ASSIGN(auto t, TensorDyn::allocate_image(layout, options));
  return from_tensor(t);
}

Result<Frame> Frame::from_tensor(const TensorDyn& image) {
  if (image.is_empty_handle()) return fail(ErrorCode::FailedPrecondition, "Frame::from_tensor: tensor has no storage");
  if (!image.image_layout())
    return fail(ErrorCode::InvalidArgument,
                "Frame::from_tensor: tensor has no image layout (set_image_layout, allocate_image or import_image_dup)");
  Frame f;
  f.layout_ = *image.image_layout();
  // The frame's offsets count from the buffer's start, the tensor's from its first element.
  for (std::size_t i = 0; i < f.layout_.plane_count(); ++i) f.layout_.planes[i].offset_bytes += image.offset_bytes();
  f.colorimetry_ = image.colorimetry();
  ET_TRY_ASSIGN(f.buffers_[0], TensorAccess::whole_buffer(image));
  f.buffer_count_ = 1;
  return f;
}

Result<Frame> Frame::import_planes_dup(std::span<const int> fds, const ImageLayout& layout, const ImportOptions& options) {
  return import_planes_dup(fds, layout, options, nullptr);
}

Result<Frame> Frame::import_planes_dup(std::span<const int> fds, const ImageLayout& layout, const ImportOptions& options,
                                       std::shared_ptr<void> keep_alive) {
  ET_TRY(layout.validate());
  const std::size_t planes = layout.plane_count();
  if (fds.size() != planes)
    return fail(ErrorCode::InvalidArgument,
                text::format("Frame::import_planes_dup: {} fds for a {} image of {} plane{} (one fd per plane; pass the "
                            "same fd again for planes that share a buffer)",
                            fds.size(), pixel_format_name(layout.format), planes, planes == 1 ? "" : "s"));
  if (options.offset_bytes != 0 || !options.strides_bytes.empty())
    return fail(ErrorCode::InvalidArgument,
                text::format("Frame::import_planes_dup: ImportOptions offset_bytes {} / {} strides: plane offsets and "
                            "strides come from the layout (leave both unset)",
                            options.offset_bytes, options.strides_bytes.size()));
  Frame f;
  f.layout_ = layout;
  for (std::size_t i = 0; i < planes; ++i) {
    ET_TRY_ASSIGN(std::size_t end, layout.plane_end_bytes(i));
    // A plane past its buffer's end is named with the layout's numbers (a probe that fails is left to
    // import_fd_dup to report).
    if (auto probe = detail::probe_fd(fds[i]); probe && end > probe->buffer_bytes)
      return fail(ErrorCode::OutOfRange,
                  text::format("Frame::import_planes_dup: {} plane {} ({}) ends at {} B (offset {} B, {} rows of "
                               "stride {} B, last row {} B) but its fd {} holds {} B",
                               pixel_format_name(layout.format), i, pixel_format_info(layout.format).planes[i].samples,
                               end, layout.planes[i].offset_bytes, layout.plane_rows(i),
                               layout.planes[i].row_stride_bytes, layout.plane_row_bytes(i), fds[i],
                               probe->buffer_bytes));
    // Each storage holds a copy: the last buffer of the frame to go drops the keep-alive.
    auto t = TensorDyn::import_fd_dup(fds[i], {end}, DType::U8, options, keep_alive);
    if (!t) {
      return fail(t.error().code(), text::format("plane {} (fd {}): {}", i, fds[i], t.error().message()),
                  t.error().sys_errno());
    }
    std::size_t k = 0;
    while (k < f.buffer_count_ && !f.buffers_[k].same_buffer(*t)) ++k;
    if (k == f.buffer_count_) {  // a new buffer (a repeated one is dropped: its dup closes here)
      ET_TRY_ASSIGN(f.buffers_[k], TensorAccess::whole_buffer(*t));
      ++f.buffer_count_;
    }
    f.plane_buffer_[i] = static_cast<std::uint8_t>(k);
  }
  ET_TRY(detail::check_shared_buffer_planes(f.layout_, std::span<const std::uint8_t>(f.plane_buffer_.data(), planes)));
  return f;
}

std::size_t Frame::plane_buffer(std::size_t plane) const noexcept {
  return plane < kMaxPlanes ? plane_buffer_[plane] : 0;
}

Result<TensorDyn> Frame::buffer(std::size_t index) const {
  ET_TRY(require_frame(*this, "Frame::buffer"));
  if (index >= buffer_count_)
    return fail(ErrorCode::OutOfRange, text::format("Frame::buffer {}: the frame has {} buffer{}", index, buffer_count_,
                                                    buffer_count_ == 1 ? "" : "s"));
  return buffers_[index];
}

Result<TensorDyn> Frame::plane(std::size_t index) const {
  ET_TRY(require_frame(*this, "Frame::plane"));
  if (index >= plane_count())
    return fail(ErrorCode::OutOfRange, text::format("Frame::plane {}: a {} frame has {} planes", index,
                                                    pixel_format_name(layout_.format), plane_count()));
  const TensorDyn& buffer = buffers_[plane_buffer_[index]];
  // The plane's block: the buffer's name, this frame's image and colorimetry (one allocation per plane view).
  auto meta = TensorAccess::edited(buffer, [&](detail::TensorMeta& m) {
    m.image = layout_;
    m.colorimetry = colorimetry_;
  });
  return TensorAccess::plane_view(buffer, layout_, index, std::move(meta));
}

template <class MapT>
Result<FrameMapT<MapT>> Frame::map_all(const Frame& f, std::string_view what) {
  ET_TRY(require_frame(f, what));
  ET_TRY(require_linear(f.layout_, what));
  FrameMapT<MapT> m;
  m.maps_.reserve(f.buffer_count_);
  for (std::size_t b = 0; b < f.buffer_count_; ++b) {  // each distinct buffer once
    if constexpr (std::is_same_v<MapT, ReadMap>) {
      ET_TRY_ASSIGN(auto one, f.buffers_[b].map_read());
      m.maps_.push_back(std::move(one));
    } else {
      ET_TRY_ASSIGN(auto one, f.buffers_[b].map_write());
      m.maps_.push_back(std::move(one));
    }
  }
  m.plane_count_ = f.plane_count();
  for (std::size_t i = 0; i < m.plane_count_; ++i) {
    ET_TRY_ASSIGN(std::size_t end, f.layout_.plane_end_bytes(i));
    m.plane_buffer_[i] = f.plane_buffer_[i];
    m.plane_begin_[i] = f.layout_.planes[i].offset_bytes;
    m.plane_size_[i] = end - f.layout_.planes[i].offset_bytes;
  }
  return m;
}

Result<FrameReadMap> Frame::map_read() const { return map_all<ReadMap>(*this, "Frame::map_read"); }
Result<FrameWriteMap> Frame::map_write() const { return map_all<WriteMap>(*this, "Frame::map_write"); }

Result<std::vector<UniqueFd>> Frame::export_plane_fds() const {
  ET_TRY(require_frame(*this, "Frame::export_plane_fds"));
  std::vector<UniqueFd> fds;
  fds.reserve(plane_count());
  for (std::size_t i = 0; i < plane_count(); ++i) {
    ET_TRY_ASSIGN(auto fd, buffers_[plane_buffer_[i]].export_fd());
    fds.push_back(std::move(fd));
  }
  return fds;
}

}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
