// SPDX-License-Identifier: Apache-2.0
// BufferKey (tensor.h): one key per underlying buffer object while a tensor of it is alive, equal
// across imports, never reused for another object (not even one the kernel gives the same inode).
#include <edgetensor/edgetensor.h>
#include <gtest/gtest.h>

#include <fcntl.h>

#include <latch>
#include <thread>
#include <unordered_set>
#include <vector>

#include "core/backend.h"
#include "core/storage.h"
#include "support/test_support.h"

using namespace edgetensor;

namespace {

TEST(BufferKey, ViewsCopiesAndImportsOfOneBufferShareItsKey) {
  auto t = TensorDyn::allocate({64, 64}, DType::U8, et_test::mem(MemoryKind::Shm));
  ASSERT_OK(t);
  const BufferKey key = t->buffer_key();
  EXPECT_NE(key.value(), 0u);
  EXPECT_EQ(t->buffer_key(), key) << "asked again";
  TensorDyn copy = *t;
  EXPECT_EQ(copy.buffer_key(), key);
  auto row = t->batch(5);
  ASSERT_OK(row);
  EXPECT_EQ(row->buffer_key(), key);

  auto fd = t->export_fd();
  ASSERT_OK(fd);
  auto a = TensorDyn::import_fd_dup(fd->get(), {4096}, DType::U8);
  auto b = TensorDyn::import_fd_dup(fd->get(), {64, 64}, DType::U8);
  ASSERT_OK(a);
  ASSERT_OK(b);
  EXPECT_NE(a->identity(), t->identity()) << "BufferIdentity: one per import";
  EXPECT_NE(a->identity(), b->identity());
  EXPECT_EQ(a->buffer_key(), key) << "the same memfd";
  EXPECT_EQ(b->buffer_key(), key);
  EXPECT_TRUE(a->same_buffer(*t));
}

TEST(BufferKey, DifferentBuffersHaveDifferentKeys) {
  std::unordered_set<BufferKey> keys;  // hashable
  std::vector<TensorDyn> alive;
  for (MemoryKind kind : {MemoryKind::Heap, MemoryKind::Shm}) {
    for (std::size_t bytes : {std::size_t{16}, std::size_t{1} << 20}) {
      auto t = TensorDyn::allocate({bytes}, DType::U8, et_test::mem(kind));
      ASSERT_OK(t);
      EXPECT_TRUE(keys.insert(t->buffer_key()).second) << memory_kind_name(kind) << " " << bytes;
      alive.push_back(std::move(*t));
    }
  }
  auto empty = TensorDyn::allocate({0, 3}, DType::U8);
  ASSERT_OK(empty);
  EXPECT_TRUE(keys.insert(empty->buffer_key()).second) << "a zero-element tensor has its own (empty) storage";
  EXPECT_EQ(TensorDyn().buffer_key(), BufferKey()) << "an empty handle has no buffer";
  EXPECT_EQ(BufferKey().value(), 0u);
  EXPECT_LT(BufferKey(1), BufferKey(2));
}

// A backing whose object key the test chooses: what the kernel answers for (st_dev, st_ino). It has an
// fd (of /dev/null) because only objects reachable by fd can be imported twice.
class FixedObject final : public detail::Backing {
 public:
  explicit FixedObject(detail::ObjectKey key) : key_(key), fd_(::open("/dev/null", O_RDONLY | O_CLOEXEC)) {}
  int fd() const noexcept override { return fd_.get(); }
  MemoryKind kind() const noexcept override { return MemoryKind::Shm; }
  std::string detail() const override { return "fixed object"; }
  std::size_t buffer_bytes() const noexcept override { return sizeof bytes_; }
  bool needs_cpu_access_bracket() const noexcept override { return false; }
  Result<std::byte*> cpu_address() override { return bytes_; }
  Result<std::byte*> begin_cpu_access(MapMode) override { return bytes_; }
  detail::ObjectKey object_key() const noexcept override { return key_; }

 private:
  detail::ObjectKey key_;
  UniqueFd fd_;
  std::byte bytes_[64]{};
};

TensorDyn on_object(detail::ObjectKey key) {
  auto t = detail::tensor_from_backing(std::make_unique<FixedObject>(key), {64}, DType::U8, {});
  EXPECT_TRUE(t.has_value());
  return t ? std::move(*t) : TensorDyn();
}

// tmpfs gives a new file the inode number of a freed one: the new file must not get the old key. What
// can be shown: while one tensor of an object is alive, every storage of it gets the key; once the last
// is gone, a storage of an object with the same (st_dev, st_ino) gets a key never seen before.
TEST(BufferKey, AnInodeNumberReusedAfterTheFileIsFreedGetsANewKey) {
  const detail::ObjectKey inode{0x2a, 1234};
  TensorDyn first = on_object(inode);
  const BufferKey old_key = first.buffer_key();
  {
    TensorDyn second_import = on_object(inode);  // the same file imported again while `first` lives
    EXPECT_EQ(second_import.buffer_key(), old_key);
  }
  EXPECT_EQ(on_object(inode).buffer_key(), old_key) << "`first` still holds the object";
  first = TensorDyn();  // the file is freed: its inode number may now go to a new file

  TensorDyn reused = on_object(inode);  // a new file with the same (st_dev, st_ino)
  const BufferKey new_key = reused.buffer_key();
  EXPECT_NE(new_key, old_key);
  EXPECT_NE(new_key.value(), 0u);
  TensorDyn reused_again = on_object(inode);
  EXPECT_EQ(reused_again.buffer_key(), new_key) << "imports of the new file share the new key";
  EXPECT_NE(on_object({0x2a, 1235}).buffer_key(), new_key) << "another inode";
}

// A storage that never asked for its key still keeps the object's key alive for later imports.
TEST(BufferKey, AStorageThatNeverAskedKeepsTheKeyOfTheLiveObject) {
  const detail::ObjectKey inode{0x2b, 77};
  TensorDyn quiet = on_object(inode);
  TensorDyn asking = on_object(inode);
  const BufferKey key = asking.buffer_key();
  EXPECT_EQ(quiet.buffer_key(), key);
  asking = TensorDyn();
  EXPECT_EQ(on_object(inode).buffer_key(), key) << "`quiet` keeps the object's key registered";
}

// Eight threads import one memfd and ask for the key at once: one key, minted once (TSan lane).
TEST(BufferKeyConcurrent, EightThreadsImportingOneBufferAgreeOnItsKey) {
  auto t = TensorDyn::allocate({1 << 16}, DType::U8, et_test::mem(MemoryKind::Shm));
  ASSERT_OK(t);
  auto fd = t->export_fd();
  ASSERT_OK(fd);
  constexpr int kThreads = 8;
  std::vector<BufferKey> keys(kThreads);
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      for (int round = 0; round < 50; ++round) {
        auto imported = TensorDyn::import_fd_dup(fd->get(), {1 << 16}, DType::U8);
        if (!imported) return;
        keys[static_cast<std::size_t>(i)] = imported->buffer_key();
      }
    });
  for (auto& th : threads) th.join();
  for (const BufferKey& k : keys) EXPECT_EQ(k, t->buffer_key());
}

}  // namespace
