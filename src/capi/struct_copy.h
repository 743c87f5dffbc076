// SPDX-License-Identifier: Apache-2.0
// The C API's rule for caller structs that begin with uint32_t struct_size (include/edgetensor/c/
// edgetensor_c.h, "Option structs"; Linux's copy_struct_from_user): pure logic, no C API types.
#pragma once

#include <edgetensor/error.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace edgetensor::capi {

/// Largest struct_size accepted: a bigger one is taken for an uninitialized field, not a newer caller.
/// (4 KiB as Linux's sched_setattr cap; not a page size, so never sys::page_size().)
inline constexpr std::size_t kMaxStructSize = 4 * 1024;

/// Checks a caller's struct_size: at least `min_size` (the first version's size), at most kMaxStructSize.
/// Errors: InvalidArgument naming `what` and both numbers.
[[nodiscard]] Result<void> check_struct_size(std::size_t user_size, std::size_t min_size, std::string_view what);

/// Copies the caller's struct `src` of `user_size` bytes into `dst` (`known_size` bytes: this library's
/// struct): a smaller struct (not below `min_size`, the first version's size) leaves the rest of `dst`
/// zero; a larger one must hold only zero bytes past `known_size`. `what` names the struct in errors.
/// Errors: InvalidArgument (user_size below min_size or above kMaxStructSize; a non-zero byte past
/// known_size, naming its offset and value).
[[nodiscard]] Result<void> copy_struct_from_caller(void* dst, std::size_t known_size, std::size_t min_size,
                                                   const void* src, std::size_t user_size, std::string_view what);

/// Writes this library's struct `src` (`known_size` bytes) into the caller's `dst` of `user_size` bytes:
/// the common prefix, then zeros up to user_size. The caller's struct_size field is left as it was.
/// Errors: InvalidArgument (user_size below min_size or above kMaxStructSize).
[[nodiscard]] Result<void> copy_struct_to_caller(void* dst, std::size_t user_size, std::size_t min_size,
                                                 const void* src, std::size_t known_size, std::string_view what);

/// The struct_size a caller's struct declares (its first 4 bytes), read without alignment assumptions.
std::uint32_t declared_struct_size(const void* user_struct) noexcept;

}  // namespace edgetensor::capi
