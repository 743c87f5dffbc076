// SPDX-License-Identifier: Apache-2.0
// channel::Sender and channel::Receiver (channel.h): argument checks, then the state behind each
// (sender.h, receiver.h).
#include <edgetensor/channel.h>

#include <sys/eventfd.h>

#include <array>
#include <cerrno>
#include <string>

#include "text/format.h"

#include "channel/receiver.h"
#include "channel/sender.h"
#include "ipc/ipc_codec.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

// The hello goes first, without waiting. It is optional to the reader: a peer already gone (it sent
// its frames and closed: the reads tell) or a socket with no room skips it; other errors fail.
static Result<void> send_hello(int socket_fd, ChannelRole role, std::size_t max_buffers, const std::string& who,
                               std::optional<PolicyRequest> request = std::nullopt) {
  const auto hello = encode_hello(role, static_cast<std::uint32_t>(max_buffers), kOwnCapabilities, request);
  const int e = send_now(socket_fd, hello);
  if (e == 0 || e == EAGAIN || e == ENOBUFS || e == EPIPE || e == ECONNRESET || e == ENOTCONN) return {};
  return fail(Error::from_errno(e, text::format("{}: sending the hello", who)));
}

Result<void> check_sender_options(const channel::SenderOptions& options, const std::string& who) {
  using channel::kMaxChannelBuffers;
  using channel::kMaxQueuedReleases;
  using channel::ReceiverPolicy;
  if (options.max_buffers == 0 || options.max_buffers > kMaxChannelBuffers)
    return fail(ErrorCode::InvalidArgument, text::format("{}: max_buffers {} is outside 1..{}", who, options.max_buffers,
                                                        kMaxChannelBuffers));
  if (options.send_timeout.count() < 0)
    return fail(ErrorCode::InvalidArgument, text::format("{}: send_timeout {} ms is negative", who,
                                                        options.send_timeout.count()));
  if (options.policy != ReceiverPolicy::Block && options.policy != ReceiverPolicy::Drop)
    return fail(ErrorCode::InvalidArgument, text::format("{}: policy {} is not ReceiverPolicy::Block (0) or Drop (1)", who,
                                                        static_cast<int>(options.policy)));
  if (options.max_frames_out > kMaxQueuedReleases)
    return fail(ErrorCode::InvalidArgument, text::format("{}: max_frames_out {} is outside 0..{}", who,
                                                        options.max_frames_out, kMaxQueuedReleases));
  return {};
}

Result<std::shared_ptr<ChannelSender>> make_channel_sender(UniqueFd socket, const channel::SenderOptions& options,
                                                           const std::string& who) {
  ET_TRY(check_sender_options(options, who));
  ET_TRY(require_channel_socket(socket.get(), who));
  ET_TRY(send_hello(socket.get(), ChannelRole::Sender, options.max_buffers, who));
  auto state = std::make_shared<ChannelSender>(std::move(socket), options);
  ET_TRY(state->start());
  return state;
}

namespace {
Result<void> check_timing(const channel::SendOptions& options, std::string_view who) {
  if (options.duration_ns && *options.duration_ns < 0)
    return fail(ErrorCode::InvalidArgument, text::format("{}: duration_ns {} is negative", who, *options.duration_ns));
  if (options.pts_ns && *options.pts_ns == kNoTime)
    return fail(ErrorCode::InvalidArgument,
                text::format("{}: pts_ns INT64_MIN is the wire's \"none\"; leave pts_ns unset instead", who));
  return {};
}

// SendOptions::acquire_fences spread over `buffers` buffers: none, one for all, or one each.
Result<std::array<const sync::Fence*, kMaxPlanes>> spread_fences(const channel::SendOptions& options, std::size_t buffers,
                                                                  std::string_view who) {
  std::array<const sync::Fence*, kMaxPlanes> out{};
  const std::size_t n = options.acquire_fences.size();
  if (n == 0) return out;
  if (n != 1 && n != buffers)
    return fail(ErrorCode::InvalidArgument,
                text::format("{}: {} acquire fences for a frame of {} buffer{}: give none, one for every buffer, or one "
                             "per buffer", who, n, buffers, buffers == 1 ? "" : "s"));
  for (std::size_t b = 0; b < buffers; ++b) out[b] = &options.acquire_fences[n == 1 ? 0 : b];
  return out;
}

}  // namespace

// The rules ipc::send applies before it looks at the socket: a tensor that reaches no byte is never sent.
Result<OutgoingFrame> outgoing_tensor(const TensorDyn& tensor, const channel::SendOptions& options, std::string_view who) {
  if (tensor.is_empty_handle())
    return fail(ErrorCode::FailedPrecondition, text::format("{}: tensor has no storage", who));
  if (tensor.element_count() == 0)
    return fail(ErrorCode::FailedPrecondition, text::format("{}: tensor [{}] has zero elements: nothing to share", who,
                                                            text::join(tensor.shape(), ", ")));
  ET_TRY(check_timing(options, who));
  OutgoingFrame out;
  ET_TRY_ASSIGN(out.fences, spread_fences(options, 1, who));
  out.buffers[0] = tensor;
  out.count = 1;
  out.embedded = encode_tensor(tensor);
  out.type = ChannelMessage::TensorFrame;
  return out;
}

Result<OutgoingFrame> outgoing_frame(const Frame& frame, const channel::SendOptions& options, std::string_view who) {
  if (frame.is_empty()) return fail(ErrorCode::FailedPrecondition, text::format("{}: the frame is empty", who));
  ET_TRY(check_timing(options, who));
  OutgoingFrame out;
  std::array<MemoryKind, kMaxPlanes> kinds{};
  out.count = frame.buffer_count();
  ET_TRY_ASSIGN(out.fences, spread_fences(options, out.count, who));
  for (std::size_t b = 0; b < out.count; ++b) {
    ET_TRY_ASSIGN(out.buffers[b], frame.buffer(b));
    kinds[b] = out.buffers[b].memory();
  }
  out.embedded = encode_frame_message(encode_frame_header(frame, std::span(kinds.data(), out.count)));
  out.type = ChannelMessage::Frame;
  return out;
}
}  // namespace detail


namespace channel {

Result<Sender> Sender::create(UniqueFd socket, const SenderOptions& options) {
  const std::string who = options.name.empty() ? std::string("channel::Sender")
                                               : text::format("channel::Sender '{}'", options.name);
  ET_TRY_ASSIGN(auto state, edgetensor::detail::make_channel_sender(std::move(socket), options, who));
  return Sender(std::move(state));
}

Sender::Sender(std::shared_ptr<edgetensor::detail::ChannelSender> state) noexcept : state_(std::move(state)) {}
Sender::Sender(Sender&& other) noexcept = default;
Sender& Sender::operator=(Sender&& other) noexcept {
  if (this != &other) {
    if (state_) state_->stop();
    state_ = std::move(other.state_);
  }
  return *this;
}
Sender::~Sender() {
  if (state_) state_->stop();
}

namespace {
Unexpected sender_moved_from(const char* call) {
  return fail(ErrorCode::FailedPrecondition, text::format("channel::Sender::{}: the sender was moved from", call));
}

}  // namespace

Result<std::uint64_t> Sender::send(const TensorDyn& tensor, const SendOptions& options) {
  if (!state_) return sender_moved_from("send");
  ET_TRY_ASSIGN(const auto out, edgetensor::detail::outgoing_tensor(tensor, options, "channel::Sender::send"));
  return state_->send(out.span(), out.embedded, out.type, options, out.fence_span());
}

Result<std::uint64_t> Sender::send_frame(const Frame& frame, const SendOptions& options) {
  if (!state_) return sender_moved_from("send_frame");
  ET_TRY_ASSIGN(const auto out, edgetensor::detail::outgoing_frame(frame, options, "channel::Sender::send_frame"));
  return state_->send(out.span(), out.embedded, out.type, options, out.fence_span());
}

Result<TensorDyn> Sender::acquire(Pool& pool, std::chrono::milliseconds timeout) {
  if (!state_) return sender_moved_from("acquire");
  return state_->acquire(pool, timeout);
}

Result<void> Sender::end_stream() {
  if (!state_) return sender_moved_from("end_stream");
  return state_->end_stream();
}

Result<void> Sender::drain(std::chrono::milliseconds timeout) {
  if (!state_) return sender_moved_from("drain");
  return state_->drain(timeout);
}

SenderStats Sender::stats() const { return state_ ? state_->stats() : SenderStats{}; }

Result<void> Sender::status() const {
  if (!state_) return sender_moved_from("status");
  return state_->status();
}


Result<Receiver> Receiver::create(UniqueFd socket, const ReceiverOptions& options) {
  const std::string who = options.name.empty() ? std::string("channel::Receiver")
                                               : text::format("channel::Receiver '{}'", options.name);
  if (options.max_buffers == 0 || options.max_buffers > kMaxChannelBuffers)
    return fail(ErrorCode::InvalidArgument, text::format("{}: max_buffers {} is outside 1..{}", who, options.max_buffers,
                                                        kMaxChannelBuffers));
  if (options.max_queued_releases == 0 || options.max_queued_releases > kMaxQueuedReleases)
    return fail(ErrorCode::InvalidArgument, text::format("{}: max_queued_releases {} is outside 1..{}", who,
                                                        options.max_queued_releases, kMaxQueuedReleases));
  if (options.limits.max_buffer_bytes == 0)
    return fail(ErrorCode::InvalidArgument,
                text::format("{}: max_buffer_bytes 0 would refuse every buffer (at least 1; the default is {} B)", who,
                             ipc::ReceiveOptions{}.max_buffer_bytes));
  if (!options.policy && options.max_frames_out != 0)
    return fail(ErrorCode::InvalidArgument,
                text::format("{}: max_frames_out {} without a policy: a frame limit is asked for with "
                             "ReceiverOptions::policy (Block or Drop); unset, the sender's own policy and limit apply",
                             who, options.max_frames_out));
  std::optional<edgetensor::detail::PolicyRequest> request;
  if (options.policy) {
    if (*options.policy != ReceiverPolicy::Block && *options.policy != ReceiverPolicy::Drop)
      return fail(ErrorCode::InvalidArgument, text::format("{}: policy {} is not ReceiverPolicy::Block (0) or Drop (1)",
                                                          who, static_cast<int>(*options.policy)));
    if (options.max_frames_out > kMaxQueuedReleases)
      return fail(ErrorCode::InvalidArgument, text::format("{}: max_frames_out {} is outside 0..{}", who,
                                                          options.max_frames_out, kMaxQueuedReleases));
    request = edgetensor::detail::PolicyRequest{*options.policy, options.max_frames_out};
  }
  ET_TRY(edgetensor::detail::require_channel_socket(socket.get(), who));
  UniqueFd wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake.is_valid()) return fail(Error::from_errno(errno, text::format("{}: eventfd", who)));
  ET_TRY(edgetensor::detail::send_hello(socket.get(), edgetensor::detail::ChannelRole::Receiver, options.max_buffers, who,
                                        request));
  return Receiver(std::make_shared<edgetensor::detail::ChannelReceiver>(std::move(socket), std::move(wake), options));
}

Receiver::Receiver(std::shared_ptr<edgetensor::detail::ChannelReceiver> state) noexcept : state_(std::move(state)) {}
Receiver::Receiver(Receiver&& other) noexcept = default;
Receiver& Receiver::operator=(Receiver&& other) noexcept {
  if (this != &other) {
    if (state_) state_->stop();
    state_ = std::move(other.state_);
  }
  return *this;
}
Receiver::~Receiver() {
  if (state_) state_->stop();
}

namespace {
Unexpected receiver_moved_from(const char* call) {
  return fail(ErrorCode::FailedPrecondition, text::format("channel::Receiver::{}: the receiver was moved from", call));
}
}  // namespace

Result<Delivery> Receiver::receive(std::chrono::milliseconds timeout) {
  if (!state_) return receiver_moved_from("receive");
  if (timeout.count() < 0)
    return fail(ErrorCode::InvalidArgument, text::format("channel::Receiver::receive: timeout {} ms is negative",
                                                        timeout.count()));
  return state_->receive(timeout);
}

Result<Delivery> Receiver::receive_latest(std::chrono::milliseconds timeout) {
  if (!state_) return receiver_moved_from("receive_latest");
  if (timeout.count() < 0)
    return fail(ErrorCode::InvalidArgument, text::format("channel::Receiver::receive_latest: timeout {} ms is negative",
                                                        timeout.count()));
  return state_->receive_latest(timeout);
}

Result<void> Receiver::add_release_fence(const TensorDyn& tensor, sync::Fence fence) {
  if (!state_) return receiver_moved_from("add_release_fence");
  return state_->add_release_fence(tensor, std::move(fence));
}

Result<void> Receiver::add_release_fence(const Frame& frame, sync::Fence fence) {
  if (!state_) return receiver_moved_from("add_release_fence");
  if (frame.is_empty())
    return fail(ErrorCode::InvalidArgument, "channel::Receiver::add_release_fence: the frame is empty");
  for (std::size_t b = 0; b < frame.buffer_count(); ++b) {
    ET_TRY_ASSIGN(const TensorDyn buffer, frame.buffer(b));
    ET_TRY_ASSIGN(sync::Fence copy, fence.dup());
    ET_TRY(state_->add_release_fence(buffer, std::move(copy)));
  }
  return {};
}

Result<void> Receiver::flush() {
  if (!state_) return receiver_moved_from("flush");
  return state_->flush();
}

int Receiver::fd() const noexcept { return state_ ? state_->socket_fd() : -1; }

ReceiverStats Receiver::stats() const { return state_ ? state_->stats() : ReceiverStats{}; }

Result<void> Receiver::status() const {
  if (!state_) return receiver_moved_from("status");
  return state_->status();
}


}  // namespace channel
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
