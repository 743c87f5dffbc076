// SPDX-License-Identifier: Apache-2.0
// Frame channel: a stream of tensors or Frames between two processes over a connected SOCK_SEQPACKET
// socket; each buffer's fd crosses once (announce), then frames are small messages, and the receiver's
// drop of a frame releases it back. Design, closing rules and threads: docs/CHANNEL.md; wire: docs/WIRE.md.
#pragma once

#include <edgetensor/error.h>
#include <edgetensor/export.h>
#include <edgetensor/fence.h>
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
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {
class ChannelSender;    // src/channel/sender.cpp
class ChannelReceiver;  // src/channel/receiver.cpp
}  // namespace detail

namespace channel {


/// Version of the channel's messages; either end refuses any other, naming both versions, and closes
/// the channel (docs/WIRE.md, "Versions"). Version 2 carries the hellos, per-frame presentation time,
/// duration and flags, and the end of stream; fences with frames and releases are a capability both
/// hellos carry (docs/WIRE.md, "Capabilities"), not another version.
inline constexpr std::uint16_t kChannelVersion = 2;
/// Most buffers one channel may keep announced (SenderOptions / ReceiverOptions::max_buffers).
inline constexpr std::size_t kMaxChannelBuffers = 1024;
/// Most releases a Receiver may queue (ReceiverOptions::max_queued_releases), 16 B each.
inline constexpr std::size_t kMaxQueuedReleases = std::size_t{1} << 20;
/// The longest the last holder of a pooled buffer waits for a release fence still pending when the
/// buffer's memory is freed (a Pool destroyed first); past it the memory is leaked, never freed while the
/// consumer's device reads it (docs/SYNC.md, "Teardown"). A Pool's acquire waits within its own timeout.
inline constexpr std::chrono::milliseconds kReleaseFenceTeardownTimeout{5000};

/// A connected AF_UNIX SOCK_SEQPACKET pair (CLOEXEC), one end for a Sender and one for a Receiver
/// (pass one end to a child process across fork, or with ipc::send_fds). Errors: from_errno of socketpair.
[[nodiscard]] ET_API Result<std::pair<UniqueFd, UniqueFd>> socket_pair();

/// What a named socket lets connect (Listener): a peer passes when its credentials (SO_PEERCRED, read at
/// accept) match any rule. Peers refused are closed unread.
struct AllowRule {
  /// A peer whose uid is this process's effective uid.
  bool same_uid = true;
  /// Peers with any of these uids (e.g. 0 for root).
  std::vector<std::uint32_t> uids;
  /// Peers whose primary gid (as SO_PEERCRED reports it) is one of these.
  std::vector<std::uint32_t> gids;
};

struct ListenOptions {
  /// Permission bits of the socket file (connect(2) needs write permission on it): owner only by
  /// default; e.g. 0660 with AllowRule::gids for a group. Set before the socket listens, so no peer
  /// connects under a wider mode. Only bits 0777 (InvalidArgument otherwise). Unused for an abstract name.
  std::uint32_t mode = 0600;
  /// Checked against every peer's credentials at accept.
  AllowRule allow;
  /// Connections the kernel queues before accept (listen(2)), 1 to 2^12 (Linux's default somaxconn).
  int backlog = 16;
};

/// A peer's credentials as the kernel gave them at connect (SO_PEERCRED).
struct PeerCredentials {
  std::int32_t pid = 0;
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
};

struct ListenerStats {
  std::uint64_t accepted = 0;   ///< Peers accepted (allowed).
  std::uint64_t refused = 0;    ///< Peers refused by the allow rule (each closed and logged).
  std::uint64_t gone = 0;       ///< Peers that hung up before accept took them (skipped).
  std::optional<PeerCredentials> last_refused;  ///< The latest refused peer.
};

/// A named AF_UNIX SOCK_SEQPACKET socket (CLOEXEC) that producers accept channel peers on while they run
/// (docs/CHANNEL.md, "Named sockets"). Move-only; a moved-from Listener answers FailedPrecondition. Its
/// calls may come from any thread (accept is serialised inside).
class ET_API Listener {
 public:
  /// Binds `path` and listens. A path starting with '@' is an abstract name (no file, no mode: only the
  /// allow rule guards it; it goes when the socket closes). A socket file left by a dead listener (a
  /// connect finds nobody: ECONNREFUSED) is unlinked and bound again; a path that is not a socket is
  /// never unlinked. Errors: InvalidArgument (empty path or a NUL in it; a path longer than sun_path
  /// allows, naming both lengths; mode past 0777; backlog out of range), AlreadyExists (a live listener
  /// has the path or name, or the path is not a socket: both named), from_errno of socket, bind, chmod, listen.
  [[nodiscard]] static Result<Listener> create(const std::string& path, const ListenOptions& options = {});

  Listener(Listener&& other) noexcept;
  Listener& operator=(Listener&& other) noexcept;
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
  /// Closes the socket; unlinks the socket file if the path still names the file it bound (never
  /// another file put there since).
  ~Listener();

  /// The next allowed peer's connected socket (owned by the caller: hand it to Sender::create or
  /// Receiver::create), waiting at most `timeout` (0: only one already waiting; milliseconds::max(): no
  /// limit). A refused peer is told why (a refuse message naming its uid, gid and the path: its receive()
  /// fails with PermissionDenied, docs/WIRE.md), closed, logged (LogLevel::Warning, naming its pid, uid,
  /// gid and the path) and counted in stats(); accept goes on waiting for the next one. A peer that hung up first is
  /// skipped. Errors: Busy (no allowed peer within the timeout), InvalidArgument (negative timeout),
  /// FailedPrecondition (moved-from), from_errno of accept4 or poll.
  [[nodiscard]] Result<UniqueFd> accept(std::chrono::milliseconds timeout);
  /// The listening socket (borrowed; valid while the Listener lives; O_NONBLOCK): poll it for POLLIN, then
  /// accept(0ms). -1 for a moved-from Listener.
  int fd() const noexcept;
  /// The path given to create ('@' first for an abstract name).
  const std::string& path() const noexcept;
  ListenerStats stats() const;

 private:
  struct State;
  explicit Listener(std::unique_ptr<State> state) noexcept;
  std::unique_ptr<State> state_;
};

/// Connects to a Listener's `path` ('@' first: an abstract name); returns the connected socket (owned,
/// CLOEXEC) for Sender::create or Receiver::create. Waits at most `timeout` while the listener's queue
/// is full. Errors: InvalidArgument (path as Listener::create), NotFound (no such file), Unavailable
/// (nobody listens: ECONNREFUSED, a stale socket file), FailedPrecondition (the path is a file or directory
/// that is no socket, naming its mode), PermissionDenied (the file's mode), Busy (the
/// queue stayed full; sys_errno ETIMEDOUT, EAGAIN for 0), from_errno of socket or connect.
[[nodiscard]] ET_API Result<UniqueFd> connect(const std::string& path,
                                             std::chrono::milliseconds timeout = std::chrono::milliseconds(1000));

/// How a Sender serves a receiver that holds SenderOptions::max_frames_out frames (delivered or on
/// their way, not released) or every announced buffer. Set per receiver: a Sender has one receiver, and
/// a Publisher gives each of its receivers its own policy, limit and counters (a dropped frame is
/// dropped for that receiver only).
enum class ReceiverPolicy : std::uint8_t {
  /// Back-pressure: send() waits for a release, at most send_timeout, then Busy.
  Block = 0,
  /// send() never waits: a frame that finds the receiver at its limit, every announced buffer out or
  /// the socket full is not sent to it (SenderStats::frames_dropped counts it; its sequence is used,
  /// so the receiver sees a gap: ReceiverStats::frames_missing). The caller's tensor is not held, so a
  /// Pool has the buffer back when the caller drops it. Pool size for a producer that never stalls in
  /// acquire: at least max_frames_out x buffers per frame + the buffers the producer holds at once
  /// (e.g. 1 being filled); with several receivers, the sum of their limits + those (docs/CHANNEL.md, "Receiver policy").
  Drop = 1,
};

struct SenderOptions {
  /// Names the channel in errors.
  std::string name;
  /// Buffers announced at once, 1 to kMaxChannelBuffers; at most the receiver's max_buffers. The table
  /// grows past it to the size of a Pool acquired through Sender::acquire, up to the receiver's
  /// max_buffers (which its hello tells the sender).
  std::size_t max_buffers = 32;
  /// Longest a send waits, for a buffer-table slot (every announced buffer has a frame out: a release
  /// frees one) and then for room in the socket (a receiver that stopped reading): then Busy. 0 does
  /// not wait; milliseconds::max() waits without limit.
  std::chrono::milliseconds send_timeout{1000};
  /// What a send does when the receiver is at its limit (ReceiverPolicy).
  ReceiverPolicy policy = ReceiverPolicy::Block;
  /// Frames the receiver may hold (sent and not released) before `policy` applies, 0 to
  /// kMaxQueuedReleases; 0: no limit but the buffer table (every announced buffer out).
  std::size_t max_frames_out = 0;
  /// Whether a receiver that asks for its own policy and frame limit (ReceiverOptions::policy) gets
  /// them in place of `policy` and `max_frames_out`, from the frame after its hello arrives. false: the
  /// sender's choice stands (the request is ignored; the receiver is not told).
  bool receiver_may_choose = true;
};

/// Per-frame values; each unset one is chosen at send.
struct SendOptions {
  /// Greater than every sequence sent before on this channel (InvalidArgument otherwise). Unset: the
  /// previous one + 1 (0 for the first frame).
  std::optional<std::uint64_t> sequence;
  /// CLOCK_MONOTONIC in ns (e.g. the capture time). Unset: read at send.
  std::optional<std::int64_t> timestamp_ns;
  /// Presentation time in ns, on the producer's own timeline (e.g. a GStreamer PTS); carried unchanged.
  /// Unset: none (the receiver's Delivery::pts_ns is unset). INT64_MIN is refused (the wire's "none").
  std::optional<std::int64_t> pts_ns;
  /// Duration in ns, >= 0 (InvalidArgument otherwise). Unset: none.
  std::optional<std::int64_t> duration_ns;
  /// The caller's per-frame flags (e.g. GstBufferFlags), carried unchanged; the channel reads none.
  std::uint32_t flags = 0;
  /// Acquire fences (borrowed for the call; the receiver gets its own copy of each fd): device work that
  /// writes the frame (a GPU, a codec, a camera) and that the receiver's maps wait for. None (empty), one
  /// for every buffer, or one per buffer in the Frame's buffer order (a tensor has 1); a signalled Fence()
  /// sends nothing for its buffer. Sent only when the receiver's hello carries the fence capability (a send
  /// waits for that hello, at most send_timeout); to a receiver without it the send waits on the fences
  /// instead (at most send_timeout: Timeout) and sends the frame without them (docs/CHANNEL.md, "Fences").
  std::span<const sync::Fence> acquire_fences;
};

struct SenderStats {
  std::uint64_t frames_sent = 0;     ///< Frames sent (tensors and Frames).
  std::uint64_t releases = 0;        ///< Frame buffers released by the receiver (one per buffer per frame).
  std::uint64_t announces = 0;       ///< Buffers announced (each an fd sent).
  std::uint64_t retires = 0;         ///< Buffers retired.
  std::size_t buffers_announced = 0; ///< Announced now.
  std::size_t frames_out = 0;        ///< Frame buffers sent and not yet released (references held).
  /// Buffers announced again after they were retired while still alive: the buffer table is smaller
  /// than the set of buffers sent (e.g. a Pool larger than max_buffers). Each costs an fd, an import
  /// and a mapping at the receiver; the first one is logged once (LogLevel::Warning).
  std::uint64_t reannounces = 0;
  /// Frames not sent under ReceiverPolicy::Drop (the receiver at its limit, the table or the socket full).
  std::uint64_t frames_dropped = 0;
  std::uint64_t acquire_fences_sent = 0;   ///< Acquire fence fds sent with frames.
  /// Acquire fences waited on here because the receiver's hello lacks the fence capability.
  std::uint64_t acquire_fences_waited = 0;
  std::uint64_t release_fences = 0;        ///< Release fences received with releases.
};

/// The sending end. Move-only; a moved-from Sender answers FailedPrecondition.
class ET_API Sender {
 public:
  /// Takes `socket` (owned; closed when the Sender goes), sends its hello without waiting (skipped when
  /// the receiver is gone or the socket is full) and starts the release reader thread.
  /// Errors: InvalidArgument (not AF_UNIX SOCK_SEQPACKET, naming what it is; ENOTSOCK; max_buffers,
  /// policy or max_frames_out out of range; negative send_timeout), from_errno of sending the hello (but EAGAIN, EPIPE,
  /// ECONNRESET), Internal (the thread could not start).
  [[nodiscard]] static Result<Sender> create(UniqueFd socket, const SenderOptions& options = {});

  Sender(Sender&& other) noexcept;
  Sender& operator=(Sender&& other) noexcept;
  Sender(const Sender&) = delete;
  Sender& operator=(const Sender&) = delete;
  /// Shuts the socket down (the receiver sees the channel end), stops the reader thread and drops
  /// every reference held for frames out.
  ~Sender();

  /// Sends `tensor` as one frame (announcing its buffer first if the receiver does not hold it) and
  /// keeps a copy of it until the receiver releases the frame. Returns the frame's sequence. A release
  /// that carries a release fence gives a Pool's buffer back fenced: the pool hands it out again only
  /// once the fence has signalled (docs/CHANNEL.md, "Fences").
  /// Errors: FailedPrecondition (empty handle; zero elements; channel closed; the stream ended),
  /// Unsupported (heap or PBO memory; unsealed shared memory, as ipc::send), InvalidArgument (sequence
  /// not increasing; a negative duration_ns; pts_ns INT64_MIN; acquire_fences neither empty, 1 nor one
  /// per buffer), Timeout (a receiver without the fence capability: an acquire fence did not signal
  /// within send_timeout; nothing was sent),
  /// Busy (ReceiverPolicy::Block: the receiver held max_frames_out frames, every announced buffer had a
  /// frame out, or the socket stayed full, for send_timeout: send() waits that long for a release, then
  /// for room in the socket), Unavailable (the receiver is gone), from_errno of sendmsg (the channel
  /// closes). Under ReceiverPolicy::Drop those waits are drops instead: the sequence is returned, the
  /// frame not sent (SenderStats::frames_dropped).
  [[nodiscard]] Result<std::uint64_t> send(const TensorDyn& tensor, const SendOptions& options = {});
  /// Sends `frame` (1 to 4 buffers, each announced as needed) as one frame; keeps each buffer until
  /// the receiver releases it. Errors: as send (an empty frame: FailedPrecondition).
  [[nodiscard]] Result<std::uint64_t> send_frame(const Frame& frame, const SendOptions& options = {});

  /// pool.acquire(timeout); on Busy the error also names what this channel holds out (frames not
  /// released by the receiver, the oldest sequence and its age). While it waits, the calling thread
  /// reads this channel's releases itself, so the release that frees a buffer wakes it directly (one
  /// wake-up per frame, as a raw request-reply round trip has); a buffer that comes back any other way
  /// (dropped by another thread, another channel's release) wakes it too. Afterwards the sender's
  /// reader thread stands back for 50 ms (the next acquire reads what arrives meanwhile): a receiver's
  /// death, or a buffer for a thread that waits on the Pool itself, is seen up to 50 ms later then;
  /// drain() and send() call the reader back at once. Threads may acquire at once: one reads, the
  /// others wait for it within their own timeouts. Errors: Pool::acquire's.
  [[nodiscard]] Result<TensorDyn> acquire(Pool& pool, std::chrono::milliseconds timeout);

  /// Waits until the receiver has released every frame sent and the references held for them are
  /// dropped (a Pool has those buffers back), at most `timeout`. Errors: Busy (frames still out, naming
  /// how many; sys_errno ETIMEDOUT, EAGAIN for 0), the channel's closing error when the channel closed with frames out (they were dropped,
  /// not released).
  [[nodiscard]] Result<void> drain(std::chrono::milliseconds timeout);

  /// Ends the stream: after the frames sent before it, the receiver's receive() answers end_of_stream
  /// (not an error) and keeps answering it. The channel stays open for releases: drain() then waits for
  /// them, and a consumer that keeps frames until its next one arrives gets the end and can drop them
  /// (end_stream() before drain() never waits on such a consumer). Later sends fail. Calling it again does
  /// nothing. Waits at most send_timeout for room in the socket. Errors: Busy (the socket stayed full:
  /// the stream is not ended, call again), the channel's closing error, from_errno of sendmsg (closes).
  [[nodiscard]] Result<void> end_stream();

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
  /// Releases queued because the sender does not read them (its socket is full), 1 to
  /// kMaxQueuedReleases: a frame delivered with this many queued closes the channel instead (OutOfRange,
  /// naming the count and this bound). Each costs 16 B here.
  std::size_t max_queued_releases = 4096;
  /// Asks the sender to serve this receiver under this policy with `max_frames_out` (its hello carries
  /// them, docs/WIRE.md "Messages"): e.g. Drop for a latest-frame consumer of a live stream. The sender
  /// applies it unless SenderOptions::receiver_may_choose is false (a Publisher: PublisherOptions::receiver's),
  /// from its next frame once the hello has arrived. Unset: the sender's choice.
  std::optional<ReceiverPolicy> policy;
  /// With `policy`: the frames this receiver may hold, 0 to kMaxQueuedReleases (0: only the buffer table).
  /// Without `policy` it must stay 0 (Receiver::create: InvalidArgument, as it would not be sent).
  std::size_t max_frames_out = 0;
};

/// One frame as delivered: either `tensor` (sent with Sender::send) or `frame` (Sender::send_frame); or,
/// with end_of_stream set, the end of the stream (no tensor, no frame).
struct Delivery {
  /// End of stream: the number of frames the sender sent on this channel (through a Publisher: to this
  /// receiver, so a late joiner or a Drop receiver counts only its own).
  std::uint64_t sequence = 0;
  std::int64_t timestamp_ns = 0;            ///< The sender's CLOCK_MONOTONIC, ns.
  std::optional<std::int64_t> pts_ns;       ///< SendOptions::pts_ns (ns, the producer's timeline); unset: none.
  std::optional<std::int64_t> duration_ns;  ///< SendOptions::duration_ns (ns, >= 0); unset: none.
  std::uint32_t flags = 0;                  ///< SendOptions::flags, unchanged.
  /// The sender ended the stream (Sender::end_stream): not an error; no frame follows.
  bool end_of_stream = false;
  TensorDyn tensor;                         ///< Empty handle for a Frame and for the end of stream.
  Frame frame;                              ///< Empty for a tensor and for the end of stream.
  /// The sender's acquire fences: empty when none came, else one per buffer (index b: the Frame's buffer
  /// b; 0 for a tensor), null for a buffer without one. Every CPU map and cuda::map of the buffer waits
  /// for it (MapOptions::timeout: Timeout), so a consumer that only maps needs nothing; one that hands the
  /// buffer to its own device API hands it the fence instead (fd() borrowed, or dup() for an API that
  /// takes ownership). Shared with the buffer's maps; valid as long as this pointer.
  std::vector<std::shared_ptr<const sync::Fence>> acquire_fences;
};

struct ReceiverStats {
  std::uint64_t frames_received = 0;  ///< Frames delivered.
  std::uint64_t releases_sent = 0;    ///< Release entries sent (one per buffer per frame).
  std::uint64_t announces = 0;        ///< Buffers imported.
  std::uint64_t retires = 0;          ///< Buffers retired by the sender.
  std::size_t buffers = 0;            ///< Imported now (one fd and one mapping each).
  std::size_t frames_out = 0;         ///< Delivered frame buffers whose holders are alive.
  std::size_t releases_queued = 0;    ///< Releases not sent yet (the socket was full; device work runs).
  std::uint64_t frames_skipped = 0;   ///< Frames receive_latest() released unseen for a newer one.
  /// Frames missing between the sequences delivered (the sum of the gaps): frames the sender dropped
  /// for this receiver (ReceiverPolicy::Drop) when the sender numbers them itself (SendOptions::sequence unset).
  std::uint64_t frames_missing = 0;
  bool end_of_stream = false;         ///< The end of stream arrived.
  std::uint64_t acquire_fences = 0;   ///< Acquire fences received with frames.
  std::uint64_t release_fences_sent = 0;  ///< Release fence fds sent with releases.
};

/// The receiving end. Move-only; a moved-from Receiver answers FailedPrecondition.
class ET_API Receiver {
 public:
  /// Takes `socket` (owned; closed when the Receiver goes: the sender sees the channel end) and sends its
  /// hello without waiting (skipped when the sender is gone or the socket is full).
  /// Errors: InvalidArgument (not AF_UNIX SOCK_SEQPACKET; ENOTSOCK; max_buffers, max_queued_releases,
  /// policy or max_frames_out out of range),
  /// from_errno of eventfd or of sending the hello (but EAGAIN, EPIPE, ECONNRESET).
  [[nodiscard]] static Result<Receiver> create(UniqueFd socket, const ReceiverOptions& options = {});

  Receiver(Receiver&& other) noexcept;
  Receiver& operator=(Receiver&& other) noexcept;
  Receiver(const Receiver&) = delete;
  Receiver& operator=(const Receiver&) = delete;
  /// Closes the socket and every import; delivered tensors stay valid. An import with device work
  /// recorded on it still running waits for it first (cuda::CudaMap::record's teardown_timeout; past it the
  /// import's memory is leaked with a warning, never unmapped).
  ~Receiver();

  /// The next frame, waiting at most `timeout` (0: only what has arrived; milliseconds::max(): no
  /// limit). Handles the announces and retires before it on the way; sends queued releases first.
  /// After the sender's end_stream() and every frame before it: a Delivery with end_of_stream set, at
  /// once, on every later call (not an error; queued releases are still sent).
  /// Errors: Busy (no frame within the timeout: the channel stays open; sys_errno ETIMEDOUT, EAGAIN for 0), Unavailable (the sender closed
  /// the channel or died), FailedPrecondition (closed earlier), InvalidArgument (malformed message,
  /// naming the field, its value and the limit; unknown buffer id; duplicate announce; fences without the
  /// capability, a fence_count not matching fence_mask or the fds, a fence fd that is not a sync_file;
  /// an fd refused as ipc::receive refuses it), OutOfRange (a view or plane past its buffer; an announce past
  /// max_buffers or limits.max_buffer_bytes; max_queued_releases releases queued), from_errno of recvmsg/poll;
  /// a refusal by the accepting end, with its text (docs/WIRE.md, refuse): PermissionDenied with sys_errno
  /// EACCES (the Listener's allow rule), OutOfRange with EUSERS (the publisher's max_receivers). All but Busy close the channel,
  /// except InvalidArgument for a negative `timeout` (refused before anything is read: it stays open).
  [[nodiscard]] Result<Delivery> receive(std::chrono::milliseconds timeout = std::chrono::milliseconds::max());

  /// The newest frame: waits as receive() for one, then takes every frame that has already arrived and
  /// returns the last, releasing each older one at once (counted in stats().frames_skipped; the sender's
  /// pool has them back as soon as its reader thread reads the releases). Waits for nothing more. An end
  /// of stream found while draining is kept for the next call; an error met while draining (the channel
  /// closed) is returned by the next call, this one returns the newest frame. Errors: as receive().
  [[nodiscard]] Result<Delivery> receive_latest(std::chrono::milliseconds timeout = std::chrono::milliseconds::max());

  /// Attaches `fence` to the release of `tensor`'s frame buffer (any copy, view or plane of a delivered
  /// tensor, or a Frame's buffer): the consumer's device still reads the buffer, so the sender's Pool
  /// hands it out again only once the fence has signalled (docs/CHANNEL.md, "Fences"). The release still
  /// goes when the last holder is gone, with the fence; a second fence is merged with the first. A
  /// signalled Fence() does nothing. Errors: InvalidArgument (a tensor this receiver did not deliver; an
  /// end of stream's empty tensor), Unsupported (the sender's hello lacks the fence capability: wait on the
  /// fence before dropping the tensor instead), FailedPrecondition (moved-from; the channel closed),
  /// Fence::merge's.
  [[nodiscard]] Result<void> add_release_fence(const TensorDyn& tensor, sync::Fence fence);
  /// add_release_fence for every buffer of `frame` (a dup of `fence` each). Errors: as above.
  [[nodiscard]] Result<void> add_release_fence(const Frame& frame, sync::Fence fence);

  /// Sends the releases queued because the socket was full, and those held back for device work that
  /// has completed since, without waiting. Errors: the channel's closing error; from_errno of sendmsg
  /// other than EAGAIN (the channel closes).
  [[nodiscard]] Result<void> flush();

  /// The channel's socket, to wait on with poll, select or epoll (POLLIN: a message, or the channel's
  /// end), then receive(0ms); borrowed: the Receiver keeps it open until it goes (never read, write or
  /// close it). A message may be the sender's hello, an announce or a retire, so receive(0ms) can still
  /// answer Busy; releases queued while the sender's socket was full (stats().releases_queued) go at the
  /// next call (or flush()): poll POLLOUT too while there are any. -1 for a moved-from Receiver.
  int fd() const noexcept;

  ReceiverStats stats() const;
  /// Why the channel closed; no error while it is open.
  [[nodiscard]] Result<void> status() const;

 private:
  explicit Receiver(std::shared_ptr<edgetensor::detail::ChannelReceiver> state) noexcept;
  std::shared_ptr<edgetensor::detail::ChannelReceiver> state_;
};

/// Most receivers one Publisher serves (PublisherOptions::max_receivers).
inline constexpr std::size_t kMaxReceivers = 1024;

struct PublisherOptions {
  /// Names the channel in errors and logs.
  std::string name;
  /// Options of every receiver added without its own (add_receiver(socket)) and of every peer the
  /// listener accepts: its policy, frame limit, buffer table and send timeout (SenderOptions). Its name is
  /// replaced by "<name> receiver <id>".
  SenderOptions receiver;
  /// Receivers served at once, 1 to kMaxReceivers: add_receiver past it is OutOfRange, and a peer the
  /// listener accepts past it is closed (logged, counted in PublisherStats::receivers_refused).
  std::size_t max_receivers = 64;
};

/// What one Publisher::send did.
struct PublishResult {
  std::uint64_t sequence = 0;  ///< The frame's sequence, the same on every receiver.
  std::size_t delivered = 0;   ///< Receivers the frame was sent to.
  /// Receivers that did not get it: a ReceiverPolicy::Drop receiver at its limit, or a Block receiver
  /// still at its limit after its send_timeout (it stays connected and sees a gap in the sequences).
  std::size_t dropped = 0;
  std::size_t removed = 0;     ///< Receivers found closed (gone, or failed) and removed by this send.
};

/// How often a ScopedWaitCheck's check runs while a channel call of its thread waits.
inline constexpr std::chrono::milliseconds kWaitCheckInterval{50};

/// Makes the waits of the calling thread's sends stoppable from outside, as Ctrl-C stops a Python call
/// (the Python module uses it). While it lives, Sender::send, Sender::send_frame, Sender::end_stream and
/// Publisher::send, send_frame and end_stream made on this thread wait for a receiver (room in its buffer
/// table, its frame limit, room in its socket) in slices of at most kWaitCheckInterval, and call `check`
/// after each slice and when a signal interrupts the wait (EINTR). An error from `check` ends the call with
/// that error, undone as a timeout is: the frame does not go out to that receiver, nothing is announced that
/// it would not know, and the channel stays open (a later send works). A Publisher stops at that receiver:
/// the ones served before it have the frame, the ones after it do not (the sequence is used), and the call
/// returns the error instead of a PublishResult. Without one (the default) those calls wait as before.
/// `check` runs on the waiting thread with no lock of the channel held; success waits on. Thread rules: it
/// affects only the thread that made it; destroy it on that thread, the latest first (each restores the
/// one it replaced). Not copyable or movable.
class ET_API ScopedWaitCheck {
 public:
  explicit ScopedWaitCheck(ipc::InterruptCheck check);
  ~ScopedWaitCheck();
  ScopedWaitCheck(const ScopedWaitCheck&) = delete;
  ScopedWaitCheck& operator=(const ScopedWaitCheck&) = delete;

 private:
  ipc::InterruptCheck check_;
  const ipc::InterruptCheck* previous_;
};

/// One receiver of a Publisher.
struct ReceiverInfo {
  std::uint64_t id = 0;                  ///< From add_receiver or accept, 1 first; never reused.
  std::optional<PeerCredentials> peer;   ///< SO_PEERCRED of its socket, when the kernel gives it.
  ReceiverPolicy policy = ReceiverPolicy::Block;  ///< In force now (the receiver's request, if granted).
  std::size_t max_frames_out = 0;                 ///< In force now.
  SenderStats stats;                     ///< Its sender's counters (frames_dropped: its drops).
};

struct PublisherStats {
  std::uint64_t frames_published = 0;   ///< Sequences used by send and send_frame (0 receivers included).
  std::uint64_t deliveries = 0;         ///< Frames sent, summed over receivers.
  std::uint64_t drops = 0;              ///< Frames a receiver did not get, summed over receivers.
  std::uint64_t receivers_joined = 0;   ///< Receivers added (by add_receiver or accepted).
  std::uint64_t receivers_left = 0;     ///< Receivers removed: closed by their peer, failed, or disconnect()ed.
  std::uint64_t receivers_refused = 0;  ///< Peers refused, each told why: past max_receivers, or (listen()) by
                                        ///< the Listener's allow rule.
  std::size_t receivers = 0;            ///< Served now.
};

/// One producer serving many receivers (fan-out; docs/CHANNEL.md, "Many receivers"). Each receiver has its
/// own connected socket and, inside, its own Sender: its own policy, frame limit, buffer table and
/// counters. A frame goes to every receiver, in the order they joined, with one sequence; a buffer goes
/// back to its Pool when every receiver it was sent to has released it (or has left). A receiver that
/// joins late is announced each buffer with its first frame that uses it. A receiver that closes or dies
/// is removed at the next send (its frames count as released). Sends are serialised: a Block receiver at
/// its limit holds the others back for up to its send_timeout, a Drop receiver never does. Pool size for
/// a producer that never stalls in acquire: the sum over receivers of max_frames_out x buffers per frame
/// + the buffers the producer holds at once. Move-only; every call may come from any thread; a moved-from
/// Publisher answers FailedPrecondition.
///
/// Releases: each receiver's Sender has a reader thread, but once a frame whose buffers all came from a
/// Pool went out, the sending thread reads the releases already there, without waiting, and that reader
/// thread stands back (parked) for 200 ms: a stream of pool frames at 5 fps or more costs no reader
/// wake-up per frame (docs/CHANNEL.md, "Fixed cost per frame"). Whatever waits for a release reads it or
/// calls the reader back at once: a Pool acquire or try_acquire that finds no buffer free of a pool whose
/// buffers went out here (it reads what is there on its own thread, then wakes the reader), a send that
/// finds a receiver at its frame limit or its table full (it reads what is there first, so a Drop receiver
/// that released its frame is not skipped), drain(), and a frame holding any buffer of no pool (an import,
/// whose owner may wait for the release). So a buffer's release (a Pool's give-back, an import's release
/// callback) runs on the reader thread, on a thread in send() or send_frame() of this Publisher, or on a
/// thread in a Pool acquire of that buffer's pool; none of them may call this Publisher.
class ET_API Publisher {
 public:
  /// A publisher with no receivers (add them with add_receiver). Errors: InvalidArgument (max_receivers
  /// or PublisherOptions::receiver out of range, as Sender::create names them).
  [[nodiscard]] static Result<Publisher> create(const PublisherOptions& options = {});
  /// A publisher that listens on `path` (Listener::create) and accepts receivers on its own thread while
  /// it lives, each with PublisherOptions::receiver. Errors: create's, Listener::create's, Internal (the
  /// thread could not start).
  [[nodiscard]] static Result<Publisher> listen(const std::string& path, const ListenOptions& listen = {},
                                                const PublisherOptions& options = {});

  Publisher(Publisher&& other) noexcept;
  Publisher& operator=(Publisher&& other) noexcept;
  Publisher(const Publisher&) = delete;
  Publisher& operator=(const Publisher&) = delete;
  /// Stops accepting, then closes every receiver as ~Sender does (their frames out are dropped).
  ~Publisher();

  /// Serves a receiver on `socket` (owned from here, also on error) with PublisherOptions::receiver, or
  /// `options`; returns its id. After end_stream() the new receiver is sent the end of stream at once.
  /// Errors: OutOfRange (max_receivers served, naming it), Sender::create's (a socket that is not a
  /// connected AF_UNIX SOCK_SEQPACKET socket, options out of range), FailedPrecondition (moved-from).
  [[nodiscard]] Result<std::uint64_t> add_receiver(UniqueFd socket);
  [[nodiscard]] Result<std::uint64_t> add_receiver(UniqueFd socket, const SenderOptions& options);

  /// Sends `tensor` to every receiver (Sender::send for each; options.sequence, when set, must increase
  /// over this publisher's sequences). With no receiver the frame is checked and its sequence used:
  /// not an error. A receiver's Busy or Drop is that receiver's drop (PublishResult::dropped); a closed
  /// receiver is removed. Errors: the frame's own (Sender::send: FailedPrecondition for an empty handle,
  /// zero elements or after end_stream; Unsupported memory; InvalidArgument timing or sequence).
  [[nodiscard]] Result<PublishResult> send(const TensorDyn& tensor, const SendOptions& options = {});
  /// Sends `frame` to every receiver, as send. Errors: as send.
  [[nodiscard]] Result<PublishResult> send_frame(const Frame& frame, const SendOptions& options = {});

  /// pool.acquire(timeout), after sizing every receiver's buffer table to the pool (Sender::acquire); on
  /// Busy the error names the receivers holding frames (id, pid, frames out, oldest sequence and age).
  [[nodiscard]] Result<TensorDyn> acquire(Pool& pool, std::chrono::milliseconds timeout);

  /// Ends the stream on every receiver (Sender::end_stream) and on every receiver that joins later; later
  /// sends fail. Errors: Busy (some receiver's socket stayed full: call again, it retries those only).
  [[nodiscard]] Result<void> end_stream();

  /// Waits until every receiver has released every frame (Sender::drain), at most `timeout` in all. A
  /// receiver that leaves meanwhile counts as drained. Errors: Busy (frames still out, naming how many
  /// and which receivers hold them; sys_errno ETIMEDOUT, EAGAIN for 0).
  [[nodiscard]] Result<void> drain(std::chrono::milliseconds timeout);

  /// Closes receiver `id` (as ~Sender; its receive() then answers Unavailable). Its frames out count as
  /// released: a Pool may hand their buffers to the producer again, so what that process still holds
  /// (its mappings stay valid: the kernel cannot take them back) may be overwritten from then on. The
  /// one way a producer takes buffers back from a receiver that does not release them; a slow receiver
  /// is never disconnected on a timer. Errors: NotFound (no receiver `id`, naming it).
  [[nodiscard]] Result<void> disconnect(std::uint64_t id);

  /// The receivers served now, in the order they joined.
  std::vector<ReceiverInfo> receivers() const;
  PublisherStats stats() const;
  /// The path given to listen(); empty otherwise.
  const std::string& path() const noexcept;

 private:
  struct State;
  explicit Publisher(std::shared_ptr<State> state) noexcept;
  std::shared_ptr<State> state_;
};

}  // namespace channel
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
