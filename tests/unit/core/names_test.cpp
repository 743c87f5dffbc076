// SPDX-License-Identifier: Apache-2.0
// dtype sizes and names, memory kind and pixel format names (src/core/names.cpp).
#include <edgetensor/edgetensor.h>
#include <gtest/gtest.h>

#include <string>

using namespace edgetensor;

namespace {

struct DTypeRow {
  DType dtype;
  std::size_t size;
  const char* name;
};
constexpr DTypeRow kDTypes[] = {
    {DType::U8, 1, "u8"},   {DType::I8, 1, "i8"},   {DType::U16, 2, "u16"}, {DType::I16, 2, "i16"},
    {DType::U32, 4, "u32"}, {DType::I32, 4, "i32"}, {DType::U64, 8, "u64"}, {DType::I64, 8, "i64"},
    {DType::F16, 2, "f16"}, {DType::BF16, 2, "bf16"}, {DType::F32, 4, "f32"}, {DType::F64, 8, "f64"},
};

TEST(DType, EveryDTypeHasItsSizeAndName) {
  static_assert(std::size(kDTypes) == static_cast<std::size_t>(kDTypeCount));
  for (const auto& row : kDTypes) {
    SCOPED_TRACE(row.name);
    EXPECT_TRUE(dtype_is_valid(row.dtype));
    EXPECT_EQ(dtype_size(row.dtype), row.size);
    EXPECT_EQ(dtype_name(row.dtype), row.name);
    auto parsed = dtype_from_name(row.name);
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(*parsed, row.dtype);
  }
}

TEST(DType, InvalidValuesHaveNoSizeAndNoName) {
  auto bad = static_cast<DType>(kDTypeCount);
  EXPECT_FALSE(dtype_is_valid(bad));
  EXPECT_EQ(dtype_size(bad), 0u);
  EXPECT_EQ(dtype_name(bad), "invalid");
  EXPECT_FALSE(dtype_is_valid(static_cast<DType>(255)));
  EXPECT_FALSE(dtype_from_name("float32").has_value());
  EXPECT_FALSE(dtype_from_name("").has_value());
  EXPECT_FALSE(dtype_from_name("U8").has_value());  // names are lower-case only
}

TEST(DType, CxxTypesMapToTheirDType) {
  static_assert(DTypeOf<std::uint8_t>::value == DType::U8);
  static_assert(DTypeOf<std::int8_t>::value == DType::I8);
  static_assert(DTypeOf<std::uint16_t>::value == DType::U16);
  static_assert(DTypeOf<std::int16_t>::value == DType::I16);
  static_assert(DTypeOf<std::uint32_t>::value == DType::U32);
  static_assert(DTypeOf<std::int32_t>::value == DType::I32);
  static_assert(DTypeOf<std::uint64_t>::value == DType::U64);
  static_assert(DTypeOf<std::int64_t>::value == DType::I64);
  static_assert(DTypeOf<Float16>::value == DType::F16);
  static_assert(DTypeOf<BFloat16>::value == DType::BF16);
  static_assert(DTypeOf<float>::value == DType::F32);
  static_assert(DTypeOf<double>::value == DType::F64);
  // The C++ type's size matches the dtype's size.
  EXPECT_EQ(sizeof(Float16), dtype_size(DType::F16));
  EXPECT_EQ(sizeof(BFloat16), dtype_size(DType::BF16));
  EXPECT_EQ(sizeof(double), dtype_size(DType::F64));
}

TEST(MemoryKindNames, RoundTrip) {
  const std::pair<MemoryKind, const char*> rows[] = {{MemoryKind::Auto, "auto"},
                                                     {MemoryKind::Heap, "heap"},
                                                     {MemoryKind::Shm, "shm"},
                                                     {MemoryKind::DmaBuf, "dmabuf"},
                                                     {MemoryKind::GlPbo, "gl_pbo"},
                                                     {MemoryKind::Foreign, "foreign"}};
  for (auto [kind, name] : rows) {
    EXPECT_EQ(memory_kind_name(kind), name);
    auto parsed = memory_kind_from_name(name);
    ASSERT_TRUE(parsed.has_value()) << name;
    EXPECT_EQ(*parsed, kind);
  }
  EXPECT_EQ(memory_kind_name(static_cast<MemoryKind>(99)), "invalid");
  EXPECT_FALSE(memory_kind_from_name("cuda").has_value());
}

TEST(PixelFormatNames, RoundTrip) {
  for (int i = 0; i < kPixelFormatCount; ++i) {
    auto f = static_cast<PixelFormat>(i);
    auto name = pixel_format_name(f);
    EXPECT_NE(name, "invalid");
    auto parsed = pixel_format_from_name(name);
    ASSERT_TRUE(parsed.has_value()) << name;
    EXPECT_EQ(*parsed, f);
  }
  EXPECT_EQ(pixel_format_name(PixelFormat::Nv12), "nv12");
  EXPECT_EQ(pixel_format_name(static_cast<PixelFormat>(200)), "invalid");
  EXPECT_FALSE(pixel_format_from_name("NV12").has_value());
}

TEST(Version, MatchesTheHeaderMacros) {
  EXPECT_EQ(version(), std::to_string(ET_VERSION_MAJOR) + "." + std::to_string(ET_VERSION_MINOR) + "." +
                           std::to_string(ET_VERSION_PATCH));
}

}  // namespace
