// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <edgetensor/abi.h>  // ET_ABI_NAMESPACE

#include "core/backend.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {
/// memfd (default; sealed F_SEAL_SHRINK|F_SEAL_GROW|F_SEAL_SEAL: no further seal, so never read-only
/// later) and named POSIX shm (O_EXCL, pages reserved; never sealable).
const BackendOps& shm_backend();
/// Opens an existing named POSIX shm object. Errors: InvalidArgument (bad name), NotFound, PermissionDenied.
Result<std::unique_ptr<Backing>> shm_open_named(const std::string& name, bool read_only, FdInfo* info_out);
}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
