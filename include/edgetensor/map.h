// SPDX-License-Identifier: Apache-2.0
// Scoped CPU access to a tensor's bytes, typed by direction.
//
// A map keeps the tensor's storage alive, so its span can never outlive the memory. Maps of heap and
// shared-memory storage use the storage's one persistent mapping and make no system call. DMA-BUF maps
// take part in one DMA_BUF_IOCTL_SYNC bracket per storage (START when the first map opens, END when the
// last closes). A PBO allows one map at a time. Writing through a ReadMap does not compile.
//
// The first map of a DMA-BUF bracket first waits, at most MapOptions::timeout, for the device work
// the buffer's fences stand for (poll(2) of the DMA-BUF: POLLIN for a read map, POLLOUT for a write
// map), then issues START, which waits on the same fences with no bound of its own. A fence added
// between the two can still make START wait for it in full: docs/SYNC.md, "Timeouts".
//
// Only the library makes maps: MapBase's state and its constructor from a storage are private, and the
// storage itself is not reachable from a TensorDyn (tensor.h). A map made any other way would, on
// unmap, release a CPU access the storage never granted to it (on a DMA-BUF: SYNC_END while a real
// map is still open). tests/compile/map_forge_* are the spellings that must not compile.
#pragma once

#include <edgetensor/error.h>
#include <edgetensor/export.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <type_traits>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {

namespace detail {
class Storage;
}
class TensorDyn;
class ReadMap;
class WriteMap;
class ReadWriteMap;

/// Direction of a CPU map. Bit 0 = read, bit 1 = write.
enum class MapMode : unsigned { Read = 1, Write = 2, ReadWrite = 3 };

/// The longest a map waits for a DMA-BUF's fences unless MapOptions says otherwise.
inline constexpr std::chrono::milliseconds kDefaultMapTimeout{1000};

/// Options of one map call (TensorDyn::map_read and its siblings).
struct MapOptions {
  /// The longest wait for device work on a DMA-BUF before the map opens (0: only checks; negative:
  /// no bound). Other memory never waits. Only the map that opens a storage's bracket waits; maps
  /// that join an open bracket do not. When it passes: Timeout (sys_errno ETIMEDOUT; for 0: Busy,
  /// EAGAIN), naming the buffer and its pending fences.
  std::chrono::milliseconds timeout = kDefaultMapTimeout;
};

/// Untyped map state shared by the three map types. Move-only; `unmap()` is idempotent.
class ET_API MapBase {
 public:
  MapBase() noexcept = default;
  MapBase(MapBase&& other) noexcept;
  MapBase(const MapBase&) = delete;
  MapBase& operator=(const MapBase&) = delete;
  ~MapBase();

  /// Ends this map's CPU access (for DMA-BUF the last one closes the sync bracket; for a PBO the GL
  /// buffer is unmapped). Safe to call twice; after it, the span is empty.
  void unmap() noexcept;
  /// Bytes covered by the map: from the tensor's first element to one past its last (its extent,
  /// TensorDyn::extent_bytes()).
  std::size_t extent_bytes() const noexcept { return extent_bytes_; }
  bool is_mapped() const noexcept { return storage_ != nullptr; }
  MapMode mode() const noexcept { return mode_; }

 protected:
  // Protected: assigning through the base would turn a ReadMap into a WriteMap. The map types assign
  // only their own kind (their implicit move assignment calls this one), and they are final, so no
  // class derived elsewhere can call this with another kind.
  MapBase& operator=(MapBase&& other) noexcept;

 private:
  // Private, with the state: only TensorDyn makes a map (it holds the storage's CPU access for the
  // mode given here), and only the three map types read the pointer. A class derived elsewhere
  // cannot rewrite the mode or the storage that unmap() releases.
  friend class TensorDyn;
  friend class ReadMap;
  friend class WriteMap;
  friend class ReadWriteMap;
  MapBase(std::shared_ptr<detail::Storage> storage, std::byte* data, std::size_t extent_bytes, MapMode mode) noexcept
      : storage_(std::move(storage)), data_(data), extent_bytes_(extent_bytes), mode_(mode) {}

  std::shared_ptr<detail::Storage> storage_;  // null when empty or unmapped
  std::byte* data_ = nullptr;
  std::size_t extent_bytes_ = 0;
  MapMode mode_ = MapMode::Read;
};

/// Read-only access: `bytes()` is a span of const bytes.
class ReadMap final : public MapBase {
 public:
  /// An empty map (not mapped; empty span).
  ReadMap() noexcept = default;
  std::span<const std::byte> bytes() const noexcept { return {data_, extent_bytes_}; }
  const std::byte* data() const noexcept { return data_; }

 private:
  // Only TensorDyn turns an untyped map into a typed one: a public MapBase&& constructor would let
  // any ReadMap convert into a WriteMap (ReadMap&& binds to MapBase&&) and write through a read map.
  friend class TensorDyn;
  explicit ReadMap(MapBase&& base) noexcept : MapBase(std::move(base)) {}
};

/// Write-only access. Reading through it gives undefined content (the memory may be write-combined,
/// e.g. a GPU buffer): write every byte you care about.
class WriteMap final : public MapBase {
 public:
  /// An empty map (not mapped; empty span).
  WriteMap() noexcept = default;
  std::span<std::byte> bytes() const noexcept { return {data_, extent_bytes_}; }
  std::byte* data() const noexcept { return data_; }

 private:
  friend class TensorDyn;
  explicit WriteMap(MapBase&& base) noexcept : MapBase(std::move(base)) {}
};

/// Read and write access.
class ReadWriteMap final : public MapBase {
 public:
  /// An empty map (not mapped; empty span).
  ReadWriteMap() noexcept = default;
  std::span<std::byte> bytes() const noexcept { return {data_, extent_bytes_}; }
  std::byte* data() const noexcept { return data_; }

 private:
  friend class TensorDyn;
  explicit ReadWriteMap(MapBase&& base) noexcept : MapBase(std::move(base)) {}
};

/// A map viewed as elements of T (T const-qualified for reads). The span covers the tensor's extent;
/// for a non-contiguous tensor, index it with the tensor's strides divided by sizeof(T).
template <class T, class M>
  requires(!std::is_same_v<M, ReadMap> || std::is_const_v<T>)  // a read map gives const elements only
class TypedMap {
 public:
  explicit TypedMap(M map) noexcept : map_(std::move(map)) {}
  std::span<T> span() const noexcept {
    return {reinterpret_cast<T*>(const_cast<std::byte*>(reinterpret_cast<const std::byte*>(map_.data()))),
            map_.extent_bytes() / sizeof(T)};
  }
  T* data() const noexcept { return span().data(); }
  std::size_t size() const noexcept { return span().size(); }
  T& operator[](std::size_t i) const noexcept { return span()[i]; }
  void unmap() noexcept { map_.unmap(); }
  const M& untyped() const noexcept { return map_; }

 private:
  M map_;
};

}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
