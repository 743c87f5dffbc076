// SPDX-License-Identifier: Apache-2.0
#include "gl/gl_worker.h"

#include <unistd.h>

#include <system_error>
#include <vector>

#include "text/format.h"

#include "base/log_internal.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {
namespace {

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
  ProcessToken process = process_token();
  ~ExitGuard() {
    if (forked_since(process)) return;  // a forked child has none of the parent's threads
    std::unique_lock lock(census().mutex);
    census().cv.wait_for(lock, std::chrono::seconds(2), [] { return census().running == 0; });
  }
};
void arm_exit_guard() { static ExitGuard guard; }

}  // namespace

struct GlWorker::Init {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  bool abandoned = false;  // the creator stopped waiting
  std::optional<Error> error;
};

GlWorker::GlWorker(const gl::ContextOptions& options)
    : timeout_(options.timeout), process_(process_token()), creator_pid_(static_cast<int>(::getpid())) {}

GlWorker::~GlWorker() {
  if (!thread_ || !thread_->joinable()) return;
  if (forked_since(process_)) {
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
  auto session = EglSession::open(options);
  bool abandoned = false;
  {
    std::lock_guard lock(init->mutex);
    abandoned = init->abandoned;
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
  if (session_ && !abandoned) {
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
  // Resources still registered here were never released (only possible if the thread is abandoned
  // during init); EGL frees them with the context.
  resources_.clear();
  if (session_) session_->close();
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
  if (forked_since(process_)) {
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
  // With kept resources the thread lives on until they are released; it holds its own reference.
  if (thread_ && thread_->joinable()) {
    if (exiting) thread_->join();
    else thread_->detach();
  }
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
    if (!finishing_) {
      finishing_ = true;
      census_enter();
    }
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
