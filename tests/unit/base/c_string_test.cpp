// SPDX-License-Identifier: Apache-2.0
// Strings that reach a system call as C strings (src/base/c_string.cpp).
#include <gtest/gtest.h>

#include <string>

#include "base/c_string.h"
#include "support/test_support.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace {

TEST(CString, NulByteIsRefusedNamingTheArgumentTheByteAndWhatTheKernelWouldSee) {
  EXPECT_TRUE(detail::check_c_string("/dev/dma_heap", "heap_dir").has_value());
  EXPECT_TRUE(detail::check_c_string("", "name").has_value());
  auto r = detail::check_c_string(std::string("/dev\0/x", 7), "dmabuf::AllocatorOptions::heap_dir");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().to_string(),
            "InvalidArgument: dmabuf::AllocatorOptions::heap_dir has a NUL byte at byte 4 of 7 (counting from 0): "
            "a C string ends there, so the system call would see only \"/dev\"");
  EXPECT_EQ(r.error().message().find('\0'), std::string::npos) << "the message itself holds no NUL";
  EXPECT_ERROR(detail::check_c_string(std::string(1, '\0'), "name"), ErrorCode::InvalidArgument,
               "name has a NUL byte at byte 0 of 1 (counting from 0): a C string ends there, so the system call "
               "would see only \"\"");
  // A long prefix is cut in the message.
  const std::string long_prefix(100, 'a');
  auto cut = detail::check_c_string(long_prefix + std::string(1, '\0'), "name");
  ASSERT_FALSE(cut.has_value());
  EXPECT_NE(cut.error().message().find("would see only \"" + std::string(64, 'a') + "...\""), std::string::npos)
      << cut.error().message();
}

}  // namespace
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
