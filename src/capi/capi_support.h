// SPDX-License-Identifier: Apache-2.0
// What every C entry point shares: the handle types, the per-thread last error, the guard that keeps
// errno and turns every exception into a status, option parsing (include/edgetensor/c/edgetensor_c.h).
#pragma once

#include <edgetensor/c/edgetensor_c.h>
#include <edgetensor/edgetensor.h>

#include "capi/struct_copy.h"

#include <array>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <new>
#include <string_view>
#include <utility>
#include <variant>

// Handles: a reference count and the C++ value. The count starts at 1 (the creator's reference).
// A fence is shared: a delivery's acquire fences are the receiver's own, handed out without a dup.
struct et_fence {
  std::atomic<std::uint32_t> refs{1};
  std::shared_ptr<const edgetensor::sync::Fence> fence;
};

namespace edgetensor::capi {
/// The fence handles a delivered tensor or frame holds for its delivery (et_channel_delivery.acquire_fences
/// points at them): one reference each, dropped with the handle.
struct HeldFences {
  std::array<et_fence*, kMaxPlanes> fences{};
  HeldFences() = default;
  HeldFences(const HeldFences&) = delete;
  HeldFences& operator=(const HeldFences&) = delete;
  ~HeldFences();
};
}  // namespace edgetensor::capi

struct et_tensor {
  std::atomic<std::uint32_t> refs{1};
  edgetensor::TensorDyn tensor;
  std::unique_ptr<edgetensor::capi::HeldFences> acquire_fences;  // a delivered tensor's; else null
};
struct et_map {
  std::atomic<std::uint32_t> refs{1};
  std::variant<edgetensor::ReadMap, edgetensor::WriteMap, edgetensor::ReadWriteMap> map;
};
struct et_descriptor {
  std::atomic<std::uint32_t> refs{1};
  // Release order: the map ends before the fd closes and the tensor goes (members die in reverse).
  edgetensor::TensorDyn tensor;
  edgetensor::UniqueFd fd;
  std::variant<std::monostate, edgetensor::ReadMap, edgetensor::WriteMap, edgetensor::ReadWriteMap> map;
};

struct et_pool {
  std::atomic<std::uint32_t> refs{1};
  edgetensor::Pool pool;
};
struct et_gl_context {
  std::atomic<std::uint32_t> refs{1};
  std::shared_ptr<edgetensor::gl::Context> context;  // never null
};
struct et_frame {
  std::atomic<std::uint32_t> refs{1};
  edgetensor::Frame frame;
  std::unique_ptr<edgetensor::capi::HeldFences> acquire_fences;  // a delivered frame's; else null
};
struct et_channel_listener {
  std::atomic<std::uint32_t> refs{1};
  edgetensor::channel::Listener listener;
};
struct et_channel_sender {
  std::atomic<std::uint32_t> refs{1};
  edgetensor::channel::Sender sender;
};
struct et_channel_receiver {
  std::atomic<std::uint32_t> refs{1};
  edgetensor::channel::Receiver receiver;
};
struct et_channel_publisher {
  std::atomic<std::uint32_t> refs{1};
  edgetensor::channel::Publisher publisher;
};

namespace edgetensor::capi {

/// Records `error` as this thread's last error and returns its code as a status. Never throws.
et_status record(const Error& error) noexcept;
/// Records an error made here: code, message `text` + `detail` (no errno). Never throws.
et_status record(ErrorCode code, std::string_view text, std::string_view detail = {}) noexcept;

/// Runs `body` (returning Result<void>) as an entry point: errno restored to its value on entry, an error
/// recorded, std::bad_alloc -> OutOfMemory, any other exception -> Internal. Nothing escapes.
template <class F>
et_status guarded(F&& body) noexcept {
  const int saved_errno = errno;
  et_status status = ET_OK;
  try {
    Result<void> r = std::forward<F>(body)();
    if (!r) status = record(r.error());
  } catch (const std::bad_alloc&) {
    status = record(ErrorCode::OutOfMemory, "out of memory: an allocation inside edgetensor failed (std::bad_alloc)");
  } catch (const std::exception& e) {
    status = record(ErrorCode::Internal, "unexpected C++ exception: ", e.what());
  } catch (...) {
    status = record(ErrorCode::Internal, "unexpected C++ exception of an unknown type");
  }
  errno = saved_errno;
  return status;
}

/// InvalidArgument "<function>: <what> is NULL".
Unexpected null_argument(std::string_view function, std::string_view what);

/// Reads a caller's option struct (NULL: all zero, the defaults) by the struct_size rule.
template <class T>
Result<T> read_options(const T* user, std::size_t min_size, std::string_view what) {
  T options{};
  if (user == nullptr) return options;
  ET_TRY(copy_struct_from_caller(&options, sizeof(T), min_size, user, declared_struct_size(user), what));
  return options;
}

/// Writes `value` into the caller's output struct by the struct_size rule.
template <class T>
Result<void> write_output(T* user, const T& value, std::size_t min_size, std::string_view what) {
  return copy_struct_to_caller(user, declared_struct_size(user), min_size, &value, sizeof(T), what);
}

/// The shape of a C call, checked (rank <= kMaxRank, shape not NULL when rank > 0, each entry fits size_t).
struct Shape {
  std::array<std::size_t, kMaxRank> dims{};
  std::size_t rank = 0;
  ArrayRef<std::size_t> ref() const noexcept { return {dims.data(), rank}; }
};
Result<Shape> read_shape(std::string_view function, std::uint32_t rank, const std::uint64_t* shape);
/// A uint64_t that must fit size_t (32-bit targets). Errors: OutOfRange naming `what`.
Result<std::size_t> to_size(std::uint64_t value, std::string_view what);
/// A DType from a C value. Errors: InvalidArgument naming it.
Result<DType> read_dtype(std::string_view function, std::int32_t dtype);

/// A C wait in nanoseconds as the C++ milliseconds: rounded up (1 ns waits 1 ms, never "only checks"); 0
/// stays 0; negative gives `unbounded` (each C++ call has its own "no bound" value).
std::chrono::milliseconds wait_from_ns(std::int64_t timeout_ns, std::chrono::milliseconds unbounded) noexcept;

/// Fills `o` (default-constructed) from the C struct (NULL: defaults); a gl_context is shared into
/// `o.gl_context`. Errors: InvalidArgument (struct_size rule, memory kind, alignment not a power of two,
/// GL PBO without a context), Unsupported (alignment above ET_MAX_ALIGNMENT, or above 1 for a GL PBO).
Result<void> allocate_options(const et_allocate_options* user, AllocateOptions& o);

/// The caller's release hook of et_import_options (0.7): its deleter calls `callback(user_data)` only
/// once armed, and an import arms it only after the handle is given, so a failed import never calls it.
struct ReleaseHook {
  void (*callback)(void*) = nullptr;
  void* user_data = nullptr;
  std::atomic<bool> armed{false};
  /// The keep-alive the C++ import holds (null without a callback); its last copy runs the deleter.
  static std::shared_ptr<ReleaseHook> make(void (*callback)(void*), void* user_data);
};

/// Fills ImportOptions from the C struct (NULL: defaults); strides_bytes, when not NULL, has `rank`
/// entries; *release gets the release hook (null when none). Errors: InvalidArgument (struct_size rule,
/// unknown flags, user_data without release_callback), OutOfRange (offset past size_t).
Result<ImportOptions> import_options(const et_import_options* user, std::size_t rank,
                                     std::shared_ptr<ReleaseHook>* release);

/// A new handle of `tensor` into *out.
void give_tensor(TensorDyn tensor, et_tensor** out);

/// A PixelFormat from a C value (ET_PIXEL_FORMAT_*, UNKNOWN refused). Errors: InvalidArgument naming it.
Result<PixelFormat> read_pixel_format(std::string_view function, std::int32_t format);

/// The row and height alignment of an et_image_options (NULL: tight rows, no height padding). Errors:
/// InvalidArgument (struct_size rule, reserved not zero); the values themselves are checked by ImageLayout::make.
Result<ImageAlignment> image_alignment(const et_image_options* user);

/// An et_image_layout the caller filled as an input (its struct_size rule) as an ImageLayout: the
/// format checked, plane_count and planes past the format's count ignored. Errors: InvalidArgument.
Result<ImageLayout> read_image_layout(std::string_view function, const et_image_layout* layout);

/// Writes `layout` into the caller's output struct (struct_size rule).
Result<void> write_image_layout(et_image_layout* user, const ImageLayout& layout);

/// Drops one reference of a handle; the last frees it.
template <class H>
void release_handle(H* handle) noexcept {
  if (handle != nullptr && handle->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete handle;
}
/// release_handle with errno kept: a last release may close fds, munmap or join a thread.
template <class H>
void release_handle_keep_errno(H* handle) noexcept {
  const int saved = errno;
  release_handle(handle);
  errno = saved;
}
template <class H>
H* retain_handle(H* handle) noexcept {
  if (handle != nullptr) handle->refs.fetch_add(1, std::memory_order_relaxed);
  return handle;
}

}  // namespace edgetensor::capi
