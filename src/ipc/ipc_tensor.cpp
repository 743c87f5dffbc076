// SPDX-License-Identifier: Apache-2.0
// ipc::send / ipc::receive: one tensor per message, validated whole before any tensor is built.
#include <edgetensor/ipc.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "text/format.h"

#include "core/backend.h"
#include "core/tensor_access.h"
#include "ipc/ipc_checks.h"
#include "ipc/ipc_codec.h"
#include "ipc/ipc_wait.h"
#include "ipc/ipc_wire.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {
namespace {

// The image, colorimetry and quantization fields of the header (docs/WIRE.md, "The tensor message").
void put_metadata(const TensorDyn& tensor, WireHeader& h) {
  h.pixel_format = static_cast<std::uint16_t>(tensor.pixel_format());
  h.image_plane = static_cast<std::int8_t>(tensor.image_plane());
  if (const ImageLayout* layout = tensor.image_layout()) {
    h.plane_count = static_cast<std::uint8_t>(layout->plane_count());
    h.image_width = layout->width;
    h.image_height = layout->height;
    h.modifier = layout->modifier;
    for (std::size_t i = 0; i < kMaxPlanes; ++i) {
      h.planes[i][0] = layout->planes[i].offset_bytes;
      h.planes[i][1] = layout->planes[i].row_stride_bytes;
    }
  }
  const Colorimetry& c = tensor.colorimetry();
  h.colorimetry[0] = static_cast<std::uint8_t>(c.primaries);
  h.colorimetry[1] = static_cast<std::uint8_t>(c.transfer);
  h.colorimetry[2] = static_cast<std::uint8_t>(c.matrix);
  h.colorimetry[3] = static_cast<std::uint8_t>(c.range);
  const Quantization& q = tensor.quantization();
  h.quantization = static_cast<std::uint8_t>(q.kind());
  if (q.kind() == QuantizationKind::PerTensor) {
    h.scale = q.scales()[0];
    h.zero_point = q.zero_points()[0];
  } else if (q.kind() == QuantizationKind::PerAxis) {
    h.quantization_axis = static_cast<std::uint32_t>(q.axis());
    h.quantization_channels = static_cast<std::uint32_t>(q.scales().size());
  }
}

}  // namespace

std::vector<std::byte> encode_tensor(const TensorDyn& tensor) {
  WireHeader h;
  h.version = ipc::kTensorMessageVersion;
  h.header_bytes = kWireHeaderBytes;
  h.dtype = static_cast<std::uint8_t>(tensor.dtype());
  h.rank = static_cast<std::uint8_t>(tensor.rank());
  h.memory = static_cast<std::uint8_t>(tensor.memory());
  h.offset_bytes = tensor.offset_bytes();
  for (std::size_t i = 0; i < tensor.rank(); ++i) {
    h.shape[i] = tensor.shape()[i];
    h.strides[i] = tensor.strides()[i];
  }
  put_metadata(tensor, h);
  // Cut the name at a UTF-8 character boundary.
  std::size_t n = std::min(tensor.name().size(), ipc::kMaxWireNameBytes);
  while (n > 0 && n < tensor.name().size() && (static_cast<unsigned char>(tensor.name()[n]) & 0xC0) == 0x80) --n;
  std::memcpy(h.name, tensor.name().data(), n);
  const Quantization& q = tensor.quantization();
  const bool per_axis = q.kind() == QuantizationKind::PerAxis;
  return encode_tensor_message(h, per_axis ? q.scales() : std::span<const float>{},
                               per_axis ? q.zero_points() : std::span<const std::int32_t>{});
}

Result<void> apply_tensor_metadata(TensorDyn& tensor, TensorMessage& m) {
  const WireHeader& h = m.header;
  const auto format = static_cast<PixelFormat>(h.pixel_format);
  if (h.plane_count > 0) {
    ImageLayout layout;
    layout.format = format;
    layout.width = h.image_width;
    layout.height = h.image_height;
    layout.modifier = h.modifier;
    for (std::size_t i = 0; i < kMaxPlanes; ++i)
      layout.planes[i] = {static_cast<std::size_t>(h.planes[i][0]), static_cast<std::size_t>(h.planes[i][1])};
    if (auto set = tensor.set_image_layout(layout); !set)
      return fail(set.error().code(), "malformed tensor message: image layout: " + set.error().message());
  } else if (format != PixelFormat::Unknown) {
    TensorAccess::set_image_plane(tensor, format, h.image_plane);
  }
  // Each setter builds a new metadata block: only a colorimetry the sender gave is set.
  if (const Colorimetry c = wire_colorimetry(h.colorimetry); c != Colorimetry{}) tensor.set_colorimetry(c);
  if (m.quantization.kind() != QuantizationKind::None) ET_TRY(tensor.set_quantization(std::move(m.quantization)));
  return {};
}

}  // namespace detail

namespace ipc {

Result<void> send(int socket_fd, const TensorDyn& tensor, const SendOptions& options) {
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
  ET_TRY(detail::check_not_pooled(tensor, options.allow_pooled, "ipc::send"));
  ET_TRY(detail::require_message_socket(socket_fd, "ipc::send", "a tensor message"));
  ET_TRY_ASSIGN(const int fd, detail::sendable_fd(tensor, "ipc::send"));
  const auto bytes = detail::encode_tensor(tensor);
  return detail::send_within(socket_fd, bytes, {fd}, detail::wait_for(options.timeout, options.on_interrupt),
                             "ipc::send");
}

Result<TensorDyn> receive(int socket_fd, const ReceiveOptions& limits) {
  // Room for either kind of message, so a frame message is read whole and named.
  ET_TRY_ASSIGN(auto received, detail::receive_message(socket_fd, limits, "ipc::receive", "a tensor message"));
  ET_TRY_ASSIGN(auto m, detail::decode_tensor_message(received.bytes()));
  auto& msg = received.received;
  const detail::WireHeader& h = m.header;
  if (msg.fds.size() != 1)
    return fail(ErrorCode::InvalidArgument,
                text::format("malformed tensor message: {} fds arrived, a tensor message carries exactly 1", msg.fds.size()));
  const auto kind = static_cast<MemoryKind>(h.memory);
  ET_TRY_ASSIGN(auto info, detail::probe_received(msg.fds[0].get(), kind, limits, "tensor message"));
  std::vector<std::size_t> shape(h.shape, h.shape + h.rank);
  ImportOptions options;
  options.offset_bytes = static_cast<std::size_t>(h.offset_bytes);
  options.strides_bytes.assign(h.strides, h.strides + h.rank);
  options.name = h.name;
  // The fd was probed above: import it with that answer (no second probe). From here the tensor owns it.
  ET_TRY_ASSIGN(auto tensor, detail::tensor_from_fd(std::move(msg.fds[0]), info, shape, static_cast<DType>(h.dtype),
                                                    options));
  ET_TRY(detail::apply_tensor_metadata(tensor, m));
  return tensor;
}

}  // namespace ipc
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
