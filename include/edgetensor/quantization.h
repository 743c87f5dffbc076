// SPDX-License-Identifier: Apache-2.0
// Affine quantization of integer tensors: real = scale * (q - zero_point), as TFLite, ONNX
// (QuantizeLinear) and PyTorch define it.
//
// A Quantization is an immutable value. Per-axis parameters live in one shared array: copying a
// Quantization, and slicing it along its axis (TensorDyn::batch, TensorDyn::slice), never allocates.
// Which operations keep it: the metadata rule in tensor.h.
#pragma once

#include <edgetensor/dtype.h>
#include <edgetensor/error.h>
#include <edgetensor/export.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {

/// Most channels a per-axis quantization may have (also the IPC limit, docs/WIRE.md).
inline constexpr std::size_t kMaxQuantizationChannels = 4096;

enum class QuantizationKind : std::uint8_t { None = 0, PerTensor = 1, PerAxis = 2 };

class ET_API Quantization {
 public:
  /// No quantization.
  Quantization() noexcept = default;
  /// One scale and zero point. Errors: InvalidArgument when scale is not finite and > 0.
  [[nodiscard]] static Result<Quantization> per_tensor(float scale, std::int32_t zero_point);
  /// One scale and zero point per index of dimension `axis` (the arrays are copied once, into the
  /// shared parameter array). Errors: InvalidArgument (empty, sizes differ, a scale not finite and > 0,
  /// naming its index), OutOfRange (axis >= kMaxRank of tensor.h, more than kMaxQuantizationChannels).
  [[nodiscard]] static Result<Quantization> per_axis(std::size_t axis, std::span<const float> scales,
                                                     std::span<const std::int32_t> zero_points);

  QuantizationKind kind() const noexcept { return kind_; }
  /// The quantized dimension (PerAxis), else 0.
  std::size_t axis() const noexcept { return axis_; }
  /// One entry (PerTensor), one per channel (PerAxis), none (None). Valid while this Quantization lives
  /// (a PerTensor span points into it; a PerAxis one into the shared array).
  std::span<const float> scales() const noexcept;
  std::span<const std::int32_t> zero_points() const noexcept;

  /// Checks this quantization against a tensor's dtype and shape: an integer dtype (u8, i8, u16, i16,
  /// u32, i32); every zero point representable in it; PerAxis: axis < rank and shape[axis] equal to the
  /// channel count. Errors: InvalidArgument naming the field, the value and the limit.
  [[nodiscard]] Result<void> check(DType dtype, std::span<const std::size_t> shape) const;

  /// Channels [begin, end) of a PerAxis quantization, same axis (shares the parameter array; begin ==
  /// end gives zero channels, as a zero-size slice of the axis has). Errors: OutOfRange (begin > end or
  /// end > channel count, naming them), FailedPrecondition when not PerAxis.
  [[nodiscard]] Result<Quantization> slice_channels(std::size_t begin, std::size_t end) const;
  /// The same PerAxis parameters on dimension `axis` (shares the parameter array), for views that move
  /// the quantized dimension (batch removes dimension 0). Errors: OutOfRange (axis >= kMaxRank),
  /// FailedPrecondition when not PerAxis.
  [[nodiscard]] Result<Quantization> with_axis(std::size_t axis) const;

  /// Equal kind, axis (PerAxis) and parameter values; whether the arrays are shared does not matter.
  friend ET_API bool operator==(const Quantization& a, const Quantization& b) noexcept;

 private:
  struct Params;  // the shared per-axis arrays (src/core/quantization.cpp)
  QuantizationKind kind_ = QuantizationKind::None;
  std::uint32_t axis_ = 0;
  float scale_ = 0.0f;            // PerTensor
  std::int32_t zero_point_ = 0;   // PerTensor
  std::shared_ptr<const Params> params_;  // PerAxis
  std::uint32_t first_ = 0;       // PerAxis window into params_
  std::uint32_t count_ = 0;
};

}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
