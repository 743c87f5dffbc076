// SPDX-License-Identifier: Apache-2.0
// The interface each backend exposes to the core, and fd recognition.
#pragma once

#include <edgetensor/memory.h>
#include <edgetensor/tensor.h>

#include <memory>
#include <string>

#include "core/storage.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

/// What the kernel says an fd is.
struct FdInfo {
  MemoryKind kind = MemoryKind::Shm;  // Shm (tmpfs/hugetlbfs/memfd) or DmaBuf
  std::size_t buffer_bytes = 0;       // real size of the whole buffer
  bool read_only = false;             // O_RDONLY or sealed against writes
  unsigned seals = 0;                 // F_GET_SEALS (0 where sealing is not supported)
  ObjectKey key;                      // st_dev, st_ino
  std::string what;                   // "memfd:name", "tmpfs file", "DMA-BUF"
};

/// Recognises `fd` from fstat/fstatfs/F_GET_SEALS and reads its real size without moving the file
/// offset. Errors: InvalidArgument naming what the fd is when it is not shareable memory; OutOfRange
/// when the object is larger than size_t can hold (a 32-bit process and an object over 4 GiB).
Result<FdInfo> probe_fd(int fd);

/// `bytes` (the kernel's size of the object behind `fd`, as st_size or lseek answer it) as a size_t.
/// Errors: OutOfRange naming the size and SIZE_MAX when this process cannot address it (never
/// truncated); Internal for a negative size.
Result<std::size_t> object_bytes(int fd, long long bytes, std::string_view what);

/// The real size of a DMA-BUF in bytes: lseek(SEEK_END), then back to 0 (dma_buf_llseek accepts only
/// offset 0 with SEEK_SET/SEEK_END; the position has no other meaning). Errors: from_errno of lseek,
/// object_bytes' errors.
Result<std::size_t> dmabuf_buffer_bytes(int fd);

/// statfs.f_type as the kernel's magic number (include/uapi/linux/magic.h: 32-bit unsigned values).
/// f_type is a signed `int` on 32-bit targets, where magics from 0x80000000 up (HUGETLBFS_MAGIC,
/// BTRFS_SUPER_MAGIC) are negative: they must not be sign-extended. Templated on the field's type so a
/// 64-bit host tests the 32-bit case.
template <class Word>
constexpr std::uint64_t fs_magic(Word f_type) noexcept {
  return static_cast<std::uint32_t>(f_type);
}

/// Pure classification of fstatfs magic + st_mode: returns the MemoryKind, or an error naming the
/// object (pipe, socket, directory, "file on ext4 (magic 0xef53)").
Result<MemoryKind> classify_fd(std::uint64_t fs_magic, unsigned st_mode);

struct BackendOps {
  MemoryKind kind;
  BackendStatus (*status)();
  Result<std::unique_ptr<Backing>> (*allocate)(std::size_t size_bytes, const AllocateOptions& options);
  /// Imports an fd recognised as this kind. Takes ownership of `fd`.
  Result<std::unique_ptr<Backing>> (*import_fd)(UniqueFd fd, const FdInfo& info);
  /// True when an Auto allocation need not try this backend because it is known to fail (not built; the
  /// DMA-BUF memo knows every node is missing or refuses us): no system call, no error text. Null: try it.
  bool (*auto_skips)(const AllocateOptions& options) = nullptr;
};

/// The backend table entry for `kind` (Heap, Shm, DmaBuf, GlPbo). Backends not built answer
/// Unavailable from every entry. Defined in backend_registry.cpp.
const BackendOps& backend_ops(MemoryKind kind);

/// A tensor over a new storage holding `backing`, checked like an import (shape, strides, offset and
/// extent against the backing's real size). For backends that open buffers themselves (named shm).
Result<TensorDyn> tensor_from_backing(std::unique_ptr<Backing> backing, ArrayRef<std::size_t> shape, DType dtype,
                                      const ImportOptions& options);

/// A tensor over `fd` (owned; closed on every error path), which probe_fd already recognised as `info`
/// (or a dup of the fd it probed: a dup shares the file description), checked like an import. The one
/// import path after the probe: adopt_fd, import_fd_dup and ipc::receive probe once and call this.
/// `keep_alive` (may be empty) is held by the new storage (Storage::set_keep_alive); on failure it is
/// dropped before returning.
Result<TensorDyn> tensor_from_fd(UniqueFd fd, const FdInfo& info, ArrayRef<std::size_t> shape, DType dtype,
                                 const ImportOptions& options, std::shared_ptr<void> keep_alive = {});

/// A zero-byte backing: no allocation, empty maps, no fd.
std::unique_ptr<Backing> make_empty_backing(MemoryKind kind);

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
