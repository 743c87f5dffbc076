// SPDX-License-Identifier: Apache-2.0
// DLPack import (dlpack.h adopt_*): foreign storage, the producer's deleter (once, when the last view
// goes, from any thread), and every refusal as a named error after which the deleter has run.
#include <edgetensor/dlpack.h>
#include <edgetensor/edgetensor.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <limits>
#include <thread>
#include <vector>

#include "support/test_support.h"

using namespace edgetensor;
namespace dl = edgetensor::dlpack;

namespace {

// A stand-in for another library's tensor: its own memory, shape and strides, and a deleter that counts.
struct Producer {
  static inline std::atomic<int> deleted{0};
  static inline std::atomic<std::thread::id> deleted_on{};
  alignas(64) std::int64_t storage[64] = {};
  std::int64_t shape[9] = {};
  std::int64_t strides[9] = {};
  dl::ManagedTensorVersioned versioned{};
  dl::ManagedTensor legacy{};

  static void delete_versioned(dl::ManagedTensorVersioned* self) {
    deleted_on = std::this_thread::get_id();
    ++deleted;
    delete static_cast<Producer*>(self->manager_ctx);
  }
  static void delete_legacy(dl::ManagedTensor* self) {
    deleted_on = std::this_thread::get_id();
    ++deleted;
    delete static_cast<Producer*>(self->manager_ctx);
  }
  // A C-contiguous f32 tensor of `dims` over `storage`, strides given (elements) unless null_strides.
  static Producer* make(std::vector<std::int64_t> dims, bool null_strides = false,
                        dl::DataType dtype = {static_cast<std::uint8_t>(dl::TypeCode::Float), 32, 1}) {
    auto* p = new Producer;
    std::int64_t s = 1;
    for (std::size_t i = dims.size(); i-- > 0;) {
      p->shape[i] = dims[i];
      p->strides[i] = s;
      s *= dims[i] == 0 ? 1 : dims[i];
    }
    dl::DlTensor t{p->storage, {dl::DeviceType::Cpu, 0}, static_cast<std::int32_t>(dims.size()), dtype, p->shape,
                   null_strides ? nullptr : p->strides, 0};
    p->versioned = {dl::kVersion, p, &delete_versioned, 0, t};
    p->legacy = {t, p, &delete_legacy};
    return p;
  }
};

class DlpackImport : public ::testing::Test {
 protected:
  void SetUp() override {
    Producer::deleted = 0;
    imports_ = dl::live_import_count();
  }
  void TearDown() override { EXPECT_EQ(dl::live_import_count(), imports_); }
  // adopt_versioned must fail with `code` and `needle`, and the producer's deleter must have run once.
  void expect_refused(Producer* p, ErrorCode code, const std::string& needle) {
    const int before = Producer::deleted;
    EXPECT_ERROR(dl::adopt_versioned(&p->versioned), code, needle);
    EXPECT_EQ(Producer::deleted, before + 1) << "the deleter runs on every refusal";
  }
  void expect_refused_legacy(Producer* p, ErrorCode code, const std::string& needle) {
    const int before = Producer::deleted;
    EXPECT_ERROR(dl::adopt_legacy(&p->legacy), code, needle);
    EXPECT_EQ(Producer::deleted, before + 1);
  }
  std::size_t imports_ = 0;
};

TEST_F(DlpackImport, VersionedBecomesAForeignTensorOverTheProducersMemory) {
  Producer* p = Producer::make({2, 3, 4});
  p->storage[5] = 42;
  dl::ImportOptions o;
  o.name = "from-producer";
  auto t = dl::adopt_versioned(&p->versioned, o);
  ASSERT_OK(t);
  EXPECT_EQ(t->memory(), MemoryKind::Foreign);
  EXPECT_EQ(t->dtype(), DType::F32);
  EXPECT_EQ(std::vector<std::size_t>(t->shape().begin(), t->shape().end()), (std::vector<std::size_t>{2, 3, 4}));
  EXPECT_EQ(std::vector<std::int64_t>(t->strides().begin(), t->strides().end()),
            (std::vector<std::int64_t>{48, 16, 4}));
  EXPECT_EQ(t->name(), "from-producer");
  EXPECT_FALSE(t->read_only());
  EXPECT_NE(t->memory_detail().find("dlpack 1.1 kDLCPU:0"), std::string::npos) << t->memory_detail();
  auto m = t->map_read_write();
  ASSERT_OK(m);
  EXPECT_EQ(static_cast<const void*>(m->data()), static_cast<const void*>(p->storage));
  EXPECT_EQ(dl::live_import_count(), imports_ + 1);
  EXPECT_EQ(Producer::deleted, 0);
  m->unmap();
  *t = TensorDyn();
  EXPECT_EQ(Producer::deleted, 1);
}

// The deleter runs when the LAST view goes: views, batches and maps outlive the original tensor.
TEST_F(DlpackImport, DeleterRunsWhenTheLastViewGoes) {
  Producer* p = Producer::make({4, 4});
  auto t = dl::adopt_legacy(&p->legacy);
  ASSERT_OK(t);
  auto b = t->batch(2);
  ASSERT_OK(b);
  auto r = t->reshape({16});
  ASSERT_OK(r);
  auto m = r->map_read();
  ASSERT_OK(m);
  BufferIdentity id = t->identity();
  *t = TensorDyn();
  *r = TensorDyn();
  EXPECT_EQ(Producer::deleted, 0);
  *b = TensorDyn();
  EXPECT_EQ(Producer::deleted, 0) << "the map still holds the storage";
  EXPECT_TRUE(id.alive());
  m->unmap();
  EXPECT_EQ(Producer::deleted, 1);
  EXPECT_FALSE(id.alive());
}

TEST_F(DlpackImport, DeleterRunsOnTheThreadThatDropsTheLastView) {
  Producer* p = Producer::make({8});
  auto t = dl::adopt_versioned(&p->versioned);
  ASSERT_OK(t);
  std::thread::id other;
  std::thread th([&, v = std::move(*t)]() mutable {
    other = std::this_thread::get_id();
    v = TensorDyn();
  });
  th.join();
  EXPECT_EQ(Producer::deleted, 1);
  EXPECT_EQ(Producer::deleted_on.load(), other);
}

TEST_F(DlpackImport, RunDeleterWrapsTheCallOnce) {
  Producer* p = Producer::make({8});
  int wrapped = 0;
  dl::ImportOptions o;
  o.run_deleter = [&](const std::function<void()>& call) {
    ++wrapped;
    EXPECT_EQ(Producer::deleted, wrapped - 1) << "the wrapper runs before the deleter";
    call();
  };
  auto t = dl::adopt_versioned(&p->versioned, o);
  ASSERT_OK(t);
  *t = TensorDyn();
  EXPECT_EQ(wrapped, 1);
  EXPECT_EQ(Producer::deleted, 1);
  // On a refusal too: the wrapper runs inside adopt_*.
  Producer* q = Producer::make({8});
  q->versioned.dl_tensor.dtype.lanes = 2;
  EXPECT_FALSE(dl::adopt_versioned(&q->versioned, o).has_value());
  EXPECT_EQ(wrapped, 2);
  EXPECT_EQ(Producer::deleted, 2);
}

TEST_F(DlpackImport, RoundTripThroughOurOwnExportSharesTheBytes) {
  auto t = TensorDyn::allocate({3, 5}, DType::I32, et_test::mem(MemoryKind::Shm));
  ASSERT_OK(t);
  auto v = t->slice(1, 1, 4);
  ASSERT_OK(v);
  auto e = dl::export_versioned(*v);
  ASSERT_OK(e);
  auto back = dl::adopt_versioned(*e);
  ASSERT_OK(back);
  EXPECT_EQ(back->memory(), MemoryKind::Foreign);
  EXPECT_EQ(std::vector<std::int64_t>(back->strides().begin(), back->strides().end()),
            (std::vector<std::int64_t>{20, 4}));
  {
    auto w = back->map_write();
    ASSERT_OK(w);
    reinterpret_cast<std::int32_t*>(w->data())[0] = 77;  // element [0, 1] of t
  }
  auto r = t->map_read();
  ASSERT_OK(r);
  EXPECT_EQ(reinterpret_cast<const std::int32_t*>(r->data())[1], 77);
  r->unmap();
  const std::size_t exports = dl::live_export_count();
  *back = TensorDyn();
  EXPECT_EQ(dl::live_export_count(), exports - 1) << "our export's deleter ran when the import went";
}

TEST_F(DlpackImport, ReadOnlyFlagGivesReadOnlyStorage) {
  Producer* p = Producer::make({16});
  p->versioned.flags = dl::kFlagReadOnly | dl::kFlagIsCopied;
  auto t = dl::adopt_versioned(&p->versioned);
  ASSERT_OK(t);
  EXPECT_TRUE(t->read_only());
  EXPECT_ERROR(t->map_write(), ErrorCode::PermissionDenied, "read-only");
  EXPECT_ERROR(t->map_read_write(), ErrorCode::PermissionDenied, "read-only");
  ASSERT_OK(t->map_read());
  auto e = dl::export_versioned(*t);  // re-exported: still flagged
  ASSERT_OK(e);
  EXPECT_EQ((*e)->flags, dl::kFlagReadOnly);
  (*e)->deleter(*e);
  EXPECT_ERROR(dl::export_legacy(*t), ErrorCode::PermissionDenied, "foreign storage");
}

// A legacy tensor (or a versioned one before 1.2) may leave strides null: compact row-major.
TEST_F(DlpackImport, NullStridesMeanRowMajor) {
  Producer* p = Producer::make({2, 3, 5}, true);
  auto t = dl::adopt_legacy(&p->legacy);
  ASSERT_OK(t);
  EXPECT_EQ(std::vector<std::int64_t>(t->strides().begin(), t->strides().end()),
            (std::vector<std::int64_t>{60, 20, 4}));
  EXPECT_TRUE(t->is_contiguous());
  Producer* q = Producer::make({7, 2}, true);
  auto u = dl::adopt_versioned(&q->versioned);
  ASSERT_OK(u);
  EXPECT_EQ(std::vector<std::int64_t>(u->strides().begin(), u->strides().end()), (std::vector<std::int64_t>{8, 4}));
}

TEST_F(DlpackImport, ZeroElementsKeepTheirShapeAndMayHaveNullData) {
  Producer* p = Producer::make({3, 0, 2});
  p->versioned.dl_tensor.data = nullptr;
  auto t = dl::adopt_versioned(&p->versioned);
  ASSERT_OK(t);
  EXPECT_EQ(std::vector<std::size_t>(t->shape().begin(), t->shape().end()), (std::vector<std::size_t>{3, 0, 2}));
  EXPECT_EQ(t->element_count(), 0u);
  auto m = t->map_read();
  ASSERT_OK(m);
  EXPECT_EQ(m->extent_bytes(), 0u);
}

TEST_F(DlpackImport, ByteOffsetIsHonoured) {
  Producer* p = Producer::make({4});
  p->legacy.dl_tensor.byte_offset = 16;
  auto t = dl::adopt_legacy(&p->legacy);
  ASSERT_OK(t);
  auto m = t->map_read();
  ASSERT_OK(m);
  EXPECT_EQ(static_cast<const void*>(m->data()), static_cast<const void*>(reinterpret_cast<std::byte*>(p->storage) + 16));
}

TEST_F(DlpackImport, LegacyNullDeleterIsNeverCalled) {
  Producer* p = Producer::make({4});
  p->legacy.deleter = nullptr;
  {
    auto t = dl::adopt_legacy(&p->legacy);
    ASSERT_OK(t);
  }
  EXPECT_EQ(Producer::deleted, 0);
  delete p;
}

TEST_F(DlpackImport, NullManagedIsRefusedAndNothingDone) {
  EXPECT_ERROR(dl::adopt_versioned(nullptr), ErrorCode::InvalidArgument, "null");
  EXPECT_ERROR(dl::adopt_legacy(nullptr), ErrorCode::InvalidArgument, "null");
}

// An unknown major version: the deleter is called and nothing else is read. The tensor fields point at
// unmapped memory, so reading any of them would crash (and ASan would name it).
TEST_F(DlpackImport, UnknownMajorVersionCallsTheDeleterAndReadsNothingElse) {
  for (std::uint32_t major : {0u, 2u, 99u}) {
    SCOPED_TRACE(major);
    Producer* p = Producer::make({4});
    p->versioned.version = {major, 7};
    p->versioned.flags = ~std::uint64_t{0};
    p->versioned.dl_tensor.shape = reinterpret_cast<std::int64_t*>(std::uintptr_t{8});
    p->versioned.dl_tensor.strides = reinterpret_cast<std::int64_t*>(std::uintptr_t{8});
    p->versioned.dl_tensor.ndim = 1000;
    expect_refused(p, ErrorCode::Unsupported, "version " + std::to_string(major) + ".7 has major " + std::to_string(major));
    Producer* q = Producer::make({4});
    q->versioned.version = {major, 0};
    expect_refused(q, ErrorCode::Unsupported, "this library reads major 1");
  }
}

TEST_F(DlpackImport, DeviceTheCpuCannotReachIsRefused) {
  for (auto dev : {dl::DeviceType::Cuda, dl::DeviceType::CudaManaged, dl::DeviceType::Rocm, dl::DeviceType::Vulkan,
                   static_cast<dl::DeviceType>(99)}) {
    SCOPED_TRACE(static_cast<int>(dev));
    Producer* p = Producer::make({4});
    p->versioned.dl_tensor.device = {dev, 1};
    expect_refused(p, ErrorCode::Unsupported, "is not CPU-addressable");
  }
  Producer* p = Producer::make({4});
  p->legacy.dl_tensor.device = {dl::DeviceType::Cuda, 0};
  expect_refused_legacy(p, ErrorCode::Unsupported, "device kDLCUDA (2):0");
  for (auto dev : {dl::DeviceType::CudaHost, dl::DeviceType::RocmHost}) {  // pinned host memory: CPU-addressable
    Producer* q = Producer::make({4});
    q->versioned.dl_tensor.device = {dev, 0};
    auto t = dl::adopt_versioned(&q->versioned);
    ASSERT_OK(t);
  }
}

TEST_F(DlpackImport, NegativeStridesAreRefused) {
  Producer* p = Producer::make({4, 2});
  p->strides[0] = -2;
  expect_refused(p, ErrorCode::Unsupported, "stride -2 of dimension 0 is negative");
}

TEST_F(DlpackImport, BroadcastZeroStrideIsRefused) {
  Producer* p = Producer::make({4, 2});
  p->strides[0] = 0;
  expect_refused(p, ErrorCode::InvalidArgument, "stride 0 on dimension 0 of size 4");
  Producer* q = Producer::make({1, 2});  // a zero stride on a dimension of size 1 is fine
  q->strides[0] = 0;
  auto t = dl::adopt_versioned(&q->versioned);
  ASSERT_OK(t);
}

TEST_F(DlpackImport, DtypesWithoutAnEdgetensorTypeAreRefused) {
  struct Case {
    dl::DataType type;
    const char* needle;
  } cases[] = {
      {{2, 32, 4}, "has 4 lanes"},
      {{2, 32, 0}, "has 0 lanes"},
      {{99, 32, 1}, "code 99 (an unknown code)"},
      {{6, 8, 1}, "code 6 (kDLBool) with 8 bits"},
      {{5, 64, 1}, "kDLComplex"},
      {{3, 64, 1}, "kDLOpaqueHandle"},
      {{8, 8, 1}, "float8/6/4"},
      {{2, 24, 1}, "code 2 (kDLFloat) with 24 bits"},
      {{4, 32, 1}, "kDLBfloat) with 32 bits"},
      {{0, 1, 1}, "kDLInt) with 1 bits"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.needle);
    Producer* p = Producer::make({4});
    p->versioned.dl_tensor.dtype = c.type;
    expect_refused(p, ErrorCode::Unsupported, c.needle);
  }
}

TEST_F(DlpackImport, MisalignedDataIsRefused) {
  Producer* p = Producer::make({4});
  p->versioned.dl_tensor.data = reinterpret_cast<std::byte*>(p->storage) + 2;
  expect_refused(p, ErrorCode::InvalidArgument, "is not aligned to the element size 4 B of f32");
  Producer* q = Producer::make({4});
  q->legacy.dl_tensor.byte_offset = 6;
  expect_refused_legacy(q, ErrorCode::InvalidArgument, "byte_offset 6) is not aligned");
}

TEST_F(DlpackImport, NullDataWithElementsIsRefused) {
  Producer* p = Producer::make({2, 2});
  p->versioned.dl_tensor.data = nullptr;
  expect_refused(p, ErrorCode::InvalidArgument, "data is null with 4 elements");
}

TEST_F(DlpackImport, BadRankAndShapeAreRefused) {
  Producer* p = Producer::make({4});
  p->versioned.dl_tensor.ndim = -1;
  expect_refused(p, ErrorCode::InvalidArgument, "ndim -1 is negative");
  Producer* q = Producer::make({1, 1, 1, 1, 1, 1, 1, 1, 1});
  expect_refused(q, ErrorCode::OutOfRange, "ndim 9 exceeds the maximum rank 8");
  Producer* r = Producer::make({2, 2});
  r->versioned.dl_tensor.shape = nullptr;
  expect_refused(r, ErrorCode::InvalidArgument, "shape is null with ndim 2");
  Producer* s = Producer::make({2, 2});
  s->shape[1] = -3;
  expect_refused(s, ErrorCode::InvalidArgument, "dimension 1 is -3 (negative)");
}

TEST_F(DlpackImport, OverflowingShapesAndStridesAreRefused) {
  constexpr std::int64_t kBig = std::int64_t{1} << 62;
  Producer* p = Producer::make({4, 4});
  p->shape[0] = kBig;
  p->shape[1] = kBig;
  // A 32-bit process refuses each value earlier, as more than its sizes hold (dlpack_layout.h).
  constexpr bool k32 = sizeof(std::size_t) < 8;
  expect_refused(p, ErrorCode::OutOfRange,
                 k32 ? "dimension 0 is 4611686018427387904, more than this process's 32-bit sizes hold"
                     : "element count overflows");
  Producer* q = Producer::make({4, 4});
  q->strides[0] = kBig;  // x 4 B overflows int64
  expect_refused(q, ErrorCode::OutOfRange, "stride 4611686018427387904 of dimension 0 times the element size 4 B");
  Producer* r = Producer::make({5, 4});
  r->strides[0] = kBig / 4;  // 2^62 B fits; the last row starts at 4 x 2^62 B = 2^64: the extent overflows
  expect_refused(r, ErrorCode::OutOfRange,
                 k32 ? "stride 1152921504606846976 of dimension 0 times the element size 4 B overflows 32-bit byte strides"
                     : "extent overflows");
  Producer* s = Producer::make({4});
  s->versioned.dl_tensor.byte_offset = std::numeric_limits<std::uint64_t>::max() - 3;
  expect_refused(s, ErrorCode::OutOfRange, "overflows the address space");
}

// Foreign memory has no fd: export_fd, ipc::send and ipc::send_frame refuse it, naming the kind.
TEST_F(DlpackImport, ForeignTensorsCannotBeSharedByFd) {
  Producer* p = Producer::make({64});
  auto t = dl::adopt_versioned(&p->versioned);
  ASSERT_OK(t);
  EXPECT_ERROR(t->export_fd(), ErrorCode::Unsupported, "foreign tensor is not shareable by fd");
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
  EXPECT_ERROR(ipc::send(sv[0], *t), ErrorCode::Unsupported, "foreign tensors");
  // A frame over foreign bytes: a U8 producer tensor carrying an image layout.
  Producer* q = Producer::make({256}, false, {static_cast<std::uint8_t>(dl::TypeCode::UInt), 8, 1});
  auto u = dl::adopt_versioned(&q->versioned);
  ASSERT_OK(u);
  auto layout = ImageLayout::make(16, 16, PixelFormat::Grey, ImageAlignment{1, 1});
  ASSERT_OK(layout);
  ASSERT_OK(u->set_image_layout(*layout));
  auto f = Frame::from_tensor(*u);
  ASSERT_OK(f);
  EXPECT_ERROR(ipc::send_frame(sv[0], *f), ErrorCode::Unsupported, "foreign");
  ::close(sv[0]);
  ::close(sv[1]);
}

TEST_F(DlpackImport, ForeignIsNeverAllocated) {
  EXPECT_EQ(memory_kind_name(MemoryKind::Foreign), "foreign");
  EXPECT_EQ(memory_kind_from_name("foreign"), MemoryKind::Foreign);
  EXPECT_EQ(static_cast<int>(MemoryKind::Foreign), 5);
  EXPECT_ERROR(TensorDyn::allocate({4}, DType::U8, et_test::mem(MemoryKind::Foreign)), ErrorCode::InvalidArgument,
               "memory foreign cannot be allocated");
  EXPECT_ERROR(TensorDyn::allocate({0}, DType::U8, et_test::mem(MemoryKind::Foreign)), ErrorCode::InvalidArgument,
               "memory foreign cannot be allocated");
  BackendStatus s = backend_status(MemoryKind::Foreign);
  EXPECT_EQ(s.kind, MemoryKind::Foreign);
  EXPECT_FALSE(s.available);
  EXPECT_NE(s.detail.find("imported through DLPack"), std::string::npos);
}

}  // namespace
