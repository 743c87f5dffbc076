// SPDX-License-Identifier: Apache-2.0
// Pool (include/edgetensor/pool.h). The pool owns each buffer's storage through a "home" reference;
// what it hands out is a second, independent shared_ptr to the same Storage whose deleter (Recycler)
// gives the home reference back. Every holder (tensor, view, CPU map, CUDA map, GL job) copies that
// handed-out pointer, so the deleter runs exactly when the last of them is gone, on that thread.
//
// Lock order: the pool's mutex, then a storage's device mutex (device_work_complete). The deleter is
// never run under the pool's mutex (handed-out pointers are made and dropped outside it).
#include <edgetensor/pool.h>

#include <algorithm>
#include <cerrno>
#include <array>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <vector>

#include "text/format.h"

#include "base/c_string.h"
#include "core/layout.h"
#include "core/storage.h"
#include "core/tensor_access.h"
#include "pool/pool_wait.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

class PoolState : public std::enable_shared_from_this<PoolState> {
 public:
  PoolState(const PoolOptions& options, std::optional<ImageLayout> layout, std::vector<std::size_t> shape,
            DType dtype, std::size_t packed_bytes)
      : name_(options.name),
        max_(options.max_buffers),
        zero_on_reuse_(options.zero_on_reuse),
        on_wait_(options.on_wait),
        allocate_(options.allocate),
        layout_(layout),
        shape_(std::move(shape)),
        dtype_(dtype),
        packed_bytes_(packed_bytes) {
    allocate_.name = name_;
    free_.reserve(max_);  // give_back never allocates (it runs in a noexcept deleter)
  }

  const std::string& name() const noexcept { return name_; }
  std::size_t max_buffers() const noexcept { return max_; }
  std::size_t packed_bytes() const noexcept { return packed_bytes_; }

  // Allocates one buffer for the pool's free list (create's min_buffers).
  Result<void> preallocate() {
    ET_TRY_ASSIGN(auto home, allocate_home());
    std::lock_guard lock(mutex_);
    ++allocated_;
    free_.push_back({std::move(home), false});
    return {};
  }

  // `hook`: waits instead of cv_ (pool_wait.h), or null.
  Result<TensorDyn> acquire(std::chrono::milliseconds timeout, bool may_wait, PoolWaitHook* hook = nullptr) {
    using Clock = std::chrono::steady_clock;
    std::optional<Clock::time_point> start;  // read only once the first attempt found nothing
    Clock::time_point deadline;
    Clock::time_point checked;  // when on_wait_ last ran (or the wait began)
    bool waited = false;
    bool recalled = false;
    std::unique_lock lock(mutex_);
    std::shared_ptr<Storage> home;
    for (;;) {
      home = take_free_locked();
      if (home) break;
      if (allocated_ + allocating_ < max_) {
        ++allocating_;
        lock.unlock();
        return acquire_new();
      }
      const auto now = Clock::now();
      if (!start) {
        start = now;
        // Saturated: a timeout of milliseconds::max() waits "forever" instead of overflowing.
        deadline = timeout >= std::chrono::duration_cast<std::chrono::milliseconds>(Clock::time_point::max() - now)
                       ? Clock::time_point::max()
                       : now + timeout;
        checked = now;
      }
      // Once, before the first wait or the Busy answer (try_acquire too): whatever reads this pool's
      // releases reads what is there and stops standing back (pool_wait.h), so a buffer already released
      // is back before the next look, and one released later wakes its reader rather than waiting out a
      // stand-back.
      if (!recalled && !recalls_.empty()) {
        recalled = true;
        auto recalls = recalls_;
        lock.unlock();
        for (const auto& w : recalls)
          if (auto r = w.lock()) r->recall();
        lock.lock();
        continue;  // a buffer may have come back meanwhile
      }
      if (!may_wait || now >= deadline) {
        ++timeouts_;
        return fail(busy_error_locked(may_wait, timeout.count() > 0,
                                      std::chrono::duration_cast<std::chrono::milliseconds>(now - *start)));
      }
      if (!waited) {
        ++waits_;
        waited = true;
      }
      if (on_wait_ && now - checked >= kPoolWaitCheckInterval) {
        checked = now;
        lock.unlock();
        auto go_on = on_wait_();
        if (!go_on) return fail(std::move(go_on).error());
        lock.lock();
        continue;  // a buffer may have come back meanwhile
      }
      // Completed device work sends no signal: while only fenced buffers are free, ask again soon.
      const bool fenced = std::any_of(free_.begin(), free_.end(), [](const Slot& s) { return s.fenced; });
      auto until = fenced ? std::min(deadline, now + std::chrono::milliseconds(1)) : deadline;
      if (on_wait_) until = std::min(until, checked + kPoolWaitCheckInterval);
      if (hook) {
        // Registered only while it waits: a give_back between two looks finds free_ changed under the lock.
        hook->next_ = hooks_;
        hooks_ = hook;
        lock.unlock();
        const bool keep = hook->wait(until);
        lock.lock();
        for (PoolWaitHook** h = &hooks_; *h; h = &(*h)->next_)
          if (*h == hook) {
            *h = hook->next_;
            break;
          }
        if (!keep) hook = nullptr;
        continue;
      }
      ++waiters_;
      cv_.wait_until(lock, until);
      --waiters_;
    }
    note_acquired_locked();
    TensorDyn proto = *proto_;  // set by the first allocation, before any buffer was free
    lock.unlock();
    return hand_out(std::move(home), std::move(proto), zero_on_reuse_);
  }

  // The pool that handed out `storage` (its deleter is this pool's Recycler), or null.
  static PoolState* of(const std::shared_ptr<Storage>& storage) noexcept {
    const auto* recycler = std::get_deleter<Recycler>(storage);
    return recycler == nullptr ? nullptr : recycler->pool.get();
  }
  void add_recall(const std::shared_ptr<PoolRecall>& recall) {
    std::lock_guard lock(mutex_);
    std::erase_if(recalls_, [](const std::weak_ptr<PoolRecall>& w) { return w.expired(); });
    for (const auto& w : recalls_)
      if (!w.owner_before(recall) && !recall.owner_before(w)) return;
    recalls_.push_back(recall);
  }

  // The Recycler's end: `home` comes back from its last holder (any thread, noexcept).
  void give_back(std::shared_ptr<Storage> home) noexcept {
    const bool done = home->device_work_complete();
    std::unique_lock lock(mutex_);
    --in_use_;
    if (closed_) {
      --allocated_;
      lock.unlock();
      home.reset();  // the pool is gone: the buffer frees its memory as any tensor's does
      return;
    }
    free_.push_back({std::move(home), !done});  // capacity reserved: never throws
    const bool wake = waiters_ != 0;
    wake_hooks_locked();
    lock.unlock();
    if (wake) cv_.notify_one();
  }

  void close() noexcept {
    std::vector<Slot> freed;
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
      freed.swap(free_);
      allocated_ -= freed.size();
      wake_hooks_locked();
    }
    cv_.notify_all();
    // `freed` goes here, outside the lock: each storage frees its memory.
  }

  PoolStats stats() const {
    std::lock_guard lock(mutex_);
    PoolStats s;
    s.allocated = allocated_;
    s.free = free_.size();
    s.device_pending = static_cast<std::size_t>(std::count_if(free_.begin(), free_.end(), [](const Slot& x) { return x.fenced; }));
    s.in_use = in_use_;
    s.peak_in_use = peak_in_use_;
    s.acquired = acquired_;
    s.waits = waits_;
    s.timeouts = timeouts_;
    return s;
  }

 private:
  struct Slot {
    std::shared_ptr<Storage> storage;  // the home reference (use_count 1 while free)
    bool fenced;                       // device work not complete when last asked
  };

  // Gives the storage back when the last holder of the handed-out pointer is gone.
  struct Recycler {
    std::shared_ptr<PoolState> pool;
    std::shared_ptr<Storage> home;
    void operator()(Storage*) noexcept { pool->give_back(std::move(home)); }
  };

  Result<TensorDyn> allocate_tensor() {
    if (layout_) return TensorDyn::allocate_image(*layout_, allocate_);
    return TensorDyn::allocate(shape_, dtype_, allocate_);
  }

  // A new buffer: its storage (marked pooled) as the home reference. Sets the prototype once.
  Result<std::shared_ptr<Storage>> allocate_home() {
    auto t = allocate_tensor();
    if (!t)
      return fail(t.error().code(),
                  text::format("pool '{}': allocating a buffer ({} of max_buffers {}): {}", name_, allocated_now() + 1,
                              max_, t.error().message()),
                  t.error().sys_errno());
    std::shared_ptr<Storage> home = storage_of(*t);
    home->set_pooled();
    {
      std::lock_guard lock(mutex_);
      if (!proto_) proto_ = TensorAccess::without_storage(*t);
    }
    return home;  // `t` goes now: `home` is the only reference
  }

  std::size_t allocated_now() const {
    std::lock_guard lock(mutex_);
    return allocated_;
  }

  Result<TensorDyn> acquire_new() {
    auto home = allocate_home();
    std::unique_lock lock(mutex_);
    --allocating_;
    if (!home) {
      const bool wake = waiters_ != 0;
      wake_hooks_locked();
      lock.unlock();
      if (wake) cv_.notify_one();  // a waiter may allocate in this slot instead
      return fail(std::move(home).error());
    }
    ++allocated_;
    note_acquired_locked();
    TensorDyn proto = *proto_;
    lock.unlock();
    return hand_out(std::move(*home), std::move(proto), false);  // a new buffer reads as zeros already
  }

  // The warmest free buffer whose device work is complete, or null.
  std::shared_ptr<Storage> take_free_locked() {
    for (std::size_t i = free_.size(); i-- > 0;) {
      Slot& s = free_[i];
      if (s.fenced) s.fenced = !s.storage->device_work_complete();
      if (!s.fenced) {
        std::shared_ptr<Storage> home = std::move(s.storage);
        free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
        return home;
      }
    }
    return nullptr;
  }

  void wake_hooks_locked() noexcept {
    for (PoolWaitHook* h = hooks_; h; h = h->next_) h->wake();
  }

  void note_acquired_locked() noexcept {
    ++in_use_;
    ++acquired_;
    peak_in_use_ = std::max(peak_in_use_, in_use_);
  }

  // Outside the lock: makes the handed-out pointer (its deleter gives `home` back) and the tensor.
  Result<TensorDyn> hand_out(std::shared_ptr<Storage> home, TensorDyn proto, bool zero) {
    home->renew_id();  // each acquisition is an allocation for BufferIdentity
    Storage* raw = home.get();
    std::shared_ptr<Storage> out;
    try {
      out = std::shared_ptr<Storage>(raw, Recycler{shared_from_this(), std::move(home)});
    } catch (const std::bad_alloc&) {  // the deleter already ran: the buffer is back in the pool
      return fail(ErrorCode::OutOfMemory, text::format("pool '{}': out of memory handing out a buffer", name_));
    }
    TensorDyn t = TensorAccess::with_storage(std::move(proto), std::move(out));
    if (zero) {
      ET_TRY_ASSIGN(auto m, t.map_write());
      std::memset(m.data(), 0, m.extent_bytes());
    }
    return t;
  }

  // `waited`: acquire (not try_acquire); `timed`: its timeout was above 0, so ETIMEDOUT (else EAGAIN).
  Error busy_error_locked(bool waited, bool timed, std::chrono::milliseconds elapsed) const {
    const std::size_t pending = static_cast<std::size_t>(std::count_if(free_.begin(), free_.end(), [](const Slot& s) { return s.fenced; }));
    std::string how = waited ? text::format("after waiting {} ms", elapsed.count()) : "(try_acquire does not wait)";
    std::string device = pending == 0 ? std::string()
                                      : text::format(", {} more back but waiting for device work recorded on {} "
                                                     "(cuda::CudaMap::record, or a channel release fence)",
                                                     pending, pending == 1 ? "it" : "them");
    return Error(ErrorCode::Busy,
                 text::format("pool '{}': no buffer free {}: {} of max_buffers {} in use{}; drop the pool's tensors "
                             "(with their views and maps) sooner, or raise max_buffers",
                             name_, how, in_use_, max_, device),
                 timed ? ETIMEDOUT : EAGAIN);
  }

  const std::string name_;
  const std::size_t max_;
  const bool zero_on_reuse_;
  const std::function<Result<void>()> on_wait_;
  AllocateOptions allocate_;  // name_ as the tensors' name
  const std::optional<ImageLayout> layout_;
  const std::vector<std::size_t> shape_;
  const DType dtype_;
  const std::size_t packed_bytes_;

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  // Guarded by mutex_:
  std::optional<TensorDyn> proto_;  // the description of every tensor handed out (no storage)
  std::vector<Slot> free_;          // LIFO: the last buffer back is the warmest
  std::size_t allocated_ = 0;       // buffers that exist: free + in use
  std::size_t allocating_ = 0;      // allocations under way outside the lock (count against max_)
  std::size_t in_use_ = 0;
  std::size_t waiters_ = 0;  // threads in cv_.wait_until
  std::vector<std::weak_ptr<PoolRecall>> recalls_;  // add_pool_recall's (pool_wait.h)
  PoolWaitHook* hooks_ = nullptr;  // acquires waiting through a hook (pool_wait.h), in its wait()
  std::size_t peak_in_use_ = 0;
  std::uint64_t acquired_ = 0;
  std::uint64_t waits_ = 0;
  std::uint64_t timeouts_ = 0;
  bool closed_ = false;
};

namespace {

Result<void> check_options(const PoolOptions& o) {
  ET_TRY(check_c_string(o.name, "PoolOptions::name"));  // it names each buffer's memfd or DMA-BUF
  if (o.max_buffers == 0) return fail(ErrorCode::InvalidArgument, text::format("pool '{}': max_buffers is 0", o.name));
  if (o.min_buffers > o.max_buffers)
    return fail(ErrorCode::InvalidArgument, text::format("pool '{}': min_buffers {} exceeds max_buffers {}", o.name,
                                                        o.min_buffers, o.max_buffers));
  if (!o.allocate.shm_name.empty())
    return fail(ErrorCode::InvalidArgument,
                text::format("pool '{}': AllocateOptions::shm_name '{}' names one object, a pool needs up to {}; "
                            "leave it empty (each buffer is an anonymous memfd)",
                            o.name, o.allocate.shm_name, o.max_buffers));
  return {};
}

Result<void> preallocate(PoolState& state, std::size_t min_buffers) {
  for (std::size_t i = 0; i < min_buffers; ++i) {
    if (auto r = state.preallocate(); !r) {
      state.close();  // frees the buffers made so far
      return fail(std::move(r).error());
    }
  }
  return {};
}

}  // namespace
}  // namespace detail

Pool::Pool(std::shared_ptr<detail::PoolState> state) noexcept : state_(std::move(state)) {}
Pool::Pool(Pool&& other) noexcept = default;
Pool& Pool::operator=(Pool&& other) noexcept {
  if (this != &other) {
    if (state_) state_->close();
    state_ = std::move(other.state_);
  }
  return *this;
}
Pool::~Pool() {
  if (state_) state_->close();
}

Result<Pool> Pool::create(ArrayRef<std::size_t> shape, DType dtype, const PoolOptions& options) {
  ET_TRY(detail::check_options(options));
  if (!dtype_is_valid(dtype))
    return fail(ErrorCode::InvalidArgument, text::format("pool '{}': invalid dtype {}", options.name, static_cast<int>(dtype)));
  if (shape.size() > kMaxRank)
    return fail(ErrorCode::InvalidArgument,
                text::format("pool '{}': rank {} exceeds the maximum rank {}", options.name, shape.size(), kMaxRank));
  std::array<std::int64_t, kMaxRank> strides{};
  ET_TRY_ASSIGN(std::size_t bytes, detail::contiguous_strides<std::size_t>(
                                       shape.span(), dtype_size(dtype), {strides.data(), shape.size()},
                                       text::format("pool '{}' {}", options.name, dtype_name(dtype))));
  if (bytes == 0)
    return fail(ErrorCode::InvalidArgument,
                text::format("pool '{}': shape [{}] has zero elements: its buffers would hold no bytes to reuse",
                            options.name, text::join(shape, ", ")));
  auto state = std::make_shared<detail::PoolState>(options, std::nullopt,
                                                   std::vector<std::size_t>(shape.begin(), shape.end()), dtype, bytes);
  ET_TRY(detail::preallocate(*state, options.min_buffers));
  return Pool(std::move(state));
}

Result<Pool> Pool::create_image(const ImageLayout& layout, const PoolOptions& options) {
  ET_TRY(detail::check_options(options));
  // The layout's own errors, prefixed with the pool as create()'s are (ImageLayout::make builds a layout
  // with its strides from width, height and format).
  auto in_pool = [&](const Error& e) {
    return Error(e.code(), text::format("pool '{}': {}", options.name, e.message()), e.sys_errno());
  };
  if (auto v = layout.validate(); !v) return fail(in_pool(v.error()));
  auto min_bytes = layout.min_buffer_bytes();
  if (!min_bytes) return fail(in_pool(min_bytes.error()));
  const std::size_t bytes = *min_bytes;
  // Planes that share bytes are refused here, not at the first acquire (validate() alone does not look).
  if (auto v = layout.validate(bytes); !v) return fail(in_pool(v.error()));
  auto state = std::make_shared<detail::PoolState>(options, layout, std::vector<std::size_t>{bytes}, DType::U8, bytes);
  ET_TRY(detail::preallocate(*state, options.min_buffers));
  return Pool(std::move(state));
}

Result<TensorDyn> Pool::acquire(std::chrono::milliseconds timeout) {
  if (!state_) return fail(ErrorCode::FailedPrecondition, "Pool::acquire: the pool was moved from");
  if (timeout.count() < 0)
    return fail(ErrorCode::InvalidArgument,
                text::format("pool '{}': acquire timeout {} ms is negative", state_->name(), timeout.count()));
  return state_->acquire(timeout, true);
}

namespace detail {
struct PoolAccess {
  static PoolState* state(Pool& pool) noexcept { return pool.state_.get(); }
};
}  // namespace detail

bool detail::add_pool_recall(const std::shared_ptr<Storage>& storage, const std::shared_ptr<PoolRecall>& recall) {
  PoolState* pool = PoolState::of(storage);
  if (pool == nullptr) return false;
  pool->add_recall(recall);
  return true;
}

Result<TensorDyn> detail::acquire_with_hook(Pool& pool, std::chrono::milliseconds timeout, PoolWaitHook& hook) {
  PoolState* state = PoolAccess::state(pool);
  if (!state) return fail(ErrorCode::FailedPrecondition, "Pool::acquire: the pool was moved from");
  if (timeout.count() < 0)
    return fail(ErrorCode::InvalidArgument,
                text::format("pool '{}': acquire timeout {} ms is negative", state->name(), timeout.count()));
  return state->acquire(timeout, true, &hook);
}

Result<TensorDyn> Pool::try_acquire() {
  if (!state_) return fail(ErrorCode::FailedPrecondition, "Pool::try_acquire: the pool was moved from");
  return state_->acquire(std::chrono::milliseconds(0), false);
}

PoolStats Pool::stats() const { return state_ ? state_->stats() : PoolStats{}; }

const std::string& Pool::name() const noexcept {
  static const std::string none;
  return state_ ? state_->name() : none;
}
std::size_t Pool::max_buffers() const noexcept { return state_ ? state_->max_buffers() : 0; }
std::size_t Pool::packed_bytes() const noexcept { return state_ ? state_->packed_bytes() : 0; }

}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
