// SPDX-License-Identifier: Apache-2.0
#include "capi/struct_copy.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace edgetensor::capi {
Result<void> check_struct_size(std::size_t user_size, std::size_t min_size, std::string_view what) {
  if (user_size < min_size)
    return fail(ErrorCode::InvalidArgument,
                std::string(what) + ".struct_size " + std::to_string(user_size) + " is below the first version's " +
                    std::to_string(min_size) + " bytes (set it to sizeof(" + std::string(what) + "))");
  if (user_size > kMaxStructSize)
    return fail(ErrorCode::InvalidArgument,
                std::string(what) + ".struct_size " + std::to_string(user_size) + " is above " +
                    std::to_string(kMaxStructSize) + " bytes: not a size (is the struct initialized?)");
  return {};
}

Result<void> copy_struct_from_caller(void* dst, std::size_t known_size, std::size_t min_size, const void* src,
                                     std::size_t user_size, std::string_view what) {
  ET_TRY(check_struct_size(user_size, min_size, what));
  const auto* bytes = static_cast<const unsigned char*>(src);
  // A newer caller's fields this library does not know must be zero: they would ask for what it cannot do.
  for (std::size_t i = known_size; i < user_size; ++i) {
    if (bytes[i] != 0) {
      char value[8];
      static constexpr char kHex[] = "0123456789abcdef";
      value[0] = '0', value[1] = 'x', value[2] = kHex[bytes[i] >> 4], value[3] = kHex[bytes[i] & 15], value[4] = 0;
      return fail(ErrorCode::InvalidArgument,
                  std::string(what) + ": byte at offset " + std::to_string(i) + " is " + value + ", but this library knows " +
                      std::to_string(known_size) + " of its " + std::to_string(user_size) +
                      " bytes and a field it does not know must be zero");
    }
  }
  const std::size_t common = std::min(known_size, user_size);
  std::memcpy(dst, src, common);
  std::memset(static_cast<unsigned char*>(dst) + common, 0, known_size - common);
  return {};
}

Result<void> copy_struct_to_caller(void* dst, std::size_t user_size, std::size_t min_size, const void* src,
                                   std::size_t known_size, std::string_view what) {
  ET_TRY(check_struct_size(user_size, min_size, what));
  const std::size_t common = std::min(known_size, user_size);
  std::uint32_t keep = declared_struct_size(dst);
  std::memcpy(dst, src, common);
  std::memset(static_cast<unsigned char*>(dst) + common, 0, user_size - common);
  std::memcpy(dst, &keep, sizeof keep);
  return {};
}

std::uint32_t declared_struct_size(const void* user_struct) noexcept {
  std::uint32_t size = 0;
  std::memcpy(&size, user_struct, sizeof size);
  return size;
}

}  // namespace edgetensor::capi
