// SPDX-License-Identifier: Apache-2.0
// GL backend logic that needs no GL: extension parsing, error names, map access bits, device order,
// option validation, and the failure paths of a machine without EGL. Real GL: tests/hardware/.
#include <edgetensor/gl.h>
#include <gtest/gtest.h>

#include "config.h"
#include "support/test_support.h"

// The only conditional in the tests: the internal helpers exist only when the backend is built.
#if ET_HAVE_EGL
#include "gl/egl_display.h"
#include "gl/egl_loader.h"
#endif

namespace et = edgetensor;
using et::ErrorCode;
using et::MemoryKind;

namespace {
[[maybe_unused]] et::AllocateOptions mem(MemoryKind kind) {
  et::AllocateOptions o;
  o.memory = kind;
  return o;
}
}  // namespace

#if ET_HAVE_EGL
TEST(GlNames, HasExtensionMatchesWholeWordsOnly) {
  const char* list = "EGL_EXT_platform_base EGL_EXT_platform_device EGL_MESA_platform_surfaceless";
  EXPECT_TRUE(et::detail::has_extension(list, "EGL_EXT_platform_base"));
  EXPECT_TRUE(et::detail::has_extension(list, "EGL_EXT_platform_device"));
  EXPECT_TRUE(et::detail::has_extension(list, "EGL_MESA_platform_surfaceless"));
  EXPECT_FALSE(et::detail::has_extension(list, "EGL_EXT_platform"));
  EXPECT_FALSE(et::detail::has_extension(list, "platform_device"));
  EXPECT_FALSE(et::detail::has_extension(list, "EGL_MESA_platform_surfaceles"));
  EXPECT_FALSE(et::detail::has_extension("", "EGL_EXT_platform_base"));
  EXPECT_FALSE(et::detail::has_extension(list, ""));
  EXPECT_TRUE(et::detail::has_extension("A AB", "AB"));
}

TEST(GlNames, ErrorNamesCarryNameAndNumber) {
  EXPECT_EQ(et::detail::egl_error_name(EGL_BAD_ALLOC), "EGL_BAD_ALLOC (0x3003)");
  EXPECT_EQ(et::detail::egl_error_name(EGL_NOT_INITIALIZED), "EGL_NOT_INITIALIZED (0x3001)");
  EXPECT_EQ(et::detail::egl_error_name(0x1234), "EGL error 0x1234");
  EXPECT_EQ(et::detail::gl_error_name(GL_OUT_OF_MEMORY), "GL_OUT_OF_MEMORY (0x0505)");
  EXPECT_EQ(et::detail::gl_error_name(GL_INVALID_OPERATION), "GL_INVALID_OPERATION (0x0502)");
  EXPECT_EQ(et::detail::gl_error_name(0x9999), "GL error 0x9999");
}

TEST(GlNames, MapAccessBitsFollowTheMapDirection) {
  using et::MapMode;
  EXPECT_EQ(et::detail::map_access_bits(static_cast<unsigned>(MapMode::Read)), GLbitfield{GL_MAP_READ_BIT});
  EXPECT_EQ(et::detail::map_access_bits(static_cast<unsigned>(MapMode::Write)), GLbitfield{GL_MAP_WRITE_BIT});
  EXPECT_EQ(et::detail::map_access_bits(static_cast<unsigned>(MapMode::ReadWrite)),
            GLbitfield{GL_MAP_READ_BIT | GL_MAP_WRITE_BIT});
  // Never invalidate: a view's map must keep the bytes outside the view.
  for (unsigned m = 1; m <= 3; ++m) {
    EXPECT_EQ(et::detail::map_access_bits(m) & GL_MAP_INVALIDATE_BUFFER_BIT, 0u);
    EXPECT_EQ(et::detail::map_access_bits(m) & GL_MAP_INVALIDATE_RANGE_BIT, 0u);
  }
}

TEST(GlDeviceOrder, HardwareBeforeSoftwareEachInEnumerationOrder) {
  EXPECT_EQ(et::detail::device_try_order({}), std::vector<int>{});
  EXPECT_EQ(et::detail::device_try_order({true}), std::vector<int>{0});
  EXPECT_EQ(et::detail::device_try_order({true, false, true, false}), (std::vector<int>{1, 3, 0, 2}));
  EXPECT_EQ(et::detail::device_try_order({false, false}), (std::vector<int>{0, 1}));
}

TEST(GlContextOptions, InvalidOptionsAreNamed) {
  et::gl::ContextOptions o;
  o.timeout = std::chrono::milliseconds(0);
  EXPECT_ERROR(et::gl::Context::create(o), ErrorCode::InvalidArgument, "timeout 0 ms");
  o = {};
  o.device_index = -2;
  EXPECT_ERROR(et::gl::Context::create(o), ErrorCode::InvalidArgument, "device_index -2");
  o = {};
  o.platform = et::gl::Platform::Surfaceless;
  o.device_index = 0;
  EXPECT_ERROR(et::gl::Context::create(o), ErrorCode::InvalidArgument, "needs the device platform");
  o = {};
  o.platform = static_cast<et::gl::Platform>(7);
  EXPECT_ERROR(et::gl::Context::create(o), ErrorCode::InvalidArgument, "invalid platform 7");
}

TEST(GlContext, MissingEglLibraryIsUnavailableWithTheDlopenReason) {
  const int fds = et_test::open_fd_count();
  et::gl::ContextOptions o;
  o.egl_library = "libedgetensor-no-such-egl.so.1";
  auto ctx = et::gl::Context::create(o);
  EXPECT_ERROR(ctx, ErrorCode::Unavailable, "GL unavailable: dlopen(\"libedgetensor-no-such-egl.so.1\") failed");
  // The other backends are untouched by a missing GL.
  auto t = et::TensorDyn::allocate({16}, et::DType::U8, mem(MemoryKind::Heap));
  ASSERT_OK(t);
  EXPECT_EQ(et_test::open_fd_count(), fds);
}

TEST(GlContext, ANonEglLibraryIsUnavailableNamingTheMissingSymbol) {
  et::gl::ContextOptions o;
  o.egl_library = "libc.so.6";
  EXPECT_ERROR(et::gl::Context::create(o), ErrorCode::Unavailable, "has no symbol eglGetProcAddress");
}

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
#else
TEST(GlNotBuilt, EveryEntryAnswersUnavailable) {
  EXPECT_ERROR(et::gl::Context::create(), ErrorCode::Unavailable, "GL backend was not built");
  EXPECT_FALSE(et::backend_status(MemoryKind::GlPbo).built);
}
#endif

TEST(GlPlatformName, NamesEveryPlatform) {
  EXPECT_EQ(et::gl::platform_name(et::gl::Platform::Auto), "auto");
  EXPECT_EQ(et::gl::platform_name(et::gl::Platform::Device), "device");
  EXPECT_EQ(et::gl::platform_name(et::gl::Platform::Surfaceless), "surfaceless");
}
