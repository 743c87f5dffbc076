// SPDX-License-Identifier: Apache-2.0
// channel::Receiver (channel.h): the receive loop, the release path and closing (receiver.h).
#include "channel/receiver.h"

#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <utility>

#include "text/format.h"

#include "ipc/ipc_checks.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

ChannelReceiver::ChannelReceiver(UniqueFd socket, UniqueFd wake, const channel::ReceiverOptions& options)
    : options_(options),
      label_(options.name.empty() ? std::string("channel") : text::format("channel '{}'", options.name)),
      buffer_(std::make_unique_for_overwrite<std::byte[]>(kMaxChannelMessageBytes + 1)),
      socket_(std::move(socket)),
      wake_(std::move(wake)),
      socket_fd_(socket_.get()) {}

Result<channel::Delivery> ChannelReceiver::receive(std::chrono::milliseconds timeout) {
  std::lock_guard receiving(receive_mutex_);
  const auto deadline = deadline_after(timeout);
  bool reset_seen = false;
  bool poll_first = poll_first_ > 0;
  if (poll_first) --poll_first_;
  for (;;) {
    bool want_write = false;
    bool device_waits = false;
    {
      std::lock_guard lock(mutex_);
      // The end of stream answers every later call, also once the sender has gone since.
      if (ended_ && !closed_) flush_locked();
      if (ended_) {
        channel::Delivery end;
        end.end_of_stream = true;
        end.sequence = *ended_;
        return end;
      }
      if (closed_) return fail(closed_error_locked());
      flush_locked();
      if (closed_) return fail(closed_error_locked());
      want_write = !pending_.empty();
      device_waits = !device_wait_.empty();
    }
    // A message that is there already costs one recvmsg; poll only when there is none, or first while the
    // consumer keeps up (poll_first_).
    const bool skip_read = poll_first;
    poll_first = false;
    auto msg = skip_read ? Result<ipc::Received>(ipc::Received{})
                         : receive_fds_flags(socket_.get(), std::span(buffer_.get(), kMaxChannelMessageBytes + 1),
                                             kMaxChannelFds, MSG_DONTWAIT);
    if (skip_read || (!msg && msg.error().sys_errno() == EAGAIN)) {
      if (!skip_read) poll_first_ = kPollFirstCalls;
      // Releases held back for device work: ask again every millisecond (as Pool::acquire does).
      const auto until = device_waits ? std::min(deadline, ChannelClock::now() + std::chrono::milliseconds(1)) : deadline;
      auto ready = wait_input(socket_.get(), wake_.get(), want_write, until);
      if (!ready) {
        close(ready.error(), false);
        return fail(std::move(ready).error());
      }
      if (ready->wake) {
        std::uint64_t count = 0;
        (void)!::read(wake_.get(), &count, sizeof count);  // EFD_NONBLOCK: resets the counter
      }
      if (!ready->socket && !ready->wake && !ready->writable && until == deadline)
        return fail(Error(ErrorCode::Busy, text::format("{}: no frame within {} ms", label_, timeout.count()),
                          timeout.count() == 0 ? EAGAIN : ETIMEDOUT));
      continue;
    }
    // A sender that died with our messages unread (the hello, releases) leaves ECONNRESET, reported once
    // before the frames it sent: read on, they still arrive, then the end (unix(7), net/unix/af_unix.c).
    if (!msg && msg.error().sys_errno() == ECONNRESET && !reset_seen) {
      reset_seen = true;
      continue;
    }
    if (!msg) {
      const bool peer = msg.error().code() == ErrorCode::Unavailable;
      Error e = peer ? Error(ErrorCode::Unavailable, text::format("{}: the sender closed the channel or died", label_))
                     : Error(msg.error().code(), text::format("{}: {}", label_, msg.error().message()),
                             msg.error().sys_errno());
      close(e, peer);
      return fail(std::move(e));
    }
    auto handled = handle(std::span(buffer_.get(), msg->size_bytes), msg->fds);
    if (!handled) {
      Error e(handled.error().code(), text::format("{}: {}", label_, handled.error().message()),
              handled.error().sys_errno());
      close(e, false);
      return fail(std::move(e));
    }
    if (*handled) return std::move(**handled);
  }
}

Result<channel::Delivery> ChannelReceiver::receive_latest(std::chrono::milliseconds timeout) {
  ET_TRY_ASSIGN(channel::Delivery latest, receive(timeout));
  if (latest.end_of_stream) return latest;
  for (;;) {
    // Only what has arrived. An end of stream stays for the next call (receive() answers it again); an
    // error closed the channel, which the next call reports: this one still has its newest frame.
    auto next = receive(std::chrono::milliseconds(0));
    if (!next || next->end_of_stream) return latest;
    latest = std::move(*next);  // the older frame is released here
    std::lock_guard lock(mutex_);
    ++stats_.frames_skipped;
  }
}

Result<void> ChannelReceiver::flush() {
  // Not under receive_mutex_: a receive() waiting in another thread must not hold it up.
  std::lock_guard lock(mutex_);
  if (closed_) return fail(closed_error_locked());
  flush_locked();
  if (closed_) return fail(closed_error_locked());
  return {};
}

channel::ReceiverStats ChannelReceiver::stats() const {
  std::lock_guard lock(mutex_);
  channel::ReceiverStats s = stats_;
  s.buffers = table_.size();
  s.releases_queued = pending_.size() + device_wait_.size();
  return s;
}

Result<void> ChannelReceiver::status() const {
  std::lock_guard lock(mutex_);
  if (closed_) return fail(closed_error_locked());
  return {};
}

void ChannelReceiver::stop() noexcept {
  Table dropped;
  std::lock_guard lock(mutex_);
  if (!closed_) {
    try {
      close_error_.emplace(ErrorCode::FailedPrecondition, "the receiver was destroyed");
    } catch (...) {
    }
  }
  close_locked(dropped);
  socket_.reset();  // under the lock: no release is being sent on it
  wake_.reset();
  // `dropped` goes after the lock (declared before it): each import closes its fd and mapping.
}

void ChannelReceiver::count_released_locked(std::uint32_t buffer_id) noexcept {
  if (stats_.frames_out > 0) --stats_.frames_out;
  if (auto it = table_.find(buffer_id); it != table_.end() && it->second.out > 0) --it->second.out;
}

void Releaser::operator()(Storage*) noexcept { receiver->released(buffer_id, sequence, home, fence.release()); }

void ChannelReceiver::released(std::uint32_t buffer_id, std::uint64_t sequence, const std::shared_ptr<Storage>& home,
                               UniqueFd fence) noexcept {
  std::lock_guard lock(mutex_);
  try {
    // Both never allocate: capacity reserved at hand-out.
    if (!closed_ && !home->device_work_complete()) {
      device_wait_.push_back({buffer_id, sequence, home, std::move(fence)});  // still out until the work completes
      if (wake_) {  // a receive() waiting in another thread starts asking every millisecond
        const std::uint64_t one = 1;
        (void)!::write(wake_.get(), &one, sizeof one);
      }
      return;
    }
    count_released_locked(buffer_id);
    if (closed_) return;
    const std::uint8_t flags = fence ? kReleaseFenced : 0;
    pending_.push_back({{buffer_id, flags, {}, sequence}, std::move(fence)});
  } catch (...) {
    // Unreachable; were it not, a lost release would hold the sender's buffer forever: close instead
    // (the sender then drops every reference it holds).
    Table dropped;
    close_errno_ = ENOMEM;
    close_locked(dropped);
    return;
  }
  flush_locked();
}

Result<void> ChannelReceiver::add_release_fence(const TensorDyn& tensor, sync::Fence fence) {
  const std::shared_ptr<Storage>& storage = storage_of(tensor);
  Releaser* releaser = storage ? std::get_deleter<Releaser>(storage) : nullptr;
  if (releaser == nullptr || releaser->receiver.get() != this)
    return fail(ErrorCode::InvalidArgument,
                text::format("{}: add_release_fence: the tensor is not a frame buffer this receiver delivered (a "
                             "Delivery's tensor, a Frame buffer, or a copy, view or plane of one)", label_));
  std::lock_guard lock(mutex_);
  if (closed_) return fail(closed_error_locked());
  if (fence.is_signalled_without_fd()) return {};
  if (!peer_fences_)
    return fail(ErrorCode::Unsupported,
                text::format("{}: the sender's hello does not carry the fence capability, so a release cannot carry a "
                             "fence; wait on it (sync::Fence::wait) before dropping buffer {} of sequence {}",
                             label_, releaser->buffer_id, releaser->sequence));
  if (releaser->fence.is_signalled_without_fd()) {
    releaser->fence = std::move(fence);
    return {};
  }
  ET_TRY_ASSIGN(sync::Fence both, sync::Fence::merge(releaser->fence, fence, "edgetensor-release"));
  releaser->fence = std::move(both);
  return {};
}

void ChannelReceiver::close(Error why, bool peer_closed) {
  Table dropped;
  std::lock_guard lock(mutex_);
  if (!closed_) {
    close_error_.emplace(std::move(why));
    peer_closed_ = peer_closed;
  }
  close_locked(dropped);
}

void ChannelReceiver::close_locked(Table& dropped) noexcept {
  closed_ = true;
  pending_.clear();
  device_wait_.clear();  // not the last references: the table's go into `dropped`
  dropped.swap(table_);
  if (socket_) ::shutdown(socket_.get(), SHUT_RDWR);  // the sender sees the end of the channel
}

// Sends every queued release, 64 to a message, without waiting. On EAGAIN (the sender is not reading)
// they stay queued and a receive() waiting in another thread is woken to send them when there is room.
void ChannelReceiver::flush_locked() noexcept {
  if (closed_) return;
  if (releases_unsendable_) {  // the sender is gone: nobody reads releases (closes our fence fds)
    pending_.clear();
    device_wait_.clear();
    return;
  }
  for (auto it = device_wait_.begin(); it != device_wait_.end();) {
    if (!it->home->device_work_complete()) {
      ++it;
      continue;
    }
    count_released_locked(it->buffer_id);
    const std::uint8_t flags = it->fence ? kReleaseFenced : 0;
    pending_.push_back({{it->buffer_id, flags, {}, it->sequence}, std::move(it->fence)});  // capacity: pending + out
    it = device_wait_.erase(it);
  }
  while (!pending_.empty() && !closed_ && socket_) {
    // Up to 64 entries, and up to kMaxChannelFds release fences, to a message (what the sender reads).
    std::array<ReleaseEntry, kMaxReleaseEntries> entries;
    std::array<int, kMaxChannelFds> fds;
    std::size_t n = 0;
    std::size_t fences = 0;
    for (; n < pending_.size() && n < kMaxReleaseEntries; ++n) {
      if (pending_[n].fence) {
        if (fences == kMaxChannelFds) break;
        fds[fences++] = pending_[n].fence.get();
      }
      entries[n] = pending_[n].entry;
    }
    std::array<std::byte, kMaxReleaseMessageBytes> msg;
    const std::size_t bytes = encode_release(std::span(entries.data(), n), msg);
    const int err = send_now(socket_.get(), std::span(msg.data(), bytes), ArrayRef<int>(fds.data(), fences));
    if (err == 0) {
      pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(n));  // closes our fence fds
      stats_.releases_sent += n;
      stats_.release_fences_sent += fences;
      continue;
    }
    if (err == EAGAIN || err == ENOBUFS) {
      if (wake_) {
        const std::uint64_t one = 1;
        (void)!::write(wake_.get(), &one, sizeof one);
      }
      return;
    }
    // The sender is gone (EPIPE, ECONNRESET, ENOTCONN): its releases have nowhere to go, but what it sent
    // before it went is still queued here (frames, the end of stream): receive() reads on and closes at
    // the end of the socket. Any other failure closes now; no text is built here.
    if (err == EPIPE || err == ECONNRESET || err == ENOTCONN) {
      releases_unsendable_ = true;
      pending_.clear();
      return;
    }
    Table dropped;  // empty unless a release is the first to see the end; then its imports close here
    close_errno_ = err;
    close_locked(dropped);
  }
}

Error ChannelReceiver::closed_error_locked() const {
  if (peer_closed_)
    return Error(ErrorCode::Unavailable, text::format("{} is closed: the sender closed it or died", label_));
  if (close_error_) return Error(ErrorCode::FailedPrecondition, text::format("{} is closed: {}", label_,
                                                                           close_error_->to_string()));
  return Error::from_errno(close_errno_, text::format("{} is closed: sending a release failed", label_));
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
