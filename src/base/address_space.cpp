// SPDX-License-Identifier: Apache-2.0
#include "base/address_space.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstdint>

#include "text/format.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

std::string address_space_note(std::size_t bytes, int err) {
  if (err != ENOMEM) return {};
  std::string note = text::format("; the mapping needs {} B of contiguous address space", bytes);
  if constexpr (sizeof(void*) == 4)
    note += text::format(" and a 32-bit process has {} B (4 GiB) in all, its libraries and heap included",
                         std::uint64_t{1} << 32);
  struct rlimit lim {};
  if (::getrlimit(RLIMIT_AS, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY)
    note += text::format(" (RLIMIT_AS {} B)", static_cast<std::uint64_t>(lim.rlim_cur));
  return note;
}

Error mapping_error(int err, std::string_view context, std::size_t bytes) {
  Error e = Error::from_errno(err, context);
  return Error(e.code(), e.message() + address_space_note(bytes, err), err);
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
