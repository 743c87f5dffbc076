// SPDX-License-Identifier: Apache-2.0
// CPU maps (include/edgetensor/map.h, src/core/tensor.cpp): typed by direction at compile time, RAII,
// idempotent unmap, keep the storage alive, and no system call per map on heap and shm.
#include <edgetensor/edgetensor.h>
#include <gtest/gtest.h>

#include <cstring>
#include <type_traits>
#include <vector>

#include "core/storage.h"
#include "support/test_support.h"

using namespace edgetensor;
using et_test::mem;

namespace {

// ---- compile-time rules --------------------------------------------------------------------------
template <class M>
concept WritableBytes = requires(const M& m) { m.bytes()[0] = std::byte{1}; };
template <class M>
concept WritableData = requires(const M& m) { *m.data() = std::byte{1}; };
template <class M>
concept WritableElements = requires(const M& m) { m[0] = {}; };
template <class T, class M>
concept TypedMapExists = requires { typename TypedMap<T, M>; };

// Writing through a read map does not compile.
static_assert(std::is_same_v<decltype(std::declval<const ReadMap&>().bytes()), std::span<const std::byte>>);
static_assert(std::is_same_v<decltype(std::declval<const ReadMap&>().data()), const std::byte*>);
static_assert(!WritableBytes<ReadMap>);
static_assert(!WritableData<ReadMap>);
static_assert(WritableBytes<WriteMap> && WritableData<WriteMap>);
static_assert(WritableBytes<ReadWriteMap> && WritableData<ReadWriteMap>);
// ... not even by converting it into a writable map type.
static_assert(!std::is_constructible_v<WriteMap, ReadMap&&>);
static_assert(!std::is_constructible_v<ReadWriteMap, ReadMap&&>);
static_assert(!std::is_convertible_v<ReadMap&&, WriteMap>);
static_assert(!std::is_assignable_v<WriteMap&, ReadMap&&>);
static_assert(!std::is_assignable_v<ReadWriteMap&, ReadMap&&>);
static_assert(!std::is_constructible_v<ReadWriteMap, WriteMap&&>);  // a write map cannot become readable
// Typed maps: Tensor<T>::map_read gives const elements, and a mutable TypedMap over a ReadMap cannot exist.
static_assert(std::is_same_v<decltype(std::declval<const Tensor<float>&>().map_read()),
                             Result<TypedMap<const float, ReadMap>>>);
static_assert(!WritableElements<TypedMap<const float, ReadMap>>);
static_assert(WritableElements<TypedMap<float, WriteMap>>);
static_assert(WritableElements<TypedMap<float, ReadWriteMap>>);
static_assert(TypedMapExists<const float, ReadMap>);
static_assert(!TypedMapExists<float, ReadMap>);
// Maps are move-only.
static_assert(!std::is_copy_constructible_v<ReadMap> && !std::is_copy_assignable_v<ReadMap>);
static_assert(!std::is_copy_constructible_v<WriteMap> && !std::is_copy_constructible_v<ReadWriteMap>);
static_assert(std::is_nothrow_move_constructible_v<ReadMap> && std::is_nothrow_move_assignable_v<ReadMap>);

class MapEachBackend : public ::testing::TestWithParam<MemoryKind> {};
INSTANTIATE_TEST_SUITE_P(Backends, MapEachBackend, ::testing::Values(MemoryKind::Heap, MemoryKind::Shm),
                         [](const auto& p) { return std::string(memory_kind_name(p.param)); });

TEST_P(MapEachBackend, UnmapIsIdempotentAndEmptiesTheSpan) {
  auto t = TensorDyn::allocate({256}, DType::U8, mem(GetParam()));
  ASSERT_OK(t);
  auto m = t->map_read_write();
  ASSERT_OK(m);
  EXPECT_TRUE(m->is_mapped());
  EXPECT_EQ(m->mode(), MapMode::ReadWrite);
  EXPECT_EQ(m->extent_bytes(), 256u);
  EXPECT_EQ(detail::storage_of(*t)->open_map_count(), 1);
  m->unmap();
  EXPECT_FALSE(m->is_mapped());
  EXPECT_TRUE(m->bytes().empty());
  EXPECT_EQ(m->data(), nullptr);
  EXPECT_EQ(detail::storage_of(*t)->open_map_count(), 0);
  m->unmap();  // second unmap: no effect, no log line
  EXPECT_EQ(detail::storage_of(*t)->open_map_count(), 0);
}

TEST_P(MapEachBackend, UnbalancedUnmapNeverHappens) {
  et_test::ScopedLogCapture log;
  auto t = TensorDyn::allocate({256}, DType::U8, mem(GetParam()));
  ASSERT_OK(t);
  {
    auto a = t->map_read();
    ASSERT_OK(a);
    ReadMap b = std::move(*a);      // moved-from map is empty
    EXPECT_FALSE(a->is_mapped());
    a->unmap();
    ReadMap c;
    c = std::move(b);
    ReadMap& alias = c;  // through a reference: clang's -Wself-move would refuse the plain form
    c = std::move(alias);  // self-move keeps it
    EXPECT_EQ(detail::storage_of(*t)->open_map_count(), 1);
    auto d = t->map_read();
    ASSERT_OK(d);
    EXPECT_EQ(detail::storage_of(*t)->open_map_count(), 2);
    c = std::move(*d);  // move-assign releases c's previous map
    EXPECT_EQ(detail::storage_of(*t)->open_map_count(), 1);
  }
  EXPECT_EQ(detail::storage_of(*t)->open_map_count(), 0);
  EXPECT_TRUE(log.lines().empty()) << ::testing::PrintToString(log.lines());
}

TEST_P(MapEachBackend, MapsKeepTheStorageAlive) {
  std::optional<ReadWriteMap> m;
  BufferIdentity id;
  {
    auto t = TensorDyn::allocate({4096}, DType::U8, mem(GetParam()));
    ASSERT_OK(t);
    id = t->identity();
    auto mm = t->map_read_write();
    ASSERT_OK(mm);
    m = std::move(*mm);
  }
  ASSERT_TRUE(id.alive());
  std::memset(m->data(), 0x5A, m->extent_bytes());  // ASan would flag this if the memory were gone
  EXPECT_EQ(m->bytes()[4095], std::byte{0x5A});
  m->unmap();
  EXPECT_FALSE(id.alive());
}

TEST_P(MapEachBackend, WriteMapThenReadMapSeesTheData) {
  auto t = Tensor<std::uint32_t>::allocate({16, 16}, mem(GetParam()));
  ASSERT_OK(t);
  {
    auto w = t->map_write();
    ASSERT_OK(w);
    for (std::size_t i = 0; i < w->size(); ++i) (*w)[i] = static_cast<std::uint32_t>(i * 3);
  }
  auto r = t->map_read();
  ASSERT_OK(r);
  ASSERT_EQ(r->size(), 256u);
  for (std::size_t i = 0; i < r->size(); ++i) ASSERT_EQ((*r)[i], i * 3);
  EXPECT_EQ(r->untyped().mode(), MapMode::Read);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(r->data()) % 256, 0u) << "storage base is 256-byte aligned";
}

TEST_P(MapEachBackend, AThousandMapsMakeNoSystemCall) {
  auto t = TensorDyn::allocate({1920, 1080, 4}, DType::U8, mem(GetParam()));
  ASSERT_OK(t);
  auto b = t->batch(7);
  ASSERT_OK(b);
  {
    auto first = t->map_read();  // shm makes its one persistent mapping here
    ASSERT_OK(first);
  }
  std::vector<ReadMap> open;  // any number of maps may be open at once
  open.reserve(1000);         // before the baseline: the test's own allocation may map memory
  const auto before = sys::total_calls();
  const int mappings = et_test::mapping_count();
  for (int i = 0; i < 1000; ++i) {
    switch (i % 4) {
      case 0: {
        auto m = t->map_read();
        ASSERT_OK(m);
        open.push_back(std::move(*m));
        break;
      }
      case 1: {
        auto m = t->map_write();
        ASSERT_OK(m);
        m->bytes()[static_cast<std::size_t>(i)] = std::byte{1};
        break;
      }
      case 2: {
        auto m = t->map_read_write();
        ASSERT_OK(m);
        break;
      }
      default: {
        auto m = b->map_read();
        ASSERT_OK(m);
        EXPECT_EQ(m->extent_bytes(), 1080u * 4u);
      }
    }
  }
  EXPECT_EQ(detail::storage_of(*t)->open_map_count(), 250);
  open.clear();
  EXPECT_EQ(detail::storage_of(*t)->open_map_count(), 0);
  EXPECT_EQ(sys::total_calls(), before) << "map/unmap made system calls";
  if (et_test::kExactMappingCount) {
    EXPECT_EQ(et_test::mapping_count(), mappings);
  }
}

TEST_P(MapEachBackend, MapSpanCoversTheViewExtentAtItsOffset) {
  auto t = TensorDyn::allocate({4, 8}, DType::U16, mem(GetParam()));
  ASSERT_OK(t);
  auto whole = t->map_read();
  ASSERT_OK(whole);
  auto col = t->view(6, {4}, {16});  // column 3
  ASSERT_OK(col);
  auto m = col->map_read();
  ASSERT_OK(m);
  EXPECT_EQ(m->data(), whole->data() + 6);
  EXPECT_EQ(m->extent_bytes(), 3u * 16u + 2u);
}

TEST(Map, DefaultMapIsEmpty) {
  ReadMap r;
  EXPECT_FALSE(r.is_mapped());
  EXPECT_TRUE(r.bytes().empty());
  r.unmap();
  WriteMap w;
  EXPECT_TRUE(w.bytes().empty());
}

}  // namespace
