// SPDX-License-Identifier: Apache-2.0
// Deprecated public names, kept for one minor version: each still compiles and answers what its
// replacement answers. (The CUDA and GL ones are checked in tests/cuda and tests/hardware.)
#include <edgetensor/edgetensor.h>
#include <gtest/gtest.h>

#include "support/test_support.h"

using namespace edgetensor;

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace {

// A strided view, so the three sizes differ: packed 6 x 4 = 24 B, extent 2 x 16 + 1 x 4 + 4 = 40 B,
// buffer 4 x 4 x 4 = 64 B.
Result<TensorDyn> strided_view() {
  ET_TRY_ASSIGN(auto t, TensorDyn::allocate({4, 4}, DType::F32, {.memory = MemoryKind::Heap}));
  return t.view(4, {3, 2}, {16, 4});
}

TEST(DeprecatedNames, TensorSizeBytesIsPackedBytes) {
  auto v = strided_view();
  ASSERT_OK(v);
  EXPECT_EQ(v->size_bytes(), v->packed_bytes());
  EXPECT_EQ(v->packed_bytes(), 24u);
}

TEST(DeprecatedNames, TensorStorageSizeBytesIsBufferBytes) {
  auto v = strided_view();
  ASSERT_OK(v);
  EXPECT_EQ(v->storage_size_bytes(), v->buffer_bytes());
  EXPECT_EQ(v->buffer_bytes(), 64u);
}

TEST(DeprecatedNames, MapSizeBytesIsExtentBytes) {
  auto v = strided_view();
  ASSERT_OK(v);
  auto m = v->map_read();
  ASSERT_OK(m);
  EXPECT_EQ(m->size_bytes(), m->extent_bytes());
  EXPECT_EQ(m->extent_bytes(), v->extent_bytes());
  EXPECT_EQ(m->extent_bytes(), 40u);
}

TEST(DeprecatedNames, ErrorCodeOkIsZeroAndNamedOk) {
  EXPECT_EQ(static_cast<int>(ErrorCode::Ok), 0);
  EXPECT_EQ(error_code_name(ErrorCode::Ok), "Ok");
}

}  // namespace

#pragma GCC diagnostic pop
