// SPDX-License-Identifier: Apache-2.0
// ipc::send / ipc::receive: one tensor per message, header validated before any tensor is built.
#include <edgetensor/ipc.h>

#include <fcntl.h>

#include <cstring>

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
  if (h.pixel_format > static_cast<std::uint8_t>(PixelFormat::PlanarRgb))
    return bad(text::format("pixel format {} is not a PixelFormat (0..{})", h.pixel_format,
                           static_cast<int>(PixelFormat::PlanarRgb)));
  if (h.fd_count != 1) return bad(text::format("fd_count {}, a tensor message carries exactly 1", h.fd_count));
  if (std::memchr(h.name, '\0', sizeof h.name) == nullptr) return bad("name is not NUL-terminated within 64 B");
  constexpr std::uint64_t kSizeMax = static_cast<std::uint64_t>(static_cast<std::size_t>(-1));
  for (std::size_t i = 0; i < h.rank; ++i)
    if (h.shape[i] > kSizeMax) return bad(text::format("shape[{}] = {} exceeds the size type", i, h.shape[i]));
  for (std::uint64_t v : {h.offset_bytes, h.row_stride_bytes, h.plane_offset_bytes})
    if (v > kSizeMax) return bad(text::format("byte count {} exceeds the size type", v));
  return h;
}

}  // namespace detail

namespace ipc {

Result<void> send(int socket_fd, const TensorDyn& tensor) {
  if (tensor.is_empty_handle()) return fail(ErrorCode::FailedPrecondition, "ipc::send: tensor has no storage");
  const MemoryKind kind = tensor.memory();
  if (kind != MemoryKind::Shm && kind != MemoryKind::DmaBuf)
    return fail(ErrorCode::Unsupported, text::format("ipc::send: {} tensors ({}) cannot travel; allocate memory Shm "
                                                    "(memfd) or DmaBuf", memory_kind_name(kind),
                                                    tensor.memory_detail()));
  // SCM_RIGHTS only borrows the fd (the kernel installs its own copy in the receiver): send the
  // storage's fd itself, no dup, no probe. The storage already knows what the fd is.
  const detail::Backing& backing = detail::storage_of(tensor)->backing();
  if (backing.buffer_bytes() == 0)
    return fail(ErrorCode::FailedPrecondition, "ipc::send: empty tensor has no buffer to send");
  const int fd = backing.fd();
  if (fd < 0)
    return fail(ErrorCode::Internal, text::format("ipc::send: {} storage ({}) has no fd", memory_kind_name(kind),
                                                 backing.detail()));
  if (kind == MemoryKind::Shm && !(backing.seals() & F_SEAL_SHRINK)) {
    // Not known sealed (our memfds are, from allocation): a named POSIX shm object or an imported file.
    // Its creator may have sealed it since the import (seals only accumulate), so ask the kernel.
    int seals = sys::fcntl(fd, F_GET_SEALS);
    if (seals < 0 || !(static_cast<unsigned>(seals) & F_SEAL_SHRINK))
      return fail(ErrorCode::Unsupported,
                  text::format("ipc::send: {} is not sealed against shrinking (F_SEAL_SHRINK), so a receiver could "
                              "be killed by SIGBUS; named POSIX shm cannot be sealed: allocate an anonymous memfd",
                              tensor.memory_detail()));
  }
  detail::WireHeader h;
  h.version = kTensorMessageVersion;
  h.header_bytes = detail::kWireHeaderBytes;
  h.dtype = static_cast<std::uint8_t>(tensor.dtype());
  h.rank = static_cast<std::uint8_t>(tensor.rank());
  h.memory = static_cast<std::uint8_t>(kind);
  h.pixel_format = static_cast<std::uint8_t>(tensor.image().format);
  h.offset_bytes = tensor.offset_bytes();
  h.row_stride_bytes = tensor.image().row_stride_bytes;
  h.plane_offset_bytes = tensor.image().plane_offset_bytes;
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
  ImageMeta meta{static_cast<PixelFormat>(h.pixel_format), static_cast<std::size_t>(h.row_stride_bytes),
                 static_cast<std::size_t>(h.plane_offset_bytes)};
  ET_TRY(tensor.set_image(meta));
  return tensor;
}

}  // namespace ipc
}  // namespace edgetensor
