// SPDX-License-Identifier: Apache-2.0
// udmabuf: a DMA-BUF made from memfd pages (include/uapi/linux/udmabuf.h, drivers/dma-buf/udmabuf.c).
#pragma once

#include <edgetensor/error.h>
#include <edgetensor/unique_fd.h>

#include <cstddef>
#include <optional>
#include <string_view>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

/// The kernel's cap in MiB (udmabuf.size_limit_mb), nullopt when the parameter file is unreadable.
std::optional<std::size_t> udmabuf_size_limit_mb();

/// A new udmabuf of `size_bytes` rounded up to the page size (sys::page_size()): opens /dev/udmabuf, makes a memfd of the
/// rounded size sealed with F_SEAL_SHRINK (the kernel refuses unsealed memfds; named after
/// `tensor_name`), and UDMABUF_CREATE with UDMABUF_FLAGS_CLOEXEC. The memfd is closed before returning
/// (the DMA-BUF holds the pages); the DMA-BUF's real size (lseek) is the rounded size.
/// Errors: OutOfRange over size_limit_mb (naming it), the device open errors, from_errno of
/// memfd_create / ftruncate / F_ADD_SEALS / UDMABUF_CREATE.
Result<UniqueFd> udmabuf_allocate(std::size_t size_bytes, std::string_view tensor_name);

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
