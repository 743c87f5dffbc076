// SPDX-License-Identifier: Apache-2.0
#include "gl/gl_worker.h"

#include <unistd.h>

#include <algorithm>
#include <system_error>
#include <vector>

#include "text/format.h"

#include "base/log_internal.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {
namespace {
std::atomic<std::size_t> g_live_workers{0};
std::atomic<std::size_t> g_retired{0};
}  // namespace

// Workers whose last reference went where their thread could not be joined (gl_worker.h at
// retired_gl_workers). A function-local static first made after EGL's first initialisation (start),
// so it is destroyed before EGL's own exit handlers run.
struct GlReaper {
  std::mutex mutex;
  std::vector<GlWorker*> retired;  // owned; guarded by mutex
  bool closed = false;             // guarded by mutex: static destruction has joined the list
  ProcessToken process = process_token();

  // Static destruction: join what is left (outside the lock: a job still running there may retire
  // another worker). Only a program that dropped a context's last handle on its own GL thread, or whose
  // GL job hung past shutdown, has anything here.
  ~GlReaper() {
    if (forked_since(process)) return;  // a forked child has none of these threads: leak them
    for (;;) {
      std::vector<GlWorker*> batch;
      {
        std::lock_guard lock(mutex);
        batch.swap(retired);
        if (batch.empty()) {
          closed = true;
          break;
        }
      }
      join_and_delete(batch);
    }
    g_retired.store(0);
  }

  // False once static destruction has closed the list.
  bool retire(GlWorker* worker) {
    std::lock_guard lock(mutex);
    if (closed) return false;
    retired.push_back(worker);
    g_retired.store(retired.size());
    return true;
  }

  // Joins and deletes every retired worker whose thread has ended (never waits on a running one).
  void reap() noexcept {
    std::vector<GlWorker*> done;
    {
      std::lock_guard lock(mutex);
      if (forked_since(process)) return;
      auto it = std::partition(retired.begin(), retired.end(), [](GlWorker* w) { return !w->finished_.load(); });
      done.assign(it, retired.end());
      retired.erase(it, retired.end());
      g_retired.store(retired.size());
    }
    join_and_delete(done);
  }

  static void join_and_delete(const std::vector<GlWorker*>& workers) noexcept {
    for (GlWorker* w : workers) {
      w->thread_->join();
      delete w;
    }
  }
};

namespace {
GlReaper& reaper() {
  static GlReaper r;
  return r;
}
}  // namespace

std::size_t retired_gl_workers() noexcept { return g_retired.load(); }
std::size_t live_gl_workers() noexcept { return g_live_workers.load(); }

struct GlWorker::Init {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  std::unique_ptr<GlWorker> abandoned;  // the creator stopped waiting and handed the worker to its thread
  std::optional<Error> error;
};

GlWorker::GlWorker(const gl::ContextOptions& options)
    : timeout_(options.timeout), process_(process_token()), creator_pid_(static_cast<int>(::getpid())) {
  g_live_workers.fetch_add(1);
}

GlWorker::~GlWorker() { g_live_workers.fetch_sub(1); }

void GlWorker::dispose(GlWorker* worker) noexcept {
  if (forked_since(worker->process_)) {
    // A forked child has no such thread, and the copies of its mutex and condition variable may be
    // mid-use by it (destroying a condition variable with a waiter blocks forever): leak the worker.
    return;
  }
  worker->request_exit();
  bool stuck = false;
  {
    std::lock_guard lock(worker->mutex_);
    stuck = worker->stuck_;
  }
  const bool on_thread = worker->on_thread();
  // The thread cannot join itself, and a hung job must not block this caller: hand the worker over.
  if ((on_thread || stuck) && reaper().retire(worker)) return;
  if (on_thread) {
    // Only during static destruction, after the retired list was joined (a handle dropped on its own GL
    // thread that late): nothing is left to join it.
    (void)worker->thread_.release();
    return;
  }
  if (worker->thread_ && worker->thread_->joinable()) worker->thread_->join();
  delete worker;
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
  std::unique_ptr<GlWorker> worker(new GlWorker(options));
  auto init = std::make_shared<Init>();
  try {
    worker->thread_ = std::make_unique<std::thread>(&GlWorker::thread_main, worker.get(), init, options);
  } catch (const std::system_error& e) {
    return fail(ErrorCode::Unavailable, text::format("GL unavailable: cannot start the GL worker thread: {}", e.what()));
  }
  std::unique_lock lock(init->mutex);
  if (!init->cv.wait_for(lock, options.timeout, [&] { return init->done; })) {
    // The one detached thread (docs/ARCHITECTURE.md "Threads"): EGL initialisation hung in the driver,
    // and joining would wait for the driver. The thread owns its worker now, tears down whatever it made
    // once EGL returns, and deletes it; nothing waits for it, at exit either.
    worker->thread_->detach();
    init->abandoned = std::move(worker);
    return fail(ErrorCode::Busy, text::format("gl::Context: EGL initialisation did not finish within {} ms",
                                             options.timeout.count()));
  }
  if (init->error) {
    Error error = *init->error;
    lock.unlock();
    worker->thread_->join();
    return fail(std::move(error));
  }
  lock.unlock();
  // After EGL's first initialisation, so the retired list is destroyed before EGL's exit handlers run.
  reaper().reap();  // joins workers retired earlier whose thread has ended since
  return std::shared_ptr<GlWorker>(worker.release(), &GlWorker::dispose);
}

void GlWorker::thread_main(std::shared_ptr<Init> init, gl::ContextOptions options) noexcept {
  thread_id_.store(std::this_thread::get_id());
  auto session = EglSession::open(options);
  std::unique_ptr<GlWorker> abandoned;  // set when the creator stopped waiting: this thread owns *this
  {
    std::lock_guard lock(init->mutex);
    abandoned = std::move(init->abandoned);
    if (!session) {
      init->error = session.error();
    } else {
      session_ = std::move(*session);  // published to the creator by init->mutex
      if (!abandoned) {
        std::lock_guard q(mutex_);
        state_ = State::Running;  // before `done`: the creator may post the moment it wakes
      }
    }
    init->done = true;
  }
  init->cv.notify_all();
  if (abandoned) {
    if (session_) session_->close();
    return;  // `abandoned` deletes *this (its thread handle is detached)
  }
  if (session_) {
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
  // Resources still registered here were never released (only when the last reference went without a
  // shutdown, e.g. a Context that was never made); EGL frees them with the context.
  resources_.clear();
  if (session_) session_->close();
  {
    std::lock_guard lock(mutex_);
    state_ = State::Stopped;
  }
  thread_id_.store(std::thread::id{});  // thread ids are reused: a later thread must not look like ours
  finished_.store(true);  // the retired list may join and delete *this from here on
}

// ---- posting ------------------------------------------------------------------------------------

Result<void> GlWorker::check_usable() const {
  if (forked_since(process_))
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

// ---- shutdown -----------------------------------------------------------------------------------

void GlWorker::shutdown() noexcept {
  if (forked_since(process_)) return;  // a forked child: the worker thread exists only in the parent
  {
    std::lock_guard lock(mutex_);
    if (state_ != State::Running) return;
    state_ = State::Draining;
  }
  if (on_thread()) {
    // Dropped from inside GL-thread work: shut down inline; the loop ends after the current job and the
    // last reference joins the thread (or retires the worker, if it goes on this thread).
    shutdown_on_thread();
    return;
  }
  auto r = call<void>(
      [this]() -> Result<void> {
        shutdown_on_thread();
        return {};
      },
      timeout_, {}, /*drain_ok=*/true);
  bool ending = false;
  {
    std::lock_guard lock(mutex_);
    if (!r) stuck_ = true;  // the last reference must not wait for the hung job: it retires the worker
    ending = exit_;
  }
  if (!r) {
    log(LogLevel::Error, "gl::Context shutdown: {}; the GL worker thread finishes on its own and is joined later",
        r.error().message());
    return;
  }
  // With kept resources the thread lives on until they are released, and the last reference joins it.
  // Without, it is ending now: join it here, so the context and its surface are gone when ~Context returns.
  if (ending && thread_->joinable()) thread_->join();
}

void GlWorker::shutdown_on_thread() noexcept {
  // A copy: releasing a resource untracks it.
  std::vector<std::shared_ptr<GlResource>> all;
  all.reserve(resources_.size());
  for (auto& [ptr, resource] : resources_) all.push_back(resource);
  for (auto& resource : all)
    if (!resource->release_at_shutdown(*this)) ++kept_;
  if (kept_ == 0) request_exit();
}

void GlWorker::request_exit() noexcept {
  {
    std::lock_guard lock(mutex_);
    exit_ = true;
  }
  cv_.notify_all();
}

// ---- resources (GL thread) ----------------------------------------------------------------------

void GlWorker::track(std::shared_ptr<GlResource> resource) {
  const GlResource* key = resource.get();
  resources_.emplace(key, std::move(resource));
  live_resources_.fetch_add(1);
}

void GlWorker::untrack(const GlResource& resource) noexcept {
  if (resources_.erase(&resource) != 0) live_resources_.fetch_sub(1);
}

void GlWorker::release_kept() noexcept {
  if (kept_ > 0 && --kept_ == 0) request_exit();
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
