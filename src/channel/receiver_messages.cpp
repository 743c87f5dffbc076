// SPDX-License-Identifier: Apache-2.0
// What each channel message does at the receiver (receiver.h): announce (import once), retire (close
// the import), tensor frame and frame (deliver over the imports, no fd, no mmap). Every check runs
// before anything is handed out; an error here closes the channel (receiver.cpp).
#include <algorithm>
#include <array>
#include <cstring>
#include <string>

#include "text/format.h"

#include "channel/receiver.h"
#include "core/backend.h"
#include "image/frame_access.h"
#include "core/tensor_access.h"
#include "ipc/ipc_checks.h"
#include "ipc/ipc_codec.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {
namespace {

// A frame's acquire fence on its buffer's storage: maps wait for it (Storage::await_access_fences).
class AcquireFence final : public AccessFence {
 public:
  AcquireFence(std::shared_ptr<const sync::Fence> fence, std::string what)
      : fence_(std::move(fence)), what_(std::move(what)) {}
  Result<void> wait(std::chrono::milliseconds timeout) const override {
    auto r = fence_->wait(timeout);
    if (r) return {};
    return fail(Error(r.error().code(), text::format("{}: {}", what_, r.error().message()), r.error().sys_errno()));
  }

 private:
  std::shared_ptr<const sync::Fence> fence_;
  std::string what_;  // "the acquire fence of channel 'cam0' frame sequence 3 (buffer 0)"
};

// An InvalidArgument error carrying `what` as its whole message.
Unexpected refuse(std::string what) { return fail(ErrorCode::InvalidArgument, std::move(what)); }

void set_timing(channel::Delivery& d, const FrameTiming& t) {
  if (t.pts_ns != kNoTime) d.pts_ns = t.pts_ns;
  if (t.duration_ns != kNoTime) d.duration_ns = t.duration_ns;
  d.flags = t.flags;
}

const char* frame_kind(const FrameMessage& m) { return m.type == ChannelMessage::TensorFrame ? "tensor frame" : "frame"; }

}  // namespace

Result<std::optional<channel::Delivery>> ChannelReceiver::handle(std::span<const std::byte> bytes,
                                                                  std::vector<UniqueFd>& fds) {
  ET_TRY_ASSIGN(const ChannelPrefix p, decode_prefix(bytes));
  const auto type = static_cast<ChannelMessage>(p.type);
  if (type == ChannelMessage::Announce) {
    ET_TRY(on_announce(bytes, fds));
    return std::nullopt;
  }
  if (type == ChannelMessage::TensorFrame || type == ChannelMessage::Frame) {
    bool agreed = false;
    {
      std::lock_guard lock(mutex_);
      agreed = peer_fences_;
    }
    ET_TRY_ASSIGN(const FrameMessage m, decode_frame(bytes, agreed));
    if (fds.size() != p.fence_count)
      return refuse(text::format("malformed channel message: {} sequence {} with fence_count {} carried {} fd{}",
                              frame_kind(m), m.sequence, p.fence_count, fds.size(), fds.size() == 1 ? "" : "s"));
    ET_TRY(check_sequence(m));
    if (type == ChannelMessage::TensorFrame) return on_tensor_frame(m, fds);
    return on_frame(m, fds);
  }
  if (!fds.empty())
    return refuse(text::format("malformed channel message: {} fd{} arrived with a message of type {}; only an announce "
                            "carries one", fds.size(), fds.size() == 1 ? "" : "s", p.type));
  switch (type) {
    case ChannelMessage::Retire:
      ET_TRY(on_retire(bytes));
      return std::nullopt;
    case ChannelMessage::Hello:
      ET_TRY(on_hello(bytes));
      return std::nullopt;
    case ChannelMessage::EndOfStream: return on_end_of_stream(bytes);
    case ChannelMessage::Refuse: {
      ET_TRY_ASSIGN(const Refusal r, decode_refuse(bytes));
      return fail(refusal_error(r, "sender"));
    }
    case ChannelMessage::TensorFrame:
    case ChannelMessage::Frame: break;  // above
    case ChannelMessage::Release:
      return refuse("malformed channel message: a release arrived at the receiver; releases go from the receiver to the "
                 "sender");
    case ChannelMessage::Announce: break;
  }
  return refuse("malformed channel message: unknown type");  // decode_prefix refused it already
}

Result<void> ChannelReceiver::on_announce(std::span<const std::byte> bytes, std::vector<UniqueFd>& fds) {
  ET_TRY_ASSIGN(const Announce a, decode_announce(bytes));
  if (fds.size() != 1)
    return refuse(text::format("malformed channel message: announce of buffer {} with {} fds; it carries exactly 1",
                            a.buffer_id, fds.size()));
  {
    std::lock_guard lock(mutex_);
    if (table_.count(a.buffer_id) != 0)
      return refuse(text::format("duplicate announce of buffer {}: it was announced before and not retired", a.buffer_id));
    if (table_.size() >= options_.max_buffers)
      return fail(ErrorCode::OutOfRange,
                  text::format("announce of buffer {} would make {} imported buffers, over ReceiverOptions::max_buffers "
                               "{} (the sender's SenderOptions::max_buffers must not exceed it)",
                               a.buffer_id, table_.size() + 1, options_.max_buffers));
  }
  const std::string who = text::format("announce of buffer {}", a.buffer_id);
  ET_TRY_ASSIGN(const FdInfo info, probe_received(fds[0].get(), a.memory, options_.limits, who));
  if (info.buffer_bytes != a.buffer_bytes)
    return refuse(text::format("{} says {} B, its fd ({}) has {} B", who, a.buffer_bytes, info.what, info.buffer_bytes));
  const std::size_t bytes_count = info.buffer_bytes;
  ET_TRY_ASSIGN(TensorDyn whole, tensor_from_fd(std::move(fds[0]), info, ArrayRef<std::size_t>(&bytes_count, 1),
                                                DType::U8, {}));
  std::shared_ptr<Storage> home = storage_of(whole);
  // The sender, if it is in this process, must not count this import as its own holder of the buffer.
  home->mark_channel_import();
  // Map it now, once (memfd: the persistent mapping); a frame then costs no mmap. A DMA-BUF is mapped at
  // its first CPU map, inside its sync bracket, and stays mapped.
  if (!home->backing().needs_cpu_access_bracket()) ET_TRY(home->cpu_address());
  // What each frame of it hands out: `whole`'s U8 view, over the holder's storage (hand_out).
  TensorDyn frame_buffer = TensorAccess::without_storage(whole);
  std::lock_guard lock(mutex_);
  table_.emplace(a.buffer_id,
                 Import{std::move(whole), std::move(home), std::move(frame_buffer), a.memory, bytes_count, 0});
  ++stats_.announces;
  return {};
}

Result<void> ChannelReceiver::on_retire(std::span<const std::byte> bytes) {
  ET_TRY_ASSIGN(const auto ids, decode_retire(bytes));
  std::vector<Import> dropped;
  dropped.reserve(ids.size());
  std::lock_guard lock(mutex_);
  for (const std::uint32_t id : ids) {
    auto it = table_.find(id);
    if (it == table_.end())
      return refuse(text::format("retire of buffer {}, which was never announced (or was retired already)", id));
    if (it->second.out != 0)
      return refuse(text::format("retire of buffer {} while {} frame{} of it {} still held here", id, it->second.out,
                              it->second.out == 1 ? "" : "s", it->second.out == 1 ? "is" : "are"));
    dropped.push_back(std::move(it->second));
    table_.erase(it);
    ++stats_.retires;
  }
  return {};
  // `dropped` goes after the lock (declared before it): each import closes its fd and mapping.
}

Result<void> ChannelReceiver::on_hello(std::span<const std::byte> bytes) {
  ET_TRY_ASSIGN(const Hello h, decode_hello(bytes));
  if (h.role != ChannelRole::Sender) return refuse("a hello from another receiver: both ends of the channel are receivers");
  std::lock_guard lock(mutex_);
  if (peer_hello_) return refuse("a second hello from the sender");
  peer_hello_ = true;
  peer_fences_ = (h.capabilities & kCapabilityFences) != 0;
  return {};
}

Result<std::array<std::shared_ptr<const sync::Fence>, kMaxPlanes>> ChannelReceiver::acquire_fences(
    const FrameMessage& m, std::vector<UniqueFd>& fds) {
  std::array<std::shared_ptr<const sync::Fence>, kMaxPlanes> out;
  std::size_t next = 0;  // decode_frame and handle checked: one fd per bit, in buffer order
  for (std::size_t b = 0; b < m.buffer_count && next < fds.size(); ++b) {
    if (!(m.fence_mask & (1u << b))) continue;
    auto f = sync::Fence::adopt(std::move(fds[next++]));
    if (!f)
      return refuse(text::format("malformed channel message: the acquire fence of {} sequence {} buffer {}: {}",
                              frame_kind(m), m.sequence, b, f.error().message()));
    out[b] = std::make_shared<const sync::Fence>(std::move(*f));
  }
  return out;
}

void ChannelReceiver::attach_fences(channel::Delivery& d, const FrameMessage& m,
                                    const std::array<std::shared_ptr<const sync::Fence>, kMaxPlanes>& fences,
                                    std::span<const std::shared_ptr<Storage>> homes) {
  if (m.fence_mask == 0) return;
  d.acquire_fences.assign(fences.begin(), fences.begin() + static_cast<std::ptrdiff_t>(m.buffer_count));
  std::uint64_t n = 0;
  for (std::size_t b = 0; b < m.buffer_count; ++b) {
    if (!fences[b]) continue;
    homes[b]->add_access_fence(std::make_shared<const AcquireFence>(
        fences[b], text::format("the acquire fence of {} {} sequence {} (buffer {})", label_, frame_kind(m), m.sequence, b)));
    ++n;
  }
  std::lock_guard lock(mutex_);
  stats_.acquire_fences += n;
}

Result<channel::Delivery> ChannelReceiver::on_end_of_stream(std::span<const std::byte> bytes) {
  ET_TRY_ASSIGN(const std::uint64_t frames_sent, decode_end_of_stream(bytes));
  std::lock_guard lock(mutex_);
  ended_ = frames_sent;
  stats_.end_of_stream = true;
  channel::Delivery end;
  end.end_of_stream = true;
  end.sequence = frames_sent;
  return end;
}

Result<void> ChannelReceiver::check_sequence(const FrameMessage& m) const {
  std::lock_guard lock(mutex_);
  if (last_sequence_ && m.sequence <= *last_sequence_)
    return refuse(text::format("{} sequence {} after sequence {}: sequences increase", frame_kind(m), m.sequence,
                            *last_sequence_));
  return {};
}

Result<std::shared_ptr<Storage>> ChannelReceiver::hand_out(std::uint32_t id, std::uint64_t sequence) {
  std::shared_ptr<Storage> home;
  {
    std::lock_guard lock(mutex_);
    auto it = table_.find(id);
    if (it == table_.end()) return fail(ErrorCode::Internal, text::format("buffer {} vanished while delivering", id));
    // A sender that never reads releases would make the queue grow without end: bounded, and named.
    if (pending_.size() >= options_.max_queued_releases)
      return fail(ErrorCode::OutOfRange,
                  text::format("{} releases queued: the sender has not read them (its socket is full); "
                               "ReceiverOptions::max_queued_releases {} reached", pending_.size(),
                               options_.max_queued_releases));
    // Room for this release before it can happen: a release never allocates.
    reserve_room(pending_, pending_.size() + stats_.frames_out + 1);
    reserve_room(device_wait_, stats_.frames_out + 1);
    Import& imp = it->second;
    if (imp.out == 0) imp.home->renew_id();  // each delivery counts as an import for BufferIdentity
    ++imp.out;
    ++stats_.frames_out;
    home = imp.home;
  }
  Storage* raw = home.get();
  try {
    return std::shared_ptr<Storage>(raw, Releaser{shared_from_this(), std::move(home), id, sequence, {}});
  } catch (const std::bad_alloc&) {  // the deleter ran already: released
    return fail(ErrorCode::OutOfMemory, text::format("out of memory delivering buffer {}", id));
  }
}

void ChannelReceiver::delivered(std::uint64_t sequence) {
  std::lock_guard lock(mutex_);
  if (last_sequence_) stats_.frames_missing += sequence - *last_sequence_ - 1;  // increasing: check_sequence
  last_sequence_ = sequence;
  ++stats_.frames_received;
}

Result<channel::Delivery> ChannelReceiver::on_tensor_frame(const FrameMessage& m, std::vector<UniqueFd>& fds) {
  ET_TRY_ASSIGN(const auto fences, acquire_fences(m, fds));
  ET_TRY_ASSIGN(TensorMessage tm, decode_tensor_message(m.embedded));
  const WireHeader& h = tm.header;
  const std::uint32_t id = m.buffer_ids[0];
  std::shared_ptr<Storage> home;
  {
    std::lock_guard lock(mutex_);
    auto it = table_.find(id);
    if (it == table_.end())
      return refuse(text::format("tensor frame sequence {} names buffer {}, which was never announced (or was retired)",
                              m.sequence, id));
    if (static_cast<MemoryKind>(h.memory) != it->second.kind)
      return refuse(text::format("tensor frame sequence {}: its tensor message says memory {}, buffer {} was announced as "
                              "{}", m.sequence, memory_kind_name(static_cast<MemoryKind>(h.memory)), id,
                              memory_kind_name(it->second.kind)));
    home = it->second.home;
  }
  // The view is checked against the buffer's real size as any import's (offset, strides, extent).
  const std::array<std::size_t, kMaxRank> shape = [&] {
    std::array<std::size_t, kMaxRank> s{};
    for (std::size_t i = 0; i < h.rank; ++i) s[i] = static_cast<std::size_t>(h.shape[i]);
    return s;
  }();
  const std::string what = text::format("tensor frame sequence {} (buffer {})", m.sequence, id);
  ET_TRY_ASSIGN(TensorDyn tensor,
                TensorAccess::make(std::move(home), ArrayRef<std::size_t>(shape.data(), h.rank), static_cast<DType>(h.dtype),
                                   ArrayRef<std::int64_t>(h.strides, h.rank), static_cast<std::size_t>(h.offset_bytes),
                                   TensorAccess::named(h.name), what));
  ET_TRY(apply_tensor_metadata(tensor, tm));
  const std::shared_ptr<Storage> fenced = storage_of(tensor);
  ET_TRY_ASSIGN(auto out, hand_out(id, m.sequence));
  channel::Delivery d;
  d.sequence = m.sequence;
  d.timestamp_ns = m.timestamp_ns;
  set_timing(d, m.timing);
  attach_fences(d, m, fences, std::span(&fenced, 1));
  d.tensor = TensorAccess::with_storage(std::move(tensor), std::move(out));
  delivered(m.sequence);
  return d;
}

Result<channel::Delivery> ChannelReceiver::on_frame(const FrameMessage& m, std::vector<UniqueFd>& fds) {
  ET_TRY_ASSIGN(const auto fences, acquire_fences(m, fds));
  // The steady state: the frame message the last frame had (checked below against this frame's buffers).
  const bool same_message = checked_.size != 0 && checked_.size == m.embedded.size() &&
                            std::memcmp(checked_.bytes.data(), m.embedded.data(), m.embedded.size()) == 0;
  FrameWireHeader h;
  if (same_message) {
    h = checked_.header;
  } else {
    ET_TRY_ASSIGN(h, decode_frame_message(m.embedded));
  }
  if (m.buffer_count != h.buffer_count)
    return refuse(text::format("frame sequence {} names {} buffers, its frame message has buffer_count {}", m.sequence,
                            m.buffer_count, h.buffer_count));
  std::array<std::shared_ptr<Storage>, kMaxPlanes> homes;
  std::array<TensorDyn, kMaxPlanes> buffers;
  std::array<std::size_t, kMaxPlanes> sizes{};
  {
    std::lock_guard lock(mutex_);
    for (std::size_t b = 0; b < h.buffer_count; ++b) {
      const std::uint32_t id = m.buffer_ids[b];
      auto it = table_.find(id);
      if (it == table_.end())
        return refuse(text::format("frame sequence {} names buffer {}, which was never announced (or was retired)",
                                m.sequence, id));
      if (static_cast<MemoryKind>(h.memory[b]) != it->second.kind)
        return refuse(text::format("frame sequence {}: memory[{}] is {}, buffer {} was announced as {}", m.sequence, b,
                                memory_kind_name(static_cast<MemoryKind>(h.memory[b])), id,
                                memory_kind_name(it->second.kind)));
      homes[b] = it->second.home;
      buffers[b] = it->second.frame_buffer;
      sizes[b] = it->second.buffer_bytes;
      for (std::size_t k = 0; k < b; ++k)
        if (homes[k]->buffer_key() == homes[b]->buffer_key())
          return refuse(text::format("frame sequence {}: buffers {} and {} are one buffer; a frame names each buffer once",
                                  m.sequence, m.buffer_ids[k], id));
    }
  }
  // The layout's checks depend only on the frame message and the buffers' sizes.
  const bool checked = same_message && sizes == checked_.sizes;
  const ImageLayout layout = checked ? checked_.layout : frame_layout(h);
  if (!checked) {
    for (std::size_t i = 0; i < h.plane_count; ++i) {
      ET_TRY_ASSIGN(const std::size_t end, layout.plane_end_bytes(i));
      const std::size_t b = h.plane_buffer[i];
      if (end > sizes[b])
        return fail(ErrorCode::OutOfRange,
                    text::format("frame sequence {}: plane {} ends at {} B (offset {} B, row stride {} B), past the end of "
                                 "buffer {} ({} B)", m.sequence, i, end, layout.planes[i].offset_bytes,
                                 layout.planes[i].row_stride_bytes, m.buffer_ids[b], sizes[b]));
    }
    ET_TRY(check_shared_buffer_planes(layout, std::span<const std::uint8_t>(h.plane_buffer, h.plane_count)));
    if (m.embedded.size() <= CheckedFrame::kMaxBytes) {
      std::memcpy(checked_.bytes.data(), m.embedded.data(), m.embedded.size());
      checked_.size = m.embedded.size();
      checked_.header = h;
      checked_.layout = layout;
      checked_.sizes = sizes;
    }
  }
  // Every check passed: hand each buffer out (from here a dropped tensor sends its release).
  for (std::size_t b = 0; b < h.buffer_count; ++b) {
    ET_TRY_ASSIGN(auto out, hand_out(m.buffer_ids[b], m.sequence));
    buffers[b] = TensorAccess::with_storage(std::move(buffers[b]), std::move(out));
  }
  channel::Delivery d;
  d.sequence = m.sequence;
  d.timestamp_ns = m.timestamp_ns;
  set_timing(d, m.timing);
  attach_fences(d, m, fences, std::span<const std::shared_ptr<Storage>>(homes.data(), h.buffer_count));
  d.frame = FrameAccess::make(layout, wire_colorimetry(h.colorimetry), std::span<const TensorDyn>(buffers.data(), h.buffer_count),
                              std::span<const std::uint8_t>(h.plane_buffer, h.plane_count));
  delivered(m.sequence);
  return d;
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
