// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <edgetensor/export.h>

#include <string_view>

#define ET_VERSION_MAJOR 0
#define ET_VERSION_MINOR 1
#define ET_VERSION_PATCH 0

namespace edgetensor {
/// "0.1.0": the version of the library actually loaded (may differ from the headers').
ET_API std::string_view version() noexcept;
}  // namespace edgetensor
