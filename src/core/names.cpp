// SPDX-License-Identifier: Apache-2.0
// Names of the public enums, and the version.
#include <edgetensor/dtype.h>
#include <edgetensor/image.h>
#include <edgetensor/memory.h>
#include <edgetensor/version.h>

#include <array>

namespace edgetensor {
namespace {
constexpr std::array<std::string_view, kDTypeCount> kDTypeNames = {
    "u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "f16", "bf16", "f32", "f64"};
constexpr std::array<std::size_t, kDTypeCount> kDTypeSizes = {1, 1, 2, 2, 4, 4, 8, 8, 2, 2, 4, 8};
constexpr std::array<std::string_view, 5> kMemoryNames = {"auto", "heap", "shm", "dmabuf", "gl_pbo"};
constexpr std::array<std::string_view, 10> kPixelNames = {"unknown", "grey", "rgb",  "bgr",  "rgba",
                                                          "bgra",    "nv12", "nv21", "yuyv", "planar_rgb"};
}  // namespace

std::size_t dtype_size(DType d) noexcept { return dtype_is_valid(d) ? kDTypeSizes[static_cast<int>(d)] : 0; }
std::string_view dtype_name(DType d) noexcept {
  return dtype_is_valid(d) ? kDTypeNames[static_cast<int>(d)] : "invalid";
}
std::optional<DType> dtype_from_name(std::string_view name) noexcept {
  for (int i = 0; i < kDTypeCount; ++i)
    if (kDTypeNames[i] == name) return static_cast<DType>(i);
  return std::nullopt;
}

std::string_view memory_kind_name(MemoryKind k) noexcept {
  auto i = static_cast<std::size_t>(k);
  return i < kMemoryNames.size() ? kMemoryNames[i] : "invalid";
}
std::optional<MemoryKind> memory_kind_from_name(std::string_view name) noexcept {
  for (std::size_t i = 0; i < kMemoryNames.size(); ++i)
    if (kMemoryNames[i] == name) return static_cast<MemoryKind>(i);
  return std::nullopt;
}

std::string_view pixel_format_name(PixelFormat f) noexcept {
  auto i = static_cast<std::size_t>(f);
  return i < kPixelNames.size() ? kPixelNames[i] : "invalid";
}
std::optional<PixelFormat> pixel_format_from_name(std::string_view name) noexcept {
  for (std::size_t i = 0; i < kPixelNames.size(); ++i)
    if (kPixelNames[i] == name) return static_cast<PixelFormat>(i);
  return std::nullopt;
}

std::string_view version() noexcept { return "0.1.0"; }

}  // namespace edgetensor
