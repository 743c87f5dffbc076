// SPDX-License-Identifier: Apache-2.0
// DLPack names and the dtype mapping (dlpack.h 1.1: DLDeviceType, DLDataTypeCode).
#include <edgetensor/dlpack.h>

#include <array>

#include "text/format.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace dlpack {

std::string_view device_type_name(DeviceType type) noexcept {
  switch (type) {
    case DeviceType::Cpu: return "kDLCPU";
    case DeviceType::Cuda: return "kDLCUDA";
    case DeviceType::CudaHost: return "kDLCUDAHost";
    case DeviceType::OpenCl: return "kDLOpenCL";
    case DeviceType::Vulkan: return "kDLVulkan";
    case DeviceType::Metal: return "kDLMetal";
    case DeviceType::Vpi: return "kDLVPI";
    case DeviceType::Rocm: return "kDLROCM";
    case DeviceType::RocmHost: return "kDLROCMHost";
    case DeviceType::ExtDev: return "kDLExtDev";
    case DeviceType::CudaManaged: return "kDLCUDAManaged";
    case DeviceType::OneApi: return "kDLOneAPI";
    case DeviceType::WebGpu: return "kDLWebGPU";
    case DeviceType::Hexagon: return "kDLHexagon";
    case DeviceType::Maia: return "kDLMAIA";
  }
  return "unknown";
}

namespace {
struct Row {
  DType dtype;
  TypeCode code;
  std::uint8_t bits;
};
// Indexed by DType (dtype.h: U8, I8, U16, I16, U32, I32, U64, I64, F16, BF16, F32, F64).
constexpr std::array<Row, kDTypeCount> kRows = {{
    {DType::U8, TypeCode::UInt, 8},    {DType::I8, TypeCode::Int, 8},      {DType::U16, TypeCode::UInt, 16},
    {DType::I16, TypeCode::Int, 16},   {DType::U32, TypeCode::UInt, 32},   {DType::I32, TypeCode::Int, 32},
    {DType::U64, TypeCode::UInt, 64},  {DType::I64, TypeCode::Int, 64},    {DType::F16, TypeCode::Float, 16},
    {DType::BF16, TypeCode::Bfloat, 16}, {DType::F32, TypeCode::Float, 32}, {DType::F64, TypeCode::Float, 64},
}};
static_assert([] {
  for (std::size_t i = 0; i < kRows.size(); ++i)
    if (static_cast<std::size_t>(kRows[i].dtype) != i) return false;
  return true;
}());

std::string_view code_name(std::uint8_t code) noexcept {
  static constexpr std::array<std::string_view, 7> kNames = {"kDLInt",   "kDLUInt",    "kDLFloat", "kDLOpaqueHandle",
                                                             "kDLBfloat", "kDLComplex", "kDLBool"};
  if (code < kNames.size()) return kNames[code];
  if (code <= 17) return "a float8/6/4 code (DLPack 1.1)";
  return "an unknown code";
}
}  // namespace

Result<DataType> to_data_type(DType dtype) {
  if (!dtype_is_valid(dtype))
    return fail(ErrorCode::InvalidArgument, text::format("dlpack: invalid dtype {}", static_cast<int>(dtype)));
  const Row& r = kRows[static_cast<std::size_t>(dtype)];
  return DataType{static_cast<std::uint8_t>(r.code), r.bits, 1};
}

Result<DType> from_data_type(DataType type) {
  if (type.lanes != 1)
    return fail(ErrorCode::Unsupported,
                text::format("dlpack import: dtype code {} ({}) bits {} has {} lanes; only lanes 1 (scalars) is "
                            "supported", type.code, code_name(type.code), type.bits, type.lanes));
  for (const Row& r : kRows)
    if (static_cast<std::uint8_t>(r.code) == type.code && r.bits == type.bits) return r.dtype;
  return fail(ErrorCode::Unsupported,
              text::format("dlpack import: dtype code {} ({}) with {} bits has no edgetensor dtype (known: int/uint "
                          "8-64, float 16/32/64, bfloat 16)", type.code, code_name(type.code), type.bits));
}

}  // namespace dlpack
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
