// SPDX-License-Identifier: Apache-2.0
#include "base/shm_name.h"

#include <linux/limits.h>

#include "text/format.h"

#include "base/c_string.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

Result<void> check_shm_name(const std::string& name, std::string_view what) {
  ET_TRY(check_c_string(name, what));
  if (name.size() < 2 || name[0] != '/' || name.find('/', 1) != std::string::npos || name.size() >= NAME_MAX)
    return fail(ErrorCode::InvalidArgument,
                text::format("{}: POSIX shm name '{}' is invalid: it must be '/' followed by 1 to {} characters "
                            "without another '/'", what, name, NAME_MAX - 2));
  if (name == "/." || name == "/..")
    return fail(ErrorCode::InvalidArgument,
                text::format("{}: POSIX shm name '{}' is invalid: it names a directory, not an object", what, name));
  return {};
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
