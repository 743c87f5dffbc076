// SPDX-License-Identifier: Apache-2.0
// DLPack export (dlpack.h): the fields a consumer reads, what the capsule holds and when it lets go.
#include <edgetensor/dlpack.h>
#include <edgetensor/edgetensor.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <thread>
#include <vector>

#include "core/storage.h"
#include "support/test_support.h"

using namespace edgetensor;
namespace dl = edgetensor::dlpack;
using et_test::mem;
using et_test::open_fd_count;

namespace {

std::vector<std::int64_t> vec(const std::int64_t* p, int n) { return p ? std::vector<std::int64_t>(p, p + n) : std::vector<std::int64_t>{}; }

// Calls the deleter when the test leaves the scope (also on a failed ASSERT).
template <class M>
struct Owned {
  M* p = nullptr;
  ~Owned() { reset(); }
  void reset() {
    if (p) p->deleter(p);
    p = nullptr;
  }
  M* operator->() const { return p; }
};

int open_maps(const TensorDyn& t) { return detail::storage_of(t)->open_map_count(); }

// A read-only shm tensor: a memfd sealed against writes, imported.
TensorDyn read_only_tensor(std::size_t bytes) {
  UniqueFd fd(::memfd_create("et-dlpack-ro", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  EXPECT_EQ(::ftruncate(fd.get(), static_cast<off_t>(bytes)), 0);
  EXPECT_EQ(::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE), 0);
  auto t = TensorDyn::adopt_fd(std::move(fd), {bytes}, DType::U8);
  EXPECT_TRUE(t.has_value()) << t.error().to_string();
  return *t;
}

TEST(DlpackExport, VersionedContiguousFields) {
  const std::size_t exports = dl::live_export_count();
  auto t = TensorDyn::allocate({2, 3, 4}, DType::F32, mem(MemoryKind::Heap));
  ASSERT_OK(t);
  auto m = t->map_read();
  ASSERT_OK(m);
  const void* first = m->data();
  m->unmap();
  auto e = dl::export_versioned(*t);
  ASSERT_OK(e);
  Owned<dl::ManagedTensorVersioned> x{*e};
  EXPECT_EQ(dl::live_export_count(), exports + 1);
  EXPECT_EQ(x->version.major, 1u);
  EXPECT_EQ(x->version.minor, 1u);
  EXPECT_EQ(x->flags, 0u) << "writable storage, write export, no copy";
  EXPECT_NE(x->manager_ctx, nullptr);
  const dl::DlTensor& d = x->dl_tensor;
  EXPECT_EQ(d.data, first);
  EXPECT_EQ(d.device.device_type, dl::DeviceType::Cpu);
  EXPECT_EQ(d.device.device_id, 0);
  EXPECT_EQ(d.ndim, 3);
  EXPECT_EQ(d.dtype.code, static_cast<std::uint8_t>(dl::TypeCode::Float));
  EXPECT_EQ(d.dtype.bits, 32);
  EXPECT_EQ(d.dtype.lanes, 1);
  EXPECT_EQ(vec(d.shape, 3), (std::vector<std::int64_t>{2, 3, 4}));
  EXPECT_EQ(vec(d.strides, 3), (std::vector<std::int64_t>{12, 4, 1})) << "elements, not bytes";
  EXPECT_EQ(d.byte_offset, 0u);
  EXPECT_EQ(open_maps(*t), 1) << "the capsule holds a read-write map";
  x.reset();
  EXPECT_EQ(open_maps(*t), 0);
  EXPECT_EQ(dl::live_export_count(), exports);
}

TEST(DlpackExport, LegacyHasTheSameTensorFields) {
  auto t = TensorDyn::allocate({5, 7}, DType::I16, mem(MemoryKind::Shm));
  ASSERT_OK(t);
  auto e = dl::export_legacy(*t);
  ASSERT_OK(e);
  Owned<dl::ManagedTensor> x{*e};
  EXPECT_EQ(x->dl_tensor.ndim, 2);
  EXPECT_EQ(vec(x->dl_tensor.shape, 2), (std::vector<std::int64_t>{5, 7}));
  EXPECT_EQ(vec(x->dl_tensor.strides, 2), (std::vector<std::int64_t>{7, 1}));
  EXPECT_EQ(x->dl_tensor.dtype.code, static_cast<std::uint8_t>(dl::TypeCode::Int));
  EXPECT_EQ(x->dl_tensor.dtype.bits, 16);
  EXPECT_EQ(x->dl_tensor.device.device_type, dl::DeviceType::Cpu);
}

TEST(DlpackExport, EveryDtypeHasItsCode) {
  using C = dl::TypeCode;
  const struct {
    DType dtype;
    C code;
    int bits;
  } rows[] = {{DType::U8, C::UInt, 8},    {DType::I8, C::Int, 8},     {DType::U16, C::UInt, 16},  {DType::I16, C::Int, 16},
              {DType::U32, C::UInt, 32},  {DType::I32, C::Int, 32},   {DType::U64, C::UInt, 64},  {DType::I64, C::Int, 64},
              {DType::F16, C::Float, 16}, {DType::BF16, C::Bfloat, 16}, {DType::F32, C::Float, 32}, {DType::F64, C::Float, 64}};
  ASSERT_EQ(std::size(rows), static_cast<std::size_t>(kDTypeCount));
  for (const auto& r : rows) {
    SCOPED_TRACE(dtype_name(r.dtype));
    auto t = TensorDyn::allocate({3}, r.dtype, mem(MemoryKind::Heap));
    ASSERT_OK(t);
    auto e = dl::export_versioned(*t);
    ASSERT_OK(e);
    Owned<dl::ManagedTensorVersioned> x{*e};
    EXPECT_EQ(x->dl_tensor.dtype.code, static_cast<std::uint8_t>(r.code));
    EXPECT_EQ(x->dl_tensor.dtype.bits, r.bits);
    EXPECT_EQ(x->dl_tensor.dtype.lanes, 1);
    auto back = dl::from_data_type(x->dl_tensor.dtype);
    ASSERT_OK(back);
    EXPECT_EQ(*back, r.dtype);
  }
  EXPECT_ERROR(dl::to_data_type(static_cast<DType>(40)), ErrorCode::InvalidArgument, "invalid dtype 40");
}

// A view at an offset arrives with the offset folded into data (PyTorch ignores byte_offset).
TEST(DlpackExport, StridedViewAtAnOffsetFoldsTheOffsetIntoData) {
  auto t = TensorDyn::allocate({4, 6}, DType::U16, mem(MemoryKind::Heap));
  ASSERT_OK(t);
  auto v = t->slice(1, 2, 5);  // [4, 3] at column 2: offset 4 B, strides 12 B and 2 B
  ASSERT_OK(v);
  auto v2 = v->batch(1);  // [3] at row 1, column 2: offset 16 B
  ASSERT_OK(v2);
  auto m = t->map_read();
  ASSERT_OK(m);
  const std::byte* base = m->data();
  m->unmap();
  auto e = dl::export_versioned(*v);
  ASSERT_OK(e);
  Owned<dl::ManagedTensorVersioned> x{*e};
  EXPECT_EQ(x->dl_tensor.data, base + 4);
  EXPECT_EQ(x->dl_tensor.byte_offset, 0u);
  EXPECT_EQ(vec(x->dl_tensor.shape, 2), (std::vector<std::int64_t>{4, 3}));
  EXPECT_EQ(vec(x->dl_tensor.strides, 2), (std::vector<std::int64_t>{6, 1}));
  auto e2 = dl::export_legacy(*v2);
  ASSERT_OK(e2);
  Owned<dl::ManagedTensor> y{*e2};
  EXPECT_EQ(y->dl_tensor.data, base + 16);
  EXPECT_EQ(y->dl_tensor.byte_offset, 0u);
  // A non-contiguous view: strides [2 rows, every 2nd column].
  auto s = t->view(0, {2, 3}, {24, 4});
  ASSERT_OK(s);
  auto e3 = dl::export_versioned(*s);
  ASSERT_OK(e3);
  Owned<dl::ManagedTensorVersioned> z{*e3};
  EXPECT_EQ(vec(z->dl_tensor.strides, 2), (std::vector<std::int64_t>{12, 2}));
}

TEST(DlpackExport, ZeroElementTensorKeepsItsShape) {
  auto t = TensorDyn::allocate({2, 0, 3}, DType::F32, mem(MemoryKind::Heap));
  ASSERT_OK(t);
  auto e = dl::export_versioned(*t);
  ASSERT_OK(e);
  Owned<dl::ManagedTensorVersioned> x{*e};
  EXPECT_EQ(x->dl_tensor.ndim, 3);
  EXPECT_EQ(vec(x->dl_tensor.shape, 3), (std::vector<std::int64_t>{2, 0, 3}));
  ASSERT_NE(x->dl_tensor.strides, nullptr) << "strides always filled";
  EXPECT_EQ(vec(x->dl_tensor.strides, 3), (std::vector<std::int64_t>{3, 3, 1}));
  auto e0 = dl::export_legacy(*t);  // and a rank-0 tensor: one element, no shape entries
  ASSERT_OK(e0);
  Owned<dl::ManagedTensor> y{*e0};
  auto s = TensorDyn::allocate({}, DType::F64, mem(MemoryKind::Heap));
  ASSERT_OK(s);
  auto e1 = dl::export_versioned(*s);
  ASSERT_OK(e1);
  Owned<dl::ManagedTensorVersioned> z{*e1};
  EXPECT_EQ(z->dl_tensor.ndim, 0);
  EXPECT_NE(z->dl_tensor.data, nullptr);
}

// Both forms of an export of `t`, deleted when the test leaves the scope.
struct BothForms {
  Owned<dl::ManagedTensorVersioned> versioned;
  Owned<dl::ManagedTensor> legacy;
};
void export_both(const TensorDyn& t, BothForms& out) {
  auto v = dl::export_versioned(t);
  ASSERT_OK(v);
  out.versioned.p = *v;
  auto l = dl::export_legacy(t);
  ASSERT_OK(l);
  out.legacy.p = *l;
}

// Adversarial trial: a zero-element export passed data = NULL and held the storage; torch before 2.3
// never calls the deleter of a null-data tensor (pytorch issues 117058, 117273), so the buffer stayed
// out for good. Now it holds nothing and its data is a non-null dummy, aligned for any dtype.
TEST(DlpackExport, ZeroElementExportHoldsNoStorageAndHasNonNullData) {
  PoolOptions po;
  po.name = "dlpack-zero";
  po.max_buffers = 1;
  po.allocate.memory = MemoryKind::Shm;
  auto pool = Pool::create({64, 100}, DType::F32, po);
  ASSERT_OK(pool);
  auto t = pool->acquire(std::chrono::milliseconds(0));
  ASSERT_OK(t);
  auto empty = t->slice(0, 64, 64);  // [0, 100]: a view with no elements, at the buffer's end
  ASSERT_OK(empty);
  BothForms pooled;
  ASSERT_NO_FATAL_FAILURE(export_both(*empty, pooled));
  for (const dl::DlTensor* d : {&pooled.versioned->dl_tensor, &pooled.legacy->dl_tensor}) {
    EXPECT_NE(d->data, nullptr) << "torch < 2.3 never deletes a null-data tensor";
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(d->data) % alignof(std::max_align_t), 0u);
    EXPECT_EQ(vec(d->shape, 2), (std::vector<std::int64_t>{0, 100}));
    EXPECT_EQ(d->device.device_type, dl::DeviceType::Cpu);
  }
  *empty = TensorDyn();
  *t = TensorDyn();
  EXPECT_EQ(pool->stats().in_use, 0u) << "the buffer is back in its pool while both capsules live";
  EXPECT_TRUE(pool->try_acquire().has_value()) << "the pool has it to give again";
  // And a plain shm tensor: its memfd is closed while the capsules of its empty view live.
  const int fds_before = open_fd_count();
  auto big = TensorDyn::allocate({1 << 20}, DType::U8, mem(MemoryKind::Shm));
  ASSERT_OK(big);
  ASSERT_EQ(open_fd_count(), fds_before + 1);
  auto none = big->slice(0, 100, 100);
  ASSERT_OK(none);
  BothForms plain;
  ASSERT_NO_FATAL_FAILURE(export_both(*none, plain));
  *none = TensorDyn();
  *big = TensorDyn();
  EXPECT_EQ(open_fd_count(), fds_before) << "the memfd is closed though both capsules live";
}

TEST(DlpackExport, ReadOnlyStorageIsFlaggedAndRefusedInLegacyForm) {
  TensorDyn t = read_only_tensor(4096);
  ASSERT_TRUE(t.read_only());
  auto e = dl::export_versioned(t);
  ASSERT_OK(e);
  Owned<dl::ManagedTensorVersioned> x{*e};
  EXPECT_EQ(x->flags, dl::kFlagReadOnly) << "READ_ONLY, never IS_COPIED";
  EXPECT_ERROR(dl::export_legacy(t), ErrorCode::PermissionDenied, "cannot signal read-only");
  EXPECT_ERROR(dl::export_legacy(t), ErrorCode::PermissionDenied, "is read-only");
}

TEST(DlpackExport, ReadExportIsFlaggedAndHoldsAReadMap) {
  auto t = TensorDyn::allocate({16}, DType::U8, mem(MemoryKind::Shm));
  ASSERT_OK(t);
  dl::ExportOptions o;
  o.read_only = true;
  auto e = dl::export_versioned(*t, o);
  ASSERT_OK(e);
  Owned<dl::ManagedTensorVersioned> x{*e};
  EXPECT_EQ(x->flags & dl::kFlagReadOnly, dl::kFlagReadOnly);
  EXPECT_EQ(x->flags & dl::kFlagIsCopied, 0u);
  EXPECT_EQ(open_maps(*t), 1);
  EXPECT_ERROR(dl::export_legacy(*t, o), ErrorCode::PermissionDenied, "a read-only export was asked for");
}

// The capsule keeps the memory valid after the tensor and its views are gone; the deleter frees it.
TEST(DlpackExport, ExportOutlivesTheTensor) {
  BufferIdentity id;
  Owned<dl::ManagedTensorVersioned> x;
  {
    auto t = TensorDyn::allocate({64}, DType::U8, mem(MemoryKind::Shm));
    ASSERT_OK(t);
    id = t->identity();
    auto e = dl::export_versioned(*t);
    ASSERT_OK(e);
    x.p = *e;
  }
  EXPECT_TRUE(id.alive()) << "the capsule holds a storage reference";
  std::memset(x->dl_tensor.data, 0x5a, 64);  // still writable memory
  x.reset();
  EXPECT_FALSE(id.alive()) << "the deleter released the last reference";
}

// The deleter may run on any thread, once; it releases exactly the map and the storage reference.
TEST(DlpackExport, DeleterRunsOnAnotherThread) {
  const std::size_t exports = dl::live_export_count();
  auto t = TensorDyn::allocate({1024}, DType::U8, mem(MemoryKind::Shm));
  ASSERT_OK(t);
  BufferIdentity id = t->identity();
  std::vector<dl::ManagedTensorVersioned*> v;
  std::vector<dl::ManagedTensor*> l;
  for (int i = 0; i < 50; ++i) {
    auto e = dl::export_versioned(*t);
    ASSERT_OK(e);
    v.push_back(*e);
    auto f = dl::export_legacy(*t);
    ASSERT_OK(f);
    l.push_back(*f);
  }
  EXPECT_EQ(dl::live_export_count(), exports + 100);
  EXPECT_EQ(open_maps(*t), 100);
  *t = TensorDyn();
  std::thread a([&] {
    for (auto* p : v) p->deleter(p);
  });
  std::thread b([&] {
    for (auto* p : l) p->deleter(p);
  });
  a.join();
  b.join();
  EXPECT_EQ(dl::live_export_count(), exports);
  EXPECT_FALSE(id.alive());
}

TEST(DlpackExport, EmptyHandleAndNonLinearModifierAreRefused) {
  EXPECT_ERROR(dl::export_versioned(TensorDyn()), ErrorCode::FailedPrecondition, "no storage");
  EXPECT_ERROR(dl::export_legacy(TensorDyn()), ErrorCode::FailedPrecondition, "no storage");
  auto layout = ImageLayout::make(64, 64, PixelFormat::Nv12);
  ASSERT_OK(layout);
  layout->modifier = kDrmFormatModInvalid;
  auto t = TensorDyn::allocate_image(*layout, mem(MemoryKind::Shm));
  ASSERT_OK(t);
  EXPECT_ERROR(dl::export_versioned(*t), ErrorCode::Unsupported, "0x00ffffffffffffff is not LINEAR");
  dl::ExportOptions cuda;
  cuda.device = dl::ExportDevice::Cuda;
  EXPECT_ERROR(dl::export_versioned(*t, cuda), ErrorCode::Unsupported, "not LINEAR");
  dl::ExportOptions bad;
  bad.device = static_cast<dl::ExportDevice>(7);
  auto u = TensorDyn::allocate({4}, DType::U8, mem(MemoryKind::Heap));
  ASSERT_OK(u);
  EXPECT_ERROR(dl::export_versioned(*u, bad), ErrorCode::InvalidArgument, "invalid ExportDevice 7");
}

// Metadata does not travel (dlpack.h preamble): an image tensor with quantization exports its bytes only.
TEST(DlpackExport, ImageLayoutAndQuantizationDoNotTravel) {
  auto t = TensorDyn::allocate_image(8, 4, PixelFormat::Rgb, {}, mem(MemoryKind::Heap));
  ASSERT_OK(t);
  auto q = Quantization::per_tensor(0.5f, 3);
  ASSERT_OK(q);
  ASSERT_OK(t->set_quantization(*q));
  auto e = dl::export_versioned(*t);
  ASSERT_OK(e);
  auto back = dl::adopt_versioned(*e);
  ASSERT_OK(back);
  EXPECT_EQ(back->image_layout(), nullptr);
  EXPECT_EQ(back->pixel_format(), PixelFormat::Unknown);
  EXPECT_EQ(back->quantization().kind(), QuantizationKind::None);
  EXPECT_EQ(back->dtype(), DType::U8);
  EXPECT_EQ(std::vector<std::size_t>(back->shape().begin(), back->shape().end()),
            std::vector<std::size_t>(t->shape().begin(), t->shape().end()));
}

}  // namespace
