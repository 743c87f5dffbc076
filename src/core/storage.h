// SPDX-License-Identifier: Apache-2.0
// Storage: one allocation or import. The seam every backend plugs into.
//
//   Storage ──owns──> Backing (one per backend: heap, shm, dmabuf, gl_pbo, empty)
//           ──owns──> DeviceHandle slot (CUDA registration/import), torn down BEFORE the Backing
//
// CPU access protocol (one bracket per storage): the first open map calls Backing::begin_cpu_access
// (DMA-BUF: SYNC_START; PBO: glMapBufferRange), later maps reuse the pointer (a single-map backend
// refuses them with Busy), and the last map to close calls Backing::end_cpu_access with the union of
// the modes of every map opened in the bracket (DMA-BUF: SYNC_END covering all writers). No begin is
// ever issued while another map of the same storage is open.
#pragma once

#include <edgetensor/error.h>
#include <edgetensor/map.h>
#include <edgetensor/memory.h>
#include <edgetensor/tensor.h>
#include <edgetensor/unique_fd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

/// Identity of the underlying kernel object (st_dev, st_ino) or, for heap memory, of the block.
struct ObjectKey {
  std::uint64_t a = 0;
  std::uint64_t b = 0;
  friend bool operator==(const ObjectKey&, const ObjectKey&) = default;
};

/// A backend's buffer. The destructor frees it (a GL backing posts that to the GL thread; a
/// disconnected one does nothing). All methods except begin/end may be called from any thread.
class Backing {
 public:
  virtual ~Backing() = default;
  virtual MemoryKind kind() const noexcept = 0;
  /// What serves, e.g. "memfd", "posix shm /cam0", "heap (mmap)".
  virtual std::string detail() const = 0;
  /// Real size of the whole buffer in bytes.
  virtual std::size_t buffer_bytes() const noexcept = 0;
  virtual bool read_only() const noexcept { return false; }
  /// Borrowed fd of the buffer, -1 when it has none.
  virtual int fd() const noexcept { return -1; }
  /// F_SEAL_* bits known to be set on the buffer's file (0 when none is known, or it is not a memfd).
  /// Seals only accumulate, so a bit reported here stays set; one not reported may have been added since.
  virtual unsigned seals() const noexcept { return 0; }
  virtual ObjectKey object_key() const noexcept { return {reinterpret_cast<std::uintptr_t>(this), 0}; }
  /// False when begin_cpu_access only hands out a persistent mapping and end_cpu_access does nothing
  /// (heap, shm): the storage then opens maps without its lock (one atomic load and add per map),
  /// taking the address from cpu_address(), which such a backing must answer.
  virtual bool needs_cpu_access_bracket() const noexcept { return true; }
  /// A backend that allows one CPU map at a time (PBO).
  virtual bool single_map() const noexcept { return false; }
  /// Called under the storage's map lock when the first map opens, before begin_cpu_access: waits at
  /// most `timeout` (negative: no bound) for device work the CPU access must follow (DMA-BUF fences).
  /// Default: nothing to wait for.
  virtual Result<void> await_device(MapMode mode, std::chrono::milliseconds timeout) {
    (void)mode;
    (void)timeout;
    return {};
  }
  /// Called under the storage's map lock when the first map opens. Returns the base of the whole buffer.
  virtual Result<std::byte*> begin_cpu_access(MapMode mode) = 0;
  /// The address of byte 0 of a CPU mapping that lives as long as the backing (heap, shm), made on
  /// first use. Backings that need no CPU-access bracket must answer it; call it through
  /// Storage::cpu_address (the first call runs under the storage's map lock). Default: Unsupported
  /// (DMA-BUF and PBO memory is CPU-visible only inside a map).
  virtual Result<std::byte*> cpu_address();
  /// Called under the storage's map lock when the last map closes; `modes` = union of the bracket.
  virtual void end_cpu_access(MapMode modes) noexcept { (void)modes; }
  /// A new CLOEXEC fd the caller owns. Default: Unsupported.
  virtual Result<UniqueFd> export_fd() const;
  /// What this backing offers a bridge module (CUDA-GL reaches a PBO this way), asked for by the
  /// address of a key its backend defines; null when it offers nothing for `key`. Lets a bridge find
  /// its backend's state without a dynamic_cast to the backend's type.
  virtual void* interop(const void* key) noexcept {
    (void)key;
    return nullptr;
  }
};

/// A device-side handle attached to a storage (e.g. a CUDA external-memory import). Destroyed before
/// the storage's Backing frees the memory.
class DeviceHandle {
 public:
  virtual ~DeviceHandle() = default;
};

/// Device work recorded on a storage that may still be running (the CUDA event of a released CudaMap).
/// A pool hands the buffer out again, and a channel receiver sends its release, only once every fence
/// is complete; the storage's destructor waits for them (bounded) before it frees anything.
class DeviceFence {
 public:
  virtual ~DeviceFence() = default;
  /// True when the work is complete (or can never complete: an error is logged and counts as done).
  /// Never blocks.
  virtual bool complete() noexcept = 0;
  /// The longest the storage's destructor waits for this work before it leaks the memory instead
  /// (negative: no bound; 0: does not wait).
  virtual std::chrono::milliseconds teardown_timeout() const noexcept = 0;
};

/// Work a device does on the buffer before anyone may touch it (a channel frame's acquire fence): every
/// CPU map and device map of the storage waits for it, bounded, until it has signalled once.
class AccessFence {
 public:
  virtual ~AccessFence() = default;
  /// Waits until it signals, at most `timeout` (0: only checks; negative: no bound). Errors: Timeout
  /// (Busy for a timeout of 0), naming the fence; from_errno of the wait.
  virtual Result<void> wait(std::chrono::milliseconds timeout) const = 0;
};

class Storage {
 public:
  explicit Storage(std::unique_ptr<Backing> backing);
  /// Waits for the kept fences (each at most its teardown_timeout, with a log line), then frees the
  /// fences, the device handle and the backing, in that order. When the bound passes first, the device
  /// handle and the backing are abandoned (never freed: a device may still write the memory) and a
  /// warning names the buffer and the bound.
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  /// The id BufferIdentity reports: minted at construction and again by renew_id().
  std::uint64_t id() const noexcept { return id_; }
  /// A new id (a pool's acquisition counts as an allocation). Only while no one else holds the storage.
  void renew_id() noexcept;
  /// The BufferKey of the underlying object (tensor.h): a storage of an fd-backed object joins the
  /// process-wide registry keyed by (kind, Backing::object_key()) at construction and leaves it when
  /// destroyed (buffer_key.cpp); any other storage mints its key on first call. Lock-free.
  std::uint64_t buffer_key() noexcept;
  Backing& backing() const noexcept { return *backing_; }
  MemoryKind kind() const noexcept { return backing_->kind(); }
  std::size_t buffer_bytes() const noexcept { return backing_->buffer_bytes(); }

  /// Opens one CPU map: returns the base of the buffer. The map that opens a bracket first waits for
  /// device work at most `wait_timeout` (Backing::await_device). Thread-safe.
  Result<std::byte*> acquire_cpu(MapMode mode, std::chrono::milliseconds wait_timeout = kDefaultMapTimeout);
  /// Closes one CPU map opened with `mode`. Thread-safe, noexcept.
  void release_cpu(MapMode mode) noexcept;
  /// CPU maps open now (lock-free read).
  int open_map_count() const;
  /// The backing's persistent CPU address (Backing::cpu_address), made once and then read lock-free;
  /// opens no map. Valid until the Backing is destroyed. Thread-safe. Errors: Unsupported for backings
  /// that need a CPU-access bracket (DMA-BUF, PBO), the backing's mmap error.
  Result<std::byte*> cpu_address();

  /// The device handle, creating it with `make` on first use (under a lock; one per storage).
  Result<DeviceHandle*> device_handle(const std::function<Result<std::unique_ptr<DeviceHandle>>(Storage&)>& make);
  /// The device handle if one exists, else null.
  DeviceHandle* existing_device_handle() const;

  /// Holds `keep_alive` until the storage goes: it is dropped after the backing (and its mapping and fd)
  /// is freed, or kept for the process's life with an abandoned backing. Set before the storage is shared.
  void set_keep_alive(std::shared_ptr<void> keep_alive) noexcept { keep_alive_ = std::move(keep_alive); }

  /// Marks the storage as a channel receiver's import of an announced buffer: the BufferKey registry
  /// counts it apart, so a sender in this process does not take the receiver's own import for a holder of
  /// the buffer (buffer_key_held_by_sender_side). Call once, before the storage is shared; a storage
  /// without an fd ignores it.
  void mark_channel_import() noexcept;
  /// True for a storage of an fd-backed object (in the BufferKey registry).
  bool registered() const noexcept { return registered_; }

  /// Marks the storage as a pool's. Set before the storage is shared.
  void set_pooled() noexcept { pooled_ = true; }
  bool pooled() const noexcept { return pooled_; }
  /// Keeps `fence` (device work recorded on the buffer, given by a released device view) until it is
  /// complete: a pool's or channel's return waits for it (device_work_complete), and so does the
  /// destructor. Drops the kept fences that are complete already. Thread-safe.
  void keep_fence(std::unique_ptr<DeviceFence> fence);
  /// Asks every kept fence, drops the complete ones; true when none is left. Thread-safe, never blocks.
  bool device_work_complete() noexcept;
  /// Adds `fence` to the fences every later map waits for (acquire_cpu, a device map). Thread-safe.
  void add_access_fence(std::shared_ptr<const AccessFence> fence);
  /// Waits for every access fence, at most `timeout` for all together (0: only checks; negative: no
  /// bound), and forgets those that signalled; without fences one atomic load. Not under the map lock:
  /// a map waiting here holds no other map up. `what` names the access ("read map"). Errors: the
  /// fence's Timeout or Busy, naming `what` and the buffer. Thread-safe.
  Result<void> await_access_fences(std::chrono::milliseconds timeout, std::string_view what);

 private:
  std::uint64_t id_;  // written only by the constructor and renew_id (exclusive owner)
  // Declared before backing_, so destroyed after it: a caller's keep-alive (an imported fd's owner, e.g. a
  // GstBuffer) goes only once the memory is unmapped and its fd closed.
  std::shared_ptr<void> keep_alive_;
  // Declaration order is teardown order in reverse: device_ is destroyed before backing_ frees memory.
  std::unique_ptr<Backing> backing_;
  bool pooled_ = false;
  bool channel_import_ = false;  // mark_channel_import: counted apart in the BufferKey registry
  const bool registered_;                     // backing_ has an fd: buffer_key_ came from the registry
  std::atomic<std::uint64_t> buffer_key_{0};  // 0 until minted (buffer_key.cpp)
  const bool bracket_;             // backing_->needs_cpu_access_bracket(), read once
  mutable std::mutex map_mutex_;
  std::atomic<int> open_maps_{0};  // changed under map_mutex_ when bracket_, lock-free otherwise
  unsigned bracket_modes_ = 0;     // guarded by map_mutex_
  std::byte* base_ = nullptr;      // guarded by map_mutex_
  std::atomic<std::byte*> persistent_base_{nullptr};  // !bracket_: set once, then read lock-free
  mutable std::mutex device_mutex_;
  std::unique_ptr<DeviceHandle> device_;  // guarded by device_mutex_
  std::vector<std::unique_ptr<DeviceFence>> fences_;  // guarded by device_mutex_; destroyed before device_
  std::atomic<bool> has_fences_{false};  // !fences_.empty(), read without the lock
  std::vector<std::shared_ptr<const AccessFence>> access_fences_;  // guarded by device_mutex_
  std::atomic<bool> has_access_fences_{false};  // !access_fences_.empty(), read without the lock

  bool await_fences_locked() noexcept;  // the destructor's bounded wait; false when the bound passed
  void abandon_locked() noexcept;       // keeps device_ and backing_ for the process's life
};

/// Storages whose memory was abandoned because device work on it outlived the teardown bound
/// (~Storage), since the process started. Thread-safe.
std::size_t abandoned_storage_count() noexcept;

/// Mints a process-unique, non-zero id.
std::uint64_t next_storage_id() noexcept;

/// The BufferKey registry (buffer_key.cpp): a storage of an fd-backed object joins it at construction
/// (the object's key, minted when no live storage has it) and leaves it when destroyed.
std::uint64_t register_buffer_key(MemoryKind kind, const ObjectKey& object);
/// `received`: the storage was marked with Storage::mark_channel_import.
void release_buffer_key(MemoryKind kind, const ObjectKey& object, bool received) noexcept;
/// Counts one registered storage of `object` as a channel receiver's import.
void mark_buffer_key_received(MemoryKind kind, const ObjectKey& object) noexcept;
/// True while `object` still has key `key` and a live storage that is not a channel receiver's import
/// (a sender-side holder in this process: the buffer itself, another import of its fd). Thread-safe.
bool buffer_key_held_by_sender_side(MemoryKind kind, const ObjectKey& object, std::uint64_t key) noexcept;

/// The library's one way to a tensor's storage (TensorDyn keeps it private: include/edgetensor/map.h
/// says why). Null for an empty handle. The reference lives as long as the tensor.
struct StorageAccess {
  static const std::shared_ptr<Storage>& of(const TensorDyn& t) noexcept { return t.storage(); }
};
inline const std::shared_ptr<Storage>& storage_of(const TensorDyn& t) noexcept { return StorageAccess::of(t); }

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
