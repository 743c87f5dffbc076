// SPDX-License-Identifier: Apache-2.0
// ipc::send / ipc::receive: one tensor per message, header validated before any tensor is built.
#include <edgetensor/ipc.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "text/format.h"

#include "core/backend.h"
#include "core/storage.h"
#include "core/sys.h"
#include "ipc/ipc_wire.h"

namespace edgetensor::inline ET_ABI_NAMESPACE {
namespace detail {

std::array<std::byte, kWireHeaderBytes> encode_header(const WireHeader& h) {
  std::array<std::byte, kWireHeaderBytes> out{};
  std::memcpy(out.data(), &h, sizeof h);
  return out;
}

Result<WireHeader> decode_header(std::span<const std::byte> bytes) {
  auto bad = [](std::string what) { return fail(ErrorCode::InvalidArgument, "malformed tensor message: " + what); };
  if (bytes.size() != kWireHeaderBytes)
    return bad(text::format("{} B received, a version-{} header has {} B", bytes.size(), ipc::kTensorMessageVersion,
                           kWireHeaderBytes));
  WireHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  if (h.magic == __builtin_bswap32(kWireMagic))
    return bad(text::format("magic {:#010x} is {:#010x} byte-swapped: the sender's byte order is the other one; "
                           "the header is in the sender's native order (docs/WIRE.md)", h.magic, kWireMagic));
  if (h.magic != kWireMagic) return bad(text::format("magic {:#010x}, expected {:#010x}", h.magic, kWireMagic));
  if (h.version != ipc::kTensorMessageVersion)
    return bad(text::format("version {}, this receiver speaks version {}", h.version, ipc::kTensorMessageVersion));
  if (h.header_bytes != kWireHeaderBytes)
    return bad(text::format("header_bytes {}, expected {}", h.header_bytes, kWireHeaderBytes));
  if (!dtype_is_valid(static_cast<DType>(h.dtype)))
    return bad(text::format("dtype {} is not a DType (0..{})", h.dtype, kDTypeCount - 1));
  if (h.rank > kMaxRank) return bad(text::format("rank {} exceeds the maximum rank {}", h.rank, kMaxRank));
  auto kind = static_cast<MemoryKind>(h.memory);
  if (kind != MemoryKind::Shm && kind != MemoryKind::DmaBuf)
    return bad(text::format("memory kind {} ({}); only shm (2) and dmabuf (3) travel", h.memory,
                           memory_kind_name(kind)));
  if (h.pixel_format >= kPixelFormatCount)
    return bad(text::format("pixel format {} is not a PixelFormat (0..{})", h.pixel_format,
                           kPixelFormatCount - 1));
  if (h.fd_count != 1) return bad(text::format("fd_count {}, a tensor message carries exactly 1", h.fd_count));
  if (std::memchr(h.name, '\0', sizeof h.name) == nullptr) return bad("name is not NUL-terminated within 64 B");
  constexpr std::uint64_t kSizeMax = static_cast<std::uint64_t>(static_cast<std::size_t>(-1));
  for (std::size_t i = 0; i < h.rank; ++i)
    if (h.shape[i] > kSizeMax) return bad(text::format("shape[{}] = {} exceeds the size type", i, h.shape[i]));
  // The zero-element rule: send never sends such a tensor (it reaches no byte), so none is received.
  for (std::size_t i = 0; i < h.rank; ++i)
    if (h.shape[i] == 0)
      return bad(text::format("shape[{}] = 0: shape [{}] has zero elements; a sender never sends one", i,
                             text::join(std::span(h.shape, h.rank), ", ")));
  for (std::uint64_t v : {h.offset_bytes, h.row_stride_bytes, h.plane_offset_bytes})
    if (v > kSizeMax) return bad(text::format("byte count {} exceeds the size type", v));
  return h;
}

}  // namespace detail

namespace ipc {
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

// A tensor message needs a socket that keeps message boundaries (docs/WIRE.md, "Sockets"): on a stream a
// header can arrive in pieces, and an error or a partial read would leave the stream out of step.
Result<void> require_message_socket(int socket_fd, const char* who) {
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
              text::format("{}: socket fd {} is {}; a tensor message needs a socket that keeps message boundaries: "
                          "AF_UNIX SOCK_SEQPACKET or SOCK_DGRAM (docs/WIRE.md)", who, socket_fd, socket_type_name(type)));
}

// What the user can do with shared memory that is not sealed against shrinking. memfd_create(2): a memfd
// made without MFD_ALLOW_SEALING starts with F_SEAL_SEAL, as does every other tmpfs file (named POSIX
// shm); its /proc/self/fd link reads "/memfd:<name> (deleted)".
std::string unsealed_advice(int fd, int seals, int seals_errno, const std::string& what) {
  std::string head = text::format("ipc::send: {} is not sealed against shrinking (F_SEAL_SHRINK), so a receiver "
                                  "could be killed by SIGBUS", what);
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

Result<void> send(int socket_fd, const TensorDyn& tensor) {
  if (tensor.is_empty_handle()) return fail(ErrorCode::FailedPrecondition, "ipc::send: tensor has no storage");
  // The zero-element rule, before the memory kind: the same answer on every backend, and a zero-element
  // view of a big buffer never sends that buffer.
  if (tensor.element_count() == 0)
    return fail(ErrorCode::FailedPrecondition, text::format("ipc::send: tensor [{}] has zero elements: nothing to share",
                                                           text::join(tensor.shape(), ", ")));
  const MemoryKind kind = tensor.memory();
  if (kind != MemoryKind::Shm && kind != MemoryKind::DmaBuf)
    return fail(ErrorCode::Unsupported, text::format("ipc::send: {} tensors ({}) cannot travel; allocate memory Shm "
                                                    "(memfd) or DmaBuf", memory_kind_name(kind),
                                                    tensor.memory_detail()));
  ET_TRY(require_message_socket(socket_fd, "ipc::send"));
  // SCM_RIGHTS only borrows the fd (the kernel installs its own copy in the receiver): send the
  // storage's fd itself, no dup, no probe. The storage already knows what the fd is.
  const detail::Backing& backing = detail::storage_of(tensor)->backing();
  const int fd = backing.fd();
  if (fd < 0)
    return fail(ErrorCode::Internal, text::format("ipc::send: {} storage ({}) has no fd", memory_kind_name(kind),
                                                 backing.detail()));
  if (kind == MemoryKind::Shm && !(backing.seals() & F_SEAL_SHRINK)) {
    // Not known sealed (our memfds are, from allocation): a named POSIX shm object or an imported file.
    // Its creator may have sealed it since the import (seals only accumulate), so ask the kernel.
    const int seals = sys::fcntl(fd, F_GET_SEALS);
    const int seals_errno = errno;
    if (seals < 0 || !(static_cast<unsigned>(seals) & F_SEAL_SHRINK))
      return fail(ErrorCode::Unsupported, unsealed_advice(fd, seals, seals_errno, tensor.memory_detail()));
  }
  detail::WireHeader h;
  h.version = kTensorMessageVersion;
  h.header_bytes = detail::kWireHeaderBytes;
  h.dtype = static_cast<std::uint8_t>(tensor.dtype());
  h.rank = static_cast<std::uint8_t>(tensor.rank());
  h.memory = static_cast<std::uint8_t>(kind);
  // TODO(issue 12, IPC v2): the image layout, colorimetry and quantization travel in a new header.
  h.offset_bytes = tensor.offset_bytes();
  for (std::size_t i = 0; i < tensor.rank(); ++i) {
    h.shape[i] = tensor.shape()[i];
    h.strides[i] = tensor.strides()[i];
  }
  // Cut the name at a UTF-8 character boundary.
  std::size_t n = std::min(tensor.name().size(), kMaxWireNameBytes);
  while (n > 0 && n < tensor.name().size() && (static_cast<unsigned char>(tensor.name()[n]) & 0xC0) == 0x80) --n;
  std::memcpy(h.name, tensor.name().data(), n);
  auto bytes = detail::encode_header(h);
  return send_fds(socket_fd, bytes, {fd});
}

Result<TensorDyn> receive(int socket_fd, const ReceiveOptions& limits) {
  // One byte more than a header: a longer message shows as MSG_TRUNC, not as a valid header.
  ET_TRY(require_message_socket(socket_fd, "ipc::receive"));
  std::array<std::byte, detail::kWireHeaderBytes + 1> buf{};
  ET_TRY_ASSIGN(auto msg, receive_fds(socket_fd, buf, 1));
  ET_TRY_ASSIGN(auto h, detail::decode_header(std::span(buf.data(), msg.size_bytes)));
  if (msg.fds.size() != 1)
    return fail(ErrorCode::InvalidArgument,
                text::format("malformed tensor message: {} fds arrived, a tensor message carries exactly 1", msg.fds.size()));
  ET_TRY_ASSIGN(auto info, detail::probe_fd(msg.fds[0].get()));
  if (info.buffer_bytes > limits.max_buffer_bytes)
    return fail(ErrorCode::OutOfRange,
                text::format("received {} of {} B exceeds the receiver's limit of {} B (ReceiveOptions::max_buffer_bytes)",
                            info.what, info.buffer_bytes, limits.max_buffer_bytes));
  const auto kind = static_cast<MemoryKind>(h.memory);
  if (info.kind != kind)
    return fail(ErrorCode::InvalidArgument, text::format("tensor message says {} but the fd is {}",
                                                        memory_kind_name(kind), info.what));
  if (kind == MemoryKind::Shm && !(info.seals & F_SEAL_SHRINK))
    return fail(ErrorCode::InvalidArgument,
                text::format("received {} is not sealed against shrinking (F_SEAL_SHRINK): the sender could shrink it "
                            "under this process's mapping (SIGBUS); refused", info.what));
  std::vector<std::size_t> shape(h.shape, h.shape + h.rank);
  ImportOptions options;
  options.offset_bytes = static_cast<std::size_t>(h.offset_bytes);
  options.strides_bytes.assign(h.strides, h.strides + h.rank);
  options.name = h.name;
  // The fd was probed above: import it with that answer (no second probe).
  ET_TRY_ASSIGN(auto tensor, detail::tensor_from_fd(std::move(msg.fds[0]), info, shape, static_cast<DType>(h.dtype),
                                                    options));
  return tensor;
}

}  // namespace ipc
}  // namespace edgetensor
