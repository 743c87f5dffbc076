// SPDX-License-Identifier: Apache-2.0
// TensorDyn (dtype-erased) and Tensor<T> (typed face): storage + dtype + shape + strides + offset.
//
// Units (one vocabulary across the library: tensor.h, map.h, cuda.h, gl.h):
//   shape            elements per dimension
//   strides          bytes between neighbours along a dimension (DLPack counts elements: convert there)
//   offset_bytes     bytes from the start of the backing buffer to the first element
//   packed_bytes     element_count x element size: the elements alone, as a C-contiguous copy holds them
//   extent_bytes     bytes from the first element to one past the last reachable one: what a CPU map
//                    (MapBase::extent_bytes) or a cuda::CudaMap covers; >= packed_bytes, equal when contiguous
//   buffer_bytes     the whole backing buffer (its real size; an fd import may be larger than the view)
// For a strided view packed_bytes <= extent_bytes <= buffer_bytes - offset_bytes, and all three may
// differ. Strides are non-negative multiples of the element size; a zero stride is allowed only on a
// dimension of size 1. Rank is 0 to kMaxRank. All size arithmetic is checked: an overflow is an
// OutOfRange error naming the values, never a wrap.
//
// Zero elements (a 0 in the shape), the same on every backend: such a tensor reaches no byte.
// allocate validates every argument exactly as for a non-empty tensor (dtype, rank, memory kind,
// gl_context, shm_name syntax), then makes no buffer: buffer_bytes() is 0 and memory() is the kind
// asked for (Heap for Auto); with a shm_name it is refused (InvalidArgument naming shape and name), as
// no 0-byte named object is ever created for peers to open. view, batch, reshape and imports keep the
// offset they are given and check it like any (a multiple of the element size, <= buffer_bytes):
// never reset, never clamped. Maps are empty (data() null, extent 0); write maps of read-only storage
// are still refused. export_fd and ipc::send refuse it with FailedPrecondition ("tensor [0, 3] has
// zero elements: nothing to share") before looking at its memory, even when its storage holds a
// buffer (a zero-element view of a non-empty tensor, an imported 0-byte memfd); ipc::receive refuses a
// header whose shape has zero elements (InvalidArgument). A zero-element tensor is contiguous.
//
// Ownership: a TensorDyn holds a shared reference to its storage; copies, views, batches and maps all
// share it, so the bytes live until the last of them is gone. Thread rules: a TensorDyn is a value;
// distinct tensors (also over the same storage) may be used from any threads at once. Maps of the same
// storage from several threads are safe.
#pragma once

#include <edgetensor/array_ref.h>
#include <edgetensor/dtype.h>
#include <edgetensor/error.h>
#include <edgetensor/export.h>
#include <edgetensor/image.h>
#include <edgetensor/map.h>
#include <edgetensor/memory.h>
#include <edgetensor/quantization.h>
#include <edgetensor/unique_fd.h>

#include <array>
#include <compare>
#include <functional>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {

namespace dmabuf {
class Allocator;
}
namespace gl {
class Context;
}
namespace detail {
struct StorageAccess;  // defined inside the library only (src/core/storage.h)
struct TensorAccess;   // defined inside the library only (src/core/tensor.cpp)
struct TensorMeta;     // defined inside the library only (src/core/tensor_access.h)
}

inline constexpr std::size_t kMaxRank = 8;

/// Options for TensorDyn::allocate.
struct AllocateOptions {
  /// Which backend. Auto: DMA-BUF -> shm -> heap (EDGETENSOR_FORCE_MEM=1: heap); the tensor's
  /// memory() says which served; a named dmabuf_allocator that is misconfigured (InvalidArgument) stops
  /// Auto with its error. An explicit kind never falls back: it fails with that backend's error
  /// (except with zero elements, which contact no backend at all: see the zero-element rule above).
  MemoryKind memory = MemoryKind::Auto;
  /// Tensor name; also names the memfd (visible in /proc/<pid>/fd) and, later, the DMA-BUF.
  std::string name;
  /// With memory == Shm: create a named POSIX shm object (e.g. "/cam0") with O_EXCL instead of an
  /// anonymous memfd. Its pages are reserved (posix_fallocate). It stays in /dev/shm until
  /// shm::remove(name). Note: such objects cannot be sealed; prefer memfd for sharing.
  /// The anonymous memfd is sealed F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL (fcntl(2), "File
  /// sealing"): its size is fixed, and no process can add a seal, so a receiver of its fd cannot
  /// lock this process out with F_SEAL_WRITE or F_SEAL_FUTURE_WRITE; for the same reason the owner
  /// can never make the buffer read-only later.
  std::string shm_name;
  /// With DMA-BUF: require this dma-heap by name (no fallback to other heaps). Empty = probe order.
  std::string dma_heap;
  /// With DMA-BUF (or Auto): the allocator that serves (dmabuf.h; shared: copies of these options,
  /// e.g. a Pool's, keep it alive). Null = dmabuf::default_allocator().
  std::shared_ptr<dmabuf::Allocator> dmabuf_allocator;
  /// With memory == GlPbo: the context that owns the buffer.
  std::shared_ptr<gl::Context> gl_context;
};

/// Options for importing an fd.
struct ImportOptions {
  /// Byte offset of the first element inside the fd's buffer.
  std::size_t offset_bytes = 0;
  /// Strides in bytes; empty = C-contiguous.
  std::vector<std::int64_t> strides_bytes;
  std::string name;
  /// Accept shared memory whose owner can still shrink it: a memfd without F_SEAL_SHRINK, a named
  /// POSIX shm object, any tmpfs/hugetlbfs file. Set it only for a peer you trust never to truncate
  /// it: if it does, touching the lost pages kills this process with SIGBUS (mmap(2); the library
  /// installs no signal handler). DMA-BUFs cannot shrink and are unaffected.
  bool allow_shrinkable = false;
};

/// A process-unique id minted per allocation and per import, plus a weak liveness token: caches can key
/// on it without keeping buffers alive. Importing the same buffer twice gives two identities (compare
/// the underlying object with TensorDyn::same_buffer or TensorDyn::buffer_key). Each acquisition from a
/// Pool (pool.h) counts as an allocation: a new id, alive() until that acquisition's holders are gone.
class ET_API BufferIdentity {
 public:
  BufferIdentity() = default;
  BufferIdentity(std::uint64_t id, std::weak_ptr<const void> token) : id_(id), token_(std::move(token)) {}
  /// Never 0 for a tensor's identity.
  std::uint64_t id() const noexcept { return id_; }
  /// False once the last holder (tensor, view, map, capsule, device handle) of the storage is gone.
  bool alive() const noexcept { return !token_.expired(); }
  friend bool operator==(const BufferIdentity& a, const BufferIdentity& b) noexcept { return a.id_ == b.id_; }

 private:
  std::uint64_t id_ = 0;
  std::weak_ptr<const void> token_;
};

/// A key of the underlying buffer object (a memfd or tmpfs file, a DMA-BUF, a heap block, a GL buffer):
/// equal for every tensor in this process that reaches that object while one of them is alive, also
/// through separate imports of it (the object TensorDyn::same_buffer compares), and never given to
/// another object. Keys come from a process-wide 64-bit counter, not from the inode: tmpfs reuses the
/// inode number of a freed file, and the new file still gets a new key. Once the last tensor of a buffer
/// is gone its key is retired; a later import of the same object gets a new one, so a cache keyed on
/// it must hold a tensor of each buffer it keeps. A pool's buffer keeps its key across acquisitions.
/// 0 means no buffer (an empty handle). Hashable (std::hash) and ordered.
class BufferKey {
 public:
  constexpr BufferKey() noexcept = default;
  constexpr explicit BufferKey(std::uint64_t value) noexcept : value_(value) {}
  constexpr std::uint64_t value() const noexcept { return value_; }
  friend constexpr bool operator==(BufferKey, BufferKey) noexcept = default;
  friend constexpr auto operator<=>(BufferKey, BufferKey) noexcept = default;

 private:
  std::uint64_t value_ = 0;
};

/// A tensor whose element type is known at run time.
class ET_API TensorDyn {
 public:
  /// An empty handle (no storage); most calls on it fail with FailedPrecondition. Use allocate/import.
  TensorDyn() = default;

  /// Allocates a C-contiguous tensor of `shape` (elements) and `dtype`. Contents read as zeros.
  /// A tensor with a zero dimension makes no backing allocation whatever memory is asked for (the
  /// zero-element rule above). Errors: InvalidArgument (rank > kMaxRank, invalid dtype, named shm
  /// without Shm, a bad shm_name, a shm_name with zero elements, a NUL byte in name, shm_name or
  /// dma_heap, naming the field and the byte),
  /// OutOfRange (byte size overflows), the backend's error for an explicit kind (Unavailable when not
  /// built or no device, OutOfMemory, PermissionDenied, AlreadyExists for a taken shm name).
  [[nodiscard]] static Result<TensorDyn> allocate(ArrayRef<std::size_t> shape, DType dtype,
                                                  const AllocateOptions& options = {});

  /// Allocates an image with all planes in one buffer: a U8 tensor [bytes] with `layout` attached.
  /// The first overload allocates ImageLayout::allocation_bytes with the default layout; the second
  /// allocates layout.min_buffer_bytes() for a layout of the caller's (which must validate).
  /// Errors: as ImageLayout::make / validate, then as allocate.
  [[nodiscard]] static Result<TensorDyn> allocate_image(std::uint32_t width, std::uint32_t height, PixelFormat format,
                                                        ImageAlignment alignment = {},
                                                        const AllocateOptions& options = {});
  [[nodiscard]] static Result<TensorDyn> allocate_image(const ImageLayout& layout, const AllocateOptions& options = {});
  /// Imports an image held in one buffer (as import_fd_dup: the fd is dup'd): a U8 tensor
  /// [layout.min_buffer_bytes()] at options.offset_bytes, with `layout` attached (its offsets count from
  /// options.offset_bytes). The buffer must hold offset + min_buffer_bytes (a tight last row is enough).
  /// options.strides_bytes must be empty. Errors: the layout's validation; InvalidArgument for a
  /// 16-bit format (P010, Y16) at an odd offset_bytes (naming it and the sample size); then as
  /// import_fd_dup (OutOfRange naming the buffer size and what the layout needs).
  [[nodiscard]] static Result<TensorDyn> import_image_dup(int borrowed_fd, const ImageLayout& layout,
                                                          const ImportOptions& options = {});
  /// As import_image_dup, with a keep-alive held as import_fd_dup's overload below holds it.
  [[nodiscard]] static Result<TensorDyn> import_image_dup(int borrowed_fd, const ImageLayout& layout,
                                                          const ImportOptions& options,
                                                          std::shared_ptr<void> keep_alive);

  /// Imports a borrowed fd: the library dups it (CLOEXEC); the caller keeps and closes its own fd.
  /// Recognises the fd from the kernel's answers (fstatfs magic, seals): shared memory (memfd or any
  /// tmpfs/hugetlbfs file) or a DMA-BUF. Reads the real size without moving the file offset and refuses
  /// one smaller than offset + extent (OutOfRange, naming both numbers). An fd opened O_RDONLY, or a
  /// memfd sealed against writes, gives read-only storage (write maps fail with PermissionDenied).
  /// Shared memory must be sealed F_SEAL_SHRINK (as every memfd tensor allocated here is) unless
  /// options.allow_shrinkable: otherwise its owner could truncate it under this process's mapping.
  /// Errors: InvalidArgument (negative or closed fd; a pipe, socket, directory, or a file on a disk
  /// filesystem, named; shared memory not sealed F_SEAL_SHRINK, naming the fd and both remedies),
  /// OutOfRange, Unavailable (DMA-BUF backend not built).
  [[nodiscard]] static Result<TensorDyn> import_fd_dup(int borrowed_fd, ArrayRef<std::size_t> shape,
                                                       DType dtype, const ImportOptions& options = {});
  /// Like import_fd_dup but takes ownership of `fd` (closed on success when the storage goes, and on
  /// every error path before returning).
  [[nodiscard]] static Result<TensorDyn> adopt_fd(UniqueFd fd, ArrayRef<std::size_t> shape, DType dtype,
                                                  const ImportOptions& options = {});
  /// As import_fd_dup / adopt_fd, and the new storage holds `keep_alive` (the owner of memory the fd
  /// reaches, e.g. a GstBuffer that must not go back to its pool while this process reads it): a copy of
  /// it is dropped when the storage goes, after its mapping and its fd are closed: when the last tensor,
  /// view, map, Frame, pool or channel hold of it is gone (a channel sender drops its hold when the
  /// receiver releases the frame). That drop runs on the thread that lets the last hold go: the caller's,
  /// or a channel's release reader thread; a deleter must not block for long nor call into that channel.
  /// On failure no copy is kept: the library's copies are dropped before the call returns (a keep_alive
  /// moved in as the only reference runs its deleter then, on the calling thread). Null: no keep-alive.
  /// Storage whose memory is abandoned (device work outlived its teardown bound) keeps it forever.
  /// Errors: as import_fd_dup / adopt_fd.
  [[nodiscard]] static Result<TensorDyn> import_fd_dup(int borrowed_fd, ArrayRef<std::size_t> shape,
                                                       DType dtype, const ImportOptions& options,
                                                       std::shared_ptr<void> keep_alive);
  [[nodiscard]] static Result<TensorDyn> adopt_fd(UniqueFd fd, ArrayRef<std::size_t> shape, DType dtype,
                                                  const ImportOptions& options, std::shared_ptr<void> keep_alive);

  // ---- Description -------------------------------------------------------------------------------
  DType dtype() const noexcept { return dtype_; }
  std::size_t element_size() const noexcept { return dtype_size(dtype_); }
  std::size_t rank() const noexcept { return rank_; }
  /// Shape in elements.
  std::span<const std::size_t> shape() const noexcept { return {shape_.data(), rank_}; }
  /// Strides in bytes.
  std::span<const std::int64_t> strides() const noexcept { return {strides_.data(), rank_}; }
  /// Byte offset of the first element inside the storage.
  std::size_t offset_bytes() const noexcept { return offset_bytes_; }
  /// Product of the shape (1 for rank 0).
  std::size_t element_count() const noexcept { return element_count_; }
  /// element_count() * element_size(): the bytes of the elements themselves (a packed copy's size).
  std::size_t packed_bytes() const noexcept { return element_count_ * dtype_size(dtype_); }
  /// Bytes from the first element to one past the last reachable one (0 with zero elements); what a
  /// CPU map covers.
  std::size_t extent_bytes() const noexcept { return extent_bytes_; }
  /// Real size of the whole backing buffer in bytes (0 for a zero-element allocation; a zero-element
  /// view or import reports the buffer it lies in).
  std::size_t buffer_bytes() const noexcept;
  bool is_contiguous() const noexcept;
  bool is_empty_handle() const noexcept { return storage_ == nullptr; }
  /// The backend that holds the bytes.
  MemoryKind memory() const noexcept;
  /// What exactly serves, e.g. "memfd", "posix shm /cam0", "heap (mmap)", "dma-heap system".
  std::string memory_detail() const;
  /// True when write maps are refused (imported O_RDONLY or sealed F_SEAL_WRITE).
  bool read_only() const noexcept;
  /// Valid while this tensor (or a copy or view sharing its name) lives; empty when none was given.
  const std::string& name() const noexcept;
  /// Renames this tensor only: copies and views made before keep the old name. Allocates.
  void set_name(std::string name);

  // ---- Image, colorimetry, quantization (image.h, quantization.h) -------------------------------
  // What a copy or view keeps (per operation: docs/ARCHITECTURE.md, "Tensor metadata"): always
  // the name and colorimetry; the image layout only if offset, shape and strides are unchanged; the
  // pixel format only over the same bytes or a plane's samples; quantization per tensor, and per axis
  // while that axis survives. They share one immutable block (name, image, colorimetry) and never
  // allocate; a setter builds a new block for its tensor only.
  /// The layout of the image this tensor holds, offsets counted from its first element; nullptr when
  /// it holds no whole image (never set, dropped by a view, or a plane view). Valid while this tensor
  /// (or a copy or view sharing the layout) lives.
  const ImageLayout* image_layout() const noexcept;
  /// The pixel format of the image, or of the image this tensor is a plane of; Unknown otherwise.
  PixelFormat pixel_format() const noexcept;
  /// Which plane of pixel_format() this tensor views (0 to 3), or -1 (a whole image, or no image).
  int image_plane() const noexcept { return image_plane_; }
  const Colorimetry& colorimetry() const noexcept;
  const Quantization& quantization() const noexcept { return quantization_; }
  /// Attaches an image layout (and its format; image_plane() becomes -1). The layout must validate
  /// against the tensor's extent: every plane ends within extent_bytes() from the first element, no
  /// overlap (ImageLayout::validate(extent_bytes())). The tensor must be contiguous, and u8 or i8 for
  /// 8-bit formats (an int8 model input), u16 or u8 for formats whose samples are all 16-bit (Y16,
  /// P010): plane views are views of its bytes in that dtype, so a 16-bit format's planes must start on
  /// a sample counted from the buffer's start (offset_bytes() + plane offset even). Errors:
  /// FailedPrecondition (no storage, a strided tensor), the validation's InvalidArgument / OutOfRange
  /// naming plane, numbers and limit, InvalidArgument naming another dtype or an odd 16-bit plane start
  /// (the tensor's offset and the sample size).
  [[nodiscard]] Result<void> set_image_layout(const ImageLayout& layout);
  /// Removes the layout and the pixel format (from this tensor only).
  void clear_image_layout() noexcept;
  /// Sets this tensor's colorimetry only: copies and views made before keep theirs. Allocates.
  void set_colorimetry(const Colorimetry& colorimetry);
  /// Attaches a quantization after Quantization::check(dtype(), shape()). Errors: as check.
  [[nodiscard]] Result<void> set_quantization(Quantization quantization);
  BufferIdentity identity() const;
  /// True when both tensors reach the same underlying buffer object (same kernel file by device and
  /// inode, or the same heap block), even through separate imports.
  bool same_buffer(const TensorDyn& other) const noexcept;
  /// The key of the underlying buffer object (BufferKey above); BufferKey() for an empty handle.
  /// Lock-free and thread-safe (each allocation or import of fd-backed memory joins a process-wide
  /// table under one lock, and leaves it when its storage goes).
  BufferKey buffer_key() const;

  // ---- Views (share storage and identity; keep the storage alive) --------------------------------
  /// The n-th sub-tensor along dimension 0 (rank - 1). Errors: FailedPrecondition for rank 0,
  /// OutOfRange for n >= shape[0], or when a zero-element sub-tensor would start past the buffer's end
  /// (e.g. batch 1 of a fresh [2, 0, 3] tensor, whose buffer has 0 B).
  [[nodiscard]] Result<TensorDyn> batch(std::size_t n) const;
  /// A general view: `offset_bytes` relative to this tensor's first element, shape in elements,
  /// strides in bytes (empty = C-contiguous). Checked against the storage: out of bounds is an
  /// OutOfRange error, never a clamp. The offset must be a multiple of the element size; with zero
  /// elements it is kept and must be <= buffer_bytes().
  [[nodiscard]] Result<TensorDyn> view(std::size_t offset_bytes, ArrayRef<std::size_t> shape,
                                       ArrayRef<std::int64_t> strides_bytes = {}) const;
  /// Same bytes, new shape (same dtype and byte size). Errors: FailedPrecondition when not contiguous,
  /// InvalidArgument when the element counts differ.
  [[nodiscard]] Result<TensorDyn> reshape(ArrayRef<std::size_t> shape) const;
  /// Indices [begin, end) of dimension `dim`, same rank (numpy's t[..., begin:end, ...]). Errors:
  /// InvalidArgument (dim >= rank), OutOfRange (begin > end or end > shape[dim], naming them).
  [[nodiscard]] Result<TensorDyn> slice(std::size_t dim, std::size_t begin, std::size_t end) const;
  /// A view with a new dimension of size 1 inserted before dimension `dim` (0 to rank; numpy's
  /// expand_dims, torch's unsqueeze): CHW [3, h, w] -> NCHW [1, 3, h, w] with unsqueeze(0). Same bytes,
  /// no copy, works on strided views. Per-axis quantization moves with its axis (axis >= dim: axis + 1);
  /// other metadata as the metadata rule says (the geometry changes: an image layout is dropped, the
  /// format kept). Errors: FailedPrecondition (no storage), InvalidArgument (dim > rank, or
  /// the tensor already has kMaxRank dimensions, naming them).
  [[nodiscard]] Result<TensorDyn> unsqueeze(std::size_t dim) const;
  /// The view of image plane `index` with its natural shape and byte strides (rows row_stride apart):
  /// 1-byte samples give the tensor's dtype (U8, or I8 for an int8 tensor), 16-bit samples U16 (P010: the
  /// value is in the top 10 bits of each little-endian u16; pixel_format_info(format).planes[index]
  /// .significant_bits says how many bits carry it).
  ///   one sample per pixel (Grey, Y planes, I420 U/V, planar R/G/B, Bayer)  [rows, cols]
  ///   interleaved (Rgb [h, w, 3], Rgba [h, w, 4], NV12 UV [ceil(h/2), ceil(w/2), 2])  [rows, cols, samples]
  ///   packed 4:2:2 (Yuyv: [h, ceil(w/2), 4], one group of 2 pixels per entry)  [rows, groups, 4]
  /// It keeps pixel_format() and colorimetry, sets image_plane(), and keeps quantization per-tensor when
  /// the dtype is unchanged (a planar image quantized per channel on dimension 0 gives plane i channel
  /// i's parameters; other per-axis quantization is dropped). Errors:
  /// FailedPrecondition (no image layout), OutOfRange (index >= plane count), Unsupported (a
  /// non-linear DRM modifier, naming it in hex).
  [[nodiscard]] Result<TensorDyn> plane(std::size_t index) const;
  /// The whole image as one view, where one exists: a single-plane format gives plane(0) (Rgb [h, w, 3],
  /// Grey [h, w], Yuyv [h, ceil(w/2), 4]); a planar format whose planes share one row stride and lie
  /// equally far apart gives [planes, h, w] (PlanarRgb [3, h, w]: CHW, what models take). Keeps what
  /// plane() keeps; image_plane() is -1. Errors: as plane; FailedPrecondition for subsampled
  /// multi-plane formats (NV12, I420: use plane()) and for planes that are not evenly spaced.
  [[nodiscard]] Result<TensorDyn> image_view() const;

  // ---- CPU maps ----------------------------------------------------------------------------------
  /// Read access to the tensor's extent, waiting for a DMA-BUF's writers at most kDefaultMapTimeout
  /// (map.h). Errors: FailedPrecondition (no storage, GL context gone), Busy (PBO already mapped;
  /// a timeout of 0 with pending fences), Timeout (the buffer's fences did not signal in time, naming
  /// them), the
  /// backend's map/sync error.
  [[nodiscard]] Result<ReadMap> map_read() const;
  /// Write access, waiting for every user of a DMA-BUF. Errors as map_read, plus PermissionDenied on
  /// read-only storage.
  [[nodiscard]] Result<WriteMap> map_write() const;
  [[nodiscard]] Result<ReadWriteMap> map_read_write() const;
  /// As above, waiting for a DMA-BUF's fences at most options.timeout.
  [[nodiscard]] Result<ReadMap> map_read(const MapOptions& options) const;
  [[nodiscard]] Result<WriteMap> map_write(const MapOptions& options) const;
  [[nodiscard]] Result<ReadWriteMap> map_read_write(const MapOptions& options) const;

  // ---- Copies --------------------------------------------------------------------------------------
  /// Copies the elements, in C order (row-major), into `destination` through a CPU read map: a packed
  /// copy of packed_bytes() bytes at its start, whatever this view's strides (one memcpy per run of
  /// elements contiguous in memory). May wait as map_read does (a DMA-BUF fence, the GL thread).
  /// Errors: FailedPrecondition (no storage), OutOfRange (destination smaller than packed_bytes(),
  /// naming both sizes), InvalidArgument (destination overlaps the tensor's mapped bytes), map_read's.
  [[nodiscard]] Result<void> copy_to(std::span<std::byte> destination) const;
  /// A new C-contiguous tensor of the same shape and dtype, allocated as allocate(shape(), dtype(),
  /// options) and filled by copy_to. It keeps the quantization and the colorimetry; it carries no
  /// image layout or plane (its rows are packed). Errors: as allocate, then as copy_to, map_write.
  [[nodiscard]] Result<TensorDyn> contiguous(const AllocateOptions& options = {}) const;

  // ---- fd export ---------------------------------------------------------------------------------
  /// A new CLOEXEC fd of the whole backing buffer; the caller owns (closes) it. Pass offset_bytes(),
  /// shape and strides along so the receiver can import the same view.
  /// Errors: FailedPrecondition (no storage; zero elements, checked first: "tensor [0, 3] has zero
  /// elements: nothing to share"), Unsupported ("heap tensor is not shareable"; PBO), from_errno on
  /// dup failure (EMFILE -> Busy).
  [[nodiscard]] Result<UniqueFd> export_fd() const;

 private:
  friend struct detail::TensorAccess;  // builds tensors (src/core/tensor.cpp)
  // The storage is the library's alone (backends, IPC, CUDA and GL interop reach it through
  // detail::storage_of): with it, user code could build a map the storage never opened (map.h).
  friend struct detail::StorageAccess;
  const std::shared_ptr<detail::Storage>& storage() const noexcept { return storage_; }
  Result<MapBase> map_impl(MapMode mode, const MapOptions& options) const;
  // The exported symbol of the maps without options, kept so that this ABI only grows: MapOptions{}.
  Result<MapBase> map_impl(MapMode mode) const;

  // How much of meta_'s image this tensor shows: Whole (the layout applies), Samples (the format only:
  // a plane view, image_view, or the same bytes in another shape), or None.
  enum class ImageScope : std::uint8_t { None, Samples, Whole };

  std::shared_ptr<detail::Storage> storage_;
  // Name, image and colorimetry, shared by copies and views and never changed (a setter builds a new
  // block), so that copying it is one reference count; null when none was set.
  std::shared_ptr<const detail::TensorMeta> meta_;
  DType dtype_ = DType::U8;
  ImageScope image_scope_ = ImageScope::None;
  std::int8_t image_plane_ = -1;  // ImageScope::Samples only
  std::uint8_t rank_ = 0;
  std::array<std::size_t, kMaxRank> shape_{};
  std::array<std::int64_t, kMaxRank> strides_{};
  std::size_t offset_bytes_ = 0;
  std::size_t element_count_ = 0;
  std::size_t extent_bytes_ = 0;
  // Follows the geometry (its axis), so it is per view; its per-axis arrays are shared.
  Quantization quantization_;
};

/// The typed face of a TensorDyn whose dtype is DTypeOf<T>.
template <class T>
class Tensor {
 public:
  static constexpr DType kDType = DTypeOf<T>::value;

  [[nodiscard]] static Result<Tensor> allocate(ArrayRef<std::size_t> shape, const AllocateOptions& options = {}) {
    ET_TRY_ASSIGN(auto dyn, TensorDyn::allocate(shape, kDType, options));
    return Tensor(std::move(dyn));
  }
  /// Wraps a TensorDyn. Errors: InvalidArgument when its dtype is not DTypeOf<T>.
  [[nodiscard]] static Result<Tensor> from(TensorDyn dyn) {
    if (dyn.dtype() != kDType)
      return fail(ErrorCode::InvalidArgument, std::string("dtype mismatch: tensor is ") +
                                                  std::string(dtype_name(dyn.dtype())) + ", Tensor<T> wants " +
                                                  std::string(dtype_name(kDType)));
    return Tensor(std::move(dyn));
  }

  const TensorDyn& dyn() const noexcept { return dyn_; }
  std::span<const std::size_t> shape() const noexcept { return dyn_.shape(); }
  std::span<const std::int64_t> strides() const noexcept { return dyn_.strides(); }
  std::size_t element_count() const noexcept { return dyn_.element_count(); }

  [[nodiscard]] Result<TypedMap<const T, ReadMap>> map_read() const {
    ET_TRY_ASSIGN(auto m, dyn_.map_read());
    return TypedMap<const T, ReadMap>(std::move(m));
  }
  [[nodiscard]] Result<TypedMap<T, WriteMap>> map_write() const {
    ET_TRY_ASSIGN(auto m, dyn_.map_write());
    return TypedMap<T, WriteMap>(std::move(m));
  }
  [[nodiscard]] Result<TypedMap<T, ReadWriteMap>> map_read_write() const {
    ET_TRY_ASSIGN(auto m, dyn_.map_read_write());
    return TypedMap<T, ReadWriteMap>(std::move(m));
  }
  [[nodiscard]] Result<TypedMap<const T, ReadMap>> map_read(const MapOptions& options) const {
    ET_TRY_ASSIGN(auto m, dyn_.map_read(options));
    return TypedMap<const T, ReadMap>(std::move(m));
  }
  [[nodiscard]] Result<TypedMap<T, WriteMap>> map_write(const MapOptions& options) const {
    ET_TRY_ASSIGN(auto m, dyn_.map_write(options));
    return TypedMap<T, WriteMap>(std::move(m));
  }
  [[nodiscard]] Result<TypedMap<T, ReadWriteMap>> map_read_write(const MapOptions& options) const {
    ET_TRY_ASSIGN(auto m, dyn_.map_read_write(options));
    return TypedMap<T, ReadWriteMap>(std::move(m));
  }
  [[nodiscard]] Result<Tensor> batch(std::size_t n) const {
    ET_TRY_ASSIGN(auto d, dyn_.batch(n));
    return Tensor(std::move(d));
  }
  [[nodiscard]] Result<Tensor> reshape(ArrayRef<std::size_t> shape) const {
    ET_TRY_ASSIGN(auto d, dyn_.reshape(shape));
    return Tensor(std::move(d));
  }
  [[nodiscard]] Result<UniqueFd> export_fd() const { return dyn_.export_fd(); }

 private:
  explicit Tensor(TensorDyn dyn) : dyn_(std::move(dyn)) {}
  TensorDyn dyn_;
};

}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor

template <>
struct std::hash<edgetensor::BufferKey> {
  std::size_t operator()(edgetensor::BufferKey key) const noexcept {
    return std::hash<std::uint64_t>{}(key.value());
  }
};
