// SPDX-License-Identifier: Apache-2.0
// Lane 3 variants: the test double emulating a 12.x runtime, a driver that imports DMA-BUFs, no
// driver, no device, and a runtime lacking a required symbol. Each runs in its own ctest lane.
#include <sys/mman.h>
#include <unistd.h>

#include "fake_support.h"

namespace cuda = edgetensor::cuda;
using edgetensor::DType;
using edgetensor::ErrorCode;
using edgetensor::MemoryKind;
using edgetensor::TensorDyn;
using et_cuda_test::desc_field;
using Names = std::vector<std::string>;

namespace {

class CudaFake12 : public et_cuda_test::FakeLaneTest {};
class CudaFakeDmaBufDriver : public et_cuda_test::FakeLaneTest {};
class CudaFakeNoDriver : public et_cuda_test::FakeLaneTest {};
class CudaFakeNoDevice : public et_cuda_test::FakeLaneTest {};

TEST_F(CudaFake12, Runtime12GetsThe40ByteDescriptor) {
  if (et_test::env("ET_FAKE_CUDART_RUNTIME_VERSION") != "12080") GTEST_SKIP() << "run through ctest lane cuda.fake12";
  ASSERT_EQ(status_.runtime_version, 12080);
  ASSERT_TRUE(status_.available) << status_.summary();
  int memfd = memfd_create("et-ext12", MFD_CLOEXEC);
  ASSERT_GE(memfd, 0);
  ASSERT_EQ(ftruncate(memfd, 4096), 0);
  {
    auto ext = cuda::ExternalMemory::import_fd_dup(memfd, cuda::ExternalMemoryHandleType::OpaqueFd, et_cuda_test::ext_dedicated());
    ASSERT_OK(ext);
    const EtFakeCall* imp = fake_.last("cudaImportExternalMemory");
    ASSERT_NE(imp, nullptr);
    // The double reads exactly the 12.x size: a larger read would be an ASan error on our 40-byte buffer
    // in the 13.0 lane's opposite case, and a smaller struct here would be one in this lane.
    EXPECT_EQ(imp->desc_size, 40u);
    EXPECT_EQ(desc_field<int>(imp, 0), 1);
    EXPECT_EQ(desc_field<unsigned long long>(imp, 24), 4096u);
    EXPECT_EQ(desc_field<unsigned>(imp, 32), 1u) << "cudaExternalMemoryDedicated";
    EXPECT_TRUE(et_cuda_test::all_zero(imp, 36)) << "padding is zero too";
    EXPECT_EQ(fake_.last("cudaExternalMemoryGetMappedBuffer")->desc_size, 24u);
  }
  close(memfd);
}

TEST_F(CudaFakeDmaBufDriver, DmaBufStorageUsesTheDriverDmaBufType) {
  if (et_test::env("ET_FAKE_CUDART_DMABUF") != "1") GTEST_SKIP() << "run through ctest lane cuda.fakedmabuf";
  auto storage = et_cuda_test::dmabuf_storage(16384);
  const int fds = et_test::open_fd_count();
  auto m = cuda::detail::map_storage(storage, 0, 16384, {});
  ASSERT_OK(m);
  EXPECT_EQ(m->path(), cuda::CudaPath::ExternalDmaBuf);
  EXPECT_EQ(fake_.names(), (Names{"cudaGetDevice", "cudaGetDevice", "cudaSetDevice", "cuImportExternalMemory",
                                  "cuExternalMemoryGetMappedBuffer"}));
  const EtFakeCall* imp = fake_.last("cuImportExternalMemory");
  EXPECT_EQ(imp->desc_size, 104u);
  EXPECT_EQ(desc_field<int>(imp, 0), 9);
  EXPECT_NE(desc_field<int>(imp, 8), storage->backing().fd());
  EXPECT_TRUE(et_cuda_test::all_zero(imp, 36));
  EXPECT_EQ(fake_.last("cuExternalMemoryGetMappedBuffer")->desc_size, 88u);
  EXPECT_EQ(et_test::open_fd_count(), fds + 1);
  fake_.reset();
  *m = cuda::CudaMap();
  storage.reset();
  EXPECT_EQ(fake_.names(), (Names{"cudaGetDevice", "cudaSetDevice", "cuMemFree", "cuDestroyExternalMemory"}));
}

TEST_F(CudaFakeNoDriver, EveryEntryPointFailsFastWithoutCallingCuda) {
  if (et_test::env("ET_FAKE_CUDART_DRIVER_VERSION") != "0") GTEST_SKIP() << "run through ctest lane cuda.fakenodriver";
  EXPECT_FALSE(status_.available);
  EXPECT_EQ(status_.driver_version, 0);
  EXPECT_NE(status_.error.find("cudaErrorInsufficientDriver (35)"), std::string::npos) << status_.error;
  auto t = TensorDyn::allocate({64}, DType::U8, et_test::mem(MemoryKind::Heap));
  ASSERT_OK(t);
  char buf[8] = {};
  EXPECT_ERROR(cuda::map(*t), ErrorCode::Unavailable, "cudaErrorInsufficientDriver");
  EXPECT_ERROR(cuda::Stream::create(), ErrorCode::Unavailable, "cudaErrorInsufficientDriver");
  EXPECT_ERROR(cuda::copy_device_to_host(buf, buf, 8), ErrorCode::Unavailable, "cudaErrorInsufficientDriver");
  EXPECT_ERROR(cuda::copy_to_device(*t, buf, 64), ErrorCode::Unavailable, "cudaErrorInsufficientDriver");
  EXPECT_ERROR(cuda::ExternalMemory::import_fd_dup(0, cuda::ExternalMemoryHandleType::OpaqueFd), ErrorCode::Unavailable,
               "cudaErrorInsufficientDriver");
  EXPECT_EQ(fake_.call_count(), 0) << "the status was computed once; nothing calls CUDA again";
}

TEST_F(CudaFakeNoDevice, NoDeviceIsUnavailable) {
  if (et_test::env("ET_FAKE_CUDART_DEVICES") != "0") GTEST_SKIP() << "run through ctest lane cuda.fakenodevice";
  EXPECT_FALSE(status_.available);
  EXPECT_FALSE(cuda::available());
  EXPECT_EQ(status_.device_count, 0);
  EXPECT_NE(status_.error.find("cudaErrorNoDevice (100)"), std::string::npos) << status_.error;
}

TEST(CudaFakeIncomplete, MissingRequiredSymbolMakesCudaUnavailable) {
#if !ET_TEST_HAVE_CUDA_HEADERS
  GTEST_SKIP() << "the CUDA test-double runtime was not built: no toolkit headers at " ET_CUDA_TOOLKIT_INCLUDE;
#else
  if (et_test::env("EDGETENSOR_CUDART") != ET_FAKE_CUDART_INCOMPLETE_PATH)
    GTEST_SKIP() << "run through ctest lane cuda.fakeincomplete";
  auto st = cuda::status();
  EXPECT_FALSE(st.loaded);
  EXPECT_FALSE(st.available);
  EXPECT_NE(st.error.find("lacks required CUDA runtime symbol(s): cudaHostRegister"), std::string::npos) << st.error;
  // Both lists describe the file, whatever else is missing: the double lacks the deprecated
  // cudaGetDriverEntryPoint (optional) as well as cudaHostRegister (required).
  EXPECT_EQ(st.runtime_file, ET_FAKE_CUDART_INCOMPLETE_PATH);
  EXPECT_EQ(st.missing_required_symbols, std::vector<std::string>{"cudaHostRegister"});
  EXPECT_EQ(st.missing_optional_symbols, std::vector<std::string>{"cudaGetDriverEntryPoint"});
  auto t = TensorDyn::allocate({64}, DType::U8, et_test::mem(MemoryKind::Heap));
  ASSERT_OK(t);
  EXPECT_ERROR(cuda::map(*t), ErrorCode::Unavailable, "cudaHostRegister");
#endif
}

}  // namespace
