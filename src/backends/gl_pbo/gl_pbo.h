// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <edgetensor/abi.h>  // ET_ABI_NAMESPACE

#include "core/backend.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {
/// OpenGL ES pixel-buffer objects on a gl::Context (AllocateOptions::gl_context). One CPU map at a time
/// (glMapBufferRange on the GL thread); not shareable by fd; zero-filled at creation.
const BackendOps& gl_pbo_backend();
}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
