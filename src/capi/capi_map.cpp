// SPDX-License-Identifier: Apache-2.0
// CPU maps and runtime descriptors.
#include "capi/capi_support.h"

#include <string>

using namespace edgetensor;
using namespace edgetensor::capi;

namespace {

// Maps `tensor` as M through `make` and hands out the handle, the address and the extent.
template <class M, class Data, class Make>
Result<void> map_tensor(const char* function, const et_tensor* tensor, et_map** out_map, Data** out_data,
                        size_t* out_size, Make make) {
  if (out_map == nullptr) return null_argument(function, "out_map");
  *out_map = nullptr;
  if (tensor == nullptr) return null_argument(function, "tensor");
  if (out_data == nullptr) return null_argument(function, "out_data");
  if (out_size == nullptr) return null_argument(function, "out_size");
  ET_TRY_ASSIGN(M m, make(tensor->tensor));
  *out_data = m.data();
  *out_size = m.extent_bytes();
  *out_map = new et_map{.map = std::move(m)};
  return {};
}

// One plane per image plane (offsets from the buffer's start), or one plane for the tensor's extent.
Result<void> describe_planes(const TensorDyn& t, int fd, et_buffer_desc& d) {
  const ImageLayout* layout = t.image_layout();
  if (layout == nullptr) {
    d.plane_count = 1;
    const std::size_t rank = t.rank();
    d.planes[0] = {fd, 0, t.offset_bytes(), t.extent_bytes(),
                   rank >= 2 ? static_cast<uint64_t>(t.strides()[rank - 2]) : t.extent_bytes()};
    return {};
  }
  d.plane_count = static_cast<uint32_t>(layout->plane_count());
  for (std::size_t i = 0; i < layout->plane_count(); ++i) {
    const PlaneLayout& p = layout->planes[i];
    ET_TRY_ASSIGN(auto end, layout->plane_end_bytes(i));
    d.planes[i] = {fd, 0, t.offset_bytes() + p.offset_bytes, end - p.offset_bytes, p.row_stride_bytes};
  }
  return {};
}

// Gives the descriptor map `m`'s address and extent, and the holder the map. One struct serves every mode:
// for a read map the address is writable in type only (the caller asked to read).
template <class M>
void hold_map(M m, et_buffer_desc& d, et_descriptor& holder) {
  d.data = const_cast<void*>(static_cast<const void*>(m.data()));
  d.mapped_bytes = m.extent_bytes();
  holder.map = std::move(m);
}

// The C++ MapOptions of a C struct (NULL: defaults).
Result<MapOptions> map_options(const et_map_options* user) {
  ET_TRY_ASSIGN(auto c, read_options(user, ET_MAP_OPTIONS_SIZE_VER0, "et_map_options"));
  MapOptions o;
  if (c.use_timeout > 1)
    return fail(ErrorCode::InvalidArgument,
                "et_map_options.use_timeout " + std::to_string(c.use_timeout) + " is not 0 or 1");
  if (c.use_timeout == 1) o.timeout = wait_from_ns(c.timeout_ns, std::chrono::milliseconds(-1));
  return o;
}

// A read map handed out through a void** (et_tensor_map): writable in type only, as the caller asked to read.
Result<void> map_read_as_void(const et_tensor* tensor, const MapOptions& o, et_map** out_map, void** out_data,
                              size_t* out_size) {
  const void* data = nullptr;
  ET_TRY(map_tensor<ReadMap>("et_tensor_map", tensor, out_map, &data, out_size,
                             [&](const TensorDyn& t) { return t.map_read(o); }));
  *out_data = const_cast<void*>(data);
  return {};
}

bool fd_shareable(MemoryKind kind) { return kind == MemoryKind::Shm || kind == MemoryKind::DmaBuf; }

}  // namespace

extern "C" {

et_status et_tensor_map_read(const et_tensor* tensor, et_map** out_map, const void** out_data, size_t* out_size) {
  return guarded([&] {
    return map_tensor<ReadMap>("et_tensor_map_read", tensor, out_map, out_data, out_size,
                               [](const TensorDyn& t) { return t.map_read(); });
  });
}

et_status et_tensor_map_write(const et_tensor* tensor, et_map** out_map, void** out_data, size_t* out_size) {
  return guarded([&] {
    return map_tensor<WriteMap>("et_tensor_map_write", tensor, out_map, out_data, out_size,
                                [](const TensorDyn& t) { return t.map_write(); });
  });
}

et_status et_tensor_map_read_write(const et_tensor* tensor, et_map** out_map, void** out_data, size_t* out_size) {
  return guarded([&] {
    return map_tensor<ReadWriteMap>("et_tensor_map_read_write", tensor, out_map, out_data, out_size,
                                    [](const TensorDyn& t) { return t.map_read_write(); });
  });
}

et_status et_tensor_map(const et_tensor* tensor, uint32_t map_mode, const et_map_options* options, et_map** out_map,
                        void** out_data, size_t* out_size) {
  return guarded([&]() -> Result<void> {
    constexpr const char* kFn = "et_tensor_map";
    if (out_map == nullptr) return null_argument(kFn, "out_map");
    *out_map = nullptr;
    if (out_data == nullptr) return null_argument(kFn, "out_data");
    if (map_mode < ET_MAP_READ || map_mode > ET_MAP_READ_WRITE)
      return fail(ErrorCode::InvalidArgument, std::string(kFn) + ": map_mode " + std::to_string(map_mode) +
                                                  " is not an ET_MAP_* value (1 to 3)");
    ET_TRY_ASSIGN(auto o, map_options(options));
    switch (map_mode) {
      case ET_MAP_READ: return map_read_as_void(tensor, o, out_map, out_data, out_size);
      case ET_MAP_WRITE:
        return map_tensor<WriteMap>(kFn, tensor, out_map, out_data, out_size,
                                    [&](const TensorDyn& t) { return t.map_write(o); });
      default:
        return map_tensor<ReadWriteMap>(kFn, tensor, out_map, out_data, out_size,
                                        [&](const TensorDyn& t) { return t.map_read_write(o); });
    }
  });
}

et_map* et_map_retain(et_map* map) { return retain_handle(map); }
void et_map_release(et_map* map) {
  const int saved = errno;  // the last release may end a DMA-BUF sync bracket (an ioctl)
  release_handle(map);
  errno = saved;
}

et_status et_tensor_describe(const et_tensor* tensor, uint32_t map_mode, et_buffer_desc* out,
                             et_descriptor** out_holder) {
  return guarded([&]() -> Result<void> {
    constexpr const char* kFn = "et_tensor_describe";
    if (out_holder == nullptr) return null_argument(kFn, "out_holder");
    *out_holder = nullptr;
    if (tensor == nullptr) return null_argument(kFn, "tensor");
    if (out == nullptr) return null_argument(kFn, "out");
    if (map_mode > ET_MAP_READ_WRITE)
      return fail(ErrorCode::InvalidArgument, std::string(kFn) + ": map_mode " + std::to_string(map_mode) +
                                                  " is not 0 or an ET_MAP_* value (1 to 3)");
    const TensorDyn& t = tensor->tensor;
    if (t.element_count() == 0)
      return fail(ErrorCode::FailedPrecondition, std::string(kFn) + ": the tensor has zero elements: nothing to describe");
    // Checked before the work below, so a bad struct_size costs no export or map.
    ET_TRY(check_struct_size(declared_struct_size(out), ET_BUFFER_DESC_SIZE_VER0, "et_buffer_desc"));
    auto holder = std::make_unique<et_descriptor>();
    holder->tensor = t;
    if (fd_shareable(t.memory())) {
      ET_TRY_ASSIGN(holder->fd, t.export_fd());
    }
    et_buffer_desc d{};
    d.struct_size = sizeof d;
    d.buffer_bytes = t.buffer_bytes();
    ET_TRY(describe_planes(t, holder->fd.get(), d));
    switch (map_mode) {
      case ET_MAP_READ: {
        ET_TRY_ASSIGN(auto m, t.map_read());
        hold_map(std::move(m), d, *holder);
        break;
      }
      case ET_MAP_WRITE: {
        ET_TRY_ASSIGN(auto m, t.map_write());
        hold_map(std::move(m), d, *holder);
        break;
      }
      case ET_MAP_READ_WRITE: {
        ET_TRY_ASSIGN(auto m, t.map_read_write());
        hold_map(std::move(m), d, *holder);
        break;
      }
      default: break;
    }
    ET_TRY(write_output(out, d, ET_BUFFER_DESC_SIZE_VER0, "et_buffer_desc"));
    *out_holder = holder.release();
    return {};
  });
}

et_descriptor* et_descriptor_retain(et_descriptor* descriptor) { return retain_handle(descriptor); }
void et_descriptor_release(et_descriptor* descriptor) {
  const int saved = errno;
  release_handle(descriptor);
  errno = saved;
}

}  // extern "C"
