// SPDX-License-Identifier: Apache-2.0
// DLPack kDLCUDA exports (dlpack.h ExportDevice::Cuda) on the test-double runtime (lane cuda.fakedlpack)
// and without a runtime (lane cuda.noruntime): the capsule holds a cuda::CudaMap and the storage.
#include <edgetensor/dlpack.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <thread>

#include "fake_support.h"

namespace cuda = edgetensor::cuda;
namespace dl = edgetensor::dlpack;
using edgetensor::DType;
using edgetensor::ErrorCode;
using edgetensor::MemoryKind;
using edgetensor::TensorDyn;

namespace {

class CudaFakeDlpack : public et_cuda_test::FakeLaneTest {};

dl::ExportOptions on_cuda(int device = 0) {
  dl::ExportOptions o;
  o.device = dl::ExportDevice::Cuda;
  o.cuda.device = device;
  return o;
}

TEST_F(CudaFakeDlpack, CudaExportHoldsTheDeviceViewUntilTheDeleter) {
  ASSERT_TRUE(report_.available) << report_.summary();
  const std::size_t exports = dl::live_export_count();
  auto t = TensorDyn::allocate({8, 16}, DType::F32, et_test::mem(MemoryKind::Heap));
  ASSERT_OK(t);
  auto v = t->slice(0, 2, 6);  // offset 128 B
  ASSERT_OK(v);
  auto e = dl::export_versioned(*v, on_cuda());
  ASSERT_OK(e);
  dl::ManagedTensorVersioned* x = *e;
  EXPECT_EQ(x->dl_tensor.device.device_type, dl::DeviceType::Cuda);
  EXPECT_EQ(x->dl_tensor.device.device_id, 0);
  EXPECT_EQ(x->dl_tensor.byte_offset, 0u);
  EXPECT_EQ(x->flags, 0u);
  EXPECT_EQ(fake_.count("cudaHostRegister"), 1);
  {
    auto r = t->map_read();  // the double uses unified addressing: device pointer == host pointer
    ASSERT_OK(r);
    EXPECT_EQ(x->dl_tensor.data, static_cast<const void*>(r->data() + 128));
  }
  EXPECT_EQ(x->dl_tensor.shape[0], 4);
  EXPECT_EQ(x->dl_tensor.strides[0], 16);
  *v = TensorDyn();
  *t = TensorDyn();
  EXPECT_EQ(fake_.count("cudaHostUnregister"), 0) << "the capsule holds the storage";
  std::thread([x] { x->deleter(x); }).join();
  EXPECT_EQ(fake_.count("cudaHostUnregister"), 1) << "the deleter released the last reference";
  EXPECT_EQ(dl::live_export_count(), exports);
}

TEST_F(CudaFakeDlpack, ReadOnlyStorageIsFlaggedAndLegacyRefused) {
  ASSERT_TRUE(report_.available) << report_.summary();
  int fd = ::memfd_create("et-dlpack-cuda-ro", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 4096), 0);
  ASSERT_EQ(::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE), 0);
  auto t = TensorDyn::import_fd_dup(fd, {1024}, DType::F32);
  ::close(fd);
  ASSERT_OK(t);
  auto e = dl::export_versioned(*t, on_cuda());
  ASSERT_OK(e);
  EXPECT_EQ((*e)->flags, dl::kFlagReadOnly);
  EXPECT_EQ((*e)->dl_tensor.device.device_type, dl::DeviceType::Cuda);
  (*e)->deleter(*e);
  EXPECT_ERROR(dl::export_legacy(*t, on_cuda()), ErrorCode::PermissionDenied, "cannot signal read-only");
}

TEST_F(CudaFakeDlpack, LegacyAndZeroElementExports) {
  ASSERT_TRUE(report_.available) << report_.summary();
  auto t = TensorDyn::allocate({4, 4}, DType::U8, et_test::mem(MemoryKind::Shm));
  ASSERT_OK(t);
  auto e = dl::export_legacy(*t, on_cuda());
  ASSERT_OK(e);
  EXPECT_EQ((*e)->dl_tensor.device.device_type, dl::DeviceType::Cuda);
  EXPECT_NE((*e)->dl_tensor.data, nullptr);
  (*e)->deleter(*e);
  auto z = TensorDyn::allocate({0, 4}, DType::U8, et_test::mem(MemoryKind::Heap));
  ASSERT_OK(z);
  auto ez = dl::export_versioned(*z, on_cuda(0));
  ASSERT_OK(ez);
  EXPECT_NE((*ez)->dl_tensor.data, nullptr) << "torch < 2.3 never deletes a null-data tensor";
  EXPECT_EQ((*ez)->dl_tensor.shape[0], 0);
  EXPECT_EQ((*ez)->dl_tensor.device.device_type, dl::DeviceType::Cuda);
  (*ez)->deleter(*ez);
  *t = TensorDyn();
  *z = TensorDyn();
}

// Imports of device memory are refused: the CPU cannot reach it (even with a runtime loaded).
TEST_F(CudaFakeDlpack, OurOwnCudaExportCannotBeImported) {
  ASSERT_TRUE(report_.available) << report_.summary();
  auto t = TensorDyn::allocate({16}, DType::F32, et_test::mem(MemoryKind::Heap));
  ASSERT_OK(t);
  auto e = dl::export_versioned(*t, on_cuda());
  ASSERT_OK(e);
  EXPECT_ERROR(dl::adopt_versioned(*e), ErrorCode::Unsupported, "device kDLCUDA (2):0 is not CPU-addressable");
  *t = TensorDyn();
}

TEST(CudaNoRuntimeDlpack, CudaExportIsUnavailableAndCpuExportWorks) {
  if (et_test::env("EDGETENSOR_CUDART") != "/nonexistent/libcudart.so.13")
    GTEST_SKIP() << "run through ctest lane cuda.noruntime";
  const std::size_t exports = dl::live_export_count();
  auto t = TensorDyn::allocate({16}, DType::F32, et_test::mem(MemoryKind::Heap));
  ASSERT_OK(t);
  EXPECT_ERROR(dl::export_versioned(*t, on_cuda()), ErrorCode::Unavailable, "");
  EXPECT_EQ(dl::live_export_count(), exports) << "a failed export leaves nothing behind";
  auto e = dl::export_versioned(*t);
  ASSERT_OK(e);
  (*e)->deleter(*e);
}

}  // namespace
