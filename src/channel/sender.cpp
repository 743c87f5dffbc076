// SPDX-License-Identifier: Apache-2.0
// channel::Sender (channel.h). The sender keeps, per frame buffer out, a copy of the tensor it sent
// (so a pooled buffer stays out of its pool) until the receiver's release arrives; one reader thread
// per sender reads releases and drops those copies.
//
// Locks: send_mutex_ serialises senders (a retire, an announce and its frame go out in that order,
// unbroken); mutex_ guards the tables and counters and is held only briefly, never across a send or
// a recv. Order: send_mutex_, then mutex_. References are dropped outside both (a pool's give-back
// takes the pool's lock).
#include <edgetensor/channel.h>

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "text/format.h"

#include "channel/channel_socket.h"
#include "channel/channel_wire.h"
#include "core/storage.h"
#include "ipc/ipc_checks.h"
#include "ipc/ipc_codec.h"

namespace edgetensor::inline ET_ABI_NAMESPACE::detail {

class ChannelSender {
 public:
  ChannelSender(UniqueFd socket, const channel::SenderOptions& options)
      : socket_(std::move(socket)),
        options_(options),
        label_(options.name.empty() ? std::string("channel") : text::format("channel '{}'", options.name)) {}

  Result<void> start() {
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
    ::shutdown(socket_.get(), SHUT_RDWR);
    if (reader_.joinable()) reader_.join();
    close(Error(ErrorCode::FailedPrecondition, "the sender was destroyed"), false);
  }

  Result<std::uint64_t> send(std::span<const TensorDyn> buffers, std::span<const std::byte> embedded,
                             ChannelMessage type, const channel::SendOptions& options);

  Result<TensorDyn> acquire(Pool& pool, std::chrono::milliseconds timeout) {
    auto t = pool.acquire(timeout);
    if (t || t.error().code() != ErrorCode::Busy) return t;
    std::unique_lock lock(mutex_);
    if (out_.empty()) return t;
    const auto age = std::chrono::duration_cast<std::chrono::milliseconds>(ChannelClock::now() - out_.front().sent_at);
    return fail(ErrorCode::Busy,
                text::format("{}; {}: {} frame buffer{} sent and not released by the receiver (oldest: sequence {}, "
                             "{} ms ago)", t.error().message(), label_, out_.size(), out_.size() == 1 ? "" : "s",
                             out_.front().sequence, age.count()));
  }

  Result<void> drain(std::chrono::milliseconds timeout) {
    const auto deadline = deadline_after(timeout);
    std::unique_lock lock(mutex_);
    // Done once every reference is dropped, not only counted: a pool has its buffers back by then.
    auto done = [&] { return (out_.empty() || closed_.has_value()) && dropping_ == 0; };
    if (deadline == ChannelClock::time_point::max()) {
      drained_.wait(lock, done);
    } else {
      drained_.wait_until(lock, deadline, done);
    }
    // Frames released by the closing (not by the receiver) make it an error; released ones before do not.
    if (closed_ && released_by_close_) return fail(closed_error_locked());
    if (!out_.empty() || dropping_ != 0)
      return fail(ErrorCode::Busy, text::format("{}: {} frame buffer{} still out after {} ms", label_, out_.size(),
                                               out_.size() == 1 ? "" : "s", timeout.count()));
    return {};
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
  struct Announced {
    std::uint32_t id;
    std::uint64_t key;              // BufferKey of the buffer
    std::weak_ptr<Storage> storage; // expired: the buffer is gone (not for pooled storage, see is_dead)
    bool pooled;
    std::uint64_t last_used;
    std::size_t out;                // frame buffers of it out
  };
  struct Out {
    std::uint32_t id;
    std::uint64_t sequence;
    TensorDyn held;  // keeps the buffer (a pool's: out of its pool) until released
    ChannelClock::time_point sent_at;
  };

  static bool is_dead(const Announced& a) noexcept { return !a.pooled && a.storage.expired(); }

  Error closed_error_locked() const {
    if (peer_closed_)
      return Error(ErrorCode::Unavailable, text::format("{} is closed: the receiver closed it or died", label_));
    return Error(ErrorCode::FailedPrecondition, text::format("{} is closed: {}", label_, closed_->to_string()));
  }

  // Closes the channel (once): keeps why, shuts the socket down, drops every reference held.
  void close(Error why, bool peer_closed) noexcept {
    std::deque<Out> dropped;
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
      table_.clear();
      ++dropping_;
    }
    ::shutdown(socket_.get(), SHUT_RDWR);
    dropped.clear();  // outside the lock: pooled buffers go back to their pools
    std::lock_guard lock(mutex_);
    --dropping_;
    drained_.notify_all();
  }

  void read_releases() noexcept;
  Result<void> handle_release(std::span<const std::byte> bytes);
  Result<std::uint32_t> buffer_id_locked(const TensorDyn& buffer, std::vector<std::uint32_t>& retire,
                                         bool& announce);

  UniqueFd socket_;
  const channel::SenderOptions options_;
  const std::string label_;
  std::thread reader_;

  std::mutex send_mutex_;
  mutable std::mutex mutex_;
  std::condition_variable drained_;
  // Guarded by mutex_:
  std::vector<Announced> table_;
  std::deque<Out> out_;  // in send order: releases mostly come in that order
  std::uint32_t next_id_ = 1;
  std::uint64_t use_clock_ = 0;
  std::optional<std::uint64_t> last_sequence_;
  channel::SenderStats stats_;
  std::optional<Error> closed_;
  bool peer_closed_ = false;
  bool stopping_ = false;
  int dropping_ = 0;  // releases whose references are being dropped outside the lock
  bool released_by_close_ = false;  // the closing dropped frames the receiver had not released
};

// The buffer id of `buffer`, choosing a new one (and the buffers to retire first) when it is not
// announced. Under mutex_.
Result<std::uint32_t> ChannelSender::buffer_id_locked(const TensorDyn& buffer, std::vector<std::uint32_t>& retire,
                                                      bool& announce) {
  const std::uint64_t key = buffer.buffer_key().value();
  for (Announced& a : table_)
    if (a.key == key) {
      a.last_used = ++use_clock_;
      announce = false;
      return a.id;
    }
  // Before an announce: retire every buffer whose last tensor here is gone (the receiver would keep its
  // memory alive), then, if still full, the least recently sent buffer with no frame out.
  auto gone = [&](const Announced& a) {
    if (a.out != 0 || !is_dead(a)) return false;
    retire.push_back(a.id);
    return true;
  };
  table_.erase(std::remove_if(table_.begin(), table_.end(), gone), table_.end());
  if (table_.size() >= options_.max_buffers) {
    auto lru = table_.end();
    for (auto it = table_.begin(); it != table_.end(); ++it)
      if (it->out == 0 && (lru == table_.end() || it->last_used < lru->last_used)) lru = it;
    if (lru == table_.end())
      return fail(ErrorCode::Busy,
                  text::format("{}: all {} announced buffers (SenderOptions::max_buffers) have frames the receiver has "
                               "not released; wait for releases or raise max_buffers on both ends",
                               label_, options_.max_buffers));
    retire.push_back(lru->id);
    table_.erase(lru);
  }
  const std::shared_ptr<Storage>& storage = storage_of(buffer);
  table_.push_back({next_id_++, key, storage, storage->pooled(), ++use_clock_, 0});
  announce = true;
  return table_.back().id;
}

Result<std::uint64_t> ChannelSender::send(std::span<const TensorDyn> buffers, std::span<const std::byte> embedded,
                                          ChannelMessage type, const channel::SendOptions& options) {
  std::lock_guard send_lock(send_mutex_);
  std::array<int, kMaxPlanes> fds{};
  for (std::size_t b = 0; b < buffers.size(); ++b) {
    ET_TRY_ASSIGN(fds[b], sendable_fd(buffers[b], buffers.size() == 1 ? label_ : text::format("{}: buffer {}", label_, b)));
  }
  std::array<std::uint32_t, kMaxPlanes> ids{};
  std::array<bool, kMaxPlanes> announce{};
  std::vector<std::uint32_t> retire;
  std::uint64_t sequence = 0;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return fail(closed_error_locked());
    sequence = options.sequence.value_or(last_sequence_ ? *last_sequence_ + 1 : 0);
    if (last_sequence_ && sequence <= *last_sequence_)
      return fail(ErrorCode::InvalidArgument,
                  text::format("{}: sequence {} after {}: sequences must increase", label_, sequence, *last_sequence_));
    for (std::size_t b = 0; b < buffers.size(); ++b) {
      auto id = buffer_id_locked(buffers[b], retire, announce[b]);
      if (!id) {  // undo this frame's new entries: nothing of it was sent
        for (std::size_t k = 0; k < b; ++k)
          if (announce[k]) std::erase_if(table_, [&](const Announced& a) { return a.id == ids[k]; });
        return fail(std::move(id).error());
      }
      ids[b] = *id;
    }
  }
  const auto deadline = deadline_after(options_.send_timeout);
  // A failure from here on leaves the two ends out of step (or the peer is gone): the channel closes,
  // except for a timeout before the frame itself, which leaves the receiver knowing every buffer sent.
  auto failed = [&](Error e) -> Unexpected {
    close(e, e.code() == ErrorCode::Unavailable);
    return fail(std::move(e));
  };
  for (std::size_t i = 0; i < retire.size(); i += kMaxRetireIds) {
    const auto msg = encode_retire(std::span(retire).subspan(i, std::min(kMaxRetireIds, retire.size() - i)));
    if (auto r = send_message(socket_.get(), msg, {}, deadline, label_); !r) return failed(std::move(r).error());
    std::lock_guard lock(mutex_);
    stats_.retires += std::min(kMaxRetireIds, retire.size() - i);
  }
  for (std::size_t b = 0; b < buffers.size(); ++b) {
    if (!announce[b]) continue;
    const auto msg = encode_announce(ids[b], buffers[b].memory(), buffers[b].buffer_bytes());
    if (auto r = send_message(socket_.get(), msg, {fds[b]}, deadline, label_); !r) return failed(std::move(r).error());
    std::lock_guard lock(mutex_);
    ++stats_.announces;
  }
  const std::int64_t timestamp = options.timestamp_ns.value_or(monotonic_ns());
  const auto msg = encode_frame(type, sequence, timestamp, std::span(ids.data(), buffers.size()), embedded);
  {
    // Held before the frame leaves: its release may arrive before send_message returns.
    std::lock_guard lock(mutex_);
    if (closed_) return fail(closed_error_locked());
    const auto now = ChannelClock::now();
    for (std::size_t b = 0; b < buffers.size(); ++b) {
      out_.push_back({ids[b], sequence, buffers[b], now});
      for (Announced& a : table_)
        if (a.id == ids[b]) ++a.out;
    }
  }
  if (auto r = send_message(socket_.get(), msg, {}, deadline, label_); !r) {
    if (r.error().code() != ErrorCode::Busy) return failed(std::move(r).error());
    std::deque<Out> dropped;  // not sent: nothing to wait for
    std::lock_guard lock(mutex_);
    for (auto it = out_.begin(); it != out_.end();) {
      if (it->sequence != sequence) {
        ++it;
        continue;
      }
      for (Announced& a : table_)
        if (a.id == it->id) --a.out;
      dropped.push_back(std::move(*it));
      it = out_.erase(it);
    }
    return fail(std::move(r).error());
  }
  std::lock_guard lock(mutex_);
  last_sequence_ = sequence;
  ++stats_.frames_sent;
  return sequence;
}

Result<void> ChannelSender::handle_release(std::span<const std::byte> bytes) {
  ET_TRY_ASSIGN(auto entries, decode_release(bytes));
  std::vector<TensorDyn> dropped;
  dropped.reserve(entries.size());
  {
    std::lock_guard lock(mutex_);
    for (const ReleaseEntry& e : entries) {
      auto it = std::find_if(out_.begin(), out_.end(),
                             [&](const Out& o) { return o.id == e.buffer_id && o.sequence == e.sequence; });
      if (it == out_.end())
        return fail(ErrorCode::InvalidArgument,
                    text::format("the receiver released buffer {} of sequence {}, which is not out (never sent in "
                                 "that frame, or released already)", e.buffer_id, e.sequence));
      for (Announced& a : table_)
        if (a.id == e.buffer_id) --a.out;
      dropped.push_back(std::move(it->held));
      out_.erase(it);
      ++stats_.releases;
    }
    ++dropping_;
  }
  dropped.clear();  // outside the lock: pooled buffers go back to their pools
  std::lock_guard lock(mutex_);
  --dropping_;
  if (out_.empty() && dropping_ == 0) drained_.notify_all();
  return {};
}

void ChannelSender::read_releases() noexcept {
  std::array<std::byte, kMaxReleaseMessageBytes + 1> buf;
  for (;;) {
    auto ready = wait_input(socket_.get(), -1, false, ChannelClock::time_point::max());
    Result<void> handled;
    if (ready) {
      auto msg = ipc::receive_fds(socket_.get(), buf, kMaxChannelFds);
      {
        std::lock_guard lock(mutex_);
        if (stopping_) return;
      }
      if (!msg) {
        if (msg.error().code() == ErrorCode::Unavailable) {
          close(Error(ErrorCode::Unavailable, "the receiver closed the channel"), true);
          return;
        }
        handled = fail(std::move(msg).error());
      } else if (!msg->fds.empty()) {
        handled = fail(ErrorCode::InvalidArgument,
                       text::format("malformed channel message: {} fd{} arrived with a message from the receiver, which "
                                    "sends none in version 1; closed", msg->fds.size(), msg->fds.size() == 1 ? "" : "s"));
      } else {
        handled = handle_release(std::span(buf.data(), msg->size_bytes));
      }
    } else {
      handled = fail(std::move(ready).error());
    }
    if (!handled) {
      close(std::move(handled).error(), false);
      return;
    }
  }
}

}  // namespace edgetensor::detail

namespace edgetensor::inline ET_ABI_NAMESPACE::channel {

Result<Sender> Sender::create(UniqueFd socket, const SenderOptions& options) {
  const std::string who = text::format("channel::Sender '{}'", options.name);
  if (options.max_buffers == 0 || options.max_buffers > kMaxChannelBuffers)
    return fail(ErrorCode::InvalidArgument, text::format("{}: max_buffers {} is outside 1..{}", who, options.max_buffers,
                                                        kMaxChannelBuffers));
  if (options.send_timeout.count() < 0)
    return fail(ErrorCode::InvalidArgument, text::format("{}: send_timeout {} ms is negative", who,
                                                        options.send_timeout.count()));
  ET_TRY(detail::require_channel_socket(socket.get(), who));
  auto state = std::make_shared<edgetensor::detail::ChannelSender>(std::move(socket), options);
  ET_TRY(state->start());
  return Sender(std::move(state));
}

Sender::Sender(std::shared_ptr<edgetensor::detail::ChannelSender> state) noexcept : state_(std::move(state)) {}
Sender::Sender(Sender&& other) noexcept = default;
Sender& Sender::operator=(Sender&& other) noexcept {
  if (this != &other) {
    if (state_) state_->stop();
    state_ = std::move(other.state_);
  }
  return *this;
}
Sender::~Sender() {
  if (state_) state_->stop();
}

namespace {
Unexpected moved_from(const char* call) {
  return fail(ErrorCode::FailedPrecondition, text::format("channel::Sender::{}: the sender was moved from", call));
}

// The rules ipc::send applies before it looks at the socket: a tensor that reaches no byte is never sent.
Result<void> check_sendable(const TensorDyn& tensor) {
  if (tensor.is_empty_handle()) return fail(ErrorCode::FailedPrecondition, "channel::Sender::send: tensor has no storage");
  if (tensor.element_count() == 0)
    return fail(ErrorCode::FailedPrecondition,
                text::format("channel::Sender::send: tensor [{}] has zero elements: nothing to share",
                             text::join(tensor.shape(), ", ")));
  return {};
}
}  // namespace

Result<std::uint64_t> Sender::send(const TensorDyn& tensor, const SendOptions& options) {
  if (!state_) return moved_from("send");
  ET_TRY(check_sendable(tensor));
  const auto embedded = edgetensor::detail::encode_tensor(tensor);
  return state_->send(std::span(&tensor, 1), embedded, edgetensor::detail::ChannelMessage::TensorFrame, options);
}

Result<std::uint64_t> Sender::send_frame(const Frame& frame, const SendOptions& options) {
  if (!state_) return moved_from("send_frame");
  if (frame.is_empty()) return fail(ErrorCode::FailedPrecondition, "channel::Sender::send_frame: the frame is empty");
  std::array<TensorDyn, kMaxPlanes> buffers;
  std::array<MemoryKind, kMaxPlanes> kinds{};
  for (std::size_t b = 0; b < frame.buffer_count(); ++b) {
    ET_TRY_ASSIGN(buffers[b], frame.buffer(b));
    kinds[b] = buffers[b].memory();
  }
  const auto header = edgetensor::detail::encode_frame_header(frame, std::span(kinds.data(), frame.buffer_count()));
  const auto embedded = edgetensor::detail::encode_frame_message(header);
  return state_->send(std::span(buffers.data(), frame.buffer_count()), embedded,
                      edgetensor::detail::ChannelMessage::Frame, options);
}

Result<TensorDyn> Sender::acquire(Pool& pool, std::chrono::milliseconds timeout) {
  if (!state_) return moved_from("acquire");
  return state_->acquire(pool, timeout);
}

Result<void> Sender::drain(std::chrono::milliseconds timeout) {
  if (!state_) return moved_from("drain");
  return state_->drain(timeout);
}

SenderStats Sender::stats() const { return state_ ? state_->stats() : SenderStats{}; }

Result<void> Sender::status() const {
  if (!state_) return moved_from("status");
  return state_->status();
}

}  // namespace edgetensor::channel
