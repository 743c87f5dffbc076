// SPDX-License-Identifier: Apache-2.0
#include "backends/gl_pbo/gl_worker.h"

#include <pthread.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <system_error>

#include "text/format.h"

#include "core/log_internal.h"

namespace edgetensor::inline ET_ABI_NAMESPACE::detail {
namespace {

// The binding point the library uses for its own buffer work; always left bound to 0 afterwards.
// GL_COPY_WRITE_BUFFER is not used by fixed pipeline state (unlike the pixel pack/unpack targets), so
// our work never disturbs a user's glReadPixels or texture upload bindings.
constexpr GLenum kTarget = GL_COPY_WRITE_BUFFER;

std::atomic<unsigned> g_fork_generation{0};
void on_fork_child() { g_fork_generation.fetch_add(1, std::memory_order_relaxed); }
unsigned fork_generation_now() noexcept { return g_fork_generation.load(std::memory_order_relaxed); }

// EGLDisplays are per-process singletons per (platform, native display): two contexts on the same
// device share one. We initialise each display once and never call eglTerminate: Mesa's eglTerminate
// dlcloses the DRI driver, and when that happens on a worker thread while the process exits, exit
// handlers the driver registered run from unmapped code (a SIGSEGV seen here in about 1 of 40 runs).
// The driver stays loaded for the life of the process, as with most long-lived EGL users; a later
// context reuses the initialised display (EGL 1.5 section 3.2: initialising it again is a no-op).
std::mutex g_display_mutex;
std::set<EGLDisplay>& initialised_displays() {
  static auto* displays = new std::set<EGLDisplay>();  // never destroyed (used at exit by late teardowns)
  return *displays;
}

Result<void> acquire_display(const EglApi& egl, EGLDisplay dpy, EGLint* major, EGLint* minor) {
  std::lock_guard lock(g_display_mutex);
  // eglInitialize on an initialised display only reports its version again.
  if (egl.Initialize(dpy, major, minor) != EGL_TRUE)
    return fail(ErrorCode::Unavailable, text::format("eglInitialize failed: {}", egl_error_name(egl.GetError())));
  initialised_displays().insert(dpy);
  return {};
}

void release_display(const EglApi&, EGLDisplay) noexcept {
  // Deliberately empty: see above. Contexts and surfaces are destroyed by the caller.
}

void clear_gl_errors(const GlApi& gl) noexcept {
  // User GL code may leave errors behind; a bounded loop (a lost context can report errors forever).
  for (int i = 0; i < 16 && gl.GetError() != GL_NO_ERROR; ++i) {
  }
}

// Worker threads that have been told to finish (shutdown decided, or creation abandoned) and have not
// yet finished tearing EGL down. Such a thread may be detached (Context dropped on the GL thread, a
// mapped orphan, an abandoned creation); if the process exits meanwhile, EGL's exit handlers would run
// under it. The guard (a static made after EGL's first initialisation, so destroyed before EGL's atexit
// handlers run) waits a bounded time for them. Idle threads of leaked contexts are not counted.
struct ThreadCensus {
  std::mutex mutex;
  std::condition_variable cv;
  int running = 0;
};
ThreadCensus& census() {
  static auto* c = new ThreadCensus();  // never destroyed: late threads may still signal it
  return *c;
}
void census_enter() {
  std::lock_guard lock(census().mutex);
  ++census().running;
}
void census_leave() noexcept {
  {
    std::lock_guard lock(census().mutex);
    --census().running;
  }
  census().cv.notify_all();
}
struct ExitGuard {
  unsigned generation = fork_generation_now();
  ~ExitGuard() {
    if (fork_generation_now() != generation) return;  // a forked child has none of the parent's threads
    std::unique_lock lock(census().mutex);
    census().cv.wait_for(lock, std::chrono::seconds(2), [] { return census().running == 0; });
  }
};
void arm_exit_guard() { static ExitGuard guard; }

ErrorCode code_of_gl_error(GLenum e) { return e == GL_OUT_OF_MEMORY ? ErrorCode::OutOfMemory : ErrorCode::Internal; }

struct DeviceCandidate {
  int index;
  EGLDeviceEXT device;
  bool software;
  std::string file;
};

}  // namespace

unsigned fork_generation() noexcept { return fork_generation_now(); }

std::vector<int> device_try_order(const std::vector<bool>& software) {
  std::vector<int> order;
  for (int pass = 0; pass < 2; ++pass)
    for (std::size_t i = 0; i < software.size(); ++i)
      if (software[i] == (pass == 1)) order.push_back(static_cast<int>(i));
  return order;
}

struct GlWorker::Init {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  bool abandoned = false;  // the creator stopped waiting
  std::optional<Error> error;
};

GlWorker::GlWorker(const gl::ContextOptions& options)
    : timeout_(options.timeout), fork_generation_(fork_generation()), creator_pid_(static_cast<int>(::getpid())) {}

GlWorker::~GlWorker() {
  if (!thread_ || !thread_->joinable()) return;
  if (fork_generation() != fork_generation_) {
    (void)thread_.release();  // a forked child has no such thread: leak the handle rather than join
  } else if (thread_->get_id() == std::this_thread::get_id()) {
    thread_->detach();  // the last reference went on the worker thread itself, at its very end
  } else {
    thread_->join();
  }
}

Result<std::shared_ptr<GlWorker>> GlWorker::start(const gl::ContextOptions& options) {
  if (options.timeout.count() <= 0)
    return fail(ErrorCode::InvalidArgument,
                text::format("gl::Context: timeout {} ms must be greater than 0", options.timeout.count()));
  if (static_cast<unsigned>(options.platform) > static_cast<unsigned>(gl::Platform::Surfaceless))
    return fail(ErrorCode::InvalidArgument,
                text::format("gl::Context: invalid platform {}", static_cast<unsigned>(options.platform)));
  if (options.device_index < -1)
    return fail(ErrorCode::InvalidArgument,
                text::format("gl::Context: device_index {} is invalid (-1 = automatic, else >= 0)", options.device_index));
  if (options.device_index >= 0 && options.platform == gl::Platform::Surfaceless)
    return fail(ErrorCode::InvalidArgument,
                text::format("gl::Context: device_index {} needs the device platform, not surfaceless", options.device_index));
  static std::once_flag atfork_once;
  std::call_once(atfork_once, [] { ::pthread_atfork(nullptr, nullptr, &on_fork_child); });

  std::shared_ptr<GlWorker> worker(new GlWorker(options));
  auto init = std::make_shared<Init>();
  try {
    worker->thread_ = std::make_unique<std::thread>(&GlWorker::thread_main, worker.get(), worker, init, options);
  } catch (const std::system_error& e) {
    return fail(ErrorCode::Unavailable, text::format("GL unavailable: cannot start the GL worker thread: {}", e.what()));
  }
  std::unique_lock lock(init->mutex);
  if (!init->cv.wait_for(lock, options.timeout, [&] { return init->done; })) {
    init->abandoned = true;  // the thread tears down whatever it made and exits on its own
    {
      std::lock_guard q(worker->mutex_);
      worker->finishing_ = true;  // under init->mutex: the thread reads both only after it
      census_enter();
    }
    lock.unlock();
    worker->thread_->detach();
    return fail(ErrorCode::Busy, text::format("gl::Context: EGL initialisation did not finish within {} ms",
                                             options.timeout.count()));
  }
  if (init->error) {
    Error error = *init->error;
    lock.unlock();
    worker->thread_->join();
    return fail(std::move(error));
  }
  arm_exit_guard();
  return worker;
}

void GlWorker::thread_main(std::shared_ptr<GlWorker> self, std::shared_ptr<Init> init,
                           gl::ContextOptions options) noexcept {
  thread_id_.store(std::this_thread::get_id());
  Result<void> ok = init_egl(options);
  bool abandoned = false;
  {
    std::lock_guard lock(init->mutex);
    abandoned = init->abandoned;
    if (!ok) init->error = ok.error();
    if (ok && !abandoned) {
      std::lock_guard q(mutex_);
      state_ = State::Running;  // before `done`: the creator may post the moment it wakes
    }
    init->done = true;
  }
  init->cv.notify_all();
  if (ok && !abandoned) {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return !queue_.empty() || exit_; });
        if (queue_.empty()) {
          state_ = State::Stopped;  // under the same lock as the emptiness check: no job is ever stranded
          break;
        }
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        job();
      } catch (...) {
        log(LogLevel::Error, "GL worker: a job threw; ignored");
      }
    }
  }
  teardown_egl();
  {
    std::lock_guard lock(mutex_);
    state_ = State::Stopped;
  }
  thread_id_.store(std::thread::id{});  // thread ids are reused: a later thread must not look like ours
  bool counted = false;
  {
    std::lock_guard lock(mutex_);
    counted = finishing_;
  }
  self.reset();  // may destroy *this: touch no member below
  if (counted) census_leave();
}

// ---- EGL setup ----------------------------------------------------------------------------------

Result<void> GlWorker::try_display(EGLenum platform, void* native, std::string& label) {
  const EglApi& egl = *egl_;
  EGLDisplay dpy = egl.GetPlatformDisplayEXT(platform, native, nullptr);
  if (dpy == EGL_NO_DISPLAY)
    return fail(ErrorCode::Unavailable, text::format("{}: eglGetPlatformDisplayEXT failed: {}", label,
                                                    egl_error_name(egl.GetError())));
  EGLint major = 0, minor = 0;
  if (auto r = acquire_display(egl, dpy, &major, &minor); !r)
    return fail(ErrorCode::Unavailable, text::format("{}: {}", label, r.error().message()));
  display_ = dpy;
  auto undo = [&](std::string what) {
    egl.MakeCurrent(dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
    if (surface_ != EGL_NO_SURFACE) egl.DestroySurface(dpy, surface_);
    if (context_ != EGL_NO_CONTEXT) egl.DestroyContext(dpy, context_);
    surface_ = EGL_NO_SURFACE;
    context_ = EGL_NO_CONTEXT;
    release_display(egl, dpy);
    display_ = EGL_NO_DISPLAY;
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

Result<void> GlWorker::init_egl(const gl::ContextOptions& options) {
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

void GlWorker::teardown_egl() noexcept {
  if (!egl_) return;
  const EglApi& egl = *egl_;
  if (display_ != EGL_NO_DISPLAY) {
    for (auto& hook : shutdown_hooks_) {
      try {
        hook();
      } catch (...) {
        log(LogLevel::Error, "GL context shutdown hook threw; ignored");
      }
    }
    shutdown_hooks_.clear();
    // Buffers still registered here were never released (only possible if the thread is abandoned
    // during init); EGL frees them with the context.
    buffers_.clear();
    egl.MakeCurrent(display_, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
    if (surface_ != EGL_NO_SURFACE) egl.DestroySurface(display_, surface_);
    if (context_ != EGL_NO_CONTEXT) egl.DestroyContext(display_, context_);
    surface_ = EGL_NO_SURFACE;
    context_ = EGL_NO_CONTEXT;
    release_display(egl, display_);
    display_ = EGL_NO_DISPLAY;
  }
  egl.ReleaseThread();
}

// ---- posting ------------------------------------------------------------------------------------

Result<void> GlWorker::check_usable() const {
  if (fork_generation() != fork_generation_)
    return fail(ErrorCode::FailedPrecondition,
                text::format("GL unusable in this process (pid {}): the gl::Context was created by pid {} before "
                            "fork(), and a forked child has no GL worker thread; create a new Context in the child",
                            static_cast<int>(::getpid()), creator_pid_));
  return {};
}

Error GlWorker::gone_error(std::string_view what) const {
  return Error(ErrorCode::FailedPrecondition,
               text::format("{}: GL context gone (its gl::Context was destroyed)", what));
}

Error GlWorker::refused_error() const { return gone_error("GL work refused"); }

bool GlWorker::enqueue(std::function<void()> job, bool drain_ok) {
  {
    std::lock_guard lock(mutex_);
    if (!(state_ == State::Running || (drain_ok && state_ == State::Draining))) return false;
    queue_.push_back(std::move(job));
  }
  cv_.notify_one();
  return true;
}

bool GlWorker::post_detached(std::function<void()> fn, bool drain_ok) noexcept {
  if (!check_usable()) return false;
  try {
    if (on_thread()) {
      fn();
      return true;
    }
    return enqueue(std::move(fn), drain_ok);
  } catch (...) {
    return false;
  }
}

void GlWorker::shutdown() noexcept {
  if (fork_generation() != fork_generation_) {
    // A forked child: the worker thread exists only in the parent. Leave everything as it is.
    if (thread_) (void)thread_.release();
    return;
  }
  {
    std::lock_guard lock(mutex_);
    if (state_ != State::Running) return;
    state_ = State::Draining;
  }
  if (on_thread()) {
    // Dropped from inside GL-thread work: shut down inline; the loop ends after the current job.
    shutdown_on_thread();
    if (thread_ && thread_->joinable()) thread_->detach();
    return;
  }
  auto r = call<void>(
      [this]() -> Result<void> {
        shutdown_on_thread();
        return {};
      },
      timeout_, {}, /*drain_ok=*/true);
  if (!r) {
    log(LogLevel::Error, "gl::Context shutdown: {}; the GL worker thread is left to finish on its own",
        r.error().message());
    if (thread_ && thread_->joinable()) thread_->detach();
    return;
  }
  bool exiting = false;
  {
    std::lock_guard lock(mutex_);
    exiting = exit_;
  }
  // With mapped orphans the thread lives on until their maps close; it holds its own reference.
  if (thread_ && thread_->joinable()) {
    if (exiting) thread_->join();
    else thread_->detach();
  }
}

void GlWorker::shutdown_on_thread() noexcept {
  std::vector<std::shared_ptr<PboState>> all;
  all.reserve(buffers_.size());
  for (auto& [ptr, state] : buffers_) all.push_back(state);
  for (auto& state : all) {
    state->disconnected.store(true);
    if (state->mapped) {
      state->orphan = true;  // an open span points into it: delete at its unmap
      ++orphans_;
    } else {
      release_buffer(*state);
    }
  }
  if (orphans_ == 0) request_exit();
}

void GlWorker::request_exit() noexcept {
  {
    std::lock_guard lock(mutex_);
    if (!finishing_) {
      finishing_ = true;
      census_enter();
    }
    exit_ = true;
  }
  cv_.notify_all();
}

void GlWorker::add_shutdown_hook(std::function<void()> hook) { shutdown_hooks_.push_back(std::move(hook)); }

// ---- buffers (GL thread) --------------------------------------------------------------------------

Result<std::shared_ptr<PboState>> GlWorker::create_buffer(std::size_t size_bytes) {
  if (size_bytes > static_cast<std::size_t>(PTRDIFF_MAX))
    return fail(ErrorCode::OutOfRange, text::format("GL buffer of {} B exceeds GLsizeiptr's maximum {} B", size_bytes,
                                                   static_cast<std::size_t>(PTRDIFF_MAX)));
  clear_gl_errors(gl_);
  GLuint name = 0;
  gl_.GenBuffers(1, &name);
  if (name == 0)
    return fail(ErrorCode::Internal, text::format("glGenBuffers gave no name: {}", gl_error_name(gl_.GetError())));
  gl_.BindBuffer(kTarget, name);
  auto undo = [&](std::string what, GLenum e) {
    gl_.BindBuffer(kTarget, 0);
    gl_.DeleteBuffers(1, &name);
    return fail(code_of_gl_error(e), text::format("{} for a {} B GL buffer: {}", what, size_bytes, gl_error_name(e)));
  };
  gl_.BufferData(kTarget, static_cast<GLsizeiptr>(size_bytes), nullptr, GL_DYNAMIC_DRAW);
  if (GLenum e = gl_.GetError(); e != GL_NO_ERROR) return undo("glBufferData", e);
  // GLES 3.0 has no glClearBufferData: upload zeros from one static zero block. Costs one driver copy
  // of the whole size at creation (about a memset's worth of bandwidth), no extra allocation.
  static const std::byte kZeros[256 * 1024] = {};
  for (std::size_t off = 0; off < size_bytes; off += sizeof(kZeros)) {
    std::size_t n = std::min(sizeof(kZeros), size_bytes - off);
    gl_.BufferSubData(kTarget, static_cast<GLintptr>(off), static_cast<GLsizeiptr>(n), kZeros);
  }
  if (GLenum e = gl_.GetError(); e != GL_NO_ERROR) return undo("zero-filling (glBufferSubData)", e);
  gl_.BindBuffer(kTarget, 0);
  auto state = std::make_shared<PboState>();
  state->name = name;
  state->size_bytes = size_bytes;
  buffers_.emplace(state.get(), state);
  live_buffers_.fetch_add(1);
  return state;
}

Result<std::byte*> GlWorker::map_buffer(PboState& state, MapMode mode) {
  if (state.deleted) return fail(gone_error("CPU map of a GL PBO"));
  if (state.mapped)
    return fail(ErrorCode::Busy, text::format("GL buffer {} is already mapped; it allows one CPU map at a time", state.name));
  for (auto& a : state.attachments)
    if (auto why = a->busy_reason())
      return fail(ErrorCode::Busy, text::format("CPU map of GL buffer {} refused: {}", state.name, *why));
  clear_gl_errors(gl_);
  gl_.BindBuffer(kTarget, state.name);
  const GLbitfield access = map_access_bits(static_cast<unsigned>(mode));
  void* p = gl_.MapBufferRange(kTarget, 0, static_cast<GLsizeiptr>(state.size_bytes), access);
  GLenum e = gl_.GetError();
  gl_.BindBuffer(kTarget, 0);
  if (!p)
    return fail(code_of_gl_error(e), text::format("glMapBufferRange of GL buffer {} ({} B, access {:#x}): {}", state.name,
                                                 state.size_bytes, access, gl_error_name(e)));
  state.mapped = true;
  return static_cast<std::byte*>(p);
}

void GlWorker::unmap_buffer(PboState& state) noexcept {
  if (!state.mapped || state.deleted) return;
  gl_.BindBuffer(kTarget, state.name);
  // GL_FALSE means the data store was corrupted while mapped (e.g. a display mode change); contents are
  // undefined. Nothing to retry: report it.
  if (gl_.UnmapBuffer(kTarget) != GL_TRUE)
    log(LogLevel::Warning, "glUnmapBuffer of GL buffer {} returned GL_FALSE: contents are undefined", state.name);
  gl_.BindBuffer(kTarget, 0);
  state.mapped = false;
  if (state.orphan) {
    state.orphan = false;
    release_buffer(state);
    if (--orphans_ == 0) request_exit();
  }
}

void GlWorker::release_buffer(PboState& state) noexcept {
  if (state.deleted) return;
  // Attachments (CUDA registrations) go first, while the buffer still exists.
  for (auto& a : state.attachments) a->release_on_gl_thread();
  state.attachments.clear();
  if (state.mapped) {
    gl_.BindBuffer(kTarget, state.name);
    gl_.UnmapBuffer(kTarget);
    gl_.BindBuffer(kTarget, 0);
    state.mapped = false;
  }
  gl_.DeleteBuffers(1, &state.name);
  state.deleted = true;
  state.disconnected.store(true);
  live_buffers_.fetch_sub(1);
  buffers_.erase(&state);  // callers hold their own reference to `state`
}

}  // namespace edgetensor::detail
