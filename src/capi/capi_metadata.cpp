// SPDX-License-Identifier: Apache-2.0
// Quantization and colorimetry: getters, and setters that give a new handle (a handle is read-only).
#include "capi/capi_support.h"

#include <span>
#include <string>

using namespace edgetensor;
using namespace edgetensor::capi;

namespace {

// "<what> <value> is not ... (0 to <last>)": a C enumeration value checked against its constants.
Result<void> check_enum(std::string_view what, int32_t value, int32_t last, std::string_view constants) {
  if (value < 0 || value > last)
    return fail(ErrorCode::InvalidArgument, std::string(what) + " " + std::to_string(value) + " is not an " +
                                                std::string(constants) + " value (0 to " + std::to_string(last) + ")");
  return {};
}

// A field the quantization's kind does not use must be zero (a caller's mistake otherwise).
Result<void> unused_zero(bool zero, std::string_view field, std::string_view kind) {
  if (!zero)
    return fail(ErrorCode::InvalidArgument,
                "et_quantization." + std::string(field) + " must be zero for kind " + std::string(kind));
  return {};
}

Result<Quantization> read_quantization(const et_quantization* user) {
  ET_TRY_ASSIGN(auto c, read_options(user, ET_QUANTIZATION_SIZE_VER0, "et_quantization"));
  ET_TRY(check_enum("et_quantization.kind", c.kind, ET_QUANTIZATION_PER_AXIS, "ET_QUANTIZATION_*"));
  const bool no_axis_fields = c.axis == 0 && c.channel_count == 0 && c.scales == nullptr && c.zero_points == nullptr;
  switch (c.kind) {
    case ET_QUANTIZATION_NONE:
      ET_TRY(unused_zero(no_axis_fields && c.scale == 0.0f && c.zero_point == 0,
                         "axis, channel_count, scale, zero_point, scales and zero_points", "NONE"));
      return Quantization();
    case ET_QUANTIZATION_PER_TENSOR:
      ET_TRY(unused_zero(no_axis_fields, "axis, channel_count, scales and zero_points", "PER_TENSOR"));
      return Quantization::per_tensor(c.scale, c.zero_point);
    default:
      ET_TRY(unused_zero(c.scale == 0.0f && c.zero_point == 0, "scale and zero_point", "PER_AXIS"));
      if (c.channel_count > ET_MAX_QUANTIZATION_CHANNELS)
        return fail(ErrorCode::OutOfRange, "et_quantization.channel_count " + std::to_string(c.channel_count) +
                                               " is above ET_MAX_QUANTIZATION_CHANNELS (" +
                                               std::to_string(ET_MAX_QUANTIZATION_CHANNELS) + ")");
      if (c.channel_count > 0 && c.scales == nullptr) return null_argument("et_quantization", "scales");
      if (c.channel_count > 0 && c.zero_points == nullptr) return null_argument("et_quantization", "zero_points");
      return Quantization::per_axis(c.axis, std::span<const float>(c.scales, c.channel_count),
                                    std::span<const std::int32_t>(c.zero_points, c.channel_count));
  }
}

Result<Colorimetry> read_colorimetry(const et_colorimetry* user) {
  ET_TRY_ASSIGN(auto c, read_options(user, ET_COLORIMETRY_SIZE_VER0, "et_colorimetry"));
  ET_TRY(check_enum("et_colorimetry.primaries", c.primaries, ET_COLOR_PRIMARIES_BT470M, "ET_COLOR_PRIMARIES_*"));
  ET_TRY(check_enum("et_colorimetry.transfer", c.transfer, ET_TRANSFER_SMPTE240M, "ET_TRANSFER_*"));
  ET_TRY(check_enum("et_colorimetry.matrix", c.matrix, ET_YCBCR_MATRIX_IDENTITY, "ET_YCBCR_MATRIX_*"));
  ET_TRY(check_enum("et_colorimetry.range", c.range, ET_COLOR_RANGE_LIMITED, "ET_COLOR_RANGE_*"));
  if (c.reserved != 0)
    return fail(ErrorCode::InvalidArgument, "et_colorimetry.reserved is " + std::to_string(c.reserved) + ", not 0");
  Colorimetry v;
  v.primaries = static_cast<ColorPrimaries>(c.primaries);
  v.transfer = static_cast<TransferFunction>(c.transfer);
  v.matrix = static_cast<YcbcrMatrix>(c.matrix);
  v.range = static_cast<ColorRange>(c.range);
  return v;
}

}  // namespace

extern "C" {

et_status et_tensor_get_quantization(const et_tensor* tensor, et_quantization* quantization) {
  return guarded([&]() -> Result<void> {
    if (tensor == nullptr) return null_argument("et_tensor_get_quantization", "tensor");
    if (quantization == nullptr) return null_argument("et_tensor_get_quantization", "quantization");
    // The handle's tensor never changes, so spans into its quantization live as long as the handle.
    const Quantization& q = tensor->tensor.quantization();
    et_quantization v{};
    v.struct_size = sizeof v;
    v.kind = static_cast<int32_t>(q.kind());
    if (q.kind() == QuantizationKind::PerTensor) {
      v.scale = q.scales()[0];
      v.zero_point = q.zero_points()[0];
    } else if (q.kind() == QuantizationKind::PerAxis) {
      v.axis = static_cast<uint32_t>(q.axis());
      v.channel_count = static_cast<uint32_t>(q.scales().size());
      v.scales = q.scales().data();
      v.zero_points = q.zero_points().data();
    }
    return write_output(quantization, v, ET_QUANTIZATION_SIZE_VER0, "et_quantization");
  });
}

et_status et_tensor_with_quantization(const et_tensor* tensor, const et_quantization* quantization, et_tensor** out) {
  return guarded([&]() -> Result<void> {
    if (out == nullptr) return null_argument("et_tensor_with_quantization", "out");
    *out = nullptr;
    if (tensor == nullptr) return null_argument("et_tensor_with_quantization", "tensor");
    ET_TRY_ASSIGN(auto q, read_quantization(quantization));
    TensorDyn t = tensor->tensor;
    ET_TRY(t.set_quantization(std::move(q)));
    give_tensor(std::move(t), out);
    return {};
  });
}

et_status et_tensor_get_colorimetry(const et_tensor* tensor, et_colorimetry* colorimetry) {
  return guarded([&]() -> Result<void> {
    if (tensor == nullptr) return null_argument("et_tensor_get_colorimetry", "tensor");
    if (colorimetry == nullptr) return null_argument("et_tensor_get_colorimetry", "colorimetry");
    const Colorimetry& c = tensor->tensor.colorimetry();
    et_colorimetry v{};
    v.struct_size = sizeof v;
    v.primaries = static_cast<int32_t>(c.primaries);
    v.transfer = static_cast<int32_t>(c.transfer);
    v.matrix = static_cast<int32_t>(c.matrix);
    v.range = static_cast<int32_t>(c.range);
    return write_output(colorimetry, v, ET_COLORIMETRY_SIZE_VER0, "et_colorimetry");
  });
}

et_status et_tensor_with_colorimetry(const et_tensor* tensor, const et_colorimetry* colorimetry, et_tensor** out) {
  return guarded([&]() -> Result<void> {
    if (out == nullptr) return null_argument("et_tensor_with_colorimetry", "out");
    *out = nullptr;
    if (tensor == nullptr) return null_argument("et_tensor_with_colorimetry", "tensor");
    ET_TRY_ASSIGN(auto c, read_colorimetry(colorimetry));
    TensorDyn t = tensor->tensor;
    t.set_colorimetry(c);
    give_tensor(std::move(t), out);
    return {};
  });
}

}  // extern "C"
