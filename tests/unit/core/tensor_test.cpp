// SPDX-License-Identifier: Apache-2.0
// TensorDyn / Tensor<T> rules (src/core/tensor.cpp): ranks, dtypes, checked sizes, zero-byte tensors,
// views, batches, reshape, identity, same_buffer, zero-initialised contents, memory selection.
#include <edgetensor/edgetensor.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <set>
#include <vector>

#include "core/storage.h"
#include "support/test_support.h"

using namespace edgetensor;
using et_test::mem;
using et_test::open_fd_count;
using et_test::ScopedEnv;

namespace {

// Writes byte i = (i * 7 + seed) to the whole extent.
void fill_pattern(const TensorDyn& t, unsigned seed) {
  auto m = t.map_write();
  ASSERT_OK(m);
  auto b = m->bytes();
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::byte>(i * 7 + seed);
}

std::vector<std::uint8_t> read_all(const TensorDyn& t) {
  auto m = t.map_read();
  EXPECT_TRUE(m.has_value());
  if (!m) return {};
  auto b = m->bytes();
  std::vector<std::uint8_t> v(b.size());
  std::memcpy(v.data(), b.data(), b.size());
  return v;
}

const MemoryKind kCpuKinds[] = {MemoryKind::Heap, MemoryKind::Shm};

// ---- rank, dtype ---------------------------------------------------------------------------------
TEST(Tensor, AllocatesEveryRankFrom0To8) {
  for (std::size_t rank = 0; rank <= kMaxRank; ++rank) {
    SCOPED_TRACE(rank);
    std::vector<std::size_t> shape(rank, 2);
    auto t = TensorDyn::allocate(shape, DType::I16);
    ASSERT_OK(t);
    EXPECT_EQ(t->rank(), rank);
    EXPECT_TRUE(std::equal(t->shape().begin(), t->shape().end(), shape.begin(), shape.end()));
    EXPECT_EQ(t->element_count(), std::size_t{1} << rank);
    EXPECT_EQ(t->packed_bytes(), (std::size_t{1} << rank) * 2);
    EXPECT_EQ(t->extent_bytes(), t->packed_bytes());
    EXPECT_TRUE(t->is_contiguous());
    // C-contiguous byte strides: innermost = element size.
    std::int64_t expect = 2;
    for (std::size_t i = rank; i-- > 0;) {
      EXPECT_EQ(t->strides()[i], expect);
      expect *= 2;
    }
  }
}

TEST(Tensor, Rank9IsRefusedEverywhere) {
  std::vector<std::size_t> shape(9, 2);  // 512 elements
  EXPECT_ERROR(TensorDyn::allocate(shape, DType::U8), ErrorCode::InvalidArgument,
               "rank 9 exceeds the maximum rank 8");
  EXPECT_ERROR(TensorDyn::allocate(std::vector<std::size_t>(9, 1), DType::U8), ErrorCode::InvalidArgument,
               "rank 9 exceeds the maximum rank 8");
  auto t = TensorDyn::allocate({512}, DType::U8, mem(MemoryKind::Shm));
  ASSERT_OK(t);
  EXPECT_ERROR(t->view(0, shape), ErrorCode::InvalidArgument, "rank 9 exceeds the maximum rank 8");
  EXPECT_ERROR(t->reshape(shape), ErrorCode::InvalidArgument, "rank 9 exceeds the maximum rank 8");
  auto fd = t->export_fd();
  ASSERT_OK(fd);
  EXPECT_ERROR(TensorDyn::import_fd_dup(fd->get(), shape, DType::U8), ErrorCode::InvalidArgument,
               "rank 9 exceeds the maximum rank 8");
}

TEST(Tensor, InvalidDTypeIsRefused) {
  EXPECT_ERROR(TensorDyn::allocate({4}, static_cast<DType>(12)), ErrorCode::InvalidArgument, "invalid dtype 12");
  EXPECT_ERROR(TensorDyn::allocate({4}, static_cast<DType>(200)), ErrorCode::InvalidArgument, "invalid dtype 200");
}

TEST(Tensor, InvalidMemoryKindAndMisplacedShmNameAreRefused) {
  AllocateOptions bad;
  bad.memory = static_cast<MemoryKind>(42);
  EXPECT_ERROR(TensorDyn::allocate({4}, DType::U8, bad), ErrorCode::InvalidArgument, "invalid memory kind 42");
  AllocateOptions named;
  named.memory = MemoryKind::Heap;
  named.shm_name = "/et-test-misplaced";
  EXPECT_ERROR(TensorDyn::allocate({4}, DType::U8, named), ErrorCode::InvalidArgument,
               "shm_name '/et-test-misplaced' needs memory Shm, not heap");
}

// ---- checked sizes -------------------------------------------------------------------------------
TEST(Tensor, SizeOverflowIsAnErrorBeforeAnyAllocation) {
  const std::size_t huge = SIZE_MAX / 4 + 1;  // 2^62 (2^30 in 32-bit builds): huge * 8 overflows
  for (MemoryKind kind : {MemoryKind::Auto, MemoryKind::Heap, MemoryKind::Shm, MemoryKind::DmaBuf}) {
    SCOPED_TRACE(memory_kind_name(kind));
    const auto calls = sys::total_calls();
    const auto mmaps = sys::call_count(sys::Call::Mmap);
    const auto memfds = sys::call_count(sys::Call::MemfdCreate);
    const int maps = et_test::mapping_count();
    auto r = TensorDyn::allocate({huge, 8}, DType::U8, mem(kind));
    EXPECT_ERROR(r, ErrorCode::OutOfRange, "[" + std::to_string(huge) + ", 8]");
    EXPECT_NE(r.error().message().find("overflow"), std::string::npos);
    EXPECT_EQ(sys::total_calls(), calls) << "a system call was made before the size check";
    EXPECT_EQ(sys::call_count(sys::Call::Mmap), mmaps);
    EXPECT_EQ(sys::call_count(sys::Call::MemfdCreate), memfds);
    if (et_test::kExactMappingCount) {
    EXPECT_EQ(et_test::mapping_count(), maps);
  }
  }
  // Element count overflow through a wider dtype, and through the typed face.
  // kHalf * kHalf is 2^64 (2^32 in 32-bit builds): one more than size_t holds.
  constexpr std::size_t kHalf = std::size_t{1} << (sizeof(std::size_t) * 4);
  EXPECT_ERROR(TensorDyn::allocate({SIZE_MAX / 8 + 1, 8}, DType::F64), ErrorCode::OutOfRange, "overflow");
  EXPECT_ERROR(Tensor<float>::allocate({kHalf, kHalf}), ErrorCode::OutOfRange,
               "overflow");
}

TEST(Tensor, F32Shape65536SquaredIs16GiBExactlyAndIsNeverTouched) {
  for (MemoryKind kind : kCpuKinds) {
    SCOPED_TRACE(memory_kind_name(kind));
    auto t = TensorDyn::allocate({65536, 65536}, DType::F32, mem(kind));
    if (sizeof(std::size_t) < 8) {  // 16 GiB does not fit a 32-bit size_t
      EXPECT_ERROR(t, ErrorCode::OutOfRange, "overflow");
      continue;
    }
    if (!t) {  // allocation is lazy and may succeed; if the machine refuses, it must say "out of memory"
      EXPECT_EQ(t.error().code(), ErrorCode::OutOfMemory) << t.error().to_string();
      continue;
    }
    EXPECT_EQ(t->packed_bytes(), std::size_t{16} << 30);
    EXPECT_EQ(t->extent_bytes(), std::size_t{16} << 30);
    EXPECT_EQ(t->buffer_bytes(), std::size_t{16} << 30);
    EXPECT_EQ(t->strides()[0], 65536 * 4);
    EXPECT_EQ(t->memory(), kind);
  }
}

// ---- zero-byte tensors ---------------------------------------------------------------------------
TEST(Tensor, ZeroByteTensorsMakeNoAllocationWhateverMemoryIsAsked) {
  for (MemoryKind kind :
       {MemoryKind::Auto, MemoryKind::Heap, MemoryKind::Shm, MemoryKind::DmaBuf, MemoryKind::GlPbo}) {
    SCOPED_TRACE(memory_kind_name(kind));
    const auto calls = sys::total_calls();
    const int fds = open_fd_count();
    auto t = TensorDyn::allocate({0, 640, 3}, DType::U8, mem(kind));
    if (kind == MemoryKind::GlPbo) {
      // PBO memory without a context is a broken contract whatever the size (checked before the size); the zero-element
      // PBO with a real context is covered by GlPboHardware.ZeroElementTensorMakesNoBuffer.
      EXPECT_ERROR(t, ErrorCode::InvalidArgument, "gl_context is null");
      EXPECT_EQ(sys::total_calls(), calls);
      continue;
    }
    ASSERT_OK(t);
    EXPECT_EQ(sys::total_calls(), calls) << "an empty tensor made a system call";
    EXPECT_EQ(open_fd_count(), fds);
    EXPECT_EQ(t->element_count(), 0u);
    EXPECT_EQ(t->packed_bytes(), 0u);
    EXPECT_EQ(t->extent_bytes(), 0u);
    EXPECT_EQ(t->buffer_bytes(), 0u);
    EXPECT_EQ(t->rank(), 3u);
    if (kind != MemoryKind::Auto) {
      EXPECT_EQ(t->memory(), kind);
    }
    // Maps give empty spans, of every mode.
    auto r = t->map_read();
    ASSERT_OK(r);
    EXPECT_TRUE(r->bytes().empty());
    auto w = t->map_write();
    ASSERT_OK(w);
    EXPECT_TRUE(w->bytes().empty());
    auto rw = t->map_read_write();
    ASSERT_OK(rw);
    EXPECT_TRUE(rw->bytes().empty());
    // Views and reshapes work.
    auto v = t->view(0, {0, 3});
    ASSERT_OK(v);
    EXPECT_EQ(v->element_count(), 0u);
    auto rs = t->reshape({640, 0});
    ASSERT_OK(rs);
    EXPECT_EQ(rs->element_count(), 0u);
    EXPECT_TRUE(t->identity().alive());
    EXPECT_NE(t->identity().id(), 0u);
    // Nothing to export (the zero-element rule: zero_element_test.cpp).
    EXPECT_ERROR(t->export_fd(), ErrorCode::FailedPrecondition, "tensor [0, 640, 3] has zero elements: nothing to share");
    EXPECT_EQ(sys::total_calls(), calls);
    EXPECT_EQ(open_fd_count(), fds);
  }
}

TEST(Tensor, BatchOfAZeroByteTensor) {
  auto t = TensorDyn::allocate({2, 0, 3}, DType::F32, mem(MemoryKind::Shm));
  ASSERT_OK(t);
  // Batch 1 would start at byte 12 of a 0-byte buffer: ZeroElement.BatchOfAFreshZeroElementAllocation...
  auto b = t->batch(0);
  ASSERT_OK(b);
  EXPECT_EQ(b->rank(), 2u);
  EXPECT_EQ(b->element_count(), 0u);
  EXPECT_EQ(b->extent_bytes(), 0u);
  auto m = b->map_read();
  ASSERT_OK(m);
  EXPECT_TRUE(m->bytes().empty());
  EXPECT_ERROR(b->export_fd(), ErrorCode::FailedPrecondition, "tensor [0, 3] has zero elements: nothing to share");
  EXPECT_ERROR(t->batch(2), ErrorCode::OutOfRange, "batch 2 out of range: the leading dimension has 2");
  auto e = TensorDyn::allocate({0, 4}, DType::U8);
  ASSERT_OK(e);
  EXPECT_ERROR(e->batch(0), ErrorCode::OutOfRange, "batch 0 out of range: the leading dimension has 0");
}

// ---- views, batches, reshape ---------------------------------------------------------------------
TEST(Tensor, BatchIsTheNthSubTensorAndSharesStorage) {
  for (MemoryKind kind : kCpuKinds) {
    SCOPED_TRACE(memory_kind_name(kind));
    auto t = TensorDyn::allocate({3, 4, 5}, DType::U16, mem(kind));
    ASSERT_OK(t);
    fill_pattern(*t, 1);
    auto all = read_all(*t);
    for (std::size_t n = 0; n < 3; ++n) {
      auto b = t->batch(n);
      ASSERT_OK(b);
      EXPECT_EQ(b->rank(), 2u);
      EXPECT_EQ(b->shape()[0], 4u);
      EXPECT_EQ(b->shape()[1], 5u);
      EXPECT_EQ(b->strides()[0], 10);
      EXPECT_EQ(b->strides()[1], 2);
      EXPECT_EQ(b->offset_bytes(), n * 40);
      EXPECT_EQ(b->extent_bytes(), 40u);
      EXPECT_TRUE(b->identity() == t->identity());
      EXPECT_EQ(detail::storage_of(*b), detail::storage_of(*t));
      auto bytes = read_all(*b);
      EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), all.begin() + static_cast<long>(n * 40)));
    }
    EXPECT_ERROR(t->batch(3), ErrorCode::OutOfRange, "batch 3 out of range: the leading dimension has 3");
    // Writes through a batch land in the parent.
    {
      auto b2 = t->batch(2);
      ASSERT_OK(b2);
      auto m = b2->map_write();
      ASSERT_OK(m);
      m->bytes()[0] = std::byte{0xEE};
    }
    EXPECT_EQ(read_all(*t)[80], 0xEE);
    // Batching down to rank 0 and then refusing.
    auto b = t->batch(1);
    ASSERT_OK(b);
    auto bb = b->batch(3);
    ASSERT_OK(bb);
    auto scalar = bb->batch(4);
    ASSERT_OK(scalar);
    EXPECT_EQ(scalar->rank(), 0u);
    EXPECT_EQ(scalar->element_count(), 1u);
    EXPECT_EQ(scalar->offset_bytes(), 40u + 3 * 10 + 4 * 2);
    EXPECT_ERROR(scalar->batch(0), ErrorCode::FailedPrecondition, "rank-0 tensor has no leading dimension");
  }
}

TEST(Tensor, GeneralViewIsCheckedAgainstTheStorage) {
  auto t = TensorDyn::allocate({4, 8}, DType::F32, mem(MemoryKind::Shm));  // 128 B
  ASSERT_OK(t);
  fill_pattern(*t, 3);
  auto all = read_all(*t);
  // Column 2 of every row: 4 elements, 32 B apart, starting at 8 B.
  auto col = t->view(8, {4}, {32});
  ASSERT_OK(col);
  EXPECT_FALSE(col->is_contiguous());
  EXPECT_EQ(col->offset_bytes(), 8u);
  EXPECT_EQ(col->extent_bytes(), 3 * 32u + 4);
  EXPECT_TRUE(col->identity() == t->identity());
  auto cb = read_all(*col);
  ASSERT_EQ(cb.size(), 100u);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(cb[r * 32], all[8 + r * 32]);
  // The last byte of the storage is reachable; one past it is not.
  ASSERT_OK(t->view(124, {1}));
  EXPECT_ERROR(t->view(128, {1}), ErrorCode::OutOfRange, "needs 132 B (offset 128 B + extent 4 B) but the buffer has 128 B");
  ASSERT_OK(t->view(8, {4}, {36}));  // ends at 8 + 3 * 36 + 4 = 120
  EXPECT_ERROR(t->view(8, {4}, {40}), ErrorCode::OutOfRange, "needs 132 B (offset 8 B + extent 124 B) but the buffer has 128 B");
  EXPECT_ERROR(t->view(0, {33}), ErrorCode::OutOfRange, "needs 132 B");
  // Offsets are relative to the tensor's first element (a view of a batch).
  auto b = t->batch(3);
  ASSERT_OK(b);
  ASSERT_OK(b->view(28, {1}));
  EXPECT_ERROR(b->view(32, {1}), ErrorCode::OutOfRange, "needs 132 B");
  EXPECT_ERROR(t->view(SIZE_MAX - 3, {1}), ErrorCode::OutOfRange, "overflows");
  EXPECT_ERROR(b->view(SIZE_MAX - 3, {1}), ErrorCode::OutOfRange,
               "view: offset 96 B + " + std::to_string(SIZE_MAX - 3) + " B overflows");
  // Rule violations.
  EXPECT_ERROR(t->view(2, {1}), ErrorCode::InvalidArgument, "offset 2 B is not a multiple of the element size 4 B");
  EXPECT_ERROR(t->view(0, {2, 2}, {8}), ErrorCode::InvalidArgument, "1 strides given for rank 2");
  EXPECT_ERROR(t->view(0, {2, 2}, {-8, 4}), ErrorCode::InvalidArgument, "negative");
  EXPECT_ERROR(t->view(0, {2, 2}, {6, 4}), ErrorCode::InvalidArgument, "not a multiple of the element size");
  EXPECT_ERROR(t->view(0, {2, 2}, {0, 4}), ErrorCode::InvalidArgument, "stride 0 on dim 0 of size 2");
  // A zero stride on a size-1 dim is fine (broadcast-style leading dim).
  auto z = t->view(0, {1, 8}, {0, 4});
  ASSERT_OK(z);
  EXPECT_EQ(z->extent_bytes(), 32u);
}

TEST(Tensor, ReshapeKeepsBytesAndNeedsContiguity) {
  auto t = TensorDyn::allocate({4, 6}, DType::U32, mem(MemoryKind::Heap));
  ASSERT_OK(t);
  fill_pattern(*t, 5);
  auto r = t->reshape({2, 3, 4});
  ASSERT_OK(r);
  EXPECT_EQ(r->dtype(), DType::U32);
  EXPECT_EQ(r->packed_bytes(), t->packed_bytes());
  EXPECT_EQ(r->strides()[0], 48);
  EXPECT_EQ(read_all(*r), read_all(*t));
  EXPECT_TRUE(r->identity() == t->identity());
  EXPECT_ERROR(t->reshape({5, 5}), ErrorCode::InvalidArgument, "reshape [4, 6] (24 elements) to [5, 5] (25 elements)");
  constexpr std::size_t kHalf = std::size_t{1} << (sizeof(std::size_t) * 4);  // kHalf * kHalf overflows
  EXPECT_ERROR(t->reshape({kHalf, kHalf}), ErrorCode::OutOfRange, "overflow");
  auto strided = t->view(0, {4, 3}, {24, 4});  // left half of each row
  ASSERT_OK(strided);
  EXPECT_ERROR(strided->reshape({12}), ErrorCode::FailedPrecondition,
               "reshape: tensor [4, 3] with strides [24, 4] is not contiguous");
  // A contiguous batch reshapes, and keeps its offset.
  auto b = t->batch(2);
  ASSERT_OK(b);
  auto rb = b->reshape({2, 3});
  ASSERT_OK(rb);
  EXPECT_EQ(rb->offset_bytes(), 48u);
  EXPECT_EQ(read_all(*rb), read_all(*b));
  // Size-1 dims with odd strides do not break contiguity.
  auto one = t->view(0, {1, 24}, {0, 4});
  ASSERT_OK(one);
  EXPECT_TRUE(one->is_contiguous());
  ASSERT_OK(one->reshape({24}));
}

TEST(Tensor, AViewReadAfterItsParentIsDestroyedStillSeesTheData) {
  for (MemoryKind kind : kCpuKinds) {
    SCOPED_TRACE(memory_kind_name(kind));
    std::optional<TensorDyn> view;
    std::vector<std::uint8_t> expected;
    BufferIdentity id;
    {
      auto parent = TensorDyn::allocate({4, 1024}, DType::U8, mem(kind));
      ASSERT_OK(parent);
      fill_pattern(*parent, 9);
      expected = read_all(*parent);
      auto v = parent->batch(3);
      ASSERT_OK(v);
      view = std::move(*v);
      id = parent->identity();
    }
    EXPECT_TRUE(id.alive());
    auto got = read_all(*view);
    ASSERT_EQ(got.size(), 1024u);
    EXPECT_TRUE(std::equal(got.begin(), got.end(), expected.begin() + 3 * 1024));
    view.reset();
    EXPECT_FALSE(id.alive());
  }
}

// ---- contents ------------------------------------------------------------------------------------
TEST(Tensor, NewTensorsReadAsZerosAfterADirtiedBufferOfTheSameSizeWasFreed) {
  // Sizes on both sides of the heap's mmap threshold, and a 4K RGBA frame.
  const std::size_t sizes[] = {100, 4096, 60000, 1 << 20, 3840u * 2160u * 4u};
  for (MemoryKind kind : kCpuKinds) {
    for (std::size_t size : sizes) {
      SCOPED_TRACE(std::string(memory_kind_name(kind)) + " " + std::to_string(size));
      for (int round = 0; round < 3; ++round) {
        {
          auto dirty = TensorDyn::allocate({size}, DType::U8, mem(kind));
          ASSERT_OK(dirty);
          auto m = dirty->map_write();
          ASSERT_OK(m);
          std::memset(m->data(), 0xA5, m->extent_bytes());
        }
        auto fresh = TensorDyn::allocate({size}, DType::U8, mem(kind));
        ASSERT_OK(fresh);
        auto m = fresh->map_read();
        ASSERT_OK(m);
        auto b = m->bytes();
        ASSERT_EQ(b.size(), size);
        auto nonzero = std::find_if(b.begin(), b.end(), [](std::byte x) { return x != std::byte{0}; });
        ASSERT_EQ(nonzero, b.end()) << "byte " << (nonzero - b.begin()) << " of a new tensor is not zero";
      }
    }
  }
}

// ---- identity ------------------------------------------------------------------------------------
TEST(Tensor, IdentityIsUniquePerAllocationAndSharedByViews) {
  std::set<std::uint64_t> ids;
  std::vector<TensorDyn> keep;
  for (int i = 0; i < 50; ++i) {
    auto t = TensorDyn::allocate({8}, DType::U8, mem(i % 2 ? MemoryKind::Heap : MemoryKind::Shm));
    ASSERT_OK(t);
    EXPECT_NE(t->identity().id(), 0u);
    ids.insert(t->identity().id());
    keep.push_back(*t);
  }
  EXPECT_EQ(ids.size(), 50u);
  const TensorDyn& t = keep[0];
  TensorDyn copy = t;
  EXPECT_TRUE(copy.identity() == t.identity());
  EXPECT_TRUE(t.view(0, {4})->identity() == t.identity());
  EXPECT_TRUE(t.reshape({2, 4})->identity() == t.identity());
  EXPECT_TRUE(t.batch(1)->identity() == t.identity());
  EXPECT_FALSE(keep[1].identity() == t.identity());
  EXPECT_EQ(TensorDyn().identity().id(), 0u);
  EXPECT_FALSE(TensorDyn().identity().alive());
}

TEST(Tensor, LivenessTokenDiesWithTheLastHolder) {
  BufferIdentity id;
  std::optional<ReadMap> map;
  {
    auto t = TensorDyn::allocate({64}, DType::U8, mem(MemoryKind::Shm));
    ASSERT_OK(t);
    id = t->identity();
    auto v = t->view(8, {8});
    ASSERT_OK(v);
    auto m = v->map_read();
    ASSERT_OK(m);
    map = std::move(*m);
    EXPECT_TRUE(id.alive());
  }
  EXPECT_TRUE(id.alive()) << "an open map must keep the storage alive";
  map->unmap();
  EXPECT_FALSE(id.alive());
}

TEST(Tensor, SameBufferComparesTheUnderlyingObject) {
  auto a = TensorDyn::allocate({4096}, DType::U8, mem(MemoryKind::Shm));
  ASSERT_OK(a);
  auto fd = a->export_fd();
  ASSERT_OK(fd);
  auto i1 = TensorDyn::import_fd_dup(fd->get(), {4096}, DType::U8);
  ASSERT_OK(i1);
  auto i2 = TensorDyn::import_fd_dup(fd->get(), {1024}, DType::F32);
  ASSERT_OK(i2);
  // Two imports of one memfd: two identities, one buffer.
  EXPECT_FALSE(i1->identity() == i2->identity());
  EXPECT_FALSE(i1->identity() == a->identity());
  EXPECT_TRUE(i1->same_buffer(*i2));
  EXPECT_TRUE(i1->same_buffer(*a));
  EXPECT_TRUE(a->same_buffer(*i2));
  EXPECT_TRUE(a->same_buffer(*a->view(16, {16})));
  // Distinct allocations are distinct buffers, on every backend.
  auto b = TensorDyn::allocate({4096}, DType::U8, mem(MemoryKind::Shm));
  ASSERT_OK(b);
  EXPECT_FALSE(a->same_buffer(*b));
  auto h1 = TensorDyn::allocate({4096}, DType::U8, mem(MemoryKind::Heap));
  auto h2 = TensorDyn::allocate({4096}, DType::U8, mem(MemoryKind::Heap));
  ASSERT_OK(h1);
  ASSERT_OK(h2);
  EXPECT_TRUE(h1->same_buffer(*h1->batch(5)));
  EXPECT_FALSE(h1->same_buffer(*h2));
  EXPECT_FALSE(h1->same_buffer(*a));
  EXPECT_FALSE(TensorDyn().same_buffer(*a));
  // A write through one import is seen through the other.
  {
    auto m = i1->map_write();
    ASSERT_OK(m);
    m->bytes()[100] = std::byte{42};
  }
  EXPECT_EQ(read_all(*a)[100], 42);
}

// ---- typed face, metadata, empty handle ----------------------------------------------------------
TEST(Tensor, TypedTensorChecksTheDType) {
  auto t = Tensor<float>::allocate({2, 3});
  ASSERT_OK(t);
  EXPECT_EQ(t->dyn().dtype(), DType::F32);
  EXPECT_EQ(t->element_count(), 6u);
  {
    auto m = t->map_write();
    ASSERT_OK(m);
    for (std::size_t i = 0; i < m->size(); ++i) (*m)[i] = static_cast<float>(i) * 0.5f;
  }
  auto b = t->batch(1);
  ASSERT_OK(b);
  auto m = b->map_read();
  ASSERT_OK(m);
  ASSERT_EQ(m->size(), 3u);
  EXPECT_EQ((*m)[0], 1.5f);
  EXPECT_EQ((*m)[2], 2.5f);
  auto u8 = TensorDyn::allocate({4}, DType::U8);
  ASSERT_OK(u8);
  EXPECT_ERROR(Tensor<float>::from(*u8), ErrorCode::InvalidArgument, "dtype mismatch: tensor is u8, Tensor<T> wants f32");
  ASSERT_OK(Tensor<std::uint8_t>::from(*u8));
}

TEST(Tensor, NameIsKept) {
  AllocateOptions o;
  o.name = "camera0";
  auto t = TensorDyn::allocate({16}, DType::U8, o);
  ASSERT_OK(t);
  EXPECT_EQ(t->name(), "camera0");
  EXPECT_EQ(t->view(0, {4})->name(), "camera0");
  t->set_name("other");
  EXPECT_EQ(t->name(), "other");
}

TEST(Tensor, EmptyHandleFailsWithFailedPrecondition) {
  TensorDyn t;
  EXPECT_TRUE(t.is_empty_handle());
  EXPECT_ERROR(t.map_read(), ErrorCode::FailedPrecondition, "no storage");
  EXPECT_ERROR(t.map_write(), ErrorCode::FailedPrecondition, "no storage");
  EXPECT_ERROR(t.export_fd(), ErrorCode::FailedPrecondition, "no storage");
  EXPECT_ERROR(t.batch(0), ErrorCode::FailedPrecondition, "no storage");
  EXPECT_ERROR(t.view(0, {1}), ErrorCode::FailedPrecondition, "no storage");
  EXPECT_ERROR(t.reshape({1}), ErrorCode::FailedPrecondition, "no storage");
  EXPECT_EQ(t.buffer_bytes(), 0u);
  EXPECT_FALSE(t.read_only());
}

// ---- memory selection ----------------------------------------------------------------------------
TEST(Tensor, AutoReportsWhichBackendServed) {
  auto t = TensorDyn::allocate({1024}, DType::U8);
  ASSERT_OK(t);
  // DMA-BUF first where it works, else shared memory; this machine has memfd.
  EXPECT_TRUE(t->memory() == MemoryKind::DmaBuf || t->memory() == MemoryKind::Shm) << memory_kind_name(t->memory());
  EXPECT_FALSE(t->memory_detail().empty());
  auto status = backend_status(MemoryKind::Auto);
  EXPECT_TRUE(status.available);
  EXPECT_NE(status.detail.find(std::string(memory_kind_name(t->memory()))), std::string::npos) << status.detail;
}

TEST(Tensor, ForceMemEnvSelectsHeapForAutoOnly) {
  ScopedEnv env("EDGETENSOR_FORCE_MEM", "1");
  auto t = TensorDyn::allocate({1024}, DType::U8);
  ASSERT_OK(t);
  EXPECT_EQ(t->memory(), MemoryKind::Heap);
  EXPECT_NE(backend_status(MemoryKind::Auto).detail.find("EDGETENSOR_FORCE_MEM"), std::string::npos);
  // An explicit request is still honoured.
  auto s = TensorDyn::allocate({1024}, DType::U8, mem(MemoryKind::Shm));
  ASSERT_OK(s);
  EXPECT_EQ(s->memory(), MemoryKind::Shm);
}

TEST(Tensor, ExplicitRequestNeverFallsBack) {
  for (MemoryKind kind : {MemoryKind::DmaBuf, MemoryKind::GlPbo}) {
    SCOPED_TRACE(memory_kind_name(kind));
    auto t = TensorDyn::allocate({4096}, DType::U8, mem(kind));
    if (t) {
      EXPECT_EQ(t->memory(), kind) << "explicit request fell back to " << memory_kind_name(t->memory());
    } else {
      EXPECT_NE(t.error().message().find(std::string(memory_kind_name(kind))), std::string::npos)
          << t.error().to_string();
    }
  }
  // A failing explicit shm request fails instead of falling back to heap.
  et_test::ScopedFaultHook hook(et_test::fail_nth(sys::Call::MemfdCreate, 1, ENOMEM));
  EXPECT_ERROR(TensorDyn::allocate({4096}, DType::U8, mem(MemoryKind::Shm)), ErrorCode::OutOfMemory, "memfd_create");
}

TEST(Tensor, AutoFallsBackToHeapWhenSharedMemoryFails) {
  et_test::ScopedLogCapture log;
  {
    et_test::ScopedFaultHook hook([](const sys::CallInfo& c) { return c.call == sys::Call::MemfdCreate ? EMFILE : 0; });
    auto t = TensorDyn::allocate({4096}, DType::U8);
    ASSERT_OK(t);
    if (t->memory() != MemoryKind::DmaBuf) {
      EXPECT_EQ(t->memory(), MemoryKind::Heap);
    }
  }
  // The fallback it took is reported through the log callback.
  EXPECT_TRUE(log.contains("falling back")) << ::testing::PrintToString(log.lines());
}

TEST(Tensor, BackendStatus) {
  auto heap = backend_status(MemoryKind::Heap);
  EXPECT_TRUE(heap.built);
  EXPECT_TRUE(heap.available);
  auto shm = backend_status(MemoryKind::Shm);
  EXPECT_TRUE(shm.built);
  EXPECT_TRUE(shm.available) << shm.detail;
  EXPECT_EQ(shm.detail, "memfd");
  for (MemoryKind k : {MemoryKind::DmaBuf, MemoryKind::GlPbo}) {
    auto s = backend_status(k);
    EXPECT_EQ(s.kind, k);
    if (!s.available) {
      EXPECT_FALSE(s.detail.empty()) << "unavailable without a reason";
    }
  }
}


// ---- copy_to, contiguous -------------------------------------------------------------------------
// The reference: element by element through the strides, in C order.
std::vector<std::uint8_t> gather(const TensorDyn& t) {
  std::vector<std::uint8_t> out;
  auto m = t.map_read();
  EXPECT_TRUE(m.has_value());
  if (!m || t.element_count() == 0) return out;
  std::vector<std::size_t> index(t.rank(), 0);
  for (std::size_t k = 0; k < t.element_count(); ++k) {
    std::size_t offset = 0;
    for (std::size_t d = 0; d < t.rank(); ++d) offset += index[d] * static_cast<std::size_t>(t.strides()[d]);
    const auto* p = reinterpret_cast<const std::uint8_t*>(m->data()) + offset;
    out.insert(out.end(), p, p + t.element_size());
    for (std::size_t d = t.rank(); d-- > 0;) {
      if (++index[d] < t.shape()[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

TEST(TensorCopy, PacksEveryViewShapeInCOrder) {
  auto base = TensorDyn::allocate({4, 6, 5}, DType::U16, {.memory = MemoryKind::Shm});
  ASSERT_OK(base);
  fill_pattern(*base, 3);
  struct Case {
    const char* what;
    Result<TensorDyn> view;
  };
  Case cases[] = {
      {"whole (contiguous)", *base},
      {"inner slice (padded rows)", base->slice(2, 1, 4)},
      {"middle slice", base->slice(1, 2, 5)},
      {"every other element", base->view(0, {4, 6, 2}, {60, 10, 4})},
      {"transposed", base->view(0, {5, 6, 4}, {2, 10, 60})},
      {"size-1 dims with odd strides", base->view(2, {1, 3, 1, 5}, {14, 10, 1000, 2})},
      {"zero stride on a size-1 dim", base->view(0, {2, 1, 5}, {60, 0, 2})},
      {"batch", base->batch(3)},
      {"rank 0", base->view(8, {})},
      {"zero elements", base->slice(1, 2, 2)},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.what);
    ASSERT_OK(c.view);
    const TensorDyn& v = *c.view;
    const auto expect = gather(v);
    ASSERT_EQ(expect.size(), v.packed_bytes());
    std::vector<std::byte> out(v.packed_bytes() + 3, std::byte{0xEE});
    ASSERT_OK(v.copy_to(out));
    if (!expect.empty()) {  // memcmp(null) is UB
      EXPECT_EQ(std::memcmp(out.data(), expect.data(), expect.size()), 0);
    }
    for (std::size_t i = expect.size(); i < out.size(); ++i) EXPECT_EQ(out[i], std::byte{0xEE}) << "past the end " << i;

    auto copy = v.contiguous({.memory = MemoryKind::Heap});
    ASSERT_OK(copy);
    EXPECT_TRUE(copy->is_contiguous());
    EXPECT_EQ(copy->memory(), MemoryKind::Heap);
    EXPECT_FALSE(copy->same_buffer(v));
    EXPECT_TRUE(std::equal(copy->shape().begin(), copy->shape().end(), v.shape().begin(), v.shape().end()));
    EXPECT_EQ(copy->dtype(), DType::U16);
    EXPECT_EQ(gather(*copy), expect);
  }
}

TEST(TensorCopy, RefusesAShortOrOverlappingDestinationAndAnEmptyHandle) {
  auto t = TensorDyn::allocate({3, 4}, DType::F32);
  ASSERT_OK(t);
  std::vector<std::byte> small(47);
  EXPECT_ERROR(t->copy_to(small), ErrorCode::OutOfRange, "destination of 47 B is smaller than tensor [3, 4]'s 48 B");
  auto m = t->map_write();
  ASSERT_OK(m);
  EXPECT_ERROR(t->copy_to(m->bytes()), ErrorCode::InvalidArgument, "overlaps");
  auto row = t->slice(0, 0, 1);
  ASSERT_OK(row);
  EXPECT_ERROR(row->copy_to(m->bytes().subspan(8)), ErrorCode::InvalidArgument, "overlaps");  // its own bytes, shifted
  ASSERT_OK(t->slice(0, 2, 3)->copy_to(m->bytes().first(16)));  // another row of the same buffer: no overlap
  EXPECT_ERROR(TensorDyn().copy_to(small), ErrorCode::FailedPrecondition, "no storage");
  EXPECT_ERROR(TensorDyn().contiguous(), ErrorCode::FailedPrecondition, "no storage");
}

TEST(TensorCopy, ContiguousKeepsQuantizationAndColorimetryAndAllocatesAsAsked) {
  auto t = TensorDyn::allocate({2, 3}, DType::I8);
  ASSERT_OK(t);
  auto q = Quantization::per_tensor(0.5f, 3);
  ASSERT_OK(q);
  ASSERT_OK(t->set_quantization(*q));
  auto col = t->slice(1, 1, 2);
  ASSERT_OK(col);
  auto copy = col->contiguous({.memory = MemoryKind::Shm, .name = "copy"});
  ASSERT_OK(copy);
  EXPECT_EQ(copy->memory(), MemoryKind::Shm);
  EXPECT_EQ(copy->name(), "copy");
  EXPECT_EQ(copy->quantization(), col->quantization());
  EXPECT_EQ(copy->image_layout(), nullptr);
  EXPECT_ERROR(col->contiguous({.memory = MemoryKind::Heap, .shm_name = "/x"}), ErrorCode::InvalidArgument, "");
}

}  // namespace
