// SPDX-License-Identifier: Apache-2.0
// Low-level fd passing over a Unix-domain socket (SCM_RIGHTS). A tensor travels as its export_fd() plus
// your own message bytes carrying dtype, shape, strides and offset_bytes() (a view exports the whole
// buffer); `edgetensor peer` in tools/edgetensor/round_trip.cpp is a worked example.
#pragma once

#include <edgetensor/array_ref.h>
#include <edgetensor/error.h>
#include <edgetensor/export.h>
#include <edgetensor/unique_fd.h>

#include <cstddef>
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

}  // namespace edgetensor::ipc
