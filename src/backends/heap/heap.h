// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <edgetensor/abi.h>  // ET_ABI_NAMESPACE

#include "core/backend.h"

namespace edgetensor::inline ET_ABI_NAMESPACE::detail {
/// Process-private memory, 256-byte aligned, zero by construction (fresh anonymous pages for large
/// buffers, so allocation touches no page; calloc-like zeroing for small ones).
const BackendOps& heap_backend();
}  // namespace edgetensor::detail
