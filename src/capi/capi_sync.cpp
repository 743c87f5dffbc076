// SPDX-License-Identifier: Apache-2.0
// Fences (sync::Fence) and their export from and import into a tensor's DMA-BUF.
#include "capi/capi_support.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

using namespace edgetensor;
using namespace edgetensor::capi;

namespace {

Result<sync::Access> read_access(std::string_view function, int32_t access) {
  if (access != ET_FENCE_ACCESS_READ && access != ET_FENCE_ACCESS_WRITE)
    return fail(ErrorCode::InvalidArgument, std::string(function) + ": access " + std::to_string(access) +
                                                " is not ET_FENCE_ACCESS_READ (1) or ET_FENCE_ACCESS_WRITE (2)");
  return static_cast<sync::Access>(access);
}

void give_fence(sync::Fence fence, et_fence** out) {
  *out = new et_fence{.fence = std::make_shared<const sync::Fence>(std::move(fence))};
}

// A fence kept until the handle exists: give_fence's allocation may throw, and the Fence then closes its fd.
Result<void> hand_out(Result<sync::Fence> fence, et_fence** out) {
  if (!fence) return fail(fence.error());
  give_fence(std::move(*fence), out);
  return {};
}

}  // namespace

extern "C" {

et_status et_fence_create_signalled(et_fence** out) {
  return guarded([&]() -> Result<void> {
    if (out == nullptr) return null_argument("et_fence_create_signalled", "out");
    *out = nullptr;
    give_fence(sync::Fence(), out);
    return {};
  });
}

et_status et_fence_import_adopt(int32_t fd, et_fence** out) {
  return guarded([&]() -> Result<void> {
    UniqueFd owned(fd >= 0 ? fd : -1);  // taken on every path: owned before the first check can return
    if (out == nullptr) return null_argument("et_fence_import_adopt", "out");
    *out = nullptr;
    if (fd < 0)
      return fail(ErrorCode::InvalidArgument, "et_fence_import_adopt: fd " + std::to_string(fd) +
                                                  " is negative (a signalled fence is et_fence_create_signalled)");
    return hand_out(sync::Fence::adopt(std::move(owned)), out);
  });
}

et_status et_fence_import_dup(int32_t borrowed_fd, et_fence** out) {
  return guarded([&]() -> Result<void> {
    if (out == nullptr) return null_argument("et_fence_import_dup", "out");
    *out = nullptr;
    if (borrowed_fd < -1)
      return fail(ErrorCode::InvalidArgument, "et_fence_import_dup: fd " + std::to_string(borrowed_fd) +
                                                  " is negative (only -1, a signalled fence, is allowed)");
    return hand_out(sync::Fence::duplicate(borrowed_fd), out);
  });
}

et_fence* et_fence_retain(et_fence* fence) { return retain_handle(fence); }
void et_fence_release(et_fence* fence) {
  const int saved = errno;  // the last release closes the sync_file
  release_handle(fence);
  errno = saved;
}

et_status et_fence_wait(const et_fence* fence, int64_t timeout_ns) {
  return guarded([&]() -> Result<void> {
    if (fence == nullptr) return null_argument("et_fence_wait", "fence");
    return fence->fence->wait(wait_from_ns(timeout_ns, std::chrono::milliseconds(-1)));
  });
}

et_status et_fence_get_borrowed_fd(const et_fence* fence, int32_t* out_borrowed_fd) {
  return guarded([&]() -> Result<void> {
    if (out_borrowed_fd == nullptr) return null_argument("et_fence_get_borrowed_fd", "out_borrowed_fd");
    *out_borrowed_fd = -1;
    if (fence == nullptr) return null_argument("et_fence_get_borrowed_fd", "fence");
    *out_borrowed_fd = fence->fence->fd();
    return {};
  });
}

et_status et_fence_dup_fd(const et_fence* fence, int32_t* out_fd) {
  return guarded([&]() -> Result<void> {
    if (out_fd == nullptr) return null_argument("et_fence_dup_fd", "out_fd");
    *out_fd = -1;
    if (fence == nullptr) return null_argument("et_fence_dup_fd", "fence");
    ET_TRY_ASSIGN(auto copy, fence->fence->dup());
    *out_fd = copy.release().release();
    return {};
  });
}

et_status et_fence_merge(const et_fence* a, const et_fence* b, const char* name, et_fence** out) {
  return guarded([&]() -> Result<void> {
    if (out == nullptr) return null_argument("et_fence_merge", "out");
    *out = nullptr;
    if (a == nullptr) return null_argument("et_fence_merge", "a");
    if (b == nullptr) return null_argument("et_fence_merge", "b");
    return hand_out(sync::Fence::merge(*a->fence, *b->fence, name != nullptr ? name : "edgetensor"), out);
  });
}

et_status et_fence_get_status(const et_fence* fence, et_fence_status* status) {
  return guarded([&]() -> Result<void> {
    if (fence == nullptr) return null_argument("et_fence_get_status", "fence");
    if (status == nullptr) return null_argument("et_fence_get_status", "status");
    // Checked first, so a bad struct_size costs no ioctl.
    ET_TRY(check_struct_size(declared_struct_size(status), ET_FENCE_STATUS_SIZE_VER0, "et_fence_status"));
    ET_TRY_ASSIGN(auto s, fence->fence->status());
    et_fence_status v{};
    v.struct_size = sizeof v;
    v.status = s.status;
    v.fence_count = static_cast<uint32_t>(s.fences.size());
    v.pending_count = static_cast<uint32_t>(
        std::count_if(s.fences.begin(), s.fences.end(), [](const sync::FenceInfo& f) { return f.status == 0; }));
    std::memcpy(v.name, s.name.data(), std::min(s.name.size(), sizeof v.name - 1));  // v is zeroed: NUL-terminated
    return write_output(status, v, ET_FENCE_STATUS_SIZE_VER0, "et_fence_status");
  });
}

et_status et_tensor_export_fence(const et_tensor* tensor, int32_t access, et_fence** out) {
  return guarded([&]() -> Result<void> {
    if (out == nullptr) return null_argument("et_tensor_export_fence", "out");
    *out = nullptr;
    if (tensor == nullptr) return null_argument("et_tensor_export_fence", "tensor");
    ET_TRY_ASSIGN(auto a, read_access("et_tensor_export_fence", access));
    return hand_out(sync::export_fence(tensor->tensor, a), out);
  });
}

et_status et_tensor_import_fence(const et_tensor* tensor, const et_fence* fence, int32_t access) {
  return guarded([&]() -> Result<void> {
    if (tensor == nullptr) return null_argument("et_tensor_import_fence", "tensor");
    if (fence == nullptr) return null_argument("et_tensor_import_fence", "fence");
    ET_TRY_ASSIGN(auto a, read_access("et_tensor_import_fence", access));
    return sync::import_fence(tensor->tensor, *fence->fence, a);
  });
}

}  // extern "C"
