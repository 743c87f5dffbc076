// SPDX-License-Identifier: Apache-2.0
// Pure layout logic (no platform code): validating shapes and byte strides, and computing element
// counts and extents with checked arithmetic. Templated on the size type for 32-bit tests.
#pragma once

#include <edgetensor/error.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <string>

#include "text/format.h"

#include "base/size_math.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

template <class U>
struct LayoutT {
  U element_count = 0;
  U extent_bytes = 0;  // from the first element to one past the last reachable byte; 0 when empty
};

/// C-contiguous byte strides for `shape`. Fails with OutOfRange when the byte size overflows U, naming
/// `what` and `qualifier` (e.g. "allocate", "u8": formatted only on failure, so a hot path pays nothing).
template <class U>
Result<U> contiguous_strides(std::span<const U> shape, U element_size, std::span<std::int64_t> strides_out,
                             std::string_view what, std::string_view qualifier = {}) {
  U stride = element_size;
  bool has_zero = false;
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides_out[i] = static_cast<std::int64_t>(stride);
    if (shape[i] == 0) has_zero = true;
    auto next = checked_mul<U>(stride, shape[i] == 0 ? U{1} : shape[i]);
    if (!next || *next > static_cast<U>(INT64_MAX))
      return fail(ErrorCode::OutOfRange,
                  text::format("{}{}{} [{}]: byte size overflows {}-bit size arithmetic (a tensor holds at most {} B)",
                              what, qualifier.empty() ? "" : " ", qualifier, text::join(shape, ", "), sizeof(U) * 8,
                              std::min<std::uint64_t>(std::numeric_limits<U>::max(), INT64_MAX)));
    stride = *next;
  }
  return has_zero ? U{0} : stride;  // total bytes
}

/// Validates shape + strides (bytes) for `element_size` and computes element count and extent.
/// Rules: each stride is a non-negative multiple of the element size; a zero stride only on a
/// dimension of size 1; every product and sum is checked.
template <class U>
Result<LayoutT<U>> compute_layout(std::span<const U> shape, std::span<const std::int64_t> strides, U element_size,
                                  std::string_view what) {
  LayoutT<U> out;
  U count = 1;
  for (U d : shape) {
    auto c = checked_mul<U>(count, d);
    if (!c)
      return fail(ErrorCode::OutOfRange, text::format("{} [{}]: element count overflows {}-bit size arithmetic", what,
                                                     text::join(shape, ", "), sizeof(U) * 8));
    count = *c;
  }
  for (std::size_t i = 0; i < strides.size(); ++i) {
    std::int64_t s = strides[i];
    if (s < 0)
      return fail(ErrorCode::InvalidArgument,
                  text::format("{}: stride {} of dim {} is negative; negative strides are not supported", what, s, i));
    if (static_cast<std::uint64_t>(s) % element_size != 0)
      return fail(ErrorCode::InvalidArgument,
                  text::format("{}: stride {} B of dim {} is not a multiple of the element size {} B", what, s, i,
                              element_size));
    if (s == 0 && shape[i] != 1)
      return fail(ErrorCode::InvalidArgument,
                  text::format("{}: stride 0 on dim {} of size {}; a zero stride is allowed only on a dim of size 1",
                              what, i, shape[i]));
  }
  out.element_count = count;
  if (count == 0) return out;  // an empty tensor reaches no byte
  U last = 0;  // byte offset of the last element
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (static_cast<std::uint64_t>(strides[i]) > static_cast<std::uint64_t>(static_cast<U>(-1)))
      return fail(ErrorCode::OutOfRange, text::format("{}: stride {} exceeds the {}-bit size range", what, strides[i],
                                                     sizeof(U) * 8));
    auto term = checked_mul<U>(static_cast<U>(shape[i] - 1), static_cast<U>(strides[i]));
    auto sum = term ? checked_add<U>(last, *term) : std::nullopt;
    if (!sum)
      return fail(ErrorCode::OutOfRange, text::format("{} [{}] with strides [{}]: extent overflows {}-bit size arithmetic",
                                                     what, text::join(shape, ", "), text::join(strides, ", "),
                                                     sizeof(U) * 8));
    last = *sum;
  }
  auto extent = checked_add<U>(last, element_size);
  if (!extent) return fail(ErrorCode::OutOfRange, text::format("{}: extent overflows", what));
  out.extent_bytes = *extent;
  return out;
}

/// Checks offset + extent <= capacity without overflow.
template <class U>
Result<void> check_fits(U offset, U extent, U capacity, std::string_view what) {
  auto end = checked_add<U>(offset, extent);
  if (!end)
    return fail(ErrorCode::OutOfRange, text::format("{}: offset {} B + extent {} B overflows", what, offset, extent));
  if (*end > capacity)
    return fail(ErrorCode::OutOfRange,
                text::format("{}: needs {} B (offset {} B + extent {} B) but the buffer has {} B", what, *end, offset,
                            extent, capacity));
  return {};
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
