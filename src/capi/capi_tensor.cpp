// SPDX-License-Identifier: Apache-2.0
// Tensors: allocate, import, describe, export, views.
#include "capi/capi_support.h"

#include <unistd.h>

#include <bit>
#include <string>

using namespace edgetensor;
using namespace edgetensor::capi;

Result<void> edgetensor::capi::allocate_options(const et_allocate_options* user, AllocateOptions& o) {
  ET_TRY_ASSIGN(auto c, read_options(user, ET_ALLOCATE_OPTIONS_SIZE_VER0, "et_allocate_options"));
  if (c.memory < 0 || c.memory > static_cast<std::int32_t>(MemoryKind::Foreign))
    return fail(ErrorCode::InvalidArgument,
                "et_allocate_options.memory " + std::to_string(c.memory) + " is not an ET_MEMORY_* value (0 to 5)");
  if (c.alignment_bytes != 0 && !std::has_single_bit(c.alignment_bytes))
    return fail(ErrorCode::InvalidArgument,
                "et_allocate_options.alignment_bytes " + std::to_string(c.alignment_bytes) + " is not a power of two");
  if (c.alignment_bytes > ET_MAX_ALIGNMENT)
    return fail(ErrorCode::Unsupported, "et_allocate_options.alignment_bytes " + std::to_string(c.alignment_bytes) +
                                            " is above what every memory kind gives (ET_MAX_ALIGNMENT, " +
                                            std::to_string(ET_MAX_ALIGNMENT) + " bytes)");
  if (c.memory == ET_MEMORY_GL_PBO) {
    if (c.gl_context == nullptr)
      return fail(ErrorCode::InvalidArgument, "et_allocate_options.gl_context is NULL with memory ET_MEMORY_GL_PBO: "
                                              "create a context with et_gl_context_create");
    // glMapBufferRange returns the driver's address, map by map: GLES promises no alignment for it.
    if (c.alignment_bytes > 1)
      return fail(ErrorCode::Unsupported, "et_allocate_options.alignment_bytes " + std::to_string(c.alignment_bytes) +
                                              " with memory ET_MEMORY_GL_PBO: a PBO's CPU address is the GL driver's "
                                              "at each map, with no alignment promised (only 0 or 1)");
  }
  // Shared as C++'s AllocateOptions holds it: a pool's copy keeps the context alive; other kinds ignore it.
  if (c.gl_context != nullptr) o.gl_context = c.gl_context->context;
  o.memory = static_cast<MemoryKind>(c.memory);
  if (c.name != nullptr) o.name = c.name;
  if (c.shm_name != nullptr) o.shm_name = c.shm_name;
  if (c.dma_heap != nullptr) o.dma_heap = c.dma_heap;
  return {};
}

std::shared_ptr<edgetensor::capi::ReleaseHook> edgetensor::capi::ReleaseHook::make(void (*callback)(void*),
                                                                                  void* user_data) {
  if (callback == nullptr) return nullptr;
  auto hook = std::shared_ptr<ReleaseHook>(new ReleaseHook, [](ReleaseHook* h) noexcept {
    if (h->armed.load(std::memory_order_acquire)) h->callback(h->user_data);
    delete h;
  });
  hook->callback = callback;
  hook->user_data = user_data;
  return hook;
}

Result<ImportOptions> edgetensor::capi::import_options(const et_import_options* user, std::size_t rank,
                                                       std::shared_ptr<ReleaseHook>* release) {
  ET_TRY_ASSIGN(auto c, read_options(user, ET_IMPORT_OPTIONS_SIZE_VER0, "et_import_options"));
  if ((c.flags & ~ET_IMPORT_ALLOW_SHRINKABLE) != 0)
    return fail(ErrorCode::InvalidArgument,
                "et_import_options.flags " + std::to_string(c.flags) + " has bits other than ET_IMPORT_ALLOW_SHRINKABLE");
  // An older caller's struct ends before them; one that ends inside them holds half a pointer: neither is read.
  if (user != nullptr && declared_struct_size(user) < ET_IMPORT_OPTIONS_SIZE_VER1) {
    c.release_callback = nullptr;
    c.user_data = nullptr;
  }
  if (c.user_data != nullptr && c.release_callback == nullptr)
    return fail(ErrorCode::InvalidArgument, "et_import_options.user_data is set but release_callback is NULL (the "
                                            "user_data is only ever passed to release_callback)");
  *release = ReleaseHook::make(c.release_callback, c.user_data);
  ImportOptions o;
  ET_TRY_ASSIGN(o.offset_bytes, to_size(c.offset_bytes, "et_import_options.offset_bytes"));
  if (c.strides_bytes != nullptr) o.strides_bytes.assign(c.strides_bytes, c.strides_bytes + rank);
  if (c.name != nullptr) o.name = c.name;
  o.allow_shrinkable = (c.flags & ET_IMPORT_ALLOW_SHRINKABLE) != 0;
  return o;
}

namespace {

// The common path of import_dup and import_adopt; `fd` is owned here (adopt) or borrowed (dup).
Result<void> import(const char* function, bool adopt, int32_t fd, uint32_t rank, const uint64_t* shape,
                    int32_t dtype, const et_import_options* options, et_tensor** out) {
  // Adopt: the fd is taken on every path, so own it before the first check can return.
  UniqueFd owned(adopt && fd >= 0 ? fd : -1);
  if (out == nullptr) return null_argument(function, "out");
  *out = nullptr;
  ET_TRY_ASSIGN(auto s, read_shape(function, rank, shape));
  ET_TRY_ASSIGN(auto d, read_dtype(function, dtype));
  std::shared_ptr<ReleaseHook> release;
  ET_TRY_ASSIGN(auto o, import_options(options, s.rank, &release));
  if (fd < 0)
    return fail(ErrorCode::InvalidArgument, std::string(function) + ": fd " + std::to_string(fd) + " is negative");
  ET_TRY_ASSIGN(auto t, adopt ? TensorDyn::adopt_fd(std::move(owned), s.ref(), d, o, release)
                              : TensorDyn::import_fd_dup(fd, s.ref(), d, o, release));
  give_tensor(std::move(t), out);
  // Armed only now: had the import or give_tensor failed, the hook would have gone without a call.
  if (release) release->armed.store(true, std::memory_order_release);
  return {};
}

Result<const TensorDyn*> tensor_of(const char* function, const et_tensor* tensor) {
  if (tensor == nullptr) return null_argument(function, "tensor");
  return &tensor->tensor;
}

}  // namespace

extern "C" {

et_status et_tensor_allocate(uint32_t rank, const uint64_t* shape, int32_t dtype, const et_allocate_options* options,
                             et_tensor** out) {
  return guarded([&]() -> Result<void> {
    if (out == nullptr) return null_argument("et_tensor_allocate", "out");
    *out = nullptr;
    ET_TRY_ASSIGN(auto s, read_shape("et_tensor_allocate", rank, shape));
    ET_TRY_ASSIGN(auto d, read_dtype("et_tensor_allocate", dtype));
    AllocateOptions o;  // filled in place: moving its strings through a Result costs on every call
    ET_TRY(allocate_options(options, o));
    ET_TRY_ASSIGN(auto t, TensorDyn::allocate(s.ref(), d, o));
    give_tensor(std::move(t), out);
    return {};
  });
}

et_status et_tensor_import_dup(int32_t borrowed_fd, uint32_t rank, const uint64_t* shape, int32_t dtype,
                               const et_import_options* options, et_tensor** out) {
  return guarded([&] { return import("et_tensor_import_dup", false, borrowed_fd, rank, shape, dtype, options, out); });
}

et_status et_tensor_import_adopt(int32_t fd, uint32_t rank, const uint64_t* shape, int32_t dtype,
                                 const et_import_options* options, et_tensor** out) {
  return guarded([&] { return import("et_tensor_import_adopt", true, fd, rank, shape, dtype, options, out); });
}

et_tensor* et_tensor_retain(et_tensor* tensor) { return retain_handle(tensor); }
void et_tensor_release(et_tensor* tensor) {
  const int saved = errno;  // the last reference may close an fd or munmap
  release_handle(tensor);
  errno = saved;
}

et_status et_tensor_get_info(const et_tensor* tensor, et_tensor_info* info) {
  return guarded([&]() -> Result<void> {
    ET_TRY_ASSIGN(const TensorDyn* t, tensor_of("et_tensor_get_info", tensor));
    if (info == nullptr) return null_argument("et_tensor_get_info", "info");
    et_tensor_info v{};
    v.struct_size = sizeof v;
    v.dtype = static_cast<int32_t>(t->dtype());
    v.rank = static_cast<uint32_t>(t->rank());
    v.memory = static_cast<int32_t>(t->memory());
    v.read_only = t->read_only() ? 1 : 0;
    v.contiguous = t->is_contiguous() ? 1 : 0;
    for (std::size_t i = 0; i < t->rank(); ++i) {
      v.shape[i] = t->shape()[i];
      v.strides_bytes[i] = t->strides()[i];
    }
    v.offset_bytes = t->offset_bytes();
    v.element_count = t->element_count();
    v.packed_bytes = t->packed_bytes();
    v.extent_bytes = t->extent_bytes();
    v.buffer_bytes = t->buffer_bytes();
    v.identity = t->identity().id();
    v.buffer_key = t->buffer_key().value();
    return write_output(info, v, ET_TENSOR_INFO_SIZE_VER0, "et_tensor_info");
  });
}

et_status et_tensor_export_fd(const et_tensor* tensor, int32_t* out_fd) {
  return guarded([&]() -> Result<void> {
    if (out_fd == nullptr) return null_argument("et_tensor_export_fd", "out_fd");
    *out_fd = -1;
    ET_TRY_ASSIGN(const TensorDyn* t, tensor_of("et_tensor_export_fd", tensor));
    ET_TRY_ASSIGN(auto fd, t->export_fd());
    *out_fd = fd.release();
    return {};
  });
}

et_status et_tensor_view(const et_tensor* tensor, uint64_t offset_bytes, uint32_t rank, const uint64_t* shape,
                         const int64_t* strides_bytes, et_tensor** out) {
  return guarded([&]() -> Result<void> {
    if (out == nullptr) return null_argument("et_tensor_view", "out");
    *out = nullptr;
    ET_TRY_ASSIGN(const TensorDyn* t, tensor_of("et_tensor_view", tensor));
    ET_TRY_ASSIGN(auto s, read_shape("et_tensor_view", rank, shape));
    ET_TRY_ASSIGN(auto offset, to_size(offset_bytes, "et_tensor_view: offset_bytes"));
    ArrayRef<std::int64_t> strides;
    if (strides_bytes != nullptr) strides = ArrayRef<std::int64_t>(strides_bytes, s.rank);
    ET_TRY_ASSIGN(auto v, t->view(offset, s.ref(), strides));
    give_tensor(std::move(v), out);
    return {};
  });
}

et_status et_tensor_batch(const et_tensor* tensor, uint64_t n, et_tensor** out) {
  return guarded([&]() -> Result<void> {
    if (out == nullptr) return null_argument("et_tensor_batch", "out");
    *out = nullptr;
    ET_TRY_ASSIGN(const TensorDyn* t, tensor_of("et_tensor_batch", tensor));
    ET_TRY_ASSIGN(auto index, to_size(n, "et_tensor_batch: n"));
    ET_TRY_ASSIGN(auto v, t->batch(index));
    give_tensor(std::move(v), out);
    return {};
  });
}

et_status et_tensor_slice(const et_tensor* tensor, uint32_t dim, uint64_t begin, uint64_t end, et_tensor** out) {
  return guarded([&]() -> Result<void> {
    if (out == nullptr) return null_argument("et_tensor_slice", "out");
    *out = nullptr;
    ET_TRY_ASSIGN(const TensorDyn* t, tensor_of("et_tensor_slice", tensor));
    ET_TRY_ASSIGN(auto b, to_size(begin, "et_tensor_slice: begin"));
    ET_TRY_ASSIGN(auto e, to_size(end, "et_tensor_slice: end"));
    ET_TRY_ASSIGN(auto v, t->slice(dim, b, e));
    give_tensor(std::move(v), out);
    return {};
  });
}

et_status et_tensor_reshape(const et_tensor* tensor, uint32_t rank, const uint64_t* shape, et_tensor** out) {
  return guarded([&]() -> Result<void> {
    if (out == nullptr) return null_argument("et_tensor_reshape", "out");
    *out = nullptr;
    ET_TRY_ASSIGN(const TensorDyn* t, tensor_of("et_tensor_reshape", tensor));
    ET_TRY_ASSIGN(auto s, read_shape("et_tensor_reshape", rank, shape));
    ET_TRY_ASSIGN(auto v, t->reshape(s.ref()));
    give_tensor(std::move(v), out);
    return {};
  });
}

}  // extern "C"
