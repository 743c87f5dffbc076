// SPDX-License-Identifier: Apache-2.0
// udmabuf: a DMA-BUF made from memfd pages (include/uapi/linux/udmabuf.h, drivers/dma-buf/udmabuf.c).
#pragma once

#include <edgetensor/error.h>
#include <edgetensor/unique_fd.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

/// The kernel's cap in MiB (udmabuf.size_limit_mb) read from `limit_path`, nullopt when unreadable.
/// `problem`, when given, is set to why a path that exists gave no number ("is a directory, not a
/// regular file", "cannot be opened: EACCES", "holds no number"); it stays empty when nothing is there.
std::optional<std::size_t> read_udmabuf_size_limit_mb(const std::string& limit_path, std::string* problem = nullptr);

/// A new udmabuf of `size_bytes` (already rounded to the page size) through the open /dev/udmabuf
/// `dev` (borrowed): a memfd of that size sealed with F_SEAL_SHRINK (the kernel refuses unsealed
/// memfds; named after `tensor_name`), then UDMABUF_CREATE with UDMABUF_FLAGS_CLOEXEC. The memfd is
/// closed before returning (the DMA-BUF holds the pages). `limit_mb`: the module's cap, if known.
/// Errors: OutOfRange over limit_mb (naming it), from_errno of memfd_create / ftruncate / F_ADD_SEALS /
/// UDMABUF_CREATE.
Result<UniqueFd> udmabuf_allocate(int dev, std::optional<std::size_t> limit_mb, std::size_t size_bytes,
                                  std::string_view tensor_name);

/// dmabuf::Allocator::udmabuf_from_memfd's checks, before the device is opened (see dmabuf.h).
Result<void> check_udmabuf_memfd(int memfd, std::size_t offset_bytes, std::size_t size_bytes,
                                 std::optional<std::size_t> limit_mb);
/// UDMABUF_CREATE of [offset_bytes, +size_bytes) of `memfd` on the open `dev` (both borrowed).
Result<UniqueFd> create_udmabuf(int dev, int memfd, std::size_t offset_bytes, std::size_t size_bytes,
                                std::optional<std::size_t> limit_mb);

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
