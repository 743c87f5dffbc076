// SPDX-License-Identifier: Apache-2.0
// GL context logic that needs no GL: device order, option validation, platform names, and the
// failure paths of a machine without EGL. Real GL: tests/hardware/gl_pbo_test.cpp.
#include <edgetensor/gl.h>
#include <gtest/gtest.h>

#include "config.h"
#include "support/test_support.h"

// The internal helpers exist only when the GL backend is built.
#if ET_HAVE_EGL
#include "gl/egl_display.h"
#endif

namespace et = edgetensor;
using et::ErrorCode;
using et::MemoryKind;

using et_test::mem;

#if ET_HAVE_EGL
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
