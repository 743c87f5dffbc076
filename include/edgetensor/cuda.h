// SPDX-License-Identifier: Apache-2.0
// Optional CUDA interop: device views of tensors, external memory, streams and copies. libcudart is
// loaded with dlopen on first use, never linked. Nothing throws: every fallible call returns Result<T>,
// a CUDA error keeping its name, number and text. Loader order, error codes, fork() and thread rules:
// docs/CUDA.md, "The loader, errors, fork and threads".
#pragma once

#include <edgetensor/error.h>
#include <edgetensor/export.h>
#include <edgetensor/tensor.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {
class Storage;
}

namespace cuda {

namespace detail {
class CudaHandle;
class ExternalImport;
struct MapAccess;
}  // namespace detail

/// One CUDA device, from cudaDeviceGetAttribute and the driver API (cuDeviceGetName and
/// cuDeviceTotalMem_v2, requested at their ABI versions 2.0 and 3.2 through
/// cudaGetDriverEntryPointByVersion, never above the driver's version; empty/0 when unreachable).
struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  std::size_t total_memory_bytes = 0;
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  bool integrated = false;            ///< Shares memory with the CPU (Jetson).
  bool can_map_host_memory = false;   ///< cudaDevAttrCanMapHostMemory.
};

/// What the CUDA runtime offers this process. Computed once per process (first call), except the fork
/// fields, which follow the calling process. The loader's own findings (candidates tried, missing
/// symbols) are shown by `edgetensor info` (probe.h).
struct ET_API RuntimeReport {
  std::string runtime_file;       ///< Full path of the loaded file (dlinfo), empty when none.
  int runtime_version = 0;        ///< cudaRuntimeGetVersion: 1000 * major + 10 * minor (13000 = 13.0).
  int driver_version = 0;         ///< cudaDriverGetVersion; 0 = no driver installed.
  int device_count = 0;           ///< cudaGetDeviceCount (0 when it failed).
  std::vector<DeviceInfo> devices;  ///< Filled when available.
  /// While `available`: one line per CudaPath that cannot work here, "<cuda_path_name>: <reason>",
  /// e.g. "external-opaque-fd: CUDA runtime 14.0 has no external-memory descriptor table here (known:
  /// 11.x-13.x)". Empty when CUDA is unavailable (`error` says why).
  std::vector<std::string> unavailable_paths;
  bool forked_child = false;       ///< This process is a fork() child of the one that loaded CUDA.
  bool available = false;          ///< A runtime loaded, the driver answers, >= 1 device, not a fork child
                                   ///< (each path may still be off: unavailable_paths).
  std::string error;               ///< Why unavailable (CUDA error name, number and text); empty if available.

  /// One line for tools: "CUDA 13.0 runtime (/usr/.../libcudart.so.13), driver none, 0 device(s):
  /// unavailable: cudaErrorInsufficientDriver (35): ...", or "CUDA unavailable: <error>" when no
  /// runtime answered.
  std::string summary() const;
};

/// The runtime's report. Never throws; loads the runtime on first call. Any thread.
ET_API RuntimeReport report();
/// report().available, cheaply.
ET_API bool available();
using Status [[deprecated("renamed cuda::RuntimeReport; removed in 0.6")]] = RuntimeReport;
[[deprecated("renamed cuda::report(); removed in 0.6")]] inline RuntimeReport status() { return report(); }
/// "13.0" for 13000; "none" for 0.
ET_API std::string version_string(int cuda_version);

/// A CUDA stream (cudaStreamCreateWithFlags(cudaStreamNonBlocking)); destroyed with
/// cudaStreamDestroy (skipped in a fork child). Move-only.
class ET_API Stream {
 public:
  /// Errors: as the module preamble (Unavailable, FailedPrecondition after fork, CUDA errors).
  [[nodiscard]] static Result<Stream> create();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();

  /// Blocks until all work queued on the stream is complete (cudaStreamSynchronize).
  [[nodiscard]] Result<void> synchronize() const;
  /// The cudaStream_t, borrowed: valid while this object lives.
  void* native_handle() const noexcept { return stream_; }

 private:
  Stream(void* stream, std::uint32_t process) noexcept : stream_(stream), process_(process) {}
  void reset() noexcept;
  void* stream_ = nullptr;
  std::uint32_t process_ = 0;  // the creating process's token: destroy skipped in a fork child
};

// ---- Copies (bytes; pointers are borrowed for the call; device pointers come from CudaMap,
// ExternalMemory or the user's own cudaMalloc) ----------------------------------------------------
/// cudaMemcpy host -> device. Without a usable runtime every size fails with Unavailable; with one, a zero
/// size copies nothing (no CUDA call). Errors: InvalidArgument (null pointer with a non-zero size), CUDA errors.
[[nodiscard]] ET_API Result<void> copy_host_to_device(void* device_dst, const void* host_src, std::size_t size_bytes);
[[nodiscard]] ET_API Result<void> copy_device_to_host(void* host_dst, const void* device_src, std::size_t size_bytes);
[[nodiscard]] ET_API Result<void> copy_device_to_device(void* device_dst, const void* device_src, std::size_t size_bytes);
/// cudaMemcpyAsync on `stream`. The host buffer must stay valid and unchanged until the stream is
/// synchronized (pageable memory is staged by CUDA; pinned memory is read by DMA later).
[[nodiscard]] ET_API Result<void> copy_host_to_device_async(void* device_dst, const void* host_src,
                                                          std::size_t size_bytes, const Stream& stream);
[[nodiscard]] ET_API Result<void> copy_device_to_host_async(void* host_dst, const void* device_src,
                                                          std::size_t size_bytes, const Stream& stream);
[[nodiscard]] ET_API Result<void> copy_device_to_device_async(void* device_dst, const void* device_src,
                                                            std::size_t size_bytes, const Stream& stream);

/// Copies a tensor's elements to `device_dst`, packed in C order (packed_bytes() bytes). A tensor whose
/// innermost stride is the element size is copied row by row; any other layout is refused
/// (InvalidArgument, naming the stride). With a stream the copies are queued on it and the call waits
/// for the stream before it closes its CPU map (so a DMA-BUF sync bracket covers the DMA).
/// Errors: OutOfRange when device_capacity_bytes < packed_bytes(), FailedPrecondition (empty handle),
/// the map's errors, CUDA errors.
[[nodiscard]] ET_API Result<void> copy_to_device(const TensorDyn& src, void* device_dst,
                                                 std::size_t device_capacity_bytes, const Stream* stream = nullptr);
/// The reverse: `device_src` holds dst.packed_bytes() bytes; they land in the tensor's layout
/// through a write map. Errors as copy_to_device, plus PermissionDenied on read-only storage.
[[nodiscard]] ET_API Result<void> copy_from_device(const void* device_src, std::size_t device_size_bytes,
                                                   const TensorDyn& dst, const Stream* stream = nullptr);

/// How a storage is reached from CUDA.
enum class CudaPath : std::uint8_t {
  HostRegistered = 0,        ///< heap/shm: cudaHostRegister(Mapped|Portable) + cudaHostGetDevicePointer.
  ExternalOpaqueFd = 1,      ///< cudaImportExternalMemory(cudaExternalMemoryHandleTypeOpaqueFd).
  ExternalDmaBuf = 2,        ///< cuImportExternalMemory(CU_EXTERNAL_MEMORY_HANDLE_TYPE_DMABUF_FD).
  GlBuffer = 3,              ///< cudaGraphicsGLRegisterBuffer (GL PBO; the CUDA-GL path).
};
/// "host-registered", "external-opaque-fd", "external-dmabuf", "gl-buffer".
ET_API std::string_view cuda_path_name(CudaPath path) noexcept;

/// The longest the last holder of a storage waits, by default, for device work recorded on it
/// (CudaMap::record's teardown_timeout) before freeing it: 5 s. Frame work takes milliseconds; work still running after
/// seconds is hung, and leaking one buffer is better than stalling a shutdown or freeing live memory.
inline constexpr std::chrono::milliseconds kDefaultTeardownTimeout{5000};

/// Options for map().
struct MapOptions {
  /// The device; -1 = the calling thread's current device. A storage is reached through one handle,
  /// bound to the device it was made on; a later map for another device is FailedPrecondition.
  int device = -1;
  /// GL PBO tensors only: the stream cudaGraphicsMapResources and, at release, cudaGraphicsUnmapResources
  /// are issued on (CUDA Runtime API, "Graphics Interoperability": work queued on it before the map
  /// starts after GL's, GL work after the unmap starts after the stream's). Null = the default
  /// stream. Borrowed: the Stream must outlive the CudaMap. Ignored by the other paths.
  const Stream* stream = nullptr;
};

/// A device view of a tensor: device_ptr() is the tensor's first element (the storage's single CUDA
/// handle plus the tensor's byte offset), extent_bytes() its extent (TensorDyn::extent_bytes()). Keeps
/// the storage alive.
///
/// CPU and device access are not synchronised for you: device work that reads or writes through
/// this pointer must be complete before the CPU maps the same storage (and CPU writes must be done,
/// i.e. the CPU map closed, before device work starts). record(stream) after queuing the work and
/// wait() before the CPU map do exactly that; synchronizing the stream yourself is equivalent.
/// Move-only. The handle behind it (registration / import) lives until the storage is freed.
class ET_API CudaMap {
 public:
  CudaMap() noexcept = default;
  CudaMap(CudaMap&& other) noexcept;
  CudaMap& operator=(CudaMap&& other) noexcept;
  CudaMap(const CudaMap&) = delete;
  CudaMap& operator=(const CudaMap&) = delete;
  ~CudaMap();

  /// Device address of the tensor's first element; null after unmap().
  void* device_ptr() const noexcept { return ptr_; }
  /// Bytes from the first element to one past the last (the tensor's extent).
  std::size_t extent_bytes() const noexcept { return extent_bytes_; }
  CudaPath path() const noexcept { return path_; }
  int device() const noexcept { return device_; }
  bool is_mapped() const noexcept { return storage_ != nullptr; }

  /// Records an event on `stream` (cudaEventRecord) marking the end of the work queued so far.
  [[nodiscard]] Result<void> record(const Stream& stream);
  /// record(stream), and the work's teardown bound: if it still runs when the storage's last holder
  /// goes (a tensor, a Pool's or a channel Receiver's teardown), the storage waits for it at most
  /// `teardown_timeout` (ms; record(stream): kDefaultTeardownTimeout; negative: no bound; 0: no wait)
  /// before it unregisters and frees the memory; past it the memory is leaked with a warning naming
  /// the buffer and the bound, never unmapped (docs/SYNC.md, "Teardown"). A later record() sets both.
  [[nodiscard]] Result<void> record(const Stream& stream, std::chrono::milliseconds teardown_timeout);
  /// Blocks until the recorded event completes; without record(), until the device is idle
  /// (cudaDeviceSynchronize). Call it before mapping the storage on the CPU.
  [[nodiscard]] Result<void> wait() const;
  /// Ends this view early, as MapBase::unmap() does for a CPU map (idempotent): drops the storage
  /// reference. It does not wait for recorded work: the event goes with the storage. A Pool (pool.h)
  /// hands the buffer out again only once the event has completed (cudaEventQuery), a
  /// channel::Receiver (channel.h) sends the frame's release only then, and the storage's last holder
  /// waits for it before freeing the memory (record's teardown_timeout).
  void unmap() noexcept;

 private:
  friend struct detail::MapAccess;
  std::shared_ptr<edgetensor::detail::Storage> storage_;
  detail::CudaHandle* handle_ = nullptr;  // owned by storage_
  void* ptr_ = nullptr;
  std::size_t extent_bytes_ = 0;
  CudaPath path_ = CudaPath::HostRegistered;
  int device_ = 0;
  void* event_ = nullptr;  // detail::RecordedEvent from record(): the cudaEvent_t and its teardown bound
  void* stream_ = nullptr;  // cudaStream_t of MapOptions::stream (GL path: unmap on it)
  std::uint32_t process_ = 0;  // the mapping process's token: release skips CUDA in a fork child
};

/// A device view of `tensor`: heap and shm storage are host-registered once per storage; DMA-BUF
/// storage is imported as external memory (the driver's DMA-BUF handle type where offered, then the
/// runtime's OpaqueFd type). The handle is made on first use, cached in the storage and torn down
/// before the storage frees its memory (cudaHostUnregister; or cudaFree then
/// cudaDestroyExternalMemory). Read-only storage is registered with cudaHostRegisterReadOnly: device
/// writes to it fault. Never throws.
///
/// GL PBO tensors (CudaPath::GlBuffer; CUDA Runtime API "OpenGL Interoperability" and "Graphics
/// Interoperability"): every CUDA-GL call runs on the tensor's GL worker thread with its context
/// current, and the calling thread waits for it (gl::ContextOptions::timeout). The first map checks
/// that the GL context runs on the CUDA device (cudaGLGetDevices, all devices of the context) and
/// registers the buffer once (cudaGraphicsGLRegisterBuffer, flags none); the registration is cached
/// until the buffer is deleted or its context shuts down, which unregisters it first
/// (cudaGraphicsUnregisterResource before glDeleteBuffers / eglTerminate). Each CudaMap maps the
/// buffer (cudaGraphicsMapResources on MapOptions::stream, cudaGraphicsResourceGetMappedPointer) and
/// its release unmaps it (cudaGraphicsUnmapResources, posted to the GL thread without waiting; GL
/// work posted later runs after it). One CudaMap per PBO at a time. While it is open, CPU maps and
/// gl::with_buffer on the PBO fail with Busy ("mapped by CUDA"); while a CPU map is open, map()
/// fails with Busy. Keep the gl::Context alive while a CudaMap of its PBO is open: a context that
/// shuts down unmaps and unregisters the buffer (logged), and the device pointer is then invalid.
///
/// Errors: FailedPrecondition (empty handle, zero-byte tensor, fork child, other device; GL: "GL
/// context gone" when the PBO's context was destroyed, or the GL context is not on the requested
/// CUDA device, naming both), Busy (GL: CPU-mapped, already CUDA-mapped, GL thread timeout),
/// Unavailable, Unsupported (no path works for this storage, with each path's reason; GL: the
/// runtime lacks the GL-interop symbols, the GL context is on no CUDA device, or the library was
/// built without EGL), CUDA errors.
[[nodiscard]] ET_API Result<CudaMap> map(const TensorDyn& tensor, const MapOptions& options = {}) noexcept;

/// External memory handle types (CUDA Runtime API "External Resource Interoperability"; cuda.h).
enum class ExternalMemoryHandleType : std::uint8_t {
  OpaqueFd = 0,  ///< An fd exported by CUDA/Vulkan (cuMemExportToShareableHandle POSIX fd), or a
                 ///< DMA-BUF on platforms whose driver accepts it as opaque (Jetson Orin).
  DmaBufFd = 1,  ///< A DMA-BUF fd, through the driver API (Jetson Thor and later, driver >= 13.0).
};

struct ExternalMemoryOptions {
  /// Size of the whole memory object in bytes. 0 = the fd's real size (fstat for memfd/tmpfs, lseek
  /// for a DMA-BUF). When the kernel reports a size, a non-zero value must equal it; when it reports
  /// none (e.g. CUDA's own opaque fds) this is required.
  std::size_t buffer_bytes = 0;
  /// cudaExternalMemoryDedicated.
  bool dedicated = false;
  /// Device to import on; -1 = the calling thread's current device.
  int device = -1;
};

/// An imported external memory object, mapped whole as one device buffer. Ownership of the fd: the
/// caller's fd is borrowed; CUDA receives a CLOEXEC dup and owns it after a successful import (it
/// closes it; CUDA Runtime API "External Resource Interoperability", cudaImportExternalMemory, for
/// OpaqueFd; the driver's DMA-BUF type is documented without an ownership rule and treated the same,
/// so at worst its dup leaks, never closes twice); if the import fails, we close the dup. Teardown (CUDA Runtime API,
/// cudaExternalMemoryGetMappedBuffer / cudaDestroyExternalMemory): the mapped pointer is freed with
/// cudaFree, then the object is destroyed, each exactly once. Move-only.
class ET_API ExternalMemory {
 public:
  /// Errors: InvalidArgument (bad fd, size mismatch, DmaBufFd given a non-DMA-BUF fd), Unavailable,
  /// FailedPrecondition (fork child), Unsupported (runtime major without a descriptor table; DmaBufFd
  /// without the driver's DMA-BUF type), CUDA errors.
  [[nodiscard]] static Result<ExternalMemory> import_fd_dup(int borrowed_fd, ExternalMemoryHandleType type,
                                                            const ExternalMemoryOptions& options = {});
  ExternalMemory(ExternalMemory&&) noexcept;
  ExternalMemory& operator=(ExternalMemory&&) noexcept;
  ~ExternalMemory();

  /// Device address of byte 0; valid while this object lives.
  void* device_ptr() const noexcept;
  /// Size of the whole imported memory object in bytes.
  std::size_t buffer_bytes() const noexcept;
  ExternalMemoryHandleType type() const noexcept;
  int device() const noexcept;

 private:
  explicit ExternalMemory(std::unique_ptr<detail::ExternalImport> impl) noexcept;
  std::unique_ptr<detail::ExternalImport> impl_;
};

}  // namespace cuda
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
