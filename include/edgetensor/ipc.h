// SPDX-License-Identifier: Apache-2.0
// Passing tensors between processes over a Unix-domain socket (SCM_RIGHTS).
//
// send()/receive() move one tensor per message: a fixed, versioned header (dtype, shape, strides,
// offset, memory kind, name, image layout or plane, colorimetry, quantization) plus its buffer's fd;
// send_frame()/receive_frame() move one Frame (frame.h) per message, one fd per distinct buffer. The
// wire formats are docs/WIRE.md. They need an AF_UNIX socket that keeps message boundaries:
// SOCK_SEQPACKET (connected, e.g. from socketpair) or SOCK_DGRAM; a SOCK_STREAM socket is refused
// before a byte moves. The receivers check everything before they build a tensor or a frame, so a sender cannot crash a receiver. send_fds()/receive_fds()
// are the building blocks for protocols of your own.
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

/// Sends `bytes` (1 or more) and `fds` (borrowed; the kernel installs duplicates in the receiver) in one
/// message on the connected socket `socket_fd` (borrowed). Blocks; retries EINTR; MSG_NOSIGNAL. On a
/// SOCK_STREAM socket there are no messages: the fds travel with the first byte and the caller frames
/// the bytes (and handles a short send: Internal below).
/// Errors: InvalidArgument (no bytes, too many fds), from_errno (EPIPE -> Unavailable, ...),
/// Internal for a short send.
[[nodiscard]] ET_API Result<void> send_fds(int socket_fd, std::span<const std::byte> bytes,
                                           ArrayRef<int> fds = {});

/// One received message.
struct Received {
  std::size_t size_bytes = 0;   ///< Bytes written into the caller's buffer.
  std::vector<UniqueFd> fds;    ///< Received fds, owned by the caller, CLOEXEC (MSG_CMSG_CLOEXEC).
};

/// Receives one message into `buffer`, accepting up to `max_fds` fds. Blocks; retries EINTR.
/// Works whatever the receiving socket asks the kernel to add (SO_PASSCRED, SO_PASSPIDFD, SO_PASSSEC,
/// SO_TIMESTAMP*): the control buffer has room for those too; they are not returned, and a pidfd the
/// kernel installs (SCM_PIDFD) is closed. An SCM_SECURITY label over one page (the kernel cuts labels
/// there: 4, 16 or 64 KiB) shows as MSG_CTRUNC.
/// Errors: Unavailable (peer closed: 0 bytes), OutOfRange (message larger than `buffer` - MSG_TRUNC -,
/// more fds than `max_fds`, or control data truncated - MSG_CTRUNC -, naming the control messages that
/// did arrive; every fd that did arrive is closed), from_errno otherwise.
[[nodiscard]] ET_API Result<Received> receive_fds(int socket_fd, std::span<std::byte> buffer,
                                                  std::size_t max_fds = kMaxFdsPerMessage);

/// Version of the tensor message; a receiver refuses any other (version 1, sent by edgetensor 0.3 and
/// older, is refused naming both versions: docs/WIRE.md, "Versions").
inline constexpr std::uint16_t kTensorMessageVersion = 2;
/// Version of the frame message (send_frame / receive_frame); a receiver refuses any other.
inline constexpr std::uint16_t kFrameMessageVersion = 1;
/// Longest tensor name carried (bytes); longer names are cut at a UTF-8 boundary.
inline constexpr std::size_t kMaxWireNameBytes = 63;

/// Called on the waiting thread when a signal interrupts a wait of send/receive (poll(2) fails with
/// EINTR): an error ends the call with that error; success goes on waiting for the time left. Lets a
/// caller run its own signal handling during a long wait (Python's: Ctrl-C raises KeyboardInterrupt).
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
};

/// Sends `tensor` (its view: shape, strides, offset; its dtype and name; its image layout, or the
/// pixel format and plane a plane view shows; colorimetry; quantization, per-axis parameters included)
/// and its buffer's fd (the kernel installs a copy in the receiver) in one message on the connected socket
/// `socket_fd` (borrowed; AF_UNIX SOCK_SEQPACKET or SOCK_DGRAM). The tensor stays usable here; both
/// processes then share the same bytes. Only memory a receiver can trust is sent: memfd sealed against
/// shrinking (every memfd tensor allocated here is) and DMA-BUF. A tensor with zero elements reaches no
/// byte and is never sent, whatever its memory (a zero-element view of a big buffer included). Waits
/// for room in the socket as options say; MSG_NOSIGNAL.
/// Errors, checked in this order: FailedPrecondition (empty handle; "tensor [0, 3] has zero elements:
/// nothing to share"), Unsupported (heap, PBO), InvalidArgument (a SOCK_STREAM or other socket type,
/// named; ENOTSOCK), Unsupported (shared memory not sealed against shrinking - a sender could shrink it
/// under the receiver's mapping -, with what can be done: seal a memfd that allows sealing with
/// F_SEAL_SHRINK; copy a memfd made without MFD_ALLOW_SEALING, or named POSIX shm, into a tensor
/// allocated here), Busy (the timeout passed: SendOptions), Unavailable (the receiver is gone: EPIPE,
/// ECONNRESET), from_errno of sendmsg or poll, on_interrupt's error.
[[nodiscard]] ET_API Result<void> send(int socket_fd, const TensorDyn& tensor, const SendOptions& options = {});

/// Limits a receiver puts on what a sender may hand it, and how long it waits.
struct ReceiveOptions {
  /// Largest buffer accepted, in bytes. The receiver maps a shared buffer whole (one persistent mapping
  /// per storage), so a hostile sender could otherwise pass a huge sparse memfd with a 1-byte view and
  /// use up this process's address space. Default 64 GiB (1 GiB where size_t is 32 bits).
  std::size_t max_buffer_bytes = sizeof(std::size_t) >= 8 ? std::size_t{64} << 30 : std::size_t{1} << 30;
  /// Longest wait for a message: negative (kWaitForever) waits for ever, 0 does not wait. When it
  /// passes: Busy, naming the timeout, with sys_errno EAGAIN for 0 and ETIMEDOUT otherwise; nothing
  /// was read.
  std::chrono::milliseconds timeout = kWaitForever;
  /// Called when a signal interrupts the wait (InterruptCheck); none: the wait goes on.
  InterruptCheck on_interrupt;
};

/// Receives one tensor sent with send() on `socket_fd` (borrowed; AF_UNIX SOCK_SEQPACKET or SOCK_DGRAM,
/// checked before anything is read). Validates the message (size, magic and byte order, version,
/// dtype, rank, a shape with no zero, memory kind, name, pixel format, image plane, colorimetry,
/// quantization against dtype and shape, the per-axis payload's length), the fd count (exactly one;
/// MSG_CTRUNC), what the fd really is (it must match the header's memory kind; a memfd must be sealed
/// against shrinking), its real size against offset + extent and options.max_buffer_bytes, and the
/// image layout against the view's extent (as set_image_layout). Every fd received is closed on every
/// error path. Waits for a message as options say.
/// Errors: InvalidArgument (a SOCK_STREAM or other socket type, named, nothing read; malformed message,
/// naming the field, its value and the limit - "shape[0] = 0: shape [0, 3] has zero elements" -; a
/// version-1 message from an older sender, naming both versions; a frame message, naming it; wrong fd
/// kind; unsealed memfd; O_PATH or write-only fd; a bad layout), OutOfRange (buffer smaller than the
/// view, or larger than max_buffer_bytes; a plane past the extent), Unavailable (peer closed), Busy
/// (the timeout passed), the receive_fds errors, from_errno of poll, on_interrupt's error.
[[nodiscard]] ET_API Result<TensorDyn> receive(int socket_fd, const ReceiveOptions& options = {});

/// Sends `frame` (layout, colorimetry, which buffer each plane lies in) and one fd per distinct buffer
/// (frame.buffer_count(), 1 to 4; borrowed, the kernel installs copies in the receiver) in one message
/// on `socket_fd` (borrowed; AF_UNIX SOCK_SEQPACKET or SOCK_DGRAM). Every buffer must be memory a
/// receiver can trust, as for send(). Waits as send() does; MSG_NOSIGNAL.
/// Errors: FailedPrecondition (empty frame), Unsupported (a heap or PBO buffer; unsealed shared memory,
/// with send()'s advice; each naming the buffer), InvalidArgument (socket type), then as send().
[[nodiscard]] ET_API Result<void> send_frame(int socket_fd, const Frame& frame, const SendOptions& options = {});

/// Receives one frame sent with send_frame() on `socket_fd` (borrowed; checked as receive() checks it).
/// Validates the message (size, magic and byte order, version, format, plane and buffer counts, the
/// plane -> buffer map with every buffer used, memory kinds, colorimetry, unused fields zero, the layout
/// by ImageLayout::validate), that exactly buffer_count fds arrived, each fd as receive() does (its kind
/// against the header, seals, options.max_buffer_bytes), that no two fds are one buffer, and that each
/// buffer holds its planes' tight ends (ImageLayout::plane_end_bytes). A buffer is read-only where its
/// fd was sent read-only. Every fd received is closed on every error path. Waits as receive() does.
/// Errors: InvalidArgument (socket type; malformed message naming field, value and limit; a tensor
/// message, naming it; an fd count other than buffer_count; wrong fd kind; unsealed memfd; two fds of
/// one buffer), OutOfRange (a plane past its buffer's end, naming plane, buffer and both numbers; a
/// buffer over max_buffer_bytes; more than 4 fds), Unavailable (peer closed), then as receive().
[[nodiscard]] ET_API Result<Frame> receive_frame(int socket_fd, const ReceiveOptions& options = {});

}  // namespace ipc
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
