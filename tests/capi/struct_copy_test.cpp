// SPDX-License-Identifier: Apache-2.0
// The struct_size rule of the C API (src/capi/struct_copy.h), on its own: older (smaller) callers, newer
// (larger) callers with zero and non-zero tails, sizes out of bounds, and the output direction.
#include "capi/struct_copy.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace edgetensor;
using namespace edgetensor::capi;

namespace {

// Version 2 of a struct; version 1 ended after `a`.
struct V2 {
  std::uint32_t struct_size;
  std::uint32_t a;
  std::uint64_t b;
};
constexpr std::size_t kVer1 = 8;

// A newer caller's version 3: one more field.
struct V3 {
  V2 v2;
  std::uint64_t c;
};

TEST(CapiStructCopy, OlderCallerLeavesNewFieldsZero) {
  V2 from_v1{8, 5, 99};  // b lies past the caller's 8 bytes: never read
  V2 out{1, 1, 1};
  ASSERT_TRUE(copy_struct_from_caller(&out, sizeof out, kVer1, &from_v1, 8, "V2"));
  EXPECT_EQ(out.struct_size, 8u);
  EXPECT_EQ(out.a, 5u);
  EXPECT_EQ(out.b, 0u);
}

TEST(CapiStructCopy, SameVersionCopiesAll) {
  V2 in{sizeof(V2), 5, 7};
  V2 out{};
  ASSERT_TRUE(copy_struct_from_caller(&out, sizeof out, kVer1, &in, sizeof in, "V2"));
  EXPECT_EQ(out.b, 7u);
}

TEST(CapiStructCopy, NewerCallerWithZeroTailIsAccepted) {
  V3 in{{sizeof(V3), 5, 7}, 0};
  V2 out{};
  ASSERT_TRUE(copy_struct_from_caller(&out, sizeof out, kVer1, &in, sizeof in, "V2"));
  EXPECT_EQ(out.a, 5u);
  EXPECT_EQ(out.b, 7u);
}

TEST(CapiStructCopy, NewerCallerWithNonZeroTailNamesTheOffset) {
  V3 in{{sizeof(V3), 5, 7}, 0};
  reinterpret_cast<unsigned char*>(&in.c)[3] = 0x80;
  V2 out{};
  auto r = copy_struct_from_caller(&out, sizeof out, kVer1, &in, sizeof in, "V2");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(r.error().message().find("V2: byte at offset 19 is 0x80"), std::string::npos) << r.error().message();
  EXPECT_EQ(out.a, 0u);  // nothing copied on an error
}

TEST(CapiStructCopy, SizesOutOfBounds) {
  V2 in{};
  V2 out{};
  auto small = copy_struct_from_caller(&out, sizeof out, kVer1, &in, 4, "V2");
  ASSERT_FALSE(small);
  EXPECT_NE(small.error().message().find("V2.struct_size 4 is below the first version's 8 bytes"), std::string::npos);
  auto huge = copy_struct_from_caller(&out, sizeof out, kVer1, &in, kMaxStructSize + 1, "V2");
  ASSERT_FALSE(huge);
  EXPECT_NE(huge.error().message().find("is above 4096"), std::string::npos);
  EXPECT_TRUE(check_struct_size(kMaxStructSize, kVer1, "V2"));
}

TEST(CapiStructCopy, OutputToOlderNewerAndSameCaller) {
  const V2 ours{sizeof(V2), 5, 7};
  V3 newer;
  std::memset(&newer, 0xab, sizeof newer);
  newer.v2.struct_size = sizeof(V3);
  ASSERT_TRUE(copy_struct_to_caller(&newer, sizeof newer, kVer1, &ours, sizeof ours, "V2"));
  EXPECT_EQ(newer.v2.struct_size, sizeof(V3));  // the caller's own size stays
  EXPECT_EQ(newer.v2.b, 7u);
  EXPECT_EQ(newer.c, 0u);  // a field this library does not know reads as zero
  V2 older;
  std::memset(&older, 0xab, sizeof older);
  older.struct_size = 8;
  ASSERT_TRUE(copy_struct_to_caller(&older, 8, kVer1, &ours, sizeof ours, "V2"));
  EXPECT_EQ(older.a, 5u);
  EXPECT_EQ(older.b, 0xababababababababull);  // past the caller's struct: untouched
  V2 too_small{4, 0, 0};
  EXPECT_FALSE(copy_struct_to_caller(&too_small, 4, kVer1, &ours, sizeof ours, "V2"));
  EXPECT_EQ(declared_struct_size(&ours), sizeof(V2));
}

}  // namespace
