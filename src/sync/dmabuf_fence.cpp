// SPDX-License-Identifier: Apache-2.0
// sync_file export from and import into DMA-BUFs (include/edgetensor/fence.h).
#include <edgetensor/fence.h>
#include <edgetensor/tensor.h>

#include <cerrno>

#include "text/format.h"

#include "base/sys.h"
#include "core/storage.h"
#include "sync/sync_internal.h"
#include "sync/sync_uapi.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

namespace {

__u32 access_flags(sync::Access access) noexcept {
  return access == sync::Access::Write ? DMA_BUF_SYNC_WRITE : DMA_BUF_SYNC_READ;
}
const char* access_name(sync::Access access) noexcept { return access == sync::Access::Write ? "WRITE" : "READ"; }

// The DMA-BUF fd of `tensor`'s storage. `who` names the call in errors.
Result<int> dmabuf_fd_of(const TensorDyn& tensor, std::string_view who) {
  const auto& storage = storage_of(tensor);
  if (!storage) return fail(ErrorCode::FailedPrecondition, text::format("{}: tensor has no storage", who));
  const Backing& b = storage->backing();
  if (storage->kind() != MemoryKind::DmaBuf || b.fd() < 0)
    return fail(ErrorCode::Unsupported,
                text::format("{}: {} tensor ({}) has no DMA-BUF; fences attach to DMA-BUFs only", who,
                             memory_kind_name(storage->kind()), b.detail()));
  return b.fd();
}

}  // namespace
}  // namespace detail

namespace sync {
namespace {  // reachable from detail::pending_fences_text below, in this file only

// `known_dmabuf`: the caller knows the fd is a DMA-BUF (a tensor's storage), so ENOTTY can only mean
// the kernel lacks the ioctl; otherwise the error looks at what the fd is.
Result<Fence> export_on(int dmabuf_fd, Access access, bool known_dmabuf) {
  if (dmabuf_fd < 0)
    return fail(ErrorCode::InvalidArgument, text::format("export_fence: fd {} is not a valid fd", dmabuf_fd));
  dma_buf_export_sync_file arg{};
  arg.flags = detail::access_flags(access);
  arg.fd = -1;
  if (sys::ioctl(dmabuf_fd, DMA_BUF_IOCTL_EXPORT_SYNC_FILE, &arg) != 0)
    return fail(detail::dmabuf_sync_file_error(
        errno, dmabuf_fd, text::format("DMA_BUF_IOCTL_EXPORT_SYNC_FILE {}", detail::access_name(access)), known_dmabuf));
  return detail::FenceAccess::wrap(UniqueFd(arg.fd));  // the kernel's fd is O_CLOEXEC
}

Result<void> import_on(int dmabuf_fd, const Fence& fence, Access access, bool known_dmabuf) {
  if (dmabuf_fd < 0)
    return fail(ErrorCode::InvalidArgument, text::format("import_fence: fd {} is not a valid fd", dmabuf_fd));
  if (fence.is_signalled_without_fd()) return {};  // nothing to wait for: nothing to add
  dma_buf_import_sync_file arg{};
  arg.flags = detail::access_flags(access);
  arg.fd = fence.fd();
  if (sys::ioctl(dmabuf_fd, DMA_BUF_IOCTL_IMPORT_SYNC_FILE, &arg) != 0)
    return fail(detail::dmabuf_sync_file_error(
        errno, dmabuf_fd,
        text::format("DMA_BUF_IOCTL_IMPORT_SYNC_FILE {} of sync_file fd {}", detail::access_name(access), fence.fd()),
        known_dmabuf));
  return {};
}

}  // namespace

}  // namespace sync

namespace detail {
std::string pending_fences_text(int dmabuf_fd, sync::Access access) noexcept {
  try {
    auto fence = sync::export_on(dmabuf_fd, access, true);
    if (!fence) return "its fences could not be listed: " + fence.error().to_string();
    auto status = fence->status();
    if (!status) return "its fences could not be listed: " + status.error().to_string();
    return status->to_string();
  } catch (...) {
    return "its fences could not be listed";
  }
}
}  // namespace detail

namespace sync {

Result<Fence> export_fence(int dmabuf_fd, Access access) { return export_on(dmabuf_fd, access, false); }

Result<void> import_fence(int dmabuf_fd, const Fence& fence, Access access) {
  return import_on(dmabuf_fd, fence, access, false);
}

Result<Fence> export_fence(const TensorDyn& tensor, Access access) {
  ET_TRY_ASSIGN(const int fd, detail::dmabuf_fd_of(tensor, "export_fence"));
  return export_on(fd, access, true);
}

Result<void> import_fence(const TensorDyn& tensor, const Fence& fence, Access access) {
  ET_TRY_ASSIGN(const int fd, detail::dmabuf_fd_of(tensor, "import_fence"));
  return import_on(fd, fence, access, true);
}

}  // namespace sync
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
