// SPDX-License-Identifier: Apache-2.0
// Element types.
#pragma once

#include <edgetensor/export.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {

/// Element type of a tensor. Values are stable (they travel in IPC headers and the C API).
enum class DType : std::uint8_t {
  U8 = 0, I8, U16, I16, U32, I32, U64, I64, F16, BF16, F32, F64,
};
inline constexpr int kDTypeCount = 12;

/// IEEE 754 binary16, stored as its bit pattern (no arithmetic is offered).
struct Float16 { std::uint16_t bits; };
/// bfloat16 (the upper half of a binary32), stored as its bit pattern.
struct BFloat16 { std::uint16_t bits; };

/// Size of one element in bytes (1, 2, 4 or 8); 0 for an invalid value.
ET_API std::size_t dtype_size(DType dtype) noexcept;
/// Lower-case name: "u8", "i8", ..., "f16", "bf16", "f32", "f64"; "invalid" otherwise.
ET_API std::string_view dtype_name(DType dtype) noexcept;
/// Parses a name produced by dtype_name.
ET_API std::optional<DType> dtype_from_name(std::string_view name) noexcept;
/// True when `value` is one of the enumerators.
constexpr bool dtype_is_valid(DType dtype) noexcept {
  return static_cast<unsigned>(dtype) < static_cast<unsigned>(kDTypeCount);
}

/// Maps a C++ element type to its DType (used by Tensor<T>).
template <class T> struct DTypeOf;
template <> struct DTypeOf<std::uint8_t> { static constexpr DType value = DType::U8; };
template <> struct DTypeOf<std::int8_t> { static constexpr DType value = DType::I8; };
template <> struct DTypeOf<std::uint16_t> { static constexpr DType value = DType::U16; };
template <> struct DTypeOf<std::int16_t> { static constexpr DType value = DType::I16; };
template <> struct DTypeOf<std::uint32_t> { static constexpr DType value = DType::U32; };
template <> struct DTypeOf<std::int32_t> { static constexpr DType value = DType::I32; };
template <> struct DTypeOf<std::uint64_t> { static constexpr DType value = DType::U64; };
template <> struct DTypeOf<std::int64_t> { static constexpr DType value = DType::I64; };
template <> struct DTypeOf<Float16> { static constexpr DType value = DType::F16; };
template <> struct DTypeOf<BFloat16> { static constexpr DType value = DType::BF16; };
template <> struct DTypeOf<float> { static constexpr DType value = DType::F32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::F64; };

}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
