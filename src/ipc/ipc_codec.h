// SPDX-License-Identifier: Apache-2.0
// The tensor and frame messages as the senders build them and the receivers apply them, shared by
// ipc::send/receive, ipc::send_frame/receive_frame and the frame channel (src/channel), which embeds
// these messages in its frame messages (docs/WIRE.md, "The frame channel").
#pragma once

#include <edgetensor/frame.h>
#include <edgetensor/ipc.h>
#include <edgetensor/tensor.h>

#include <cstddef>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "ipc/ipc_wire.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

/// The tensor message (version 2) describing `tensor`: header (fd_count 1, `memory` its kind) and the
/// per-axis payload, as ipc::send sends it. The caller checked that the tensor may travel.
std::vector<std::byte> encode_tensor(const TensorDyn& tensor);

/// Gives `tensor`, just built over the view `m` describes, the image layout or plane, colorimetry and
/// quantization the message carries. Errors: the layout's validation against the view
/// ("malformed tensor message: image layout: ..."), Quantization's checks.
Result<void> apply_tensor_metadata(TensorDyn& tensor, TensorMessage& m);

/// A tensor or frame message as a receiver reads it: the bytes (in room for the largest legal message
/// of either kind, plus one byte so a longer one shows as MSG_TRUNC) and the fds, owned.
struct ReceivedMessage {
  std::unique_ptr<std::byte[]> buffer;
  ipc::Received received;
  std::span<const std::byte> bytes() const noexcept { return {buffer.get(), received.size_bytes}; }
};
/// Checks the socket (require_message_socket, naming `who` and `message`), then receives one message
/// waiting as options.timeout and options.on_interrupt say. Errors: as require_message_socket,
/// receive_within.
Result<ReceivedMessage> receive_message(int socket_fd, const ipc::ReceiveOptions& options, std::string_view who,
                                        std::string_view message);

/// The frame message (version 1) header describing `frame`, whose buffer b has memory kind `kinds[b]`.
FrameWireHeader encode_frame_header(const Frame& frame, std::span<const MemoryKind> kinds);

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
