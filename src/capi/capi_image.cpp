// SPDX-License-Identifier: Apache-2.0
// Images: pixel formats and their codes, image allocation, layouts, plane views.
#include "capi/capi_support.h"

#include <string>

using namespace edgetensor;
using namespace edgetensor::capi;

namespace {

Result<std::string_view> read_name(std::string_view function, const char* name) {
  if (name == nullptr) return null_argument(function, "name");
  return std::string_view(name);
}

// A format lookup: `out` gets the C value of `convert`'s format.
template <class F>
Result<void> format_from(std::string_view function, int32_t* out, F convert) {
  if (out == nullptr) return null_argument(function, "out_format");
  ET_TRY_ASSIGN(PixelFormat f, convert());
  *out = static_cast<int32_t>(f);
  return {};
}

}  // namespace

Result<PixelFormat> edgetensor::capi::read_pixel_format(std::string_view function, int32_t format) {
  if (format <= 0 || format >= kPixelFormatCount)
    return fail(ErrorCode::InvalidArgument, std::string(function) + ": format " + std::to_string(format) +
                                                " is not an ET_PIXEL_FORMAT_* value (1 to " +
                                                std::to_string(kPixelFormatCount - 1) + ")");
  return static_cast<PixelFormat>(format);
}

Result<ImageAlignment> edgetensor::capi::image_alignment(const et_image_options* user) {
  ET_TRY_ASSIGN(auto io, read_options(user, ET_IMAGE_OPTIONS_SIZE_VER0, "et_image_options"));
  if (io.reserved != 0)
    return fail(ErrorCode::InvalidArgument, "et_image_options.reserved is " + std::to_string(io.reserved) + ", not 0");
  ImageAlignment alignment;
  alignment.row_bytes = io.row_alignment_bytes == 0 ? 1 : io.row_alignment_bytes;
  alignment.height = io.height_alignment == 0 ? 1 : io.height_alignment;
  return alignment;
}

Result<ImageLayout> edgetensor::capi::read_image_layout(std::string_view function, const et_image_layout* layout) {
  if (layout == nullptr) return null_argument(function, "layout");
  ET_TRY_ASSIGN(auto c, read_options(layout, ET_IMAGE_LAYOUT_SIZE_VER0, "et_image_layout"));
  ImageLayout l;
  ET_TRY_ASSIGN(l.format, read_pixel_format(function, c.format));
  l.width = c.width;
  l.height = c.height;
  l.modifier = c.modifier;
  for (std::size_t i = 0; i < l.plane_count(); ++i) {
    ET_TRY_ASSIGN(l.planes[i].offset_bytes, to_size(c.planes[i].offset_bytes, "et_image_layout.planes[].offset_bytes"));
    ET_TRY_ASSIGN(l.planes[i].row_stride_bytes,
                  to_size(c.planes[i].row_stride_bytes, "et_image_layout.planes[].row_stride_bytes"));
  }
  return l;
}

Result<void> edgetensor::capi::write_image_layout(et_image_layout* user, const ImageLayout& l) {
  et_image_layout v{};
  v.struct_size = sizeof v;
  v.format = static_cast<int32_t>(l.format);
  v.width = l.width;
  v.height = l.height;
  v.plane_count = static_cast<uint32_t>(l.plane_count());
  v.modifier = l.modifier;
  for (std::size_t i = 0; i < l.plane_count(); ++i) v.planes[i] = {l.planes[i].offset_bytes, l.planes[i].row_stride_bytes};
  return write_output(user, v, ET_IMAGE_LAYOUT_SIZE_VER0, "et_image_layout");
}

extern "C" {

const char* et_pixel_format_name(int32_t format) {
  if (format < 0 || format >= kPixelFormatCount) return "invalid";
  return pixel_format_name(static_cast<PixelFormat>(format)).data();  // views of string literals
}

et_status et_pixel_format_from_name(const char* name, int32_t* out_format) {
  return guarded([&]() -> Result<void> {
    ET_TRY_ASSIGN(auto n, read_name("et_pixel_format_from_name", name));
    return format_from("et_pixel_format_from_name", out_format, [&] { return pixel_format_from_name(n); });
  });
}

et_status et_pixel_format_from_v4l2(uint32_t v4l2_fourcc, int32_t* out_format, uint32_t* out_multiplanar) {
  return guarded([&]() -> Result<void> {
    if (out_format == nullptr) return null_argument("et_pixel_format_from_v4l2", "out_format");
    if (out_multiplanar == nullptr) return null_argument("et_pixel_format_from_v4l2", "out_multiplanar");
    ET_TRY_ASSIGN(auto v, pixel_format_from_v4l2(v4l2_fourcc));
    *out_format = static_cast<int32_t>(v.format);
    *out_multiplanar = v.multiplanar ? 1 : 0;
    return {};
  });
}

et_status et_pixel_format_from_drm(uint32_t drm_fourcc, int32_t* out_format) {
  return guarded([&] {
    return format_from("et_pixel_format_from_drm", out_format, [&] { return pixel_format_from_drm(drm_fourcc); });
  });
}

et_status et_pixel_format_from_gst(const char* gst_name, int32_t* out_format) {
  return guarded([&]() -> Result<void> {
    ET_TRY_ASSIGN(auto n, read_name("et_pixel_format_from_gst", gst_name));
    return format_from("et_pixel_format_from_gst", out_format, [&] { return pixel_format_from_gst(n); });
  });
}

et_status et_pixel_format_to_v4l2(int32_t format, uint32_t multiplanar, uint32_t* out_fourcc) {
  return guarded([&]() -> Result<void> {
    if (out_fourcc == nullptr) return null_argument("et_pixel_format_to_v4l2", "out_fourcc");
    ET_TRY_ASSIGN(auto f, read_pixel_format("et_pixel_format_to_v4l2", format));
    if (multiplanar > 1)
      return fail(ErrorCode::InvalidArgument, "et_pixel_format_to_v4l2: multiplanar " + std::to_string(multiplanar) +
                                                  " is not 0 or 1");
    ET_TRY_ASSIGN(*out_fourcc, pixel_format_to_v4l2(f, multiplanar == 1));
    return {};
  });
}

et_status et_pixel_format_to_drm(int32_t format, uint32_t* out_fourcc) {
  return guarded([&]() -> Result<void> {
    if (out_fourcc == nullptr) return null_argument("et_pixel_format_to_drm", "out_fourcc");
    ET_TRY_ASSIGN(auto f, read_pixel_format("et_pixel_format_to_drm", format));
    ET_TRY_ASSIGN(*out_fourcc, pixel_format_to_drm(f));
    return {};
  });
}

et_status et_pixel_format_to_gst(int32_t format, const char** out_name) {
  return guarded([&]() -> Result<void> {
    if (out_name == nullptr) return null_argument("et_pixel_format_to_gst", "out_name");
    ET_TRY_ASSIGN(auto f, read_pixel_format("et_pixel_format_to_gst", format));
    ET_TRY_ASSIGN(auto name, pixel_format_to_gst(f));
    *out_name = name.data();  // a view of a string literal in the format table
    return {};
  });
}

et_status et_tensor_allocate_image(uint32_t width, uint32_t height, int32_t format, const et_image_options* image_options,
                                   const et_allocate_options* options, et_tensor** out) {
  return guarded([&]() -> Result<void> {
    constexpr const char* kFn = "et_tensor_allocate_image";
    if (out == nullptr) return null_argument(kFn, "out");
    *out = nullptr;
    ET_TRY_ASSIGN(auto f, read_pixel_format(kFn, format));
    ET_TRY_ASSIGN(auto alignment, image_alignment(image_options));
    AllocateOptions o;
    ET_TRY(allocate_options(options, o));
    ET_TRY_ASSIGN(auto t, TensorDyn::allocate_image(width, height, f, alignment, o));
    give_tensor(std::move(t), out);
    return {};
  });
}

et_status et_tensor_get_image_layout(const et_tensor* tensor, et_image_layout* layout) {
  return guarded([&]() -> Result<void> {
    constexpr const char* kFn = "et_tensor_get_image_layout";
    if (tensor == nullptr) return null_argument(kFn, "tensor");
    if (layout == nullptr) return null_argument(kFn, "layout");
    const ImageLayout* l = tensor->tensor.image_layout();
    if (l == nullptr)
      return fail(ErrorCode::FailedPrecondition,
                  std::string(kFn) + ": the tensor holds no whole image (none attached, or a view dropped it)");
    return write_image_layout(layout, *l);
  });
}

et_status et_tensor_plane(const et_tensor* tensor, uint32_t index, et_tensor** out) {
  return guarded([&]() -> Result<void> {
    if (out == nullptr) return null_argument("et_tensor_plane", "out");
    *out = nullptr;
    if (tensor == nullptr) return null_argument("et_tensor_plane", "tensor");
    ET_TRY_ASSIGN(auto p, tensor->tensor.plane(index));
    give_tensor(std::move(p), out);
    return {};
  });
}

}  // extern "C"
