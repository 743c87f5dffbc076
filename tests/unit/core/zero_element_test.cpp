// SPDX-License-Identifier: Apache-2.0
// The zero-element rule (tensor.h preamble): a tensor with a 0 in its shape reaches no byte and behaves
// the same on every backend. Allocation validates every argument as for a non-empty tensor and refuses
// shm_name; views keep and check their offset; maps are empty; export_fd refuses it first of all.
// (The real-GL PBO case: GlPboHardware.ZeroElementTensorMakesNoBuffer.)
#include <edgetensor/edgetensor.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "support/test_support.h"

using namespace edgetensor;
using et_test::mem;
using et_test::open_fd_count;
using et_test::unique_shm_name;

namespace {

AllocateOptions named_shm(std::string name) {
  AllocateOptions o = mem(MemoryKind::Shm);
  o.shm_name = std::move(name);
  return o;
}

// A memfd of `size` bytes sealed against shrink and grow (what a careful peer sends).
UniqueFd sealed_memfd(std::size_t size) {
  UniqueFd fd(::memfd_create("et-zero", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  EXPECT_TRUE(fd.is_valid());
  EXPECT_EQ(::ftruncate(fd.get(), static_cast<off_t>(size)), 0);
  EXPECT_EQ(::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
  return fd;
}

constexpr const char* kNothingToShare = "has zero elements: nothing to share";

// ---- allocation ----------------------------------------------------------------------------------
TEST(ZeroElement, AllocationValidatesEveryArgumentAsForANonEmptyTensor) {
  const std::vector<std::size_t> zero = {0, 3};
  const std::vector<std::size_t> full = {2, 3};
  const std::string too_long = "/" + std::string(300, 'x');
  for (const auto& shape : {zero, full}) {
    SCOPED_TRACE(shape[0] == 0 ? "zero elements" : "two rows");
    ArrayRef<std::size_t> s(shape.data(), shape.size());
    EXPECT_ERROR(TensorDyn::allocate(s, static_cast<DType>(99)), ErrorCode::InvalidArgument, "invalid dtype 99");
    const std::vector<std::size_t> rank9 = {shape[0], 1, 1, 1, 1, 1, 1, 1, 1};
    EXPECT_ERROR(TensorDyn::allocate(ArrayRef<std::size_t>(rank9.data(), rank9.size()), DType::U8),
                 ErrorCode::InvalidArgument, "rank 9 exceeds the maximum rank 8");
    EXPECT_ERROR(TensorDyn::allocate(s, DType::U8, mem(static_cast<MemoryKind>(9))), ErrorCode::InvalidArgument,
                 "invalid memory kind 9");
    EXPECT_ERROR(TensorDyn::allocate(s, DType::U8, mem(MemoryKind::GlPbo)), ErrorCode::InvalidArgument,
                 "gl_context is null");
    AllocateOptions heap_named = mem(MemoryKind::Heap);
    heap_named.shm_name = "/et-zero";
    EXPECT_ERROR(TensorDyn::allocate(s, DType::U8, heap_named), ErrorCode::InvalidArgument, "needs memory Shm");
    // The shm backend's own validator, also where the backend is never reached.
    for (const std::string& bad : {std::string("cam0"), std::string("/"), std::string("/a/b"), std::string("/."),
                                   std::string("/.."), too_long}) {
      SCOPED_TRACE(bad);
      EXPECT_ERROR(TensorDyn::allocate(s, DType::U8, named_shm(bad)), ErrorCode::InvalidArgument,
                   "POSIX shm name '" + bad + "' is invalid");
    }
  }
}

TEST(ZeroElement, AllocationWithShmNameIsRefusedNamingShapeAndName) {
  const int entries = et_test::dev_shm_entry_count();
  const std::string name = unique_shm_name("zero");
  auto t = TensorDyn::allocate({0, 3}, DType::F32, named_shm(name));
  EXPECT_ERROR(t, ErrorCode::InvalidArgument, "[0, 3]");
  EXPECT_NE(t.error().message().find("'" + name + "'"), std::string::npos) << t.error().message();
  EXPECT_NE(t.error().message().find("zero elements"), std::string::npos) << t.error().message();
  EXPECT_EQ(et_test::dev_shm_entry_count(), entries) << "a 0-byte named object was created";
  // A taken name gets the same answer: the zero-element request is wrong whatever exists.
  auto owner = TensorDyn::allocate({64}, DType::U8, named_shm(name));
  ASSERT_OK(owner);
  EXPECT_ERROR(TensorDyn::allocate({4, 0}, DType::U8, named_shm(name)), ErrorCode::InvalidArgument, "[4, 0]");
  EXPECT_EQ(owner->buffer_bytes(), 64u);
  ASSERT_OK(shm::remove(name));
}

TEST(ZeroElement, AllocationMakesNoBufferAndReportsTheKindAsked) {
  const struct {
    MemoryKind asked;
    MemoryKind reported;
  } cases[] = {{MemoryKind::Auto, MemoryKind::Heap},
               {MemoryKind::Heap, MemoryKind::Heap},
               {MemoryKind::Shm, MemoryKind::Shm},
               {MemoryKind::DmaBuf, MemoryKind::DmaBuf}};
  for (const auto& c : cases) {
    SCOPED_TRACE(memory_kind_name(c.asked));
    const int fds = open_fd_count();
    auto t = TensorDyn::allocate({3, 0}, DType::U16, mem(c.asked));
    ASSERT_OK(t);
    EXPECT_EQ(t->memory(), c.reported);
    EXPECT_EQ(t->buffer_bytes(), 0u);
    EXPECT_EQ(t->offset_bytes(), 0u);
    EXPECT_EQ(open_fd_count(), fds);
    auto r = t->map_read();
    ASSERT_OK(r);
    EXPECT_EQ(r->data(), nullptr);
    EXPECT_EQ(r->extent_bytes(), 0u);
  }
}

// ---- views keep and check their offset -----------------------------------------------------------
TEST(ZeroElement, ViewKeepsItsOffsetAndChecksItLikeAnyView) {
  for (MemoryKind kind : {MemoryKind::Heap, MemoryKind::Shm}) {
    SCOPED_TRACE(memory_kind_name(kind));
    auto t = TensorDyn::allocate({4, 8}, DType::F32, mem(kind));  // 128 B
    ASSERT_OK(t);
    auto v = t->view(64, {0, 3});
    ASSERT_OK(v);
    EXPECT_EQ(v->offset_bytes(), 64u) << "a zero-element view's offset is kept, never reset";
    EXPECT_EQ(v->element_count(), 0u);
    EXPECT_EQ(v->extent_bytes(), 0u);
    // The end of the buffer is a valid place for an empty view; one element past it is not.
    auto end = t->view(128, {0});
    ASSERT_OK(end);
    EXPECT_EQ(end->offset_bytes(), 128u);
    EXPECT_ERROR(t->view(132, {0}), ErrorCode::OutOfRange, "the buffer has 128 B");
    EXPECT_ERROR(t->view(4096, {0, 3}), ErrorCode::OutOfRange, "offset 4096 B");
    EXPECT_ERROR(t->view(2, {0}), ErrorCode::InvalidArgument, "offset 2 B is not a multiple of the element size 4 B");
    // Relative to the view's first element, as for any view.
    auto vv = v->view(32, {0});
    ASSERT_OK(vv);
    EXPECT_EQ(vv->offset_bytes(), 96u);
    EXPECT_ERROR(v->view(68, {0}), ErrorCode::OutOfRange, "offset 132 B");
    // Reshape keeps the offset.
    auto rs = v->reshape({3, 0, 1});
    ASSERT_OK(rs);
    EXPECT_EQ(rs->offset_bytes(), 64u);
    // Maps are empty and never touch the bytes at the offset.
    auto m = v->map_write();
    ASSERT_OK(m);
    EXPECT_EQ(m->data(), nullptr);
    EXPECT_EQ(m->extent_bytes(), 0u);
  }
}

TEST(ZeroElement, BatchKeepsItsOffsetAndChecksIt) {
  auto t = TensorDyn::allocate({4, 8}, DType::F32, mem(MemoryKind::Heap));  // 128 B
  ASSERT_OK(t);
  // Three empty rows, 32 B apart, from byte 32: batch n starts at 32 + 32 n.
  auto rows = t->view(32, {3, 0}, {32, 4});
  ASSERT_OK(rows);
  auto b = rows->batch(2);
  ASSERT_OK(b);
  EXPECT_EQ(b->offset_bytes(), 96u) << "a zero-element batch's offset is kept, never reset";
  EXPECT_EQ(b->element_count(), 0u);
  // Rows far apart: the empty batch would start past the buffer's end.
  auto far = t->view(0, {3, 0}, {100, 4});
  ASSERT_OK(far);
  ASSERT_OK(far->batch(1));
  EXPECT_EQ(far->batch(1)->offset_bytes(), 100u);
  EXPECT_ERROR(far->batch(2), ErrorCode::OutOfRange, "the buffer has 128 B");
  // A stride so large that n * stride overflows is an error, never a wrap.
  const auto huge = static_cast<std::int64_t>(INT64_MAX / 4 * 4);
  auto wide = t->view(0, {5, 0}, {huge, 4});
  ASSERT_OK(wide);
  EXPECT_ERROR(wide->batch(4), ErrorCode::OutOfRange, "overflows");
  EXPECT_ERROR(wide->batch(1), ErrorCode::OutOfRange, "the buffer has 128 B");
}

TEST(ZeroElement, ImportKeepsAndChecksItsOffset) {
  UniqueFd fd = sealed_memfd(4096);
  ImportOptions o;
  o.offset_bytes = 4096;
  auto end = TensorDyn::import_fd_dup(fd.get(), {0, 16}, DType::U32, o);
  ASSERT_OK(end);
  EXPECT_EQ(end->offset_bytes(), 4096u);
  EXPECT_EQ(end->buffer_bytes(), 4096u);
  o.offset_bytes = 4100;
  EXPECT_ERROR(TensorDyn::import_fd_dup(fd.get(), {0, 16}, DType::U32, o), ErrorCode::OutOfRange,
               "the buffer has 4096 B");
  o.offset_bytes = 6;
  EXPECT_ERROR(TensorDyn::import_fd_dup(fd.get(), {0}, DType::U32, o), ErrorCode::InvalidArgument,
               "not a multiple of the element size");
}

TEST(ZeroElement, IsContiguousAndReshapesWhereverItsZeroDimensionIs) {
  // C-contiguous strides count a 0 as 1 ([2, 0, 3] F32: 12, 12, 4); a tensor that reaches no byte is
  // contiguous whatever its strides, so it reshapes to any zero-element shape.
  for (const std::vector<std::size_t>& shape : {std::vector<std::size_t>{0, 2, 3}, std::vector<std::size_t>{2, 0, 3},
                                                 std::vector<std::size_t>{2, 3, 0}}) {
    SCOPED_TRACE(::testing::PrintToString(shape));
    auto t = TensorDyn::allocate(shape, DType::F32);
    ASSERT_OK(t);
    EXPECT_TRUE(t->is_contiguous());
    auto r = t->reshape({3, 0});
    ASSERT_OK(r);
    EXPECT_EQ(r->element_count(), 0u);
    EXPECT_EQ(r->offset_bytes(), 0u);
  }
  auto t = TensorDyn::allocate({4, 8}, DType::F32);
  ASSERT_OK(t);
  auto strided = t->view(16, {2, 0}, {64, 8});
  ASSERT_OK(strided);
  EXPECT_TRUE(strided->is_contiguous());
  auto r = strided->reshape({0});
  ASSERT_OK(r);
  EXPECT_EQ(r->offset_bytes(), 16u);
}

TEST(ZeroElement, BatchOfAFreshZeroElementAllocationBeyondItsEmptyBufferIsOutOfRange) {
  // [2, 0, 3] F32 has strides 12, 12, 4 and a 0-byte buffer: batch 0 starts at byte 0, batch 1 would
  // start at byte 12, past the buffer's end. Kept and checked like any view's offset, never reset.
  auto t = TensorDyn::allocate({2, 0, 3}, DType::F32);
  ASSERT_OK(t);
  auto b0 = t->batch(0);
  ASSERT_OK(b0);
  EXPECT_EQ(b0->offset_bytes(), 0u);
  EXPECT_ERROR(t->batch(1), ErrorCode::OutOfRange, "needs 12 B (offset 12 B + extent 0 B) but the buffer has 0 B");
}

// ---- maps ----------------------------------------------------------------------------------------
TEST(ZeroElement, MapsAreEmptyAndWriteMapsOfReadOnlyStorageAreStillRefused) {
  UniqueFd rw = sealed_memfd(4096);
  UniqueFd ro(::open(et_test::proc_fd_path(rw.get()).c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(ro.is_valid());
  auto t = TensorDyn::import_fd_dup(ro.get(), {0}, DType::U8);
  ASSERT_OK(t);
  EXPECT_TRUE(t->read_only());
  auto r = t->map_read();
  ASSERT_OK(r);
  EXPECT_EQ(r->data(), nullptr);
  EXPECT_EQ(r->extent_bytes(), 0u);
  EXPECT_ERROR(t->map_write(), ErrorCode::PermissionDenied, "read-only");
  EXPECT_ERROR(t->map_read_write(), ErrorCode::PermissionDenied, "read-only");
}

// ---- export_fd -----------------------------------------------------------------------------------
TEST(ZeroElement, ExportFdRefusesEveryZeroElementTensorWhateverItsMemory) {
  const int fds = open_fd_count();
  // Allocated with zero elements, on every CPU-reachable kind (DMA-BUF makes no buffer either).
  for (MemoryKind kind : {MemoryKind::Auto, MemoryKind::Heap, MemoryKind::Shm, MemoryKind::DmaBuf}) {
    SCOPED_TRACE(memory_kind_name(kind));
    auto t = TensorDyn::allocate({0, 3}, DType::U8, mem(kind));
    ASSERT_OK(t);
    EXPECT_ERROR(t->export_fd(), ErrorCode::FailedPrecondition, std::string("tensor [0, 3] ") + kNothingToShare);
  }
  // A zero-element view of a non-empty tensor: heap (otherwise Unsupported), memfd and named shm
  // (otherwise the whole buffer would be exported).
  const std::string name = unique_shm_name("zero-view");
  AllocateOptions named = named_shm(name);
  for (const AllocateOptions& o : {mem(MemoryKind::Heap), mem(MemoryKind::Shm), named}) {
    SCOPED_TRACE(std::string(memory_kind_name(o.memory)) + " " + o.shm_name);
    auto t = TensorDyn::allocate({4, 8}, DType::F32, o);
    ASSERT_OK(t);
    auto v = t->view(32, {2, 0});
    ASSERT_OK(v);
    EXPECT_ERROR(v->export_fd(), ErrorCode::FailedPrecondition, std::string("tensor [2, 0] ") + kNothingToShare);
    auto b = t->view(0, {0, 8})->reshape({0});
    ASSERT_OK(b);
    EXPECT_ERROR(b->export_fd(), ErrorCode::FailedPrecondition, std::string("tensor [0] ") + kNothingToShare);
  }
  ASSERT_OK(shm::remove(name));
  // Imports: a 0-byte memfd (the tensor holds an fd) and an empty view of a non-empty one.
  {
    UniqueFd empty = sealed_memfd(0);
    auto t = TensorDyn::import_fd_dup(empty.get(), {0}, DType::U8);
    ASSERT_OK(t);
    EXPECT_EQ(t->memory(), MemoryKind::Shm);
    EXPECT_ERROR(t->export_fd(), ErrorCode::FailedPrecondition, std::string("tensor [0] ") + kNothingToShare);
    UniqueFd full = sealed_memfd(4096);
    auto z = TensorDyn::adopt_fd(std::move(full), {16, 0}, DType::U8);
    ASSERT_OK(z);
    EXPECT_EQ(z->buffer_bytes(), 4096u);
    EXPECT_ERROR(z->export_fd(), ErrorCode::FailedPrecondition, std::string("tensor [16, 0] ") + kNothingToShare);
  }
  EXPECT_EQ(open_fd_count(), fds);
  // An empty handle is not a tensor: it still says it has no storage.
  EXPECT_ERROR(TensorDyn().export_fd(), ErrorCode::FailedPrecondition, "no storage");
}

}  // namespace
