// SPDX-License-Identifier: Apache-2.0
// libet_fake_egl_hang.so: a test double of libEGL whose eglInitialize hangs, as a driver can, until the
// test calls et_fake_egl_release(); it then fails (EGL_FALSE). Loaded through
// gl::ContextOptions::egl_library; it offers only the surfaceless platform. The test reaches the
// controls below with dlopen(RTLD_NOLOAD) + dlsym on the same file.
#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace {
// Atomics and a sleep loop, not a condition variable: the process may exit with a thread still inside
// eglInitialize, and destroying a condition variable that has a waiter blocks forever in glibc.
std::atomic<int> g_entered{0};
std::atomic<int> g_returned{0};
std::atomic<bool> g_released{false};
int g_display = 0;

EGLDisplay get_platform_display(EGLenum, void*, const EGLint*) { return &g_display; }
}  // namespace

extern "C" {
__attribute__((visibility("default"))) void et_fake_egl_release() { g_released.store(true); }
__attribute__((visibility("default"))) void et_fake_egl_hold() { g_released.store(false); }  // hang again
__attribute__((visibility("default"))) int et_fake_egl_initialize_entered() { return g_entered.load(); }
__attribute__((visibility("default"))) int et_fake_egl_initialize_returned() { return g_returned.load(); }

__attribute__((visibility("default"))) __eglMustCastToProperFunctionPointerType eglGetProcAddress(const char* name) {
  if (std::strcmp(name, "eglGetPlatformDisplayEXT") == 0)
    return reinterpret_cast<__eglMustCastToProperFunctionPointerType>(&get_platform_display);
  return nullptr;
}
__attribute__((visibility("default"))) EGLint eglGetError() { return EGL_NOT_INITIALIZED; }
__attribute__((visibility("default"))) const char* eglQueryString(EGLDisplay dpy, EGLint name) {
  if (dpy == EGL_NO_DISPLAY && name == EGL_EXTENSIONS)
    return "EGL_EXT_client_extensions EGL_EXT_platform_base EGL_MESA_platform_surfaceless";
  return nullptr;
}
__attribute__((visibility("default"))) EGLBoolean eglInitialize(EGLDisplay, EGLint*, EGLint*) {
  g_entered.fetch_add(1);
  while (!g_released.load()) ::usleep(1000);
  g_returned.fetch_add(1);
  return EGL_FALSE;
}
// Never reached (initialisation fails); present because the loader requires them.
__attribute__((visibility("default"))) EGLBoolean eglBindAPI(EGLenum) { return EGL_FALSE; }
__attribute__((visibility("default"))) EGLBoolean eglChooseConfig(EGLDisplay, const EGLint*, EGLConfig*, EGLint, EGLint*) {
  return EGL_FALSE;
}
__attribute__((visibility("default"))) EGLContext eglCreateContext(EGLDisplay, EGLConfig, EGLContext, const EGLint*) {
  return EGL_NO_CONTEXT;
}
__attribute__((visibility("default"))) EGLBoolean eglDestroyContext(EGLDisplay, EGLContext) { return EGL_FALSE; }
__attribute__((visibility("default"))) EGLBoolean eglMakeCurrent(EGLDisplay, EGLSurface, EGLSurface, EGLContext) {
  return EGL_FALSE;
}
__attribute__((visibility("default"))) EGLBoolean eglReleaseThread() { return EGL_TRUE; }
__attribute__((visibility("default"))) EGLSurface eglCreatePbufferSurface(EGLDisplay, EGLConfig, const EGLint*) {
  return EGL_NO_SURFACE;
}
__attribute__((visibility("default"))) EGLBoolean eglDestroySurface(EGLDisplay, EGLSurface) { return EGL_FALSE; }
}
