// SPDX-License-Identifier: Apache-2.0
// detail::TensorAccess: the one place that fills a TensorDyn's fields (tensor.cpp: building tensors;
// tensor_image.cpp: image layouts, plane views, slices and the metadata rule of tensor.h), and
// detail::TensorMeta, the block of metadata that copies and views share.
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

/// A tensor's name, image and colorimetry: one immutable block shared by every copy and view that keeps
/// them (docs/ARCHITECTURE.md "Tensor metadata"). A setter builds a new block; a view never does: what
/// it shows of `image` is the tensor's own ImageScope.
struct TensorMeta {
  std::string name;
  /// The image's layout (offsets from the first element of the tensor it was attached to), shown where
  /// the tensor's scope is Whole; with scope Samples only its format is read (a plane view received
  /// over IPC has a format and no layout).
  ImageLayout image;
  Colorimetry colorimetry;
};

/// Which operation made a tensor from another (the metadata rule, tensor.h).
enum class ViewOp { Reshape, View, Batch, Slice, Unsqueeze };
struct ViewInfo {
  ViewOp op;
  std::size_t index = 0;  // Batch: n; Slice: the dimension; Unsqueeze: the new dimension
  std::size_t begin = 0;  // Slice: [begin, end)
  std::size_t end = 0;
};

struct TensorAccess {
  /// Builds a tensor from validated parts: checks dtype, rank, strides, offset alignment and that the
  /// extent fits the storage. It shares `meta` and shows none of its image (scope None), no quantization.
  static Result<TensorDyn> make(std::shared_ptr<Storage> storage, ArrayRef<std::size_t> shape, DType dtype,
                                ArrayRef<std::int64_t> strides, std::size_t offset,
                                std::shared_ptr<const TensorMeta> meta, std::string_view what);
  /// A block holding only `name`; null for an empty name (no block at all).
  static std::shared_ptr<const TensorMeta> named(std::string name);
  /// `t`'s block (or an empty one) changed by `edit`, as a new block: the setters' one allocation.
  template <class F>
  static std::shared_ptr<const TensorMeta> edited(const TensorDyn& t, F edit) {
    TensorMeta m = t.meta_ ? *t.meta_ : TensorMeta{};
    edit(m);
    return std::make_shared<const TensorMeta>(std::move(m));
  }
  static Result<TensorDyn> import(std::unique_ptr<Backing> backing, ArrayRef<std::size_t> shape, DType dtype,
                                  const ImportOptions& options, std::shared_ptr<void> keep_alive = {});
  /// Gives `to`, made from `from` by `how`, the metadata tensor.h's rule says it keeps: from's block,
  /// the part of its image the new geometry still shows, the quantization that follows. Never allocates.
  /// Errors: Unsupported when `from` holds an image with a non-LINEAR modifier and `to` is not the whole
  /// of it (an opaque CPU layout has no meaningful part).
  static Result<void> carry_metadata(const TensorDyn& from, TensorDyn& to, const ViewInfo& how);
  /// The natural view of plane `index` of `layout` inside `base` (offsets count from base's first
  /// byte), sharing `meta` (whose image format is layout's), with plane index and per-tensor
  /// quantization set (TensorDyn::plane).
  static Result<TensorDyn> plane_view(const TensorDyn& base, const ImageLayout& layout, std::size_t index,
                                      std::shared_ptr<const TensorMeta> meta);
  /// A U8 tensor over the whole buffer of `t`'s storage (offset 0, [buffer_bytes]) with t's name and
  /// colorimetry and no image, as any view that changes the shape; it shares t's block (no allocation).
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
  /// Allocates one block.
  static void set_image_plane(TensorDyn& t, PixelFormat format, int plane) {
    t.meta_ = edited(t, [&](TensorMeta& m) { m.image = ImageLayout{.format = format}; });
    t.image_scope_ = TensorDyn::ImageScope::Samples;
    t.image_plane_ = static_cast<std::int8_t>(plane);
  }
};

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
