// SPDX-License-Identifier: Apache-2.0
// Frames: images whose planes may lie in separate buffers (C++ Frame).
#include "capi/capi_support.h"

#include <string>
#include <vector>

using namespace edgetensor;
using namespace edgetensor::capi;

namespace {

Result<const Frame*> frame_of(const char* function, const et_frame* frame) {
  if (frame == nullptr) return null_argument(function, "frame");
  return &frame->frame;
}

// et_import_options for every plane's fd: the layout holds the offsets and strides, so those stay zero.
Result<ImportOptions> plane_import_options(const et_import_options* user, std::shared_ptr<ReleaseHook>* release) {
  // rank 1: a strides array, if given, shows as one entry
  ET_TRY_ASSIGN(auto o, import_options(user, 1, release));
  if (o.offset_bytes != 0 || !o.strides_bytes.empty())
    return fail(ErrorCode::InvalidArgument, "et_frame_import_planes_dup: et_import_options.offset_bytes must be 0 and "
                                            "strides_bytes NULL (the layout gives each plane's offset and stride)");
  return o;
}

}  // namespace

extern "C" {

et_status et_frame_from_tensor(const et_tensor* image, et_frame** out) {
  return guarded([&]() -> Result<void> {
    if (out == nullptr) return null_argument("et_frame_from_tensor", "out");
    *out = nullptr;
    if (image == nullptr) return null_argument("et_frame_from_tensor", "image");
    ET_TRY_ASSIGN(auto f, Frame::from_tensor(image->tensor));
    *out = new et_frame{.frame = std::move(f)};
    return {};
  });
}

et_status et_frame_import_planes_dup(const int32_t* borrowed_fds, uint32_t fd_count, const et_image_layout* layout,
                                     const et_import_options* options, et_frame** out) {
  return guarded([&]() -> Result<void> {
    constexpr const char* kFn = "et_frame_import_planes_dup";
    if (out == nullptr) return null_argument(kFn, "out");
    *out = nullptr;
    if (borrowed_fds == nullptr) return null_argument(kFn, "borrowed_fds");
    if (fd_count == 0 || fd_count > kMaxPlanes)
      return fail(ErrorCode::InvalidArgument, std::string(kFn) + ": fd_count " + std::to_string(fd_count) +
                                                  " is outside 1..ET_MAX_PLANES (" + std::to_string(kMaxPlanes) + ")");
    ET_TRY_ASSIGN(auto l, read_image_layout(kFn, layout));
    std::shared_ptr<ReleaseHook> release;
    ET_TRY_ASSIGN(auto o, plane_import_options(options, &release));
    const std::vector<int> fds(borrowed_fds, borrowed_fds + fd_count);
    ET_TRY_ASSIGN(auto f, Frame::import_planes_dup(fds, l, o, release));
    *out = new et_frame{.frame = std::move(f)};
    // Armed only now: a failed import (or allocation of the handle) drops the hook without a call.
    if (release) release->armed.store(true, std::memory_order_release);
    return {};
  });
}

et_frame* et_frame_retain(et_frame* frame) { return retain_handle(frame); }
void et_frame_release(et_frame* frame) { release_handle_keep_errno(frame); }

et_status et_frame_get_layout(const et_frame* frame, et_image_layout* layout) {
  return guarded([&]() -> Result<void> {
    ET_TRY_ASSIGN(const Frame* f, frame_of("et_frame_get_layout", frame));
    if (layout == nullptr) return null_argument("et_frame_get_layout", "layout");
    return write_image_layout(layout, f->layout());
  });
}

et_status et_frame_get_buffers(const et_frame* frame, uint32_t* out_count, uint32_t* out_plane_buffers) {
  return guarded([&]() -> Result<void> {
    ET_TRY_ASSIGN(const Frame* f, frame_of("et_frame_get_buffers", frame));
    if (out_count == nullptr) return null_argument("et_frame_get_buffers", "out_count");
    if (out_plane_buffers == nullptr) return null_argument("et_frame_get_buffers", "out_plane_buffers");
    *out_count = static_cast<uint32_t>(f->buffer_count());
    for (std::size_t i = 0; i < kMaxPlanes; ++i)
      out_plane_buffers[i] = i < f->plane_count() ? static_cast<uint32_t>(f->plane_buffer(i)) : 0;
    return {};
  });
}

et_status et_frame_buffer(const et_frame* frame, uint32_t index, et_tensor** out) {
  return guarded([&]() -> Result<void> {
    if (out == nullptr) return null_argument("et_frame_buffer", "out");
    *out = nullptr;
    ET_TRY_ASSIGN(const Frame* f, frame_of("et_frame_buffer", frame));
    ET_TRY_ASSIGN(auto t, f->buffer(index));
    give_tensor(std::move(t), out);
    return {};
  });
}

et_status et_frame_plane(const et_frame* frame, uint32_t index, et_tensor** out) {
  return guarded([&]() -> Result<void> {
    if (out == nullptr) return null_argument("et_frame_plane", "out");
    *out = nullptr;
    ET_TRY_ASSIGN(const Frame* f, frame_of("et_frame_plane", frame));
    ET_TRY_ASSIGN(auto t, f->plane(index));
    give_tensor(std::move(t), out);
    return {};
  });
}

}  // extern "C"
