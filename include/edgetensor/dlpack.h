// SPDX-License-Identifier: Apache-2.0
// DLPack: hand a tensor to any array library (numpy, PyTorch, ...) without a copy, and take theirs.
//
// Source of the facts below: the DLPack specification (dmlc/dlpack, include/dlpack/dlpack.h, versions
// 0.6 to 1.1, and "Python specification for DLPack", dmlc.github.io/dlpack). The structs are our own
// declarations of that C ABI, in namespace edgetensor::dlpack under our own names, so this header never
// collides with a copy of dlpack.h (all copies share one include guard; Debian 12 ships 0.6, which has
// no versioned struct). Field names and order, enumerator values and flag bits are the spec's; the
// static_asserts at the end pin sizes and offsets for LP64 and ILP32 (x86-64, arm64, armhf, i386), and
// tests/unit/dlpack checks the legacy struct against Debian's dlpack.h 0.6.
//
// What an export holds (the "capsule" behind manager_ctx): a CPU map of the tensor (kDLCPU) or a
// cuda::CudaMap (kDLCUDA), plus a reference to the tensor's storage, so the pointer stays valid until
// the consumer calls the deleter, however long that is and whatever happens to the TensorDyn meanwhile.
// The deleter releases exactly those, once, from any thread. Consequences of holding a map:
//   - a DMA-BUF export sits inside the storage's one CPU sync bracket (SYNC_START when opened, SYNC_END
//     when the last map or export closes);
//   - a GL PBO stays mapped: other CPU maps and cuda::map of it answer Busy until the deleter runs;
//   - a pooled buffer is not returned to its pool while an export of it lives.
// An export of zero elements holds neither (nothing to reach): its data is a non-null dummy, because
// torch before 2.3 never calls the deleter of a null-data tensor (pytorch issues 117058 and 117273).
//
// Metadata: DLPack carries data, device, dtype, shape and strides only. An export drops the name, the
// image layout (pixel format, planes, colorimetry) and the quantization; an import has none of them
// (attach them afterwards with set_image_layout / set_colorimetry / set_quantization when the caller
// knows them). Exporting an image tensor is exporting its bytes as the tensor's shape says.
//
// Thread rules: every function may be called from any thread; an export's deleter may be called from
// any thread (once). An imported tensor calls the producer's deleter on the thread that drops the last
// view, map or capsule of it (ImportOptions::run_deleter lets a binding take a lock such as Python's
// GIL around that call).
#pragma once

#include <edgetensor/cuda.h>
#include <edgetensor/error.h>
#include <edgetensor/export.h>
#include <edgetensor/tensor.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace dlpack {

// ---- The DLPack C ABI (dlpack.h 1.1), our names -------------------------------------------------

/// DLPackVersion: the ABI version of a ManagedTensorVersioned. A different major means a different
/// layout: only `version` and `deleter` (whose offsets every 1.x and later layout keeps) may be read.
/// A newer minor only adds enumerator values.
struct Version {
  std::uint32_t major;
  std::uint32_t minor;
};
/// The version this library writes into its exports (DLPACK_MAJOR_VERSION.DLPACK_MINOR_VERSION of the
/// dlpack.h whose facts it implements). Imports accept major 1, any minor.
inline constexpr Version kVersion{1, 1};

/// DLDeviceType (int32 enum; values are the spec's, gaps included). Any int32 may arrive from a
/// producer: a value outside the list is still a valid object of this type.
enum class DeviceType : std::int32_t {
  Cpu = 1,           ///< kDLCPU: CPU memory (also pinned, host-registered and CPU-mapped device memory).
  Cuda = 2,          ///< kDLCUDA: CUDA device memory.
  CudaHost = 3,      ///< kDLCUDAHost: pinned host memory (cudaMallocHost); CPU-addressable.
  OpenCl = 4,        ///< kDLOpenCL
  Vulkan = 7,        ///< kDLVulkan
  Metal = 8,         ///< kDLMetal
  Vpi = 9,           ///< kDLVPI
  Rocm = 10,         ///< kDLROCM
  RocmHost = 11,     ///< kDLROCMHost: pinned host memory (hipMallocHost); CPU-addressable.
  ExtDev = 12,       ///< kDLExtDev
  CudaManaged = 13,  ///< kDLCUDAManaged: cudaMallocManaged (not imported: CPU access races the GPU).
  OneApi = 14,       ///< kDLOneAPI
  WebGpu = 15,       ///< kDLWebGPU
  Hexagon = 16,      ///< kDLHexagon
  Maia = 17,         ///< kDLMAIA (DLPack >= 1.1)
};
/// The spec's name: "kDLCPU", "kDLCUDA", ...; "unknown" for a value outside the list.
ET_API std::string_view device_type_name(DeviceType type) noexcept;

/// DLDevice.
struct Device {
  DeviceType device_type;
  std::int32_t device_id;  ///< 0 for kDLCPU; the CUDA ordinal for kDLCUDA.
};

/// DLDataTypeCode (stored as uint8 in DataType::code).
enum class TypeCode : std::uint8_t {
  Int = 0,           ///< kDLInt
  UInt = 1,          ///< kDLUInt
  Float = 2,         ///< kDLFloat (IEEE 754)
  OpaqueHandle = 3,  ///< kDLOpaqueHandle
  Bfloat = 4,        ///< kDLBfloat (bfloat16)
  Complex = 5,       ///< kDLComplex
  Bool = 6,          ///< kDLBool (DLPack >= 0.8)
  // 1.1 adds kDLFloat8_* (7-14), kDLFloat6_* (15-16) and kDLFloat4_e2m1fn (17): no edgetensor dtype.
};

/// DLDataType: `bits` per lane, `lanes` per element (1 for every edgetensor dtype).
struct DataType {
  std::uint8_t code;  ///< A TypeCode value.
  std::uint8_t bits;
  std::uint16_t lanes;
};

/// DLTensor. Units (the spec's): shape and strides count ELEMENTS; byte_offset counts bytes from `data`.
/// `strides` may be null in a legacy tensor (and in versioned ones before 1.2): compact row-major.
struct DlTensor {
  void* data;
  Device device;
  std::int32_t ndim;
  DataType dtype;
  std::int64_t* shape;
  std::int64_t* strides;
  std::uint64_t byte_offset;
};

/// DLManagedTensor (legacy, pre-1.0; the only form numpy < 2.1 and torch < 2.9 read). The deleter may be
/// null ("nothing to free"); otherwise calling it once frees manager_ctx and `self`.
struct ManagedTensor {
  DlTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(ManagedTensor* self);
};

/// DLPACK_FLAG_BITMASK_READ_ONLY: the consumer must not write through `data`.
inline constexpr std::uint64_t kFlagReadOnly = std::uint64_t{1} << 0;
/// DLPACK_FLAG_BITMASK_IS_COPIED: the producer made a copy for this export (export_* never copy; the
/// Python binding sets it for __dlpack__(copy=True)).
inline constexpr std::uint64_t kFlagIsCopied = std::uint64_t{1} << 1;

/// DLManagedTensorVersioned (DLPack >= 1.0). `version`, `manager_ctx` and `deleter` come first so that
/// the deleter can be called whatever the major version.
struct ManagedTensorVersioned {
  Version version;
  void* manager_ctx;
  void (*deleter)(ManagedTensorVersioned* self);
  std::uint64_t flags;  ///< kFlagReadOnly | kFlagIsCopied; other bits are reserved.
  DlTensor dl_tensor;
};

// ---- Export -------------------------------------------------------------------------------------

/// Where the exported pointer lives.
enum class ExportDevice : std::uint8_t {
  Cpu = 0,   ///< kDLCPU, device_id 0: a CPU map of the tensor (heap, shm, DMA-BUF, PBO, foreign).
  Cuda = 1,  ///< kDLCUDA, device_id = the CudaMap's device: a cuda::map device view (asked for only).
};

struct ExportOptions {
  /// Export for reading only: READ_ONLY is set (versioned form) and a read map is held (on a
  /// DMA-BUF, SYNC_END then covers reads only). Read-only storage is always exported this way.
  bool read_only = false;
  ExportDevice device = ExportDevice::Cpu;
  /// With ExportDevice::Cuda: passed to cuda::map (device ordinal; GL PBO stream). Borrowed stream: it
  /// must outlive the export.
  cuda::MapOptions cuda;
};

/// Exports `tensor` as a DLPack 1.1 versioned tensor (version = kVersion). The caller owns the result
/// and ends it by calling `result->deleter(result)` exactly once, from any thread (a consumer such as
/// numpy does this when it is done). Until then data, shape and strides stay valid, even after
/// `tensor` and all its views are gone.
/// Filled as the spec asks: data = first element (the tensor's byte offset folded in; byte_offset = 0,
/// because PyTorch ignores byte_offset, pytorch issue 168177); shape; strides in elements, always
/// filled (required from DLPack 1.2 on for ndim > 0); a zero-element tensor keeps its shape, holds no
/// map and no storage, and has a non-null data pointer (aligned for any dtype) that must not be read;
/// flags = kFlagReadOnly for read-only storage or options.read_only, never kFlagIsCopied.
/// Errors: FailedPrecondition (empty handle; the map's: GL context gone), InvalidArgument (a byte
/// stride that is not a multiple of the element size, naming the dimension and the stride),
/// Unsupported (a non-linear DRM modifier: the CPU layout is opaque), Busy (a PBO already mapped),
/// OutOfMemory, the map's or cuda::map's errors (CUDA: Unavailable, Unsupported, ...).
[[nodiscard]] ET_API Result<ManagedTensorVersioned*> export_versioned(const TensorDyn& tensor,
                                                                      const ExportOptions& options = {});

/// As export_versioned, in the legacy form (DLManagedTensor, which cannot say read-only). Errors: as
/// export_versioned, plus PermissionDenied for read-only storage and for options.read_only (numpy
/// does the same: "signalling readonly is unsupported"): a consumer would be free to write.
[[nodiscard]] ET_API Result<ManagedTensor*> export_legacy(const TensorDyn& tensor, const ExportOptions& options = {});

/// Exports made by this process and not yet deleted (process-wide, atomic; for leak tests).
ET_API std::size_t live_export_count() noexcept;

// ---- Import -------------------------------------------------------------------------------------

struct ImportOptions {
  /// The tensor's name.
  std::string name;
  /// How the producer's deleter is called: empty = directly. Otherwise run_deleter(call) is called
  /// once, on the thread that drops the last reference (or inside adopt_* on failure), and must
  /// invoke `call` once (or skip it on purpose, e.g. Python finalizing: the memory then leaks).
  /// It must not throw.
  std::function<void(const std::function<void()>& call)> run_deleter;
};

/// Takes ownership of a producer's versioned tensor and gives a TensorDyn over its memory
/// (MemoryKind::Foreign, offset 0, data + byte_offset as the first element, byte strides). The
/// producer's deleter runs once, when the last view, map or export of that tensor is gone.
/// Ownership: `managed` is the library's from the call on, success or failure: on every error the
/// producer's deleter has run (once; not if null) before the call returns, so the caller must not call
/// it again (Python: rename the capsule to "used_dltensor_versioned" either way). Exception: a null
/// `managed` (InvalidArgument, nothing done).
/// Checks, each a named error (the version first, then the device, then the rest): major version != 1
/// (Unsupported; only `version` and `deleter` are read, as the spec says); a device other than kDLCPU,
/// kDLCUDAHost, kDLROCMHost (Unsupported, naming it: the CPU cannot reach kDLCUDA and the like);
/// ndim < 0 (InvalidArgument) or > kMaxRank (OutOfRange); a null shape with ndim > 0 or a negative
/// dimension (InvalidArgument); dtype lanes != 1, an unknown code, or a code/bits pair with no
/// edgetensor dtype, e.g. kDLBool or kDLComplex (Unsupported, naming code, bits and lanes); a negative
/// stride (Unsupported); a zero stride on a dimension larger than 1, i.e. a broadcast (InvalidArgument);
/// any shape or stride product, extent or address sum that overflows (OutOfRange); null data with
/// elements (InvalidArgument); data + byte_offset not aligned to the element size (InvalidArgument).
/// Null strides mean compact row-major (the spec's meaning; DLPack >= 1.2 producers always fill them).
/// kFlagReadOnly gives read-only storage (write maps: PermissionDenied); kFlagIsCopied changes nothing.
/// Not checked (the pointer is the producer's word): that the memory exists. Metadata: none (preamble).
[[nodiscard]] ET_API Result<TensorDyn> adopt_versioned(ManagedTensorVersioned* managed,
                                                       const ImportOptions& options = {});
/// As adopt_versioned for a legacy tensor (no version to check; never read-only; a null deleter is
/// never called).
[[nodiscard]] ET_API Result<TensorDyn> adopt_legacy(ManagedTensor* managed, const ImportOptions& options = {});

/// Imported tensors whose producer's deleter has not run yet (process-wide, atomic; for leak tests).
ET_API std::size_t live_import_count() noexcept;

// ---- dtype mapping ------------------------------------------------------------------------------

/// The DLPack type of `dtype` (lanes 1): U8..U64 kDLUInt, I8..I64 kDLInt, F16/F32/F64 kDLFloat,
/// BF16 kDLBfloat 16. Errors: InvalidArgument for a value outside the enum.
[[nodiscard]] ET_API Result<DataType> to_data_type(DType dtype);
/// The reverse. Errors: Unsupported (lanes != 1, an unknown code, or no edgetensor dtype for the
/// code and bits), naming code, bits and lanes.
[[nodiscard]] ET_API Result<DType> from_data_type(DataType type);

// The layouts above are checked against the DLPack 1.1 ABI (LP64 and ILP32) in src/dlpack/dlpack_types.cpp.

}  // namespace dlpack
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
