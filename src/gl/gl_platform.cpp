// SPDX-License-Identifier: Apache-2.0
// gl::platform_name, the one part of gl.h that answers the same with or without the GL backend: built
// into et_gl in both cases (beside gl_context.cpp or gl_not_built.cpp).
#include <edgetensor/gl.h>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace gl {

std::string_view platform_name(Platform platform) noexcept {
  switch (platform) {
    case Platform::Auto: return "auto";
    case Platform::Device: return "device";
    case Platform::Surfaceless: return "surfaceless";
  }
  return "unknown";
}

}  // namespace gl
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
