// SPDX-License-Identifier: Apache-2.0
// The one place that knows which optional backends were built (the only #if ET_HAVE_* in the tree).
#include "core/backend.h"

#include "text/format.h"

#include "config.h"
#include "backends/heap/heap.h"
#include "backends/shm/shm.h"
#if ET_HAVE_DMABUF
#include "backends/dmabuf/dmabuf.h"
#endif
#if ET_HAVE_EGL
#include "backends/gl_pbo/gl_pbo.h"
#endif

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {
namespace {

template <MemoryKind K>
struct NotBuilt {
  static std::string why() { return text::format("{} backend not built into this library", memory_kind_name(K)); }
  static BackendStatus status() { return BackendStatus{K, false, false, why()}; }
  static Result<std::unique_ptr<Backing>> allocate(std::size_t, const AllocateOptions&) {
    return fail(ErrorCode::Unavailable, why());
  }
  static Result<std::unique_ptr<Backing>> import_fd(UniqueFd, const FdInfo&) {
    return fail(ErrorCode::Unavailable, why());
  }
  static bool auto_skips(const AllocateOptions&) { return true; }
  static constexpr BackendOps ops{K, &status, &allocate, &import_fd, &auto_skips};
};

}  // namespace

const BackendOps& backend_ops(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::Shm: return shm_backend();
#if ET_HAVE_DMABUF
    case MemoryKind::DmaBuf: return dmabuf_backend();
#else
    case MemoryKind::DmaBuf: return NotBuilt<MemoryKind::DmaBuf>::ops;
#endif
#if ET_HAVE_EGL
    case MemoryKind::GlPbo: return gl_pbo_backend();
#else
    case MemoryKind::GlPbo: return NotBuilt<MemoryKind::GlPbo>::ops;
#endif
    case MemoryKind::Heap:
    case MemoryKind::Auto:
    default: return heap_backend();
  }
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
