// SPDX-License-Identifier: Apache-2.0
// Pure helpers of the GL module (no EGL/GL calls): error names, extension lists, access bits.
#include "text/format.h"

#include "gl/egl_loader.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

bool has_extension(std::string_view extensions, std::string_view name) noexcept {
  if (name.empty()) return false;
  std::size_t pos = 0;
  while ((pos = extensions.find(name, pos)) != std::string_view::npos) {
    bool starts = pos == 0 || extensions[pos - 1] == ' ';
    std::size_t end = pos + name.size();
    bool ends = end == extensions.size() || extensions[end] == ' ';
    if (starts && ends) return true;
    pos = end;
  }
  return false;
}

std::string egl_error_name(EGLint error) {
  const char* name = nullptr;
  switch (error) {
    case EGL_SUCCESS: name = "EGL_SUCCESS"; break;
    case EGL_NOT_INITIALIZED: name = "EGL_NOT_INITIALIZED"; break;
    case EGL_BAD_ACCESS: name = "EGL_BAD_ACCESS"; break;
    case EGL_BAD_ALLOC: name = "EGL_BAD_ALLOC"; break;
    case EGL_BAD_ATTRIBUTE: name = "EGL_BAD_ATTRIBUTE"; break;
    case EGL_BAD_CONFIG: name = "EGL_BAD_CONFIG"; break;
    case EGL_BAD_CONTEXT: name = "EGL_BAD_CONTEXT"; break;
    case EGL_BAD_CURRENT_SURFACE: name = "EGL_BAD_CURRENT_SURFACE"; break;
    case EGL_BAD_DISPLAY: name = "EGL_BAD_DISPLAY"; break;
    case EGL_BAD_MATCH: name = "EGL_BAD_MATCH"; break;
    case EGL_BAD_NATIVE_PIXMAP: name = "EGL_BAD_NATIVE_PIXMAP"; break;
    case EGL_BAD_NATIVE_WINDOW: name = "EGL_BAD_NATIVE_WINDOW"; break;
    case EGL_BAD_PARAMETER: name = "EGL_BAD_PARAMETER"; break;
    case EGL_BAD_SURFACE: name = "EGL_BAD_SURFACE"; break;
    case EGL_CONTEXT_LOST: name = "EGL_CONTEXT_LOST"; break;
    default: return text::format("EGL error {:#06x}", static_cast<unsigned>(error));
  }
  return text::format("{} ({:#06x})", name, static_cast<unsigned>(error));
}

std::string gl_error_name(GLenum error) {
  const char* name = nullptr;
  switch (error) {
    case GL_NO_ERROR: name = "GL_NO_ERROR"; break;
    case GL_INVALID_ENUM: name = "GL_INVALID_ENUM"; break;
    case GL_INVALID_VALUE: name = "GL_INVALID_VALUE"; break;
    case GL_INVALID_OPERATION: name = "GL_INVALID_OPERATION"; break;
    case GL_OUT_OF_MEMORY: name = "GL_OUT_OF_MEMORY"; break;
    case GL_INVALID_FRAMEBUFFER_OPERATION: name = "GL_INVALID_FRAMEBUFFER_OPERATION"; break;
    default: return text::format("GL error {:#06x}", error);
  }
  return text::format("{} ({:#06x})", name, error);
}

GLbitfield map_access_bits(unsigned map_mode) noexcept {
  GLbitfield bits = 0;
  if (map_mode & 1u) bits |= GL_MAP_READ_BIT;
  if (map_mode & 2u) bits |= GL_MAP_WRITE_BIT;
  return bits;
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
