// SPDX-License-Identifier: Apache-2.0
// The frame channel's messages (version 2): pure logic, no platform code. Fixed layouts in the
// sender's byte order, every field validated on decode. docs/WIRE.md, "The frame channel", describes
// them byte by byte; the static_asserts below pin that description: change both together, and
// kChannelVersion.
#pragma once

#include <edgetensor/channel.h>
#include <edgetensor/error.h>
#include <edgetensor/memory.h>

#include <array>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ipc/ipc_wire.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

inline constexpr std::uint32_t kChannelMagic = 0x31435445;  // "ETC1"

enum class ChannelMessage : std::uint8_t {
  Announce = 1, TensorFrame = 2, Frame = 3, Release = 4, Retire = 5, Hello = 6, EndOfStream = 7, Refuse = 8
};
inline constexpr std::uint8_t kLastChannelMessage = 8;

/// Hello capability bits (docs/WIRE.md, "Capabilities"): an end uses one only when both hellos carry it.
/// Fences: frames may carry acquire fences (fence_mask) and releases release fences (flags bit 0), each a
/// sync_file fd attached after the message's own fds (fence_count in the prefix).
inline constexpr std::uint32_t kCapabilityFences = 1u << 0;
/// What this release advertises.
inline constexpr std::uint32_t kOwnCapabilities = kCapabilityFences;
/// ReleaseEntry::flags bit 0: a release fence for this entry is attached.
inline constexpr std::uint8_t kReleaseFenced = 1u << 0;
/// Hello capability bit 1, in a receiver's hello: it asks to be served under the policy in `reserved`
/// (0 Block, 1 Drop) with the frame limit in reserved2[0] (ReceiverOptions::policy, docs/WIRE.md "Messages", Hello).
/// A sender that does not know the bit ignores both fields, as it ignores every reserved field.
inline constexpr std::uint32_t kCapabilityPolicyRequest = 1u << 1;

/// pts_ns / duration_ns on the wire when the sender gave none.
inline constexpr std::int64_t kNoTime = INT64_MIN;

// The 16 bytes every channel message starts with.
struct ChannelPrefix {
  std::uint32_t magic = kChannelMagic;
  std::uint16_t version = channel::kChannelVersion;
  std::uint16_t header_bytes = 0;  // the type's fixed header, this prefix included
  std::uint8_t type = 0;           // ChannelMessage
  std::uint8_t fence_count = 0;    // fence fds attached after the message's own (frames, releases; kCapabilityFences)
  std::uint16_t count = 0;         // announce 1; frame: buffers; release: entries; retire: ids; hello, end 0
  std::uint32_t reserved = 0;
};
static_assert(sizeof(ChannelPrefix) == 16 && offsetof(ChannelPrefix, version) == 4 &&
              offsetof(ChannelPrefix, header_bytes) == 6 && offsetof(ChannelPrefix, type) == 8 &&
              offsetof(ChannelPrefix, fence_count) == 9 && offsetof(ChannelPrefix, count) == 10 &&
              offsetof(ChannelPrefix, reserved) == 12);

// Announce: a buffer's id, kind and size, with its fd (exactly 1).
struct AnnounceHeader {
  ChannelPrefix prefix;
  std::uint32_t buffer_id = 0;  // non-zero
  std::uint8_t memory = 0;      // MemoryKind: 2 Shm, 3 DmaBuf
  std::uint8_t reserved[3] = {};
  std::uint64_t buffer_bytes = 0;  // the buffer's real size; the fd's must equal it
};
static_assert(sizeof(AnnounceHeader) == 32 && offsetof(AnnounceHeader, buffer_id) == 16 &&
              offsetof(AnnounceHeader, memory) == 20 && offsetof(AnnounceHeader, buffer_bytes) == 24);

// A frame (TensorFrame or Frame): this header, then the embedded tensor message (version 2) or frame
// message (version 1) of src/ipc; no fd. Reserved fields are 0 unless a capability both hellos carry
// defines them (fences: docs/WIRE.md "Capabilities"; fan-out: "Growing version 2").
struct FrameHeader {
  ChannelPrefix prefix;
  std::uint64_t sequence = 0;
  std::int64_t timestamp_ns = 0;  // CLOCK_MONOTONIC
  std::int64_t pts_ns = kNoTime;       // presentation time; kNoTime: none
  std::int64_t duration_ns = kNoTime;  // >= 0, or kNoTime: none
  std::uint32_t flags = 0;             // the caller's, carried unchanged
  std::uint8_t fence_mask = 0;         // bit b: buffer b's acquire fence attached (kCapabilityFences)
  std::uint8_t reserved[3] = {};
  std::uint64_t reserved2 = 0;         // reserved for fan-out: 0
  std::uint32_t buffer_ids[kMaxPlanes] = {};  // the first prefix.count used; the rest 0
};
static_assert(sizeof(FrameHeader) == 80 && offsetof(FrameHeader, sequence) == 16 &&
              offsetof(FrameHeader, timestamp_ns) == 24 && offsetof(FrameHeader, pts_ns) == 32 &&
              offsetof(FrameHeader, duration_ns) == 40 && offsetof(FrameHeader, flags) == 48 &&
              offsetof(FrameHeader, fence_mask) == 52 && offsetof(FrameHeader, reserved2) == 56 &&
              offsetof(FrameHeader, buffer_ids) == 64);
static_assert(alignof(FrameHeader) == 8, "channel header alignment differs on this architecture");

// Release and retire: the prefix, then prefix.count entries.
struct ReleaseEntry {
  std::uint32_t buffer_id = 0;
  std::uint8_t flags = 0;  // kReleaseFenced: a fence fd for this entry is attached (kCapabilityFences)
  std::uint8_t reserved[3] = {};
  std::uint64_t sequence = 0;
};
static_assert(sizeof(ReleaseEntry) == 16 && offsetof(ReleaseEntry, flags) == 4 && offsetof(ReleaseEntry, sequence) == 8);

// Hello (both ends, once, as their first message): who this end is and what it can do.
enum class ChannelRole : std::uint32_t { Sender = 1, Receiver = 2 };
struct HelloHeader {
  ChannelPrefix prefix;
  std::uint32_t role = 0;          // ChannelRole
  std::uint32_t capabilities = 0;  // kCapability* bits; unknown bits are ignored
  std::uint32_t max_buffers = 0;   // the end's max_buffers (1..kMaxChannelBuffers)
  std::uint32_t reserved = 0;      // ignored (a later release may fill it)
  std::uint64_t reserved2[2] = {}; // ignored
};
static_assert(sizeof(HelloHeader) == 48 && offsetof(HelloHeader, role) == 16 &&
              offsetof(HelloHeader, capabilities) == 20 && offsetof(HelloHeader, max_buffers) == 24 &&
              offsetof(HelloHeader, reserved2) == 32);

// End of stream (sender -> receiver): no frame follows.
struct EndOfStreamHeader {
  ChannelPrefix prefix;
  std::uint64_t frames_sent = 0;  // frames the sender sent on this channel
};
static_assert(sizeof(EndOfStreamHeader) == 24 && offsetof(EndOfStreamHeader, frames_sent) == 16);

// Refuse (the accepting end -> a peer it will not serve, then it closes): why, for the peer's error. The
// text follows the header: printable ASCII, no NUL, at most kMaxRefuseTextBytes.
enum class RefuseReason : std::uint32_t { NotAllowed = 1, ReceiverLimit = 2 };
struct RefuseHeader {
  ChannelPrefix prefix;
  std::uint32_t reason = 0;      // RefuseReason; another value is read as "refused" with the text
  std::uint32_t text_bytes = 0;  // the text's length
};
static_assert(sizeof(RefuseHeader) == 24 && offsetof(RefuseHeader, reason) == 16 &&
              offsetof(RefuseHeader, text_bytes) == 20);
inline constexpr std::size_t kMaxRefuseTextBytes = 256;

inline constexpr std::size_t kMaxReleaseEntries = 64;  // per release message
inline constexpr std::size_t kMaxRetireIds = 64;       // per retire message
inline constexpr std::size_t kMaxReleaseMessageBytes = sizeof(ChannelPrefix) + kMaxReleaseEntries * sizeof(ReleaseEntry);
/// The largest message a receiver reads: a tensor frame with the largest tensor message.
inline constexpr std::size_t kMaxChannelMessageBytes = sizeof(FrameHeader) + kMaxWireMessageBytes;
/// Most fds a channel message may carry: an announce's buffer (1), a frame's acquire fences (one per
/// buffer, up to 4), a release's fences (senders put at most this many in one release message).
inline constexpr std::size_t kMaxChannelFds = kMaxPlanes;

std::vector<std::byte> encode_announce(std::uint32_t buffer_id, MemoryKind memory, std::uint64_t buffer_bytes);
/// A frame message: the header (count = buffer_ids.size()) and the embedded message.
/// Per-frame timing beside the CLOCK_MONOTONIC stamp (kNoTime: none).
struct FrameTiming {
  std::int64_t pts_ns = kNoTime;
  std::int64_t duration_ns = kNoTime;
  std::uint32_t flags = 0;
};
/// `fence_mask`: buffers whose acquire fence goes with it (fence_count = its bits).
std::vector<std::byte> encode_frame(ChannelMessage type, std::uint64_t sequence, std::int64_t timestamp_ns,
                                    std::span<const std::uint32_t> buffer_ids, std::span<const std::byte> embedded,
                                    const FrameTiming& timing = {}, std::uint8_t fence_mask = 0);
/// A receiver's policy request (kCapabilityPolicyRequest).
struct PolicyRequest {
  channel::ReceiverPolicy policy = channel::ReceiverPolicy::Block;
  std::uint64_t max_frames_out = 0;
};
/// A hello: `role`, `max_buffers`, `capabilities`, and a receiver's policy request (which adds
/// kCapabilityPolicyRequest).
std::vector<std::byte> encode_hello(ChannelRole role, std::uint32_t max_buffers,
                                    std::uint32_t capabilities = kOwnCapabilities,
                                    std::optional<PolicyRequest> request = std::nullopt);
std::vector<std::byte> encode_end_of_stream(std::uint64_t frames_sent);
/// A release message of 1 to kMaxReleaseEntries entries into `out` (room for kMaxReleaseMessageBytes);
/// returns its length; fence_count counts the entries flagged kReleaseFenced. Never allocates (a release
/// is sent from a deleter).
std::size_t encode_release(std::span<const ReleaseEntry> entries, std::span<std::byte> out) noexcept;
std::vector<std::byte> encode_retire(std::span<const std::uint32_t> buffer_ids);
/// A refuse with `text` cut to kMaxRefuseTextBytes, every byte outside printable ASCII written as '?'.
std::vector<std::byte> encode_refuse(RefuseReason reason, std::string_view text);

/// Reads the prefix and checks what every message must be: at least 16 B, the magic (the other byte
/// order, a tensor or frame message of ipc::send named), the version, a known type and its header_bytes,
/// reserved 0, fence_count 0 but for frames and releases. Errors: InvalidArgument.
Result<ChannelPrefix> decode_prefix(std::span<const std::byte> bytes);

struct Announce {
  std::uint32_t buffer_id = 0;
  MemoryKind memory = MemoryKind::Shm;
  std::uint64_t buffer_bytes = 0;
};
/// An announce: exactly 32 B, count 1, no fence, a non-zero id, memory 2 or 3, reserved 0, a non-zero
/// size. Errors: InvalidArgument.
Result<Announce> decode_announce(std::span<const std::byte> bytes);

struct FrameMessage {
  ChannelMessage type = ChannelMessage::TensorFrame;
  std::uint64_t sequence = 0;
  std::int64_t timestamp_ns = 0;
  FrameTiming timing;
  std::uint8_t fence_mask = 0;  // buffers whose acquire fence is attached, in buffer order
  std::size_t buffer_count = 0;
  std::array<std::uint32_t, kMaxPlanes> buffer_ids{};
  std::span<const std::byte> embedded;  // the tensor or frame message (in the caller's bytes)
};
/// A frame's channel header: count 1 (tensor) or 1..4 (frame), non-zero distinct ids, unused ids 0,
/// duration kNoTime or >= 0, reserved 0, at least 80 B; fence_mask only with `fences` (both hellos carry
/// kCapabilityFences), no bit past count, fence_count its bits. The embedded message is left to
/// decode_tensor_message / decode_frame_message. Errors: InvalidArgument.
Result<FrameMessage> decode_frame(std::span<const std::byte> bytes, bool fences = false);

/// A release: count 1..kMaxReleaseEntries, exactly 16 + 16 x count B, reserved 0, non-zero ids; flags
/// kReleaseFenced only with `fences` (both hellos carry kCapabilityFences), no other bit, fence_count the
/// entries flagged. Errors: InvalidArgument.
Result<std::vector<ReleaseEntry>> decode_release(std::span<const std::byte> bytes, bool fences = false);
/// A retire: count 1..kMaxRetireIds, exactly 16 + 4 x count B, non-zero ids. Errors: InvalidArgument.
Result<std::vector<std::uint32_t>> decode_retire(std::span<const std::byte> bytes);

struct Refusal {
  std::uint32_t reason = 0;  // RefuseReason, or a value of a later release
  std::string text;
};
/// A refuse: exactly 24 + text_bytes B, count 0, text_bytes at most kMaxRefuseTextBytes, the text printable
/// ASCII. Errors: InvalidArgument.
Result<Refusal> decode_refuse(std::span<const std::byte> bytes);
/// The error of a refusal that `peer` ("sender", "receiver") sent this end: PermissionDenied (NotAllowed),
/// OutOfRange (ReceiverLimit), Unavailable (another reason), with the peer's text; sys_errno EACCES,
/// EUSERS and 0, so that a caller can tell a refusal from other errors of those codes.
Error refusal_error(const Refusal& r, std::string_view peer);

struct Hello {
  ChannelRole role = ChannelRole::Sender;
  std::uint32_t capabilities = 0;
  std::uint32_t max_buffers = 0;
  std::optional<PolicyRequest> request;  // a receiver's hello with kCapabilityPolicyRequest
};
/// A hello: exactly 48 B, count 0, role 1 or 2, max_buffers 1..kMaxChannelBuffers; with
/// kCapabilityPolicyRequest (a receiver's only) a policy 0 or 1 and a frame limit up to
/// kMaxQueuedReleases; otherwise reserved fields and unknown capability bits ignored. Errors: InvalidArgument.
Result<Hello> decode_hello(std::span<const std::byte> bytes);
/// An end of stream: exactly 24 B, count 0; returns frames_sent. Errors: InvalidArgument.
Result<std::uint64_t> decode_end_of_stream(std::span<const std::byte> bytes);

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
