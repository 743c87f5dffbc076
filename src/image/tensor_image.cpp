// SPDX-License-Identifier: Apache-2.0
// TensorDyn's image side: image layouts, plane views, slices, quantization, and the metadata rule of
// tensor.h (which operation keeps which metadata; docs/ARCHITECTURE.md "Tensor metadata").
#include <edgetensor/tensor.h>

#include <algorithm>

#include "text/format.h"

#include "core/backend.h"
#include "core/layout.h"
#include "core/tensor_access.h"
#include "image/image_layout_math.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {

using detail::TensorAccess;
using detail::TensorMeta;
using detail::ViewInfo;
using detail::ViewOp;

namespace detail {
namespace {

std::string_view view_op_name(ViewOp op) noexcept {
  switch (op) {
    case ViewOp::Reshape: return "reshape";
    case ViewOp::View: return "view";
    case ViewOp::Batch: return "batch";
    case ViewOp::Slice: return "slice";
    case ViewOp::Unsqueeze: return "unsqueeze";
  }
  return "view";
}

// Per-axis quantization through an operation (the metadata rule); per-tensor and none pass unchanged.
Quantization carry_quantization(const TensorDyn& from, const TensorDyn& to, const ViewInfo& how) noexcept {
  const Quantization& q = from.quantization();
  if (q.kind() != QuantizationKind::PerAxis) return q;
  const std::size_t axis = q.axis();
  switch (how.op) {
    case ViewOp::Batch:
      if (axis == 0) {  // one channel left: its own per-tensor parameters
        auto one = Quantization::per_tensor(q.scales()[how.index], q.zero_points()[how.index]);
        return one ? *one : Quantization{};
      }
      if (auto moved = q.with_axis(axis - 1)) return *moved;
      return {};
    case ViewOp::Unsqueeze:
      if (axis < how.index) return q;
      if (auto moved = q.with_axis(axis + 1)) return *moved;
      return {};
    case ViewOp::Slice:
      if (how.index != axis) return q;
      if (auto s = q.slice_channels(how.begin, how.end)) return *s;
      return {};
    case ViewOp::Reshape:
    case ViewOp::View:
      // Kept only where the channels still map one to one: same first element, the axis's size and stride.
      if (to.offset_bytes() == from.offset_bytes() && axis < to.rank() && to.shape()[axis] == from.shape()[axis] &&
          to.strides()[axis] == from.strides()[axis])
        return q;
      return {};
  }
  return {};
}

}  // namespace

Result<void> TensorAccess::carry_metadata(const TensorDyn& from, TensorDyn& to, const ViewInfo& how) {
  to.meta_ = from.meta_;
  to.image_scope_ = from.image_scope_;
  to.image_plane_ = from.image_plane_;
  if (from.image_scope_ == TensorDyn::ImageScope::Whole) {
    // The layout follows the geometry, the format the bytes: the same bytes in another shape still hold
    // that image's samples.
    const bool same_bytes = to.offset_bytes_ == from.offset_bytes_ && to.extent_bytes_ == from.extent_bytes_;
    const bool same_geometry = same_bytes && std::ranges::equal(to.shape(), from.shape()) &&
                               std::ranges::equal(to.strides(), from.strides());
    const ImageLayout& layout = from.meta_->image;
    if (!same_geometry && layout.modifier != kDrmFormatModLinear)
      return fail(ErrorCode::Unsupported,
                  text::format("{}: the tensor holds a {} image with DRM format modifier 0x{:016x} (not LINEAR): "
                               "its CPU layout is opaque, so only views of the whole tensor are meaningful; export "
                               "or send it instead",
                               view_op_name(how.op), pixel_format_name(layout.format), layout.modifier));
    if (!same_geometry) to.image_scope_ = same_bytes ? TensorDyn::ImageScope::Samples : TensorDyn::ImageScope::None;
  }
  to.quantization_ = carry_quantization(from, to, how);
  return {};
}

Result<TensorDyn> TensorAccess::plane_view(const TensorDyn& base, const ImageLayout& layout, std::size_t index,
                                           std::shared_ptr<const TensorMeta> meta) {
  if (layout.modifier != kDrmFormatModLinear)
    return fail(ErrorCode::Unsupported,
                text::format("plane {}: DRM format modifier 0x{:016x} is not LINEAR (0): the CPU layout of a "
                            "tiled or compressed image is opaque; export or send it instead",
                            index, layout.modifier));
  const PixelFormatInfo& info = pixel_format_info(layout.format);
  if (index >= info.plane_count)
    return fail(ErrorCode::OutOfRange, text::format("plane {} of a {} image: it has {} plane{}", index, info.name,
                                                    info.plane_count, info.plane_count == 1 ? "" : "s"));
  const PlaneFormat& pf = info.planes[index];
  const std::size_t sample_bytes = pf.bits_per_sample / 8u;
  const std::size_t samples = pf.bytes_per_group / sample_bytes;  // per group
  const std::size_t rows = layout.plane_rows(index);
  const std::size_t pixels = (layout.width + pf.h_subsampling - 1u) / pf.h_subsampling;
  const std::size_t groups = (pixels + pf.pixels_per_group - 1u) / pf.pixels_per_group;
  const auto stride = static_cast<std::int64_t>(layout.planes[index].row_stride_bytes);
  const auto group = static_cast<std::int64_t>(pf.bytes_per_group);
  const auto sample = static_cast<std::int64_t>(sample_bytes);
  const DType dtype = sample_bytes == 2 ? DType::U16 : base.dtype_ == DType::I8 ? DType::I8 : DType::U8;
  std::array<std::size_t, 3> shape{rows, groups, samples};
  std::array<std::int64_t, 3> strides{stride, group, sample};
  const std::size_t rank = samples == 1 ? 2 : 3;  // one sample per pixel: [rows, cols]
  auto offset = checked_add<std::size_t>(base.offset_bytes_, layout.planes[index].offset_bytes);
  if (!offset)
    return fail(ErrorCode::OutOfRange, text::format("plane {}: offset {} B + {} B overflows", index,
                                                    base.offset_bytes_, layout.planes[index].offset_bytes));
  const auto build = [&](std::string_view what) {
    return make(base.storage_, ArrayRef<std::size_t>(shape.data(), rank), dtype,
                ArrayRef<std::int64_t>(strides.data(), rank), *offset, meta, what);
  };
  auto built = build("plane");  // named only on failure: a plane view formats no text
  if (!built) built = build(text::format("plane {} of a {} image", index, info.name));
  ET_TRY_ASSIGN(auto t, std::move(built));
  t.image_scope_ = TensorDyn::ImageScope::Samples;
  t.image_plane_ = static_cast<std::int8_t>(index);
  // Per-tensor parameters describe values of the base's dtype: kept when the plane has that dtype.
  // Per-axis parameters: when the plane is exactly the base's sub-tensor batch(index) (a planar image
  // quantized per channel on dimension 0), that channel's per-tensor parameters, as batch gives them.
  t.quantization_ = {};
  if (base.dtype_ == dtype && base.quantization_.kind() == QuantizationKind::PerTensor) {
    t.quantization_ = base.quantization_;
  } else if (base.dtype_ == dtype && base.quantization_.kind() == QuantizationKind::PerAxis && base.rank_ > 0 &&
             index < base.shape_[0]) {
    if (auto b = base.batch(index); b && b->offset_bytes_ == t.offset_bytes_ &&
                                    std::ranges::equal(b->shape(), t.shape()) &&
                                    std::ranges::equal(b->strides(), t.strides()))
      t.quantization_ = b->quantization_;
  }
  return t;
}

Result<TensorDyn> TensorAccess::whole_buffer(const TensorDyn& t) {
  if (!t.storage_) return fail(ErrorCode::FailedPrecondition, "tensor has no storage");
  const std::size_t bytes = t.buffer_bytes();
  // A view over all of it: it keeps the name and colorimetry, not the image (scope None), as any view
  // that changes the shape (tensor.h's metadata rule), sharing the block.
  return make(t.storage_, ArrayRef<std::size_t>(&bytes, 1), DType::U8, {}, 0, t.meta_, "buffer");
}

}  // namespace detail

const ImageLayout* TensorDyn::image_layout() const noexcept {
  return image_scope_ == ImageScope::Whole ? &meta_->image : nullptr;
}

PixelFormat TensorDyn::pixel_format() const noexcept {
  return image_scope_ != ImageScope::None ? meta_->image.format : PixelFormat::Unknown;
}

const Colorimetry& TensorDyn::colorimetry() const noexcept {
  static const Colorimetry unspecified;
  return meta_ ? meta_->colorimetry : unspecified;
}

void TensorDyn::set_colorimetry(const Colorimetry& colorimetry) {
  meta_ = TensorAccess::edited(*this, [&](TensorMeta& m) { m.colorimetry = colorimetry; });
}

Result<void> TensorDyn::set_image_layout(const ImageLayout& layout) {
  if (!storage_) return fail(ErrorCode::FailedPrecondition, "set_image_layout: tensor has no storage");
  ET_TRY(layout.validate(extent_bytes_));
  if (auto starts = detail::check_image_offset(layout, offset_bytes_); !starts)
    return fail(starts.error().code(), "set_image_layout: " + starts.error().message());
  // Plane views are views of the bytes in the tensor's dtype: u8 or i8 samples, u16 for 16-bit formats.
  const PixelFormatInfo& info = pixel_format_info(layout.format);
  const bool wide = std::all_of(info.planes.begin(), info.planes.begin() + info.plane_count,
                                [](const PlaneFormat& p) { return p.bits_per_sample == 16; });
  if (wide ? dtype_ != DType::U16 && dtype_ != DType::U8 : dtype_ != DType::U8 && dtype_ != DType::I8)
    return fail(ErrorCode::InvalidArgument,
                text::format("set_image_layout: a tensor of dtype {} cannot hold a {} image: its tensor must be {}",
                             dtype_name(dtype_), info.name, wide ? "u16 or u8" : "u8 or i8"));
  // The layout describes a contiguous run of bytes from the first element; a strided tensor's own rows
  // would disagree with it.
  if (!is_contiguous())
    return fail(ErrorCode::FailedPrecondition,
                text::format("set_image_layout: tensor [{}] with strides [{}] B is not contiguous; attach the layout "
                             "to the contiguous tensor holding the image's bytes (import_image_dup, allocate_image "
                             "or a contiguous view)",
                             text::join(shape(), ", "), text::join(strides(), ", ")));
  meta_ = TensorAccess::edited(*this, [&](TensorMeta& m) { m.image = layout; });
  image_scope_ = ImageScope::Whole;
  image_plane_ = -1;
  return {};
}

void TensorDyn::clear_image_layout() noexcept {
  image_scope_ = ImageScope::None;  // the block is shared: only this tensor stops showing its image
  image_plane_ = -1;
}

Result<void> TensorDyn::set_quantization(Quantization quantization) {
  ET_TRY(quantization.check(dtype_, shape()));
  quantization_ = std::move(quantization);
  return {};
}

Result<TensorDyn> TensorDyn::plane(std::size_t index) const {
  if (!storage_) return fail(ErrorCode::FailedPrecondition, "plane: tensor has no storage");
  if (image_scope_ != ImageScope::Whole)
    return fail(ErrorCode::FailedPrecondition,
                text::format("plane {}: tensor has no image layout (set_image_layout, allocate_image or "
                            "import_image_dup attach one; views and batches drop it)", index));
  return TensorAccess::plane_view(*this, meta_->image, index, meta_);
}

Result<TensorDyn> TensorDyn::image_view() const {
  ET_TRY_ASSIGN(auto first, plane(0));
  const ImageLayout& layout = meta_->image;
  const PixelFormatInfo& info = pixel_format_info(layout.format);
  // The image in the tensor's own geometry (CHW over a [3, h, w] tensor) keeps all its quantization.
  const auto keep_if_same_geometry = [this](TensorDyn& v) {
    if (v.offset_bytes_ == offset_bytes_ && v.dtype_ == dtype_ && std::ranges::equal(v.shape(), shape()) &&
        std::ranges::equal(v.strides(), strides()))
      v.quantization_ = quantization_;
  };
  if (info.plane_count == 1) {
    first.image_plane_ = -1;
    keep_if_same_geometry(first);
    return first;
  }
  // Planar formats without subsampling (PlanarRgb, PlanarRgba): [planes, h, w] when evenly spaced.
  for (std::size_t i = 0; i < info.plane_count; ++i)
    if (info.planes[i].h_subsampling != 1 || info.planes[i].v_subsampling != 1 ||
        info.planes[i].bytes_per_group != info.planes[0].bytes_per_group || info.planes[i].samples.size() != 1)
      return fail(ErrorCode::FailedPrecondition,
                  text::format("image_view: a {} image's planes differ in size or sampling; take plane(i) each",
                              info.name));
  const std::size_t stride = layout.planes[0].row_stride_bytes;
  const auto spacing = static_cast<std::int64_t>(layout.planes[1].offset_bytes) -
                       static_cast<std::int64_t>(layout.planes[0].offset_bytes);
  for (std::size_t i = 1; i < info.plane_count; ++i) {
    const auto gap = static_cast<std::int64_t>(layout.planes[i].offset_bytes) -
                     static_cast<std::int64_t>(layout.planes[i - 1].offset_bytes);
    if (layout.planes[i].row_stride_bytes != stride || gap != spacing || spacing <= 0)
      return fail(ErrorCode::FailedPrecondition,
                  text::format("image_view: {} planes are not one [planes, h, w] array (plane {}: offset {} B, row "
                              "stride {} B; plane 0: offset {} B, row stride {} B; planes must be {} B apart with one "
                              "stride); take plane(i) each",
                              info.name, i, layout.planes[i].offset_bytes, layout.planes[i].row_stride_bytes,
                              layout.planes[0].offset_bytes, stride, spacing));
  }
  std::array<std::size_t, 3> shape{info.plane_count, first.shape_[0], first.shape_[1]};
  std::array<std::int64_t, 3> strides{spacing, first.strides_[0], first.strides_[1]};
  ET_TRY_ASSIGN(auto t, TensorAccess::make(storage_, ArrayRef<std::size_t>(shape.data(), 3), first.dtype_,
                                           ArrayRef<std::int64_t>(strides.data(), 3), first.offset_bytes_, meta_,
                                           "image_view"));
  t.image_scope_ = ImageScope::Samples;
  t.quantization_ = first.quantization_.kind() == QuantizationKind::PerTensor ? first.quantization_ : Quantization{};
  keep_if_same_geometry(t);
  return t;
}

Result<TensorDyn> TensorDyn::unsqueeze(std::size_t dim) const {
  if (!storage_) return fail(ErrorCode::FailedPrecondition, "unsqueeze: tensor has no storage");
  if (rank_ >= kMaxRank)
    return fail(ErrorCode::InvalidArgument,
                text::format("unsqueeze: a rank-{} tensor cannot take another dimension (at most {})", rank_, kMaxRank));
  if (dim > rank_)
    return fail(ErrorCode::InvalidArgument,
                text::format("unsqueeze: dimension {} of a rank-{} tensor (0 to {})", dim, rank_, rank_));
  TensorDyn t = *this;
  for (std::size_t i = rank_; i > dim; --i) {
    t.shape_[i] = shape_[i - 1];
    t.strides_[i] = strides_[i - 1];
  }
  t.shape_[dim] = 1;
  // A size-1 dimension's stride never moves a byte; give it the value a contiguous tensor would have.
  // (Strides of zero-element tensors are unbounded: an overflowing product falls back to the element size.)
  std::int64_t next = static_cast<std::int64_t>(element_size());
  if (std::int64_t p = 0;
      dim < rank_ && !__builtin_mul_overflow(strides_[dim], static_cast<std::int64_t>(shape_[dim]), &p))
    next = p;
  t.strides_[dim] = next;
  t.rank_ = static_cast<std::uint8_t>(rank_ + 1);
  ET_TRY(TensorAccess::carry_metadata(*this, t, {ViewOp::Unsqueeze, dim}));
  return t;
}

Result<TensorDyn> TensorDyn::slice(std::size_t dim, std::size_t begin, std::size_t end) const {
  if (!storage_) return fail(ErrorCode::FailedPrecondition, "slice: tensor has no storage");
  if (dim >= rank_)
    return fail(ErrorCode::InvalidArgument, text::format("slice: dimension {} of a rank-{} tensor", dim, rank_));
  if (begin > end || end > shape_[dim])
    return fail(ErrorCode::OutOfRange, text::format("slice [{}, {}) of dimension {}: its size is {}", begin, end,
                                                    dim, shape_[dim]));
  // Checked: with zero elements the strides were never bounded by an extent.
  auto step = detail::checked_mul<std::size_t>(begin, static_cast<std::size_t>(strides_[dim]));
  auto offset = step ? detail::checked_add<std::size_t>(offset_bytes_, *step) : std::nullopt;
  if (!offset)
    return fail(ErrorCode::OutOfRange, text::format("slice [{}, {}) of dimension {}: offset {} B + {} x stride {} B "
                                                    "overflows", begin, end, dim, offset_bytes_, begin, strides_[dim]));
  std::array<std::size_t, kMaxRank> shape = shape_;
  shape[dim] = end - begin;
  ET_TRY_ASSIGN(auto t, TensorAccess::make(storage_, ArrayRef<std::size_t>(shape.data(), rank_), dtype_,
                                           ArrayRef<std::int64_t>(strides_.data(), rank_), *offset, meta_, "slice"));
  ET_TRY(TensorAccess::carry_metadata(*this, t, {ViewOp::Slice, dim, begin, end}));
  return t;
}

Result<TensorDyn> TensorDyn::allocate_image(std::uint32_t width, std::uint32_t height, PixelFormat format,
                                            ImageAlignment alignment, const AllocateOptions& options) {
  ET_TRY_ASSIGN(auto layout, ImageLayout::make(width, height, format, alignment));
  ET_TRY_ASSIGN(std::size_t bytes, ImageLayout::allocation_bytes(width, height, format, alignment));
  ET_TRY_ASSIGN(auto t, allocate({bytes}, DType::U8, options));
  ET_TRY(t.set_image_layout(layout));
  return t;
}

Result<TensorDyn> TensorDyn::allocate_image(const ImageLayout& layout, const AllocateOptions& options) {
  ET_TRY(layout.validate());
  ET_TRY_ASSIGN(std::size_t bytes, layout.min_buffer_bytes());
  ET_TRY_ASSIGN(auto t, allocate({bytes}, DType::U8, options));
  ET_TRY(t.set_image_layout(layout));
  return t;
}

Result<TensorDyn> TensorDyn::import_image_dup(int borrowed_fd, const ImageLayout& layout, const ImportOptions& options) {
  return import_image_dup(borrowed_fd, layout, options, nullptr);
}

Result<TensorDyn> TensorDyn::import_image_dup(int borrowed_fd, const ImageLayout& layout, const ImportOptions& options,
                                              std::shared_ptr<void> keep_alive) {
  if (!options.strides_bytes.empty())
    return fail(ErrorCode::InvalidArgument,
                text::format("import_image_dup: ImportOptions::strides_bytes has {} entries; an image's strides come "
                            "from its layout (leave it empty)", options.strides_bytes.size()));
  ET_TRY(layout.validate());
  if (auto starts = detail::check_image_offset(layout, options.offset_bytes); !starts)
    return fail(starts.error().code(), text::format("import_image_dup of fd {} at offset_bytes {}: {}", borrowed_fd,
                                                    options.offset_bytes, starts.error().message()));
  ET_TRY_ASSIGN(std::size_t bytes, layout.min_buffer_bytes());
  // Name the plane that does not fit (import_fd_dup would only say the whole extent is too long). A
  // probe that fails, or an offset past the end, is left to import_fd_dup to report.
  if (auto probe = detail::probe_fd(borrowed_fd); probe && options.offset_bytes <= probe->buffer_bytes) {
    if (auto fits = layout.validate(probe->buffer_bytes - options.offset_bytes); !fits)
      return fail(fits.error().code(),
                  options.offset_bytes == 0
                      ? text::format("import_image_dup of fd {} ({} B buffer): {}", borrowed_fd, probe->buffer_bytes,
                                     fits.error().message())
                      : text::format("import_image_dup of fd {} ({} B buffer; the image at offset {} B has the {} B "
                                     "after it): {}",
                                     borrowed_fd, probe->buffer_bytes, options.offset_bytes,
                                     probe->buffer_bytes - options.offset_bytes, fits.error().message()));
  }
  ET_TRY_ASSIGN(auto t, import_fd_dup(borrowed_fd, {bytes}, DType::U8, options, std::move(keep_alive)));
  ET_TRY(t.set_image_layout(layout));
  return t;
}

}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
