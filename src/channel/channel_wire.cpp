// SPDX-License-Identifier: Apache-2.0
// Encoding and validation of the frame channel's messages (channel_wire.h; docs/WIRE.md).
#include "channel/channel_wire.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <string>

#include "text/format.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {
namespace {

Unexpected bad(std::string what) { return fail(ErrorCode::InvalidArgument, "malformed channel message: " + std::move(what)); }

const char* type_name(std::uint8_t type) noexcept {
  switch (static_cast<ChannelMessage>(type)) {
    case ChannelMessage::Announce: return "announce";
    case ChannelMessage::TensorFrame: return "tensor frame";
    case ChannelMessage::Frame: return "frame";
    case ChannelMessage::Release: return "release";
    case ChannelMessage::Retire: return "retire";
    case ChannelMessage::Hello: return "hello";
    case ChannelMessage::EndOfStream: return "end of stream";
    case ChannelMessage::Refuse: return "refuse";
  }
  return "unknown";
}

std::uint16_t header_bytes_of(ChannelMessage type) noexcept {
  switch (type) {
    case ChannelMessage::Announce: return sizeof(AnnounceHeader);
    case ChannelMessage::TensorFrame:
    case ChannelMessage::Frame: return sizeof(FrameHeader);
    case ChannelMessage::Release:
    case ChannelMessage::Retire: return sizeof(ChannelPrefix);
    case ChannelMessage::Hello: return sizeof(HelloHeader);
    case ChannelMessage::EndOfStream: return sizeof(EndOfStreamHeader);
    case ChannelMessage::Refuse: return sizeof(RefuseHeader);
  }
  return 0;
}

ChannelPrefix prefix_of(ChannelMessage type, std::uint16_t count) noexcept {
  ChannelPrefix p;
  p.header_bytes = header_bytes_of(type);
  p.type = static_cast<std::uint8_t>(type);
  p.count = count;
  return p;
}

template <class T>
std::vector<std::byte> bytes_of(const T& value, std::size_t extra = 0) {
  std::vector<std::byte> out(sizeof value + extra);
  std::memcpy(out.data(), &value, sizeof value);
  return out;
}

}  // namespace

std::vector<std::byte> encode_announce(std::uint32_t buffer_id, MemoryKind memory, std::uint64_t buffer_bytes) {
  AnnounceHeader h;
  h.prefix = prefix_of(ChannelMessage::Announce, 1);
  h.buffer_id = buffer_id;
  h.memory = static_cast<std::uint8_t>(memory);
  h.buffer_bytes = buffer_bytes;
  return bytes_of(h);
}

std::vector<std::byte> encode_frame(ChannelMessage type, std::uint64_t sequence, std::int64_t timestamp_ns,
                                    std::span<const std::uint32_t> buffer_ids, std::span<const std::byte> embedded,
                                    const FrameTiming& timing, std::uint8_t fence_mask) {
  FrameHeader h;
  h.prefix = prefix_of(type, static_cast<std::uint16_t>(buffer_ids.size()));
  h.prefix.fence_count = static_cast<std::uint8_t>(std::popcount(fence_mask));
  h.fence_mask = fence_mask;
  h.sequence = sequence;
  h.timestamp_ns = timestamp_ns;
  h.pts_ns = timing.pts_ns;
  h.duration_ns = timing.duration_ns;
  h.flags = timing.flags;
  for (std::size_t i = 0; i < buffer_ids.size() && i < kMaxPlanes; ++i) h.buffer_ids[i] = buffer_ids[i];
  auto out = bytes_of(h, embedded.size());
  if (!embedded.empty()) std::memcpy(out.data() + sizeof h, embedded.data(), embedded.size());
  return out;
}

std::size_t encode_release(std::span<const ReleaseEntry> entries, std::span<std::byte> out) noexcept {
  const std::size_t n = std::min(entries.size(), kMaxReleaseEntries);
  ChannelPrefix p = prefix_of(ChannelMessage::Release, static_cast<std::uint16_t>(n));
  for (std::size_t i = 0; i < n; ++i)
    if (entries[i].flags & kReleaseFenced) ++p.fence_count;
  const std::size_t bytes = sizeof p + n * sizeof(ReleaseEntry);
  if (n == 0 || out.size() < bytes) return 0;
  std::memcpy(out.data(), &p, sizeof p);
  std::memcpy(out.data() + sizeof p, entries.data(), n * sizeof(ReleaseEntry));
  return bytes;
}

std::vector<std::byte> encode_hello(ChannelRole role, std::uint32_t max_buffers, std::uint32_t capabilities,
                                    std::optional<PolicyRequest> request) {
  HelloHeader h;
  h.prefix = prefix_of(ChannelMessage::Hello, 0);
  h.role = static_cast<std::uint32_t>(role);
  h.capabilities = capabilities;
  h.max_buffers = max_buffers;
  if (request) {
    h.capabilities |= kCapabilityPolicyRequest;
    h.reserved = static_cast<std::uint32_t>(request->policy);
    h.reserved2[0] = request->max_frames_out;
  }
  return bytes_of(h);
}

std::vector<std::byte> encode_end_of_stream(std::uint64_t frames_sent) {
  EndOfStreamHeader h;
  h.prefix = prefix_of(ChannelMessage::EndOfStream, 0);
  h.frames_sent = frames_sent;
  return bytes_of(h);
}

std::vector<std::byte> encode_refuse(RefuseReason reason, std::string_view text) {
  RefuseHeader h;
  h.prefix = prefix_of(ChannelMessage::Refuse, 0);
  h.reason = static_cast<std::uint32_t>(reason);
  const std::size_t n = std::min(text.size(), kMaxRefuseTextBytes);
  h.text_bytes = static_cast<std::uint32_t>(n);
  auto out = bytes_of(h, n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    out[sizeof h + i] = static_cast<std::byte>(c >= 0x20 && c < 0x7f ? c : '?');
  }
  return out;
}

std::vector<std::byte> encode_retire(std::span<const std::uint32_t> buffer_ids) {
  const ChannelPrefix p = prefix_of(ChannelMessage::Retire, static_cast<std::uint16_t>(buffer_ids.size()));
  auto out = bytes_of(p, buffer_ids.size_bytes());
  if (!buffer_ids.empty()) std::memcpy(out.data() + sizeof p, buffer_ids.data(), buffer_ids.size_bytes());
  return out;
}

Result<ChannelPrefix> decode_prefix(std::span<const std::byte> bytes) {
  if (bytes.size() < sizeof(ChannelPrefix))
    return bad(text::format("{} B received, every channel message starts with a {} B prefix", bytes.size(),
                            sizeof(ChannelPrefix)));
  ChannelPrefix p;
  std::memcpy(&p, bytes.data(), sizeof p);
  if (p.magic == __builtin_bswap32(kChannelMagic))
    return bad(text::format("magic {:#010x} is {:#010x} byte-swapped: the sender's byte order is the other one "
                            "(docs/WIRE.md)", p.magic, kChannelMagic));
  if (p.magic == kWireMagic || p.magic == kFrameWireMagic)
    return bad(text::format("a {} message of ipc::send arrived (magic {:#010x}) on a frame channel, which speaks only "
                            "its own messages (magic {:#010x})", p.magic == kWireMagic ? "tensor" : "frame", p.magic,
                            kChannelMagic));
  if (p.magic != kChannelMagic) return bad(text::format("magic {:#010x}, expected {:#010x}", p.magic, kChannelMagic));
  if (p.version != channel::kChannelVersion)
    return bad(text::format("channel version {}{}; this end speaks version {}: both ends need one edgetensor "
                            "release's channel (docs/WIRE.md, \"Versions\")", p.version,
                            p.version == 1 ? " (an edgetensor 0.4 or 0.5 peer)" : "", channel::kChannelVersion));
  const std::uint16_t want = header_bytes_of(static_cast<ChannelMessage>(p.type));
  if (want == 0) return bad(text::format("message type {} is not a channel message (1..{})", p.type, kLastChannelMessage));
  if (p.header_bytes != want)
    return bad(text::format("{} header_bytes {}, expected {}", type_name(p.type), p.header_bytes, want));
  if (bytes.size() < want)
    return bad(text::format("{} B received, a {} header has {} B", bytes.size(), type_name(p.type), want));
  if (p.reserved != 0) return bad(text::format("reserved prefix field {}: must be 0", p.reserved));
  const auto type = static_cast<ChannelMessage>(p.type);
  const bool carries_fences = type == ChannelMessage::TensorFrame || type == ChannelMessage::Frame ||
                              type == ChannelMessage::Release;
  if (p.fence_count != 0 && !carries_fences)
    return bad(text::format("{} with fence_count {}: only frames and releases carry fences", type_name(p.type),
                            p.fence_count));
  return p;
}

Result<Announce> decode_announce(std::span<const std::byte> bytes) {
  ET_TRY_ASSIGN(const ChannelPrefix p, decode_prefix(bytes));
  if (p.type != static_cast<std::uint8_t>(ChannelMessage::Announce))
    return bad(text::format("a {} where an announce was expected", type_name(p.type)));
  if (bytes.size() != sizeof(AnnounceHeader))
    return bad(text::format("announce of {} B, it has exactly {} B", bytes.size(), sizeof(AnnounceHeader)));
  AnnounceHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  if (p.count != 1) return bad(text::format("announce count {}: an announce names 1 buffer", p.count));
  if (h.buffer_id == 0) return bad("announce of buffer id 0: ids start at 1");
  const auto kind = static_cast<MemoryKind>(h.memory);
  if (kind != MemoryKind::Shm && kind != MemoryKind::DmaBuf)
    return bad(text::format("announce of buffer {} with memory kind {} ({}); only shm (2) and dmabuf (3) travel",
                            h.buffer_id, h.memory, memory_kind_name(kind)));
  if (h.reserved[0] != 0 || h.reserved[1] != 0 || h.reserved[2] != 0)
    return bad(text::format("announce of buffer {}: reserved bytes must be 0", h.buffer_id));
  if (h.buffer_bytes == 0) return bad(text::format("announce of buffer {} with 0 bytes", h.buffer_id));
  return Announce{h.buffer_id, kind, h.buffer_bytes};
}

Result<FrameMessage> decode_frame(std::span<const std::byte> bytes, bool fences) {
  ET_TRY_ASSIGN(const ChannelPrefix p, decode_prefix(bytes));
  const auto type = static_cast<ChannelMessage>(p.type);
  if (type != ChannelMessage::TensorFrame && type != ChannelMessage::Frame)
    return bad(text::format("a {} where a frame was expected", type_name(p.type)));
  FrameHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  const std::size_t most = type == ChannelMessage::TensorFrame ? 1 : kMaxPlanes;
  if (p.count == 0 || p.count > most)
    return bad(text::format("{} sequence {} names {} buffers: 1..{}", type_name(p.type), h.sequence, p.count, most));
  FrameMessage m;
  m.type = type;
  m.sequence = h.sequence;
  m.timestamp_ns = h.timestamp_ns;
  m.timing = {h.pts_ns, h.duration_ns, h.flags};
  if (h.duration_ns < 0 && h.duration_ns != kNoTime)
    return bad(text::format("{} sequence {}: duration_ns {} is negative", type_name(p.type), h.sequence, h.duration_ns));
  if (!fences && (p.fence_count != 0 || h.fence_mask != 0))
    return bad(text::format("{} sequence {} with fence_count {}, fence_mask {:#x}: no fence capability was agreed in "
                            "the hellos (the sender's hello must carry it, docs/WIRE.md \"Capabilities\")",
                            type_name(p.type), h.sequence, p.fence_count, h.fence_mask));
  if ((h.fence_mask >> p.count) != 0)
    return bad(text::format("{} sequence {}: fence_mask {:#x} has a bit past its {} buffer{}", type_name(p.type),
                            h.sequence, h.fence_mask, p.count, p.count == 1 ? "" : "s"));
  if (p.fence_count != std::popcount(h.fence_mask))
    return bad(text::format("{} sequence {}: fence_count {} does not match fence_mask {:#x} ({} fence{})",
                            type_name(p.type), h.sequence, p.fence_count, h.fence_mask, std::popcount(h.fence_mask),
                            std::popcount(h.fence_mask) == 1 ? "" : "s"));
  m.fence_mask = h.fence_mask;
  if (h.reserved[0] != 0 || h.reserved[1] != 0 || h.reserved[2] != 0 || h.reserved2 != 0)
    return bad(text::format("{} sequence {}: reserved fields must be 0", type_name(p.type), h.sequence));
  m.buffer_count = p.count;
  for (std::size_t i = 0; i < kMaxPlanes; ++i) {
    const std::uint32_t id = h.buffer_ids[i];
    if (i < p.count && id == 0)
      return bad(text::format("{} sequence {}: buffer_ids[{}] is 0; ids start at 1", type_name(p.type), h.sequence, i));
    if (i >= p.count && id != 0)
      return bad(text::format("{} sequence {}: buffer_ids[{}] = {} past its {} buffer{}: must be 0",
                              type_name(p.type), h.sequence, i, id, p.count, p.count == 1 ? "" : "s"));
    for (std::size_t k = 0; k < i && i < p.count; ++k)
      if (h.buffer_ids[k] == id)
        return bad(text::format("{} sequence {}: buffer {} named twice (buffer_ids[{}] and [{}])", type_name(p.type),
                                h.sequence, id, k, i));
    m.buffer_ids[i] = id;
  }
  m.embedded = bytes.subspan(sizeof h);
  return m;
}

Result<std::vector<ReleaseEntry>> decode_release(std::span<const std::byte> bytes, bool fences) {
  ET_TRY_ASSIGN(const ChannelPrefix p, decode_prefix(bytes));
  if (p.type != static_cast<std::uint8_t>(ChannelMessage::Release))
    return bad(text::format("a {} where a release was expected", type_name(p.type)));
  if (p.count == 0 || p.count > kMaxReleaseEntries)
    return bad(text::format("release of {} entries: 1..{}", p.count, kMaxReleaseEntries));
  const std::size_t want = sizeof(ChannelPrefix) + p.count * sizeof(ReleaseEntry);
  if (bytes.size() != want)
    return bad(text::format("release of {} entries in {} B, it has exactly {} B", p.count, bytes.size(), want));
  std::vector<ReleaseEntry> entries(p.count);
  std::memcpy(entries.data(), bytes.data() + sizeof(ChannelPrefix), p.count * sizeof(ReleaseEntry));
  std::size_t fenced = 0;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const ReleaseEntry& e = entries[i];
    if (e.buffer_id == 0) return bad(text::format("release entry {}: buffer id 0", i));
    if (e.flags != 0 && !fences)
      return bad(text::format("release entry {} (buffer {} sequence {}) with flags {:#x}: no fence capability was "
                              "agreed in the hellos (the receiver's hello must carry it)", i, e.buffer_id, e.sequence,
                              e.flags));
    if ((e.flags & ~kReleaseFenced) != 0)
      return bad(text::format("release entry {} (buffer {} sequence {}) with flags {:#x}: only bit 0 (a release "
                              "fence) is defined", i, e.buffer_id, e.sequence, e.flags));
    if (e.reserved[0] != 0 || e.reserved[1] != 0 || e.reserved[2] != 0)
      return bad(text::format("release entry {}: reserved bytes must be 0", i));
    if (e.flags & kReleaseFenced) ++fenced;
  }
  if (p.fence_count != 0 && !fences)
    return bad(text::format("release with fence_count {}: no fence capability was agreed in the hellos (the "
                            "receiver's hello must carry it)", p.fence_count));
  if (p.fence_count != fenced)
    return bad(text::format("release with fence_count {} but {} entr{} flagged with a fence", p.fence_count, fenced,
                            fenced == 1 ? "y" : "ies"));
  return entries;
}

Result<std::vector<std::uint32_t>> decode_retire(std::span<const std::byte> bytes) {
  ET_TRY_ASSIGN(const ChannelPrefix p, decode_prefix(bytes));
  if (p.type != static_cast<std::uint8_t>(ChannelMessage::Retire))
    return bad(text::format("a {} where a retire was expected", type_name(p.type)));
  if (p.count == 0 || p.count > kMaxRetireIds) return bad(text::format("retire of {} ids: 1..{}", p.count, kMaxRetireIds));
  const std::size_t want = sizeof(ChannelPrefix) + p.count * sizeof(std::uint32_t);
  if (bytes.size() != want)
    return bad(text::format("retire of {} ids in {} B, it has exactly {} B", p.count, bytes.size(), want));
  std::vector<std::uint32_t> ids(p.count);
  std::memcpy(ids.data(), bytes.data() + sizeof(ChannelPrefix), ids.size() * sizeof(std::uint32_t));
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] == 0) return bad(text::format("retire entry {}: buffer id 0", i));
  return ids;
}

Result<Hello> decode_hello(std::span<const std::byte> bytes) {
  ET_TRY_ASSIGN(const ChannelPrefix p, decode_prefix(bytes));
  if (p.type != static_cast<std::uint8_t>(ChannelMessage::Hello))
    return bad(text::format("a {} where a hello was expected", type_name(p.type)));
  if (bytes.size() != sizeof(HelloHeader))
    return bad(text::format("hello of {} B, it has exactly {} B", bytes.size(), sizeof(HelloHeader)));
  HelloHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  if (p.count != 0) return bad(text::format("hello count {}: must be 0", p.count));
  if (h.role != static_cast<std::uint32_t>(ChannelRole::Sender) && h.role != static_cast<std::uint32_t>(ChannelRole::Receiver))
    return bad(text::format("hello role {}: 1 (sender) or 2 (receiver)", h.role));
  if (h.max_buffers == 0 || h.max_buffers > channel::kMaxChannelBuffers)
    return bad(text::format("hello max_buffers {}: 1..{}", h.max_buffers, channel::kMaxChannelBuffers));
  Hello out{static_cast<ChannelRole>(h.role), h.capabilities, h.max_buffers, std::nullopt};
  if ((h.capabilities & kCapabilityPolicyRequest) != 0 && out.role == ChannelRole::Receiver) {
    if (h.reserved > 1) return bad(text::format("hello policy {}: 0 (block) or 1 (drop)", h.reserved));
    if (h.reserved2[0] > channel::kMaxQueuedReleases)
      return bad(text::format("hello max_frames_out {}: 0..{}", h.reserved2[0], channel::kMaxQueuedReleases));
    out.request = PolicyRequest{static_cast<channel::ReceiverPolicy>(h.reserved), h.reserved2[0]};
  }
  return out;
}

Result<std::uint64_t> decode_end_of_stream(std::span<const std::byte> bytes) {
  ET_TRY_ASSIGN(const ChannelPrefix p, decode_prefix(bytes));
  if (p.type != static_cast<std::uint8_t>(ChannelMessage::EndOfStream))
    return bad(text::format("a {} where an end of stream was expected", type_name(p.type)));
  if (bytes.size() != sizeof(EndOfStreamHeader))
    return bad(text::format("end of stream of {} B, it has exactly {} B", bytes.size(), sizeof(EndOfStreamHeader)));
  if (p.count != 0) return bad(text::format("end of stream count {}: must be 0", p.count));
  EndOfStreamHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  return h.frames_sent;
}

Error refusal_error(const Refusal& r, std::string_view peer) {
  const ErrorCode code = r.reason == static_cast<std::uint32_t>(RefuseReason::NotAllowed)      ? ErrorCode::PermissionDenied
                         : r.reason == static_cast<std::uint32_t>(RefuseReason::ReceiverLimit) ? ErrorCode::OutOfRange
                                                                                                : ErrorCode::Unavailable;
  const int sys_errno = code == ErrorCode::PermissionDenied ? EACCES : code == ErrorCode::OutOfRange ? EUSERS : 0;
  return Error(code, text::format("the {} refused this end and closed the channel: {}", peer,
                                  r.text.empty() ? std::string("(no reason given)") : r.text), sys_errno);
}

Result<Refusal> decode_refuse(std::span<const std::byte> bytes) {
  ET_TRY_ASSIGN(const ChannelPrefix p, decode_prefix(bytes));
  if (p.type != static_cast<std::uint8_t>(ChannelMessage::Refuse))
    return bad(text::format("a {} where a refuse was expected", type_name(p.type)));
  if (p.count != 0) return bad(text::format("refuse count {}: must be 0", p.count));
  RefuseHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  if (h.text_bytes > kMaxRefuseTextBytes)
    return bad(text::format("refuse text_bytes {}, over the limit of {}", h.text_bytes, kMaxRefuseTextBytes));
  if (bytes.size() != sizeof h + h.text_bytes)
    return bad(text::format("refuse of {} B, with text_bytes {} it has exactly {} B", bytes.size(), h.text_bytes,
                            sizeof h + h.text_bytes));
  Refusal r;
  r.reason = h.reason;
  r.text.reserve(h.text_bytes);
  for (std::size_t i = 0; i < h.text_bytes; ++i) {
    const auto c = static_cast<unsigned char>(bytes[sizeof h + i]);
    if (c < 0x20 || c >= 0x7f)
      return bad(text::format("refuse text byte {} is {:#04x}: the text is printable ASCII", i, c));
    r.text.push_back(static_cast<char>(c));
  }
  return r;
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
