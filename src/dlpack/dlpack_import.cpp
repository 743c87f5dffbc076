// SPDX-License-Identifier: Apache-2.0
// DLPack import: a producer's managed tensor becomes MemoryKind::Foreign storage whose destruction
// calls the producer's deleter (once). Ownership passes at the call, success or failure (dlpack.h).
#include <edgetensor/dlpack.h>

#include <array>
#include <atomic>
#include <memory>
#include <utility>

#include "text/format.h"

#include "core/storage.h"
#include "core/tensor_access.h"
#include "dlpack/dlpack_layout.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace dlpack {
namespace {

std::atomic<std::size_t> g_live_imports{0};

// Owns one producer tensor until its deleter has run (exactly once, through run_deleter when given).
class ProducerRef {
 public:
  template <class Managed>
  ProducerRef(Managed* managed, const ImportOptions& options)
      : managed_(managed), call_(&call_deleter<Managed>), run_(options.run_deleter) {
    g_live_imports.fetch_add(1, std::memory_order_relaxed);
  }
  ProducerRef(ProducerRef&& o) noexcept
      : managed_(std::exchange(o.managed_, nullptr)), call_(o.call_), run_(std::move(o.run_)) {}
  ProducerRef(const ProducerRef&) = delete;
  ProducerRef& operator=(const ProducerRef&) = delete;
  ProducerRef& operator=(ProducerRef&&) = delete;
  ~ProducerRef() { release(); }

 private:
  template <class Managed>
  static void call_deleter(void* p) noexcept {
    auto* m = static_cast<Managed*>(p);
    if (m->deleter) m->deleter(m);  // reads only `deleter` (a stable field in every major version)
  }
  void release() noexcept {
    void* m = std::exchange(managed_, nullptr);
    if (!m) return;
    if (run_)
      run_([this, m] { call_(m); });
    else
      call_(m);
    g_live_imports.fetch_sub(1, std::memory_order_relaxed);
  }

  void* managed_;
  void (*call_)(void*) noexcept;
  std::function<void(const std::function<void()>&)> run_;
};

class ForeignBacking final : public detail::Backing {
 public:
  ForeignBacking(ProducerRef producer, std::byte* base, std::size_t bytes, bool read_only, Version version,
                 Device device)
      : producer_(std::move(producer)), base_(base), bytes_(bytes), read_only_(read_only), version_(version),
        device_(device) {}
  MemoryKind kind() const noexcept override { return MemoryKind::Foreign; }
  std::string detail() const override {
    std::string form = version_.major == 0 ? std::string("legacy") : text::format("{}.{}", version_.major, version_.minor);
    return text::format("dlpack {} {}:{}{}", form, device_type_name(device_.device_type), device_.device_id,
                        read_only_ ? " read-only" : "");
  }
  std::size_t buffer_bytes() const noexcept override { return bytes_; }
  bool read_only() const noexcept override { return read_only_; }
  bool needs_cpu_access_bracket() const noexcept override { return false; }
  Result<std::byte*> begin_cpu_access(MapMode) override { return base_; }
  Result<std::byte*> cpu_address() override { return base_; }

 private:
  ProducerRef producer_;  // its destructor calls the producer's deleter
  std::byte* base_;
  std::size_t bytes_;
  bool read_only_;
  Version version_;  // {0, 0}: legacy
  Device device_;
};

bool cpu_reachable(DeviceType t) noexcept {
  return t == DeviceType::Cpu || t == DeviceType::CudaHost || t == DeviceType::RocmHost;
}

Result<TensorDyn> adopt_tensor(ProducerRef producer, const DlTensor& dl, bool read_only, Version version,
                               const ImportOptions& options) {
  using namespace detail::dlpack_layout;
  if (!cpu_reachable(dl.device.device_type))
    return fail(ErrorCode::Unsupported,
                text::format("dlpack import: device {} ({}):{} is not CPU-addressable; only kDLCPU, kDLCUDAHost and "
                            "kDLROCMHost memory can be imported (copy it to the host first)",
                            device_type_name(dl.device.device_type), static_cast<std::int32_t>(dl.device.device_type),
                            dl.device.device_id));
  if (dl.ndim < 0)
    return fail(ErrorCode::InvalidArgument, text::format("dlpack import: ndim {} is negative", dl.ndim));
  const auto rank = static_cast<std::size_t>(dl.ndim);
  if (rank > kMaxRank)
    return fail(ErrorCode::OutOfRange,
                text::format("dlpack import: ndim {} exceeds the maximum rank {}", dl.ndim, kMaxRank));
  if (rank > 0 && !dl.shape)
    return fail(ErrorCode::InvalidArgument, text::format("dlpack import: shape is null with ndim {}", dl.ndim));
  ET_TRY_ASSIGN(const DType dtype, from_data_type(dl.dtype));
  const std::size_t esize = dtype_size(dtype);
  std::array<std::size_t, kMaxRank> shape{};
  std::array<std::int64_t, kMaxRank> strides{};
  ET_TRY(import_shape<std::size_t>({dl.shape, rank}, {shape.data(), rank}));
  ET_TRY(import_strides<std::size_t>(dl.strides, {shape.data(), rank}, esize, {strides.data(), rank}));
  ET_TRY_ASSIGN(auto layout, detail::compute_layout<std::size_t>({shape.data(), rank}, {strides.data(), rank}, esize,
                                                                 "dlpack import"));
  if (!dl.data && layout.element_count > 0)
    return fail(ErrorCode::InvalidArgument,
                text::format("dlpack import: data is null with {} elements", layout.element_count));
  const auto data = reinterpret_cast<std::uintptr_t>(dl.data);
  std::uintptr_t first = 0;
  if (!std::in_range<std::uintptr_t>(dl.byte_offset) ||
      __builtin_add_overflow(data, static_cast<std::uintptr_t>(dl.byte_offset), &first))
    return fail(ErrorCode::OutOfRange, text::format("dlpack import: data 0x{:x} + byte_offset {} overflows the "
                                                   "address space", data, dl.byte_offset));
  if (first % esize != 0)
    return fail(ErrorCode::InvalidArgument,
                text::format("dlpack import: first element at 0x{:x} (data 0x{:x} + byte_offset {}) is not aligned to "
                            "the element size {} B of {}", first, data, dl.byte_offset, esize, dtype_name(dtype)));
  if (layout.element_count > 0 && first > UINTPTR_MAX - layout.extent_bytes)
    return fail(ErrorCode::OutOfRange, text::format("dlpack import: extent {} B from 0x{:x} overflows the address "
                                                   "space", layout.extent_bytes, first));
  auto backing = std::make_unique<ForeignBacking>(std::move(producer), reinterpret_cast<std::byte*>(first),
                                                  layout.extent_bytes, read_only, version, dl.device);
  return detail::TensorAccess::make(std::make_shared<detail::Storage>(std::move(backing)), {shape.data(), rank}, dtype,
                                    {strides.data(), rank}, 0, detail::TensorAccess::named(options.name),
                                    "dlpack import");
}

}  // namespace

Result<TensorDyn> adopt_versioned(ManagedTensorVersioned* managed, const ImportOptions& options) {
  if (!managed) return fail(ErrorCode::InvalidArgument, "dlpack adopt_versioned: managed tensor is null");
  ProducerRef producer(managed, options);
  const Version v = managed->version;
  if (v.major != kVersion.major)
    // The spec: another major has another layout; call the deleter (the producer's destructor does)
    // and read nothing else.
    return fail(ErrorCode::Unsupported,
                text::format("dlpack import: DLPack version {}.{} has major {}; this library reads major {} "
                            "(the producer's deleter was called)", v.major, v.minor, v.major, kVersion.major));
  const bool read_only = (managed->flags & kFlagReadOnly) != 0;
  return adopt_tensor(std::move(producer), managed->dl_tensor, read_only, v, options);
}

Result<TensorDyn> adopt_legacy(ManagedTensor* managed, const ImportOptions& options) {
  if (!managed) return fail(ErrorCode::InvalidArgument, "dlpack adopt_legacy: managed tensor is null");
  ProducerRef producer(managed, options);
  return adopt_tensor(std::move(producer), managed->dl_tensor, false, Version{0, 0}, options);
}

std::size_t live_import_count() noexcept { return g_live_imports.load(std::memory_order_relaxed); }

}  // namespace dlpack
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
