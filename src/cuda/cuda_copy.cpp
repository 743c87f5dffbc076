// SPDX-License-Identifier: Apache-2.0
// cuda::Stream and the copy functions (raw pointers and tensors).

#include <array>

#include "text/format.h"

#include "base/log_internal.h"
#include "cuda/cuda_internal.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace cuda {

using edgetensor::detail::log;

// ---- Stream ------------------------------------------------------------------------------------
Result<Stream> Stream::create() {
  ET_TRY_ASSIGN(const auto* api, detail::usable("Stream::create"));
  detail::CudaStream s = nullptr;
  detail::CudaError e = api->cudaStreamCreateWithFlags(&s, detail::kStreamNonBlocking);
  if (e != detail::kCudaSuccess) return fail(detail::cuda_error(*api, e, "cudaStreamCreateWithFlags(NonBlocking)"));
  return Stream(s, edgetensor::detail::process_token());
}

Stream::Stream(Stream&& o) noexcept : stream_(o.stream_), process_(o.process_) { o.stream_ = nullptr; }
Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    reset();
    stream_ = o.stream_;
    process_ = o.process_;
    o.stream_ = nullptr;
  }
  return *this;
}
Stream::~Stream() { reset(); }

void Stream::reset() noexcept {
  if (stream_ && !edgetensor::detail::forked_since(process_)) {
    if (const auto* api = detail::runtime()) {
      detail::CudaError e = api->cudaStreamDestroy(stream_);
      if (e != detail::kCudaSuccess) log(LogLevel::Warning, "cudaStreamDestroy failed: {}", detail::describe_error(*api, e));
    }
  }
  stream_ = nullptr;
}

Result<void> Stream::synchronize() const {
  ET_TRY_ASSIGN(const auto* api, detail::usable("Stream::synchronize"));
  if (!stream_) return fail(ErrorCode::FailedPrecondition, "Stream::synchronize: moved-from stream");
  detail::CudaError e = api->cudaStreamSynchronize(stream_);
  if (e != detail::kCudaSuccess) return fail(detail::cuda_error(*api, e, "cudaStreamSynchronize"));
  return {};
}

// ---- Raw copies --------------------------------------------------------------------------------
namespace {

const char* kind_name(int kind) {
  switch (kind) {
    case detail::kMemcpyHostToDevice: return "HostToDevice";
    case detail::kMemcpyDeviceToHost: return "DeviceToHost";
    case detail::kMemcpyDeviceToDevice: return "DeviceToDevice";
  }
  return "?";
}

Result<void> do_copy(const char* what, void* dst, const void* src, std::size_t n, int kind, const Stream* stream) {
  ET_TRY_ASSIGN(const auto* api, detail::usable(what));
  if (n == 0) return {};
  if (!dst || !src)
    return fail(ErrorCode::InvalidArgument,
                text::format("{}: null {} pointer for a {} B copy", what, !dst ? "destination" : "source", n));
  detail::CudaError e;
  if (stream) {
    if (!stream->native_handle()) return fail(ErrorCode::InvalidArgument, text::format("{}: moved-from stream", what));
    e = api->cudaMemcpyAsync(dst, src, n, kind, stream->native_handle());
  } else {
    e = api->cudaMemcpy(dst, src, n, kind);
  }
  if (e != detail::kCudaSuccess)
    return fail(detail::cuda_error(*api, e, text::format("{}({}, {}, {} B, {})", stream ? "cudaMemcpyAsync" : "cudaMemcpy",
                                                        dst, src, n, kind_name(kind))));
  return {};
}

}  // namespace

Result<void> copy_host_to_device(void* d, const void* h, std::size_t n) {
  return do_copy("cuda::copy_host_to_device", d, h, n, detail::kMemcpyHostToDevice, nullptr);
}
Result<void> copy_device_to_host(void* h, const void* d, std::size_t n) {
  return do_copy("cuda::copy_device_to_host", h, d, n, detail::kMemcpyDeviceToHost, nullptr);
}
Result<void> copy_device_to_device(void* d, const void* s, std::size_t n) {
  return do_copy("cuda::copy_device_to_device", d, s, n, detail::kMemcpyDeviceToDevice, nullptr);
}
Result<void> copy_host_to_device_async(void* d, const void* h, std::size_t n, const Stream& st) {
  return do_copy("cuda::copy_host_to_device_async", d, h, n, detail::kMemcpyHostToDevice, &st);
}
Result<void> copy_device_to_host_async(void* h, const void* d, std::size_t n, const Stream& st) {
  return do_copy("cuda::copy_device_to_host_async", h, d, n, detail::kMemcpyDeviceToHost, &st);
}
Result<void> copy_device_to_device_async(void* d, const void* s, std::size_t n, const Stream& st) {
  return do_copy("cuda::copy_device_to_device_async", d, s, n, detail::kMemcpyDeviceToDevice, &st);
}

// ---- Tensor copies -----------------------------------------------------------------------------
namespace {

/// Byte offsets (from the first element) of each contiguous row and the row length: one row for a
/// contiguous tensor; rows of the innermost dimension when only that one is packed.
struct RowPlan {
  std::size_t row_bytes = 0;
  std::size_t rows = 0;
};

Result<RowPlan> plan_rows(const TensorDyn& t, const char* what) {
  RowPlan p;
  const std::size_t es = t.element_size();
  if (t.is_contiguous() || t.rank() == 0) {
    p.row_bytes = t.packed_bytes();
    p.rows = t.packed_bytes() ? 1 : 0;
    return p;
  }
  const auto strides = t.strides();
  const auto shape = t.shape();
  const std::size_t r = t.rank();
  if (strides[r - 1] != static_cast<std::int64_t>(es) && shape[r - 1] > 1)
    return fail(ErrorCode::InvalidArgument,
                text::format("{}: the innermost stride is {} B but the element size is {} B; copy row by row needs "
                            "packed rows (make a contiguous copy first)",
                            what, strides[r - 1], es));
  p.row_bytes = shape[r - 1] * es;
  p.rows = t.element_count() / (shape[r - 1] ? shape[r - 1] : 1);
  if (t.element_count() == 0) p.rows = 0;
  return p;
}

/// Calls fn(host_offset_bytes, packed_offset_bytes) for each row in C order.
template <class Fn>
Result<void> for_each_row(const TensorDyn& t, const RowPlan& p, Fn&& fn) {
  if (p.rows == 0) return {};
  if (p.rows == 1) return fn(std::size_t{0}, std::size_t{0});
  const std::size_t outer = t.rank() - 1;
  const auto shape = t.shape();
  const auto strides = t.strides();
  std::array<std::size_t, kMaxRank> idx{};
  for (std::size_t row = 0; row < p.rows; ++row) {
    std::size_t off = 0;
    for (std::size_t d = 0; d < outer; ++d) off += idx[d] * static_cast<std::size_t>(strides[d]);
    ET_TRY(fn(off, row * p.row_bytes));
    for (std::size_t d = outer; d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return {};
}

Result<void> finish(const Stream* stream, Result<void> r) {
  // Queued copies read/write through the CPU map: wait for them before the map closes, also on error.
  if (stream && stream->native_handle()) {
    auto s = stream->synchronize();
    if (r && !s) return s;
  }
  return r;
}

}  // namespace

Result<void> copy_to_device(const TensorDyn& src, void* device_dst, std::size_t cap, const Stream* stream) {
  constexpr const char* what = "cuda::copy_to_device";
  if (src.is_empty_handle()) return fail(ErrorCode::FailedPrecondition, text::format("{}: empty tensor handle", what));
  ET_TRY(detail::usable(what));
  const std::size_t need = src.packed_bytes();
  if (need > cap)
    return fail(ErrorCode::OutOfRange,
                text::format("{}: the tensor has {} B, the device buffer holds {} B", what, need, cap));
  if (need == 0) return {};
  if (!device_dst) return fail(ErrorCode::InvalidArgument, text::format("{}: null device pointer", what));
  ET_TRY_ASSIGN(RowPlan plan, plan_rows(src, what));
  ET_TRY_ASSIGN(auto m, src.map_read());
  const std::byte* base = m.data();
  auto* dst = static_cast<std::byte*>(device_dst);
  return finish(stream, for_each_row(src, plan, [&](std::size_t host_off, std::size_t packed_off) {
                  return do_copy(what, dst + packed_off, base + host_off, plan.row_bytes, detail::kMemcpyHostToDevice,
                                 stream);
                }));
}

Result<void> copy_from_device(const void* device_src, std::size_t src_bytes, const TensorDyn& dst, const Stream* stream) {
  constexpr const char* what = "cuda::copy_from_device";
  if (dst.is_empty_handle()) return fail(ErrorCode::FailedPrecondition, text::format("{}: empty tensor handle", what));
  ET_TRY(detail::usable(what));
  const std::size_t need = dst.packed_bytes();
  if (need > src_bytes)
    return fail(ErrorCode::OutOfRange,
                text::format("{}: the tensor needs {} B, the device buffer has {} B", what, need, src_bytes));
  if (need == 0) return {};
  if (!device_src) return fail(ErrorCode::InvalidArgument, text::format("{}: null device pointer", what));
  ET_TRY_ASSIGN(RowPlan plan, plan_rows(dst, what));
  ET_TRY_ASSIGN(auto m, dst.map_write());
  std::byte* base = m.data();
  const auto* src = static_cast<const std::byte*>(device_src);
  return finish(stream, for_each_row(dst, plan, [&](std::size_t host_off, std::size_t packed_off) {
                  return do_copy(what, base + host_off, src + packed_off, plan.row_bytes, detail::kMemcpyDeviceToHost,
                                 stream);
                }));
}

}  // namespace cuda
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
