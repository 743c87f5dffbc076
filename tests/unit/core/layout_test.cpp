// SPDX-License-Identifier: Apache-2.0
// Pure layout logic (src/core/layout.h): stride rules and checked size math, instantiated with both a
// 64-bit and a 32-bit size type so the 32-bit behaviour is proven on this host.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

#include "core/layout.h"
#include "support/test_support.h"

using namespace edgetensor;
using namespace edgetensor::detail;

namespace {

template <class U>
Result<LayoutT<U>> layout(std::vector<U> shape, std::vector<std::int64_t> strides, U esize) {
  return compute_layout<U>(std::span<const U>(shape), std::span<const std::int64_t>(strides), esize, "t");
}

template <class U>
Result<U> contiguous(std::vector<U> shape, U esize, std::vector<std::int64_t>* strides_out = nullptr) {
  std::vector<std::int64_t> strides(shape.size());
  auto r = contiguous_strides<U>(std::span<const U>(shape), esize, std::span<std::int64_t>(strides), "t");
  if (strides_out) *strides_out = strides;
  return r;
}

// ---- 64-bit ------------------------------------------------------------------------------------
TEST(Layout, ContiguousStridesAreInBytes) {
  std::vector<std::int64_t> strides;
  auto bytes = contiguous<std::uint64_t>({2, 3, 4}, 4, &strides);
  ASSERT_OK(bytes);
  EXPECT_EQ(*bytes, 96u);
  EXPECT_EQ(strides, (std::vector<std::int64_t>{48, 16, 4}));
  auto l = layout<std::uint64_t>({2, 3, 4}, strides, 4);
  ASSERT_OK(l);
  EXPECT_EQ(l->element_count, 24u);
  EXPECT_EQ(l->extent_bytes, 96u);
}

TEST(Layout, RankZeroIsOneElement) {
  auto bytes = contiguous<std::uint64_t>({}, 8);
  ASSERT_OK(bytes);
  EXPECT_EQ(*bytes, 8u);
  auto l = layout<std::uint64_t>({}, {}, 8);
  ASSERT_OK(l);
  EXPECT_EQ(l->element_count, 1u);
  EXPECT_EQ(l->extent_bytes, 8u);
}

TEST(Layout, U8Shape2Pow62By8OverflowsAndNamesTheValues) {
  auto r = contiguous<std::uint64_t>({std::uint64_t{1} << 62, 8}, 1);
  EXPECT_ERROR(r, ErrorCode::OutOfRange, "[4611686018427387904, 8]");
  EXPECT_NE(r.error().message().find("overflow"), std::string::npos) << r.error().message();
}

TEST(Layout, F32Shape65536Squared_Is16GiBExactly) {
  auto r = contiguous<std::uint64_t>({65536, 65536}, 4);
  ASSERT_OK(r);
  EXPECT_EQ(*r, std::uint64_t{16} << 30);
}

TEST(Layout, ByteSizeAboveInt64MaxIsRefused) {
  // 2^63 bytes fits in uint64 but not in an int64 stride.
  auto r = contiguous<std::uint64_t>({std::uint64_t{1} << 61, 4}, 1);
  EXPECT_ERROR(r, ErrorCode::OutOfRange, "overflows 64-bit");
  ASSERT_OK(contiguous<std::uint64_t>({std::uint64_t{1} << 61, 2}, 1));  // 2^62: fine
}

TEST(Layout, NegativeStrideIsRefused) {
  auto r = layout<std::uint64_t>({4, 4}, {-4, 1}, 1);
  EXPECT_ERROR(r, ErrorCode::InvalidArgument, "stride -4 of dim 0 is negative");
}

TEST(Layout, StrideNotAMultipleOfTheElementSizeIsRefused) {
  auto r = layout<std::uint64_t>({4, 4}, {18, 4}, 4);
  EXPECT_ERROR(r, ErrorCode::InvalidArgument, "stride 18 B of dim 0 is not a multiple of the element size 4 B");
}

TEST(Layout, ZeroStrideOnlyOnSizeOneDims) {
  ASSERT_OK(layout<std::uint64_t>({1, 4}, {0, 4}, 4));
  auto r = layout<std::uint64_t>({2, 4}, {0, 4}, 4);
  EXPECT_ERROR(r, ErrorCode::InvalidArgument, "stride 0 on dim 0 of size 2");
}

TEST(Layout, PaddedRowsGiveTheExtentToTheLastByte) {
  // 3 rows of 10 u16, rows 32 B apart: last element at 2*32 + 9*2 = 82, extent 84.
  auto l = layout<std::uint64_t>({3, 10}, {32, 2}, 2);
  ASSERT_OK(l);
  EXPECT_EQ(l->element_count, 30u);
  EXPECT_EQ(l->extent_bytes, 84u);
}

TEST(Layout, ZeroDimGivesNoExtent) {
  std::vector<std::int64_t> strides;
  auto bytes = contiguous<std::uint64_t>({0, 640, 3}, 1, &strides);
  ASSERT_OK(bytes);
  EXPECT_EQ(*bytes, 0u);
  auto l = layout<std::uint64_t>({0, 640, 3}, strides, 1);
  ASSERT_OK(l);
  EXPECT_EQ(l->element_count, 0u);
  EXPECT_EQ(l->extent_bytes, 0u);
}

TEST(Layout, ElementCountOverflowIsRefused) {
  auto r = layout<std::uint64_t>({std::uint64_t{1} << 32, std::uint64_t{1} << 32}, {1, 1}, 1);
  EXPECT_ERROR(r, ErrorCode::OutOfRange, "element count overflows 64-bit");
}

TEST(Layout, ExtentOverflowIsRefused) {
  // Few elements, huge strides: three terms of 2^63 - 8 overflow 64 bits.
  auto r = layout<std::uint64_t>({2, 2, 2}, {INT64_MAX - 7, INT64_MAX - 7, INT64_MAX - 7}, 8);
  EXPECT_ERROR(r, ErrorCode::OutOfRange, "extent overflows 64-bit");
}

TEST(Layout, CheckFits) {
  ASSERT_OK(check_fits<std::uint64_t>(16, 84, 100, "t"));
  EXPECT_ERROR((check_fits<std::uint64_t>(17, 84, 100, "t")), ErrorCode::OutOfRange,
               "needs 101 B (offset 17 B + extent 84 B) but the buffer has 100 B");
  EXPECT_ERROR((check_fits<std::uint64_t>(UINT64_MAX, 1, UINT64_MAX, "t")), ErrorCode::OutOfRange, "overflows");
}

// ---- 32-bit: the same code where size_t is 32 bits ---------------------------------------------
TEST(Layout32, ContiguousSizesUpTo4GiBMinusOne) {
  // 65535 * 65535 u8 fits; 65536 * 65536 u8 = 2^32 wraps to 0 in 32 bits and must be refused.
  auto ok = contiguous<std::uint32_t>({65535, 65535}, 1);
  ASSERT_OK(ok);
  EXPECT_EQ(*ok, 65535u * 65535u);
  auto r = contiguous<std::uint32_t>({65536, 65536}, 1);
  EXPECT_ERROR(r, ErrorCode::OutOfRange, "[65536, 65536]: byte size overflows 32-bit");
}

TEST(Layout32, F32Shape65536Squared_Overflows) {
  auto r = contiguous<std::uint32_t>({65536, 65536}, 4);
  EXPECT_ERROR(r, ErrorCode::OutOfRange, "overflows 32-bit");
}

TEST(Layout32, ElementSizeTimesCountOverflow) {
  // 2^30 elements fit; as f32 they need 2^32 bytes.
  auto r = contiguous<std::uint32_t>({std::uint32_t{1} << 30}, 4);
  EXPECT_ERROR(r, ErrorCode::OutOfRange, "overflows 32-bit");
  ASSERT_OK(contiguous<std::uint32_t>({(std::uint32_t{1} << 30) - 1}, 4));
}

TEST(Layout32, ElementCountOverflow) {
  auto r = layout<std::uint32_t>({65536, 65536}, {1, 1}, 1);
  EXPECT_ERROR(r, ErrorCode::OutOfRange, "element count overflows 32-bit");
}

TEST(Layout32, StrideBeyond32BitsIsRefused) {
  auto r = layout<std::uint32_t>({2, 1}, {std::int64_t{1} << 32, 1}, 1);
  EXPECT_ERROR(r, ErrorCode::OutOfRange, "stride 4294967296 exceeds the 32-bit size range");
}

TEST(Layout32, ExtentOverflow) {
  // 3 rows, 2^31 B apart: last row at 2^32 -> wraps in 32 bits.
  auto r = layout<std::uint32_t>({3, 4}, {std::int64_t{1} << 31, 1}, 1);
  EXPECT_ERROR(r, ErrorCode::OutOfRange, "extent overflows 32-bit");
  auto ok = layout<std::uint32_t>({2, 4}, {std::int64_t{1} << 31, 1}, 1);
  ASSERT_OK(ok);
  EXPECT_EQ(ok->extent_bytes, (std::uint32_t{1} << 31) + 4u);
}

TEST(Layout32, ExtentPlusElementOverflow) {
  // Last element starts at 0xFFFFFFFC; + 8 bytes of it wraps.
  auto r = layout<std::uint32_t>({2}, {0x7FFFFFFE * std::int64_t{2}}, 4);  // stride 0xFFFFFFFC
  EXPECT_ERROR(r, ErrorCode::OutOfRange, "extent overflows");
}

TEST(Layout32, CheckFits) {
  EXPECT_ERROR((check_fits<std::uint32_t>(0xFFFFFFF0u, 0x20u, 0xFFFFFFFFu, "t")), ErrorCode::OutOfRange,
               "offset 4294967280 B + extent 32 B overflows");
  ASSERT_OK(check_fits<std::uint32_t>(0xFFFFFFF0u, 0x0Fu, 0xFFFFFFFFu, "t"));
}

TEST(Layout32, RulesAreTheSameAsAt64Bits) {
  EXPECT_ERROR((layout<std::uint32_t>({4}, {-1}, 1)), ErrorCode::InvalidArgument, "negative");
  EXPECT_ERROR((layout<std::uint32_t>({4}, {6}, 4)), ErrorCode::InvalidArgument, "not a multiple");
  EXPECT_ERROR((layout<std::uint32_t>({4}, {0}, 4)), ErrorCode::InvalidArgument, "zero stride");
}

}  // namespace
