// SPDX-License-Identifier: Apache-2.0
// The state behind channel::Receiver (channel.h): the imported buffers by id, the releases waiting to
// be sent, the closing state. receiver.cpp: the receive loop, releases, closing; receiver_messages.cpp:
// what each message does (announce, retire, frames).
//
// Locks: receive_mutex_ serialises receive() (and owns the message buffer); mutex_ guards everything
// else and is held only briefly (flush() takes only mutex_: it never waits for a receive()). A release (Releaser, any thread) takes mutex_ and sends
// under it without waiting (MSG_DONTWAIT), so the socket fd is never closed under a sender of a release.
#pragma once

#include <edgetensor/channel.h>

#include <edgetensor/fence.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "channel/channel_socket.h"
#include "channel/channel_wire.h"
#include "core/storage.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

/// Makes room for `n` elements, growing the capacity at least twofold: a delivery that reserves one
/// more release each time then never copies the whole queue (std::vector::reserve allocates exactly n).
template <class T>
void reserve_room(std::vector<T>& v, std::size_t n) {
  if (n > v.capacity()) v.reserve(std::max(n, 2 * v.capacity()));
}

class ChannelReceiver;

/// Deleter of the reference a delivered tensor holds: releases the frame's buffer when its last holder
/// is gone (any thread). Keeps the import's storage alive as long as that holder, also past a retire or
/// the receiver itself. add_release_fence finds it with std::get_deleter and sets `fence` (under the
/// receiver's mutex_; the deleter runs after every holder, so it reads it alone).
struct Releaser {
  std::shared_ptr<ChannelReceiver> receiver;
  std::shared_ptr<Storage> home;
  std::uint32_t buffer_id;
  std::uint64_t sequence;
  sync::Fence fence;  // the consumer's release fence (signalled: none)
  void operator()(Storage*) noexcept;
};

class ChannelReceiver : public std::enable_shared_from_this<ChannelReceiver> {
 public:
  ChannelReceiver(UniqueFd socket, UniqueFd wake, const channel::ReceiverOptions& options);

  Result<channel::Delivery> receive(std::chrono::milliseconds timeout);
  Result<channel::Delivery> receive_latest(std::chrono::milliseconds timeout);
  Result<void> flush();
  channel::ReceiverStats stats() const;
  Result<void> status() const;
  /// The socket (channel::Receiver::fd): open until stop().
  int socket_fd() const noexcept { return socket_fd_; }
  /// The owner is going: shuts the socket down and closes it, closes every import.
  void stop() noexcept;
  /// The last holder of frame `sequence`'s buffer `buffer_id` (import storage `home`) is gone (any
  /// thread). Device work recorded on it that is still running holds the release back until it completes.
  /// `fence` (-1: none) goes with the release.
  void released(std::uint32_t buffer_id, std::uint64_t sequence, const std::shared_ptr<Storage>& home,
                UniqueFd fence) noexcept;
  /// Receiver::add_release_fence for one delivered buffer.
  Result<void> add_release_fence(const TensorDyn& tensor, sync::Fence fence);

 private:
  struct Import {
    TensorDyn whole;                 // U8 over the whole buffer: owns the import (fd, mapping)
    std::shared_ptr<Storage> home;   // its storage
    TensorDyn frame_buffer;          // `whole` without its storage: a frame's buffer, given its holder's storage
    MemoryKind kind;
    std::size_t buffer_bytes;
    std::size_t out = 0;             // frame buffers of it delivered and still held
  };
  using Table = std::unordered_map<std::uint32_t, Import>;
  // A release held back until the device work recorded on the frame's buffer (cuda::CudaMap::record) is
  // complete: the sender may overwrite the buffer once the release arrives.
  struct DeviceWait {
    std::uint32_t buffer_id;
    std::uint64_t sequence;
    std::shared_ptr<Storage> home;  // a second reference: the table keeps the import (out > 0: no retire)
    UniqueFd fence;                 // the release fence that goes with it (-1: none)
  };
  // A release waiting to be sent, with its release fence (-1: none).
  struct Pending {
    ReleaseEntry entry;
    UniqueFd fence;
  };

  // The last frame message on_frame checked, with the sizes of the buffers it named (guarded by
  // receive_mutex_). A frame whose frame message is the same, byte for byte, over buffers of the same sizes
  // passes the same checks: the steady state of a stream (one layout, a pool of equal buffers) decodes and
  // checks its layout once, not every frame.
  struct CheckedFrame {
    static constexpr std::size_t kMaxBytes = 256;
    std::array<std::byte, kMaxBytes> bytes{};
    std::size_t size = 0;  // 0: none yet
    FrameWireHeader header;
    ImageLayout layout;
    std::array<std::size_t, kMaxPlanes> sizes{};
  };

  // receiver_messages.cpp: one message each; a returned error closes the channel.
  Result<std::optional<channel::Delivery>> handle(std::span<const std::byte> bytes, std::vector<UniqueFd>& fds);
  Result<void> on_announce(std::span<const std::byte> bytes, std::vector<UniqueFd>& fds);
  Result<void> on_retire(std::span<const std::byte> bytes);
  Result<void> on_hello(std::span<const std::byte> bytes);
  Result<channel::Delivery> on_end_of_stream(std::span<const std::byte> bytes);
  Result<channel::Delivery> on_tensor_frame(const FrameMessage& m, std::vector<UniqueFd>& fds);
  Result<channel::Delivery> on_frame(const FrameMessage& m, std::vector<UniqueFd>& fds);
  /// The frame's acquire fences, one per buffer (null: none), each fd checked to be a sync_file.
  Result<std::array<std::shared_ptr<const sync::Fence>, kMaxPlanes>> acquire_fences(const FrameMessage& m,
                                                                                   std::vector<UniqueFd>& fds);
  /// Attaches the fences to the buffers' storages (their maps wait) and to the Delivery.
  void attach_fences(channel::Delivery& d, const FrameMessage& m,
                     const std::array<std::shared_ptr<const sync::Fence>, kMaxPlanes>& fences,
                     std::span<const std::shared_ptr<Storage>> homes);
  Result<void> check_sequence(const FrameMessage& m) const;
  /// The storage of import `id` for frame `sequence`, held by a new reference whose deleter releases
  /// it; counts it out. Errors: OutOfMemory.
  Result<std::shared_ptr<Storage>> hand_out(std::uint32_t id, std::uint64_t sequence);
  void delivered(std::uint64_t sequence);

  // receiver.cpp
  void close(Error why, bool peer_closed);
  void close_locked(Table& dropped) noexcept;  // shuts down, empties the table into `dropped`
  void flush_locked() noexcept;  // queues the device waits that completed, then sends every queued release
  void count_released_locked(std::uint32_t buffer_id) noexcept;
  Error closed_error_locked() const;

  const channel::ReceiverOptions options_;
  const std::string label_;

  std::mutex receive_mutex_;
  std::unique_ptr<std::byte[]> buffer_;  // one message; guarded by receive_mutex_
  // Guarded by receive_mutex_: receive() calls that will poll before their first recvmsg. A consumer that keeps
  // up finds the socket empty, so a recvmsg first only fails with EAGAIN: after one such failure the next
  // kPollFirstCalls receives poll first, one syscall less per frame; then one reads first again, so a consumer
  // that lags behind (messages queued) goes back to reading first, one syscall a frame.
  static constexpr unsigned kPollFirstCalls = 8;
  unsigned poll_first_ = 0;
  CheckedFrame checked_;  // guarded by receive_mutex_

  mutable std::mutex mutex_;
  // Guarded by mutex_:
  UniqueFd socket_;
  UniqueFd wake_;  // eventfd: a release that found the socket full wakes a waiting receive()
  const int socket_fd_;  // socket_'s fd, read without the lock (declared after socket_: set from it)
  Table table_;
  std::vector<Pending> pending_;  // capacity >= pending + frames out: a release never allocates
  std::vector<DeviceWait> device_wait_;  // counted in frames out; capacity >= frames out, as pending_
  std::optional<std::uint64_t> last_sequence_;
  channel::ReceiverStats stats_;
  bool closed_ = false;
  bool peer_closed_ = false;
  bool releases_unsendable_ = false;  // a release met the sender gone (EPIPE): later ones are dropped
  bool peer_hello_ = false;                // the sender's hello arrived
  bool peer_fences_ = false;               // the sender's hello carries kCapabilityFences
  std::optional<std::uint64_t> ended_;    // the end of stream arrived: the frames the sender sent
  int close_errno_ = 0;               // a release's sendmsg failed with it (no text built there)
  std::optional<Error> close_error_;  // why, when the closing call could build it
};

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
