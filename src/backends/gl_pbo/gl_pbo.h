// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "core/backend.h"

namespace edgetensor::detail {
/// OpenGL ES pixel-buffer objects on a gl::Context (AllocateOptions::gl_context). One CPU map at a time
/// (glMapBufferRange on the GL thread); not shareable by fd; zero-filled at creation.
const BackendOps& gl_pbo_backend();
}  // namespace edgetensor::detail
