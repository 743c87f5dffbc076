// SPDX-License-Identifier: Apache-2.0
// The GL worker: one thread that owns an EGL display + GLES 3 context, runs posted jobs in order with
// the context current, and owns the bookkeeping of every buffer object created on it.
//
//   gl::Context ──shared──> GlWorker <──shared── PboBacking (one per PBO storage)
//                              │ <──shared── the worker thread itself (until its loop ends)
//                              └─ registry of live PboState (GL-thread only)
//
// Tensors do not keep the Context alive; they keep the GlWorker object alive, which outlives its
// thread as a tombstone that refuses work ("GL context gone"). Every GL call, and every read or write
// of PboState's GL-thread fields, happens on the worker thread, so they need no lock.
//
// For the CUDA-GL interop (issue 6): call() runs any callable on the GL thread with the context
// current; PboAttachment lets a module hang per-PBO state (a cudaGraphicsResource) that is released on
// the GL thread before glDeleteBuffers and before the context terminates, and that may refuse CPU maps
// and user GL work while busy; add_shutdown_hook() runs module teardown before EGL terminates.
#pragma once

#include <edgetensor/error.h>
#include <edgetensor/gl.h>
#include <edgetensor/map.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "text/format.h"

#include "backends/gl_pbo/egl_loader.h"

namespace edgetensor::inline ET_ABI_NAMESPACE::detail {

/// Per-PBO state owned by another module (e.g. a CUDA graphics registration). Methods run on the GL
/// thread with the context current.
class PboAttachment {
 public:
  virtual ~PboAttachment() = default;
  /// Undo whatever was done to the buffer (unregister); called once, before glDeleteBuffers or the
  /// context shutdown, whichever comes first.
  virtual void release_on_gl_thread() noexcept = 0;
  /// Non-empty while the buffer must not be CPU-mapped or handed to user GL code (e.g. CUDA-mapped).
  virtual std::optional<std::string> busy_reason() const { return std::nullopt; }
};

/// One buffer object. `disconnected` may be read from any thread; everything else is GL-thread only.
struct PboState {
  GLuint name = 0;
  std::size_t size_bytes = 0;
  bool mapped = false;   // a CPU map (glMapBufferRange) is open
  bool deleted = false;  // glDeleteBuffers ran (or the context is gone)
  bool orphan = false;   // the context shut down while this buffer was mapped: delete at unmap
  std::vector<std::unique_ptr<PboAttachment>> attachments;
  std::atomic<bool> disconnected{false};
};

class GlWorker : public std::enable_shared_from_this<GlWorker> {
 public:
  /// Starts the thread and creates the EGL context on it. Errors: see gl::Context::create.
  static Result<std::shared_ptr<GlWorker>> start(const gl::ContextOptions& options);
  ~GlWorker();

  /// Runs `fn` on the GL thread and waits up to `timeout` (inline on the GL thread). If the caller
  /// stops waiting after `fn` started, `undo` (if any) runs on the GL thread with fn's successful
  /// result, so nothing acquired for the abandoned caller leaks. `drain_ok`: also accepted while the
  /// context drains mapped buffers after shutdown (unmap/release of orphans).
  template <class T>
  Result<T> call(std::function<Result<T>()> fn, std::chrono::milliseconds timeout,
                 std::function<void(Result<T>&)> undo = {}, bool drain_ok = false);
  Result<void> call(std::function<Result<void>()> fn) { return call<void>(std::move(fn), timeout_); }

  /// Queues `fn` without waiting (inline on the GL thread). Returns false when refused (gone, forked).
  bool post_detached(std::function<void()> fn, bool drain_ok) noexcept;

  /// Called by ~Context: deletes unmapped buffers, disconnects all, terminates EGL (see gl.h).
  void shutdown() noexcept;

  bool on_thread() const noexcept { return thread_id_.load() == std::this_thread::get_id(); }
  /// OK, or why GL work cannot be posted from this process/thread right now (fork, gone).
  Result<void> check_usable() const;
  const gl::ContextInfo& info() const noexcept { return info_; }
  std::chrono::milliseconds timeout() const noexcept { return timeout_; }
  const EglApi& egl() const noexcept { return *egl_; }
  std::size_t live_buffers() const noexcept { return live_buffers_.load(); }

  // ---- GL thread only ---------------------------------------------------------------------------
  const GlApi& gl() const noexcept { return gl_; }
  /// glGenBuffers + glBufferData + zero fill; registers the state.
  Result<std::shared_ptr<PboState>> create_buffer(std::size_t size_bytes);
  /// glMapBufferRange of the whole buffer with the access bits of `mode`.
  Result<std::byte*> map_buffer(PboState& state, MapMode mode);
  /// glUnmapBuffer; an orphan is deleted right after.
  void unmap_buffer(PboState& state) noexcept;
  /// Attachments released, unmapped if mapped, glDeleteBuffers; idempotent.
  void release_buffer(PboState& state) noexcept;
  /// Runs before EGL terminates (after every buffer was released), on the GL thread.
  void add_shutdown_hook(std::function<void()> hook);
  /// The error of an operation on a buffer whose context is gone.
  Error gone_error(std::string_view what) const;

 private:
  enum class State { Starting, Running, Draining, Stopped };
  struct Init;

  explicit GlWorker(const gl::ContextOptions& options);
  void thread_main(std::shared_ptr<GlWorker> self, std::shared_ptr<Init> init, gl::ContextOptions options) noexcept;
  Result<void> try_display(EGLenum platform, void* native, std::string& why);
  Result<void> init_egl(const gl::ContextOptions& options);
  void teardown_egl() noexcept;
  void shutdown_on_thread() noexcept;
  void request_exit() noexcept;  // the loop ends once the queue is empty
  bool enqueue(std::function<void()> job, bool drain_ok);
  Error refused_error() const;

  const std::chrono::milliseconds timeout_;
  const unsigned fork_generation_;
  const int creator_pid_;
  std::atomic<std::thread::id> thread_id_{};
  // The thread object is heap-held so a forked child can leak it (it has no such thread to join).
  std::unique_ptr<std::thread> thread_;

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // guarded by mutex_
  State state_ = State::Starting;            // guarded by mutex_
  bool exit_ = false;                        // guarded by mutex_: leave the loop once the queue is empty
  bool finishing_ = false;                   // guarded by mutex_: counted in the exit census

  // Set during init on the GL thread, read-only afterwards.
  const EglApi* egl_ = nullptr;
  GlApi gl_;
  gl::ContextInfo info_;
  EGLDisplay display_ = EGL_NO_DISPLAY;
  EGLContext context_ = EGL_NO_CONTEXT;
  EGLSurface surface_ = EGL_NO_SURFACE;

  // GL-thread only.
  std::unordered_map<PboState*, std::shared_ptr<PboState>> buffers_;
  std::vector<std::function<void()>> shutdown_hooks_;
  std::size_t orphans_ = 0;

  std::atomic<std::size_t> live_buffers_{0};
};

/// A monotonically increasing number bumped in every forked child (pthread_atfork).
unsigned fork_generation() noexcept;

/// Order in which Auto tries EGL devices: hardware first, then software, each in enumeration order.
/// `software[i]` says whether device i has EGL_MESA_device_software. Pure; unit-tested.
std::vector<int> device_try_order(const std::vector<bool>& software);

// ---- call() ------------------------------------------------------------------------------------

namespace gl_job {
template <class T>
struct JobState {
  enum class Stage { Queued, Running, Done, Cancelled, Abandoned };
  std::mutex mutex;
  std::condition_variable cv;
  Stage stage = Stage::Queued;
  std::optional<Result<T>> result;
};

template <class T>
Result<T> invoke_safely(std::function<Result<T>()>& fn) noexcept {
  try {
    return fn();
  } catch (const std::exception& e) {
    return fail(ErrorCode::Internal, std::string("callable on the GL thread threw: ") + e.what());
  } catch (...) {
    return fail(ErrorCode::Internal, "callable on the GL thread threw a non-std exception");
  }
}
}  // namespace gl_job

template <class T>
Result<T> GlWorker::call(std::function<Result<T>()> fn, std::chrono::milliseconds timeout,
                         std::function<void(Result<T>&)> undo, bool drain_ok) {
  ET_TRY(check_usable());
  if (on_thread()) return gl_job::invoke_safely(fn);
  using Job = gl_job::JobState<T>;
  auto job = std::make_shared<Job>();
  auto run = [job, fn = std::move(fn), undo = std::move(undo)]() mutable {
    {
      std::lock_guard lock(job->mutex);
      if (job->stage == Job::Stage::Cancelled) return;
      job->stage = Job::Stage::Running;
    }
    Result<T> r = gl_job::invoke_safely(fn);
    bool abandoned = false;
    {
      std::lock_guard lock(job->mutex);
      if (job->stage == Job::Stage::Abandoned) {
        abandoned = true;
      } else {
        job->result.emplace(std::move(r));
        job->stage = Job::Stage::Done;
      }
    }
    job->cv.notify_all();
    if (abandoned && r && undo) undo(r);
  };
  if (!enqueue(std::move(run), drain_ok)) return fail(refused_error());
  std::unique_lock lock(job->mutex);
  if (!job->cv.wait_for(lock, timeout, [&] { return job->stage == Job::Stage::Done; })) {
    if (job->stage == Job::Stage::Queued) {
      job->stage = Job::Stage::Cancelled;
      return fail(ErrorCode::Busy, text::format("the GL thread did not start the work within {} ms (it is busy "
                                               "or hung); the work was cancelled", timeout.count()));
    }
    job->stage = Job::Stage::Abandoned;
    return fail(ErrorCode::Busy, text::format("the GL thread did not finish the work within {} ms; it still "
                                             "completes there and its result is discarded", timeout.count()));
  }
  return std::move(*job->result);
}

}  // namespace edgetensor::detail
