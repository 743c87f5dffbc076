// SPDX-License-Identifier: Apache-2.0
// DLPack names and the dtype mapping (dlpack.h 1.1: DLDeviceType, DLDataTypeCode).
#include <edgetensor/dlpack.h>

#include <array>
#include <cstddef>
#include <cstdint>

#include "text/format.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace dlpack {

// ---- ABI checks (dlpack.h 1.1; LP64 and ILP32, with 4- or 8-byte aligned 64-bit integers) ------
namespace abi {  // private: the layout probe behind the static_asserts below
inline constexpr std::size_t kPtr = sizeof(void*);
struct Align64Probe {
  char c;
  std::uint64_t v;
};
// Alignment of a 64-bit integer inside a struct: 8 on LP64 and armhf (AAPCS), 4 on i386 (whose
// alignof(uint64_t) is 8 while struct members get 4).
inline constexpr std::size_t kAlign64 = offsetof(Align64Probe, v);
constexpr std::size_t round_up(std::size_t v, std::size_t a) { return (v + a - 1) / a * a; }
inline constexpr std::size_t kTensorAlign = kPtr > kAlign64 ? kPtr : kAlign64;
// DlTensor: data, device (8 B), ndim, dtype (4 B), shape, strides, byte_offset.
inline constexpr std::size_t kShapeOffset = round_up(kPtr + 8 + 4 + 4, kPtr);
inline constexpr std::size_t kByteOffsetOffset = round_up(kShapeOffset + 2 * kPtr, kAlign64);
inline constexpr std::size_t kTensorSize = round_up(kByteOffsetOffset + 8, kTensorAlign);
inline constexpr std::size_t kFlagsOffset = round_up(8 + 2 * kPtr, kAlign64);
inline constexpr std::size_t kVersionedTensorOffset = round_up(kFlagsOffset + 8, kTensorAlign);
}  // namespace abi
static_assert(sizeof(Version) == 8 && sizeof(Device) == 8 && sizeof(DataType) == 4);
static_assert(offsetof(DataType, bits) == 1 && offsetof(DataType, lanes) == 2);
static_assert(offsetof(Device, device_id) == 4);
static_assert(offsetof(DlTensor, device) == abi::kPtr && offsetof(DlTensor, ndim) == abi::kPtr + 8 &&
              offsetof(DlTensor, dtype) == abi::kPtr + 12);
static_assert(offsetof(DlTensor, shape) == abi::kShapeOffset &&
              offsetof(DlTensor, strides) == abi::kShapeOffset + abi::kPtr &&
              offsetof(DlTensor, byte_offset) == abi::kByteOffsetOffset && sizeof(DlTensor) == abi::kTensorSize);
static_assert(offsetof(ManagedTensor, manager_ctx) == abi::kTensorSize &&
              offsetof(ManagedTensor, deleter) == abi::kTensorSize + abi::kPtr &&
              sizeof(ManagedTensor) == abi::round_up(abi::kTensorSize + 2 * abi::kPtr, abi::kTensorAlign));
static_assert(offsetof(ManagedTensorVersioned, manager_ctx) == 8 &&
              offsetof(ManagedTensorVersioned, deleter) == 8 + abi::kPtr &&
              offsetof(ManagedTensorVersioned, flags) == abi::kFlagsOffset &&
              offsetof(ManagedTensorVersioned, dl_tensor) == abi::kVersionedTensorOffset &&
              sizeof(ManagedTensorVersioned) == abi::kVersionedTensorOffset + abi::kTensorSize);
#if defined(__x86_64__) || defined(__aarch64__)
static_assert(sizeof(DlTensor) == 48 && sizeof(ManagedTensor) == 64 && sizeof(ManagedTensorVersioned) == 80);
#elif defined(__arm__)
static_assert(sizeof(DlTensor) == 40 && sizeof(ManagedTensor) == 48 && sizeof(ManagedTensorVersioned) == 64);
#endif


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
