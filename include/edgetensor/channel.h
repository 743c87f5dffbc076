// SPDX-License-Identifier: Apache-2.0
// Frame channel: a steady stream of tensors or Frames from one process to another in which a buffer's
// fd crosses once. The wire format is docs/WIRE.md, "The frame channel".
//
// The pair: a channel::Sender and a channel::Receiver at the two ends of one connected AF_UNIX
// SOCK_SEQPACKET socket (socket_pair(), or a named socket: socket(2) + bind/listen/accept and connect,
// unix(7)). SOCK_SEQPACKET because it keeps message boundaries, carries fds (SCM_RIGHTS) and is
// connected, so either end sees the other's death (0 bytes read, EPIPE on send); SOCK_DGRAM has no
// peer to lose and SOCK_STREAM no boundaries: both are refused.
//
// What crosses: the first time the sender sends a buffer (a memfd sealed against shrinking or a
// DMA-BUF, as ipc::send requires) it ANNOUNCEs it: a buffer id, its memory kind and size, and its fd.
// The receiver imports it once (probe, import, one persistent mapping) and keeps it by id. After that
// a FRAME is one small message with no fd: the buffer id(s), a sequence number, a CLOCK_MONOTONIC
// timestamp in ns, and what ipc::send / ipc::send_frame would say about the tensor or Frame (view:
// offset, shape, strides, dtype, name; image layout or plane; colorimetry; quantization). A frame
// costs the receiver no import, no fd and no mmap.
//
// Release: every tensor (or Frame buffer) the receiver hands out is held like a pool's buffer: when
// its last holder (the tensor, its copies, views, maps, ...) is gone, on whatever thread that is, a
// RELEASE message names (buffer id, sequence) back to the sender. The sender keeps a reference to
// every tensor it sent until that release arrives (its copy of the TensorDyn), so a Pool's buffer goes
// back to its pool exactly then, with nothing special in the pool. A buffer may be out in several
// frames at once; each frame is released on its own. Device work recorded on a frame
// (cuda::CudaMap::record) holds its release back until the work has completed (cudaEventQuery), as a
// Pool holds its buffer: the receiver asks at each of its calls, every millisecond while a receive()
// waits; no thread blocks on the device.
//
// Buffer table: the sender announces at most SenderOptions::max_buffers buffers at once. Before it
// announces another it RETIREs (receiver: close the import) announced buffers whose last tensor in the
// sending process is gone, then, if still full, the least recently sent buffer with no frame out; if
// every announced buffer is out, send() fails with Busy. The receiver refuses more imports than its
// own ReceiverOptions::max_buffers. A Pool's buffers count as alive (the pool keeps them), so they
// stay announced (and mapped in the receiver) until evicted or the channel ends.
//
// Sequence and time: frames carry strictly increasing sequence numbers (SendOptions::sequence, or the
// previous one + 1, starting at 0) and a timestamp (SendOptions::timestamp_ns, or CLOCK_MONOTONIC read
// at send; clock_gettime(2): one clock for every process of the machine), so a consumer can see drops
// (a gap) and latency (its own CLOCK_MONOTONIC minus the timestamp).
//
// Peer death and closing: when either end is destroyed, or its process dies (kill -9 included), the
// other sees it: the sender's internal reader thread drops every reference it held (Pool buffers come
// back at once) and later sends fail with Unavailable; the receiver's receive() fails with Unavailable
// and it closes every import it holds. Tensors already delivered stay valid in both processes (each
// holds the memory through its own fd and mapping). Nothing blocks forever: a sender whose receiver
// stops releasing sees Pool::acquire fail with Busy after its timeout (Sender::acquire names the
// frames the receiver holds), and send() waits at most SenderOptions::send_timeout for a free buffer-table slot and room in the socket.
//
// Errors that close the channel: what the peer or the socket did - a malformed message, an unknown
// buffer id, a duplicate announce, a release of a frame that is not out, a fence (not in version 1),
// an fd that fails the checks of ipc::receive, a send or receive that failed, a peer that closed -
// closes it at both ends (the socket is shut down; the peer sees the end of the channel): a peer that
// broke the protocol cannot be trusted to stay in step, so neither end tries. The call that met the
// error returns it (receive(), send()); errors the sender's reader thread meets in the background show
// in its later calls. Every later call fails with Unavailable (the peer closed or died) or
// FailedPrecondition ("channel 'cam0' is closed: <the first error>"). Every fd that arrives with a
// refused message is closed. A call refused for its own arguments before anything was sent (a heap
// tensor, a sequence not increasing) and a timeout (Busy) leave the channel open.
//
// Threads: Sender and Receiver are thread-safe (their calls are serialised inside). A Sender runs one
// internal thread that reads releases; tensors it sent are dropped on that thread (so a Pool's buffer
// comes back there). A Receiver runs no thread: a release is sent by the thread that drops the last
// holder (one non-blocking sendmsg); one that would block (the sender is not reading) is queued and
// sent by the receiver's next call, or by a receive() waiting in another thread (woken through an
// eventfd). Delivered tensors may outlive the Receiver (a release then goes nowhere). Neither object
// may be used in the child of a fork() (the sender's thread is not there).
//
// Fences: the messages have room for a sync_file fence fd per frame and per release (docs/WIRE.md); a
// later version fills it. Version 1 sends none and refuses any.
#pragma once

#include <edgetensor/error.h>
#include <edgetensor/export.h>
#include <edgetensor/frame.h>
#include <edgetensor/ipc.h>
#include <edgetensor/pool.h>
#include <edgetensor/tensor.h>
#include <edgetensor/unique_fd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {
class ChannelSender;    // src/channel/sender.cpp
class ChannelReceiver;  // src/channel/receiver.cpp
}  // namespace detail

namespace channel {


/// Version of the channel's messages; a receiver or sender refuses any other (docs/WIRE.md).
inline constexpr std::uint16_t kChannelVersion = 1;
/// Most buffers one channel may keep announced (SenderOptions / ReceiverOptions::max_buffers).
inline constexpr std::size_t kMaxChannelBuffers = 1024;

/// A connected AF_UNIX SOCK_SEQPACKET pair (CLOEXEC), one end for a Sender and one for a Receiver
/// (pass one end to a child process across fork, or with ipc::send_fds). Errors: from_errno of socketpair.
[[nodiscard]] ET_API Result<std::pair<UniqueFd, UniqueFd>> socket_pair();

struct SenderOptions {
  /// Names the channel in errors.
  std::string name;
  /// Buffers announced at once, 1 to kMaxChannelBuffers; at most the receiver's max_buffers.
  std::size_t max_buffers = 32;
  /// Longest a send waits, for a buffer-table slot (every announced buffer has a frame out: a release
  /// frees one) and then for room in the socket (a receiver that stopped reading): then Busy. 0 does
  /// not wait; milliseconds::max() waits without limit.
  std::chrono::milliseconds send_timeout{1000};
};

/// Per-frame values; each unset one is chosen at send.
struct SendOptions {
  /// Greater than every sequence sent before on this channel (InvalidArgument otherwise). Unset: the
  /// previous one + 1 (0 for the first frame).
  std::optional<std::uint64_t> sequence;
  /// CLOCK_MONOTONIC in ns (e.g. the capture time). Unset: read at send.
  std::optional<std::int64_t> timestamp_ns;
};

struct SenderStats {
  std::uint64_t frames_sent = 0;     ///< Frames sent (tensors and Frames).
  std::uint64_t releases = 0;        ///< Frame buffers released by the receiver (one per buffer per frame).
  std::uint64_t announces = 0;       ///< Buffers announced (each an fd sent).
  std::uint64_t retires = 0;         ///< Buffers retired.
  std::size_t buffers_announced = 0; ///< Announced now.
  std::size_t frames_out = 0;        ///< Frame buffers sent and not yet released (references held).
};

/// The sending end. Move-only; a moved-from Sender answers FailedPrecondition.
class ET_API Sender {
 public:
  /// Takes `socket` (owned; closed when the Sender goes) and starts the release reader thread.
  /// Errors: InvalidArgument (not AF_UNIX SOCK_SEQPACKET, naming what it is; ENOTSOCK; max_buffers
  /// out of range; negative send_timeout), Internal (the thread could not start).
  [[nodiscard]] static Result<Sender> create(UniqueFd socket, const SenderOptions& options = {});

  Sender(Sender&& other) noexcept;
  Sender& operator=(Sender&& other) noexcept;
  Sender(const Sender&) = delete;
  Sender& operator=(const Sender&) = delete;
  /// Shuts the socket down (the receiver sees the channel end), stops the reader thread and drops
  /// every reference held for frames out.
  ~Sender();

  /// Sends `tensor` as one frame (announcing its buffer first if the receiver does not hold it) and
  /// keeps a copy of it until the receiver releases the frame. Returns the frame's sequence.
  /// Errors: FailedPrecondition (empty handle; zero elements; channel closed), Unsupported (heap or
  /// PBO memory; unsealed shared memory, as ipc::send), InvalidArgument (sequence not increasing),
  /// Busy (every announced buffer still had a frame out, or the socket stayed full, for send_timeout:
  /// send() waits that long for a release to free a table slot, then for room in the socket), Unavailable (the
  /// receiver is gone), from_errno of sendmsg (the channel closes).
  [[nodiscard]] Result<std::uint64_t> send(const TensorDyn& tensor, const SendOptions& options = {});
  /// Sends `frame` (1 to 4 buffers, each announced as needed) as one frame; keeps each buffer until
  /// the receiver releases it. Errors: as send (an empty frame: FailedPrecondition).
  [[nodiscard]] Result<std::uint64_t> send_frame(const Frame& frame, const SendOptions& options = {});

  /// pool.acquire(timeout); on Busy the error also names what this channel holds out (frames not
  /// released by the receiver, the oldest sequence and its age). Errors: Pool::acquire's.
  [[nodiscard]] Result<TensorDyn> acquire(Pool& pool, std::chrono::milliseconds timeout);

  /// Waits until the receiver has released every frame sent and the references held for them are
  /// dropped (a Pool has those buffers back), at most `timeout`. Errors: Busy (frames still out, naming
  /// how many), the channel's closing error when the channel closed with frames out (they were dropped,
  /// not released).
  [[nodiscard]] Result<void> drain(std::chrono::milliseconds timeout);

  /// Counters now (consistent with each other). A moved-from Sender gives zeros.
  SenderStats stats() const;
  /// Why the channel closed; no error while it is open. FailedPrecondition for a moved-from Sender.
  [[nodiscard]] Result<void> status() const;

 private:
  explicit Sender(std::shared_ptr<edgetensor::detail::ChannelSender> state) noexcept;
  std::shared_ptr<edgetensor::detail::ChannelSender> state_;
};

struct ReceiverOptions {
  /// Names the channel in errors.
  std::string name;
  /// Buffers imported at once, 1 to kMaxChannelBuffers: an announce past it closes the channel
  /// (OutOfRange). Each holds one fd and one mapping in this process.
  std::size_t max_buffers = 32;
  /// Limits on each announced buffer (max_buffer_bytes), as ipc::receive applies them. Its timeout and
  /// on_interrupt are not used: Receiver::receive takes its own timeout.
  ipc::ReceiveOptions limits;
};

/// One frame as delivered: either `tensor` (sent with Sender::send) or `frame` (Sender::send_frame).
struct Delivery {
  std::uint64_t sequence = 0;
  std::int64_t timestamp_ns = 0;  ///< The sender's CLOCK_MONOTONIC, ns.
  TensorDyn tensor;               ///< Empty handle for a Frame.
  Frame frame;                    ///< Empty for a tensor.
};

struct ReceiverStats {
  std::uint64_t frames_received = 0;  ///< Frames delivered.
  std::uint64_t releases_sent = 0;    ///< Release entries sent (one per buffer per frame).
  std::uint64_t announces = 0;        ///< Buffers imported.
  std::uint64_t retires = 0;          ///< Buffers retired by the sender.
  std::size_t buffers = 0;            ///< Imported now (one fd and one mapping each).
  std::size_t frames_out = 0;         ///< Delivered frame buffers whose holders are alive.
  std::size_t releases_queued = 0;    ///< Releases not sent yet (the socket was full; device work runs).
};

/// The receiving end. Move-only; a moved-from Receiver answers FailedPrecondition.
class ET_API Receiver {
 public:
  /// Takes `socket` (owned; closed when the Receiver goes: the sender sees the channel end).
  /// Errors: InvalidArgument (not AF_UNIX SOCK_SEQPACKET; ENOTSOCK; max_buffers out of range),
  /// from_errno of eventfd.
  [[nodiscard]] static Result<Receiver> create(UniqueFd socket, const ReceiverOptions& options = {});

  Receiver(Receiver&& other) noexcept;
  Receiver& operator=(Receiver&& other) noexcept;
  Receiver(const Receiver&) = delete;
  Receiver& operator=(const Receiver&) = delete;
  /// Closes the socket and every import; delivered tensors stay valid.
  ~Receiver();

  /// The next frame, waiting at most `timeout` (0: only what has arrived; milliseconds::max(): no
  /// limit). Handles the announces and retires before it on the way; sends queued releases first.
  /// Errors: Busy (no frame within the timeout: the channel stays open), Unavailable (the sender closed
  /// the channel or died), FailedPrecondition (closed earlier), InvalidArgument (malformed message,
  /// naming the field, its value and the limit; unknown buffer id; duplicate announce; a fence; an fd
  /// refused as ipc::receive refuses it), OutOfRange (a view or plane past its buffer; an announce past
  /// max_buffers or limits.max_buffer_bytes), from_errno of recvmsg/poll. All but Busy close the channel,
  /// except InvalidArgument for a negative `timeout` (refused before anything is read: it stays open).
  [[nodiscard]] Result<Delivery> receive(std::chrono::milliseconds timeout = std::chrono::milliseconds::max());

  /// Sends the releases queued because the socket was full, and those held back for device work that
  /// has completed since, without waiting. Errors: the channel's closing error; from_errno of sendmsg
  /// other than EAGAIN (the channel closes).
  [[nodiscard]] Result<void> flush();

  ReceiverStats stats() const;
  /// Why the channel closed; no error while it is open.
  [[nodiscard]] Result<void> status() const;

 private:
  explicit Receiver(std::shared_ptr<edgetensor::detail::ChannelReceiver> state) noexcept;
  std::shared_ptr<edgetensor::detail::ChannelReceiver> state_;
};

}  // namespace channel
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
