// SPDX-License-Identifier: Apache-2.0
// Pure DLPack layout conversions (no platform code): our byte strides to DLPack's element strides on
// export, DLPack's int64 shape and element strides to our sizes and byte strides on import. Every
// product is checked; templated on the size type so the 32-bit cases run on any host.
#pragma once

#include <edgetensor/error.h>

#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <limits>
#include <span>
#include <utility>

#include "text/format.h"

#include "core/layout.h"
#include "base/size_math.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {
namespace dlpack_layout {

/// Shape (elements, size_t) to DLPack's int64. Errors: OutOfRange for a dimension over INT64_MAX
/// (possible only beside a zero dimension).
template <class U>
Result<void> export_shape(std::span<const U> shape, std::span<std::int64_t> out) {
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (!std::in_range<std::int64_t>(shape[i]))
      return fail(ErrorCode::OutOfRange, text::format("dlpack export: dimension {} has {} elements, more than "
                                                     "DLPack's int64 shape holds", i, shape[i]));
    out[i] = static_cast<std::int64_t>(shape[i]);
  }
  return {};
}

/// Byte strides to element strides (DLPack counts elements). Errors: InvalidArgument naming the
/// dimension and the stride when a byte stride is not a multiple of the element size (or negative).
inline Result<void> export_strides(std::span<const std::int64_t> strides_bytes, std::size_t element_size,
                                   std::span<std::int64_t> out) {
  const auto esize = static_cast<std::int64_t>(element_size);
  for (std::size_t i = 0; i < strides_bytes.size(); ++i) {
    const std::int64_t s = strides_bytes[i];
    if (s < 0 || s % esize != 0)
      return fail(ErrorCode::InvalidArgument,
                  text::format("dlpack export: stride {} B of dimension {} is not a non-negative multiple of the "
                              "element size {} B; DLPack strides count elements", s, i, element_size));
    out[i] = s / esize;
  }
  return {};
}

/// DLPack's shape to ours. Errors: InvalidArgument (a negative dimension), OutOfRange (a dimension U
/// cannot hold: over 4 GiB elements with a 32-bit size_t).
template <class U>
Result<void> import_shape(std::span<const std::int64_t> shape, std::span<U> out) {
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0)
      return fail(ErrorCode::InvalidArgument, text::format("dlpack import: dimension {} is {} (negative)", i, shape[i]));
    auto d = checked_narrow<U>(shape[i]);
    if (!d)
      return fail(ErrorCode::OutOfRange, text::format("dlpack import: dimension {} is {}, more than this process's "
                                                     "{}-bit sizes hold", i, shape[i], sizeof(U) * 8));
    out[i] = *d;
  }
  return {};
}

/// DLPack's element strides (null: compact row-major, as the spec defines a null `strides`) to byte
/// strides. Errors: Unsupported (a negative stride: we have no reversed views), InvalidArgument (a
/// zero stride on a dimension larger than 1: a broadcast, one element seen many times), OutOfRange (a
/// byte stride that overflows int64 or U).
template <class U>
Result<void> import_strides(const std::int64_t* strides, std::span<const U> shape, U element_size,
                            std::span<std::int64_t> out) {
  if (!strides) {
    ET_TRY(contiguous_strides<U>(shape, element_size, out, "dlpack import (null strides: row-major)"));
    return {};
  }
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const std::int64_t s = strides[i];
    if (s < 0)
      return fail(ErrorCode::Unsupported, text::format("dlpack import: stride {} of dimension {} is negative; "
                                                      "reversed views are not supported (copy it first)", s, i));
    if (s == 0 && shape[i] > 1)
      return fail(ErrorCode::InvalidArgument,
                  text::format("dlpack import: stride 0 on dimension {} of size {} (a broadcast view); a zero stride "
                              "is allowed only on a dimension of size 1 (copy it first)", i, shape[i]));
    std::int64_t bytes = 0;
    if (__builtin_mul_overflow(s, static_cast<std::int64_t>(element_size), &bytes) || !std::in_range<U>(bytes))
      return fail(ErrorCode::OutOfRange,
                  text::format("dlpack import: stride {} of dimension {} times the element size {} B overflows "
                              "{}-bit byte strides", s, i, element_size,
                              std::min<std::size_t>(sizeof(U), sizeof(std::int64_t)) * 8));
    out[i] = bytes;
  }
  return {};
}

}  // namespace dlpack_layout
}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
