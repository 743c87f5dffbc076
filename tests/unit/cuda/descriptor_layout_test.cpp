// SPDX-License-Identifier: Apache-2.0
// Pure logic of the descriptor tables: which layout a runtime version gets and the exact bytes built.
#include <gtest/gtest.h>

#include <cstring>

#include "cuda/descriptor_layout.h"

namespace d = edgetensor::cuda::detail;

namespace {

TEST(DescriptorLayout, LayoutPerRuntimeMajor) {
  EXPECT_EQ(d::layout_for_runtime(11080), &d::kLayoutRuntime11);
  EXPECT_EQ(d::layout_for_runtime(12090), &d::kLayoutRuntime11);
  EXPECT_EQ(d::layout_for_runtime(13000), &d::kLayoutRuntime13);
  EXPECT_EQ(d::layout_for_runtime(10020), nullptr) << "no table below 11";
  EXPECT_EQ(d::layout_for_runtime(14000), nullptr) << "an unknown future major is refused, not guessed";
  EXPECT_EQ(d::layout_for_runtime(0), nullptr);
}

TEST(DescriptorLayout, HandleDescriptorBytes) {
  for (const d::DescriptorLayout* l : {&d::kLayoutRuntime11, &d::kLayoutRuntime13, &d::kLayoutDriverV1}) {
    auto b = d::make_handle_desc(*l, 9, 42, 0x123456789ull, 1);
    ASSERT_EQ(b.size(), l->handle_desc_size) << l->source;
    int type = 0, fd = 0;
    unsigned long long size = 0;
    unsigned flags = 0;
    std::memcpy(&type, b.data() + l->handle_type_offset, 4);
    std::memcpy(&fd, b.data() + l->handle_fd_offset, 4);
    std::memcpy(&size, b.data() + l->handle_size_offset, 8);
    std::memcpy(&flags, b.data() + l->handle_flags_offset, 4);
    EXPECT_EQ(type, 9);
    EXPECT_EQ(fd, 42);
    EXPECT_EQ(size, 0x123456789ull);
    EXPECT_EQ(flags, 1u);
    for (std::size_t i = 4; i < 8; ++i) EXPECT_EQ(b[i], 0) << "padding after type";
    for (std::size_t i = 12; i < 24; ++i) EXPECT_EQ(b[i], 0) << "rest of the handle union";
    for (std::size_t i = l->handle_flags_offset + 4; i < b.size(); ++i) EXPECT_EQ(b[i], 0) << "reserved/padding " << i;
  }
  EXPECT_EQ(d::kLayoutRuntime13.handle_desc_size - d::kLayoutRuntime11.handle_desc_size, 64u) << "reserved[16]";
}

TEST(DescriptorLayout, BufferDescriptorBytes) {
  auto b = d::make_buffer_desc(d::kLayoutRuntime13, 4096, 65536);
  ASSERT_EQ(b.size(), 88u);
  unsigned long long off = 0, size = 0;
  std::memcpy(&off, b.data(), 8);
  std::memcpy(&size, b.data() + 8, 8);
  EXPECT_EQ(off, 4096u);
  EXPECT_EQ(size, 65536u);
  for (std::size_t i = 16; i < b.size(); ++i) EXPECT_EQ(b[i], 0);
  EXPECT_EQ(d::make_buffer_desc(d::kLayoutRuntime11, 0, 1).size(), 24u);
}

}  // namespace
