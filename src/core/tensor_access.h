// SPDX-License-Identifier: Apache-2.0
// detail::TensorAccess: the one place that fills a TensorDyn's fields (tensor.cpp: building tensors;
// tensor_image.cpp: image layouts, plane views, slices and the metadata rule of image.h).
#pragma once

#include <edgetensor/tensor.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "core/storage.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

/// Which operation made a tensor from another (the metadata rule, image.h).
enum class ViewOp { Reshape, View, Batch, Slice, Unsqueeze };
struct ViewInfo {
  ViewOp op;
  std::size_t index = 0;  // Batch: n; Slice: the dimension; Unsqueeze: the new dimension
  std::size_t begin = 0;  // Slice: [begin, end)
  std::size_t end = 0;
};

struct TensorAccess {
  /// Builds a tensor from validated parts: checks dtype, rank, strides, offset alignment and that the
  /// extent fits the storage. No metadata.
  static Result<TensorDyn> make(std::shared_ptr<Storage> storage, ArrayRef<std::size_t> shape, DType dtype,
                                ArrayRef<std::int64_t> strides, std::size_t offset, std::string name,
                                std::string_view what);
  static Result<TensorDyn> import(std::unique_ptr<Backing> backing, ArrayRef<std::size_t> shape, DType dtype,
                                  const ImportOptions& options);
  /// Gives `to`, made from `from` by `how`, the metadata image.h's rule says it keeps. Never allocates.
  /// Errors: Unsupported when `from` holds an image with a non-LINEAR modifier and `to` is not the whole
  /// of it (an opaque CPU layout has no meaningful part).
  static Result<void> carry_metadata(const TensorDyn& from, TensorDyn& to, const ViewInfo& how);
  /// The natural view of plane `index` of `layout` inside `base` (offsets count from base's first
  /// byte), with format, plane index, colorimetry and per-tensor quantization set (TensorDyn::plane).
  static Result<TensorDyn> plane_view(const TensorDyn& base, const ImageLayout& layout, std::size_t index,
                                      const Colorimetry& colorimetry);
  /// A U8 tensor over the whole buffer of `t`'s storage (offset 0, [buffer_bytes]), no metadata.
  static Result<TensorDyn> whole_buffer(const TensorDyn& t);
  /// `proto`'s description (shape, dtype, strides, offset, name, metadata) over `storage`, which must be
  /// a buffer of the same size and kind: a pool's buffer handed out again. No checks.
  static TensorDyn with_storage(TensorDyn proto, std::shared_ptr<Storage> storage) noexcept {
    proto.storage_ = std::move(storage);
    return proto;
  }
  /// `t` without its storage (a description to rebuild with with_storage).
  static TensorDyn without_storage(TensorDyn t) noexcept {
    t.storage_.reset();
    return t;
  }
  /// Marks `t` as plane `plane` (-1: the whole image, as image_view) of a `format` image, with no
  /// layout: ipc::receive rebuilding what the sender had. No checks: the caller validated both.
  static void set_image_plane(TensorDyn& t, PixelFormat format, int plane) noexcept {
    t.image_layout_.reset();
    t.pixel_format_ = format;
    t.image_plane_ = static_cast<std::int8_t>(plane);
  }
};

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
