// SPDX-License-Identifier: Apache-2.0
// DLPack export: a managed tensor whose context holds a CPU map (or a cuda::CudaMap) and a storage
// reference until the consumer calls the deleter (include/edgetensor/dlpack.h says what and why).
#include <edgetensor/dlpack.h>

#include <array>
#include <atomic>
#include <memory>
#include <variant>

#include "text/format.h"

#include "core/storage.h"
#include "dlpack/dlpack_layout.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace dlpack {
namespace {

std::atomic<std::size_t> g_live_exports{0};

// The data of every zero-element export: not null, because torch before 2.3 never calls the deleter of
// a tensor whose data is null (pytorch issues 117058, 117273), and aligned for any dtype. Never read.
alignas(256) std::byte g_no_elements[256];

template <class Managed>
struct ExportContext {
  Managed managed{};
  std::array<std::int64_t, kMaxRank> shape{};
  std::array<std::int64_t, kMaxRank> strides{};
  // Order matters: members are destroyed in reverse, so the map (which ends a DMA-BUF sync bracket or
  // unmaps a PBO) goes before the last storage reference that may free the memory.
  std::shared_ptr<detail::Storage> storage;
  std::variant<std::monostate, ReadMap, ReadWriteMap, cuda::CudaMap> view;
};

template <class Managed>
void delete_export(Managed* self) noexcept {
  if (!self) return;
  delete static_cast<ExportContext<Managed>*>(self->manager_ctx);
  g_live_exports.fetch_sub(1, std::memory_order_relaxed);
}

// The data pointer and device of `t` as the options ask, kept valid by what is stored in `view`.
Result<void> open_view(const TensorDyn& t, const ExportOptions& o, bool read_only,
                       std::variant<std::monostate, ReadMap, ReadWriteMap, cuda::CudaMap>& view, DlTensor& out) {
  if (o.device != ExportDevice::Cpu && o.device != ExportDevice::Cuda)
    return fail(ErrorCode::InvalidArgument,
                text::format("dlpack export: invalid ExportDevice {}", static_cast<int>(o.device)));
  if (t.element_count() == 0) {
    // Nothing to reach, so nothing held: no map, no storage (a pooled buffer goes back to its pool).
    out.device = o.device == ExportDevice::Cpu ? Device{DeviceType::Cpu, 0}
                                               : Device{DeviceType::Cuda, o.cuda.device >= 0 ? o.cuda.device : 0};
    out.data = g_no_elements;
    return {};
  }
  if (o.device == ExportDevice::Cpu) {
    out.device = {DeviceType::Cpu, 0};
    if (read_only) {
      ET_TRY_ASSIGN(auto m, t.map_read());
      out.data = const_cast<std::byte*>(m.data());  // READ_ONLY tells the consumer (versioned form)
      view = std::move(m);
    } else {
      ET_TRY_ASSIGN(auto m, t.map_read_write());
      out.data = m.data();
      view = std::move(m);
    }
    return {};
  }
  ET_TRY_ASSIGN(auto m, cuda::map(t, o.cuda));
  out.device = {DeviceType::Cuda, m.device()};
  out.data = m.device_ptr();
  view = std::move(m);
  return {};
}

template <class Managed>
Result<Managed*> export_impl(const TensorDyn& t, const ExportOptions& o, bool versioned) {
  const auto& storage = detail::storage_of(t);
  if (!storage) return fail(ErrorCode::FailedPrecondition, "dlpack export: tensor has no storage");
  if (const ImageLayout* layout = t.image_layout(); layout && layout->modifier != kDrmFormatModLinear)
    return fail(ErrorCode::Unsupported,
                text::format("dlpack export: DRM format modifier 0x{:016x} is not LINEAR (0): a tiled or compressed "
                            "image has no strided layout to describe", layout->modifier));
  const bool storage_read_only = storage->backing().read_only();
  const bool read_only = o.read_only || storage_read_only;
  if (!versioned && read_only)
    return fail(ErrorCode::PermissionDenied,
                text::format("dlpack export_legacy: {}; the legacy DLManagedTensor cannot signal read-only (numpy "
                            "refuses the same: \"signalling readonly is unsupported\"): use export_versioned",
                            storage_read_only ? text::format("{} storage ({}) is read-only", memory_kind_name(t.memory()),
                                                            t.memory_detail())
                                              : std::string("a read-only export was asked for")));
  ET_TRY_ASSIGN(DataType dtype, to_data_type(t.dtype()));
  auto ctx = std::make_unique<ExportContext<Managed>>();
  const std::size_t rank = t.rank();
  ET_TRY(detail::dlpack_layout::export_shape<std::size_t>(t.shape(), {ctx->shape.data(), rank}));
  ET_TRY(detail::dlpack_layout::export_strides(t.strides(), t.element_size(), {ctx->strides.data(), rank}));
  DlTensor& dl = ctx->managed.dl_tensor;
  ET_TRY(open_view(t, o, read_only, ctx->view, dl));
  if (t.element_count() != 0) ctx->storage = storage;
  dl.ndim = static_cast<std::int32_t>(rank);
  dl.dtype = dtype;
  dl.shape = ctx->shape.data();
  dl.strides = ctx->strides.data();  // always filled (required from DLPack 1.2 on)
  dl.byte_offset = 0;                // folded into data: PyTorch ignores byte_offset (pytorch issue 168177)
  if constexpr (std::is_same_v<Managed, ManagedTensorVersioned>) {
    ctx->managed.version = kVersion;
    ctx->managed.flags = read_only ? kFlagReadOnly : 0;  // never kFlagIsCopied: nothing is copied here
  }
  ctx->managed.manager_ctx = ctx.get();
  ctx->managed.deleter = &delete_export<Managed>;
  g_live_exports.fetch_add(1, std::memory_order_relaxed);
  return &ctx.release()->managed;
}

}  // namespace

Result<ManagedTensorVersioned*> export_versioned(const TensorDyn& tensor, const ExportOptions& options) {
  return export_impl<ManagedTensorVersioned>(tensor, options, true);
}

Result<ManagedTensor*> export_legacy(const TensorDyn& tensor, const ExportOptions& options) {
  return export_impl<ManagedTensor>(tensor, options, false);
}

std::size_t live_export_count() noexcept { return g_live_exports.load(std::memory_order_relaxed); }

}  // namespace dlpack
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
