// SPDX-License-Identifier: Apache-2.0
// Anonymous shared memory files (memfd): made, sized and sealed in one place for every backend that
// needs one (the shm backend's tensors, the pages behind a udmabuf).
#pragma once

#include <edgetensor/error.h>
#include <edgetensor/unique_fd.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

/// The memfd name for a tensor: `prefix` alone, or "<prefix>:<tensor_name>" with the tensor name cut at
/// 200 bytes (the kernel cuts names at 249). The name shows in /proc/<pid>/fd and /proc/<pid>/maps.
std::string memfd_name(std::string_view prefix, std::string_view tensor_name);

/// "F_SEAL_SHRINK|F_SEAL_GROW" for a set of F_SEAL_* bits; "none" for 0.
std::string seal_names(unsigned seals);

/// A new memfd (MFD_CLOEXEC | MFD_ALLOW_SEALING) named `name`, `size_bytes` long (ftruncate, so its
/// pages read as zeros and are not reserved), then sealed with `seals` (F_SEAL_* bits; 0 = none). The
/// returned fd is owned by the caller. Include F_SEAL_SEAL when the fd leaves the process: without it
/// a receiver can add F_SEAL_WRITE/F_SEAL_FUTURE_WRITE and lock the owner out of its own buffer. Errors: from_errno of memfd_create, ftruncate (ENOSPC/ENOMEM ->
/// OutOfMemory) or fcntl(F_ADD_SEALS), each naming the memfd and the size or seals.
Result<UniqueFd> create_sealed_memfd(const std::string& name, std::size_t size_bytes, unsigned seals);

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
