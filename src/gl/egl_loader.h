// SPDX-License-Identifier: Apache-2.0
// Run-time loader of EGL and the GLES 3 entry points the library uses (module et_gl).
//
// libEGL is opened with dlopen (never closed: EGL implementations register atexit handlers and
// thread-local state that must outlive every use) and every GL function comes from eglGetProcAddress.
// The Khronos headers are included with their prototypes switched off, so no translation unit can
// name an EGL or GL symbol directly: the library keeps no link-time EGL/GL dependency.
#pragma once

#ifndef EGL_EGL_PROTOTYPES
#define EGL_EGL_PROTOTYPES 0
#endif
#ifndef GL_GLES_PROTOTYPES
#define GL_GLES_PROTOTYPES 0
#endif
#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GLES3/gl3.h>

#include <edgetensor/error.h>

#include <string>
#include <string_view>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

/// The default soname: libglvnd's and Mesa's EGL both install it; the unversioned libEGL.so is a
/// development symlink that runtime-only systems do not have.
inline constexpr const char* kDefaultEglLibrary = "libEGL.so.1";

/// EGL entry points. The core EGL 1.4 functions the library calls are required (only those: a
/// required function that is never called would make loading fail for nothing); the extension ones
/// may be null.
struct EglApi {
  std::string library;  // what was passed to dlopen
  PFNEGLGETPROCADDRESSPROC GetProcAddress = nullptr;
  PFNEGLGETERRORPROC GetError = nullptr;
  PFNEGLQUERYSTRINGPROC QueryString = nullptr;
  PFNEGLINITIALIZEPROC Initialize = nullptr;
  PFNEGLBINDAPIPROC BindAPI = nullptr;
  PFNEGLCHOOSECONFIGPROC ChooseConfig = nullptr;
  PFNEGLCREATECONTEXTPROC CreateContext = nullptr;
  PFNEGLDESTROYCONTEXTPROC DestroyContext = nullptr;
  PFNEGLMAKECURRENTPROC MakeCurrent = nullptr;
  PFNEGLRELEASETHREADPROC ReleaseThread = nullptr;
  PFNEGLCREATEPBUFFERSURFACEPROC CreatePbufferSurface = nullptr;
  PFNEGLDESTROYSURFACEPROC DestroySurface = nullptr;
  // Extensions (null when the implementation lacks them).
  PFNEGLGETPLATFORMDISPLAYEXTPROC GetPlatformDisplayEXT = nullptr;  // EGL_EXT_platform_base
  PFNEGLQUERYDEVICESEXTPROC QueryDevicesEXT = nullptr;              // EGL_EXT_device_enumeration
  PFNEGLQUERYDEVICESTRINGEXTPROC QueryDeviceStringEXT = nullptr;    // EGL_EXT_device_query
  /// eglQueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS) (EGL_EXT_client_extensions); empty when absent.
  std::string client_extensions;
};

/// GLES 3.0 entry points the library calls (all required).
struct GlApi {
  PFNGLGETSTRINGPROC GetString = nullptr;
  PFNGLGETERRORPROC GetError = nullptr;
  PFNGLGENBUFFERSPROC GenBuffers = nullptr;
  PFNGLDELETEBUFFERSPROC DeleteBuffers = nullptr;
  PFNGLBINDBUFFERPROC BindBuffer = nullptr;
  PFNGLBUFFERDATAPROC BufferData = nullptr;
  PFNGLBUFFERSUBDATAPROC BufferSubData = nullptr;
  PFNGLMAPBUFFERRANGEPROC MapBufferRange = nullptr;
  PFNGLUNMAPBUFFERPROC UnmapBuffer = nullptr;
};

/// Loads `library` (kDefaultEglLibrary when empty) once per name, thread-safe; the table lives for
/// the process. Errors: Unavailable "GL unavailable: dlopen(...)" or naming the missing symbol.
Result<const EglApi*> load_egl(const std::string& library);

/// Resolves the GL table through eglGetProcAddress (EGL 1.5 / EGL_KHR_get_all_proc_addresses let it
/// return core functions). Errors: Unavailable naming the missing function.
Result<GlApi> load_gl(const EglApi& egl);

/// True when the space-separated `extensions` list contains `name` as a whole word.
bool has_extension(std::string_view extensions, std::string_view name) noexcept;

/// "EGL_BAD_ALLOC (0x3003)"; "EGL error 0x...." for unknown values.
std::string egl_error_name(EGLint error);
/// "GL_OUT_OF_MEMORY (0x0505)"; "GL error 0x...." for unknown values.
std::string gl_error_name(GLenum error);

/// glMapBufferRange access bits for a CPU map mode: Read -> MAP_READ, Write -> MAP_WRITE,
/// ReadWrite -> both. Never INVALIDATE: a map of a view must keep the bytes outside the view.
GLbitfield map_access_bits(unsigned map_mode) noexcept;

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
