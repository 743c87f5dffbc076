// SPDX-License-Identifier: Apache-2.0
// channel::Sender's state (sender.h): choosing buffer ids (announce, retire, LRU), sending a frame,
// and the reader thread that reads releases and drops the references held for them.
#include "channel/sender.h"

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <array>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <new>
#include <optional>
#include <thread>
#include <vector>

#include "text/format.h"

#include "channel/channel_socket.h"
#include "channel/channel_wire.h"
#include "base/log_internal.h"
#include "core/storage.h"
#include "ipc/ipc_checks.h"
#include "ipc/ipc_codec.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

// The buffer id of `buffer`, choosing a new one (and the buffers to retire first) when it is not
// announced. `frame_ids`: the ids this frame names already (never retired for it). A retired entry stays
// in the table, in `retire`, until its retire message has gone (retired_locked). Under mutex_.
Result<std::uint32_t> ChannelSender::buffer_id_locked(const TensorDyn& buffer, std::span<const std::uint32_t> frame_ids,
                                                      std::vector<std::uint32_t>& retire, bool& announce) {
  const std::uint64_t key = buffer.buffer_key().value();
  for (auto& [id, a] : table_)
    if (a.key == key && std::find(retire.begin(), retire.end(), a.id) == retire.end()) {
      a.last_used = ++use_clock_;
      // Another import of the same buffer (one key): it keeps the entry alive from now on.
      if (a.storage.expired()) a.storage = storage_of(buffer);
      announce = false;
      return a.id;
    }
  auto retirable = [&](const Announced& a) {
    return a.out == 0 && std::find(frame_ids.begin(), frame_ids.end(), a.id) == frame_ids.end() &&
           std::find(retire.begin(), retire.end(), a.id) == retire.end();
  };
  // Before an announce: retire every buffer whose last tensor here is gone (the receiver would keep its
  // memory alive), then, if still full, the least recently sent buffer with no frame out.
  for (const auto& [id, a] : table_)
    if (retirable(a) && is_dead(a)) retire.push_back(a.id);
  if (table_.size() - retire.size() >= table_limit_) {
    const Announced* lru = nullptr;
    for (const auto& [id, a] : table_)
      if (retirable(a) && (lru == nullptr || a.last_used < lru->last_used)) lru = &a;
    if (lru == nullptr)
      return fail(ErrorCode::Busy,
                  text::format("{}: all {} announced buffers (SenderOptions::max_buffers) have frames the receiver has "
                               "not released; wait for releases or raise max_buffers on both ends",
                               label_, table_limit_));
    retire.push_back(lru->id);
    // Evicted alive: should it come back, that is churn. Bounded: forgetting old keys only misses a count.
    if (evicted_alive_.size() >= 4 * channel::kMaxChannelBuffers) evicted_alive_.clear();
    evicted_alive_.insert(lru->key);
  }
  if (evicted_alive_.erase(key) != 0) {
    ++stats_.reannounces;
    if (!churn_warned_) {
      churn_warned_ = true;
      log(LogLevel::Warning,
          "{}: buffer {} announced again after it was evicted alive: the buffer table (SenderOptions::max_buffers {}) is "
          "smaller than the buffers sent, so frames pay an fd, an import and a mapping each; raise max_buffers on both "
          "ends to the pool's size, or acquire through Sender::acquire (warned once; SenderStats::reannounces counts)",
          label_, key, table_limit_);
    }
  }
  const std::shared_ptr<Storage>& storage = storage_of(buffer);
  const std::uint32_t id = next_id_++;
  table_.emplace(id, Announced{id, key, storage, storage->pooled(), storage->registered(), storage->kind(),
                              storage->backing().object_key(), ++use_clock_, 0});
  announce = true;
  return id;
}

namespace {

// A release fence kept on a pooled buffer's storage: the pool hands the buffer out again only once it has
// signalled (Storage::device_work_complete), and the storage's teardown waits for it, bounded.
class ReleaseFence final : public DeviceFence {
 public:
  explicit ReleaseFence(sync::Fence fence) noexcept : fence_(std::move(fence)) {}
  bool complete() noexcept override {
    auto r = fence_.is_signalled();
    if (r) return *r;
    log(LogLevel::Warning, "channel release fence (sync_file fd {}): {}; taken as signalled", fence_.fd(),
        r.error().to_string());
    return true;
  }
  std::chrono::milliseconds teardown_timeout() const noexcept override { return channel::kReleaseFenceTeardownTimeout; }

 private:
  sync::Fence fence_;
};

// What is left of `deadline` for a fence wait; milliseconds::max() (no bound) for one that never expires.
std::chrono::milliseconds left_until(ChannelClock::time_point deadline) {
  if (deadline == ChannelClock::time_point::max()) return std::chrono::milliseconds::max();
  const auto now = ChannelClock::now();
  return now >= deadline ? std::chrono::milliseconds(0) : std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
}

}  // namespace

Result<std::uint8_t> ChannelSender::fence_mask_for(std::span<const sync::Fence* const> fences,
                                                   ChannelClock::time_point deadline) {
  std::uint8_t mask = 0;
  for (std::size_t b = 0; b < fences.size(); ++b)
    if (fences[b] && !fences[b]->is_signalled_without_fd()) mask = static_cast<std::uint8_t>(mask | (1u << b));
  if (mask == 0) return mask;
  {
    // The receiver's hello says whether it takes fences; a send that comes first waits for it.
    std::unique_lock lock(mutex_);
    auto hello = [&] { return peer_max_buffers_ != 0 || closed_.has_value(); };
    std::optional<ReaderWanted> wanted;
    if (!hello()) wanted.emplace(*this);
    if (deadline == ChannelClock::time_point::max()) {
      drained_.wait(lock, hello);
    } else {
      drained_.wait_until(lock, deadline, hello);
    }
    if (closed_) return fail(closed_error_locked());
    if (peer_fences_) return mask;
  }
  // A receiver without the capability (an older one, or no hello in time) gets the frame once its writers
  // are done: the fence is kept, only later.
  std::uint64_t waited = 0;
  for (std::size_t b = 0; b < fences.size(); ++b) {
    if (!(mask & (1u << b))) continue;
    if (auto r = fences[b]->wait(left_until(deadline)); !r) {
      // The hello's wait may have used the whole send_timeout: the fence's 0 ms check is still a timeout.
      const bool timed_out = r.error().code() == ErrorCode::Busy && options_.send_timeout.count() > 0;
      return fail(Error(timed_out ? ErrorCode::Timeout : r.error().code(),
                        text::format("{}: the receiver's hello does not carry the fence capability, so the send waits "
                                     "for the acquire fence of buffer {} itself (SenderOptions::send_timeout, {} ms): {}",
                                     label_, b, options_.send_timeout.count(), r.error().message()),
                        timed_out ? ETIMEDOUT : r.error().sys_errno()));
    }
    ++waited;
  }
  std::lock_guard lock(mutex_);
  stats_.acquire_fences_waited += waited;
  return std::uint8_t{0};
}

Result<std::uint64_t> ChannelSender::send(std::span<const TensorDyn> buffers, std::span<const std::byte> embedded,
                                          ChannelMessage type, const channel::SendOptions& options,
                                          std::span<const sync::Fence* const> fences) {
  std::lock_guard send_lock(send_mutex_);
  reset_wait_check_stop();
  if (buffers.size() > options_.max_buffers)
    return fail(ErrorCode::InvalidArgument,
                text::format("{}: a frame of {} buffers needs SenderOptions::max_buffers >= {} (it is {})", label_,
                             buffers.size(), buffers.size(), options_.max_buffers));
  std::array<int, kMaxPlanes> fds{};
  for (std::size_t b = 0; b < buffers.size(); ++b) {
    ET_TRY_ASSIGN(fds[b], sendable_fd(buffers[b], buffers.size() == 1 ? label_ : text::format("{}: buffer {}", label_, b)));
  }
  // Fences first: a receiver without the capability makes the send wait on them (send_timeout, whatever
  // the policy: this wait is the producer's device, not the receiver), before anything goes out.
  ET_TRY_ASSIGN(const std::uint8_t fence_mask, fence_mask_for(fences, deadline_after(options_.send_timeout)));
  std::array<int, kMaxPlanes> fence_fds{};
  std::size_t fence_count = 0;
  for (std::size_t b = 0; b < buffers.size(); ++b)
    if (fence_mask & (1u << b)) fence_fds[fence_count++] = fences[b]->fd();
  std::array<std::uint32_t, kMaxPlanes> ids{};
  std::array<bool, kMaxPlanes> announce{};
  std::vector<std::uint32_t> retire;
  std::uint64_t sequence = 0;
  // Undoes the new entries of buffers [from, buffers.size()) whose announce did not go out.
  auto forget_new = [&](std::size_t from) {
    std::lock_guard lock(mutex_);
    for (std::size_t k = from; k < buffers.size(); ++k)
      if (announce[k]) table_.erase(ids[k]);
  };
  // One deadline for the whole send: room in the buffer table, then room in the socket. Drop never waits.
  const bool drop = policy().first == channel::ReceiverPolicy::Drop;
  const auto timeout = drop ? std::chrono::milliseconds(0) : options_.send_timeout;
  const ipc::InterruptCheck* const check = current_wait_check();  // channel::ScopedWaitCheck
  const Wait wait{deadline_after(timeout), timeout, nullptr, check};
  const auto deadline = wait.deadline;
  {
    std::unique_lock lock(mutex_);
    if (closed_) return fail(closed_error_locked());
    if (ended_)
      return fail(ErrorCode::FailedPrecondition,
                  text::format("{}: the stream ended (Sender::end_stream): no frame follows", label_));
    if (!options.sequence && last_sequence_ && *last_sequence_ == std::numeric_limits<std::uint64_t>::max())
      return fail(ErrorCode::OutOfRange, text::format("{}: no sequence follows {}, the largest (the last frame's): "
                                                      "end the stream",
                                                      label_, *last_sequence_));
    sequence = options.sequence.value_or(last_sequence_ ? *last_sequence_ + 1 : 0);
    if (last_sequence_ && sequence <= *last_sequence_)
      return fail(ErrorCode::InvalidArgument,
                  text::format("{}: sequence {} after {}: sequences must increase", label_, sequence, *last_sequence_));
    auto assign_ids = [&]() -> Result<void> {
      if (at_frame_limit_locked())
        return fail(ErrorCode::Busy, text::format("{}: the receiver holds {} frames (SenderOptions::max_frames_out {})",
                                                  label_, frames_out_.size(), max_frames_out_));
      retire.clear();
      for (std::size_t b = 0; b < buffers.size(); ++b) {
        auto id = buffer_id_locked(buffers[b], std::span(ids.data(), b), retire, announce[b]);
        if (!id) {  // undo this frame's new entries: nothing of it was sent
          for (std::size_t k = 0; k < b; ++k)
            if (announce[k]) table_.erase(ids[k]);
          return fail(std::move(id).error());
        }
        ids[b] = *id;
      }
      return {};
    };
    // A full table (Busy: every announced buffer has a frame out) waits for a release, which the reader
    // thread handles and signals, until the deadline: a release already on its way frees a slot.
    std::optional<ReaderWanted> wanted;  // every way out of the loop holds the lock
    bool read_here = false;
    for (;;) {
      auto assigned = assign_ids();
      if (assigned) break;
      if (assigned.error().code() != ErrorCode::Busy) return fail(std::move(assigned).error());
      // The releases that would make room may be on the socket, unread while the reader stands back
      // (a Publisher's frames of Pool buffers): read them here once, then look again (a Drop receiver at
      // its limit that released its frame gets this one).
      if (!read_here && now_standing_back_locked()) {
        read_here = true;
        lock.unlock();
        read_pending(ChannelClock::now() + kReadInProgressWait);
        lock.lock();
        if (closed_) return fail(closed_error_locked());
        continue;
      }
      if (drop) return dropped_locked(sequence);
      if (!wanted) wanted.emplace(*this);
      // With a ScopedWaitCheck, in slices: the check runs between them, without the lock.
      const auto until = check == nullptr ? deadline : std::min(deadline, ChannelClock::now() + channel::kWaitCheckInterval);
      const bool timed_out = until == ChannelClock::time_point::max()
                                 ? (drained_.wait(lock), false)
                                 : drained_.wait_until(lock, until) == std::cv_status::timeout;
      if (timed_out && until != deadline) {
        lock.unlock();
        auto checked = run_wait_check(*check);
        lock.lock();
        if (!checked) return fail(std::move(checked).error());  // nothing of this frame went out
        if (closed_) return fail(closed_error_locked());
        continue;
      }
      if (timed_out) {
        if (!assign_ids()) {
          const Error& e = assigned.error();
          return fail(e.code(), text::format("{} (waited SenderOptions::send_timeout, {} ms)", e.message(),
                                             options_.send_timeout.count()));
        }
        break;
      }
      if (closed_) return fail(closed_error_locked());
    }
  }
  // Pools of the buffers announced now call the reader back before they wait (kPublisherStandBack).
  if (recalled_by_pools_)
    for (std::size_t b = 0; b < buffers.size(); ++b)
      if (announce[b]) (void)add_pool_recall(storage_of(buffers[b]), recall_);
  // A timeout (Busy) or the thread's wait check leaves both ends in step: what went out is applied, what did
  // not is undone, and the channel stays open. Any other failure (the peer is gone, the socket failed)
  // closes it.
  auto in_step = [](const Error& e) { return e.code() == ErrorCode::Busy || wait_check_stopped(); };
  auto failed = [&](Error e) -> Unexpected {
    close(e, e.code() == ErrorCode::Unavailable);
    return fail(std::move(e));
  };
  for (std::size_t i = 0; i < retire.size(); i += kMaxRetireIds) {
    const auto part = std::span(retire).subspan(i, std::min(kMaxRetireIds, retire.size() - i));
    if (auto r = send_within(socket_.get(), encode_retire(part), {}, wait, label_); !r) {
      if (!in_step(r.error())) return failed(std::move(r).error());
      forget_new(0);  // the retires not sent stay announced
      if (drop) return dropped(sequence);
      return fail(std::move(r).error());
    }
    std::lock_guard lock(mutex_);
    for (const std::uint32_t id : part) table_.erase(id);
    stats_.retires += part.size();
  }
  for (std::size_t b = 0; b < buffers.size(); ++b) {
    if (!announce[b]) continue;
    const auto msg = encode_announce(ids[b], buffers[b].memory(), buffers[b].buffer_bytes());
    if (auto r = send_within(socket_.get(), msg, {fds[b]}, wait, label_); !r) {
      if (!in_step(r.error())) return failed(std::move(r).error());
      forget_new(b);  // buffers announced before this one stay announced
      if (drop) return dropped(sequence);
      return fail(std::move(r).error());
    }
    std::lock_guard lock(mutex_);
    ++stats_.announces;
  }
  const std::int64_t timestamp = options.timestamp_ns.value_or(monotonic_ns());
  const FrameTiming timing{options.pts_ns.value_or(kNoTime), options.duration_ns.value_or(kNoTime), options.flags};
  const auto msg =
      encode_frame(type, sequence, timestamp, std::span(ids.data(), buffers.size()), embedded, timing, fence_mask);
  {
    // Held before the frame leaves: its release may arrive before send_within returns.
    std::lock_guard lock(mutex_);
    if (closed_) return fail(closed_error_locked());
    const auto now = ChannelClock::now();
    for (std::size_t b = 0; b < buffers.size(); ++b) {
      out_.emplace(OutKey{ids[b], sequence}, Out{ids[b], sequence, buffers[b], now});
      count_out_locked(sequence);
      if (auto it = table_.find(ids[b]); it != table_.end()) ++it->second.out;
    }
  }
  if (auto r = send_within(socket_.get(), msg, ArrayRef<int>(fence_fds.data(), fence_count), wait, label_); !r) {
    if (!in_step(r.error())) return failed(std::move(r).error());
    std::vector<TensorDyn> unsent;  // not sent: nothing to wait for (dropped after the lock)
    std::lock_guard lock(mutex_);
    for (std::size_t b = 0; b < buffers.size(); ++b) {
      auto it = out_.find(OutKey{ids[b], sequence});
      if (it == out_.end()) continue;
      if (auto a = table_.find(ids[b]); a != table_.end()) --a->second.out;
      count_released_locked(sequence);
      unsent.push_back(std::move(it->second.held));
      out_.erase(it);
    }
    if (drop) return dropped_locked(sequence);
    return fail(std::move(r).error());
  }
  std::lock_guard lock(mutex_);
  last_sequence_ = sequence;
  last_frame_pooled_ = std::all_of(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(buffers.size()),
                                   [&](std::uint32_t id) {
                                     const auto it = table_.find(id);
                                     return it != table_.end() && it->second.pooled;
                                   });
  // Another buffer's owner (an import's upstream) may wait for its release with no Pool to call the
  // reader back: a reader standing back since an earlier Pool frame reads again now.
  if (!last_frame_pooled_ && now_standing_back_locked()) want_reader_locked();
  ++stats_.frames_sent;
  stats_.acquire_fences_sent += fence_count;
  return sequence;
}

Result<void> ChannelSender::end_stream() {
  std::lock_guard send_lock(send_mutex_);  // after every frame sent before it
  reset_wait_check_stop();
  std::uint64_t frames = 0;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return fail(closed_error_locked());
    if (ended_) return {};
    frames = stats_.frames_sent;
  }
  const Wait wait{deadline_after(options_.send_timeout), options_.send_timeout, nullptr, current_wait_check()};
  if (auto r = send_within(socket_.get(), encode_end_of_stream(frames), {}, wait, label_); !r) {
    if (r.error().code() == ErrorCode::Busy || wait_check_stopped()) return fail(std::move(r).error());  // not ended: call again
    Error e = std::move(r).error();
    close(e, e.code() == ErrorCode::Unavailable);
    return fail(std::move(e));
  }
  std::lock_guard lock(mutex_);
  ended_ = true;
  return {};
}

Result<void> ChannelSender::handle_message(std::span<const std::byte> bytes, std::vector<UniqueFd>& fds) {
  ET_TRY_ASSIGN(const ChannelPrefix p, decode_prefix(bytes));
  if (p.type == static_cast<std::uint8_t>(ChannelMessage::Refuse)) {  // a listening receiver's end will not serve us
    if (!fds.empty())
      return fail(ErrorCode::InvalidArgument,
                  text::format("malformed channel message: {} fd{} arrived with a refuse, which carries none",
                               fds.size(), fds.size() == 1 ? "" : "s"));
    ET_TRY_ASSIGN(const Refusal r, decode_refuse(bytes));
    return fail(refusal_error(r, "receiver"));
  }
  if (p.type != static_cast<std::uint8_t>(ChannelMessage::Hello)) return handle_release(bytes, fds);
  if (!fds.empty())
    return fail(ErrorCode::InvalidArgument,
                text::format("malformed channel message: {} fd{} arrived with the receiver's hello, which carries none",
                             fds.size(), fds.size() == 1 ? "" : "s"));
  ET_TRY_ASSIGN(const Hello h, decode_hello(bytes));
  if (h.role != ChannelRole::Receiver)
    return fail(ErrorCode::InvalidArgument, "a hello from another sender: both ends of the channel are senders");
  std::lock_guard lock(mutex_);
  if (peer_max_buffers_ != 0) return fail(ErrorCode::InvalidArgument, "a second hello from the receiver");
  peer_max_buffers_ = h.max_buffers;
  peer_fences_ = (h.capabilities & kCapabilityFences) != 0;
  size_table_locked();
  if (h.request && options_.receiver_may_choose) {
    policy_ = h.request->policy;
    max_frames_out_ = static_cast<std::size_t>(h.request->max_frames_out);
  }
  drained_.notify_all();  // a send with fences waits for the hello
  return {};
}

Result<void> ChannelSender::handle_release(std::span<const std::byte> bytes, std::vector<UniqueFd>& fds) {
  bool agreed = false;
  {
    std::lock_guard lock(mutex_);
    agreed = peer_fences_;
  }
  ET_TRY_ASSIGN(auto entries, decode_release(bytes, agreed));
  // Every fence is checked before anything is released: a refused message changes nothing.
  std::vector<std::optional<sync::Fence>> fences(entries.size());
  std::size_t next = 0;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (!(entries[i].flags & kReleaseFenced)) continue;
    if (next == fds.size()) break;
    auto f = sync::Fence::adopt(std::move(fds[next++]));
    if (!f)
      return fail(ErrorCode::InvalidArgument,
                  text::format("malformed channel message: the release fence of buffer {} sequence {} (entry {}): {}",
                               entries[i].buffer_id, entries[i].sequence, i, f.error().message()));
    fences[i] = std::move(*f);
  }
  std::size_t flagged = 0;
  for (const ReleaseEntry& e : entries) flagged += (e.flags & kReleaseFenced) ? 1 : 0;
  if (fds.size() != flagged)
    return fail(ErrorCode::InvalidArgument,
                text::format("malformed channel message: a release with {} fenced entr{} carried {} fd{}", flagged,
                             flagged == 1 ? "y" : "ies", fds.size(), fds.size() == 1 ? "" : "s"));
  std::vector<TensorDyn> dropped;
  dropped.reserve(entries.size());
  std::vector<std::pair<std::shared_ptr<Storage>, sync::Fence>> fenced;
  {
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const ReleaseEntry& e = entries[i];
      auto it = out_.find(OutKey{e.buffer_id, e.sequence});
      if (it == out_.end())
        return fail(ErrorCode::InvalidArgument,
                    text::format("the receiver released buffer {} of sequence {}, which is not out (never sent in "
                                 "that frame, or released already)", e.buffer_id, e.sequence));
      if (auto a = table_.find(e.buffer_id); a != table_.end()) --a->second.out;
      // Only a pool reuses the buffer for the producer; elsewhere the receiver's import keeps its memory.
      if (fences[i] && storage_of(it->second.held)->pooled())
        fenced.emplace_back(storage_of(it->second.held), std::move(*fences[i]));
      dropped.push_back(std::move(it->second.held));
      out_.erase(it);
      count_released_locked(e.sequence);
      ++stats_.releases;
    }
    stats_.release_fences += flagged;
    ++dropping_;
  }
  // Fenced before the reference goes: the pool takes the buffer back fenced and waits before reuse.
  for (auto& [storage, fence] : fenced) {
    try {
      storage->keep_fence(std::make_unique<ReleaseFence>(std::move(fence)));
    } catch (const std::bad_alloc&) {  // swallowed, so logged: the buffer comes back unfenced
      log(LogLevel::Warning, "{}: out of memory keeping a release fence; the pool may hand the buffer out while the "
                             "receiver's device reads it", label_);
    }
  }
  fenced.clear();
  dropped.clear();  // outside the lock: pooled buffers go back to their pools
  std::lock_guard lock(mutex_);
  --dropping_;
  drained_.notify_all();  // drain() waits for nothing out; send() for a free table slot
  return {};
}

ChannelSender::Read ChannelSender::read_one(std::span<std::byte> buf) noexcept {
  return take(receive_fds_flags(socket_.get(), buf, kMaxChannelFds, MSG_DONTWAIT), buf);
}

ChannelSender::Read ChannelSender::take(Result<ipc::Received> msg, std::span<const std::byte> buf) noexcept {
  Result<void> handled;
  if (!msg) {
    if (msg.error().sys_errno() == EAGAIN) return Read::Nothing;  // the other reader took it
    if (msg.error().code() == ErrorCode::Unavailable) {
      close(Error(ErrorCode::Unavailable, "the receiver closed the channel"), true);
      return Read::Closed;
    }
    handled = fail(std::move(msg).error());
  } else {
    handled = handle_message(buf.first(msg->size_bytes), msg->fds);
  }
  if (!handled) {
    close(std::move(handled).error(), false);
    return Read::Closed;
  }
  return Read::Message;
}

namespace {
std::atomic<std::int64_t> g_publisher_stand_back_ms{kPublisherStandBack.count()};
}  // namespace

std::chrono::milliseconds publisher_stand_back() noexcept {
  return std::chrono::milliseconds(g_publisher_stand_back_ms.load(std::memory_order_relaxed));
}

void set_publisher_stand_back_for_testing(std::chrono::milliseconds stand_back) noexcept {
  g_publisher_stand_back_ms.store(stand_back.count(), std::memory_order_relaxed);
}

void ChannelSender::read_ready() noexcept {
  {
    std::lock_guard lock(mutex_);
    if (closed_ || stopping_ || !last_frame_pooled_ || readers_wanted_ != 0 || inline_readers_ != 0) return;
    standby_until_ = ChannelClock::now() + publisher_stand_back();
  }
  read_pending();
}

void ChannelSender::read_pending(ChannelClock::time_point turn_until) noexcept {
  {
    std::lock_guard lock(mutex_);
    if (closed_ || stopping_) return;
  }
  ReadTurn reading(*this, std::max(turn_until, ChannelClock::now()));
  if (!reading) return;  // the reader thread is reading: it handles what is there
  // In the ReadTurn: this thread alone uses ready_buffers_.
  std::array<std::span<std::byte>, kMaxReadyBatch> buffers;
  for (std::size_t i = 0; i < kMaxReadyBatch; ++i)
    buffers[i] = std::span(ready_buffers_[i].data(), ready_buffers_[i].size());
  std::array<Result<ipc::Received>, kMaxReadyBatch> got;
  // Bounded: a receiver that floods its socket does not hold the caller back.
  for (std::size_t read = 0; read < kMaxReadyMessages;) {
    auto n = receive_ready(socket_.get(), buffers, kMaxChannelFds, got);
    if (!n) {
      (void)take(fail(std::move(n).error()), {});  // as read_one's: the peer gone (ECONNRESET), or a failure
      return;
    }
    for (std::size_t i = 0; i < *n; ++i)
      if (take(std::move(got[i]), buffers[i]) != Read::Message) return;
    if (*n < kMaxReadyBatch) return;
    read += *n;
  }
}

void ChannelSender::read_releases() noexcept {
  std::array<std::byte, kMaxReleaseMessageBytes + 1> buf;
  for (;;) {
    {
      // Stand back while Sender::acquire reads inline, and kReaderStandBack after it (the next acquire
      // reads what came meanwhile), unless a wait here wants the reader (want_reader_locked).
      std::unique_lock lock(mutex_);
      for (;;) {
        if (stopping_) return;
        // Timed: an acquire ending, or extending the stand-back, sends no notification.
        const auto now = ChannelClock::now();
        if (inline_readers_ != 0) {
          reader_parked_ = true;
          reader_cv_.wait_until(lock, now + kReaderStandBack);
        } else if (now < standby_until_) {
          reader_parked_ = true;
          reader_cv_.wait_until(lock, standby_until_);
        } else {
          break;
        }
      }
      reader_parked_ = false;
    }
    auto ready = wait_input(socket_.get(), -1, false, ChannelClock::time_point::max());
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      if (inline_readers_ != 0) continue;  // an acquire reads this message itself
    }
    if (!ready) {
      close(std::move(ready).error(), false);
      return;
    }
    ReadTurn reading(*this, ChannelClock::time_point::max());
    if (read_one(buf) == Read::Closed) return;
  }
}

bool ChannelSender::read_inline(ChannelClock::time_point until) noexcept {
  {
    std::lock_guard lock(mutex_);
    if (closed_ || stopping_) return false;  // a shut-down socket is always readable: wait on the pool instead
  }
  std::array<std::byte, kMaxReleaseMessageBytes + 1> buf;
  // The reader thread may be in the middle of a message, or another acquire reading: wait for it within
  // this acquire's own deadline.
  ReadTurn reading(*this, until);
  if (!reading) return true;  // the pool looks again and finds its deadline passed
  auto ready = wait_input(socket_.get(), wake_fd_.get(), false, until);
  if (!ready) return false;
  if (ready->wake) {
    std::uint64_t n = 0;
    [[maybe_unused]] auto r = ::read(wake_fd_.get(), &n, sizeof n);
  }
  if (ready->socket) return read_one(buf) != Read::Closed;
  return true;
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor

