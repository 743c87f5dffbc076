// SPDX-License-Identifier: Apache-2.0
#include <edgetensor/tensor.h>

#include <fcntl.h>

#include <array>
#include <cstdlib>
#include <cstring>

#include "text/format.h"

#include "core/backend.h"
#include "core/layout.h"
#include "base/c_string.h"
#include "base/log_internal.h"
#include "base/memfd.h"
#include "base/shm_name.h"
#include "base/sys.h"
#include "core/tensor_access.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {

using detail::Backing;
using detail::Storage;

namespace detail {
namespace {
class EmptyBacking final : public Backing {
 public:
  explicit EmptyBacking(MemoryKind kind) : kind_(kind) {}
  MemoryKind kind() const noexcept override { return kind_; }
  std::string detail() const override { return "empty (no buffer)"; }
  std::size_t buffer_bytes() const noexcept override { return 0; }
  Result<std::byte*> begin_cpu_access(MapMode) override { return nullptr; }
  // Not reached through TensorDyn::export_fd, which refuses every zero-element tensor first.
  Result<UniqueFd> export_fd() const override {
    return fail(ErrorCode::FailedPrecondition, "a zero-element tensor has no buffer: nothing to share");
  }

 private:
  MemoryKind kind_;
};
}  // namespace

std::unique_ptr<Backing> make_empty_backing(MemoryKind kind) { return std::make_unique<EmptyBacking>(kind); }
}  // namespace detail

namespace detail {
Result<TensorDyn> TensorAccess::make(std::shared_ptr<Storage> storage, ArrayRef<std::size_t> shape, DType dtype,
                                     ArrayRef<std::int64_t> strides, std::size_t offset,
                                     std::shared_ptr<const TensorMeta> meta, std::string_view what) {
  if (!dtype_is_valid(dtype))
    return fail(ErrorCode::InvalidArgument, text::format("{}: invalid dtype {}", what, static_cast<int>(dtype)));
  if (shape.size() > kMaxRank)
    return fail(ErrorCode::InvalidArgument,
                text::format("{}: rank {} exceeds the maximum rank {}", what, shape.size(), kMaxRank));
  if (!strides.empty() && strides.size() != shape.size())
    return fail(ErrorCode::InvalidArgument,
                text::format("{}: {} strides given for rank {}", what, strides.size(), shape.size()));
  const std::size_t esize = dtype_size(dtype);
  if (offset % esize != 0)
    return fail(ErrorCode::InvalidArgument,
                text::format("{}: offset {} B is not a multiple of the element size {} B", what, offset, esize));
  TensorDyn t;
  t.dtype_ = dtype;
  t.rank_ = static_cast<std::uint8_t>(shape.size());
  std::copy(shape.begin(), shape.end(), t.shape_.begin());
  if (!strides.empty()) std::copy(strides.begin(), strides.end(), t.strides_.begin());
  // The checks are pure: they run with the bare `what` and, only when one fails, again with the label
  // that names the dtype, so a successful make() (every view, every import) formats no text.
  auto check = [&](std::string_view label) -> Result<LayoutT<std::size_t>> {
    if (strides.empty())
      ET_TRY(detail::contiguous_strides<std::size_t>(shape.span(), esize, {t.strides_.data(), t.rank_}, label));
    ET_TRY_ASSIGN(auto layout,
                  detail::compute_layout<std::size_t>(shape.span(), {t.strides_.data(), t.rank_}, esize, label));
    // Zero elements: extent 0, so this checks offset <= buffer_bytes (the offset is kept, never reset).
    ET_TRY(detail::check_fits<std::size_t>(offset, layout.extent_bytes, storage->buffer_bytes(), label));
    return layout;
  };
  auto checked = check(what);
  if (!checked) checked = check(text::format("{} {}", what, dtype_name(dtype)));
  ET_TRY_ASSIGN(auto layout, std::move(checked));
  t.element_count_ = layout.element_count;
  t.extent_bytes_ = layout.extent_bytes;
  t.offset_bytes_ = offset;
  t.storage_ = std::move(storage);
  t.meta_ = std::move(meta);
  return t;
}

std::shared_ptr<const TensorMeta> TensorAccess::named(std::string name) {
  if (name.empty()) return nullptr;
  return std::make_shared<const TensorMeta>(TensorMeta{.name = std::move(name)});
}

Result<TensorDyn> TensorAccess::import(std::unique_ptr<Backing> backing, ArrayRef<std::size_t> shape, DType dtype,
                                       const ImportOptions& options, std::shared_ptr<void> keep_alive) {
  auto storage = std::make_shared<Storage>(std::move(backing));
  storage->set_keep_alive(std::move(keep_alive));
  return make(std::move(storage), shape, dtype, options.strides_bytes, options.offset_bytes, named(options.name),
              "import");
}
}  // namespace detail
using detail::TensorAccess;
using detail::ViewOp;

namespace detail {
Result<TensorDyn> tensor_from_backing(std::unique_ptr<Backing> backing, ArrayRef<std::size_t> shape, DType dtype,
                                      const ImportOptions& options) {
  return TensorAccess::import(std::move(backing), shape, dtype, options);
}
}  // namespace detail

namespace {

bool force_heap() {
  const char* v = std::getenv("EDGETENSOR_FORCE_MEM");
  return v && std::strcmp(v, "1") == 0;
}

Result<std::unique_ptr<Backing>> allocate_backing(std::size_t bytes, const AllocateOptions& options) {
  if (options.memory != MemoryKind::Auto) return detail::backend_ops(options.memory).allocate(bytes, options);
  if (force_heap()) {
    detail::log(LogLevel::Debug, "EDGETENSOR_FORCE_MEM=1: heap for {} B", bytes);
    return detail::backend_ops(MemoryKind::Heap).allocate(bytes, options);
  }
  std::string tried;
  for (MemoryKind k : {MemoryKind::DmaBuf, MemoryKind::Shm}) {
    const detail::BackendOps& ops = detail::backend_ops(k);
    if (ops.auto_skips != nullptr && ops.auto_skips(options)) continue;  // known to fail: nothing to ask
    auto backing = ops.allocate(bytes, options);
    if (backing) return backing;
    // InvalidArgument is a configuration mistake (an allocator's heap_dir that is a file, say). With an
    // allocator the caller named, it is theirs: returned, not hidden behind another memory kind. With
    // the process default (the system's own paths), the program still runs: a Warning, and Auto goes on.
    const bool mistake = backing.error().code() == ErrorCode::InvalidArgument;
    if (mistake && k == MemoryKind::DmaBuf && options.dmabuf_allocator)
      return fail(backing.error().code(),
                  text::format("auto allocation of {} B: the named dmabuf_allocator: {}", bytes, backing.error().message()),
                  backing.error().sys_errno());
    detail::log(mistake ? LogLevel::Warning : LogLevel::Debug, "auto allocation of {} B: {} failed ({}), falling back",
                bytes, memory_kind_name(k), backing.error().to_string());
  }
  return detail::backend_ops(MemoryKind::Heap).allocate(bytes, options);
}

}  // namespace

Result<TensorDyn> TensorDyn::allocate(ArrayRef<std::size_t> shape, DType dtype, const AllocateOptions& options) {
  if (!dtype_is_valid(dtype))
    return fail(ErrorCode::InvalidArgument, text::format("allocate: invalid dtype {}", static_cast<int>(dtype)));
  if (shape.size() > kMaxRank)
    return fail(ErrorCode::InvalidArgument,
                text::format("allocate: rank {} exceeds the maximum rank {}", shape.size(), kMaxRank));
  // Each reaches the kernel as a C string (the name as a memfd or DMA-BUF name, the heap in a path).
  ET_TRY(detail::check_c_string(options.name, "AllocateOptions::name"));
  ET_TRY(detail::check_c_string(options.dma_heap, "AllocateOptions::dma_heap"));
  ET_TRY(detail::check_c_string(options.shm_name, "AllocateOptions::shm_name"));
  if (!options.shm_name.empty() && options.memory != MemoryKind::Shm)
    return fail(ErrorCode::InvalidArgument,
                text::format("allocate: shm_name '{}' needs memory Shm, not {}", options.shm_name,
                            memory_kind_name(options.memory)));
  // Checked here too (not only in the backend): a zero-element tensor never reaches the backend.
  if (options.memory == MemoryKind::GlPbo && !options.gl_context)
    return fail(ErrorCode::InvalidArgument,
                "allocate with memory gl_pbo: AllocateOptions::gl_context is null; create one with gl::Context::create()");
  if (options.memory == MemoryKind::Foreign)
    return fail(ErrorCode::InvalidArgument, "allocate: memory foreign cannot be allocated (foreign memory is "
                                            "imported from another library with dlpack::adopt_versioned)");
  if (static_cast<int>(options.memory) > static_cast<int>(MemoryKind::GlPbo))
    return fail(ErrorCode::InvalidArgument,
                text::format("allocate: invalid memory kind {}", static_cast<int>(options.memory)));
  if (!options.shm_name.empty()) ET_TRY(detail::check_shm_name(options.shm_name, "AllocateOptions::shm_name"));
  std::array<std::int64_t, kMaxRank> strides{};
  ET_TRY_ASSIGN(std::size_t bytes,
                detail::contiguous_strides<std::size_t>(shape.span(), dtype_size(dtype), {strides.data(), shape.size()},
                                                        "allocate", dtype_name(dtype)));
  std::unique_ptr<Backing> backing;
  if (bytes == 0) {
    // A named object exists to be opened by peers; we never create a 0-byte one (tensor.h preamble).
    if (!options.shm_name.empty())
      return fail(ErrorCode::InvalidArgument,
                  text::format("allocate: tensor [{}] has zero elements, so it makes no buffer, but shm_name '{}' "
                              "asks for a named object for peers to open; leave shm_name empty",
                              text::join(shape, ", "), options.shm_name));
    // Kernels refuse 0-byte DMA-BUFs and GL buffers: an empty tensor makes no allocation anywhere.
    backing = detail::make_empty_backing(options.memory == MemoryKind::Auto ? MemoryKind::Heap : options.memory);
  } else {
    ET_TRY_ASSIGN(backing, allocate_backing(bytes, options));
  }
  // The strides computed above are the tensor's (C-contiguous): make() takes them instead of deriving them again.
  return TensorAccess::make(std::make_shared<Storage>(std::move(backing)), shape, dtype,
                            ArrayRef<std::int64_t>(strides.data(), shape.size()), 0, TensorAccess::named(options.name),
                            "allocate");
}

namespace detail {
Result<TensorDyn> tensor_from_fd(UniqueFd fd, const FdInfo& info, ArrayRef<std::size_t> shape, DType dtype,
                                 const ImportOptions& options, std::shared_ptr<void> keep_alive) {
  ET_TRY_ASSIGN(auto backing, backend_ops(info.kind).import_fd(std::move(fd), info));
  return TensorAccess::import(std::move(backing), shape, dtype, options, std::move(keep_alive));
}
}  // namespace detail

namespace {
// Shared memory its owner can still shrink: touching the lost pages would kill this process with
// SIGBUS (the library installs no handler), so it is refused unless the caller trusts the peer.
Result<void> check_not_shrinkable(int fd, const detail::FdInfo& info, const ImportOptions& options) {
  if (info.kind != MemoryKind::Shm || (info.seals & F_SEAL_SHRINK) || options.allow_shrinkable) return {};
  // F_SEAL_SEAL without F_SEAL_SHRINK: the kernel's mark on every file that can never be sealed.
  const bool sealable = !(info.seals & F_SEAL_SEAL);
  return fail(ErrorCode::InvalidArgument,
              text::format("fd {} ({}, seals {}) is not sealed with F_SEAL_SHRINK: its owner can truncate it, and this "
                          "process would then die of SIGBUS touching the lost pages; {}, or set "
                          "ImportOptions::allow_shrinkable = true for a peer trusted never to truncate it",
                          fd, info.what, detail::seal_names(info.seals),
                          sealable ? "seal it with F_SEAL_SHRINK first (this memfd allows sealing)"
                                   : "it can never be sealed (only a memfd made with MFD_ALLOW_SEALING can): ask "
                                     "its owner for one sealed with F_SEAL_SHRINK"));
}
}  // namespace

Result<TensorDyn> TensorDyn::adopt_fd(UniqueFd fd, ArrayRef<std::size_t> shape, DType dtype,
                                      const ImportOptions& options) {
  return adopt_fd(std::move(fd), shape, dtype, options, nullptr);
}

Result<TensorDyn> TensorDyn::adopt_fd(UniqueFd fd, ArrayRef<std::size_t> shape, DType dtype,
                                      const ImportOptions& options, std::shared_ptr<void> keep_alive) {
  ET_TRY_ASSIGN(auto info, detail::probe_fd(fd.get()));
  ET_TRY(check_not_shrinkable(fd.get(), info, options));  // `fd` and `keep_alive` go on return
  return detail::tensor_from_fd(std::move(fd), info, shape, dtype, options, std::move(keep_alive));
}

Result<TensorDyn> TensorDyn::import_fd_dup(int borrowed_fd, ArrayRef<std::size_t> shape, DType dtype,
                                           const ImportOptions& options) {
  return import_fd_dup(borrowed_fd, shape, dtype, options, nullptr);
}

Result<TensorDyn> TensorDyn::import_fd_dup(int borrowed_fd, ArrayRef<std::size_t> shape, DType dtype,
                                           const ImportOptions& options, std::shared_ptr<void> keep_alive) {
  // Probe the caller's fd before duplicating, so a bad fd is named as the caller passed it. The dup
  // shares the open file description (same inode, size, access mode and seals): no second probe.
  ET_TRY_ASSIGN(auto info, detail::probe_fd(borrowed_fd));
  ET_TRY(check_not_shrinkable(borrowed_fd, info, options));
  ET_TRY_ASSIGN(auto fd, UniqueFd::duplicate(borrowed_fd));
  return detail::tensor_from_fd(std::move(fd), info, shape, dtype, options, std::move(keep_alive));
}

std::size_t TensorDyn::buffer_bytes() const noexcept { return storage_ ? storage_->buffer_bytes() : 0; }

const std::string& TensorDyn::name() const noexcept {
  static const std::string none;
  return meta_ ? meta_->name : none;
}
void TensorDyn::set_name(std::string name) {
  meta_ = TensorAccess::edited(*this, [&](detail::TensorMeta& m) { m.name = std::move(name); });
}

bool TensorDyn::is_contiguous() const noexcept {
  // A tensor that reaches no byte is contiguous whatever its strides (C-contiguous ones count a 0 as 1).
  if (element_count_ == 0) return true;
  std::size_t expected = element_size();
  for (std::size_t i = rank_; i-- > 0;) {
    if (shape_[i] != 1 && static_cast<std::size_t>(strides_[i]) != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

MemoryKind TensorDyn::memory() const noexcept { return storage_ ? storage_->kind() : MemoryKind::Auto; }
std::string TensorDyn::memory_detail() const { return storage_ ? storage_->backing().detail() : "no storage"; }
bool TensorDyn::read_only() const noexcept { return storage_ && storage_->backing().read_only(); }

BufferIdentity TensorDyn::identity() const {
  if (!storage_) return {};
  return BufferIdentity(storage_->id(), std::weak_ptr<const void>(storage_));
}

BufferKey TensorDyn::buffer_key() const { return storage_ ? BufferKey(storage_->buffer_key()) : BufferKey(); }

bool TensorDyn::same_buffer(const TensorDyn& other) const noexcept {
  if (!storage_ || !other.storage_) return false;
  if (storage_ == other.storage_) return true;
  if (storage_->kind() != other.storage_->kind() || storage_->buffer_bytes() == 0) return false;
  return storage_->backing().object_key() == other.storage_->backing().object_key();
}

Result<TensorDyn> TensorDyn::batch(std::size_t n) const {
  if (!storage_) return fail(ErrorCode::FailedPrecondition, "batch: tensor has no storage");
  if (rank_ == 0) return fail(ErrorCode::FailedPrecondition, "batch: a rank-0 tensor has no leading dimension");
  if (n >= shape_[0])
    return fail(ErrorCode::OutOfRange, text::format("batch {} out of range: the leading dimension has {}", n, shape_[0]));
  // Checked: with zero elements the strides were never bounded by an extent, so n * stride[0] may overflow.
  auto step = detail::checked_mul<std::size_t>(n, static_cast<std::size_t>(strides_[0]));
  auto offset = step ? detail::checked_add<std::size_t>(offset_bytes_, *step) : std::nullopt;
  if (!offset)
    return fail(ErrorCode::OutOfRange, text::format("batch {}: offset {} B + {} x stride {} B overflows", n,
                                                    offset_bytes_, n, strides_[0]));
  TensorDyn t = *this;
  t.offset_bytes_ = *offset;
  t.rank_ = static_cast<std::uint8_t>(rank_ - 1);
  std::copy(shape_.begin() + 1, shape_.begin() + rank_, t.shape_.begin());
  std::copy(strides_.begin() + 1, strides_.begin() + rank_, t.strides_.begin());
  t.shape_[t.rank_] = 0;
  t.strides_[t.rank_] = 0;
  auto layout = detail::compute_layout<std::size_t>({t.shape_.data(), t.rank_}, {t.strides_.data(), t.rank_},
                                                    element_size(), "batch");
  t.element_count_ = layout->element_count;
  t.extent_bytes_ = layout->extent_bytes;
  // A zero-element batch keeps its offset, checked like any (a non-empty one lies inside its parent).
  if (t.element_count_ == 0) ET_TRY(detail::check_fits<std::size_t>(t.offset_bytes_, 0, buffer_bytes(), "batch"));
  ET_TRY(TensorAccess::carry_metadata(*this, t, {ViewOp::Batch, n}));
  return t;
}

Result<TensorDyn> TensorDyn::view(std::size_t offset, ArrayRef<std::size_t> shape, ArrayRef<std::int64_t> strides) const {
  if (!storage_) return fail(ErrorCode::FailedPrecondition, "view: tensor has no storage");
  auto abs = detail::checked_add<std::size_t>(offset_bytes_, offset);
  if (!abs) return fail(ErrorCode::OutOfRange, text::format("view: offset {} B + {} B overflows", offset_bytes_, offset));
  ET_TRY_ASSIGN(auto t, TensorAccess::make(storage_, shape, dtype_, strides, *abs, meta_, "view"));
  ET_TRY(TensorAccess::carry_metadata(*this, t, {ViewOp::View}));
  return t;
}

Result<TensorDyn> TensorDyn::reshape(ArrayRef<std::size_t> shape) const {
  if (!storage_) return fail(ErrorCode::FailedPrecondition, "reshape: tensor has no storage");
  if (!is_contiguous())
    return fail(ErrorCode::FailedPrecondition,
                text::format("reshape: tensor [{}] with strides [{}] is not contiguous", text::join(shape_.begin(), shape_.begin() + rank_, ", "),
                            text::join(strides_.begin(), strides_.begin() + rank_, ", ")));
  std::size_t count = 1;
  for (std::size_t d : shape) {
    auto c = detail::checked_mul<std::size_t>(count, d);
    if (!c) return fail(ErrorCode::OutOfRange, text::format("reshape to [{}]: element count overflows", text::join(shape, ", ")));
    count = *c;
  }
  if (count != element_count_)
    return fail(ErrorCode::InvalidArgument,
                text::format("reshape [{}] ({} elements) to [{}] ({} elements): counts differ",
                            text::join(shape_.begin(), shape_.begin() + rank_, ", "), element_count_,
                            text::join(shape, ", "), count));
  ET_TRY_ASSIGN(auto t, TensorAccess::make(storage_, shape, dtype_, {}, offset_bytes_, meta_, "reshape"));
  ET_TRY(TensorAccess::carry_metadata(*this, t, {ViewOp::Reshape}));
  return t;
}

Result<MapBase> TensorDyn::map_impl(MapMode mode, const MapOptions& options) const {
  if (!storage_) return fail(ErrorCode::FailedPrecondition, "map: tensor has no storage");
  if (const ImageLayout* layout = image_layout(); layout && layout->modifier != kDrmFormatModLinear)
    return fail(ErrorCode::Unsupported,
                text::format("map: DRM format modifier 0x{:016x} is not LINEAR (0): the CPU layout of a tiled or "
                            "compressed image is opaque; export or send it instead", layout->modifier));
  if (extent_bytes_ == 0) {
    if ((static_cast<unsigned>(mode) & 2u) && storage_->backing().read_only())
      return fail(ErrorCode::PermissionDenied, "write map refused: storage is read-only");
    return MapBase(nullptr, nullptr, 0, mode);  // an empty tensor maps to an empty span
  }
  ET_TRY_ASSIGN(std::byte* base, storage_->acquire_cpu(mode, options.timeout));
  return MapBase(storage_, base + offset_bytes_, extent_bytes_, mode);
}

Result<MapBase> TensorDyn::map_impl(MapMode mode) const { return map_impl(mode, MapOptions{}); }

Result<ReadMap> TensorDyn::map_read() const { return map_read(MapOptions{}); }
Result<WriteMap> TensorDyn::map_write() const { return map_write(MapOptions{}); }
Result<ReadWriteMap> TensorDyn::map_read_write() const { return map_read_write(MapOptions{}); }
Result<ReadMap> TensorDyn::map_read(const MapOptions& options) const {
  ET_TRY_ASSIGN(auto m, map_impl(MapMode::Read, options));
  return ReadMap(std::move(m));
}
Result<WriteMap> TensorDyn::map_write(const MapOptions& options) const {
  ET_TRY_ASSIGN(auto m, map_impl(MapMode::Write, options));
  return WriteMap(std::move(m));
}
Result<ReadWriteMap> TensorDyn::map_read_write(const MapOptions& options) const {
  ET_TRY_ASSIGN(auto m, map_impl(MapMode::ReadWrite, options));
  return ReadWriteMap(std::move(m));
}

Result<void> TensorDyn::copy_to(std::span<std::byte> destination) const {
  if (!storage_) return fail(ErrorCode::FailedPrecondition, "copy_to: tensor has no storage");
  const std::size_t packed = packed_bytes();
  if (destination.size() < packed)
    return fail(ErrorCode::OutOfRange,
                text::format("copy_to: destination of {} B is smaller than tensor [{}]'s {} B of elements",
                             destination.size(), text::join(shape_.begin(), shape_.begin() + rank_, ", "), packed));
  if (packed == 0) return {};
  ET_TRY_ASSIGN(auto in, map_read());
  const std::byte* src = in.data();
  std::byte* dst = destination.data();
  if (dst < src + extent_bytes_ && src < dst + packed)
    return fail(ErrorCode::InvalidArgument,
                text::format("copy_to: destination [{}, +{} B) overlaps the tensor's bytes [{}, +{} B)",
                             static_cast<const void*>(dst), packed, static_cast<const void*>(src), extent_bytes_));
  // Dims [outer, rank) form one run of `run` bytes contiguous in memory: the innermost dims whose strides
  // are those of a packed tensor (a dim of size 1 never breaks a run).
  std::size_t outer = rank_;
  std::size_t run = element_size();
  while (outer > 0 && (shape_[outer - 1] == 1 || static_cast<std::size_t>(strides_[outer - 1]) == run)) {
    run *= shape_[outer - 1];
    --outer;
  }
  std::array<std::size_t, kMaxRank> index{};
  std::size_t offset = 0;  // of the current run from the first element
  for (std::size_t done = 0; done < packed; done += run) {
    std::memcpy(dst + done, src + offset, run);
    for (std::size_t d = outer; d-- > 0;) {  // next index in C order over dims [0, outer)
      const auto stride = static_cast<std::size_t>(strides_[d]);
      if (++index[d] < shape_[d]) {
        offset += stride;
        break;
      }
      offset -= (shape_[d] - 1) * stride;
      index[d] = 0;
    }
  }
  return {};
}

Result<TensorDyn> TensorDyn::contiguous(const AllocateOptions& options) const {
  if (!storage_) return fail(ErrorCode::FailedPrecondition, "contiguous: tensor has no storage");
  ET_TRY_ASSIGN(auto out, allocate(shape(), dtype_, options));
  if (packed_bytes() != 0) {
    ET_TRY_ASSIGN(auto m, out.map_write());
    ET_TRY(copy_to(m.bytes()));
  }
  out.set_colorimetry(colorimetry());
  if (quantization_.kind() != QuantizationKind::None) ET_TRY(out.set_quantization(quantization_));
  return out;
}

Result<UniqueFd> TensorDyn::export_fd() const {
  if (!storage_) return fail(ErrorCode::FailedPrecondition, "export_fd: tensor has no storage");
  // First, whatever the memory and whatever the storage holds (tensor.h: the zero-element rule).
  if (element_count_ == 0)
    return fail(ErrorCode::FailedPrecondition,
                text::format("export_fd: tensor [{}] has zero elements: nothing to share",
                            text::join(shape_.begin(), shape_.begin() + rank_, ", ")));
  return storage_->backing().export_fd();
}

// ---- MapBase ------------------------------------------------------------------------------------
MapBase::MapBase(MapBase&& o) noexcept
    : storage_(std::move(o.storage_)), data_(o.data_), extent_bytes_(o.extent_bytes_), mode_(o.mode_) {
  o.data_ = nullptr;
  o.extent_bytes_ = 0;
}
MapBase& MapBase::operator=(MapBase&& o) noexcept {
  if (this != &o) {
    unmap();
    storage_ = std::move(o.storage_);
    data_ = o.data_;
    extent_bytes_ = o.extent_bytes_;
    mode_ = o.mode_;
    o.data_ = nullptr;
    o.extent_bytes_ = 0;
  }
  return *this;
}
MapBase::~MapBase() { unmap(); }
void MapBase::unmap() noexcept {
  if (storage_) storage_->release_cpu(mode_);
  storage_.reset();
  data_ = nullptr;
  extent_bytes_ = 0;
}

// ---- Backend status ------------------------------------------------------------------------------
BackendStatus backend_status(MemoryKind kind) {
  if (kind == MemoryKind::Auto) {
    for (MemoryKind k : {MemoryKind::DmaBuf, MemoryKind::Shm}) {
      auto s = detail::backend_ops(k).status();
      if (s.available && !force_heap()) return {MemoryKind::Auto, true, true, text::format("{} ({})", memory_kind_name(k), s.detail)};
    }
    return {MemoryKind::Auto, true, true, force_heap() ? "heap (EDGETENSOR_FORCE_MEM=1)" : "heap"};
  }
  if (kind == MemoryKind::Foreign)
    return {MemoryKind::Foreign, true, false, "foreign memory is imported through DLPack, never allocated"};
  return detail::backend_ops(kind).status();
}

}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
