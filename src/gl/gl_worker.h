// SPDX-License-Identifier: Apache-2.0
// The GL thread: one thread that owns an EGL display + GLES 3 context (EglSession), runs posted jobs
// in order with the context current, and keeps the GL objects other modules made on it (GlResource)
// so it can release them when its gl::Context goes.
//
//   gl::Context ──shared──> GlWorker <──shared── PboBacking (backends/gl_pbo, one per PBO storage)
//                              ├─ owns the worker thread: whoever drops the last reference joins it
//                              └─ registry of live GlResources (GL-thread only)
//
// Tensors do not keep the Context alive; they keep the GlWorker object alive, which outlives its
// thread as a tombstone that refuses work ("GL context gone"). Every GL call, and every read or write
// of a resource's GL-thread fields, happens on the worker thread, so they need no lock. The thread holds
// no reference to its worker and library jobs hold a plain GlWorker& (a job runs on the worker's thread,
// and the worker joins that thread before it dies). docs/ARCHITECTURE.md "Threads" gives the rules.
#pragma once

#include <edgetensor/error.h>
#include <edgetensor/gl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "text/format.h"

#include "base/process.h"
#include "gl/egl_display.h"
#include "gl/egl_loader.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

class GlWorker;

/// A GL object another module made on a worker (a PBO), registered with GlWorker::track so the worker
/// can release it when its gl::Context shuts down. Runs on the GL thread with the context current.
class GlResource {
 public:
  virtual ~GlResource() = default;
  /// The context shuts down: release the object and return true, or return false to keep it a while
  /// (a CPU-mapped buffer whose span is still in use). A kept resource calls worker.release_kept()
  /// once it has released itself; after the last one the thread destroys the context and exits.
  virtual bool release_at_shutdown(GlWorker& worker) noexcept = 0;
};

class GlWorker {
 public:
  /// Starts the thread and creates the EGL context on it. Errors: see gl::Context::create. The last
  /// reference joins the thread (see dispose); on the GL thread itself it hands the worker to the
  /// retired list instead (retired_gl_workers()).
  static Result<std::shared_ptr<GlWorker>> start(const gl::ContextOptions& options);
  ~GlWorker();  // the thread is joined (or, for a hung EGL initialisation, detached) before
  GlWorker(const GlWorker&) = delete;
  GlWorker& operator=(const GlWorker&) = delete;

  /// Runs `fn` on the GL thread and waits up to `timeout` (inline on the GL thread). If the caller
  /// stops waiting after `fn` started, `undo` (if any) runs on the GL thread with fn's successful
  /// result, so nothing acquired for the abandoned caller leaks. `drain_ok`: also accepted while the
  /// context drains kept resources after shutdown (unmap/release of orphans).
  template <class T>
  Result<T> call(std::function<Result<T>()> fn, std::chrono::milliseconds timeout,
                 std::function<void(Result<T>&)> undo = {}, bool drain_ok = false);
  Result<void> call(std::function<Result<void>()> fn) { return call<void>(std::move(fn), timeout_); }

  /// Queues `fn` without waiting (inline on the GL thread). Returns false when refused (gone, forked).
  bool post_detached(std::function<void()> fn, bool drain_ok) noexcept;

  /// Called by ~Context: releases every resource, terminates the context (see gl.h).
  void shutdown() noexcept;

  bool on_thread() const noexcept { return thread_id_.load() == std::this_thread::get_id(); }
  /// OK, or why GL work cannot be posted from this process right now (a fork() child).
  Result<void> check_usable() const;
  const gl::ContextInfo& info() const noexcept { return session_->info(); }
  std::chrono::milliseconds timeout() const noexcept { return timeout_; }
  const EglApi& egl() const noexcept { return session_->egl(); }
  /// Resources tracked and not yet untracked (for gl::Context::live_buffer_count).
  std::size_t live_resources() const noexcept { return live_resources_.load(); }
  /// The error of an operation on an object whose context is gone.
  Error gone_error(std::string_view what) const;

  // ---- GL thread only ---------------------------------------------------------------------------
  const GlApi& gl() const noexcept { return session_->gl(); }
  /// Registers a resource made on this worker (released at shutdown unless untracked first).
  void track(std::shared_ptr<GlResource> resource);
  /// Forgets a resource that released itself; the caller holds its own reference. Idempotent.
  void untrack(const GlResource& resource) noexcept;
  /// A resource kept at shutdown (release_at_shutdown returned false) has released itself.
  void release_kept() noexcept;

 private:
  enum class State { Starting, Running, Draining, Stopped };
  struct Init;

  friend struct GlReaper;

  explicit GlWorker(const gl::ContextOptions& options);
  /// The deleter of every shared_ptr<GlWorker>: tells the loop to end and joins the thread; on the GL
  /// thread itself, or when a job hung past shutdown's timeout, retires the worker instead.
  static void dispose(GlWorker* worker) noexcept;
  void thread_main(std::shared_ptr<Init> init, gl::ContextOptions options) noexcept;
  void shutdown_on_thread() noexcept;
  void request_exit() noexcept;  // the loop ends once the queue is empty
  bool enqueue(std::function<void()> job, bool drain_ok);
  Error refused_error() const;

  const std::chrono::milliseconds timeout_;
  const ProcessToken process_;  // core/process.h: a fork() child has no worker thread
  const int creator_pid_;       // for messages
  std::atomic<std::thread::id> thread_id_{};
  // Joined by dispose() or shutdown(), or by the retired list; detached only when EGL initialisation
  // hangs (start). Heap-held so a forked child can leak it (it has no such thread to join).
  std::unique_ptr<std::thread> thread_;
  std::atomic<bool> finished_{false};  // thread_main touches no member after setting it

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // guarded by mutex_
  State state_ = State::Starting;            // guarded by mutex_
  bool exit_ = false;                        // guarded by mutex_: leave the loop once the queue is empty
  bool stuck_ = false;                       // guarded by mutex_: shutdown timed out behind a running job

  // Set during init on the GL thread, read-only afterwards (closed on the GL thread at its end).
  std::unique_ptr<EglSession> session_;

  // GL-thread only.
  std::unordered_map<const GlResource*, std::shared_ptr<GlResource>> resources_;
  std::size_t kept_ = 0;  // resources kept at shutdown and not yet released

  std::atomic<std::size_t> live_resources_{0};
};

/// Workers retired because their last reference went on their own GL thread (user code there dropped
/// the last handle) or while a job hung past shutdown's timeout, and not yet joined. The next
/// Context::create joins those whose thread has finished; static destruction joins the rest. A program
/// that does neither never has one (tests check 0).
std::size_t retired_gl_workers() noexcept;
/// GlWorker objects alive in this process (an abandoned creation deletes its own once EGL returns).
std::size_t live_gl_workers() noexcept;

/// Internal access to a gl::Context's worker (the PBO backend allocates on it).
struct GlContextAccess {
  static const std::shared_ptr<GlWorker>& worker(const gl::Context& context) noexcept { return context.worker_; }
  static std::shared_ptr<gl::Context> wrap(std::shared_ptr<GlWorker> worker) {
    return std::shared_ptr<gl::Context>(new gl::Context(std::move(worker)));
  }
};

// ---- call() ------------------------------------------------------------------------------------

namespace gl_job {
/// One call(): the callable and its undo live here, not in the queued job, so the waiting caller
/// destroys them (with whatever they captured: maybe the last handle of the context) off the GL thread;
/// only an abandoned job's are destroyed on the GL thread.
template <class T>
struct JobState {
  enum class Stage { Queued, Running, Done, Cancelled, Abandoned };
  std::mutex mutex;
  std::condition_variable cv;
  Stage stage = Stage::Queued;
  std::optional<Result<T>> result;
  std::function<Result<T>()> fn;           // GL thread while Running; else whoever owns the stage
  std::function<void(Result<T>&)> undo;
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
  job->fn = std::move(fn);
  job->undo = std::move(undo);
  auto run = [job]() {
    {
      std::lock_guard lock(job->mutex);
      if (job->stage == Job::Stage::Cancelled) return;
      job->stage = Job::Stage::Running;
    }
    Result<T> r = gl_job::invoke_safely(job->fn);
    {
      std::lock_guard lock(job->mutex);
      if (job->stage != Job::Stage::Abandoned) {
        job->result.emplace(std::move(r));
        job->stage = Job::Stage::Done;  // fn and undo are the caller's from here on
        job->cv.notify_all();
        return;
      }
    }
    if (r && job->undo) job->undo(r);
  };
  // The caller destroys the callables unless it abandons them, after unlocking: their captures may
  // hold the context's last handle, whose shutdown waits for this GL thread.
  auto drop_callables = [&job] {
    job->fn = nullptr;
    job->undo = nullptr;
  };
  if (!enqueue(std::move(run), drain_ok)) {
    drop_callables();
    return fail(refused_error());
  }
  std::unique_lock lock(job->mutex);
  if (!job->cv.wait_for(lock, timeout, [&] { return job->stage == Job::Stage::Done; })) {
    if (job->stage == Job::Stage::Queued) {
      job->stage = Job::Stage::Cancelled;
      lock.unlock();
      drop_callables();
      return fail(ErrorCode::Busy, text::format("the GL thread did not start the work within {} ms (it is busy "
                                               "or hung); the work was cancelled", timeout.count()));
    }
    job->stage = Job::Stage::Abandoned;
    return fail(ErrorCode::Busy, text::format("the GL thread did not finish the work within {} ms; it still "
                                             "completes there and its result is discarded", timeout.count()));
  }
  lock.unlock();
  drop_callables();
  return std::move(*job->result);
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
