// SPDX-License-Identifier: Apache-2.0
// Frame: an image whose planes may live in separate buffers (V4L2 multi-planar buffers, libcamera's
// FrameBuffer planes, one fd per plane from a decoder), while a TensorDyn stays single-storage.
//
// A Frame holds an ImageLayout and, per plane, a U8 tensor over that plane's buffer (offsets in the
// layout count from the start of each plane's own buffer). Planes passed as several fds of the same
// buffer (libcamera passes the same DMA-BUF once per plane; recognised as TensorDyn::same_buffer
// recognises it) share one storage: it is imported, mapped and synced once. A single-buffer image
// tensor (TensorDyn with an image_layout) converts to a one-buffer Frame without a copy.
//
// A Frame holds no quantization: it belongs to tensors (Frame::from_tensor leaves a tensor's behind; set
// it on the plane views a model reads).
//
// Ownership: a Frame shares its storages as a TensorDyn does; copies are cheap. Thread rules as
// TensorDyn. IPC: ipc::send_frame / ipc::receive_frame (ipc.h; docs/WIRE.md, "The frame message").
#pragma once

#include <edgetensor/error.h>
#include <edgetensor/export.h>
#include <edgetensor/image.h>
#include <edgetensor/map.h>
#include <edgetensor/tensor.h>
#include <edgetensor/unique_fd.h>

#include <array>
#include <cstddef>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {

namespace detail {
struct FrameAccess;  // defined inside the library only (src/core/frame_access.h): ipc::receive_frame builds frames
}  // namespace detail

template <class MapT> class FrameMapT;
using FrameReadMap = FrameMapT<ReadMap>;
using FrameWriteMap = FrameMapT<WriteMap>;

class ET_API Frame {
 public:
  /// An empty frame (no planes); most calls fail with FailedPrecondition.
  Frame() = default;

  /// Allocates an image with all planes in one buffer (TensorDyn::allocate_image) and wraps it.
  [[nodiscard]] static Result<Frame> allocate(const ImageLayout& layout, const AllocateOptions& options = {});
  /// Wraps a single-buffer image tensor (one whose image_layout() is set). Errors: InvalidArgument
  /// when it has no layout.
  [[nodiscard]] static Result<Frame> from_tensor(const TensorDyn& image);
  /// Imports one borrowed fd per plane (the library dups them; the caller keeps and closes its own):
  /// fds.size() must equal the format's plane count; plane i lies at layout.planes[i].offset_bytes in
  /// fds[i]'s buffer, which must hold that plane's tight end (ImageLayout::plane_end_bytes). fds of
  /// the same buffer share one storage. options.offset_bytes must be 0 (the offsets are in the layout);
  /// the rest of ImportOptions applies to every fd. Errors: InvalidArgument (fd count, layout,
  /// offset_bytes, a foreign fd as import_fd_dup names it), OutOfRange (a plane past its buffer's end,
  /// naming the plane and both numbers).
  [[nodiscard]] static Result<Frame> import_planes_dup(std::span<const int> fds, const ImageLayout& layout,
                                                       const ImportOptions& options = {});
  /// As import_planes_dup, and every storage it makes holds a copy of `keep_alive`
  /// (TensorDyn::import_fd_dup's overload says how): it is dropped when the frame's last buffer goes
  /// (the last Frame, plane view, map or channel hold of any of them). On failure, dropped before return.
  [[nodiscard]] static Result<Frame> import_planes_dup(std::span<const int> fds, const ImageLayout& layout,
                                                       const ImportOptions& options, std::shared_ptr<void> keep_alive);

  bool is_empty() const noexcept { return layout_.format == PixelFormat::Unknown; }
  const ImageLayout& layout() const noexcept { return layout_; }
  std::size_t plane_count() const noexcept { return layout_.plane_count(); }
  /// Distinct buffers (1 to plane_count()).
  std::size_t buffer_count() const noexcept { return buffer_count_; }
  /// Which buffer plane `plane` lies in (0 to buffer_count() - 1).
  std::size_t plane_buffer(std::size_t plane) const noexcept;
  /// A U8 tensor [buffer bytes] over buffer `index`: export it, send it, check same_buffer.
  /// Errors: OutOfRange for an index past buffer_count().
  [[nodiscard]] Result<TensorDyn> buffer(std::size_t index) const;
  /// The view of plane `index` (TensorDyn::plane's shapes and rules). Errors as TensorDyn::plane.
  [[nodiscard]] Result<TensorDyn> plane(std::size_t index) const;

  const Colorimetry& colorimetry() const noexcept { return colorimetry_; }
  void set_colorimetry(const Colorimetry& c) noexcept { colorimetry_ = c; }

  /// Maps every distinct buffer once (DMA-BUF: one sync bracket per buffer) for reading or writing.
  /// Errors: Unsupported for a non-linear modifier, as TensorDyn::map_read otherwise.
  [[nodiscard]] Result<FrameReadMap> map_read() const;
  [[nodiscard]] Result<FrameWriteMap> map_write() const;

  /// One new CLOEXEC fd per plane (planes of one buffer get separate fds of it); the caller owns them.
  /// Pass layout() along: with the fds it is what import_planes_dup takes. Errors as TensorDyn::export_fd.
  [[nodiscard]] Result<std::vector<UniqueFd>> export_plane_fds() const;

 private:
  friend struct detail::FrameAccess;
  template <class MapT>
  static Result<FrameMapT<MapT>> map_all(const Frame& frame, std::string_view what);  // src/core/frame.cpp

  ImageLayout layout_;
  Colorimetry colorimetry_;
  std::array<TensorDyn, kMaxPlanes> buffers_{};          // distinct buffers, [0, buffer_count_)
  std::array<std::uint8_t, kMaxPlanes> plane_buffer_{};  // plane -> index into buffers_
  std::size_t buffer_count_ = 0;
};

/// The CPU maps of a frame's buffers, one per distinct buffer, with each plane's bytes.
template <class MapT>
class FrameMapT {
 public:
  FrameMapT() = default;
  /// Bytes of plane `index`: from its offset to its tight end (plane_end_bytes), rows row_stride
  /// apart. Empty for an index past the plane count.
  auto plane_bytes(std::size_t index) const noexcept {
    using Span = decltype(std::declval<const MapT&>().bytes());
    if (index >= plane_count_) return Span{};
    return maps_[plane_buffer_[index]].bytes().subspan(plane_begin_[index], plane_size_[index]);
  }
  std::size_t plane_count() const noexcept { return plane_count_; }

 private:
  friend class Frame;
  std::vector<MapT> maps_;
  std::array<std::uint8_t, kMaxPlanes> plane_buffer_{};
  std::array<std::size_t, kMaxPlanes> plane_begin_{};
  std::array<std::size_t, kMaxPlanes> plane_size_{};
  std::size_t plane_count_ = 0;
};

}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
