// SPDX-License-Identifier: Apache-2.0
#include "gl/egl_display.h"

#include <mutex>

#include "text/format.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {
namespace {

// EGLDisplays are per-process singletons per (platform, native display): two contexts on the same
// device share one. We initialise each display once and never call eglTerminate: Mesa's eglTerminate
// dlcloses the DRI driver, and when that happens on a worker thread while the process exits, exit
// handlers the driver registered run from unmapped code (a SIGSEGV seen here in about 1 of 40 runs).
// The driver stays loaded for the life of the process, as with most long-lived EGL users; a later
// context reuses the initialised display (EGL 1.5 section 3.2: initialising it again is a no-op).
Result<void> initialise_display(const EglApi& egl, EGLDisplay dpy, EGLint* major, EGLint* minor) {
  // One initialisation at a time in the process: it runs once per context creation, so the lock
  // costs nothing, and no driver ever sees two first initialisations of one display race.
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  if (egl.Initialize(dpy, major, minor) != EGL_TRUE)
    return fail(ErrorCode::Unavailable, text::format("eglInitialize failed: {}", egl_error_name(egl.GetError())));
  return {};
}

struct DeviceCandidate {
  int index;
  EGLDeviceEXT device;
  bool software;
  std::string file;
};

}  // namespace

std::vector<int> device_try_order(const std::vector<bool>& software) {
  std::vector<int> order;
  for (int pass = 0; pass < 2; ++pass)
    for (std::size_t i = 0; i < software.size(); ++i)
      if (software[i] == (pass == 1)) order.push_back(static_cast<int>(i));
  return order;
}

Result<std::unique_ptr<EglSession>> EglSession::open(const gl::ContextOptions& options) {
  std::unique_ptr<EglSession> session(new EglSession());
  if (auto r = session->select(options); !r) {
    session->close();
    return fail(r.error());
  }
  return session;
}

void EglSession::close() noexcept {
  if (!egl_) return;
  destroy_context();
  egl_->ReleaseThread();
}

void EglSession::destroy_context() noexcept {
  if (display_ == EGL_NO_DISPLAY) return;
  const EglApi& egl = *egl_;
  egl.MakeCurrent(display_, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
  if (surface_ != EGL_NO_SURFACE) egl.DestroySurface(display_, surface_);
  if (context_ != EGL_NO_CONTEXT) egl.DestroyContext(display_, context_);
  surface_ = EGL_NO_SURFACE;
  context_ = EGL_NO_CONTEXT;
  display_ = EGL_NO_DISPLAY;  // stays initialised (see initialise_display)
}

Result<void> EglSession::try_display(EGLenum platform, void* native, const std::string& label) {
  const EglApi& egl = *egl_;
  EGLDisplay dpy = egl.GetPlatformDisplayEXT(platform, native, nullptr);
  if (dpy == EGL_NO_DISPLAY)
    return fail(ErrorCode::Unavailable, text::format("{}: eglGetPlatformDisplayEXT failed: {}", label,
                                                    egl_error_name(egl.GetError())));
  EGLint major = 0, minor = 0;
  if (auto r = initialise_display(egl, dpy, &major, &minor); !r)
    return fail(ErrorCode::Unavailable, text::format("{}: {}", label, r.error().message()));
  display_ = dpy;
  auto undo = [&](std::string what) {
    destroy_context();
    return fail(ErrorCode::Unavailable, text::format("{}: {}", label, what));
  };
  if (egl.BindAPI(EGL_OPENGL_ES_API) != EGL_TRUE)
    return undo(text::format("eglBindAPI(EGL_OPENGL_ES_API) failed: {}", egl_error_name(egl.GetError())));
  const char* dext = egl.QueryString(dpy, EGL_EXTENSIONS);
  const std::string display_ext = dext ? dext : "";
  const bool surfaceless = has_extension(display_ext, "EGL_KHR_surfaceless_context");
  // Without EGL_KHR_surfaceless_context a 1x1 pbuffer stands in, so the config must support pbuffers.
  EGLint surface_type = surfaceless ? 0 : EGL_PBUFFER_BIT;
  const EGLint config_attribs[] = {EGL_RENDERABLE_TYPE, EGL_OPENGL_ES3_BIT, EGL_SURFACE_TYPE, surface_type, EGL_NONE};
  EGLConfig config = nullptr;
  EGLint configs = 0;
  if (egl.ChooseConfig(dpy, config_attribs, &config, 1, &configs) != EGL_TRUE || configs < 1)
    return undo(text::format("no EGL config with EGL_OPENGL_ES3_BIT ({})", egl_error_name(egl.GetError())));
  const EGLint context_attribs[] = {EGL_CONTEXT_MAJOR_VERSION, 3, EGL_CONTEXT_MINOR_VERSION, 0, EGL_NONE};
  context_ = egl.CreateContext(dpy, config, EGL_NO_CONTEXT, context_attribs);
  if (context_ == EGL_NO_CONTEXT)
    return undo(text::format("eglCreateContext(GLES 3.0) failed: {}", egl_error_name(egl.GetError())));
  if (!surfaceless) {
    const EGLint pbuffer_attribs[] = {EGL_WIDTH, 1, EGL_HEIGHT, 1, EGL_NONE};
    surface_ = egl.CreatePbufferSurface(dpy, config, pbuffer_attribs);
    if (surface_ == EGL_NO_SURFACE)
      return undo(text::format("eglCreatePbufferSurface(1x1) failed: {}", egl_error_name(egl.GetError())));
  }
  if (egl.MakeCurrent(dpy, surface_, surface_, context_) != EGL_TRUE)
    return undo(text::format("eglMakeCurrent failed: {}", egl_error_name(egl.GetError())));
  auto gl = load_gl(egl);
  if (!gl) return undo(gl.error().message());
  gl_ = *gl;
  auto str = [&](GLenum name) {
    const GLubyte* s = gl_.GetString(name);
    return s ? std::string(reinterpret_cast<const char*>(s)) : std::string();
  };
  info_.vendor = str(GL_VENDOR);
  info_.renderer = str(GL_RENDERER);
  info_.version = str(GL_VERSION);
  if (info_.version.rfind("OpenGL ES 3", 0) != 0)
    return undo(text::format("GL_VERSION is \"{}\", not OpenGL ES 3.x", info_.version));
  const char* vendor = egl.QueryString(dpy, EGL_VENDOR);
  const char* version = egl.QueryString(dpy, EGL_VERSION);
  info_.egl_vendor = vendor ? vendor : "";
  info_.egl_version = version ? version : "";
  return {};
}

Result<void> EglSession::select(const gl::ContextOptions& options) {
  ET_TRY_ASSIGN(egl_, load_egl(options.egl_library));
  const EglApi& egl = *egl_;
  info_.egl_library = egl.library;
  const std::string& client = egl.client_extensions;
  const bool base = egl.GetPlatformDisplayEXT != nullptr && has_extension(client, "EGL_EXT_platform_base");
  const bool device_platform = base && has_extension(client, "EGL_EXT_platform_device") && egl.QueryDevicesEXT;
  const bool surfaceless_platform = base && has_extension(client, "EGL_MESA_platform_surfaceless");
  const bool want_device = options.platform != gl::Platform::Surfaceless;
  const bool want_surfaceless = options.platform != gl::Platform::Device && options.device_index < 0;
  std::string attempts;  // every failed attempt, for the final error
  auto note = [&](const std::string& why) { attempts += (attempts.empty() ? "" : "; ") + why; };

  if (want_device && !device_platform) {
    note(text::format("{} lacks EGL_EXT_platform_device", egl.library));
  } else if (want_device) {
    EGLint count = 0;
    if (egl.QueryDevicesEXT(0, nullptr, &count) != EGL_TRUE) count = 0;
    std::vector<EGLDeviceEXT> devices(static_cast<std::size_t>(count));
    if (count > 0 && egl.QueryDevicesEXT(count, devices.data(), &count) != EGL_TRUE) count = 0;
    devices.resize(static_cast<std::size_t>(count));
    info_.device_count = count;
    if (options.device_index >= count)
      return fail(ErrorCode::OutOfRange, text::format("gl::Context: device_index {} out of range: EGL reports {} "
                                                     "device(s)", options.device_index, count));
    std::vector<DeviceCandidate> candidates;
    std::vector<bool> software;
    for (int i = 0; i < count; ++i) {
      DeviceCandidate c{i, devices[static_cast<std::size_t>(i)], false, {}};
      const char* ext = egl.QueryDeviceStringEXT ? egl.QueryDeviceStringEXT(c.device, EGL_EXTENSIONS) : nullptr;
      std::string exts = ext ? ext : "";
      c.software = has_extension(exts, "EGL_MESA_device_software");
      if (has_extension(exts, "EGL_EXT_device_drm")) {
        const char* file = egl.QueryDeviceStringEXT(c.device, EGL_DRM_DEVICE_FILE_EXT);
        if (file) c.file = file;
      }
      candidates.push_back(c);
      software.push_back(c.software);
    }
    std::vector<int> order = options.device_index >= 0 ? std::vector<int>{options.device_index}
                                                         : device_try_order(software);
    if (count == 0) note("EGL_EXT_platform_device reports no devices");
    for (int i : order) {
      const DeviceCandidate& c = candidates[static_cast<std::size_t>(i)];
      std::string label = text::format("EGL_EXT_platform_device, device {} of {} ({}{}{})", i, count,
                                      c.software ? "software" : "hardware", c.file.empty() ? "" : ", ", c.file);
      auto r = try_display(EGL_PLATFORM_DEVICE_EXT, c.device, label);
      if (r) {
        info_.platform = gl::Platform::Device;
        info_.platform_detail = label;
        info_.device_index = i;
        info_.device_file = c.file;
        return {};
      }
      note(r.error().message());
    }
  }
  if (want_surfaceless && !surfaceless_platform) {
    note(text::format("{} lacks EGL_MESA_platform_surfaceless", egl.library));
  } else if (want_surfaceless) {
    std::string label = "EGL_MESA_platform_surfaceless";
    // The extension requires EGL_DEFAULT_DISPLAY as the native display: this is the surfaceless
    // platform's only display, not the window-system default display.
    auto r = try_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, label);
    if (r) {
      info_.platform = gl::Platform::Surfaceless;
      info_.platform_detail = label;
      return {};
    }
    note(r.error().message());
  }
  return fail(ErrorCode::Unavailable, text::format("GL unavailable: no headless EGL platform gave a GLES 3 context "
                                                  "(the default display is never used): {}", attempts));
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
