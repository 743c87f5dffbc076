// SPDX-License-Identifier: Apache-2.0
// The syntax of a named POSIX shm object (shm_overview(7)), checked in one place: by allocate for
// every tensor (also one with zero elements, which never reaches the shm backend) and by the shm
// backend's create, open and remove.
#pragma once

#include <edgetensor/error.h>

#include <string>
#include <string_view>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

/// Validates a POSIX shm name: "/" + 1 to NAME_MAX - 2 characters, no further '/', no NUL, not "/."
/// or "/..". `what` names the argument ("shm::open: shm_name"). Errors: InvalidArgument naming the
/// argument, the name and the rule (a NUL: its byte position).
Result<void> check_shm_name(const std::string& name, std::string_view what);

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
