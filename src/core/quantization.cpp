// SPDX-License-Identifier: Apache-2.0
// Quantization (quantization.h): an immutable value; per-axis parameters in one shared array.
#include <edgetensor/quantization.h>
#include <edgetensor/tensor.h>  // kMaxRank

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "text/format.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {

// Written once by per_axis, then only read: copies and slices share it (no allocation, no lock).
struct Quantization::Params {
  std::vector<float> scales;
  std::vector<std::int32_t> zero_points;
};

namespace {

bool scale_ok(float scale) noexcept { return std::isfinite(scale) && scale > 0.0f; }

// The closed range of values a dtype holds, for the integer dtypes a quantization accepts.
struct IntRange {
  std::int64_t min;
  std::int64_t max;
};
bool quantizable_range(DType dtype, IntRange& out) noexcept {
  switch (dtype) {
    case DType::U8: out = {0, std::numeric_limits<std::uint8_t>::max()}; return true;
    case DType::I8: out = {std::numeric_limits<std::int8_t>::min(), std::numeric_limits<std::int8_t>::max()}; return true;
    case DType::U16: out = {0, std::numeric_limits<std::uint16_t>::max()}; return true;
    case DType::I16:
      out = {std::numeric_limits<std::int16_t>::min(), std::numeric_limits<std::int16_t>::max()};
      return true;
    case DType::U32: out = {0, std::numeric_limits<std::uint32_t>::max()}; return true;
    case DType::I32:
      out = {std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()};
      return true;
    default: return false;  // u64, i64, floats, invalid values
  }
}

}  // namespace

Result<Quantization> Quantization::per_tensor(float scale, std::int32_t zero_point) {
  if (!scale_ok(scale))
    return fail(ErrorCode::InvalidArgument,
                text::format("quantization scale {}: must be finite and > 0", scale));
  Quantization q;
  q.kind_ = QuantizationKind::PerTensor;
  q.scale_ = scale;
  q.zero_point_ = zero_point;
  return q;
}

Result<Quantization> Quantization::per_axis(std::size_t axis, std::span<const float> scales,
                                            std::span<const std::int32_t> zero_points) {
  if (axis >= kMaxRank)
    return fail(ErrorCode::OutOfRange,
                text::format("per-axis quantization axis {}: must be below kMaxRank {}", axis, kMaxRank));
  if (scales.empty())
    return fail(ErrorCode::InvalidArgument,
                text::format("per-axis quantization with 0 scales: needs 1 to kMaxQuantizationChannels {}",
                             kMaxQuantizationChannels));
  if (scales.size() != zero_points.size())
    return fail(ErrorCode::InvalidArgument,
                text::format("per-axis quantization with {} scales and {} zero points: the counts must be equal",
                             scales.size(), zero_points.size()));
  if (scales.size() > kMaxQuantizationChannels)
    return fail(ErrorCode::OutOfRange,
                text::format("per-axis quantization with {} channels: more than kMaxQuantizationChannels {}",
                             scales.size(), kMaxQuantizationChannels));
  for (std::size_t i = 0; i < scales.size(); ++i)
    if (!scale_ok(scales[i]))
      return fail(ErrorCode::InvalidArgument,
                  text::format("per-axis quantization scales[{}] = {}: must be finite and > 0", i, scales[i]));
  auto params = std::make_shared<Params>();
  params->scales.assign(scales.begin(), scales.end());
  params->zero_points.assign(zero_points.begin(), zero_points.end());
  Quantization q;
  q.kind_ = QuantizationKind::PerAxis;
  q.axis_ = static_cast<std::uint32_t>(axis);
  q.count_ = static_cast<std::uint32_t>(scales.size());
  q.params_ = std::move(params);
  return q;
}

std::span<const float> Quantization::scales() const noexcept {
  switch (kind_) {
    case QuantizationKind::PerTensor: return {&scale_, 1};
    case QuantizationKind::PerAxis: return std::span<const float>(params_->scales).subspan(first_, count_);
    default: return {};
  }
}

std::span<const std::int32_t> Quantization::zero_points() const noexcept {
  switch (kind_) {
    case QuantizationKind::PerTensor: return {&zero_point_, 1};
    case QuantizationKind::PerAxis:
      return std::span<const std::int32_t>(params_->zero_points).subspan(first_, count_);
    default: return {};
  }
}

Result<void> Quantization::check(DType dtype, std::span<const std::size_t> shape) const {
  if (kind_ == QuantizationKind::None) return {};
  IntRange range{};
  if (!quantizable_range(dtype, range))
    return fail(ErrorCode::InvalidArgument,
                text::format("quantization dtype {}: must be one of u8, i8, u16, i16, u32, i32", dtype_name(dtype)));
  const auto zps = zero_points();
  for (std::size_t i = 0; i < zps.size(); ++i) {
    if (zps[i] < range.min || zps[i] > range.max) {
      auto field = kind_ == QuantizationKind::PerTensor ? std::string("zero point")
                                                        : text::format("zero_points[{}]", i);
      return fail(ErrorCode::InvalidArgument, text::format("quantization {} = {}: outside {}'s range [{}, {}]", field,
                                                           zps[i], dtype_name(dtype), range.min, range.max));
    }
  }
  if (kind_ == QuantizationKind::PerAxis) {
    if (axis_ >= shape.size())
      return fail(ErrorCode::InvalidArgument,
                  text::format("per-axis quantization axis {}: must be below the tensor's rank {}", axis_,
                               shape.size()));
    if (shape[axis_] != count_)
      return fail(ErrorCode::InvalidArgument,
                  text::format("per-axis quantization with {} channels on axis {}: must equal shape[{}] = {}",
                               count_, axis_, axis_, shape[axis_]));
  }
  return {};
}

Result<Quantization> Quantization::slice_channels(std::size_t begin, std::size_t end) const {
  if (kind_ != QuantizationKind::PerAxis)
    return fail(ErrorCode::FailedPrecondition,
                text::format("slice_channels [{}, {}) of a quantization that is not per-axis", begin, end));
  if (begin > end || end > count_)
    return fail(ErrorCode::OutOfRange,
                text::format("quantization channels [{}, {}): must satisfy begin <= end <= channel count {}", begin,
                             end, count_));
  Quantization q = *this;  // shares params_: no allocation
  q.first_ = first_ + static_cast<std::uint32_t>(begin);
  q.count_ = static_cast<std::uint32_t>(end - begin);
  return q;
}

Result<Quantization> Quantization::with_axis(std::size_t axis) const {
  if (kind_ != QuantizationKind::PerAxis)
    return fail(ErrorCode::FailedPrecondition,
                text::format("with_axis {} of a quantization that is not per-axis", axis));
  if (axis >= kMaxRank)
    return fail(ErrorCode::OutOfRange,
                text::format("per-axis quantization axis {}: must be below kMaxRank {}", axis, kMaxRank));
  Quantization q = *this;  // shares params_: no allocation
  q.axis_ = static_cast<std::uint32_t>(axis);
  return q;
}

bool operator==(const Quantization& a, const Quantization& b) noexcept {
  if (a.kind_ != b.kind_) return false;
  if (a.kind_ == QuantizationKind::PerAxis && a.axis_ != b.axis_) return false;
  // By value: two per_axis calls with equal parameters compare equal though their arrays differ.
  return std::ranges::equal(a.scales(), b.scales()) && std::ranges::equal(a.zero_points(), b.zero_points());
}

}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
