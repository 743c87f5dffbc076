// SPDX-License-Identifier: Apache-2.0
// Tensors and frames between processes: one message each (a versioned header plus the buffers' fds,
// SCM_RIGHTS) on an AF_UNIX SOCK_SEQPACKET or SOCK_DGRAM socket; send_fds/receive_fds for protocols of
// your own. Why the rules are what they are: docs/IPC.md; the bytes and every check: docs/WIRE.md.
// Threads: the calls keep no state; any thread may call them.
#pragma once

#include <edgetensor/array_ref.h>
#include <edgetensor/error.h>
#include <edgetensor/export.h>
#include <edgetensor/frame.h>
#include <edgetensor/tensor.h>
#include <edgetensor/unique_fd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace ipc {

/// Most fds one message may carry (the kernel's SCM_MAX_FD is 253).
inline constexpr std::size_t kMaxFdsPerMessage = 16;

/// Sends `bytes` (1 or more) and `fds` (borrowed; the receiver gets duplicates) in one message on the
/// connected socket `socket_fd` (borrowed; any type: on a stream the caller frames the bytes). Blocks;
/// retries EINTR; MSG_NOSIGNAL. Errors: InvalidArgument (no bytes, too many fds), from_errno (EPIPE ->
/// Unavailable, ...), Internal for a short send.
[[nodiscard]] ET_API Result<void> send_fds(int socket_fd, std::span<const std::byte> bytes,
                                           ArrayRef<int> fds = {});

/// One received message.
struct Received {
  std::size_t size_bytes = 0;   ///< Bytes written into the caller's buffer.
  std::vector<UniqueFd> fds;    ///< Received fds, owned by the caller, CLOEXEC (MSG_CMSG_CLOEXEC).
};

/// Receives one message into `buffer`, accepting up to `max_fds` fds. Blocks; retries EINTR. Control
/// messages the socket asks for (SO_PASSCRED, ...) are dropped, a pidfd closed (docs/IPC.md).
/// Errors: Unavailable (peer closed: 0 bytes), OutOfRange (MSG_TRUNC, more than `max_fds` fds, MSG_CTRUNC
/// naming what arrived; every fd that arrived is closed), from_errno otherwise.
[[nodiscard]] ET_API Result<Received> receive_fds(int socket_fd, std::span<std::byte> buffer,
                                                  std::size_t max_fds = kMaxFdsPerMessage);

/// Version of the tensor message; a receiver refuses any other, naming both (docs/WIRE.md, "Versions").
inline constexpr std::uint16_t kTensorMessageVersion = 2;
/// Version of the frame message (send_frame / receive_frame); a receiver refuses any other.
inline constexpr std::uint16_t kFrameMessageVersion = 1;
/// Longest tensor name carried (bytes); longer names are cut at a UTF-8 boundary.
inline constexpr std::size_t kMaxWireNameBytes = 63;

/// Called on the waiting thread when a signal interrupts a wait of send/receive (poll(2) gives EINTR):
/// an error ends the call with that error; success waits on for the time left.
using InterruptCheck = std::function<Result<void>()>;

/// The timeout that waits for ever.
inline constexpr std::chrono::milliseconds kWaitForever{-1};

/// How send() and send_frame() wait for room in the socket.
struct SendOptions {
  /// Longest wait: negative (kWaitForever) waits for ever, 0 does not wait. When it passes: Busy,
  /// naming the timeout, with sys_errno EAGAIN for 0 and ETIMEDOUT otherwise; nothing was sent.
  std::chrono::milliseconds timeout = kWaitForever;
  /// Called when a signal interrupts the wait (InterruptCheck); none: the wait goes on.
  InterruptCheck on_interrupt;
  /// Send a Pool's buffer anyway (refused by default: FailedPrecondition). send() holds the tensor only
  /// for the call, so the pool takes the buffer back when the caller's last holder is gone and hands it
  /// out again, overwriting what the receiver reads. With this set the caller takes that on: keep a
  /// holder of the tensor until the receiver says it is done (a release protocol of your own). A frame
  /// channel (channel::Sender) does exactly that and is the way to share pooled frames.
  bool allow_pooled = false;
};

/// Sends `tensor` (its view, dtype, name and metadata) and its whole buffer's fd (borrowed; the receiver
/// gets a duplicate) in one message on the connected socket `socket_fd` (borrowed; AF_UNIX SOCK_SEQPACKET
/// or SOCK_DGRAM). Both processes then share the bytes; the tensor stays usable here. Waits for room as
/// `options` say; MSG_NOSIGNAL.
/// Errors, in this order: FailedPrecondition (empty handle, zero elements), Unsupported (heap, PBO),
/// FailedPrecondition (a Pool's buffer without SendOptions::allow_pooled, naming the channel),
/// InvalidArgument (another socket type, named; ENOTSOCK), Unsupported (shared memory not sealed
/// against shrinking, with the remedy), Busy (timeout), Unavailable (receiver gone), from_errno of
/// sendmsg or poll, on_interrupt's error.
[[nodiscard]] ET_API Result<void> send(int socket_fd, const TensorDyn& tensor, const SendOptions& options = {});

/// Limits a receiver puts on what a sender may hand it, and how long it waits.
struct ReceiveOptions {
  /// Largest buffer accepted, in bytes: a receiver maps a buffer whole (docs/IPC.md). Default 64 GiB
  /// (1 GiB where size_t is 32 bits).
  std::size_t max_buffer_bytes = sizeof(std::size_t) >= 8 ? std::size_t{64} << 30 : std::size_t{1} << 30;
  /// Longest wait for a message: negative (kWaitForever) waits for ever, 0 does not wait. When it
  /// passes: Busy, naming the timeout, with sys_errno EAGAIN for 0 and ETIMEDOUT otherwise; nothing read.
  std::chrono::milliseconds timeout = kWaitForever;
  /// Called when a signal interrupts the wait (InterruptCheck); none: the wait goes on.
  InterruptCheck on_interrupt;
};

/// Receives one tensor sent with send() on `socket_fd` (borrowed; AF_UNIX SOCK_SEQPACKET or SOCK_DGRAM).
/// Checks the message, the fd (count, kind, seals, real size) and the layout before it builds the
/// tensor, which then owns the fd (the checks: docs/WIRE.md); every fd received is closed on every
/// error. Waits for a message as `options` say.
/// Errors: InvalidArgument (socket type, nothing read; a malformed message naming field, value and
/// limit; another version or a frame message; wrong fd kind; unsealed memfd; O_PATH or write-only fd;
/// a bad layout), OutOfRange (buffer smaller than the view or over max_buffer_bytes; a plane past the
/// extent), Unavailable (peer closed), Busy (timeout), receive_fds's errors, from_errno of poll,
/// on_interrupt's error.
[[nodiscard]] ET_API Result<TensorDyn> receive(int socket_fd, const ReceiveOptions& options = {});

/// Sends `frame` (layout, colorimetry, which buffer each plane lies in) and one fd per distinct buffer
/// (1 to 4; borrowed, the receiver gets duplicates) in one message on `socket_fd` (borrowed; as send()).
/// Errors: FailedPrecondition (empty frame; a Pool's buffer without SendOptions::allow_pooled), Unsupported
/// (a heap or PBO buffer; unsealed shared memory; each naming the buffer), InvalidArgument (socket type),
/// then as send().
[[nodiscard]] ET_API Result<void> send_frame(int socket_fd, const Frame& frame, const SendOptions& options = {});

/// Receives one frame sent with send_frame() on `socket_fd` (borrowed). Checks as receive() does, and
/// that no two fds are one buffer and each buffer holds its planes (docs/WIRE.md); the frame owns the
/// fds; a buffer is read-only where its fd was sent read-only. Waits as receive() does.
/// Errors: InvalidArgument (socket type; a malformed message naming field, value and limit; a tensor
/// message; an fd count other than buffer_count; wrong fd kind; unsealed memfd; two fds of one buffer),
/// OutOfRange (a plane past its buffer's end, naming both numbers; a buffer over max_buffer_bytes; more
/// than 4 fds), Unavailable (peer closed), then as receive().
[[nodiscard]] ET_API Result<Frame> receive_frame(int socket_fd, const ReceiveOptions& options = {});

}  // namespace ipc
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
