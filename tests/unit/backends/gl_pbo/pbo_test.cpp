// SPDX-License-Identifier: Apache-2.0
// GL PBO backend logic that needs no GL: allocation without a context, backend status, with_buffer
// on a tensor that is not a PBO. Real PBOs: tests/hardware/gl_pbo_test.cpp.
#include <edgetensor/gl.h>
#include <gtest/gtest.h>

#include "config.h"
#include "support/test_support.h"

namespace et = edgetensor;
using et::ErrorCode;
using et::MemoryKind;

using et_test::mem;

#if ET_HAVE_EGL
TEST(GlPboAllocate, WithoutAContextIsAClearError) {
  auto t = et::TensorDyn::allocate({4, 4}, et::DType::F32, mem(MemoryKind::GlPbo));
  EXPECT_ERROR(t, ErrorCode::InvalidArgument, "AllocateOptions::gl_context is null");
  // Also for a zero-element tensor, which makes no buffer at all.
  EXPECT_ERROR(et::TensorDyn::allocate({0, 4}, et::DType::F32, mem(MemoryKind::GlPbo)), ErrorCode::InvalidArgument,
               "AllocateOptions::gl_context is null");
}

TEST(GlPboStatus, BuiltAndNamesTheEglLibrary) {
  auto s = et::backend_status(MemoryKind::GlPbo);
  EXPECT_TRUE(s.built);
  EXPECT_FALSE(s.detail.empty());
}

TEST(GlWithBuffer, RefusesANonPboTensor) {
  auto t = et::TensorDyn::allocate({8}, et::DType::U8, mem(MemoryKind::Heap));
  ASSERT_OK(t);
  auto r = et::gl::with_buffer(*t, [](const et::gl::GlBuffer&) -> et::Result<void> { return {}; });
  EXPECT_ERROR(r, ErrorCode::InvalidArgument, "not a GL PBO");
  EXPECT_ERROR(et::gl::with_buffer(et::TensorDyn{}, [](const et::gl::GlBuffer&) -> et::Result<void> { return {}; }),
               ErrorCode::InvalidArgument, "no storage");
}
#endif
