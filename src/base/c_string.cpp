// SPDX-License-Identifier: Apache-2.0
#include "base/c_string.h"

#include "text/format.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

Result<void> check_c_string(std::string_view value, std::string_view what) {
  const std::size_t at = value.find('\0');
  if (at == std::string_view::npos) return {};
  constexpr std::size_t kShown = 64;  // of the part a system call would see
  const std::string_view seen = value.substr(0, at);
  return fail(ErrorCode::InvalidArgument,
              text::format("{} has a NUL byte at byte {} of {} (counting from 0): a C string ends there, so "
                           "the system call would see only \"{}{}\"",
                           what, at, value.size(), seen.substr(0, kShown), seen.size() > kShown ? "..." : ""));
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
