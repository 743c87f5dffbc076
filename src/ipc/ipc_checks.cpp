// SPDX-License-Identifier: Apache-2.0
// Checks shared by the tensor and frame messages (ipc_checks.h).
#include "ipc/ipc_checks.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "text/format.h"

#include "core/storage.h"
#include "base/sys.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {
namespace {

std::string socket_type_name(int type) {
  switch (type) {
    case SOCK_STREAM: return "SOCK_STREAM";
    case SOCK_DGRAM: return "SOCK_DGRAM";
    case SOCK_SEQPACKET: return "SOCK_SEQPACKET";
    case SOCK_RAW: return "SOCK_RAW";
    default: return text::format("socket type {}", type);
  }
}

// What the user can do with shared memory that is not sealed against shrinking. memfd_create(2): a memfd
// made without MFD_ALLOW_SEALING starts with F_SEAL_SEAL, as does every other tmpfs file (named POSIX
// shm); its /proc/self/fd link reads "/memfd:<name> (deleted)".
std::string unsealed_advice(std::string_view who, int fd, int seals, int seals_errno, const std::string& what) {
  std::string head = text::format("{}: {} is not sealed against shrinking (F_SEAL_SHRINK), so a receiver "
                                  "could be killed by SIGBUS", who, what);
  const char* copy = "copy it into a tensor allocated here with MemoryKind::Shm (an anonymous memfd, sealed)";
  if (seals < 0)
    return text::format("{}; this file cannot be sealed (F_GET_SEALS: {}): {}", head, errno_name(seals_errno), copy);
  if (!(static_cast<unsigned>(seals) & F_SEAL_SEAL))
    return head + "; it allows sealing: seal it with fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) on any fd of it (the one "
                  "you imported, or export_fd()) and send again";
  char link[64] = {};
  const std::string path = text::format("/proc/self/fd/{}", fd);
  const bool memfd = ::readlink(path.c_str(), link, sizeof link - 1) > 0 && std::strncmp(link, "/memfd:", 7) == 0;
  if (memfd)
    return text::format("{}; a memfd made without MFD_ALLOW_SEALING (or sealed with F_SEAL_SEAL) can never be "
                        "sealed: {}", head, copy);
  return text::format("{}; a named POSIX shm object or tmpfs file cannot be sealed: {}", head, copy);
}

}  // namespace

// A message needs a socket that keeps message boundaries (docs/WIRE.md, "Sockets"): on a stream a
// header can arrive in pieces, and an error or a partial read would leave the stream out of step.
Result<void> require_message_socket(int socket_fd, std::string_view who, std::string_view message) {
  int type = 0;
  socklen_t len = sizeof type;
  if (::getsockopt(socket_fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0)
    return fail(Error::from_errno(errno, text::format("{}: getsockopt(SO_TYPE) of socket fd {}", who, socket_fd)));
  if (type == SOCK_SEQPACKET || type == SOCK_DGRAM) {
    // fds travel only over AF_UNIX (unix(7), SCM_RIGHTS): an AF_INET datagram socket would fail late
    // (EDESTADDRREQ) on send and block forever on receive.
    int domain = 0;
    len = sizeof domain;
    if (::getsockopt(socket_fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0)
      return fail(Error::from_errno(errno, text::format("{}: getsockopt(SO_DOMAIN) of socket fd {}", who, socket_fd)));
    if (domain == AF_UNIX) return {};
    return fail(ErrorCode::InvalidArgument,
                text::format("{}: socket fd {} has address family {}, not AF_UNIX ({}): fds travel only over Unix-domain "
                            "sockets (unix(7), SCM_RIGHTS; docs/WIRE.md)", who, socket_fd, domain, AF_UNIX));
  }
  return fail(ErrorCode::InvalidArgument,
              text::format("{}: socket fd {} is {}; {} needs a socket that keeps message boundaries: AF_UNIX "
                          "SOCK_SEQPACKET or SOCK_DGRAM (docs/WIRE.md)", who, socket_fd, socket_type_name(type), message));
}

Result<int> sendable_fd(const TensorDyn& tensor, std::string_view what) {
  const MemoryKind kind = tensor.memory();
  if (kind != MemoryKind::Shm && kind != MemoryKind::DmaBuf)
    return fail(ErrorCode::Unsupported, text::format("{}: {} tensors ({}) cannot travel; allocate memory Shm "
                                                    "(memfd) or DmaBuf", what, memory_kind_name(kind),
                                                    tensor.memory_detail()));
  // SCM_RIGHTS only borrows the fd (the kernel installs its own copy in the receiver): send the
  // storage's fd itself, no dup, no probe. The storage already knows what the fd is.
  const Backing& backing = storage_of(tensor)->backing();
  const int fd = backing.fd();
  if (fd < 0)
    return fail(ErrorCode::Internal, text::format("{}: {} storage ({}) has no fd", what, memory_kind_name(kind),
                                                 backing.detail()));
  if (kind == MemoryKind::Shm && !(backing.seals() & F_SEAL_SHRINK)) {
    // Not known sealed (our memfds are, from allocation): a named POSIX shm object or an imported file.
    // Its creator may have sealed it since the import (seals only accumulate), so ask the kernel.
    const int seals = sys::fcntl(fd, F_GET_SEALS);
    const int seals_errno = errno;
    if (seals < 0 || !(static_cast<unsigned>(seals) & F_SEAL_SHRINK))
      return fail(ErrorCode::Unsupported, unsealed_advice(what, fd, seals, seals_errno, tensor.memory_detail()));
  }
  return fd;
}

Result<FdInfo> probe_received(int fd, MemoryKind declared, const ipc::ReceiveOptions& options, std::string_view who) {
  auto info = probe_fd(fd);
  if (!info) return fail(info.error().code(), text::format("{}: {}", who, info.error().message()), info.error().sys_errno());
  if (info->buffer_bytes > options.max_buffer_bytes)
    return fail(ErrorCode::OutOfRange,
                text::format("{}: received {} of {} B exceeds the receiver's limit of {} B "
                            "(ReceiveOptions::max_buffer_bytes)", who, info->what, info->buffer_bytes,
                            options.max_buffer_bytes));
  if (info->kind != declared)
    return fail(ErrorCode::InvalidArgument, text::format("{} says {} but the fd is {}", who,
                                                        memory_kind_name(declared), info->what));
  if (declared == MemoryKind::Shm && !(info->seals & F_SEAL_SHRINK))
    return fail(ErrorCode::InvalidArgument,
                text::format("{}: received {} is not sealed against shrinking (F_SEAL_SHRINK): the sender could "
                            "shrink it under this process's mapping (SIGBUS); refused", who, info->what));
  return info;
}

Result<void> check_not_pooled(const TensorDyn& tensor, bool allow_pooled, std::string_view what) {
  if (allow_pooled || !storage_of(tensor)->pooled()) return {};
  return fail(ErrorCode::FailedPrecondition,
              text::format("{}: the tensor is a buffer of pool '{}', which takes it back when its last holder in this "
                           "process is gone and hands it out again while the receiver may still read it; share pooled "
                           "frames with a frame channel (channel::Sender, <edgetensor/channel.h>: the buffer returns "
                           "on the receiver's release), or set SendOptions::allow_pooled and keep a holder until your "
                           "receiver says it is done", what, tensor.name()));
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
