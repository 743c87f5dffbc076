// SPDX-License-Identifier: Apache-2.0
#include "probe/pattern.h"

#include "text/format.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

Result<void> write_probe_pattern(const TensorDyn& t, std::uint32_t seed) {
  ET_TRY_ASSIGN(auto m, t.map_write());
  auto bytes = m.bytes();
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = std::byte{probe_pattern_byte(i, seed)};
  return {};
}

Result<void> check_probe_pattern(const TensorDyn& t, std::uint32_t seed) {
  ET_TRY_ASSIGN(auto m, t.map_read());
  auto bytes = m.bytes();
  for (std::size_t i = 0; i < bytes.size(); ++i)
    if (bytes[i] != std::byte{probe_pattern_byte(i, seed)})
      return fail(ErrorCode::Internal, text::format("byte {} of {} is {:#04x}, expected {:#04x}", i, bytes.size(),
                                                    static_cast<unsigned>(bytes[i]), probe_pattern_byte(i, seed)));
  return {};
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
