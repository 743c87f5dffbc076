// SPDX-License-Identifier: Apache-2.0
// The state behind channel::Sender (channel.h): the announced buffers, the frames out (a copy of each
// tensor sent, held until the receiver releases it), the closing state, and the reader thread that
// reads releases (sender.cpp).
//
// Locks: send_mutex_ serialises senders (a retire, an announce and its frame go out in that order,
// unbroken); mutex_ guards the tables and counters and is held only briefly, never across a send or
// a recv. A ReadTurn makes one reader of the socket at a time (the reader thread, or Sender::acquire
// reading inline), held across the read and the handling. Order: send_mutex_ or a ReadTurn, then
// mutex_ (no thread holds both of the first two). References are dropped outside mutex_ (a pool's
// give-back takes the pool's lock).
#pragma once

#include <edgetensor/channel.h>

#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "text/format.h"

#include "channel/channel_socket.h"
#include "channel/channel_wire.h"
#include "core/storage.h"
#include "ipc/ipc_checks.h"
#include "pool/pool_wait.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

// How long the reader thread stands back after a Sender::acquire that read its releases inline: a
// producer acquiring at 20 fps or more keeps it parked, so a release wakes only the acquiring thread. The
// bound of the delay for anything else the reader serves while it stands back: a receiver's death seen,
// a buffer back for a thread waiting on the Pool itself (not through Sender::acquire). drain(), send()
// and the hello's wait call it back at once (want_reader_locked).
inline constexpr std::chrono::milliseconds kReaderStandBack{50};
// How long a Publisher's receiver's reader thread stands back after a frame whose buffers all come from
// a Pool (read_ready): the publishing thread reads the releases after each frame, so at 5 fps or more the
// reader thread wakes about 5 times a second instead of once per frame. Whatever waits for a release reads
// it or calls the reader back at once: a Pool acquire or try_acquire that finds no buffer free (PoolRecall:
// recall_reader), a send finding the receiver at its frame limit or its table full (read_pending first),
// drain(), the hello's wait, and a frame holding a buffer of no pool. What the stand-back delays: a
// receiver's death seen while no frame is sent (a send sees it at once), and a release nobody waits for.
inline constexpr std::chrono::milliseconds kPublisherStandBack{200};
// The stand-back in force: kPublisherStandBack, or what a test set (the unit tests make it long, so that
// only a call back, never the clock, ends it). Any thread.
std::chrono::milliseconds publisher_stand_back() noexcept;
void set_publisher_stand_back_for_testing(std::chrono::milliseconds stand_back) noexcept;
// How long a send that finds a receiver at its limit waits for a read of that receiver's socket already in
// progress on another thread (the reader thread handling one message) before it decides.
inline constexpr std::chrono::milliseconds kReadInProgressWait{100};
// The most messages read_ready reads before a frame.
inline constexpr std::size_t kMaxReadyMessages = 64;

class ChannelSender {
 public:
  ChannelSender(UniqueFd socket, const channel::SenderOptions& options)
      : socket_(std::move(socket)),
        options_(options),
        label_(options.name.empty() ? std::string("channel") : text::format("channel '{}'", options.name)) {}

  Result<void> start() {
    recall_ = std::make_shared<Recall>(*this);
    wake_fd_ = UniqueFd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!wake_fd_) return fail(Error::from_errno(errno, text::format("{}: eventfd for acquire's wake-ups", label_)));
    try {
      reader_ = std::thread([this] { read_releases(); });
    } catch (const std::system_error& e) {
      return fail(ErrorCode::Internal, text::format("{}: the release reader thread did not start: {}", label_, e.what()));
    }
    return {};
  }

  // The owner is going: shut the socket down (the reader and the receiver both see the end), join the
  // reader, drop every reference held.
  void stop() noexcept {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    if (recall_) recall_->detach();
    reader_cv_.notify_all();
    ::shutdown(socket_.get(), SHUT_RDWR);
    if (reader_.joinable()) reader_.join();
    close(Error(ErrorCode::FailedPrecondition, "the sender was destroyed"), false);
  }

  /// `fences`: per buffer, its acquire fence or null (channel_api.cpp spreads SendOptions::acquire_fences).
  Result<std::uint64_t> send(std::span<const TensorDyn> buffers, std::span<const std::byte> embedded,
                             ChannelMessage type, const channel::SendOptions& options,
                             std::span<const sync::Fence* const> fences);

  Result<void> end_stream();

  // The sender knows the pool now: size the table to hold all of it (as the receiver allows).
  void note_pool(std::size_t buffers) {
    std::lock_guard lock(mutex_);
    pool_buffers_ = std::max(pool_buffers_, buffers);
    size_table_locked();
  }
  // What this channel holds out ("N frame buffers sent and not released by the receiver (oldest: ...)"),
  // for a pool's Busy; nullopt when nothing is out. A scan on error paths only.
  std::optional<std::string> holding_summary() const {
    std::lock_guard lock(mutex_);
    if (out_.empty()) return std::nullopt;
    const Out* oldest = nullptr;
    for (const auto& [key, o] : out_)
      if (oldest == nullptr || o.sequence < oldest->sequence) oldest = &o;
    const auto age = std::chrono::duration_cast<std::chrono::milliseconds>(ChannelClock::now() - oldest->sent_at);
    return text::format("{} frame buffer{} sent and not released by the receiver (oldest: sequence {}, {} ms ago)",
                        out_.size(), out_.size() == 1 ? "" : "s", oldest->sequence, age.count());
  }
  // Waits for the pool reading this channel's releases on the calling thread (read_inline): the release
  // that frees the buffer wakes this thread, not the reader thread and then this one.
  Result<TensorDyn> acquire(Pool& pool, std::chrono::milliseconds timeout) {
    note_pool(pool.max_buffers());
    InlineReading hook(*this);
    auto t = acquire_with_hook(pool, timeout, hook);
    if (t || t.error().code() != ErrorCode::Busy) return t;
    auto held = holding_summary();
    if (!held) return t;
    return fail(Error(ErrorCode::Busy, text::format("{}; {}: {}", t.error().message(), label_, *held),
                      t.error().sys_errno()));  // the pool's ETIMEDOUT or EAGAIN
  }
  // A Publisher's sending thread, after each frame it sent everyone: when the last frame sent here held
  // only Pool buffers (and nothing waits for the reader), the reader thread stands back for
  // publisher_stand_back() and this thread reads the messages already there (releases), without waiting.
  void read_ready() noexcept;
  // Called by a Publisher on its new sender before any send: its frames' pools may call it back
  // (add_pool_recall; a plain Sender's reader thread never stands back but in Sender::acquire's own wait).
  void serve_publisher() noexcept { recalled_by_pools_ = true; }
  Result<void> drain(std::chrono::milliseconds timeout) {
    const auto deadline = deadline_after(timeout);
    std::unique_lock lock(mutex_);
    // Done once every reference is dropped, not only counted: a pool has its buffers back by then.
    auto done = [&] { return (out_.empty() || closed_.has_value()) && dropping_ == 0; };
    std::optional<ReaderWanted> wanted;
    if (!done()) wanted.emplace(*this);
    if (deadline == ChannelClock::time_point::max()) {
      drained_.wait(lock, done);
    } else {
      drained_.wait_until(lock, deadline, done);
    }
    // Frames released by the closing (not by the receiver) make it an error; released ones before do not.
    if (closed_ && released_by_close_) return fail(closed_error_locked());
    if (!out_.empty() || dropping_ != 0)
      return fail(Error(ErrorCode::Busy,
                        text::format("{}: {} frame buffer{} still out after {} ms", label_, out_.size(),
                                     out_.size() == 1 ? "" : "s", timeout.count()),
                        timeout.count() == 0 ? EAGAIN : ETIMEDOUT));
    return {};
  }

  // The policy and frame limit in force (the receiver's request, once granted).
  std::pair<channel::ReceiverPolicy, std::size_t> policy() const {
    std::lock_guard lock(mutex_);
    return {policy_, max_frames_out_};
  }
  channel::SenderStats stats() const {
    std::lock_guard lock(mutex_);
    channel::SenderStats s = stats_;
    s.buffers_announced = table_.size();
    s.frames_out = out_.size();
    return s;
  }

  Result<void> status() const {
    std::lock_guard lock(mutex_);
    if (closed_) return fail(closed_error_locked());
    return {};
  }

 private:
  // Sender::acquire's pool wait (pool_wait.h): counts as an inline reader from construction to
  // destruction, so the reader thread stands back while it runs.
  class InlineReading final : public PoolWaitHook {
   public:
    explicit InlineReading(ChannelSender& s) : s_(s) {
      std::lock_guard lock(s_.mutex_);
      ++s_.inline_readers_;

    }
    ~InlineReading() {
      std::lock_guard lock(s_.mutex_);
      // The reader thread stays parked a while: the next acquire reads what comes meanwhile.
      if (--s_.inline_readers_ == 0) s_.standby_until_ = ChannelClock::now() + kReaderStandBack;
    }
    bool wait(std::chrono::steady_clock::time_point until) noexcept override { return s_.read_inline(until); }
    // A buffer given back by this thread (its own read_inline) needs no wake-up.
    void wake() noexcept override {
      if (std::this_thread::get_id() != owner_) s_.kick();
    }

   private:
    ChannelSender& s_;
    const std::thread::id owner_ = std::this_thread::get_id();
  };

  // A wait on drained_ that needs the messages read now (drain, a send waiting for a table slot or for
  // the hello): the reader thread stops standing back and read_ready does not send it back while one
  // runs. Made and destroyed under mutex_.
  class ReaderWanted {
   public:
    explicit ReaderWanted(ChannelSender& s) : s_(s) {
      ++s_.readers_wanted_;
      s_.want_reader_locked();
    }
    ~ReaderWanted() { --s_.readers_wanted_; }
    ReaderWanted(const ReaderWanted&) = delete;
    ReaderWanted& operator=(const ReaderWanted&) = delete;

   private:
    ChannelSender& s_;
  };

  // Registered with the pools of the buffers announced (add_pool_recall): a pool acquire about to wait
  // calls the reader thread back. Detached by stop(); the pools hold it weakly.
  class Recall final : public PoolRecall {
   public:
    explicit Recall(ChannelSender& s) : s_(&s) {}
    // Not under mutex_ while the sender works: what it reads may run a release callback that acquires
    // from a pool again (a recall on this thread once more).
    void recall() noexcept override {
      {
        std::lock_guard lock(mutex_);
        if (s_ == nullptr) return;
        ++calls_;
      }
      s_->recall_reader();
      std::lock_guard lock(mutex_);
      if (--calls_ == 0) done_.notify_all();
    }
    // Waits for the recalls running on other threads.
    void detach() noexcept {
      std::unique_lock lock(mutex_);
      s_ = nullptr;
      done_.wait(lock, [&] { return calls_ == 0; });
    }

   private:
    std::mutex mutex_;
    std::condition_variable done_;
    ChannelSender* s_;
    int calls_ = 0;
  };

  // One reader of the socket at a time (a flag under mutex_, not a timed mutex: TSan in GCC 12 does not
  // see pthread_mutex_clocklock). Waits for the turn until `until`; false (operator bool) if it passed.
  class ReadTurn {
   public:
    ReadTurn(ChannelSender& s, ChannelClock::time_point until) : s_(s) {
      std::unique_lock lock(s_.mutex_);
      if (s_.reading_) {
        ++s_.turn_waiters_;
        auto free = [&] { return !s_.reading_; };
        if (until == ChannelClock::time_point::max()) {
          s_.read_turn_.wait(lock, free);
        } else {
          s_.read_turn_.wait_until(lock, until, free);
        }
        --s_.turn_waiters_;
        if (s_.reading_) return;
      }
      s_.reading_ = held_ = true;
    }
    ~ReadTurn() {
      if (!held_) return;
      bool wake = false;
      {
        std::lock_guard lock(s_.mutex_);
        s_.reading_ = false;
        wake = s_.turn_waiters_ != 0;
      }
      if (wake) s_.read_turn_.notify_one();
    }
    ReadTurn(const ReadTurn&) = delete;
    ReadTurn& operator=(const ReadTurn&) = delete;
    explicit operator bool() const noexcept { return held_; }

   private:
    ChannelSender& s_;
    bool held_ = false;
  };

  struct Announced {
    std::uint32_t id;
    std::uint64_t key;              // BufferKey of the buffer
    std::weak_ptr<Storage> storage; // expired: the import sent is gone (the buffer may live on: is_dead)
    bool pooled;
    bool registered;                // fd-backed: `kind` and `object` find it in the BufferKey registry
    MemoryKind kind;
    ObjectKey object;
    std::uint64_t last_used;
    std::size_t out;                // frame buffers of it out
  };
  struct Out {
    std::uint32_t id;
    std::uint64_t sequence;
    TensorDyn held;  // keeps the buffer (a pool's: out of its pool) until released
    ChannelClock::time_point sent_at;
  };
  // A frame buffer out, by (buffer id, sequence): a release finds it in constant time however many are
  // out (issue 25: a linear scan of thousands of frames out made every release slower).
  struct OutKey {
    std::uint32_t id;
    std::uint64_t sequence;
    bool operator==(const OutKey&) const = default;
  };
  struct OutKeyHash {
    std::size_t operator()(const OutKey& k) const noexcept {
      return std::hash<std::uint64_t>()(k.sequence * 0x9E3779B97F4A7C15ull ^ k.id);
    }
  };
  using OutTable = std::unordered_map<OutKey, Out, OutKeyHash>;

  // Frames out (for SenderOptions::max_frames_out): frame buffers of each sequence not released. Under mutex_.
  void count_out_locked(std::uint64_t sequence) { ++frames_out_[sequence]; }
  void count_released_locked(std::uint64_t sequence) noexcept {
    if (auto it = frames_out_.find(sequence); it != frames_out_.end() && --it->second == 0) frames_out_.erase(it);
  }
  // ReceiverPolicy::Drop: the frame is not sent; its sequence is used (the receiver sees a gap).
  std::uint64_t dropped_locked(std::uint64_t sequence) noexcept {
    last_sequence_ = sequence;
    ++stats_.frames_dropped;
    return sequence;
  }
  std::uint64_t dropped(std::uint64_t sequence) noexcept {
    std::lock_guard lock(mutex_);
    return dropped_locked(sequence);
  }
  bool at_frame_limit_locked() const noexcept {
    return max_frames_out_ != 0 && frames_out_.size() >= max_frames_out_;
  }

  // Dead: the buffer is gone, so the receiver's import would keep its memory alive. A pool's buffer never
  // is (its pool recycles it); an fd-backed buffer is alive while any storage of it in this process that
  // is not a channel receiver's import lives, though the import that was sent is gone (an upstream buffer
  // imported afresh for each frame, its memory kept by an import the caller holds: docs/GSTREAMER.md).
  static bool is_dead(const Announced& a) noexcept {
    return !a.pooled && a.storage.expired() &&
           !(a.registered && buffer_key_held_by_sender_side(a.kind, a.object, a.key));
  }

  Error closed_error_locked() const {
    if (peer_closed_)
      return Error(ErrorCode::Unavailable, text::format("{} is closed: the receiver closed it or died", label_));
    return Error(ErrorCode::FailedPrecondition, text::format("{} is closed: {}", label_, closed_->to_string()));
  }

  // Closes the channel (once): keeps why, shuts the socket down, drops every reference held.
  void close(Error why, bool peer_closed) noexcept {
    OutTable dropped;
    {
      std::lock_guard lock(mutex_);
      if (!closed_) {
        try {
          closed_.emplace(std::move(why));
        } catch (...) {
          closed_.emplace(ErrorCode::Internal, std::string());
        }
        peer_closed_ = peer_closed;
      }
      released_by_close_ = released_by_close_ || !out_.empty();
      dropped.swap(out_);
      frames_out_.clear();
      table_.clear();
      ++dropping_;
    }
    ::shutdown(socket_.get(), SHUT_RDWR);
    dropped.clear();  // outside the lock: pooled buffers go back to their pools
    std::lock_guard lock(mutex_);
    --dropping_;
    drained_.notify_all();
  }

  // The table grows to the largest pool acquired through this sender, up to the receiver's max_buffers
  // (from its hello). Under mutex_.
  void size_table_locked() noexcept {
    if (peer_max_buffers_ == 0) return;
    table_limit_ = std::max(table_limit_, std::min({pool_buffers_, peer_max_buffers_, channel::kMaxChannelBuffers}));
  }

  // The reader thread: reads and handles messages until the channel closes, standing back (parked on
  // reader_cv_) while an acquire reads inline.
  void read_releases() noexcept;
  // What read_one found.
  enum class Read { Message, Nothing, Closed };
  // Reads one message if one is there (MSG_DONTWAIT) and handles it; closes the channel on its errors.
  // In a ReadTurn.
  Read read_one(std::span<std::byte> buf) noexcept;
  // Handles one message as received into `buf` (its result from receive_fds_flags or receive_ready).
  Read take(Result<ipc::Received> msg, std::span<const std::byte> buf) noexcept;
  // PoolWaitHook::wait of InlineReading: one wait for input (socket or wake_fd_) until `until`, and the
  // message read. false once the channel is closed (the pool's condition variable waits instead).
  bool read_inline(ChannelClock::time_point until) noexcept;
  // PoolRecall: reads what is there now on the calling thread (the releases already come free their buffers
  // before the acquire looks again), and a standing-back reader thread comes back for what comes later.
  void recall_reader() noexcept {
    read_pending();
    std::lock_guard lock(mutex_);
    if (now_standing_back_locked()) want_reader_locked();
  }
  // The messages already there, read and handled on this thread without waiting (receive_ready), unless
  // another thread is reading: then it waits for that read until `turn_until` (a read in progress may be
  // the release a send needs), or, by default, leaves them to it. The channel may close here (its errors).
  void read_pending(ChannelClock::time_point turn_until = ChannelClock::time_point::min()) noexcept;
  bool now_standing_back_locked() const noexcept { return ChannelClock::now() < standby_until_; }
  // A wait on drained_ (drain, a send waiting for a table slot or for the hello) needs the messages read
  // now: the reader thread stops standing back. Under mutex_.
  void want_reader_locked() noexcept {
    standby_until_ = ChannelClock::time_point::min();
    if (reader_parked_ && inline_readers_ == 0) reader_cv_.notify_one();
  }
  // Wakes a read_inline (a buffer came back on another thread).
  void kick() noexcept {
    const std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wake_fd_.get(), &one, sizeof one);  // EAGAIN: already pending
  }
  Result<void> handle_message(std::span<const std::byte> bytes, std::vector<UniqueFd>& fds);
  Result<void> handle_release(std::span<const std::byte> bytes, std::vector<UniqueFd>& fds);
  // Fences of a send: the bits of the buffers whose fence goes with the frame; a receiver without the
  // capability gets none, its fences waited on here until `deadline`.
  Result<std::uint8_t> fence_mask_for(std::span<const sync::Fence* const> fences, ChannelClock::time_point deadline);
  Result<std::uint32_t> buffer_id_locked(const TensorDyn& buffer, std::span<const std::uint32_t> frame_ids,
                                         std::vector<std::uint32_t>& retire, bool& announce);

  UniqueFd socket_;
  const channel::SenderOptions options_;
  const std::string label_;
  std::thread reader_;
  UniqueFd wake_fd_;         // eventfd: kick() wakes a read_inline

  std::mutex send_mutex_;
  mutable std::mutex mutex_;
  std::condition_variable drained_;
  std::condition_variable reader_cv_;
  std::condition_variable read_turn_;  // a ReadTurn ended  // the reader thread parked while inline_readers_ != 0
  // Guarded by mutex_:
  std::unordered_map<std::uint32_t, Announced> table_;  // by buffer id
  OutTable out_;
  std::unordered_map<std::uint64_t, std::uint32_t> frames_out_;  // sequence -> its buffers out (count_out_locked)
  // Keys of buffers retired while alive (evicted): announcing one again is churn (SenderStats::reannounces).
  std::unordered_set<std::uint64_t> evicted_alive_;
  bool churn_warned_ = false;
  std::uint32_t next_id_ = 1;
  std::size_t table_limit_ = options_.max_buffers;  // buffers announced at once (size_table_locked)
  std::size_t pool_buffers_ = 0;                    // the largest Pool acquired through this sender
  std::size_t peer_max_buffers_ = 0;                // the receiver's, from its hello (0: none yet)
  bool peer_fences_ = false;                        // the receiver's hello carries kCapabilityFences
  bool ended_ = false;                              // end_stream() sent
  channel::ReceiverPolicy policy_ = options_.policy; // in force: options_, or the receiver's granted request
  std::size_t max_frames_out_ = options_.max_frames_out;
  std::uint64_t use_clock_ = 0;
  std::optional<std::uint64_t> last_sequence_;
  channel::SenderStats stats_;
  std::optional<Error> closed_;
  bool peer_closed_ = false;
  bool stopping_ = false;
  int inline_readers_ = 0;       // acquires reading releases themselves (InlineReading)
  bool reading_ = false;         // a ReadTurn is held
  int turn_waiters_ = 0;         // threads waiting for a ReadTurn on read_turn_
  ChannelClock::time_point standby_until_{};  // the reader thread stands back until then (kReaderStandBack)
  bool reader_parked_ = false;   // the reader thread waits on reader_cv_
  int readers_wanted_ = 0;       // ReaderWanted waits running
  bool last_frame_pooled_ = false;  // the last frame sent held only Pool buffers (read_ready)
  std::shared_ptr<Recall> recall_;  // made by start()
  bool recalled_by_pools_ = false;  // serve_publisher(); set before the first send
  // read_ready's message buffers, used in its ReadTurn only.
  std::array<std::array<std::byte, kMaxReleaseMessageBytes + 1>, kMaxReadyBatch> ready_buffers_;
  int dropping_ = 0;  // releases whose references are being dropped outside the lock
  bool released_by_close_ = false;  // the closing dropped frames the receiver had not released
};

// SenderOptions in range (channel.h). Errors: InvalidArgument naming the field, its value and the range.
Result<void> check_sender_options(const channel::SenderOptions& options, const std::string& who);
// Sender::create's checks and start, shared with channel::Publisher (channel_api.cpp). `who` names the
// caller in errors.
Result<std::shared_ptr<ChannelSender>> make_channel_sender(UniqueFd socket, const channel::SenderOptions& options,
                                                           const std::string& who);
// A frame as every receiver gets it: its buffers (1 to kMaxPlanes) and its embedded message.
struct OutgoingFrame {
  std::array<TensorDyn, kMaxPlanes> buffers;
  std::size_t count = 0;
  std::vector<std::byte> embedded;
  ChannelMessage type = ChannelMessage::TensorFrame;
  std::array<const sync::Fence*, kMaxPlanes> fences{};  // SendOptions::acquire_fences per buffer (borrowed)
  std::span<const TensorDyn> span() const noexcept { return std::span(buffers.data(), count); }
  std::span<const sync::Fence* const> fence_span() const noexcept { return std::span(fences.data(), count); }
};
// The checks every send makes before it looks at a socket, then the encoding (channel_api.cpp).
// Errors: FailedPrecondition (empty handle, zero elements, an empty frame), InvalidArgument (a negative
// duration, the wire's "none" as a pts).
// `who` names the caller in errors ("channel::Sender::send", "channel::Publisher 'cam': send").
Result<OutgoingFrame> outgoing_tensor(const TensorDyn& tensor, const channel::SendOptions& options, std::string_view who);
Result<OutgoingFrame> outgoing_frame(const Frame& frame, const channel::SendOptions& options, std::string_view who);

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
