// SPDX-License-Identifier: Apache-2.0
// Passing tensors between processes over a Unix-domain socket (SCM_RIGHTS).
//
// send()/receive() move one tensor per message: a fixed, versioned header (dtype, shape, strides,
// offset, memory kind, image metadata, name) plus its buffer's fd. receive() checks everything before it
// builds a tensor, so a sender cannot crash a receiver. send_fds()/receive_fds() are the building blocks
// for protocols of your own.
#pragma once

#include <edgetensor/array_ref.h>
#include <edgetensor/error.h>
#include <edgetensor/export.h>
#include <edgetensor/tensor.h>
#include <edgetensor/unique_fd.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace edgetensor::ipc {

/// Most fds one message may carry (the kernel's SCM_MAX_FD is 253).
inline constexpr std::size_t kMaxFdsPerMessage = 16;

/// Sends `bytes` (1 or more) and `fds` (borrowed; the kernel installs duplicates in the receiver) in one
/// message on the connected socket `socket_fd` (borrowed). Blocks; retries EINTR; MSG_NOSIGNAL.
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
/// Errors: Unavailable (peer closed: 0 bytes), OutOfRange (message larger than `buffer` - MSG_TRUNC -
/// or more fds than `max_fds` / control data truncated - MSG_CTRUNC; every fd that did arrive is
/// closed), from_errno otherwise.
[[nodiscard]] ET_API Result<Received> receive_fds(int socket_fd, std::span<std::byte> buffer,
                                                  std::size_t max_fds = kMaxFdsPerMessage);

/// Version of the tensor message header; a receiver refuses any other.
inline constexpr std::uint16_t kTensorMessageVersion = 1;
/// Longest tensor name carried (bytes); longer names are cut at a UTF-8 boundary.
inline constexpr std::size_t kMaxWireNameBytes = 63;

/// Sends `tensor` (its view: shape, strides, offset; its dtype, image metadata and name) and a dup of
/// its buffer's fd on the connected socket `socket_fd` (borrowed). The tensor stays usable here; both
/// processes then share the same bytes. Only memory a receiver can trust is sent: memfd sealed against
/// shrinking (every memfd tensor allocated here is) and DMA-BUF. Blocks; MSG_NOSIGNAL.
/// Errors: FailedPrecondition (empty handle or zero-byte tensor: no buffer), Unsupported (heap, PBO, a
/// named POSIX shm object or an unsealed file: a sender could shrink it under the receiver's mapping),
/// the send_fds errors.
[[nodiscard]] ET_API Result<void> send(int socket_fd, const TensorDyn& tensor);

/// Receives one tensor sent with send(). Validates the header (size, magic, version, dtype, rank,
/// memory kind, name), the fd count (exactly one; MSG_CTRUNC), what the fd really is (it must match the
/// header's memory kind; a memfd must be sealed against shrinking) and its real size against offset +
/// extent. Every fd received is closed on every error path. Blocks.
/// Errors: InvalidArgument (malformed header, naming the field, its value and the limit; wrong fd
/// kind; unsealed memfd), OutOfRange (buffer smaller than the view), Unavailable (peer closed), the
/// receive_fds errors.
[[nodiscard]] ET_API Result<TensorDyn> receive(int socket_fd);

}  // namespace edgetensor::ipc
