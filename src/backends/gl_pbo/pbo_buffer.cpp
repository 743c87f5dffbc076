// SPDX-License-Identifier: Apache-2.0
// The GL calls of the PBO backend: create, map, unmap and delete one buffer object. GL thread only.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "text/format.h"

#include "backends/gl_pbo/pbo.h"
#include "base/log_internal.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {
namespace {

// The binding point the library uses for its own buffer work; always left bound to 0 afterwards.
// GL_COPY_WRITE_BUFFER is not used by fixed pipeline state (unlike the pixel pack/unpack targets), so
// our work never disturbs a user's glReadPixels or texture upload bindings.
constexpr GLenum kTarget = GL_COPY_WRITE_BUFFER;

void clear_gl_errors(const GlApi& gl) noexcept {
  // User GL code may leave errors behind; a bounded loop (a lost context can report errors forever).
  for (int i = 0; i < 16 && gl.GetError() != GL_NO_ERROR; ++i) {
  }
}

ErrorCode code_of_gl_error(GLenum e) { return e == GL_OUT_OF_MEMORY ? ErrorCode::OutOfMemory : ErrorCode::Internal; }

}  // namespace

bool PboState::release_at_shutdown(GlWorker& worker) noexcept {
  disconnected.store(true);
  if (mapped) {
    orphan = true;  // an open span points into it: delete at its unmap
    return false;
  }
  release_buffer(worker, *this);
  return true;
}

Result<std::shared_ptr<PboState>> create_buffer(GlWorker& worker, std::size_t size_bytes) {
  if (size_bytes > static_cast<std::size_t>(PTRDIFF_MAX))
    return fail(ErrorCode::OutOfRange, text::format("GL buffer of {} B exceeds GLsizeiptr's maximum {} B", size_bytes,
                                                   static_cast<std::size_t>(PTRDIFF_MAX)));
  const GlApi& gl = worker.gl();
  clear_gl_errors(gl);
  GLuint name = 0;
  gl.GenBuffers(1, &name);
  if (name == 0)
    return fail(ErrorCode::Internal, text::format("glGenBuffers gave no name: {}", gl_error_name(gl.GetError())));
  gl.BindBuffer(kTarget, name);
  auto undo = [&](std::string what, GLenum e) {
    gl.BindBuffer(kTarget, 0);
    gl.DeleteBuffers(1, &name);
    return fail(code_of_gl_error(e), text::format("{} for a {} B GL buffer: {}", what, size_bytes, gl_error_name(e)));
  };
  gl.BufferData(kTarget, static_cast<GLsizeiptr>(size_bytes), nullptr, GL_DYNAMIC_DRAW);
  if (GLenum e = gl.GetError(); e != GL_NO_ERROR) return undo("glBufferData", e);
  // GLES 3.0 has no glClearBufferData: upload zeros from one static zero block. Costs one driver copy
  // of the whole size at creation (about a memset's worth of bandwidth), no extra allocation.
  static const std::byte kZeros[256 * 1024] = {};
  for (std::size_t off = 0; off < size_bytes; off += sizeof(kZeros)) {
    std::size_t n = std::min(sizeof(kZeros), size_bytes - off);
    gl.BufferSubData(kTarget, static_cast<GLintptr>(off), static_cast<GLsizeiptr>(n), kZeros);
  }
  if (GLenum e = gl.GetError(); e != GL_NO_ERROR) return undo("zero-filling (glBufferSubData)", e);
  gl.BindBuffer(kTarget, 0);
  auto state = std::make_shared<PboState>();
  state->name = name;
  state->size_bytes = size_bytes;
  worker.track(state);
  return state;
}

Result<std::byte*> map_buffer(GlWorker& worker, PboState& state, MapMode mode) {
  if (state.deleted) return fail(worker.gone_error("CPU map of a GL PBO"));
  if (state.mapped)
    return fail(ErrorCode::Busy, text::format("GL buffer {} is already mapped; it allows one CPU map at a time", state.name));
  for (auto& a : state.attachments)
    if (auto why = a->busy_reason())
      return fail(ErrorCode::Busy, text::format("CPU map of GL buffer {} refused: {}", state.name, *why));
  const GlApi& gl = worker.gl();
  clear_gl_errors(gl);
  gl.BindBuffer(kTarget, state.name);
  const GLbitfield access = map_access_bits(static_cast<unsigned>(mode));
  void* p = gl.MapBufferRange(kTarget, 0, static_cast<GLsizeiptr>(state.size_bytes), access);
  GLenum e = gl.GetError();
  gl.BindBuffer(kTarget, 0);
  if (!p)
    return fail(code_of_gl_error(e), text::format("glMapBufferRange of GL buffer {} ({} B, access {:#x}): {}", state.name,
                                                 state.size_bytes, access, gl_error_name(e)));
  state.mapped = true;
  return static_cast<std::byte*>(p);
}

void unmap_buffer(GlWorker& worker, PboState& state) noexcept {
  if (!state.mapped || state.deleted) return;
  const GlApi& gl = worker.gl();
  gl.BindBuffer(kTarget, state.name);
  // GL_FALSE means the data store was corrupted while mapped (e.g. a display mode change); contents are
  // undefined. Nothing to retry: report it.
  if (gl.UnmapBuffer(kTarget) != GL_TRUE)
    log(LogLevel::Warning, "glUnmapBuffer of GL buffer {} returned GL_FALSE: contents are undefined", state.name);
  gl.BindBuffer(kTarget, 0);
  state.mapped = false;
  if (state.orphan) {
    state.orphan = false;
    release_buffer(worker, state);
    worker.release_kept();
  }
}

void release_buffer(GlWorker& worker, PboState& state) noexcept {
  if (state.deleted) return;
  // Attachments (CUDA registrations) go first, while the buffer still exists.
  for (auto& a : state.attachments) a->release_on_gl_thread();
  state.attachments.clear();
  const GlApi& gl = worker.gl();
  if (state.mapped) {
    gl.BindBuffer(kTarget, state.name);
    gl.UnmapBuffer(kTarget);
    gl.BindBuffer(kTarget, 0);
    state.mapped = false;
  }
  gl.DeleteBuffers(1, &state.name);
  state.deleted = true;
  state.disconnected.store(true);
  worker.untrack(state);  // callers hold their own reference to `state`
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
