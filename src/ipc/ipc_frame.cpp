// SPDX-License-Identifier: Apache-2.0
// ipc::send_frame / ipc::receive_frame: one Frame per message, one fd per distinct buffer, everything
// validated (each fd as ipc::receive validates its one) before the frame is built.
#include <edgetensor/ipc.h>

#include <array>
#include <memory>
#include <string>

#include "text/format.h"

#include "core/backend.h"
#include "image/frame_access.h"
#include "ipc/ipc_checks.h"
#include "ipc/ipc_codec.h"
#include "ipc/ipc_wait.h"
#include "ipc/ipc_wire.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

FrameWireHeader encode_frame_header(const Frame& frame, std::span<const MemoryKind> kinds) {
  const ImageLayout& layout = frame.layout();
  FrameWireHeader h;
  h.version = ipc::kFrameMessageVersion;
  h.header_bytes = kFrameWireHeaderBytes;
  h.pixel_format = static_cast<std::uint16_t>(layout.format);
  h.plane_count = static_cast<std::uint8_t>(layout.plane_count());
  h.buffer_count = static_cast<std::uint8_t>(frame.buffer_count());
  for (std::size_t i = 0; i < layout.plane_count(); ++i) h.plane_buffer[i] = static_cast<std::uint8_t>(frame.plane_buffer(i));
  for (std::size_t b = 0; b < kinds.size() && b < kMaxPlanes; ++b) h.memory[b] = static_cast<std::uint8_t>(kinds[b]);
  h.image_width = layout.width;
  h.image_height = layout.height;
  const Colorimetry& c = frame.colorimetry();
  h.colorimetry[0] = static_cast<std::uint8_t>(c.primaries);
  h.colorimetry[1] = static_cast<std::uint8_t>(c.transfer);
  h.colorimetry[2] = static_cast<std::uint8_t>(c.matrix);
  h.colorimetry[3] = static_cast<std::uint8_t>(c.range);
  h.modifier = layout.modifier;
  for (std::size_t i = 0; i < kMaxPlanes; ++i) {
    h.planes[i][0] = layout.planes[i].offset_bytes;
    h.planes[i][1] = layout.planes[i].row_stride_bytes;
  }
  return h;
}

}  // namespace detail

namespace ipc {

Result<void> send_frame(int socket_fd, const Frame& frame, const SendOptions& options) {
  if (frame.is_empty()) return fail(ErrorCode::FailedPrecondition, "ipc::send_frame: the frame is empty");
  const std::size_t buffers = frame.buffer_count();
  std::array<TensorDyn, kMaxPlanes> held;  // keeps each buffer (and so its fd) alive until sent
  std::array<int, kMaxPlanes> fds{};
  std::array<MemoryKind, kMaxPlanes> kinds{};
  for (std::size_t b = 0; b < buffers; ++b) {
    ET_TRY_ASSIGN(held[b], frame.buffer(b));
    const std::string what = text::format("ipc::send_frame: buffer {} of {}", b, buffers);
    ET_TRY_ASSIGN(fds[b], detail::sendable_fd(held[b], what));
    ET_TRY(detail::check_not_pooled(held[b], options.allow_pooled, what));
    kinds[b] = held[b].memory();
  }
  ET_TRY(detail::require_message_socket(socket_fd, "ipc::send_frame", "a frame message"));
  const detail::FrameWireHeader h = detail::encode_frame_header(frame, std::span(kinds.data(), buffers));
  auto bytes = detail::encode_frame_message(h);
  return detail::send_within(socket_fd, bytes, ArrayRef<int>(fds.data(), buffers),
                             detail::wait_for(options.timeout, options.on_interrupt), "ipc::send_frame");
}

Result<Frame> receive_frame(int socket_fd, const ReceiveOptions& limits) {
  // Room for either kind of message, so a tensor message is read whole and named.
  ET_TRY_ASSIGN(auto received, detail::receive_message(socket_fd, limits, "ipc::receive_frame", "a frame message"));
  ET_TRY_ASSIGN(auto h, detail::decode_frame_message(received.bytes()));
  auto& msg = received.received;
  if (msg.fds.size() != h.buffer_count)
    return fail(ErrorCode::InvalidArgument,
                text::format("malformed frame message: {} fds arrived, its buffer_count is {} (one fd per buffer)",
                            msg.fds.size(), h.buffer_count));
  const ImageLayout layout = detail::frame_layout(h);
  // Every fd checked before any is imported; msg.fds owns them all until then.
  std::array<detail::FdInfo, kMaxPlanes> infos;
  for (std::size_t b = 0; b < h.buffer_count; ++b) {
    const std::string who = text::format("frame message buffer {}", b);
    ET_TRY_ASSIGN(infos[b], detail::probe_received(msg.fds[b].get(), static_cast<MemoryKind>(h.memory[b]), limits, who));
    for (std::size_t k = 0; k < b; ++k)
      if (infos[k].key == infos[b].key)
        return fail(ErrorCode::InvalidArgument,
                    text::format("malformed frame message: buffers {} and {} are one buffer ({}); a sender sends each "
                                "buffer once", k, b, infos[b].what));
    for (std::size_t i = 0; i < h.plane_count; ++i) {
      if (h.plane_buffer[i] != b) continue;
      ET_TRY_ASSIGN(std::size_t end, layout.plane_end_bytes(i));
      if (end > infos[b].buffer_bytes)
        return fail(ErrorCode::OutOfRange,
                    text::format("frame message plane {} ends at {} B (offset {} B, row stride {} B), past the end of "
                                "buffer {} ({}, {} B)", i, end, layout.planes[i].offset_bytes,
                                layout.planes[i].row_stride_bytes, b, infos[b].what, infos[b].buffer_bytes));
    }
  }
  ET_TRY(detail::check_shared_buffer_planes(layout, std::span<const std::uint8_t>(h.plane_buffer, h.plane_count)));
  std::array<TensorDyn, kMaxPlanes> buffers;
  for (std::size_t b = 0; b < h.buffer_count; ++b) {
    const std::size_t bytes = infos[b].buffer_bytes;
    ET_TRY_ASSIGN(buffers[b], detail::tensor_from_fd(std::move(msg.fds[b]), infos[b], ArrayRef<std::size_t>(&bytes, 1),
                                                     DType::U8, {}));
  }
  return detail::FrameAccess::make(layout, detail::wire_colorimetry(h.colorimetry),
                                   std::span<const TensorDyn>(buffers.data(), h.buffer_count),
                                   std::span<const std::uint8_t>(h.plane_buffer, h.plane_count));
}

}  // namespace ipc
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
