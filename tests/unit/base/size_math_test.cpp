// SPDX-License-Identifier: Apache-2.0
// Checked unsigned arithmetic (src/base/size_math.h), at 64 and 32 bits.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "base/size_math.h"

using namespace edgetensor::detail;

namespace {

// The helpers are constexpr: the boundary cases are checked at compile time too.
static_assert(checked_mul<std::uint32_t>(65536u, 65535u) == std::uint32_t{65536u * 65535u});
static_assert(!checked_mul<std::uint32_t>(65536u, 65536u).has_value());
static_assert(!checked_add<std::uint32_t>(0xFFFFFFFFu, 1u).has_value());
static_assert(checked_round_up<std::uint32_t>(257u, 256u) == 512u);

template <class U>
class SizeMath : public ::testing::Test {};
using SizeTypes = ::testing::Types<std::uint32_t, std::uint64_t, std::size_t>;
TYPED_TEST_SUITE(SizeMath, SizeTypes);

TYPED_TEST(SizeMath, MulDetectsOverflowAtTheExactBoundary) {
  using U = TypeParam;
  constexpr U kMax = std::numeric_limits<U>::max();
  constexpr U kHalfBits = U{1} << (sizeof(U) * 4);  // 2^(bits/2)
  EXPECT_EQ(checked_mul<U>(kHalfBits - 1, kHalfBits + 1), static_cast<U>(kMax));  // (2^k-1)(2^k+1) = 2^2k - 1
  EXPECT_FALSE(checked_mul<U>(kHalfBits, kHalfBits).has_value());
  EXPECT_EQ(checked_mul<U>(kMax, 1), kMax);
  EXPECT_EQ(checked_mul<U>(kMax, 0), U{0});
  EXPECT_FALSE(checked_mul<U>(kMax, 2).has_value());
}

TYPED_TEST(SizeMath, AddDetectsOverflowAtTheExactBoundary) {
  using U = TypeParam;
  constexpr U kMax = std::numeric_limits<U>::max();
  EXPECT_EQ(checked_add<U>(kMax - 1, 1), kMax);
  EXPECT_FALSE(checked_add<U>(kMax, 1).has_value());
  EXPECT_FALSE(checked_add<U>(kMax / 2 + 1, kMax / 2 + 1).has_value());
}

TYPED_TEST(SizeMath, RoundUp) {
  using U = TypeParam;
  constexpr U kMax = std::numeric_limits<U>::max();
  EXPECT_EQ(checked_round_up<U>(0, 256), U{0});
  EXPECT_EQ(checked_round_up<U>(1, 256), U{256});
  EXPECT_EQ(checked_round_up<U>(256, 256), U{256});
  EXPECT_EQ(checked_round_up<U>(4097, 4096), U{8192});
  EXPECT_EQ(checked_round_up<U>(kMax - 255, 256), static_cast<U>(kMax - 255));  // already aligned
  EXPECT_FALSE(checked_round_up<U>(kMax - 254, 256).has_value());
}

}  // namespace
