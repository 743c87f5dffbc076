// SPDX-License-Identifier: Apache-2.0
// libet_fake_cudart.so, the TEST DOUBLE of the CUDA runtime: GL interop (cuda_gl_interop.h and the
// graphics-agnostic part of cuda_runtime_api.h). Every call checks the caller's GL state.
#include <cstdlib>

#include "fake_cudart_internal.h"

using namespace et_fake;

#ifndef ET_FAKE_OMIT_GL_INTEROP  // the "no GL interop" variant lacks the optional group
namespace {
// The resource, or null after counting a violation.
GlRes* known_resource(cudaGraphicsResource_t r) {
  auto* g = reinterpret_cast<GlRes*>(r);
  if (!st().gl_resources.count(g)) {
    ++st().violations;
    return nullptr;
  }
  return g;
}
// Every GL-interop call needs the GL context current on the calling thread.
#define ET_NEED_GL()                                   \
  do {                                                 \
    if (!r.call().gl_current) {                        \
      ++st().violations;                               \
      return r.done(cudaErrorInvalidGraphicsContext);  \
    }                                                  \
  } while (0)
}  // namespace

extern "C" {
cudaError_t cudaGLGetDevices(unsigned* count, int* devices, unsigned capacity, int list) {
  Rec r("cudaGLGetDevices");
  r.arg(capacity).arg(static_cast<unsigned long long>(list));
  ET_NEED_DRIVER();
  ET_NEED_GL();
  const std::string v = gl_devices();
  if (v == "none") return r.done(cudaErrorNoDevice);
  if (!count || list < 1 || list > 3) return r.done(cudaErrorInvalidValue);
  unsigned n = 0;
  for (std::size_t pos = 0; pos <= v.size();) {
    std::size_t comma = v.find(',', pos);
    if (comma == std::string::npos) comma = v.size();
    if (n < capacity && devices) devices[n] = std::atoi(v.substr(pos, comma - pos).c_str());
    ++n;
    pos = comma + 1;
  }
  *count = n < capacity ? n : capacity;
  return r.done(cudaSuccess);
}

cudaError_t cudaGraphicsGLRegisterBuffer(cudaGraphicsResource_t* out, unsigned buffer, unsigned flags) {
  Rec r("cudaGraphicsGLRegisterBuffer");
  r.arg(buffer).arg(flags);
  r.call().gl_buffer_alive = gl_buffer_alive(buffer);
  ET_NEED_DRIVER();
  ET_NEED_GL();
  if (!out || flags > 2) return r.done(cudaErrorInvalidValue);
  if (r.call().gl_buffer_alive != 1) {
    ++st().violations;
    return r.done(cudaErrorInvalidValue);
  }
  for (GlRes* g : st().gl_resources)
    if (g->buffer == buffer) {
      ++st().violations;  // registered twice
      return r.done(cudaErrorInvalidValue);
    }
  auto* g = new GlRes{buffer, gl_buffer_size(buffer), nullptr};
  st().gl_resources.insert(g);
  *out = reinterpret_cast<cudaGraphicsResource_t>(g);
  r.ptr(g);
  return r.done(cudaSuccess);
}

cudaError_t cudaGraphicsMapResources(int count, cudaGraphicsResource_t* resources, cudaStream_t stream) {
  Rec r("cudaGraphicsMapResources");
  r.arg(static_cast<unsigned long long>(count)).ptr(resources && count > 0 ? resources[0] : nullptr).ptr(stream);
  ET_NEED_DRIVER();
  ET_NEED_GL();
  if (count != 1 || !resources) return r.done(cudaErrorInvalidValue);
  if (stream && !st().streams.count(stream)) return r.done(cudaErrorInvalidResourceHandle);
  GlRes* g = known_resource(resources[0]);
  if (!g) return r.done(cudaErrorInvalidResourceHandle);
  r.call().gl_buffer_alive = gl_buffer_alive(g->buffer);
  if (g->mapped) {
    ++st().violations;
    return r.done(cudaErrorAlreadyMapped);
  }
  g->mapped = static_cast<char*>(std::calloc(g->size ? g->size : 1, 1));
  return r.done(cudaSuccess);
}

cudaError_t cudaGraphicsResourceGetMappedPointer(void** ptr, size_t* size, cudaGraphicsResource_t resource) {
  Rec r("cudaGraphicsResourceGetMappedPointer");
  r.ptr(resource);
  ET_NEED_DRIVER();
  ET_NEED_GL();
  GlRes* g = known_resource(resource);
  if (!g) return r.done(cudaErrorInvalidResourceHandle);
  if (!g->mapped || !ptr || !size) return r.done(cudaErrorNotMapped);
  *ptr = g->mapped;
  *size = g->size;
  r.ptr(g->mapped).arg(g->size);
  return r.done(cudaSuccess);
}

cudaError_t cudaGraphicsUnmapResources(int count, cudaGraphicsResource_t* resources, cudaStream_t stream) {
  Rec r("cudaGraphicsUnmapResources");
  r.arg(static_cast<unsigned long long>(count)).ptr(resources && count > 0 ? resources[0] : nullptr).ptr(stream);
  ET_NEED_DRIVER();
  ET_NEED_GL();
  if (count != 1 || !resources) return r.done(cudaErrorInvalidValue);
  GlRes* g = known_resource(resources[0]);
  if (!g) return r.done(cudaErrorInvalidResourceHandle);
  r.call().gl_buffer_alive = gl_buffer_alive(g->buffer);
  if (!g->mapped) {
    ++st().violations;
    return r.done(cudaErrorNotMapped);
  }
  std::free(g->mapped);
  g->mapped = nullptr;
  return r.done(cudaSuccess);
}

cudaError_t cudaGraphicsUnregisterResource(cudaGraphicsResource_t resource) {
  Rec r("cudaGraphicsUnregisterResource");
  r.ptr(resource);
  ET_NEED_DRIVER();
  ET_NEED_GL();
  GlRes* g = known_resource(resource);
  if (!g) return r.done(cudaErrorInvalidResourceHandle);
  r.call().gl_buffer_alive = gl_buffer_alive(g->buffer);
  if (r.call().gl_buffer_alive != 1) ++st().violations;  // must come before glDeleteBuffers
  if (g->mapped) {
    ++st().violations;  // must be unmapped first
    std::free(g->mapped);
  }
  st().gl_resources.erase(g);
  delete g;
  return r.done(cudaSuccess);
}
}  // extern "C"
#endif
