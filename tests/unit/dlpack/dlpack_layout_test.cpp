// SPDX-License-Identifier: Apache-2.0
// The pure DLPack layout conversions (src/dlpack/dlpack_layout.h), also with a 32-bit size type, and
// the dtype and device names.
#include <edgetensor/dlpack.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

#include "dlpack/dlpack_layout.h"
#include "support/test_support.h"

using namespace edgetensor;
namespace dl = edgetensor::dlpack;
namespace lay = edgetensor::detail::dlpack_layout;

namespace {

// Our strides are bytes; a byte stride that is not a multiple of the element size cannot be exported.
// (TensorDyn itself never holds one today: the check is the export's guarantee, tested here directly.)
TEST(DlpackLayout, ExportStridesCountElementsAndNameANonMultiple) {
  std::array<std::int64_t, 3> out{};
  const std::int64_t good[] = {96, 8, 4};
  ASSERT_OK(lay::export_strides(good, 4, out));
  EXPECT_EQ(out, (std::array<std::int64_t, 3>{24, 2, 1}));
  const std::int64_t odd[] = {96, 6, 4};
  EXPECT_ERROR(lay::export_strides(odd, 4, out), ErrorCode::InvalidArgument, "stride 6 B of dimension 1");
  const std::int64_t neg[] = {-8};
  EXPECT_ERROR(lay::export_strides(neg, 4, {out.data(), 1}), ErrorCode::InvalidArgument, "stride -8 B of dimension 0");
}

TEST(DlpackLayout, ExportShapeRefusesADimensionOverInt64) {
  std::array<std::int64_t, 2> out{};
  const std::uint64_t shape[] = {0, (std::uint64_t{1} << 63) + 1};
  EXPECT_ERROR(lay::export_shape<std::uint64_t>(shape, out), ErrorCode::OutOfRange, "dimension 1 has 9223372036854775809");
}

TEST(DlpackLayout, ImportShapeChecksSignAndThe32BitRange) {
  std::array<std::uint32_t, 2> out{};
  const std::int64_t ok[] = {3, 4294967295};
  ASSERT_OK(lay::import_shape<std::uint32_t>(ok, out));
  EXPECT_EQ(out[1], 4294967295u);
  const std::int64_t big[] = {3, 4294967296};
  EXPECT_ERROR(lay::import_shape<std::uint32_t>(big, out), ErrorCode::OutOfRange, "dimension 1 is 4294967296, more than "
                                                                                   "this process's 32-bit sizes hold");
  const std::int64_t neg[] = {-1, 2};
  EXPECT_ERROR(lay::import_shape<std::uint32_t>(neg, out), ErrorCode::InvalidArgument, "dimension 0 is -1");
}

TEST(DlpackLayout, ImportStridesConvertToBytesWithCheckedProducts) {
  std::array<std::int64_t, 2> out{};
  const std::uint32_t shape[] = {3, 5};
  const std::int64_t s[] = {5, 1};
  ASSERT_OK(lay::import_strides<std::uint32_t>(s, shape, 8, out));
  EXPECT_EQ(out, (std::array<std::int64_t, 2>{40, 8}));
  ASSERT_OK(lay::import_strides<std::uint32_t>(nullptr, shape, 2, out));
  EXPECT_EQ(out, (std::array<std::int64_t, 2>{10, 2})) << "null strides: compact row-major";
  const std::int64_t wide[] = {std::int64_t{1} << 30, 1};  // x 8 B = 2^33: over a 32-bit size
  EXPECT_ERROR(lay::import_strides<std::uint32_t>(wide, shape, 8, out), ErrorCode::OutOfRange,
               "times the element size 8 B overflows 32-bit byte strides");
  const std::int64_t huge[] = {std::int64_t{1} << 61, 1};  // x 8 B overflows int64
  EXPECT_ERROR(lay::import_strides<std::uint64_t>(huge, std::array<std::uint64_t, 2>{3, 5}, 8, out),
               ErrorCode::OutOfRange, "overflows 64-bit byte strides");
  const std::uint32_t big_shape[] = {65536, 65536};  // 2^32 elements: the row-major strides overflow 32 bits
  EXPECT_ERROR(lay::import_strides<std::uint32_t>(nullptr, big_shape, 1, out), ErrorCode::OutOfRange,
               "overflows 32-bit size arithmetic");
}

TEST(DlpackLayout, DeviceTypeNamesAreTheSpecs) {
  EXPECT_EQ(dl::device_type_name(dl::DeviceType::Cpu), "kDLCPU");
  EXPECT_EQ(dl::device_type_name(dl::DeviceType::Cuda), "kDLCUDA");
  EXPECT_EQ(dl::device_type_name(dl::DeviceType::CudaHost), "kDLCUDAHost");
  EXPECT_EQ(dl::device_type_name(dl::DeviceType::Maia), "kDLMAIA");
  EXPECT_EQ(dl::device_type_name(static_cast<dl::DeviceType>(5)), "unknown");  // a gap in the spec's list
  EXPECT_EQ(dl::device_type_name(static_cast<dl::DeviceType>(-1)), "unknown");
}

}  // namespace
