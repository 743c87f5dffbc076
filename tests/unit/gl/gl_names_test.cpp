// SPDX-License-Identifier: Apache-2.0
// GL names that need no GL: extension-list parsing, EGL/GL error names, map access bits.
#include <edgetensor/gl.h>
#include <gtest/gtest.h>

#include "config.h"

// The internal helpers exist only when the GL backend is built.
#if ET_HAVE_EGL
#include "gl/egl_loader.h"

namespace et = edgetensor;

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
#endif
