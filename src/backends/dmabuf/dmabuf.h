// SPDX-License-Identifier: Apache-2.0
// The DMA-BUF backend: dma-heap, udmabuf and imported DMA-BUF fds behind the Backing seam.
#pragma once

#include <edgetensor/abi.h>  // ET_ABI_NAMESPACE
#include <edgetensor/dmabuf.h>

#include "core/backend.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

/// Allocation (through AllocateOptions::dmabuf_allocator or the default; see include/edgetensor/dmabuf.h),
/// import, backend status.
const BackendOps& dmabuf_backend();

/// backend_status(DmaBuf) from an allocator's report (the default allocator's, in backend_status).
BackendStatus dmabuf_backend_status(const dmabuf::AllocatorReport& report);

/// A Backing over an existing DMA-BUF fd (owned). `name_it`: give it our DMA_BUF_SET_NAME (only for
/// buffers we allocated; never for imports). Maps: one persistent mmap made on the first CPU map,
/// each bracket opened/closed with DMA_BUF_IOCTL_SYNC. Exposed for tests.
std::unique_ptr<Backing> make_dmabuf_backing(UniqueFd fd, std::size_t size_bytes, bool read_only, ObjectKey key,
                                             std::string detail);

/// Names a DMA-BUF we own with DMA_BUF_SET_NAME (dmabuf_buffer_name(tensor_name)); a refusal is
/// logged, not returned.
void name_dmabuf(int fd, std::string_view tensor_name) noexcept;

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
