// SPDX-License-Identifier: Apache-2.0
// Encoding and validation of the tensor and frame messages (ipc_wire.h; docs/WIRE.md).
#include "ipc/ipc_wire.h"

#include <edgetensor/ipc.h>

#include <cstring>
#include <string>
#include <string_view>

#include "text/format.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {
namespace {

constexpr std::uint64_t kSizeMax = static_cast<std::uint64_t>(static_cast<std::size_t>(-1));

// The largest value of an enum whose name function answers "invalid" past its last enumerator: the
// limit an error names, found only when one is reported.
template <class E>
unsigned enum_max(std::string_view (*name)(E) noexcept) {
  unsigned last = 0;
  for (unsigned v = 0; v < 256; ++v)
    if (name(static_cast<E>(v)) != "invalid") last = v;
  return last;
}

template <class E>
Result<void> check_enum(std::uint8_t value, std::string_view (*name)(E) noexcept, std::string_view field,
                        std::string_view type) {
  if (name(static_cast<E>(value)) != "invalid") return {};
  return fail(ErrorCode::InvalidArgument,
              text::format("colorimetry.{} {} is not a {} (0..{})", field, value, type, enum_max(name)));
}

Result<void> check_colorimetry(const std::uint8_t (&c)[4]) {
  ET_TRY(check_enum(c[0], &color_primaries_name, "primaries", "ColorPrimaries"));
  ET_TRY(check_enum(c[1], &transfer_function_name, "transfer", "TransferFunction"));
  ET_TRY(check_enum(c[2], &ycbcr_matrix_name, "matrix", "YcbcrMatrix"));
  ET_TRY(check_enum(c[3], &color_range_name, "range", "ColorRange"));
  return {};
}

// The 8-byte prefix every message starts with.
struct Prefix {
  std::uint32_t magic = 0;
  std::uint16_t version = 0;
  std::uint16_t header_bytes = 0;
};

// Reads the prefix and refuses a short message, the other byte order and the other kind of message.
// `other_reader` names the call that reads the other kind.
Result<Prefix> read_prefix(std::span<const std::byte> bytes, std::uint32_t magic, std::uint32_t other_magic,
                           std::string_view other_kind, std::string_view other_reader, std::size_t header_bytes) {
  if (bytes.size() < kWirePrefixBytes)
    return fail(ErrorCode::InvalidArgument, text::format("{} B received, the header has {} B", bytes.size(),
                                                         header_bytes));
  Prefix p;
  std::memcpy(&p.magic, bytes.data(), 4);
  std::memcpy(&p.version, bytes.data() + 4, 2);
  std::memcpy(&p.header_bytes, bytes.data() + 6, 2);
  if (p.magic == __builtin_bswap32(magic) || p.magic == __builtin_bswap32(other_magic))
    return fail(ErrorCode::InvalidArgument,
                text::format("magic {:#010x} is {:#010x} byte-swapped: the sender's byte order is the other one; "
                            "the header is in the sender's native order (docs/WIRE.md)", p.magic,
                            __builtin_bswap32(p.magic)));
  if (p.magic == other_magic)
    return fail(ErrorCode::InvalidArgument,
                text::format("a {} arrived (magic {:#010x}, version {}): {} reads it", other_kind, p.magic, p.version,
                            other_reader));
  if (p.magic != magic)
    return fail(ErrorCode::InvalidArgument, text::format("magic {:#010x}, expected {:#010x}", p.magic, magic));
  return p;
}

Result<void> check_name(const char (&name)[64]) {
  if (std::memchr(name, '\0', sizeof name) == nullptr)
    return fail(ErrorCode::InvalidArgument, "name is not NUL-terminated within 64 B");
  return {};
}

// The image fields of a tensor header: a layout (plane_count > 0) or none, and the plane a view shows.
Result<void> check_image(const WireHeader& h) {
  auto bad = [](std::string what) { return fail(ErrorCode::InvalidArgument, std::move(what)); };
  if (h.pixel_format >= kPixelFormatCount)
    return bad(text::format("pixel format {} is not a PixelFormat (0..{})", h.pixel_format, kPixelFormatCount - 1));
  const auto format = static_cast<PixelFormat>(h.pixel_format);
  const PixelFormatInfo& info = pixel_format_info(format);
  if (h.image_plane < -1 || h.image_plane >= static_cast<int>(kMaxPlanes))
    return bad(text::format("image_plane {} is outside -1..{}", h.image_plane, kMaxPlanes - 1));
  if (h.plane_count == 0) {
    const std::uint64_t fields[] = {h.image_width, h.image_height, h.modifier};
    const char* names[] = {"image_width", "image_height", "modifier"};
    for (std::size_t i = 0; i < 3; ++i)
      if (fields[i] != 0) return bad(text::format("{} {} with no layout (plane_count 0): must be 0", names[i], fields[i]));
    for (std::size_t i = 0; i < kMaxPlanes; ++i)
      if (h.planes[i][0] != 0 || h.planes[i][1] != 0)
        return bad(text::format("planes[{}] = {{offset {}, row stride {}}} with no layout (plane_count 0): must be 0",
                                i, h.planes[i][0], h.planes[i][1]));
    if (h.image_plane >= 0 && format == PixelFormat::Unknown)
      return bad(text::format("image_plane {} with pixel format 0 (unknown): a plane view names its format",
                              h.image_plane));
    if (h.image_plane >= static_cast<int>(info.plane_count))
      return bad(text::format("image_plane {} of a {} image: it has {} plane{} (0..{})", h.image_plane, info.name,
                              info.plane_count, info.plane_count == 1 ? "" : "s", info.plane_count - 1));
    return {};
  }
  if (format == PixelFormat::Unknown)
    return bad(text::format("plane_count {} with pixel format 0 (unknown): a layout needs a format", h.plane_count));
  if (h.plane_count != info.plane_count)
    return bad(text::format("plane_count {}, a {} layout has {}", h.plane_count, info.name, info.plane_count));
  if (h.image_plane != -1)
    return bad(text::format("image_plane {} with a layout: a whole image has image_plane -1", h.image_plane));
  for (std::size_t i = 0; i < kMaxPlanes; ++i) {
    if (i >= info.plane_count && (h.planes[i][0] != 0 || h.planes[i][1] != 0))
      return bad(text::format("planes[{}] = {{offset {}, row stride {}}} past {}'s {} planes: must be 0", i,
                              h.planes[i][0], h.planes[i][1], info.name, info.plane_count));
    if (h.planes[i][0] > kSizeMax || h.planes[i][1] > kSizeMax)
      return bad(text::format("planes[{}] = {{offset {}, row stride {}}} exceeds the size type", i, h.planes[i][0],
                              h.planes[i][1]));
  }
  return {};
}

// The quantization fields and payload (its length included); returns the quantization.
Result<Quantization> read_quantization(const WireHeader& h, std::span<const std::byte> bytes) {
  auto bad = [](std::string what) { return fail(ErrorCode::InvalidArgument, std::move(what)); };
  const auto kind = static_cast<QuantizationKind>(h.quantization);
  if (h.quantization > static_cast<std::uint8_t>(QuantizationKind::PerAxis))
    return bad(text::format("quantization kind {} is not a QuantizationKind (0 none, 1 per-tensor, 2 per-axis)",
                            h.quantization));
  const std::size_t channels = h.quantization_channels;
  const char* kind_name = kind == QuantizationKind::None ? "none" : kind == QuantizationKind::PerTensor ? "per-tensor"
                                                                                                     : "per-axis";
  if (kind != QuantizationKind::PerAxis && (h.quantization_axis != 0 || channels != 0))
    return bad(text::format("quantization_axis {} / quantization_channels {} with quantization {}: must be 0",
                            h.quantization_axis, channels, kind_name));
  if (kind != QuantizationKind::PerTensor && (h.scale != 0.0f || h.zero_point != 0))
    return bad(text::format("scale {} / zero_point {} with quantization {}: must be 0", h.scale, h.zero_point,
                            kind_name));
  if (kind == QuantizationKind::PerAxis && (channels == 0 || channels > kMaxQuantizationChannels))
    return bad(text::format("quantization_channels {} of a per-axis quantization: must be 1..{} "
                            "(kMaxQuantizationChannels)", channels, kMaxQuantizationChannels));
  const std::size_t payload = kind == QuantizationKind::PerAxis ? channels * 8 : 0;
  if (bytes.size() != kWireHeaderBytes + payload)
    return bad(text::format("{} B received: the {} B header and a payload of {} B ({} channels x 8 B) make {} B",
                            bytes.size(), kWireHeaderBytes, payload, kind == QuantizationKind::PerAxis ? channels : 0,
                            kWireHeaderBytes + payload));
  Quantization q;
  if (kind == QuantizationKind::PerTensor) {
    ET_TRY_ASSIGN(q, Quantization::per_tensor(h.scale, h.zero_point));
  } else if (kind == QuantizationKind::PerAxis) {
    std::vector<float> scales(channels);
    std::vector<std::int32_t> zero_points(channels);
    std::memcpy(scales.data(), bytes.data() + kWireHeaderBytes, channels * sizeof(float));
    std::memcpy(zero_points.data(), bytes.data() + kWireHeaderBytes + channels * sizeof(float),
                channels * sizeof(std::int32_t));
    ET_TRY_ASSIGN(q, Quantization::per_axis(h.quantization_axis, scales, zero_points));
  }
  return q;
}

}  // namespace

std::vector<std::byte> encode_tensor_message(const WireHeader& h, std::span<const float> scales,
                                             std::span<const std::int32_t> zero_points) {
  std::vector<std::byte> out(kWireHeaderBytes + scales.size_bytes() + zero_points.size_bytes());
  std::memcpy(out.data(), &h, sizeof h);
  if (!scales.empty()) std::memcpy(out.data() + kWireHeaderBytes, scales.data(), scales.size_bytes());
  if (!zero_points.empty())
    std::memcpy(out.data() + kWireHeaderBytes + scales.size_bytes(), zero_points.data(), zero_points.size_bytes());
  return out;
}

std::vector<std::byte> encode_frame_message(const FrameWireHeader& h) {
  std::vector<std::byte> out(kFrameWireHeaderBytes);
  std::memcpy(out.data(), &h, sizeof h);
  return out;
}

Colorimetry wire_colorimetry(const std::uint8_t (&c)[4]) noexcept {
  return {static_cast<ColorPrimaries>(c[0]), static_cast<TransferFunction>(c[1]), static_cast<YcbcrMatrix>(c[2]),
          static_cast<ColorRange>(c[3])};
}

Result<TensorMessage> decode_tensor_message(std::span<const std::byte> bytes) {
  auto decoded = [&]() -> Result<TensorMessage> {
    ET_TRY_ASSIGN(auto p, read_prefix(bytes, kWireMagic, kFrameWireMagic, "frame message", "ipc::receive_frame",
                                      kWireHeaderBytes));
    if (p.version == 1)
      return fail(ErrorCode::InvalidArgument,
                  text::format("tensor message version 1 from an edgetensor 0.3 (or older) sender; this receiver "
                              "speaks version {}: update the sender (docs/WIRE.md, Versions)",
                              ipc::kTensorMessageVersion));
    if (p.version != ipc::kTensorMessageVersion)
      return fail(ErrorCode::InvalidArgument, text::format("tensor message version {}; this receiver speaks version {}",
                                                           p.version, ipc::kTensorMessageVersion));
    auto bad = [](std::string what) { return fail(ErrorCode::InvalidArgument, std::move(what)); };
    if (p.header_bytes != kWireHeaderBytes)
      return bad(text::format("header_bytes {}, expected {}", p.header_bytes, kWireHeaderBytes));
    if (bytes.size() < kWireHeaderBytes)
      return bad(text::format("{} B received, a version-{} header has {} B", bytes.size(), ipc::kTensorMessageVersion,
                              kWireHeaderBytes));
    TensorMessage m;
    WireHeader& h = m.header;
    std::memcpy(&h, bytes.data(), sizeof h);
    if (!dtype_is_valid(static_cast<DType>(h.dtype)))
      return bad(text::format("dtype {} is not a DType (0..{})", h.dtype, kDTypeCount - 1));
    if (h.rank > kMaxRank) return bad(text::format("rank {} exceeds the maximum rank {}", h.rank, kMaxRank));
    auto kind = static_cast<MemoryKind>(h.memory);
    if (kind != MemoryKind::Shm && kind != MemoryKind::DmaBuf)
      return bad(text::format("memory kind {} ({}); only shm (2) and dmabuf (3) travel", h.memory,
                              memory_kind_name(kind)));
    if (h.fd_count != 1) return bad(text::format("fd_count {}, a tensor message carries exactly 1", h.fd_count));
    ET_TRY(check_name(h.name));
    for (std::size_t i = 0; i < h.rank; ++i)
      if (h.shape[i] > kSizeMax) return bad(text::format("shape[{}] = {} exceeds the size type", i, h.shape[i]));
    // The zero-element rule: send never sends such a tensor (it reaches no byte), so none is received.
    for (std::size_t i = 0; i < h.rank; ++i)
      if (h.shape[i] == 0)
        return bad(text::format("shape[{}] = 0: shape [{}] has zero elements; a sender never sends one", i,
                                text::join(std::span(h.shape, h.rank), ", ")));
    if (h.offset_bytes > kSizeMax) return bad(text::format("offset_bytes {} exceeds the size type", h.offset_bytes));
    ET_TRY(check_image(h));
    ET_TRY(check_colorimetry(h.colorimetry));
    ET_TRY_ASSIGN(m.quantization, read_quantization(h, bytes));
    std::array<std::size_t, kMaxRank> shape{};
    for (std::size_t i = 0; i < h.rank; ++i) shape[i] = static_cast<std::size_t>(h.shape[i]);
    ET_TRY(m.quantization.check(static_cast<DType>(h.dtype), std::span<const std::size_t>(shape.data(), h.rank)));
    return m;
  }();
  if (!decoded)
    return fail(decoded.error().code(), "malformed tensor message: " + decoded.error().message());
  return decoded;
}

ImageLayout frame_layout(const FrameWireHeader& h) noexcept {
  ImageLayout layout;
  layout.format = static_cast<PixelFormat>(h.pixel_format);
  layout.width = h.image_width;
  layout.height = h.image_height;
  layout.modifier = h.modifier;
  for (std::size_t i = 0; i < kMaxPlanes; ++i)
    layout.planes[i] = {static_cast<std::size_t>(h.planes[i][0]), static_cast<std::size_t>(h.planes[i][1])};
  return layout;
}

Result<FrameWireHeader> decode_frame_message(std::span<const std::byte> bytes) {
  auto decoded = [&]() -> Result<FrameWireHeader> {
    ET_TRY_ASSIGN(auto p, read_prefix(bytes, kFrameWireMagic, kWireMagic, "tensor message", "ipc::receive",
                                      kFrameWireHeaderBytes));
    if (p.version != ipc::kFrameMessageVersion)
      return fail(ErrorCode::InvalidArgument, text::format("frame message version {}; this receiver speaks version {}",
                                                           p.version, ipc::kFrameMessageVersion));
    auto bad = [](std::string what) { return fail(ErrorCode::InvalidArgument, std::move(what)); };
    if (p.header_bytes != kFrameWireHeaderBytes)
      return bad(text::format("header_bytes {}, expected {}", p.header_bytes, kFrameWireHeaderBytes));
    if (bytes.size() != kFrameWireHeaderBytes)
      return bad(text::format("{} B received, a version-{} frame message has {} B", bytes.size(),
                              ipc::kFrameMessageVersion, kFrameWireHeaderBytes));
    FrameWireHeader h;
    std::memcpy(&h, bytes.data(), sizeof h);
    if (h.pixel_format == 0 || h.pixel_format >= kPixelFormatCount)
      return bad(text::format("pixel format {}: a frame needs a known PixelFormat (1..{})", h.pixel_format,
                              kPixelFormatCount - 1));
    const PixelFormatInfo& info = pixel_format_info(static_cast<PixelFormat>(h.pixel_format));
    if (h.plane_count != info.plane_count)
      return bad(text::format("plane_count {}, a {} frame has {}", h.plane_count, info.name, info.plane_count));
    if (h.buffer_count == 0 || h.buffer_count > h.plane_count)
      return bad(text::format("buffer_count {}: a {} frame has 1..{} buffers", h.buffer_count, info.name,
                              h.plane_count));
    unsigned used = 0;
    for (std::size_t i = 0; i < kMaxPlanes; ++i) {
      const unsigned b = h.plane_buffer[i];
      if (i < h.plane_count && b >= h.buffer_count)
        return bad(text::format("plane_buffer[{}] = {}: the frame has {} buffer{} (0..{})", i, b, h.buffer_count,
                                h.buffer_count == 1 ? "" : "s", h.buffer_count - 1));
      if (i >= h.plane_count && b != 0)
        return bad(text::format("plane_buffer[{}] = {} past {}'s {} planes: must be 0", i, b, info.name, h.plane_count));
      if (i < h.plane_count) used |= 1u << b;
    }
    for (std::size_t b = 0; b < h.buffer_count; ++b)
      if (!(used & (1u << b))) return bad(text::format("buffer {} of {} holds no plane", b, h.buffer_count));
    for (std::size_t b = 0; b < kMaxPlanes; ++b) {
      const auto kind = static_cast<MemoryKind>(h.memory[b]);
      if (b < h.buffer_count && kind != MemoryKind::Shm && kind != MemoryKind::DmaBuf)
        return bad(text::format("memory[{}] = {} ({}); only shm (2) and dmabuf (3) travel", b, h.memory[b],
                                memory_kind_name(kind)));
      if (b >= h.buffer_count && h.memory[b] != 0)
        return bad(text::format("memory[{}] = {} past the {} buffer{}: must be 0", b, h.memory[b], h.buffer_count,
                                h.buffer_count == 1 ? "" : "s"));
    }
    ET_TRY(check_colorimetry(h.colorimetry));
    for (std::size_t i = 0; i < kMaxPlanes; ++i) {
      if (i >= h.plane_count && (h.planes[i][0] != 0 || h.planes[i][1] != 0))
        return bad(text::format("planes[{}] = {{offset {}, row stride {}}} past {}'s {} planes: must be 0", i,
                                h.planes[i][0], h.planes[i][1], info.name, h.plane_count));
      if (h.planes[i][0] > kSizeMax || h.planes[i][1] > kSizeMax)
        return bad(text::format("planes[{}] = {{offset {}, row stride {}}} exceeds the size type", i, h.planes[i][0],
                                h.planes[i][1]));
    }
    auto valid = frame_layout(h).validate();
    if (!valid) return fail(valid.error().code(), "layout: " + valid.error().message());
    return h;
  }();
  if (!decoded) return fail(decoded.error().code(), "malformed frame message: " + decoded.error().message());
  return decoded;
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
