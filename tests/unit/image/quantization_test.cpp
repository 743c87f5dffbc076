// SPDX-License-Identifier: Apache-2.0
// Quantization (include/edgetensor/quantization.h, src/core/quantization.cpp): construction, every bad
// input, check() against dtype and shape, slicing that shares the parameter array, equality by value.
#include <edgetensor/edgetensor.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "support/test_support.h"

using namespace edgetensor;

namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

Quantization per_axis_or_die(std::size_t axis, std::vector<float> scales, std::vector<std::int32_t> zero_points) {
  auto q = Quantization::per_axis(axis, scales, zero_points);
  EXPECT_TRUE(q.has_value()) << q.error().to_string();
  return q.value_or(Quantization{});
}

std::vector<float> to_vector(std::span<const float> s) { return {s.begin(), s.end()}; }
std::vector<std::int32_t> to_vector(std::span<const std::int32_t> s) { return {s.begin(), s.end()}; }

TEST(Quantization, DefaultIsNoneAndFitsAnyTensor) {
  Quantization q;
  EXPECT_EQ(q.kind(), QuantizationKind::None);
  EXPECT_EQ(q.axis(), 0u);
  EXPECT_TRUE(q.scales().empty());
  EXPECT_TRUE(q.zero_points().empty());
  const std::size_t shape[] = {2, 3};
  ASSERT_OK(q.check(DType::F32, shape));
  ASSERT_OK(q.check(DType::U8, {}));
}

TEST(Quantization, PerTensorHoldsOneScaleAndZeroPoint) {
  auto q = Quantization::per_tensor(0.25f, -7);
  ASSERT_OK(q);
  EXPECT_EQ(q->kind(), QuantizationKind::PerTensor);
  EXPECT_EQ(q->axis(), 0u);
  EXPECT_EQ(to_vector(q->scales()), std::vector<float>{0.25f});
  EXPECT_EQ(to_vector(q->zero_points()), std::vector<std::int32_t>{-7});
  // The smallest positive float is finite and > 0.
  ASSERT_OK(Quantization::per_tensor(std::numeric_limits<float>::denorm_min(), 0));
  ASSERT_OK(Quantization::per_tensor(std::numeric_limits<float>::max(), 0));
}

TEST(Quantization, PerTensorRefusesEveryScaleNotFiniteAndPositive) {
  EXPECT_ERROR(Quantization::per_tensor(0.0f, 0), ErrorCode::InvalidArgument, "quantization scale 0: must be finite and > 0");
  EXPECT_ERROR(Quantization::per_tensor(-0.0f, 0), ErrorCode::InvalidArgument, "scale -0: must be finite and > 0");
  EXPECT_ERROR(Quantization::per_tensor(-1.5f, 0), ErrorCode::InvalidArgument, "scale -1.5: must be finite and > 0");
  EXPECT_ERROR(Quantization::per_tensor(kNan, 0), ErrorCode::InvalidArgument, "scale nan: must be finite and > 0");
  EXPECT_ERROR(Quantization::per_tensor(kInf, 0), ErrorCode::InvalidArgument, "scale inf: must be finite and > 0");
  EXPECT_ERROR(Quantization::per_tensor(-kInf, 0), ErrorCode::InvalidArgument, "scale -inf: must be finite and > 0");
}

TEST(Quantization, PerAxisCopiesItsParametersOnce) {
  std::vector<float> scales = {0.5f, 0.25f, 0.125f};
  std::vector<std::int32_t> zps = {1, 2, 3};
  auto q = Quantization::per_axis(1, scales, zps);
  ASSERT_OK(q);
  EXPECT_EQ(q->kind(), QuantizationKind::PerAxis);
  EXPECT_EQ(q->axis(), 1u);
  EXPECT_EQ(to_vector(q->scales()), scales);
  EXPECT_EQ(to_vector(q->zero_points()), zps);
  EXPECT_NE(q->scales().data(), scales.data());  // its own array: the caller's may go away
  scales[0] = 9.0f;
  EXPECT_EQ(q->scales()[0], 0.5f);
}

TEST(Quantization, PerAxisRefusesEveryBadInput) {
  const std::vector<float> one = {1.0f};
  const std::vector<std::int32_t> zp1 = {0};
  const std::vector<std::int32_t> zp2 = {0, 0};
  EXPECT_ERROR(Quantization::per_axis(0, {}, {}), ErrorCode::InvalidArgument,
               "per-axis quantization with 0 scales: needs 1 to kMaxQuantizationChannels 4096");
  EXPECT_ERROR(Quantization::per_axis(0, one, zp2), ErrorCode::InvalidArgument,
               "1 scales and 2 zero points: the counts must be equal");
  EXPECT_ERROR(Quantization::per_axis(0, one, {}), ErrorCode::InvalidArgument, "1 scales and 0 zero points");
  EXPECT_ERROR(Quantization::per_axis(kMaxRank, one, zp1), ErrorCode::OutOfRange,
               "per-axis quantization axis 8: must be below kMaxRank 8");
  EXPECT_ERROR(Quantization::per_axis(std::numeric_limits<std::size_t>::max(), one, zp1), ErrorCode::OutOfRange,
               "axis " + std::to_string(std::numeric_limits<std::size_t>::max()) + ": must be below kMaxRank 8");
  ASSERT_OK(Quantization::per_axis(kMaxRank - 1, one, zp1));

  std::vector<float> many(kMaxQuantizationChannels + 1, 1.0f);
  std::vector<std::int32_t> many_zp(kMaxQuantizationChannels + 1, 0);
  EXPECT_ERROR(Quantization::per_axis(0, many, many_zp), ErrorCode::OutOfRange,
               "per-axis quantization with 4097 channels: more than kMaxQuantizationChannels 4096");
  many.pop_back();
  many_zp.pop_back();
  ASSERT_OK(Quantization::per_axis(0, many, many_zp));  // exactly the limit

  for (float bad : {0.0f, -2.0f, kNan, kInf, -kInf}) {
    const std::vector<float> scales = {1.0f, 2.0f, bad};
    const std::vector<std::int32_t> zps = {0, 0, 0};
    auto q = Quantization::per_axis(0, scales, zps);
    SCOPED_TRACE(bad);
    EXPECT_ERROR(q, ErrorCode::InvalidArgument, "per-axis quantization scales[2] = ");
    EXPECT_NE(q.error().message().find(": must be finite and > 0"), std::string::npos) << q.error().message();
  }
  EXPECT_ERROR(Quantization::per_axis(0, std::vector<float>{1.0f, -0.5f}, zp2), ErrorCode::InvalidArgument,
               "scales[1] = -0.5: must be finite and > 0");
}

TEST(Quantization, CheckRefusesEveryDTypeButTheSixIntegerOnes) {
  auto q = Quantization::per_tensor(1.0f, 0);
  ASSERT_OK(q);
  const std::size_t shape[] = {4};
  for (DType ok : {DType::U8, DType::I8, DType::U16, DType::I16, DType::U32, DType::I32}) {
    SCOPED_TRACE(dtype_name(ok));
    ASSERT_OK(q->check(ok, shape));
  }
  for (DType bad : {DType::U64, DType::I64, DType::F16, DType::BF16, DType::F32, DType::F64, static_cast<DType>(kDTypeCount)}) {
    SCOPED_TRACE(dtype_name(bad));
    EXPECT_ERROR(q->check(bad, shape), ErrorCode::InvalidArgument,
                 std::string("quantization dtype ") + std::string(dtype_name(bad)) +
                     ": must be one of u8, i8, u16, i16, u32, i32");
  }
  auto axis = per_axis_or_die(0, {1.0f}, {0});
  EXPECT_ERROR(axis.check(DType::F32, std::vector<std::size_t>{1}), ErrorCode::InvalidArgument, "quantization dtype f32");
}

TEST(Quantization, CheckNeedsZeroPointsRepresentableInTheDType) {
  struct Row {
    DType dtype;
    std::int64_t min;
    std::int64_t max;
  };
  const Row rows[] = {{DType::U8, 0, 255},          {DType::I8, -128, 127},
                      {DType::U16, 0, 65535},       {DType::I16, -32768, 32767},
                      {DType::U32, 0, 4294967295},  {DType::I32, INT32_MIN, INT32_MAX}};
  const std::size_t shape[] = {3};
  for (const auto& row : rows) {
    SCOPED_TRACE(dtype_name(row.dtype));
    auto zp_in = [](std::int64_t v) { return static_cast<std::int32_t>(std::clamp<std::int64_t>(v, INT32_MIN, INT32_MAX)); };
    ASSERT_OK(Quantization::per_tensor(1.0f, zp_in(row.min))->check(row.dtype, shape));
    ASSERT_OK(Quantization::per_tensor(1.0f, zp_in(row.max))->check(row.dtype, shape));
    const std::string range = std::string(dtype_name(row.dtype)) + "'s range [" + std::to_string(row.min) + ", " +
                              std::to_string(row.max) + "]";
    if (row.min > INT32_MIN) {
      auto below = Quantization::per_tensor(1.0f, static_cast<std::int32_t>(row.min - 1));
      EXPECT_ERROR(below->check(row.dtype, shape), ErrorCode::InvalidArgument,
                   "quantization zero point = " + std::to_string(row.min - 1) + ": outside " + range);
      // Per-axis: the message names the channel.
      auto axis = per_axis_or_die(0, {1.0f, 1.0f, 1.0f}, {0, static_cast<std::int32_t>(row.min - 1), 0});
      EXPECT_ERROR(axis.check(row.dtype, shape), ErrorCode::InvalidArgument,
                   "quantization zero_points[1] = " + std::to_string(row.min - 1) + ": outside " + range);
    }
    if (row.max < INT32_MAX) {
      auto above = Quantization::per_tensor(1.0f, static_cast<std::int32_t>(row.max + 1));
      EXPECT_ERROR(above->check(row.dtype, shape), ErrorCode::InvalidArgument,
                   "quantization zero point = " + std::to_string(row.max + 1) + ": outside " + range);
      auto axis = per_axis_or_die(0, {1.0f, 1.0f, 1.0f}, {0, 0, static_cast<std::int32_t>(row.max + 1)});
      EXPECT_ERROR(axis.check(row.dtype, shape), ErrorCode::InvalidArgument,
                   "quantization zero_points[2] = " + std::to_string(row.max + 1) + ": outside " + range);
    }
  }
}

TEST(Quantization, CheckPerAxisNeedsTheAxisInsideTheShapeWithOneChannelPerIndex) {
  auto q = per_axis_or_die(1, {0.5f, 0.25f, 0.125f}, {0, 0, 0});
  ASSERT_OK(q.check(DType::I8, std::vector<std::size_t>{2, 3}));
  ASSERT_OK(q.check(DType::I8, std::vector<std::size_t>{2, 3, 5, 7}));
  EXPECT_ERROR(q.check(DType::I8, std::vector<std::size_t>{3}), ErrorCode::InvalidArgument,
               "per-axis quantization axis 1: must be below the tensor's rank 1");
  EXPECT_ERROR(q.check(DType::I8, {}), ErrorCode::InvalidArgument, "axis 1: must be below the tensor's rank 0");
  EXPECT_ERROR(q.check(DType::I8, std::vector<std::size_t>{3, 4}), ErrorCode::InvalidArgument,
               "per-axis quantization with 3 channels on axis 1: must equal shape[1] = 4");
  EXPECT_ERROR(q.check(DType::I8, std::vector<std::size_t>{3, 0}), ErrorCode::InvalidArgument,
               "3 channels on axis 1: must equal shape[1] = 0");
  // Per-tensor fits any shape, rank 0 included.
  ASSERT_OK(Quantization::per_tensor(1.0f, 0)->check(DType::U8, {}));
}

TEST(Quantization, CopiesAndSlicesShareTheParameterArray) {
  auto q = per_axis_or_die(2, {1.0f, 2.0f, 3.0f, 4.0f, 5.0f}, {10, 20, 30, 40, 50});
  const Quantization copy = q;  // NOLINT(performance-unnecessary-copy-initialization): the copy is the test
  EXPECT_EQ(copy.scales().data(), q.scales().data());
  EXPECT_EQ(copy.zero_points().data(), q.zero_points().data());

  auto s = q.slice_channels(1, 4);
  ASSERT_OK(s);
  EXPECT_EQ(s->kind(), QuantizationKind::PerAxis);
  EXPECT_EQ(s->axis(), 2u);
  EXPECT_EQ(to_vector(s->scales()), (std::vector<float>{2.0f, 3.0f, 4.0f}));
  EXPECT_EQ(to_vector(s->zero_points()), (std::vector<std::int32_t>{20, 30, 40}));
  EXPECT_EQ(s->scales().data(), q.scales().data() + 1);  // no new array: a window into the shared one
  EXPECT_EQ(s->zero_points().data(), q.zero_points().data() + 1);

  auto ss = s->slice_channels(1, 2);  // offsets add up
  ASSERT_OK(ss);
  EXPECT_EQ(to_vector(ss->scales()), std::vector<float>{3.0f});
  EXPECT_EQ(ss->scales().data(), q.scales().data() + 2);
  EXPECT_EQ(ss->zero_points().data(), q.zero_points().data() + 2);

  auto whole = q.slice_channels(0, 5);
  ASSERT_OK(whole);
  EXPECT_EQ(*whole, q);

  auto empty = q.slice_channels(3, 3);  // a zero-size slice of the axis has zero channels
  ASSERT_OK(empty);
  EXPECT_EQ(empty->kind(), QuantizationKind::PerAxis);
  EXPECT_TRUE(empty->scales().empty());
  ASSERT_OK(empty->check(DType::U8, std::vector<std::size_t>{1, 1, 0}));

  auto moved = q.with_axis(1);
  ASSERT_OK(moved);
  EXPECT_EQ(moved->axis(), 1u);
  EXPECT_EQ(moved->scales().data(), q.scales().data());
  EXPECT_EQ(to_vector(moved->zero_points()), to_vector(q.zero_points()));
}

TEST(Quantization, SliceChannelsAndWithAxisRefuseBadInput) {
  auto q = per_axis_or_die(0, {1.0f, 2.0f, 3.0f, 4.0f}, {0, 0, 0, 0});
  EXPECT_ERROR(q.slice_channels(3, 2), ErrorCode::OutOfRange,
               "quantization channels [3, 2): must satisfy begin <= end <= channel count 4");
  EXPECT_ERROR(q.slice_channels(0, 5), ErrorCode::OutOfRange, "channels [0, 5): must satisfy begin <= end <= channel count 4");
  EXPECT_ERROR(q.slice_channels(5, 5), ErrorCode::OutOfRange, "channels [5, 5)");
  auto s = q.slice_channels(1, 3);
  ASSERT_OK(s);
  EXPECT_ERROR(s->slice_channels(0, 3), ErrorCode::OutOfRange, "channel count 2");  // bounded by the window
  EXPECT_ERROR(q.with_axis(kMaxRank), ErrorCode::OutOfRange, "per-axis quantization axis 8: must be below kMaxRank 8");

  for (const Quantization& not_axis : {Quantization{}, *Quantization::per_tensor(1.0f, 0)}) {
    EXPECT_ERROR(not_axis.slice_channels(0, 1), ErrorCode::FailedPrecondition,
                 "slice_channels [0, 1) of a quantization that is not per-axis");
    EXPECT_ERROR(not_axis.with_axis(0), ErrorCode::FailedPrecondition, "with_axis 0 of a quantization that is not per-axis");
  }
}

TEST(Quantization, EqualityIsByValueNotByArray) {
  auto a = per_axis_or_die(1, {0.5f, 0.25f}, {3, 4});
  auto b = per_axis_or_die(1, {0.5f, 0.25f}, {3, 4});
  ASSERT_NE(a.scales().data(), b.scales().data());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, per_axis_or_die(0, {0.5f, 0.25f}, {3, 4}));   // axis
  EXPECT_NE(a, per_axis_or_die(1, {0.5f, 0.125f}, {3, 4}));  // a scale
  EXPECT_NE(a, per_axis_or_die(1, {0.5f, 0.25f}, {3, 5}));   // a zero point
  EXPECT_NE(a, per_axis_or_die(1, {0.5f}, {3}));             // channel count
  // A slice equals a fresh quantization of its values.
  auto wide = per_axis_or_die(1, {9.0f, 0.5f, 0.25f, 9.0f}, {9, 3, 4, 9});
  EXPECT_EQ(*wide.slice_channels(1, 3), a);

  EXPECT_EQ(Quantization{}, Quantization{});
  EXPECT_EQ(*Quantization::per_tensor(0.5f, 3), *Quantization::per_tensor(0.5f, 3));
  EXPECT_NE(*Quantization::per_tensor(0.5f, 3), *Quantization::per_tensor(0.5f, 2));
  EXPECT_NE(*Quantization::per_tensor(0.5f, 3), *Quantization::per_tensor(0.25f, 3));
  EXPECT_NE(*Quantization::per_tensor(0.5f, 3), Quantization{});
  // Same numbers, different kinds.
  EXPECT_NE(*Quantization::per_tensor(0.5f, 3), per_axis_or_die(0, {0.5f}, {3}));
}

}  // namespace
