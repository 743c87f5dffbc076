// SPDX-License-Identifier: Apache-2.0
// GL contexts (C++ gl::Context); PBO tensors are allocated through et_allocate_options.gl_context.
#include "capi/capi_support.h"

#include <string>

using namespace edgetensor;
using namespace edgetensor::capi;

namespace {

// The C++ ContextOptions of a C struct (NULL: defaults). The C fields are checked here, so an error names them;
// what only EGL can answer (the device count) is C++'s.
Result<gl::ContextOptions> context_options(const et_gl_context_options* user) {
  ET_TRY_ASSIGN(auto c, read_options(user, ET_GL_CONTEXT_OPTIONS_SIZE_VER0, "et_gl_context_options"));
  gl::ContextOptions o;
  if (c.platform < ET_GL_PLATFORM_AUTO || c.platform > ET_GL_PLATFORM_SURFACELESS)
    return fail(ErrorCode::InvalidArgument, "et_gl_context_options.platform " + std::to_string(c.platform) +
                                                " is not an ET_GL_PLATFORM_* value (0 to 2)");
  o.platform = static_cast<gl::Platform>(c.platform);
  if (c.use_device_index > 1)
    return fail(ErrorCode::InvalidArgument,
                "et_gl_context_options.use_device_index " + std::to_string(c.use_device_index) + " is not 0 or 1");
  if (c.use_device_index == 1) {
    if (c.device_index < 0)
      return fail(ErrorCode::InvalidArgument,
                  "et_gl_context_options.device_index " + std::to_string(c.device_index) + " is negative");
    if (c.platform == ET_GL_PLATFORM_SURFACELESS)
      return fail(ErrorCode::InvalidArgument, "et_gl_context_options.device_index " + std::to_string(c.device_index) +
                                                  " needs the device platform, not ET_GL_PLATFORM_SURFACELESS");
    o.device_index = c.device_index;
  }
  if (c.use_timeout > 1)
    return fail(ErrorCode::InvalidArgument,
                "et_gl_context_options.use_timeout " + std::to_string(c.use_timeout) + " is not 0 or 1");
  if (c.use_timeout == 1) {
    if (c.timeout_ns <= 0)
      return fail(ErrorCode::InvalidArgument, "et_gl_context_options.timeout_ns " + std::to_string(c.timeout_ns) +
                                                  " must be greater than 0");
    o.timeout = wait_from_ns(c.timeout_ns, o.timeout);
  }
  if (c.reserved != 0)
    return fail(ErrorCode::InvalidArgument,
                "et_gl_context_options.reserved is " + std::to_string(c.reserved) + ", not zero");
  if (c.egl_library != nullptr) o.egl_library = c.egl_library;
  return o;
}

}  // namespace

extern "C" {

const char* et_gl_platform_name(int32_t platform) {
  if (platform < ET_GL_PLATFORM_AUTO || platform > ET_GL_PLATFORM_SURFACELESS) return "unknown";
  return gl::platform_name(static_cast<gl::Platform>(platform)).data();  // literals: NUL-terminated
}

et_status et_gl_context_create(const et_gl_context_options* options, et_gl_context** out) {
  return guarded([&]() -> Result<void> {
    if (out == nullptr) return null_argument("et_gl_context_create", "out");
    *out = nullptr;
    ET_TRY_ASSIGN(auto o, context_options(options));
    ET_TRY_ASSIGN(auto context, gl::Context::create(o));
    *out = new et_gl_context{.context = std::move(context)};
    return {};
  });
}

et_gl_context* et_gl_context_retain(et_gl_context* context) { return retain_handle(context); }
// The last release joins the GL thread (C++ ~Context): errno kept across EGL's teardown.
void et_gl_context_release(et_gl_context* context) { release_handle_keep_errno(context); }

et_status et_gl_context_get_info(const et_gl_context* context, et_gl_context_info* info) {
  return guarded([&]() -> Result<void> {
    if (context == nullptr) return null_argument("et_gl_context_get_info", "context");
    if (info == nullptr) return null_argument("et_gl_context_get_info", "info");
    const gl::Context& c = *context->context;
    const gl::ContextInfo& i = c.info();  // lives as long as the context: its strings are handed out
    et_gl_context_info v{};
    v.struct_size = sizeof v;
    v.platform = static_cast<int32_t>(i.platform);
    v.device_index = i.device_index;
    v.device_count = i.device_count;
    v.timeout_ns = static_cast<int64_t>(c.timeout().count()) * 1000000;
    v.live_buffer_count = c.live_buffer_count();
    v.platform_detail = i.platform_detail.c_str();
    v.device_file = i.device_file.c_str();
    v.egl_library = i.egl_library.c_str();
    v.egl_vendor = i.egl_vendor.c_str();
    v.egl_version = i.egl_version.c_str();
    v.vendor = i.vendor.c_str();
    v.renderer = i.renderer.c_str();
    v.version = i.version.c_str();
    return write_output(info, v, ET_GL_CONTEXT_INFO_SIZE_VER0, "et_gl_context_info");
  });
}

}  // extern "C"
