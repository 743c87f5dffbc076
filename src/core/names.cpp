// SPDX-License-Identifier: Apache-2.0
// Names of the public enums, and the version.
#include <edgetensor/dtype.h>
#include <edgetensor/memory.h>
#include <edgetensor/version.h>

#include <array>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace {
constexpr std::array<std::string_view, kDTypeCount> kDTypeNames = {
    "u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "f16", "bf16", "f32", "f64"};
constexpr std::array<std::size_t, kDTypeCount> kDTypeSizes = {1, 1, 2, 2, 4, 4, 8, 8, 2, 2, 4, 8};
constexpr std::array<std::string_view, 6> kMemoryNames = {"auto", "heap", "shm", "dmabuf", "gl_pbo", "foreign"};
// One table lookup for every enum <-> name pair below.
template <class E, std::size_t N>
std::string_view name_of(const std::array<std::string_view, N>& names, E value) noexcept {
  auto i = static_cast<std::size_t>(value);
  return i < N ? names[i] : "invalid";
}
template <class E, std::size_t N>
std::optional<E> value_of(const std::array<std::string_view, N>& names, std::string_view name) noexcept {
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == name) return static_cast<E>(i);
  return std::nullopt;
}
}  // namespace

std::size_t dtype_size(DType d) noexcept { return dtype_is_valid(d) ? kDTypeSizes[static_cast<int>(d)] : 0; }
std::string_view dtype_name(DType d) noexcept { return name_of(kDTypeNames, d); }
std::optional<DType> dtype_from_name(std::string_view name) noexcept { return value_of<DType>(kDTypeNames, name); }
std::string_view memory_kind_name(MemoryKind k) noexcept { return name_of(kMemoryNames, k); }
std::optional<MemoryKind> memory_kind_from_name(std::string_view name) noexcept {
  return value_of<MemoryKind>(kMemoryNames, name);
}

std::string_view version() noexcept { return ET_VERSION_STRING; }

}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
