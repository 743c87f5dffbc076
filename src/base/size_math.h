// SPDX-License-Identifier: Apache-2.0
// Checked unsigned arithmetic. Templated on the unsigned type so the same code is tested with a 32-bit
// size type on a 64-bit host (size_t is 32 bits on some targets).
#pragma once

#include <edgetensor/abi.h>  // ET_ABI_NAMESPACE

#include <optional>
#include <type_traits>
#include <utility>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

template <class U>
constexpr std::optional<U> checked_mul(U a, U b) noexcept {
  static_assert(std::is_unsigned_v<U>);
  U r{};
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

template <class U>
constexpr std::optional<U> checked_add(U a, U b) noexcept {
  static_assert(std::is_unsigned_v<U>);
  U r{};
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/// `value` rounded up to a multiple of `align` (a power of two), or nullopt on overflow.
template <class U>
constexpr std::optional<U> checked_round_up(U value, U align) noexcept {
  auto sum = checked_add<U>(value, static_cast<U>(align - 1));
  if (!sum) return std::nullopt;
  return static_cast<U>(*sum & ~static_cast<U>(align - 1));
}

/// `value` (a size the kernel answers as off_t, st_size, or a wire field) as U, or nullopt when U cannot
/// hold it: a negative value, or an object over 4 GiB with a 32-bit size_t. Never truncates.
template <class U, class V>
constexpr std::optional<U> checked_narrow(V value) noexcept {
  static_assert(std::is_unsigned_v<U> && std::is_integral_v<V>);
  if (!std::in_range<U>(value)) return std::nullopt;
  return static_cast<U>(value);
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
