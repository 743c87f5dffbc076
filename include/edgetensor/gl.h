// SPDX-License-Identifier: Apache-2.0
// OpenGL ES interop: a headless EGL context on its own worker thread, and PBO-backed tensors.
//
// A gl::Context owns one EGL display connection and one OpenGL ES 3.0 context, current on a dedicated
// worker thread for the context's whole life; every GL call the library makes runs there. Other
// threads post work and wait for it (with a timeout); work posted from the GL thread itself runs
// inline. EGL is loaded at run time (dlopen of libEGL.so.1, GL entry points from eglGetProcAddress),
// so a process without any GL library can load edgetensor and use its other backends.
//
// Headless only: the EGL device platform (EGL_EXT_platform_device) or Mesa's surfaceless platform
// (EGL_MESA_platform_surfaceless); never EGL_DEFAULT_DISPLAY, so DISPLAY / WAYLAND_DISPLAY play no part.
//
// PBO tensors: TensorDyn::allocate(shape, dtype, {.memory = MemoryKind::GlPbo, .gl_context = ctx}).
// Contents start as zeros. A CPU map runs glMapBufferRange on the GL thread (access bits from the map
// direction, the whole buffer) and its close runs glUnmapBuffer; one CPU map at a time (a second gets
// Busy "already mapped"). When the last holder of the storage goes, glDeleteBuffers runs on the GL
// thread. A PBO is not shareable by fd (export_fd: Unsupported).
//
// Lifetime: tensors do not keep their Context alive. When the last std::shared_ptr<Context> goes, the
// context shuts down: every unmapped PBO is deleted and becomes disconnected (maps and with_buffer fail
// with FailedPrecondition "GL context gone"; releasing it is a no-op). A PBO that is CPU-mapped at
// that moment stays valid until its map closes (the worker thread keeps the EGL context alive for it,
// deletes the buffer at the unmap, then terminates; the last PBO tensor's release joins it), so no
// open span ever dangles.
//
// Threads: each context's worker thread is joined by whoever drops the last handle of the context (or
// of its last PBO tensor); nothing waits at exit. Do not drop that last handle in code running on the
// GL thread: the thread cannot join itself, and is joined later (next Context::create, or at exit).
//
// fork(): the child has no worker thread. Every GL operation in the child (run, maps, allocation)
// fails fast with FailedPrecondition; contexts and PBO tensors inherited from the parent may be
// dropped in the child (their GL objects are left to the parent).
#pragma once

#include <edgetensor/error.h>
#include <edgetensor/export.h>
#include <edgetensor/tensor.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {

namespace detail {
class GlWorker;
struct GlContextAccess;
}  // namespace detail

namespace gl {

/// Which headless EGL platform to use.
enum class Platform : std::uint8_t {
  /// The device platform if EGL offers it and one of its devices gives a GLES 3 context (hardware
  /// devices, i.e. those without EGL_MESA_device_software, before software ones, each group in
  /// eglQueryDevicesEXT order), else Mesa's surfaceless platform.
  Auto = 0,
  /// EGL_EXT_platform_device only (with ContextOptions::device_index, exactly that device).
  Device = 1,
  /// EGL_MESA_platform_surfaceless only.
  Surfaceless = 2,
};

/// "auto", "device", "surfaceless".
ET_API std::string_view platform_name(Platform platform) noexcept;

struct ContextOptions {
  Platform platform = Platform::Auto;
  /// Device platform: the index in eglQueryDevicesEXT order; -1 = the Auto order above. A value >= 0
  /// implies the device platform (Surfaceless with an index is InvalidArgument).
  int device_index = -1;
  /// Default limit for each wait on the GL thread (maps, allocation, release waits, run() without a
  /// timeout), and for context creation. Must be > 0.
  std::chrono::milliseconds timeout{10000};
  /// The EGL library to dlopen: a soname or a path, without a NUL byte. Empty = "libEGL.so.1".
  std::string egl_library;
};

/// What the context runs on. Strings are as EGL/GL report them.
struct ContextInfo {
  Platform platform = Platform::Auto;  ///< Device or Surfaceless (never Auto once created).
  /// e.g. "EGL_EXT_platform_device, device 0 of 2 (software)" or "EGL_MESA_platform_surfaceless".
  std::string platform_detail;
  int device_index = -1;  ///< Index in eglQueryDevicesEXT order; -1 for surfaceless.
  int device_count = 0;   ///< Devices EGL reported (0 when the device platform is absent).
  std::string device_file;  ///< EGL_DRM_DEVICE_FILE_EXT of the device, when EGL reports one.
  std::string egl_library;  ///< The library that was dlopen'ed.
  std::string egl_vendor;   ///< EGL_VENDOR
  std::string egl_version;  ///< EGL_VERSION
  std::string vendor;       ///< GL_VENDOR, e.g. "Mesa"
  std::string renderer;     ///< GL_RENDERER, e.g. "llvmpipe (LLVM 15.0.6, 256 bits)"
  std::string version;      ///< GL_VERSION, e.g. "OpenGL ES 3.2 Mesa 22.3.6"
};

/// A PBO as user GL code sees it inside with_buffer().
struct GlBuffer {
  std::uint32_t name = 0;         ///< The GL buffer object name (GLuint), valid on the GL thread only.
  std::size_t buffer_bytes = 0;   ///< Size of the whole buffer object.
  std::size_t offset_bytes = 0;   ///< Offset of the tensor's first element inside the buffer.
  std::size_t extent_bytes = 0;   ///< Bytes from that element to one past the tensor's last one.
};

/// One headless EGL display + GLES 3 context on a dedicated worker thread. Create with create(); share
/// with std::shared_ptr. All members are thread-safe.
class ET_API Context {
 public:
  /// Starts the worker thread, loads EGL, picks the platform/device (see Platform) and makes a GLES 3.0
  /// context current on that thread. Errors: Unavailable "GL unavailable: <reason>" (no libEGL, no
  /// headless platform, no device gives a GLES 3 context; each attempt's EGL error is named),
  /// OutOfRange (device_index >= the number of devices, both named), InvalidArgument (bad options),
  /// Busy (the worker did not finish initialising within `timeout`; it cleans up on its own).
  /// A forked child may try to create its own context; whether the EGL implementation allows that
  /// after its parent used EGL is up to the implementation (not tested).
  [[nodiscard]] static Result<std::shared_ptr<Context>> create(const ContextOptions& options = {});

  /// Shuts the context down (see the header comment). Blocks until the worker thread has deleted every
  /// unmapped PBO and terminated EGL, at most `timeout`; never throws.
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const ContextInfo& info() const noexcept;
  std::chrono::milliseconds timeout() const noexcept;
  /// True on this context's worker thread.
  bool on_gl_thread() const noexcept;

  /// Runs `fn` on the GL thread with the context current and waits for it (inline when called on the
  /// GL thread). `fn` may make any GL call; it must leave no buffer bound that it did not bind, must
  /// not block on other threads that wait for this GL thread, and its exceptions become Internal
  /// errors. Returns fn's error, or: Busy when the GL thread did not start `fn` within `timeout` (fn
  /// is then cancelled and never runs) or started but did not finish it (run() returns; fn still
  /// completes later on the GL thread, so whatever it captures by reference must outlive it: capture
  /// by value when using short timeouts); FailedPrecondition "GL context gone" / after fork(). The
  /// callable is destroyed on the calling thread before run() returns, unless abandoned by a timeout.
  [[nodiscard]] Result<void> run(std::function<Result<void>()> fn) const;
  [[nodiscard]] Result<void> run(std::function<Result<void>()> fn, std::chrono::milliseconds timeout) const;

  /// Like run() for a callable that returns void.
  template <class F, std::enable_if_t<std::is_void_v<std::invoke_result_t<F&>>, int> = 0>
  [[nodiscard]] Result<void> run_void(F fn) const {
    return run([f = std::move(fn)]() mutable -> Result<void> {
      f();
      return {};
    });
  }

  /// eglGetProcAddress(name): a GL or EGL entry point for use on the GL thread (null when unknown).
  void* proc_address(const char* name) const noexcept;

  /// GL buffer objects this context has created and not yet deleted (PBO tensors alive).
  std::size_t live_buffer_count() const noexcept;


 private:
  friend struct detail::GlContextAccess;
  explicit Context(std::shared_ptr<detail::GlWorker> worker) noexcept;
  std::shared_ptr<detail::GlWorker> worker_;
};

/// Runs `fn` on the tensor's GL thread with the tensor's buffer object, e.g. to glReadPixels into it
/// (bind it to GL_PIXEL_PACK_BUFFER) or to source a texture from it. The same wait, timeout and
/// capture rules as Context::run. Errors: InvalidArgument (the tensor is not a GL PBO tensor, or has
/// no buffer), Busy (the buffer is CPU-mapped: GLES forbids using a mapped buffer; or a timeout),
/// FailedPrecondition "GL context gone" (disconnected) / after fork(), fn's own error.
[[nodiscard]] ET_API Result<void> with_buffer(const TensorDyn& tensor,
                                              std::function<Result<void>(const GlBuffer&)> fn);
[[nodiscard]] ET_API Result<void> with_buffer(const TensorDyn& tensor,
                                              std::function<Result<void>(const GlBuffer&)> fn,
                                              std::chrono::milliseconds timeout);

}  // namespace gl
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
