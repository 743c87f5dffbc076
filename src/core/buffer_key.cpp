// SPDX-License-Identifier: Apache-2.0
// BufferKey (tensor.h). An object reachable by fd (memfd, tmpfs file, DMA-BUF) can be imported again, so
// its storages register at construction in one process-wide registry from (memory kind, st_dev/st_ino)
// to the key minted for it, counting its live storages; the entry goes when the last one does, so an
// inode number the kernel gives a new file later never brings an old key back. It also counts the storages
// that are a channel receiver's imports, so a sender in the same process can tell whether anything but a
// receiver still holds the object (buffer_key_held_by_sender_side). Any other storage (heap
// block, GL buffer, no buffer) is the only storage of its object: it takes a fresh key when first asked.
#include <edgetensor/tensor.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "core/storage.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {
namespace {

std::atomic<std::uint64_t> g_next_key{1};

struct RegistryKey {
  MemoryKind kind;
  ObjectKey object;
  friend bool operator==(const RegistryKey&, const RegistryKey&) = default;
};
struct RegistryKeyHash {
  std::size_t operator()(const RegistryKey& k) const noexcept {
    std::uint64_t h = k.object.a * 0x9E3779B97F4A7C15ull;
    h ^= k.object.b + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
    h ^= static_cast<std::uint64_t>(k.kind) << 56;
    return static_cast<std::size_t>(h ^ (h >> 32));
  }
};
struct Entry {
  std::uint64_t key = 0;
  std::size_t storages = 0;
  std::size_t received = 0;  // of `storages`: channel receivers' imports (Storage::mark_channel_import)
};

struct Registry {
  std::mutex mutex;
  std::unordered_map<RegistryKey, Entry, RegistryKeyHash> entries;  // guarded by mutex
};
Registry& registry() {
  // Leaked on purpose (docs/ARCHITECTURE.md "Threads"): storages may die during static destruction.
  static Registry* r = new Registry;
  return *r;
}

}  // namespace

std::uint64_t register_buffer_key(MemoryKind kind, const ObjectKey& object) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  Entry& e = r.entries[RegistryKey{kind, object}];
  if (e.storages++ == 0) e.key = g_next_key.fetch_add(1, std::memory_order_relaxed);
  return e.key;
}

void release_buffer_key(MemoryKind kind, const ObjectKey& object, bool received) noexcept {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.entries.find(RegistryKey{kind, object});
  if (it == r.entries.end()) return;
  if (received) --it->second.received;
  if (--it->second.storages == 0) r.entries.erase(it);
}

void mark_buffer_key_received(MemoryKind kind, const ObjectKey& object) noexcept {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.entries.find(RegistryKey{kind, object});
  if (it != r.entries.end()) ++it->second.received;
}

bool buffer_key_held_by_sender_side(MemoryKind kind, const ObjectKey& object, std::uint64_t key) noexcept {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.entries.find(RegistryKey{kind, object});
  return it != r.entries.end() && it->second.key == key && it->second.storages > it->second.received;
}

std::uint64_t Storage::buffer_key() noexcept {
  if (std::uint64_t k = buffer_key_.load(std::memory_order_acquire)) return k;
  // The only storage of its object: a fresh key, kept by whichever thread sets it first.
  std::uint64_t fresh = g_next_key.fetch_add(1, std::memory_order_relaxed);
  std::uint64_t expected = 0;
  if (buffer_key_.compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) return fresh;
  return expected;
}

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
