// SPDX-License-Identifier: Apache-2.0
// What a failed mapping means for the process's address space, for the errors of the mapping paths.
#pragma once

#include <edgetensor/error.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

/// Text appended to the error of an mmap of `bytes` that failed with `err`. For ENOMEM (mmap(2): no
/// free range of that size, or RLIMIT_AS would be exceeded): "; the mapping needs <bytes> B of
/// contiguous address space", then "and a 32-bit process has 4294967296 B (4 GiB) in all" in 32-bit
/// builds, and the RLIMIT_AS limit (getrlimit(2)) when one is set. Empty for any other errno.
std::string address_space_note(std::size_t bytes, int err);

/// Error::from_errno(err, context) with address_space_note(bytes, err) appended.
Error mapping_error(int err, std::string_view context, std::size_t bytes);

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
