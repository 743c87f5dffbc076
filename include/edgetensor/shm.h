// SPDX-License-Identifier: Apache-2.0
// Shared-memory specifics: named POSIX shm objects (/dev/shm), opened and removed by name.
//
// Allocation goes through TensorDyn::allocate (memory Shm; AllocateOptions::shm_name for a named
// object, else an anonymous memfd sealed F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL: fixed size, and no
// process can add a seal, so no receiver can make it read-only under its owner, and the owner can never
// make it read-only later either). A name is "/" followed by 1 to NAME_MAX - 2 characters with no
// further '/' and no NUL byte (shm_overview(7)); "/." and "/.." are refused. Named objects cannot be sealed (the kernel
// marks them F_SEAL_SEAL), so a peer can shrink one under a mapping: prefer memfds for sharing with
// processes you do not trust (ipc::send refuses an unsealed memfd for the same reason).
#pragma once

#include <edgetensor/array_ref.h>
#include <edgetensor/error.h>
#include <edgetensor/export.h>
#include <edgetensor/tensor.h>

#include <string>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace shm {

/// Opens an existing named POSIX shm object read-write (read-only when `read_only`) as a tensor of
/// `shape` (elements) and `dtype`, checking the object's real size against offset + extent. The
/// library owns the fd it opens; the object stays in /dev/shm until remove().
/// A named object can never be sealed, so any process that can open it can truncate it, and this
/// process would then die of SIGBUS touching the lost pages: open refuses unless
/// `options.allow_shrinkable` (ImportOptions{.allow_shrinkable = true}, for trusted writers only;
/// else share a sealed memfd with ipc::send). The object is opened first, so a missing name is
/// NotFound whatever the options; a refused one is closed again, never touched.
/// Errors: InvalidArgument (bad name; allow_shrinkable not set), NotFound, PermissionDenied,
/// OutOfRange (object too small).
[[nodiscard]] ET_API Result<TensorDyn> open(const std::string& shm_name, ArrayRef<std::size_t> shape, DType dtype,
                                            bool read_only = false, const ImportOptions& options = {});

/// Removes a named POSIX shm object (shm_unlink). Live mappings and tensors stay valid.
/// Errors: InvalidArgument (bad name), NotFound, PermissionDenied.
[[nodiscard]] ET_API Result<void> remove(const std::string& shm_name);

}  // namespace shm
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
