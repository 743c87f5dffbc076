// SPDX-License-Identifier: Apache-2.0
// A caller's string that a system call takes as a C string (a path, a shm or memfd name, a DMA-BUF
// name): a NUL byte inside would end it early, and the kernel would act on another name than the one
// given. Checked where the public API takes the string, naming the argument.
#pragma once

#include <edgetensor/error.h>

#include <string_view>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

/// Refuses `value` when it holds a NUL byte. `what` names the argument ("AllocateOptions::shm_name").
/// Errors: InvalidArgument naming `what`, the byte position of the first NUL and the length.
Result<void> check_c_string(std::string_view value, std::string_view what);

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
