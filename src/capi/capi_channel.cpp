// SPDX-License-Identifier: Apache-2.0
// The frame channel (C++ channel::): socket pairs, named sockets, senders and receivers.
#include "capi/capi_support.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <span>
#include <memory>
#include <cstring>
#include <string>
#include <vector>

using namespace edgetensor;
using namespace edgetensor::capi;

namespace {

// A C wait (ET_WAIT_FOREVER, 0 or positive ms) as the C++ milliseconds. Errors: InvalidArgument for any
// other negative value, naming the call.
Result<std::chrono::milliseconds> wait_ms(std::string_view function, int32_t timeout_ms) {
  if (timeout_ms == ET_WAIT_FOREVER) return std::chrono::milliseconds::max();
  if (timeout_ms < 0)
    return fail(ErrorCode::InvalidArgument, std::string(function) + ": timeout_ms " + std::to_string(timeout_ms) +
                                                " is negative (ET_WAIT_FOREVER is -1)");
  return std::chrono::milliseconds(timeout_ms);
}

Result<channel::ListenOptions> listen_options(const et_channel_listen_options* user) {
  ET_TRY_ASSIGN(auto c, read_options(user, ET_CHANNEL_LISTEN_OPTIONS_SIZE_VER0, "et_channel_listen_options"));
  if ((c.flags & ~ET_LISTEN_NO_SAME_UID) != 0)
    return fail(ErrorCode::InvalidArgument, "et_channel_listen_options.flags " + std::to_string(c.flags) +
                                                " has bits other than ET_LISTEN_NO_SAME_UID");
  if (c.uid_count > 0 && c.uids == nullptr)
    return null_argument("et_channel_listen_options", "uids (uid_count " + std::to_string(c.uid_count) + ")");
  if (c.gid_count > 0 && c.gids == nullptr)
    return null_argument("et_channel_listen_options", "gids (gid_count " + std::to_string(c.gid_count) + ")");
  channel::ListenOptions o;
  if (c.mode != 0) o.mode = c.mode;
  if (c.backlog != 0) o.backlog = c.backlog;
  o.allow.same_uid = (c.flags & ET_LISTEN_NO_SAME_UID) == 0;
  if (c.uid_count > 0) o.allow.uids.assign(c.uids, c.uids + c.uid_count);
  if (c.gid_count > 0) o.allow.gids.assign(c.gids, c.gids + c.gid_count);
  return o;
}

// Checked here: the C++ enum is 8 bits wide, so 256 would read as BLOCK.
Result<channel::ReceiverPolicy> read_policy(std::string_view what, std::int32_t policy) {
  if (policy != ET_CHANNEL_POLICY_BLOCK && policy != ET_CHANNEL_POLICY_DROP)
    return fail(ErrorCode::InvalidArgument, std::string(what) + ".policy " + std::to_string(policy) +
                                                " is not ET_CHANNEL_POLICY_BLOCK (0) or _DROP (1)");
  return static_cast<channel::ReceiverPolicy>(policy);
}

Result<void> check_use_flag(std::string_view what, std::uint32_t value) {
  if (value > 1) return fail(ErrorCode::InvalidArgument, std::string(what) + " " + std::to_string(value) + " is not 0 or 1");
  return {};
}

Result<void> sender_options(const et_channel_sender_options* user, channel::SenderOptions& o) {
  ET_TRY_ASSIGN(auto c, read_options(user, ET_CHANNEL_SENDER_OPTIONS_SIZE_VER0, "et_channel_sender_options"));
  ET_TRY_ASSIGN(o.policy, read_policy("et_channel_sender_options", c.policy));
  ET_TRY(check_use_flag("et_channel_sender_options.use_send_timeout", c.use_send_timeout));
  if ((c.flags & ~ET_CHANNEL_SENDER_FIXED_POLICY) != 0)
    return fail(ErrorCode::InvalidArgument, "et_channel_sender_options.flags " + std::to_string(c.flags) +
                                                " has bits other than ET_CHANNEL_SENDER_FIXED_POLICY");
  o.receiver_may_choose = (c.flags & ET_CHANNEL_SENDER_FIXED_POLICY) == 0;
  if (c.max_buffers != 0) o.max_buffers = c.max_buffers;
  if (c.use_send_timeout == 1) {
    ET_TRY_ASSIGN(o.send_timeout, wait_ms("et_channel_sender_options.send_timeout_ms", c.send_timeout_ms));
  }
  ET_TRY_ASSIGN(o.max_frames_out, to_size(c.max_frames_out, "et_channel_sender_options.max_frames_out"));
  if (c.name != nullptr) o.name = c.name;
  return {};
}

constexpr std::uint32_t kSendHasAll =
    ET_CHANNEL_HAS_SEQUENCE | ET_CHANNEL_HAS_TIMESTAMP | ET_CHANNEL_HAS_PTS | ET_CHANNEL_HAS_DURATION;

// A send's C++ options and the fences its span points at (a C fence is shared, the span wants Fence
// objects side by side: each is a dup of the caller's, closed after the call).
struct SendOptions {
  channel::SendOptions options;
  std::array<sync::Fence, kMaxPlanes> fences;
};

Result<void> send_options(const et_channel_send_options* user, SendOptions& out) {
  ET_TRY_ASSIGN(auto c, read_options(user, ET_CHANNEL_SEND_OPTIONS_SIZE_VER0, "et_channel_send_options"));
  if ((c.has & ~kSendHasAll) != 0)
    return fail(ErrorCode::InvalidArgument, "et_channel_send_options.has " + std::to_string(c.has) +
                                                " has bits other than ET_CHANNEL_HAS_*");
  if (c.reserved != 0 || c.reserved2 != 0)
    return fail(ErrorCode::InvalidArgument, "et_channel_send_options.reserved" + std::string(c.reserved != 0 ? "" : "2") +
                                                " is " + std::to_string(c.reserved != 0 ? c.reserved : c.reserved2) +
                                                ", not 0");
  if (c.acquire_fence_count > kMaxPlanes)
    return fail(ErrorCode::InvalidArgument, "et_channel_send_options.acquire_fence_count " +
                                                std::to_string(c.acquire_fence_count) + " is above ET_MAX_PLANES (" +
                                                std::to_string(kMaxPlanes) + ")");
  if (c.acquire_fence_count > 0 && c.acquire_fences == nullptr)
    return null_argument("et_channel_send_options",
                         "acquire_fences (acquire_fence_count " + std::to_string(c.acquire_fence_count) + ")");
  channel::SendOptions& o = out.options;
  if ((c.has & ET_CHANNEL_HAS_SEQUENCE) != 0) o.sequence = c.sequence;
  if ((c.has & ET_CHANNEL_HAS_TIMESTAMP) != 0) o.timestamp_ns = c.timestamp_ns;
  if ((c.has & ET_CHANNEL_HAS_PTS) != 0) o.pts_ns = c.pts_ns;
  if ((c.has & ET_CHANNEL_HAS_DURATION) != 0) o.duration_ns = c.duration_ns;
  o.flags = c.flags;
  for (std::uint32_t i = 0; i < c.acquire_fence_count; ++i) {
    const et_fence* f = c.acquire_fences[i];
    if (f != nullptr) {  // NULL stays a signalled fence: nothing is sent for that buffer
      ET_TRY_ASSIGN(out.fences[i], f->fence->dup());
    }
  }
  o.acquire_fences = std::span<const sync::Fence>(out.fences.data(), c.acquire_fence_count);
  return {};
}

Result<void> receiver_options(const et_channel_receiver_options* user, channel::ReceiverOptions& o) {
  ET_TRY_ASSIGN(auto c, read_options(user, ET_CHANNEL_RECEIVER_OPTIONS_SIZE_VER0, "et_channel_receiver_options"));
  if (c.max_buffers != 0) o.max_buffers = c.max_buffers;
  if (c.max_buffer_bytes != 0) {
    ET_TRY_ASSIGN(o.limits.max_buffer_bytes, to_size(c.max_buffer_bytes, "et_channel_receiver_options.max_buffer_bytes"));
  }
  if (c.max_queued_releases != 0) {
    ET_TRY_ASSIGN(o.max_queued_releases,
                  to_size(c.max_queued_releases, "et_channel_receiver_options.max_queued_releases"));
  }
  if (c.name != nullptr) o.name = c.name;
  ET_TRY(check_use_flag("et_channel_receiver_options.use_policy", c.use_policy));
  if (c.use_policy == 1) {
    ET_TRY_ASSIGN(o.policy, read_policy("et_channel_receiver_options", c.policy));
    ET_TRY_ASSIGN(o.max_frames_out, to_size(c.max_frames_out, "et_channel_receiver_options.max_frames_out"));
  } else if (c.policy != 0 || c.max_frames_out != 0) {
    return fail(ErrorCode::InvalidArgument,
                "et_channel_receiver_options: policy and max_frames_out are read only with use_policy 1; leave them 0");
  }
  return {};
}

Result<channel::PublisherOptions> publisher_options(const et_channel_publisher_options* user) {
  ET_TRY_ASSIGN(auto c, read_options(user, ET_CHANNEL_PUBLISHER_OPTIONS_SIZE_VER0, "et_channel_publisher_options"));
  channel::PublisherOptions o;
  if (c.max_receivers != 0) o.max_receivers = c.max_receivers;
  if (c.name != nullptr) o.name = c.name;
  ET_TRY(sender_options(c.receiver, o.receiver));
  return o;
}

Result<void> write_publish_result(et_channel_publish_result* out, const channel::PublishResult& r) {
  et_channel_publish_result v{};
  v.struct_size = sizeof v;
  v.sequence = r.sequence;
  v.delivered = r.delivered;
  v.dropped = r.dropped;
  v.removed = r.removed;
  return write_output(out, v, ET_CHANNEL_PUBLISH_RESULT_SIZE_VER0, "et_channel_publish_result");
}

et_channel_sender_stats sender_stats_to_c(const channel::SenderStats& s) {
  et_channel_sender_stats v{};
  v.struct_size = sizeof v;
  v.frames_sent = s.frames_sent;
  v.releases = s.releases;
  v.announces = s.announces;
  v.retires = s.retires;
  v.buffers_announced = s.buffers_announced;
  v.frames_out = s.frames_out;
  v.reannounces = s.reannounces;
  v.frames_dropped = s.frames_dropped;
  v.acquire_fences_sent = s.acquire_fences_sent;
  v.acquire_fences_waited = s.acquire_fences_waited;
  v.release_fences = s.release_fences;
  return v;
}

// The fd of a _create_adopt call, owned from the first line so that every path closes it.
UniqueFd adopt_socket(int32_t fd) { return UniqueFd(fd >= 0 ? fd : -1); }

Result<void> check_socket_fd(std::string_view function, int32_t fd) {
  if (fd < 0)
    return fail(ErrorCode::InvalidArgument, std::string(function) + ": socket_fd " + std::to_string(fd) + " is negative");
  return {};
}

// Receives into `out` (checked for its struct_size first, so that no handle is made that could not be
// given); a failure leaves *out zeroed (handles NULL).
template <class Receive>
Result<void> deliver(std::string_view function, const et_channel_receiver* receiver, int32_t timeout_ms,
                     et_channel_delivery* out, Receive receive) {
  if (out == nullptr) return null_argument(function, "out");
  ET_TRY(check_struct_size(declared_struct_size(out), ET_CHANNEL_DELIVERY_SIZE_VER0, "et_channel_delivery"));
  const et_channel_delivery none{};
  ET_TRY(write_output(out, none, ET_CHANNEL_DELIVERY_SIZE_VER0, "et_channel_delivery"));
  if (receiver == nullptr) return null_argument(function, "receiver");
  ET_TRY_ASSIGN(auto wait, wait_ms(function, timeout_ms));
  ET_TRY_ASSIGN(channel::Delivery d, receive(wait));
  et_channel_delivery v{};
  v.struct_size = sizeof v;
  v.sequence = d.sequence;
  v.timestamp_ns = d.timestamp_ns;
  if (d.pts_ns) {
    v.has |= ET_CHANNEL_HAS_PTS;
    v.pts_ns = *d.pts_ns;
  }
  if (d.duration_ns) {
    v.has |= ET_CHANNEL_HAS_DURATION;
    v.duration_ns = *d.duration_ns;
  }
  v.flags = d.flags;
  v.end_of_stream = d.end_of_stream ? 1 : 0;
  // Every handle is made before any is given, so an allocation failure leaves none behind.
  std::unique_ptr<et_tensor> tensor;
  std::unique_ptr<et_frame> frame;
  if (!d.tensor.is_empty_handle()) tensor.reset(new et_tensor{.tensor = std::move(d.tensor)});
  if (!d.frame.is_empty()) frame.reset(new et_frame{.frame = std::move(d.frame)});
  v.tensor = tensor.get();
  v.frame = frame.get();
  if (!d.acquire_fences.empty()) {
    // One per buffer of the frame (at most kMaxPlanes): held by the delivered handle, lent to the caller.
    if (d.acquire_fences.size() > kMaxPlanes || (tensor == nullptr && frame == nullptr))
      return fail(ErrorCode::Internal, std::string(function) + ": " + std::to_string(d.acquire_fences.size()) +
                                           " acquire fences for a delivery of at most " + std::to_string(kMaxPlanes) +
                                           " buffers");
    auto held = std::make_unique<HeldFences>();
    for (std::size_t b = 0; b < d.acquire_fences.size(); ++b) {
      if (d.acquire_fences[b] != nullptr) held->fences[b] = new et_fence{.fence = d.acquire_fences[b]};
      v.acquire_fences[b].fence = held->fences[b];
    }
    v.acquire_fence_count = static_cast<uint32_t>(d.acquire_fences.size());
    (tensor != nullptr ? tensor->acquire_fences : frame->acquire_fences) = std::move(held);
  }
  ET_TRY(write_output(out, v, ET_CHANNEL_DELIVERY_SIZE_VER0, "et_channel_delivery"));  // checked above: cannot fail
  (void)tensor.release();
  (void)frame.release();
  return {};
}

}  // namespace

extern "C" {

et_status et_channel_socket_pair(int32_t out_fds[2]) {
  return guarded([&]() -> Result<void> {
    if (out_fds == nullptr) return null_argument("et_channel_socket_pair", "out_fds");
    out_fds[0] = out_fds[1] = -1;
    ET_TRY_ASSIGN(auto pair, channel::socket_pair());
    out_fds[0] = pair.first.release();
    out_fds[1] = pair.second.release();
    return {};
  });
}

// ---- Listener ----

et_status et_channel_listener_create(const char* path, const et_channel_listen_options* options,
                                     et_channel_listener** out) {
  return guarded([&]() -> Result<void> {
    if (out == nullptr) return null_argument("et_channel_listener_create", "out");
    *out = nullptr;
    if (path == nullptr) return null_argument("et_channel_listener_create", "path");
    ET_TRY_ASSIGN(auto o, listen_options(options));
    ET_TRY_ASSIGN(auto l, channel::Listener::create(path, o));
    *out = new et_channel_listener{.listener = std::move(l)};
    return {};
  });
}

et_channel_listener* et_channel_listener_retain(et_channel_listener* listener) { return retain_handle(listener); }
void et_channel_listener_release(et_channel_listener* listener) { release_handle_keep_errno(listener); }

et_status et_channel_listener_accept(et_channel_listener* listener, int32_t timeout_ms, int32_t* out_fd) {
  return guarded([&]() -> Result<void> {
    if (out_fd == nullptr) return null_argument("et_channel_listener_accept", "out_fd");
    *out_fd = -1;
    if (listener == nullptr) return null_argument("et_channel_listener_accept", "listener");
    ET_TRY_ASSIGN(auto wait, wait_ms("et_channel_listener_accept", timeout_ms));
    ET_TRY_ASSIGN(auto fd, listener->listener.accept(wait));
    *out_fd = fd.release();
    return {};
  });
}

et_status et_channel_listener_get_fd(const et_channel_listener* listener, int32_t* out_borrowed_fd) {
  return guarded([&]() -> Result<void> {
    if (out_borrowed_fd == nullptr) return null_argument("et_channel_listener_get_fd", "out_borrowed_fd");
    *out_borrowed_fd = -1;
    if (listener == nullptr) return null_argument("et_channel_listener_get_fd", "listener");
    *out_borrowed_fd = listener->listener.fd();
    return {};
  });
}

et_status et_channel_listener_get_path(const et_channel_listener* listener, const char** out_path) {
  return guarded([&]() -> Result<void> {
    if (listener == nullptr) return null_argument("et_channel_listener_get_path", "listener");
    if (out_path == nullptr) return null_argument("et_channel_listener_get_path", "out_path");
    *out_path = listener->listener.path().c_str();  // the Listener's own string: lives as long as the handle
    return {};
  });
}

et_status et_channel_listener_get_stats(const et_channel_listener* listener, et_channel_listener_stats* stats) {
  return guarded([&]() -> Result<void> {
    if (listener == nullptr) return null_argument("et_channel_listener_get_stats", "listener");
    if (stats == nullptr) return null_argument("et_channel_listener_get_stats", "stats");
    const channel::ListenerStats s = listener->listener.stats();
    et_channel_listener_stats v{};
    v.struct_size = sizeof v;
    v.accepted = s.accepted;
    v.refused = s.refused;
    v.gone = s.gone;
    if (s.last_refused) {
      v.has_last_refused = 1;
      v.last_refused_pid = s.last_refused->pid;
      v.last_refused_uid = s.last_refused->uid;
      v.last_refused_gid = s.last_refused->gid;
    }
    return write_output(stats, v, ET_CHANNEL_LISTENER_STATS_SIZE_VER0, "et_channel_listener_stats");
  });
}

et_status et_channel_connect(const char* path, int32_t timeout_ms, int32_t* out_fd) {
  return guarded([&]() -> Result<void> {
    if (out_fd == nullptr) return null_argument("et_channel_connect", "out_fd");
    *out_fd = -1;
    if (path == nullptr) return null_argument("et_channel_connect", "path");
    ET_TRY_ASSIGN(auto wait, wait_ms("et_channel_connect", timeout_ms));
    ET_TRY_ASSIGN(auto fd, channel::connect(path, wait));
    *out_fd = fd.release();
    return {};
  });
}

// ---- Sender ----

et_status et_channel_sender_create_adopt(int32_t socket_fd, const et_channel_sender_options* options,
                                         et_channel_sender** out) {
  return guarded([&]() -> Result<void> {
    UniqueFd socket = adopt_socket(socket_fd);  // taken on every path: own it before the first check
    if (out == nullptr) return null_argument("et_channel_sender_create_adopt", "out");
    *out = nullptr;
    channel::SenderOptions o;
    ET_TRY(sender_options(options, o));
    ET_TRY(check_socket_fd("et_channel_sender_create_adopt", socket_fd));
    ET_TRY_ASSIGN(auto s, channel::Sender::create(std::move(socket), o));
    *out = new et_channel_sender{.sender = std::move(s)};
    return {};
  });
}

et_channel_sender* et_channel_sender_retain(et_channel_sender* sender) { return retain_handle(sender); }
void et_channel_sender_release(et_channel_sender* sender) { release_handle_keep_errno(sender); }

et_status et_channel_sender_send(et_channel_sender* sender, const et_tensor* tensor,
                                 const et_channel_send_options* options, uint64_t* out_sequence) {
  return guarded([&]() -> Result<void> {
    if (sender == nullptr) return null_argument("et_channel_sender_send", "sender");
    if (tensor == nullptr) return null_argument("et_channel_sender_send", "tensor");
    if (out_sequence == nullptr) return null_argument("et_channel_sender_send", "out_sequence");
    SendOptions o;
    ET_TRY(send_options(options, o));
    ET_TRY_ASSIGN(*out_sequence, sender->sender.send(tensor->tensor, o.options));
    return {};
  });
}

et_status et_channel_sender_send_frame(et_channel_sender* sender, const et_frame* frame,
                                       const et_channel_send_options* options, uint64_t* out_sequence) {
  return guarded([&]() -> Result<void> {
    if (sender == nullptr) return null_argument("et_channel_sender_send_frame", "sender");
    if (frame == nullptr) return null_argument("et_channel_sender_send_frame", "frame");
    if (out_sequence == nullptr) return null_argument("et_channel_sender_send_frame", "out_sequence");
    SendOptions o;
    ET_TRY(send_options(options, o));
    ET_TRY_ASSIGN(*out_sequence, sender->sender.send_frame(frame->frame, o.options));
    return {};
  });
}

et_status et_channel_sender_acquire(et_channel_sender* sender, et_pool* pool, int32_t timeout_ms, et_tensor** out) {
  return guarded([&]() -> Result<void> {
    if (out == nullptr) return null_argument("et_channel_sender_acquire", "out");
    *out = nullptr;
    if (sender == nullptr) return null_argument("et_channel_sender_acquire", "sender");
    if (pool == nullptr) return null_argument("et_channel_sender_acquire", "pool");
    ET_TRY_ASSIGN(auto wait, wait_ms("et_channel_sender_acquire", timeout_ms));
    ET_TRY_ASSIGN(auto t, sender->sender.acquire(pool->pool, wait));
    give_tensor(std::move(t), out);
    return {};
  });
}

et_status et_channel_sender_drain(et_channel_sender* sender, int32_t timeout_ms) {
  return guarded([&]() -> Result<void> {
    if (sender == nullptr) return null_argument("et_channel_sender_drain", "sender");
    ET_TRY_ASSIGN(auto wait, wait_ms("et_channel_sender_drain", timeout_ms));
    return sender->sender.drain(wait);
  });
}

et_status et_channel_sender_end_stream(et_channel_sender* sender) {
  return guarded([&]() -> Result<void> {
    if (sender == nullptr) return null_argument("et_channel_sender_end_stream", "sender");
    return sender->sender.end_stream();
  });
}

et_status et_channel_sender_get_stats(const et_channel_sender* sender, et_channel_sender_stats* stats) {
  return guarded([&]() -> Result<void> {
    if (sender == nullptr) return null_argument("et_channel_sender_get_stats", "sender");
    if (stats == nullptr) return null_argument("et_channel_sender_get_stats", "stats");
    return write_output(stats, sender_stats_to_c(sender->sender.stats()), ET_CHANNEL_SENDER_STATS_SIZE_VER0,
                        "et_channel_sender_stats");
  });
}

et_status et_channel_sender_status(const et_channel_sender* sender) {
  return guarded([&]() -> Result<void> {
    if (sender == nullptr) return null_argument("et_channel_sender_status", "sender");
    return sender->sender.status();
  });
}

// ---- Receiver ----

et_status et_channel_receiver_create_adopt(int32_t socket_fd, const et_channel_receiver_options* options,
                                           et_channel_receiver** out) {
  return guarded([&]() -> Result<void> {
    UniqueFd socket = adopt_socket(socket_fd);  // taken on every path: own it before the first check
    if (out == nullptr) return null_argument("et_channel_receiver_create_adopt", "out");
    *out = nullptr;
    channel::ReceiverOptions o;
    ET_TRY(receiver_options(options, o));
    ET_TRY(check_socket_fd("et_channel_receiver_create_adopt", socket_fd));
    ET_TRY_ASSIGN(auto r, channel::Receiver::create(std::move(socket), o));
    *out = new et_channel_receiver{.receiver = std::move(r)};
    return {};
  });
}

et_channel_receiver* et_channel_receiver_retain(et_channel_receiver* receiver) { return retain_handle(receiver); }
void et_channel_receiver_release(et_channel_receiver* receiver) { release_handle_keep_errno(receiver); }

et_status et_channel_receiver_receive(et_channel_receiver* receiver, int32_t timeout_ms, et_channel_delivery* out) {
  return guarded([&] {
    return deliver("et_channel_receiver_receive", receiver, timeout_ms, out,
                   [&](std::chrono::milliseconds wait) { return receiver->receiver.receive(wait); });
  });
}

et_status et_channel_receiver_receive_latest(et_channel_receiver* receiver, int32_t timeout_ms,
                                             et_channel_delivery* out) {
  return guarded([&] {
    return deliver("et_channel_receiver_receive_latest", receiver, timeout_ms, out,
                   [&](std::chrono::milliseconds wait) { return receiver->receiver.receive_latest(wait); });
  });
}

et_status et_channel_receiver_add_release_fence(et_channel_receiver* receiver, const et_tensor* tensor,
                                                const et_fence* fence) {
  return guarded([&]() -> Result<void> {
    constexpr const char* kFn = "et_channel_receiver_add_release_fence";
    if (receiver == nullptr) return null_argument(kFn, "receiver");
    if (tensor == nullptr) return null_argument(kFn, "tensor");
    if (fence == nullptr) return null_argument(kFn, "fence");
    ET_TRY_ASSIGN(auto f, fence->fence->dup());
    return receiver->receiver.add_release_fence(tensor->tensor, std::move(f));
  });
}

et_status et_channel_receiver_add_release_fence_frame(et_channel_receiver* receiver, const et_frame* frame,
                                                      const et_fence* fence) {
  return guarded([&]() -> Result<void> {
    constexpr const char* kFn = "et_channel_receiver_add_release_fence_frame";
    if (receiver == nullptr) return null_argument(kFn, "receiver");
    if (frame == nullptr) return null_argument(kFn, "frame");
    if (fence == nullptr) return null_argument(kFn, "fence");
    ET_TRY_ASSIGN(auto f, fence->fence->dup());
    return receiver->receiver.add_release_fence(frame->frame, std::move(f));
  });
}

et_status et_channel_receiver_flush(et_channel_receiver* receiver) {
  return guarded([&]() -> Result<void> {
    if (receiver == nullptr) return null_argument("et_channel_receiver_flush", "receiver");
    return receiver->receiver.flush();
  });
}

et_status et_channel_receiver_get_fd(const et_channel_receiver* receiver, int32_t* out_borrowed_fd) {
  return guarded([&]() -> Result<void> {
    if (out_borrowed_fd == nullptr) return null_argument("et_channel_receiver_get_fd", "out_borrowed_fd");
    *out_borrowed_fd = -1;
    if (receiver == nullptr) return null_argument("et_channel_receiver_get_fd", "receiver");
    *out_borrowed_fd = receiver->receiver.fd();
    return {};
  });
}

et_status et_channel_receiver_get_stats(const et_channel_receiver* receiver, et_channel_receiver_stats* stats) {
  return guarded([&]() -> Result<void> {
    if (receiver == nullptr) return null_argument("et_channel_receiver_get_stats", "receiver");
    if (stats == nullptr) return null_argument("et_channel_receiver_get_stats", "stats");
    const channel::ReceiverStats s = receiver->receiver.stats();
    et_channel_receiver_stats v{};
    v.struct_size = sizeof v;
    v.end_of_stream = s.end_of_stream ? 1 : 0;
    v.frames_received = s.frames_received;
    v.releases_sent = s.releases_sent;
    v.announces = s.announces;
    v.retires = s.retires;
    v.buffers = s.buffers;
    v.frames_out = s.frames_out;
    v.releases_queued = s.releases_queued;
    v.frames_skipped = s.frames_skipped;
    v.frames_missing = s.frames_missing;
    v.acquire_fences = s.acquire_fences;
    v.release_fences_sent = s.release_fences_sent;
    return write_output(stats, v, ET_CHANNEL_RECEIVER_STATS_SIZE_VER0, "et_channel_receiver_stats");
  });
}

et_status et_channel_receiver_status(const et_channel_receiver* receiver) {
  return guarded([&]() -> Result<void> {
    if (receiver == nullptr) return null_argument("et_channel_receiver_status", "receiver");
    return receiver->receiver.status();
  });
}

// ---- Publisher ----

et_status et_channel_publisher_create(const et_channel_publisher_options* options, et_channel_publisher** out) {
  return guarded([&]() -> Result<void> {
    if (out == nullptr) return null_argument("et_channel_publisher_create", "out");
    *out = nullptr;
    ET_TRY_ASSIGN(auto o, publisher_options(options));
    ET_TRY_ASSIGN(auto p, channel::Publisher::create(o));
    *out = new et_channel_publisher{.publisher = std::move(p)};
    return {};
  });
}

et_status et_channel_publisher_listen(const char* path, const et_channel_listen_options* listen,
                                      const et_channel_publisher_options* options, et_channel_publisher** out) {
  return guarded([&]() -> Result<void> {
    if (out == nullptr) return null_argument("et_channel_publisher_listen", "out");
    *out = nullptr;
    if (path == nullptr) return null_argument("et_channel_publisher_listen", "path");
    ET_TRY_ASSIGN(auto l, listen_options(listen));
    ET_TRY_ASSIGN(auto o, publisher_options(options));
    ET_TRY_ASSIGN(auto p, channel::Publisher::listen(path, l, o));
    *out = new et_channel_publisher{.publisher = std::move(p)};
    return {};
  });
}

et_channel_publisher* et_channel_publisher_retain(et_channel_publisher* publisher) { return retain_handle(publisher); }
void et_channel_publisher_release(et_channel_publisher* publisher) { release_handle_keep_errno(publisher); }

et_status et_channel_publisher_add_receiver_adopt(et_channel_publisher* publisher, int32_t socket_fd,
                                                  const et_channel_sender_options* options, uint64_t* out_id) {
  return guarded([&]() -> Result<void> {
    constexpr const char* kFn = "et_channel_publisher_add_receiver_adopt";
    UniqueFd socket = adopt_socket(socket_fd);  // taken on every path: own it before the first check
    if (publisher == nullptr) return null_argument(kFn, "publisher");
    if (out_id == nullptr) return null_argument(kFn, "out_id");
    ET_TRY(check_socket_fd(kFn, socket_fd));
    if (options == nullptr) {
      ET_TRY_ASSIGN(*out_id, publisher->publisher.add_receiver(std::move(socket)));
      return {};
    }
    channel::SenderOptions o;
    ET_TRY(sender_options(options, o));
    ET_TRY_ASSIGN(*out_id, publisher->publisher.add_receiver(std::move(socket), o));
    return {};
  });
}

et_status et_channel_publisher_send(et_channel_publisher* publisher, const et_tensor* tensor,
                                    const et_channel_send_options* options, et_channel_publish_result* out) {
  return guarded([&]() -> Result<void> {
    if (publisher == nullptr) return null_argument("et_channel_publisher_send", "publisher");
    if (tensor == nullptr) return null_argument("et_channel_publisher_send", "tensor");
    if (out == nullptr) return null_argument("et_channel_publisher_send", "out");
    ET_TRY(check_struct_size(declared_struct_size(out), ET_CHANNEL_PUBLISH_RESULT_SIZE_VER0, "et_channel_publish_result"));
    SendOptions o;
    ET_TRY(send_options(options, o));
    ET_TRY_ASSIGN(auto r, publisher->publisher.send(tensor->tensor, o.options));
    return write_publish_result(out, r);
  });
}

et_status et_channel_publisher_send_frame(et_channel_publisher* publisher, const et_frame* frame,
                                          const et_channel_send_options* options, et_channel_publish_result* out) {
  return guarded([&]() -> Result<void> {
    if (publisher == nullptr) return null_argument("et_channel_publisher_send_frame", "publisher");
    if (frame == nullptr) return null_argument("et_channel_publisher_send_frame", "frame");
    if (out == nullptr) return null_argument("et_channel_publisher_send_frame", "out");
    ET_TRY(check_struct_size(declared_struct_size(out), ET_CHANNEL_PUBLISH_RESULT_SIZE_VER0, "et_channel_publish_result"));
    SendOptions o;
    ET_TRY(send_options(options, o));
    ET_TRY_ASSIGN(auto r, publisher->publisher.send_frame(frame->frame, o.options));
    return write_publish_result(out, r);
  });
}

et_status et_channel_publisher_acquire(et_channel_publisher* publisher, et_pool* pool, int32_t timeout_ms,
                                       et_tensor** out) {
  return guarded([&]() -> Result<void> {
    if (out == nullptr) return null_argument("et_channel_publisher_acquire", "out");
    *out = nullptr;
    if (publisher == nullptr) return null_argument("et_channel_publisher_acquire", "publisher");
    if (pool == nullptr) return null_argument("et_channel_publisher_acquire", "pool");
    ET_TRY_ASSIGN(auto wait, wait_ms("et_channel_publisher_acquire", timeout_ms));
    ET_TRY_ASSIGN(auto t, publisher->publisher.acquire(pool->pool, wait));
    give_tensor(std::move(t), out);
    return {};
  });
}

et_status et_channel_publisher_end_stream(et_channel_publisher* publisher) {
  return guarded([&]() -> Result<void> {
    if (publisher == nullptr) return null_argument("et_channel_publisher_end_stream", "publisher");
    return publisher->publisher.end_stream();
  });
}

et_status et_channel_publisher_drain(et_channel_publisher* publisher, int32_t timeout_ms) {
  return guarded([&]() -> Result<void> {
    if (publisher == nullptr) return null_argument("et_channel_publisher_drain", "publisher");
    ET_TRY_ASSIGN(auto wait, wait_ms("et_channel_publisher_drain", timeout_ms));
    return publisher->publisher.drain(wait);
  });
}

et_status et_channel_publisher_disconnect(et_channel_publisher* publisher, uint64_t id) {
  return guarded([&]() -> Result<void> {
    if (publisher == nullptr) return null_argument("et_channel_publisher_disconnect", "publisher");
    return publisher->publisher.disconnect(id);
  });
}

et_status et_channel_publisher_get_receivers(const et_channel_publisher* publisher, et_channel_receiver_info* infos,
                                             uint32_t capacity, uint32_t* out_count) {
  return guarded([&]() -> Result<void> {
    constexpr const char* kFn = "et_channel_publisher_get_receivers";
    if (publisher == nullptr) return null_argument(kFn, "publisher");
    if (out_count == nullptr) return null_argument(kFn, "out_count");
    if (capacity > 0 && infos == nullptr) return null_argument(kFn, "infos (capacity " + std::to_string(capacity) + ")");
    // The caller's element size is the stride: an older or newer caller's array steps by its own sizeof.
    const std::uint32_t stride = capacity > 0 ? declared_struct_size(infos) : 0;
    if (capacity > 0) ET_TRY(check_struct_size(stride, ET_CHANNEL_RECEIVER_INFO_SIZE_VER0, "et_channel_receiver_info"));
    const std::vector<channel::ReceiverInfo> all = publisher->publisher.receivers();
    for (std::size_t i = 0; i < all.size() && i < capacity; ++i) {
      const channel::ReceiverInfo& r = all[i];
      et_channel_receiver_info v{};
      v.struct_size = sizeof v;
      v.policy = static_cast<int32_t>(r.policy);
      v.id = r.id;
      v.max_frames_out = r.max_frames_out;
      if (r.peer) {
        v.has_peer = 1;
        v.peer_pid = r.peer->pid;
        v.peer_uid = r.peer->uid;
        v.peer_gid = r.peer->gid;
      }
      v.stats = sender_stats_to_c(r.stats);
      // The nested stats' size: what of them the caller's element holds (an older element ends sooner).
      v.stats.struct_size = static_cast<uint32_t>(
          std::min<std::size_t>(sizeof v.stats, stride - offsetof(et_channel_receiver_info, stats)));
      auto* element = reinterpret_cast<unsigned char*>(infos) + i * stride;
      std::memcpy(element, &stride, sizeof stride);  // the library sets struct_size past the first element
      ET_TRY(copy_struct_to_caller(element, stride, ET_CHANNEL_RECEIVER_INFO_SIZE_VER0, &v, sizeof v,
                                   "et_channel_receiver_info"));
    }
    *out_count = static_cast<uint32_t>(all.size());
    return {};
  });
}

et_status et_channel_publisher_get_stats(const et_channel_publisher* publisher, et_channel_publisher_stats* stats) {
  return guarded([&]() -> Result<void> {
    if (publisher == nullptr) return null_argument("et_channel_publisher_get_stats", "publisher");
    if (stats == nullptr) return null_argument("et_channel_publisher_get_stats", "stats");
    const channel::PublisherStats s = publisher->publisher.stats();
    et_channel_publisher_stats v{};
    v.struct_size = sizeof v;
    v.frames_published = s.frames_published;
    v.deliveries = s.deliveries;
    v.drops = s.drops;
    v.receivers_joined = s.receivers_joined;
    v.receivers_left = s.receivers_left;
    v.receivers_refused = s.receivers_refused;
    v.receivers = s.receivers;
    return write_output(stats, v, ET_CHANNEL_PUBLISHER_STATS_SIZE_VER0, "et_channel_publisher_stats");
  });
}

et_status et_channel_publisher_get_path(const et_channel_publisher* publisher, const char** out_path) {
  return guarded([&]() -> Result<void> {
    if (publisher == nullptr) return null_argument("et_channel_publisher_get_path", "publisher");
    if (out_path == nullptr) return null_argument("et_channel_publisher_get_path", "out_path");
    *out_path = publisher->publisher.path().c_str();  // the Publisher's own string: lives as long as the handle
    return {};
  });
}

}  // extern "C"

namespace {
/// The calling thread's et_channel_set_wait_check: a C++ ScopedWaitCheck made and dropped on this thread.
thread_local std::unique_ptr<channel::ScopedWaitCheck> t_wait_check;
}  // namespace

et_status et_channel_set_wait_check(et_channel_wait_check_fn check, void* user_data) {
  return guarded([&]() -> Result<void> {
    t_wait_check.reset();
    if (check == nullptr) return {};
    t_wait_check = std::make_unique<channel::ScopedWaitCheck>([check, user_data]() -> Result<void> {
      if (check(user_data) == 0) return {};
      return tl::unexpected(Error(ErrorCode::Busy, "stopped by the thread's wait check (et_channel_set_wait_check)",
                                  ECANCELED));
    });
    return {};
  });
}
