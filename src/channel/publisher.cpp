// SPDX-License-Identifier: Apache-2.0
// channel::Publisher (channel.h): one producer, many receivers. Each receiver is a ChannelSender of its
// own (sender.h); the publisher keeps them in join order, numbers the frames, sends each frame to every
// receiver and removes the ones that closed. With listen(), a thread accepts receivers.
//
// Locks: send_mutex serialises send, send_frame and end_stream (one sequence order on every receiver);
// mutex guards the receiver list and the counters and is held only briefly, never across a send. Order:
// send_mutex, then mutex. Receivers are stopped (a thread joined, references dropped) outside both.
#include <edgetensor/channel.h>

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "text/format.h"

#include "base/log_internal.h"
#include "channel/channel_socket.h"
#include "channel/sender.h"
#include "ipc/ipc_checks.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace channel {

namespace {
using edgetensor::detail::ChannelSender;

std::optional<PeerCredentials> peer_credentials(int fd) noexcept {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof cred) return std::nullopt;
  return PeerCredentials{cred.pid, cred.uid, cred.gid};
}

std::string describe(std::uint64_t id, const std::optional<PeerCredentials>& peer) {
  return peer ? text::format("receiver {} (pid {})", id, peer->pid) : text::format("receiver {}", id);
}

Unexpected moved_from(const char* call) {
  return fail(ErrorCode::FailedPrecondition, text::format("channel::Publisher::{}: the publisher was moved from", call));
}

}  // namespace

struct Publisher::State {
  struct Entry {
    std::uint64_t id = 0;
    std::shared_ptr<ChannelSender> sender;
    std::optional<PeerCredentials> peer;
    SenderOptions options;
    bool eos_pending = false;  // end_stream() not yet sent to it (its socket stayed full)
  };

  PublisherOptions options;
  std::string label;
  std::string send_label, send_frame_label;  // "<label>: send", "<label>: send_frame" (made once, not per frame)
  std::string path;
  std::optional<Listener> listener;
  UniqueFd wake;  // eventfd: the acceptor's stop signal
  std::thread acceptor;

  std::mutex send_mutex;
  // Guarded by send_mutex: publish()'s receivers of the frame being sent (kept: a frame allocates nothing).
  std::vector<std::pair<std::uint64_t, std::shared_ptr<ChannelSender>>> targets;
  mutable std::mutex mutex;
  // Guarded by mutex:
  std::vector<Entry> receivers;
  std::uint64_t next_id = 1;
  std::size_t pool_buffers = 0;  // the largest Pool acquired through this publisher
  bool ended = false;
  std::optional<std::uint64_t> last_sequence;
  PublisherStats stats;

  ~State() { stop(); }

  void stop() noexcept {
    if (acceptor.joinable()) {
      const std::uint64_t one = 1;
      [[maybe_unused]] const auto n = ::write(wake.get(), &one, sizeof one);
      acceptor.join();
    }
    std::vector<Entry> gone;
    {
      std::lock_guard lock(mutex);
      gone.swap(receivers);
    }
    for (auto& e : gone) e.sender->stop();
  }

  // Removes the receivers whose channel closed (outside mutex: stopping joins their reader threads).
  std::size_t remove_closed(std::span<const std::uint64_t> ids) {
    std::vector<Entry> gone;
    {
      std::lock_guard lock(mutex);
      for (auto it = receivers.begin(); it != receivers.end();) {
        if (std::find(ids.begin(), ids.end(), it->id) != ids.end()) {
          gone.push_back(std::move(*it));
          it = receivers.erase(it);
        } else {
          ++it;
        }
      }
      stats.receivers_left += gone.size();
      stats.receivers = receivers.size();
    }
    for (auto& e : gone) {
      auto why = e.sender->status();
      edgetensor::detail::log(LogLevel::Info, "{}: {} left: {}", label, describe(e.id, e.peer),
                              why ? std::string("disconnected") : why.error().to_string());
      e.sender->stop();
    }
    return gone.size();
  }

  Result<std::uint64_t> add(UniqueFd socket, const SenderOptions& given) {
    // Checked before an id is given: ids count receivers served (a refused socket takes none).
    ET_TRY(edgetensor::detail::require_channel_socket(socket.get(), text::format("{}: add_receiver", label)));
    const auto peer = peer_credentials(socket.get());
    std::uint64_t id = 0;
    {
      std::lock_guard lock(mutex);
      if (receivers.size() >= options.max_receivers) {
        edgetensor::detail::send_refusal(
            socket.get(), edgetensor::detail::RefuseReason::ReceiverLimit,
            text::format("the publisher serves {} receiver{} already, its limit (max_receivers {}); try again when "
                         "one leaves", receivers.size(), receivers.size() == 1 ? "" : "s", options.max_receivers));
        return fail(ErrorCode::OutOfRange,
                    text::format("{}: {} receivers served already (PublisherOptions::max_receivers {})", label,
                                 receivers.size(), options.max_receivers));
      }
      id = next_id++;
    }
    SenderOptions o = given;
    o.name = text::format("{} receiver {}", options.name.empty() ? std::string("publisher") : options.name, id);
    ET_TRY_ASSIGN(auto sender, edgetensor::detail::make_channel_sender(
                                   std::move(socket), o, text::format("{}: {}", label, describe(id, peer))));
    sender->serve_publisher();  // before it is shared: read_ready's stand-back, its pools' recalls
    bool end_now = false;
    {
      std::lock_guard lock(mutex);
      if (receivers.size() >= options.max_receivers) {  // another add won the last place meanwhile
        sender->stop();
        return fail(ErrorCode::OutOfRange,
                    text::format("{}: {} receivers served already (PublisherOptions::max_receivers {})", label,
                                 receivers.size(), options.max_receivers));
      }
      if (pool_buffers != 0) sender->note_pool(pool_buffers);
      end_now = ended;
      receivers.push_back(Entry{id, sender, peer, o, end_now});
      ++stats.receivers_joined;
      stats.receivers = receivers.size();
    }
    if (end_now) {
      // Joined after the end: it gets the end at once (a full socket leaves it for the next end_stream()).
      std::lock_guard send_lock(send_mutex);
      (void)send_pending_ends();
    }
    return id;
  }

  // Sends the end of stream to each receiver still waiting for it. Under send_mutex. Returns how many
  // are still waiting (their sockets stayed full), or the error of the thread's wait check
  // (channel::ScopedWaitCheck), which stops at that receiver.
  Result<std::size_t> send_pending_ends() {
    std::vector<std::pair<std::uint64_t, std::shared_ptr<ChannelSender>>> todo;
    {
      std::lock_guard lock(mutex);
      for (const auto& e : receivers)
        if (e.eos_pending) todo.emplace_back(e.id, e.sender);
    }
    std::vector<std::uint64_t> closed, done;
    std::optional<Error> stopped;
    for (const auto& [id, sender] : todo) {
      auto r = sender->end_stream();
      if (r) {
        done.push_back(id);
      } else if (edgetensor::detail::wait_check_stopped()) {
        stopped = std::move(r).error();
        break;
      } else if (r.error().code() != ErrorCode::Busy) {
        closed.push_back(id);
      }
    }
    {
      std::lock_guard lock(mutex);
      for (auto& e : receivers)
        if (std::find(done.begin(), done.end(), e.id) != done.end()) e.eos_pending = false;
    }
    remove_closed(closed);
    if (stopped) return fail(std::move(*stopped));
    return todo.size() - done.size() - closed.size();
  }

  Result<PublishResult> publish(const edgetensor::detail::OutgoingFrame& out, const SendOptions& given) {
    std::lock_guard send_lock(send_mutex);
    // A frame a receiver could never take is refused whether or not anyone listens (heap, PBO memory).
    for (std::size_t b = 0; b < out.count; ++b) {
      ET_TRY(edgetensor::detail::sendable_fd(out.buffers[b], out.count == 1 ? label : text::format("{}: buffer {}", label, b)));
    }
    targets.clear();
    SendOptions o = given;
    {
      std::lock_guard lock(mutex);
      if (ended)
        return fail(ErrorCode::FailedPrecondition,
                    text::format("{}: the stream ended (Publisher::end_stream): no frame follows", label));
      if (!given.sequence && last_sequence && *last_sequence == std::numeric_limits<std::uint64_t>::max())
        return fail(ErrorCode::OutOfRange,
                    text::format("{}: no sequence follows {}, the largest (the last frame's): end the stream", label,
                                 *last_sequence));
      const std::uint64_t sequence = given.sequence.value_or(last_sequence ? *last_sequence + 1 : 0);
      if (last_sequence && sequence <= *last_sequence)
        return fail(ErrorCode::InvalidArgument,
                    text::format("{}: sequence {} after {}: sequences must increase", label, sequence, *last_sequence));
      o.sequence = sequence;
      if (!o.timestamp_ns) o.timestamp_ns = edgetensor::detail::monotonic_ns();  // one stamp for every receiver
      last_sequence = sequence;
      ++stats.frames_published;
      targets.reserve(receivers.size());
      for (const auto& e : receivers) targets.emplace_back(e.id, e.sender);
    }
    PublishResult result;
    result.sequence = *o.sequence;
    std::vector<std::uint64_t> closed;
    std::optional<Error> stopped;
    for (const auto& [id, sender] : targets) {
      const std::uint64_t dropped_before = sender->stats().frames_dropped;
      auto r = sender->send(out.span(), out.embedded, out.type, o, out.fence_span());
      if (!r && edgetensor::detail::wait_check_stopped()) {  // channel::ScopedWaitCheck: stop here
        stopped = std::move(r).error();
        break;
      }
      if (r) {
        if (sender->stats().frames_dropped != dropped_before) {
          ++result.dropped;
        } else {
          ++result.delivered;
        }
      } else if (sender->status()) {
        ++result.dropped;  // Busy past its send_timeout, or a frame it cannot take (e.g. more buffers than its table)
      } else {
        closed.push_back(id);
      }
    }
    // Once the frame went out to everyone: the releases that came meanwhile (Pool frames: the reader threads
    // stand back; sender.h, kPublisherStandBack).
    for (const auto& target : targets) target.second->read_ready();
    {
      std::lock_guard lock(mutex);
      stats.deliveries += result.delivered;
      stats.drops += result.dropped;
    }
    targets.clear();  // no reference to a sender outlives the send
    result.removed = remove_closed(closed);
    if (stopped) return fail(std::move(*stopped));
    return result;
  }

  void accept_loop() noexcept {
    for (;;) {
      pollfd p[2] = {{listener->fd(), POLLIN, 0}, {wake.get(), POLLIN, 0}};
      if (::poll(p, 2, -1) < 0) {
        if (errno == EINTR) continue;
        edgetensor::detail::log(LogLevel::Error, "{}: poll on the listener failed ({}); no more receivers are accepted",
                                label, edgetensor::errno_name(errno));
        return;
      }
      if (p[1].revents != 0) return;
      auto peer = listener->accept(std::chrono::milliseconds(0));
      if (!peer) {
        if (peer.error().code() == ErrorCode::Busy) continue;  // refused or gone: the listener counted it
        edgetensor::detail::log(LogLevel::Warning, "{}: {}", label, peer.error().to_string());
        continue;
      }
      auto added = add(std::move(*peer), options.receiver);
      if (!added) {
        {
          std::lock_guard lock(mutex);
          ++stats.receivers_refused;
        }
        edgetensor::detail::log(LogLevel::Warning, "{}: a peer was accepted and closed: {}", label,
                                added.error().to_string());
      }
    }
  }
};

Result<Publisher> Publisher::create(const PublisherOptions& options) {
  const std::string label =
      options.name.empty() ? std::string("channel::Publisher") : text::format("channel::Publisher '{}'", options.name);
  if (options.max_receivers == 0 || options.max_receivers > kMaxReceivers)
    return fail(ErrorCode::InvalidArgument,
                text::format("{}: max_receivers {} is outside 1..{}", label, options.max_receivers, kMaxReceivers));
  ET_TRY(edgetensor::detail::check_sender_options(options.receiver, text::format("{}: PublisherOptions::receiver", label)));
  auto state = std::make_shared<State>();
  state->options = options;
  state->label = label;
  state->send_label = label + ": send";
  state->send_frame_label = label + ": send_frame";
  return Publisher(std::move(state));
}

Result<Publisher> Publisher::listen(const std::string& path, const ListenOptions& listen, const PublisherOptions& options) {
  ET_TRY_ASSIGN(Publisher p, create(options));
  ET_TRY_ASSIGN(Listener l, Listener::create(path, listen));
  State& s = *p.state_;
  s.wake = UniqueFd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!s.wake.is_valid()) return fail(Error::from_errno(errno, text::format("{}: eventfd", s.label)));
  s.path = path;
  s.listener.emplace(std::move(l));
  try {
    s.acceptor = std::thread([&s] { s.accept_loop(); });
  } catch (const std::system_error& e) {
    return fail(ErrorCode::Internal, text::format("{}: the accepting thread did not start: {}", s.label, e.what()));
  }
  return p;
}

Publisher::Publisher(std::shared_ptr<State> state) noexcept : state_(std::move(state)) {}
Publisher::Publisher(Publisher&& other) noexcept = default;
Publisher& Publisher::operator=(Publisher&& other) noexcept = default;
Publisher::~Publisher() = default;

Result<std::uint64_t> Publisher::add_receiver(UniqueFd socket) {
  if (!state_) return moved_from("add_receiver");
  return state_->add(std::move(socket), state_->options.receiver);
}

Result<std::uint64_t> Publisher::add_receiver(UniqueFd socket, const SenderOptions& options) {
  if (!state_) return moved_from("add_receiver");
  ET_TRY(edgetensor::detail::check_sender_options(options, text::format("{}: add_receiver", state_->label)));
  return state_->add(std::move(socket), options);
}

Result<PublishResult> Publisher::send(const TensorDyn& tensor, const SendOptions& options) {
  if (!state_) return moved_from("send");
  ET_TRY_ASSIGN(const auto out,
                edgetensor::detail::outgoing_tensor(tensor, options, state_->send_label));
  return state_->publish(out, options);
}

Result<PublishResult> Publisher::send_frame(const Frame& frame, const SendOptions& options) {
  if (!state_) return moved_from("send_frame");
  ET_TRY_ASSIGN(const auto out,
                edgetensor::detail::outgoing_frame(frame, options, state_->send_frame_label));
  return state_->publish(out, options);
}

Result<TensorDyn> Publisher::acquire(Pool& pool, std::chrono::milliseconds timeout) {
  if (!state_) return moved_from("acquire");
  State& s = *state_;
  std::vector<State::Entry> snapshot;
  {
    std::lock_guard lock(s.mutex);
    s.pool_buffers = std::max(s.pool_buffers, pool.max_buffers());
    snapshot = s.receivers;
  }
  for (const auto& e : snapshot) e.sender->note_pool(pool.max_buffers());
  auto t = pool.acquire(timeout);
  if (t || t.error().code() != ErrorCode::Busy) return t;
  std::string held;
  for (const auto& e : snapshot)
    if (auto h = e.sender->holding_summary()) held += text::format("; {}: {}", describe(e.id, e.peer), *h);
  if (held.empty()) return t;
  return fail(Error(ErrorCode::Busy, text::format("{}; {}{}", t.error().message(), s.label, held),
                    t.error().sys_errno()));  // the pool's ETIMEDOUT or EAGAIN
}

Result<void> Publisher::end_stream() {
  if (!state_) return moved_from("end_stream");
  State& s = *state_;
  std::lock_guard send_lock(s.send_mutex);
  {
    std::lock_guard lock(s.mutex);
    if (!s.ended) {
      s.ended = true;
      for (auto& e : s.receivers) e.eos_pending = true;
    }
  }
  ET_TRY_ASSIGN(const std::size_t waiting, s.send_pending_ends());
  if (waiting != 0)
    return fail(ErrorCode::Busy,
                text::format("{}: {} receiver{} kept {} socket full: the end of stream did not reach {}; call "
                             "end_stream() again", s.label, waiting, waiting == 1 ? "" : "s",
                             waiting == 1 ? "its" : "their", waiting == 1 ? "it" : "them"), ETIMEDOUT);
  return {};
}

Result<void> Publisher::drain(std::chrono::milliseconds timeout) {
  if (!state_) return moved_from("drain");
  if (timeout.count() < 0)
    return fail(ErrorCode::InvalidArgument,
                text::format("{}: drain timeout {} ms is negative", state_->label, timeout.count()));
  State& s = *state_;
  std::vector<State::Entry> snapshot;
  {
    std::lock_guard lock(s.mutex);
    snapshot = s.receivers;
  }
  const auto deadline = edgetensor::detail::deadline_after(timeout);
  std::vector<std::uint64_t> closed;
  std::string holding;
  std::size_t out = 0;
  for (const auto& e : snapshot) {
    const auto now = edgetensor::detail::ChannelClock::now();
    const auto left = deadline == edgetensor::detail::ChannelClock::time_point::max()
                          ? std::chrono::milliseconds::max()
                          : std::max(std::chrono::milliseconds(0),
                                     std::chrono::ceil<std::chrono::milliseconds>(deadline - now));
    if (e.sender->drain(left)) continue;
    if (!e.sender->status()) {
      closed.push_back(e.id);  // it left: its frames count as released
      continue;
    }
    const std::size_t n = e.sender->stats().frames_out;
    out += n;
    holding += text::format("{}{} holds {}", holding.empty() ? "" : ", ", describe(e.id, e.peer), n);
  }
  s.remove_closed(closed);
  if (out != 0)
    return fail(Error(ErrorCode::Busy,
                      text::format("{}: {} frame buffer{} still out after {} ms ({})", s.label, out, out == 1 ? "" : "s",
                                   timeout.count(), holding), timeout.count() == 0 ? EAGAIN : ETIMEDOUT));
  return {};
}

Result<void> Publisher::disconnect(std::uint64_t id) {
  if (!state_) return moved_from("disconnect");
  State& s = *state_;
  {
    std::lock_guard lock(s.mutex);
    if (std::none_of(s.receivers.begin(), s.receivers.end(), [&](const State::Entry& e) { return e.id == id; }))
      return fail(ErrorCode::NotFound, text::format("{}: no receiver {} (ids served: {})", s.label, id, [&] {
        std::vector<std::uint64_t> ids;
        for (const auto& e : s.receivers) ids.push_back(e.id);
        return ids.empty() ? std::string("none") : text::join(ids, ", ");
      }()));
  }
  s.remove_closed(std::span(&id, 1));
  return {};
}

std::vector<ReceiverInfo> Publisher::receivers() const {
  std::vector<ReceiverInfo> out;
  if (!state_) return out;
  std::vector<State::Entry> snapshot;
  {
    std::lock_guard lock(state_->mutex);
    snapshot = state_->receivers;
  }
  for (const auto& e : snapshot) {
    const auto [policy, limit] = e.sender->policy();
    out.push_back(ReceiverInfo{e.id, e.peer, policy, limit, e.sender->stats()});
  }
  return out;
}

PublisherStats Publisher::stats() const {
  if (!state_) return {};
  PublisherStats s;
  {
    std::lock_guard lock(state_->mutex);
    s = state_->stats;
  }
  // The listener's refusals (its allow rule) too: set at listen(), it lives as long as the state.
  if (state_->listener) s.receivers_refused += state_->listener->stats().refused;
  return s;
}

const std::string& Publisher::path() const noexcept {
  static const std::string none;
  return state_ ? state_->path : none;
}

}  // namespace channel
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
