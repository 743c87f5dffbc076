// SPDX-License-Identifier: Apache-2.0
// The EGL side of one gl::Context: headless platform and device selection, the display (shared per
// process, initialised once, never terminated), a GLES 3.0 context and, without
// EGL_KHR_surfaceless_context, a 1x1 pbuffer. docs/ARCHITECTURE.md "GL" gives the platform order.
#pragma once

#include <edgetensor/error.h>
#include <edgetensor/gl.h>

#include <memory>
#include <string>
#include <vector>

#include "gl/egl_loader.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

/// One GLES 3.0 context made current on the thread that opened it. Opened, used and closed on that
/// thread (the GL thread); info() may be read from any thread once open() has returned.
class EglSession {
 public:
  /// Loads EGL (ContextOptions::egl_library), tries the platforms and devices in gl::Platform's order
  /// and makes the first GLES 3.0 context that works current on the calling thread. Errors: see
  /// gl::Context::create (every failed attempt is named in the Unavailable message).
  static Result<std::unique_ptr<EglSession>> open(const gl::ContextOptions& options);
  /// Makes no EGL call: close() must have run on the owning thread.
  ~EglSession() = default;
  EglSession(const EglSession&) = delete;
  EglSession& operator=(const EglSession&) = delete;

  /// Destroys the surface and the context and releases the thread's EGL state; the display stays
  /// initialised. Idempotent; owning thread only.
  void close() noexcept;

  const EglApi& egl() const noexcept { return *egl_; }
  /// The GL functions of this context; owning thread only.
  const GlApi& gl() const noexcept { return gl_; }
  const gl::ContextInfo& info() const noexcept { return info_; }

 private:
  EglSession() = default;
  Result<void> select(const gl::ContextOptions& options);
  Result<void> try_display(EGLenum platform, void* native, const std::string& label);
  void destroy_context() noexcept;  // the one teardown of surface and context (failed attempts, close)

  const EglApi* egl_ = nullptr;
  GlApi gl_;
  gl::ContextInfo info_;
  EGLDisplay display_ = EGL_NO_DISPLAY;
  EGLContext context_ = EGL_NO_CONTEXT;
  EGLSurface surface_ = EGL_NO_SURFACE;
};

/// Order in which Auto tries EGL devices: hardware first, then software, each in enumeration order.
/// `software[i]` says whether device i has EGL_MESA_device_software. Pure; unit-tested.
std::vector<int> device_try_order(const std::vector<bool>& software);

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
