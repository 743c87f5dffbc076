// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <edgetensor/abi.h>  // ET_ABI_NAMESPACE

#include "core/backend.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {
/// Process-private memory, 256-byte aligned, zero by construction (fresh anonymous pages for large
/// buffers, so allocation touches no page; calloc-like zeroing for small ones). From one PMD huge page
/// (sys::hpage_pmd_size) up, the pages start on a huge-page boundary and are advised MADV_HUGEPAGE.
const BackendOps& heap_backend();
}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
