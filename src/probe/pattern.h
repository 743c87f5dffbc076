// SPDX-License-Identifier: Apache-2.0
// The byte pattern the probe writes and checks through CPU maps: in process (probe()) and across
// processes (the CLI's exec'd peer). One module (et_probe_pattern), linked into the library and,
// as a copy, into the CLI, so both ends of a round trip agree on every byte.
#pragma once

#include <edgetensor/tensor.h>

#include <cstddef>
#include <cstdint>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

/// Byte `i` of the test pattern for `seed`.
inline std::uint8_t probe_pattern_byte(std::size_t i, std::uint32_t seed) {
  return static_cast<std::uint8_t>((i * 131u + seed * 7u + (i >> 8)) & 0xffu);
}
/// Writes the pattern for `seed` through a write map. Errors: the map's.
Result<void> write_probe_pattern(const TensorDyn& t, std::uint32_t seed);
/// Checks the pattern for `seed` through a read map. Errors: the map's; Internal naming the first bad byte.
Result<void> check_probe_pattern(const TensorDyn& t, std::uint32_t seed);

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
