// SPDX-License-Identifier: Apache-2.0
#include "core/storage.h"

#include <algorithm>
#include <new>
#include <thread>

#include "text/format.h"

#include "base/log_internal.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

namespace {

// What ~Storage could not free because device work on it outlived its bound: kept for the process's
// life, never unmapped while a device may write it. Reachable from a static pointer (leak checkers do
// not report it) and never destroyed, not even at exit, where the device may still run.
struct Abandoned {
  std::mutex mutex;
  std::vector<std::unique_ptr<Backing>> backings;
  std::vector<std::unique_ptr<DeviceHandle>> devices;
  std::vector<std::shared_ptr<void>> keep_alives;  // the owners of abandoned imports: never dropped either
  std::size_t count = 0;
};
Abandoned& abandoned() {
  static auto* list = new Abandoned;  // never deleted: see above
  return *list;
}

}  // namespace

std::size_t abandoned_storage_count() noexcept {
  std::lock_guard lock(abandoned().mutex);
  return abandoned().count;
}

std::uint64_t next_storage_id() noexcept {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

Result<UniqueFd> Backing::export_fd() const {
  return fail(ErrorCode::Unsupported,
              text::format("{} tensor is not shareable by fd ({})", memory_kind_name(kind()), detail()));
}

Result<std::byte*> Backing::cpu_address() {
  return fail(ErrorCode::Unsupported, text::format("{} ({}) has no persistent CPU mapping; map it to reach its bytes",
                                                  memory_kind_name(kind()), detail()));
}

Storage::Storage(std::unique_ptr<Backing> backing)
    : id_(next_storage_id()),
      backing_(std::move(backing)),
      registered_(backing_->fd() >= 0),
      bracket_(backing_->needs_cpu_access_bracket()) {
  // An object reachable by fd may be imported again: its storages share one key (tensor.h, BufferKey).
  if (registered_) buffer_key_.store(register_buffer_key(kind(), backing_->object_key()), std::memory_order_relaxed);
}

void Storage::mark_channel_import() noexcept {
  if (!registered_ || channel_import_) return;
  channel_import_ = true;
  mark_buffer_key_received(kind(), backing_->object_key());
}

Storage::~Storage() {
  if (registered_) release_buffer_key(kind(), backing_->object_key(), channel_import_);
  std::lock_guard lock(device_mutex_);
  if (!await_fences_locked()) {
    abandon_locked();
    return;
  }
  // Device handles (CUDA) go first, while the memory they point into still exists.
  fences_.clear();
  device_.reset();
}

// Polls the fences with sleeps that back off (50 us doubling to 5 ms) rather than blocking in
// cudaEventSynchronize: that call has no timeout (CUDA Runtime API, "Event Management"), while
// cudaEventQuery answers cudaErrorNotReady at once, so the bound holds.
bool Storage::await_fences_locked() noexcept {
  using Clock = std::chrono::steady_clock;
  std::erase_if(fences_, [](const std::unique_ptr<DeviceFence>& f) { return f->complete(); });
  if (fences_.empty()) return true;
  bool bounded = true;
  std::chrono::milliseconds bound{0};
  for (const auto& f : fences_) {
    const auto t = f->teardown_timeout();
    if (t.count() < 0) bounded = false;
    bound = std::max(bound, t);
  }
  const auto start = Clock::now();
  if (bound >= std::chrono::duration_cast<std::chrono::milliseconds>(Clock::time_point::max() - start)) bounded = false;
  const auto deadline = bounded ? start + bound : Clock::time_point::max();
  auto pause = std::chrono::microseconds(50);
  for (;;) {
    std::erase_if(fences_, [](const std::unique_ptr<DeviceFence>& f) { return f->complete(); });
    const auto now = Clock::now();
    if (fences_.empty()) {
      log(LogLevel::Info, "storage {} of {} memory ({}, {} B): waited {} ms for device work recorded on it before freeing it",
          id_, memory_kind_name(kind()), backing_->detail(), buffer_bytes(),
          std::chrono::duration_cast<std::chrono::milliseconds>(now - start).count());
      return true;
    }
    if (bounded && now >= deadline) return false;
    std::this_thread::sleep_for(bounded ? std::min<Clock::duration>(pause, deadline - now) : Clock::duration(pause));
    pause = std::min(pause * 2, std::chrono::microseconds(5000));
  }
}

void Storage::abandon_locked() noexcept {
  std::size_t pending = fences_.size();
  std::chrono::milliseconds bound{0};
  for (const auto& f : fences_) bound = std::max(bound, f->teardown_timeout());
  log(LogLevel::Warning,
      "storage {} of {} memory ({}, {} B): device work recorded on it ({} pending) is still running after the teardown "
      "bound of {} ms (cuda::CudaMap::record's teardown_timeout): its memory is leaked, never unmapped while a "
      "device may write it",
      id_, memory_kind_name(kind()), backing_->detail(), buffer_bytes(), pending, bound.count());
  // cudaEventDestroy of an event that has not completed returns at once and CUDA frees it when the
  // work completes (CUDA Runtime API, cudaEventDestroy): the events may go; the memory may not.
  fences_.clear();
  Abandoned& a = abandoned();
  std::lock_guard lock(a.mutex);
  ++a.count;
  try {
    a.devices.reserve(a.devices.size() + 1);
    a.backings.reserve(a.backings.size() + 1);
    if (keep_alive_) a.keep_alives.reserve(a.keep_alives.size() + 1);
  } catch (...) {
    (void)device_.release();  // no room to keep them: lose them instead (still never freed)
    (void)backing_.release();
    if (keep_alive_) (void)new (std::nothrow) std::shared_ptr<void>(std::move(keep_alive_));  // kept, never dropped
    return;
  }
  if (keep_alive_) a.keep_alives.push_back(std::move(keep_alive_));
  if (device_) a.devices.push_back(std::move(device_));
  a.backings.push_back(std::move(backing_));
}

void Storage::renew_id() noexcept { id_ = next_storage_id(); }

Result<std::byte*> Storage::acquire_cpu(MapMode mode, std::chrono::milliseconds wait_timeout) {
  if ((static_cast<unsigned>(mode) & static_cast<unsigned>(MapMode::Write)) && backing_->read_only())
    return fail(ErrorCode::PermissionDenied,
                text::format("write map refused: {} storage ({}) is read-only", memory_kind_name(kind()),
                            backing_->detail()));
  if (has_access_fences_.load(std::memory_order_acquire)) {
    const auto start = std::chrono::steady_clock::now();
    ET_TRY(await_access_fences(wait_timeout, static_cast<unsigned>(mode) & static_cast<unsigned>(MapMode::Write)
                                                 ? "write map"
                                                 : "read map"));
    // One bound for the map: the DMA-BUF's own wait below gets what is left of it.
    if (wait_timeout.count() > 0 && wait_timeout != std::chrono::milliseconds::max())
      wait_timeout = std::max(std::chrono::milliseconds(0),
                              wait_timeout - std::chrono::duration_cast<std::chrono::milliseconds>(
                                                 std::chrono::steady_clock::now() - start));
  }
  if (!bracket_) {
    // Persistent mapping, no hooks: after the first map, a map is one atomic load and one add.
    ET_TRY_ASSIGN(std::byte* base, cpu_address());
    open_maps_.fetch_add(1, std::memory_order_relaxed);
    return base;
  }
  std::lock_guard lock(map_mutex_);
  if (open_maps_.load(std::memory_order_relaxed) == 0) {
    // Under the lock, as START is: a second map waits for this one's bracket instead of racing it.
    ET_TRY(backing_->await_device(mode, wait_timeout));
    ET_TRY_ASSIGN(base_, backing_->begin_cpu_access(mode));
    bracket_modes_ = 0;
  } else if (backing_->single_map()) {
    return fail(ErrorCode::Busy, text::format("{} ({}) is already mapped; it allows one CPU map at a time",
                                             memory_kind_name(kind()), backing_->detail()));
  }
  bracket_modes_ |= static_cast<unsigned>(mode);
  open_maps_.fetch_add(1, std::memory_order_relaxed);
  return base_;
}

void Storage::release_cpu(MapMode mode) noexcept {
  (void)mode;
  if (!bracket_) {
    if (open_maps_.fetch_sub(1, std::memory_order_relaxed) <= 0) {
      open_maps_.fetch_add(1, std::memory_order_relaxed);
      log(LogLevel::Error, "release_cpu without an open map on storage {}", id_);
    }
    return;
  }
  std::lock_guard lock(map_mutex_);
  int open = open_maps_.load(std::memory_order_relaxed);
  if (open <= 0) {
    log(LogLevel::Error, "release_cpu without an open map on storage {}", id_);
    return;
  }
  open_maps_.store(open - 1, std::memory_order_relaxed);
  if (open == 1) backing_->end_cpu_access(static_cast<MapMode>(bracket_modes_));
}

int Storage::open_map_count() const { return open_maps_.load(std::memory_order_relaxed); }

Result<std::byte*> Storage::cpu_address() {
  if (bracket_) return backing_->Backing::cpu_address();  // Unsupported, naming the backing
  std::byte* base = persistent_base_.load(std::memory_order_acquire);
  if (base) return base;
  std::lock_guard lock(map_mutex_);
  base = persistent_base_.load(std::memory_order_relaxed);
  if (!base) {
    ET_TRY_ASSIGN(base, backing_->cpu_address());
    persistent_base_.store(base, std::memory_order_release);
  }
  return base;
}

Result<DeviceHandle*> Storage::device_handle(
    const std::function<Result<std::unique_ptr<DeviceHandle>>(Storage&)>& make) {
  std::lock_guard lock(device_mutex_);
  if (!device_) {
    ET_TRY_ASSIGN(device_, make(*this));
  }
  return device_.get();
}

DeviceHandle* Storage::existing_device_handle() const {
  std::lock_guard lock(device_mutex_);
  return device_.get();
}

void Storage::keep_fence(std::unique_ptr<DeviceFence> fence) {
  std::lock_guard lock(device_mutex_);
  // A storage that is never returned (not a pool's or a channel's) would otherwise collect every event.
  std::erase_if(fences_, [](const std::unique_ptr<DeviceFence>& f) { return f->complete(); });
  fences_.push_back(std::move(fence));
  has_fences_.store(true, std::memory_order_release);
}

bool Storage::device_work_complete() noexcept {
  // A release of the last holder (an acq_rel count) orders every keep_fence before this load.
  if (!has_fences_.load(std::memory_order_acquire)) return true;
  std::lock_guard lock(device_mutex_);
  std::erase_if(fences_, [](const std::unique_ptr<DeviceFence>& f) { return f->complete(); });
  has_fences_.store(!fences_.empty(), std::memory_order_release);
  return fences_.empty();
}

void Storage::add_access_fence(std::shared_ptr<const AccessFence> fence) {
  std::lock_guard lock(device_mutex_);
  access_fences_.push_back(std::move(fence));
  has_access_fences_.store(true, std::memory_order_release);
}

Result<void> Storage::await_access_fences(std::chrono::milliseconds timeout, std::string_view what) {
  if (!has_access_fences_.load(std::memory_order_acquire)) return {};
  std::vector<std::shared_ptr<const AccessFence>> fences;
  {
    std::lock_guard lock(device_mutex_);
    fences = access_fences_;
  }
  // One bound for all of them: each waits for what is left of it. Waited outside the lock.
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const bool bounded = timeout.count() >= 0 &&
                       timeout < std::chrono::duration_cast<std::chrono::milliseconds>(Clock::time_point::max() - start);
  for (const auto& f : fences) {
    std::chrono::milliseconds left = timeout;
    if (bounded)
      left = std::max(std::chrono::milliseconds(0),
                      timeout - std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start));
    if (auto r = f->wait(left); !r)
      return fail(Error(r.error().code(),
                        text::format("{} of {} ({}, {} B): {}", what, memory_kind_name(kind()), backing_->detail(),
                                     buffer_bytes(), r.error().message()),
                        r.error().sys_errno()));
  }
  std::lock_guard lock(device_mutex_);
  std::erase_if(access_fences_, [&](const std::shared_ptr<const AccessFence>& f) {
    return std::find(fences.begin(), fences.end(), f) != fences.end();
  });
  has_access_fences_.store(!access_fences_.empty(), std::memory_order_release);
  return {};
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
