// SPDX-License-Identifier: Apache-2.0
#include "gl/egl_loader.h"

#include <dlfcn.h>

#include <map>
#include <memory>
#include <mutex>

#include "text/format.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {
namespace {

template <class Fn>
bool resolve(void* handle, const char* name, Fn& out) {
  out = reinterpret_cast<Fn>(::dlsym(handle, name));
  return out != nullptr;
}

template <class Fn>
void resolve_ext(const EglApi& egl, const char* name, Fn& out) {
  out = reinterpret_cast<Fn>(egl.GetProcAddress(name));
}

Result<std::unique_ptr<EglApi>> open_egl(const std::string& library) {
  ::dlerror();
  // RTLD_LOCAL: EGL's symbols stay out of the global namespace; the handle is never closed.
  void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = ::dlerror();
    return fail(ErrorCode::Unavailable,
                text::format("GL unavailable: dlopen(\"{}\") failed: {}", library, why ? why : "unknown error"));
  }
  auto egl = std::make_unique<EglApi>();
  egl->library = library;
  const char* missing = nullptr;
#define ET_EGL_REQUIRE(field, sym) \
  if (!missing && !resolve(handle, sym, egl->field)) missing = sym
  ET_EGL_REQUIRE(GetProcAddress, "eglGetProcAddress");
  ET_EGL_REQUIRE(GetError, "eglGetError");
  ET_EGL_REQUIRE(QueryString, "eglQueryString");
  ET_EGL_REQUIRE(Initialize, "eglInitialize");
  ET_EGL_REQUIRE(BindAPI, "eglBindAPI");
  ET_EGL_REQUIRE(ChooseConfig, "eglChooseConfig");
  ET_EGL_REQUIRE(CreateContext, "eglCreateContext");
  ET_EGL_REQUIRE(DestroyContext, "eglDestroyContext");
  ET_EGL_REQUIRE(MakeCurrent, "eglMakeCurrent");
  ET_EGL_REQUIRE(ReleaseThread, "eglReleaseThread");
  ET_EGL_REQUIRE(CreatePbufferSurface, "eglCreatePbufferSurface");
  ET_EGL_REQUIRE(DestroySurface, "eglDestroySurface");
#undef ET_EGL_REQUIRE
  if (missing)
    return fail(ErrorCode::Unavailable,
                text::format("GL unavailable: {} has no symbol {} (not an EGL 1.4 library)", library, missing));
  // Client extensions (EGL_EXT_client_extensions): null when unsupported, which also sets an error.
  const char* ext = egl->QueryString(EGL_NO_DISPLAY, EGL_EXTENSIONS);
  if (ext) egl->client_extensions = ext;
  else (void)egl->GetError();
  resolve_ext(*egl, "eglGetPlatformDisplayEXT", egl->GetPlatformDisplayEXT);
  resolve_ext(*egl, "eglQueryDevicesEXT", egl->QueryDevicesEXT);
  resolve_ext(*egl, "eglQueryDeviceStringEXT", egl->QueryDeviceStringEXT);
  return egl;
}

}  // namespace

Result<const EglApi*> load_egl(const std::string& library_in) {
  const std::string library = library_in.empty() ? kDefaultEglLibrary : library_in;
  // One table per name for the life of the process; failures are not cached (a later install works).
  static std::mutex mutex;
  // Leaked on purpose (docs/ARCHITECTURE.md "Threads"): GL threads use it until their last EGL call.
  static auto* tables = new std::map<std::string, std::unique_ptr<EglApi>>();
  std::lock_guard lock(mutex);
  if (auto it = tables->find(library); it != tables->end()) return it->second.get();
  ET_TRY_ASSIGN(auto egl, open_egl(library));
  const EglApi* raw = egl.get();
  tables->emplace(library, std::move(egl));
  return raw;
}

Result<GlApi> load_gl(const EglApi& egl) {
  GlApi gl;
  const char* missing = nullptr;
#define ET_GL_REQUIRE(field, sym)                                                   \
  if (!missing) {                                                                   \
    gl.field = reinterpret_cast<decltype(gl.field)>(egl.GetProcAddress(sym));       \
    if (!gl.field) missing = sym;                                                   \
  }
  ET_GL_REQUIRE(GetString, "glGetString");
  ET_GL_REQUIRE(GetError, "glGetError");
  ET_GL_REQUIRE(GenBuffers, "glGenBuffers");
  ET_GL_REQUIRE(DeleteBuffers, "glDeleteBuffers");
  ET_GL_REQUIRE(BindBuffer, "glBindBuffer");
  ET_GL_REQUIRE(BufferData, "glBufferData");
  ET_GL_REQUIRE(BufferSubData, "glBufferSubData");
  ET_GL_REQUIRE(MapBufferRange, "glMapBufferRange");
  ET_GL_REQUIRE(UnmapBuffer, "glUnmapBuffer");
#undef ET_GL_REQUIRE
  if (missing)
    return fail(ErrorCode::Unavailable,
                text::format("GL unavailable: eglGetProcAddress(\"{}\") returned null ({})", missing, egl.library));
  return gl;
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
