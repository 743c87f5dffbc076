// SPDX-License-Identifier: Apache-2.0
// The messages of ipc::send/receive (the tensor message, version 2) and ipc::send_frame/receive_frame
// (the frame message, version 1): pure logic, no platform code. Fixed layouts, host byte order (both
// ends share one machine), every field validated on decode. docs/WIRE.md describes them byte by byte;
// the offsets below pin that description: change both together, and the message's version.
#pragma once

#include <edgetensor/dtype.h>
#include <edgetensor/error.h>
#include <edgetensor/image.h>
#include <edgetensor/memory.h>
#include <edgetensor/quantization.h>
#include <edgetensor/tensor.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

// The first 8 bytes of every message: magic, version, header_bytes. The magic says which message.
inline constexpr std::uint32_t kWireMagic = 0x31545445;       // "ETT1": a tensor message
inline constexpr std::uint32_t kFrameWireMagic = 0x31465445;  // "ETF1": a frame message
inline constexpr std::size_t kWirePrefixBytes = 8;

// ---- The tensor message (version 2): this header, then the per-axis quantization payload --------
struct WireHeader {
  std::uint32_t magic = kWireMagic;
  std::uint16_t version = 0;
  std::uint16_t header_bytes = 0;
  std::uint8_t dtype = 0;
  std::uint8_t rank = 0;
  std::uint8_t memory = 0;
  std::int8_t image_plane = -1;        // -1, or which plane of pixel_format a plane view shows
  std::uint16_t pixel_format = 0;
  std::uint8_t plane_count = 0;        // 0: no image layout; else the format's plane count
  std::uint8_t quantization = 0;       // QuantizationKind
  std::uint32_t fd_count = 1;
  std::uint32_t image_width = 0;
  std::uint32_t image_height = 0;
  std::uint8_t colorimetry[4] = {};    // primaries, transfer, matrix, range
  std::uint64_t offset_bytes = 0;
  std::uint64_t modifier = 0;
  std::uint64_t planes[kMaxPlanes][2] = {};  // offset, row stride (bytes, from the first element)
  std::uint32_t quantization_axis = 0;
  std::uint32_t quantization_channels = 0;   // PerAxis: the payload's count
  float scale = 0.0f;                        // PerTensor
  std::int32_t zero_point = 0;               // PerTensor
  std::uint64_t shape[kMaxRank] = {};
  std::int64_t strides[kMaxRank] = {};
  char name[64] = {};
};
static_assert(kMaxRank == 8 && kMaxPlanes == 4 && sizeof(float) == 4);
static_assert(sizeof(WireHeader) == 320, "no padding in the header");
static_assert(offsetof(WireHeader, magic) == 0 && offsetof(WireHeader, version) == 4 &&
              offsetof(WireHeader, header_bytes) == 6 && offsetof(WireHeader, dtype) == 8 &&
              offsetof(WireHeader, rank) == 9 && offsetof(WireHeader, memory) == 10 &&
              offsetof(WireHeader, image_plane) == 11 && offsetof(WireHeader, pixel_format) == 12 &&
              offsetof(WireHeader, plane_count) == 14 && offsetof(WireHeader, quantization) == 15 &&
              offsetof(WireHeader, fd_count) == 16 && offsetof(WireHeader, image_width) == 20 &&
              offsetof(WireHeader, image_height) == 24 && offsetof(WireHeader, colorimetry) == 28 &&
              offsetof(WireHeader, offset_bytes) == 32 && offsetof(WireHeader, modifier) == 40 &&
              offsetof(WireHeader, planes) == 48 && offsetof(WireHeader, quantization_axis) == 112 &&
              offsetof(WireHeader, quantization_channels) == 116 && offsetof(WireHeader, scale) == 120 &&
              offsetof(WireHeader, zero_point) == 124 && offsetof(WireHeader, shape) == 128 &&
              offsetof(WireHeader, strides) == 192 && offsetof(WireHeader, name) == 256);
// One layout on every architecture we build for (x86_64, arm64, armhf: each ABI aligns 64-bit fields
// to 8), so processes of two architectures on one machine (an arm64 kernel running armhf programs)
// read each other's headers. ctest ipc.exchange.cross_arch exchanges tensors that way.
static_assert(alignof(WireHeader) == 8, "wire header alignment differs on this architecture");

/// Bytes of one encoded tensor header; the payload (PerAxis: channels x f32 scales, then channels x
/// i32 zero points) follows it.
inline constexpr std::size_t kWireHeaderBytes = sizeof(WireHeader);
inline constexpr std::size_t kMaxWirePayloadBytes = kMaxQuantizationChannels * (sizeof(float) + sizeof(std::int32_t));

// ---- The frame message (version 1): this header only, one fd per distinct buffer ---------------
struct FrameWireHeader {
  std::uint32_t magic = kFrameWireMagic;
  std::uint16_t version = 0;
  std::uint16_t header_bytes = 0;
  std::uint16_t pixel_format = 0;
  std::uint8_t plane_count = 0;
  std::uint8_t buffer_count = 0;             // = the fds in the message
  std::uint8_t plane_buffer[kMaxPlanes] = {};  // plane -> buffer (fd) index
  std::uint32_t image_width = 0;
  std::uint32_t image_height = 0;
  std::uint8_t colorimetry[4] = {};
  std::uint8_t memory[kMaxPlanes] = {};      // MemoryKind of each buffer's fd
  std::uint64_t modifier = 0;
  std::uint64_t planes[kMaxPlanes][2] = {};  // offset (from its own buffer's start), row stride
};
static_assert(sizeof(FrameWireHeader) == 104, "no padding in the frame header");
static_assert(offsetof(FrameWireHeader, magic) == 0 && offsetof(FrameWireHeader, version) == 4 &&
              offsetof(FrameWireHeader, header_bytes) == 6 && offsetof(FrameWireHeader, pixel_format) == 8 &&
              offsetof(FrameWireHeader, plane_count) == 10 && offsetof(FrameWireHeader, buffer_count) == 11 &&
              offsetof(FrameWireHeader, plane_buffer) == 12 && offsetof(FrameWireHeader, image_width) == 16 &&
              offsetof(FrameWireHeader, image_height) == 20 && offsetof(FrameWireHeader, colorimetry) == 24 &&
              offsetof(FrameWireHeader, memory) == 28 && offsetof(FrameWireHeader, modifier) == 32 &&
              offsetof(FrameWireHeader, planes) == 40);
static_assert(alignof(FrameWireHeader) == 8, "frame header alignment differs on this architecture");
inline constexpr std::size_t kFrameWireHeaderBytes = sizeof(FrameWireHeader);

/// The largest legal message of either kind: what a receiver makes room for (one byte more shows a
/// longer one as MSG_TRUNC), so a message of the other kind is read whole and named.
inline constexpr std::size_t kMaxWireMessageBytes = kWireHeaderBytes + kMaxWirePayloadBytes;
static_assert(kFrameWireHeaderBytes <= kMaxWireMessageBytes);
/// Most fds a receiver makes room for: a frame message's (a tensor message carries 1).
inline constexpr std::size_t kMaxWireFds = kMaxPlanes;

/// A tensor header and its payload as one message (`scales` and `zero_points`: the PerAxis payload,
/// empty otherwise; the header's fields are written as given).
std::vector<std::byte> encode_tensor_message(const WireHeader& h, std::span<const float> scales = {},
                                             std::span<const std::int32_t> zero_points = {});
std::vector<std::byte> encode_frame_message(const FrameWireHeader& h);

/// A decoded and validated tensor message.
struct TensorMessage {
  WireHeader header;
  Quantization quantization;  // built from the header and payload, checked against dtype and shape
};

/// Decodes and validates a received tensor message: size, magic (a frame message or the other byte
/// order named), version (1, from an older sender, named), header_bytes, dtype, rank, memory kind
/// (Shm or DmaBuf), fd count (1), NUL-terminated name, shape and offsets within the size type, pixel
/// format, image plane, layout fields (zero without a layout; the layout itself is validated against
/// the tensor's extent by TensorDyn::set_image_layout), colorimetry, quantization (Quantization::check
/// against dtype and shape) and the payload length. Errors: InvalidArgument naming the field, its
/// value and the limit.
Result<TensorMessage> decode_tensor_message(std::span<const std::byte> bytes);

/// Decodes and validates a received frame message: size, magic (a tensor message named), version,
/// header_bytes, format, plane and buffer counts, plane -> buffer map (every buffer used), memory
/// kinds, colorimetry, unused fields zero, and the layout (ImageLayout::validate). Returns the layout
/// and colorimetry in the header's own fields. Errors: InvalidArgument naming field, value and limit.
Result<FrameWireHeader> decode_frame_message(std::span<const std::byte> bytes);

/// The layout a validated frame header carries.
ImageLayout frame_layout(const FrameWireHeader& h) noexcept;
Colorimetry wire_colorimetry(const std::uint8_t (&c)[4]) noexcept;

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
