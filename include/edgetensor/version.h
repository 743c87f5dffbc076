// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <edgetensor/export.h>

#include <string_view>

// ET_VERSION_MAJOR/MINOR/PATCH/STRING and ET_SOVERSION come from <edgetensor/abi.h> (generated).

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
/// e.g. "0.2.0": the version of the library actually loaded (may differ from the headers').
ET_API std::string_view version() noexcept;
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
