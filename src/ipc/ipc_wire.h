// SPDX-License-Identifier: Apache-2.0
// The tensor message header of ipc::send/receive (pure logic, no platform code). Fixed layout, host byte
// order (both ends share one machine), every field validated on decode. docs/WIRE.md describes it byte by
// byte; the offsets below pin that description.
#pragma once

#include <edgetensor/dtype.h>
#include <edgetensor/error.h>
#include <edgetensor/image.h>
#include <edgetensor/memory.h>
#include <edgetensor/tensor.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace edgetensor::inline ET_ABI_NAMESPACE::detail {

inline constexpr std::uint32_t kWireMagic = 0x31545445;  // "ETT1"

struct WireHeader {
  std::uint32_t magic = kWireMagic;
  std::uint16_t version = 0;
  std::uint16_t header_bytes = 0;
  std::uint8_t dtype = 0;
  std::uint8_t rank = 0;
  std::uint8_t memory = 0;
  std::uint8_t pixel_format = 0;
  std::uint32_t fd_count = 1;
  std::uint64_t offset_bytes = 0;
  std::uint64_t row_stride_bytes = 0;
  std::uint64_t plane_offset_bytes = 0;
  std::uint64_t shape[kMaxRank] = {};
  std::int64_t strides[kMaxRank] = {};
  char name[64] = {};
};
static_assert(sizeof(WireHeader) == 4 + 2 + 2 + 4 + 4 + 3 * 8 + kMaxRank * 16 + 64, "no padding in the header");
// docs/WIRE.md, "The tensor message": change both together (and the version).
static_assert(kMaxRank == 8 && sizeof(WireHeader) == 232);
static_assert(offsetof(WireHeader, magic) == 0 && offsetof(WireHeader, version) == 4 &&
              offsetof(WireHeader, header_bytes) == 6 && offsetof(WireHeader, dtype) == 8 &&
              offsetof(WireHeader, rank) == 9 && offsetof(WireHeader, memory) == 10 &&
              offsetof(WireHeader, pixel_format) == 11 && offsetof(WireHeader, fd_count) == 12 &&
              offsetof(WireHeader, offset_bytes) == 16 && offsetof(WireHeader, row_stride_bytes) == 24 &&
              offsetof(WireHeader, plane_offset_bytes) == 32 && offsetof(WireHeader, shape) == 40 &&
              offsetof(WireHeader, strides) == 104 && offsetof(WireHeader, name) == 168);
// One layout on every architecture we build for (x86_64, arm64, armhf: each ABI aligns 64-bit fields
// to 8), so processes of two architectures on one machine (an arm64 kernel running armhf programs)
// read each other's headers. ctest ipc.exchange.cross_arch exchanges tensors that way.
static_assert(alignof(WireHeader) == 8, "wire header alignment differs on this architecture");

/// Bytes of one encoded header.
inline constexpr std::size_t kWireHeaderBytes = sizeof(WireHeader);

std::array<std::byte, kWireHeaderBytes> encode_header(const WireHeader& h);

/// Decodes and validates a received header: size, magic, version, header_bytes, dtype, rank, memory
/// kind (Shm or DmaBuf), pixel format, fd count (1), NUL-terminated name, shape and offsets within the
/// size type. Errors: InvalidArgument naming the field, its value and the limit.
Result<WireHeader> decode_header(std::span<const std::byte> bytes);

}  // namespace edgetensor::detail
