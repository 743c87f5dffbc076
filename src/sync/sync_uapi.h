// SPDX-License-Identifier: Apache-2.0
// The kernel's explicit-sync UAPI in one place: include/uapi/linux/sync_file.h (SYNC_IOC_MERGE,
// SYNC_IOC_FILE_INFO) and the sync_file ioctls of include/uapi/linux/dma-buf.h (Linux >= 6.0).
// Headers older than 6.0 lack the DMA-BUF pair: they are declared here from the UAPI definition.
#pragma once

#include <edgetensor/abi.h>  // ET_ABI_NAMESPACE

#include <linux/ioctl.h>  // _IOW/_IOWR: Linux 6.1.4's <linux/dma-buf.h> (Debian's cross headers) omits it
#include <linux/dma-buf.h>
#include <linux/sync_file.h>
#include <linux/types.h>

#ifndef DMA_BUF_IOCTL_EXPORT_SYNC_FILE
// include/uapi/linux/dma-buf.h since Linux 6.0: flags is DMA_BUF_SYNC_READ and/or DMA_BUF_SYNC_WRITE;
// fd is the returned sync_file.
struct dma_buf_export_sync_file {
  __u32 flags;
  __s32 fd;
};
// include/uapi/linux/dma-buf.h since Linux 6.0: flags as above; fd is the sync_file whose fence is
// added to the buffer's reservation object.
struct dma_buf_import_sync_file {
  __u32 flags;
  __s32 fd;
};
#define DMA_BUF_IOCTL_EXPORT_SYNC_FILE _IOWR(DMA_BUF_BASE, 2, struct dma_buf_export_sync_file)
#define DMA_BUF_IOCTL_IMPORT_SYNC_FILE _IOW(DMA_BUF_BASE, 3, struct dma_buf_import_sync_file)
#endif

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

// The layouts the ioctl numbers encode (both are the same on 32- and 64-bit: no compat translation).
static_assert(sizeof(dma_buf_export_sync_file) == 8 && sizeof(dma_buf_import_sync_file) == 8);
static_assert(sizeof(sync_merge_data) == 48 && sizeof(sync_file_info) == 56 && sizeof(sync_fence_info) == 80);

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
