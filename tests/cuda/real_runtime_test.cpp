// SPDX-License-Identifier: Apache-2.0
// Lane 1: the real CUDA runtime as the loader finds it. On a machine with libcudart but no driver
// (the CI machine) CUDA must be reported unavailable with the runtime's own reason, every entry point
// must fail fast and cleanly, and the other backends must keep working.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "cuda/loader_report.h"
#include "cuda_test_util.h"

namespace cuda = edgetensor::cuda;
using edgetensor::DType;
using edgetensor::ErrorCode;
using edgetensor::MemoryKind;
using edgetensor::TensorDyn;

namespace {

class CudaRealRuntime : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!et_test::env("EDGETENSOR_CUDART").empty())
      GTEST_SKIP() << "EDGETENSOR_CUDART is set; this lane needs the loader's own search (ctest lane cuda.real)";
    st_ = cuda::report();
    loader_ = cuda::detail::loader_report();
    if (!loader_.loaded) GTEST_SKIP() << "no CUDA runtime is installed here: " << st_.error;
    if (st_.driver_version != 0)
      GTEST_SKIP() << "a CUDA driver is present (version " << st_.driver_version
                   << "); this lane checks the runtime-without-driver case";
  }
  cuda::RuntimeReport st_;
  cuda::detail::LoaderReport loader_;
};

TEST_F(CudaRealRuntime, ReportIsExactWithoutDriver) {
  EXPECT_TRUE(loader_.loaded);
  EXPECT_FALSE(loader_.from_env);
  EXPECT_NE(st_.runtime_file.find("libcudart.so."), std::string::npos) << st_.runtime_file;
  EXPECT_EQ(st_.runtime_file.front(), '/') << "dlinfo gives the full path: " << st_.runtime_file;
  EXPECT_EQ(access(st_.runtime_file.c_str(), R_OK), 0) << st_.runtime_file;
  EXPECT_GE(st_.runtime_version, 11000);
  if (st_.runtime_file.find("libcudart.so.13") != std::string::npos) {
    EXPECT_EQ(st_.runtime_version / 1000, 13);
  }
  EXPECT_EQ(st_.driver_version, 0);
  EXPECT_EQ(st_.device_count, 0);
  EXPECT_TRUE(st_.devices.empty());
  EXPECT_FALSE(st_.available);
  EXPECT_FALSE(cuda::available());
  EXPECT_NE(st_.error.find("cudaErrorInsufficientDriver (35): CUDA driver version is insufficient for CUDA runtime version"),
            std::string::npos)
      << st_.error;
  EXPECT_TRUE(loader_.driver_entry_points);
  EXPECT_TRUE(loader_.gl_interop) << "libcudart exports the GL interop symbols";
  // No runtime reached a driver: the loader tried every soname after this one and settled on it.
  ASSERT_FALSE(loader_.tried.empty());
  bool listed = false;
  for (const auto& t : loader_.tried) {
    listed |= t.find(st_.runtime_file + " (runtime ") != std::string::npos &&
              t.find("cannot reach a CUDA driver: cudaGetDeviceCount: cudaErrorInsufficientDriver (35)") != std::string::npos;
    EXPECT_LE(et_cuda_test::occurrences(t, st_.runtime_file), 1) << t;
  }
  EXPECT_TRUE(listed) << loader_.tried.front();
  EXPECT_EQ(loader_.tried.back().rfind("libcudart.so: ", 0), 0u) << "the bare name is the last candidate: " << loader_.tried.back();
  const std::string line = st_.summary();
  EXPECT_NE(line.find(st_.runtime_file), std::string::npos) << line;
  EXPECT_NE(line.find("driver none"), std::string::npos) << line;
  EXPECT_NE(line.find("unavailable: "), std::string::npos) << line;
  std::printf("status: %s\n", line.c_str());
}

TEST_F(CudaRealRuntime, EveryEntryPointFailsFastAndCleanly) {
  const int fds = et_test::open_fd_count();
  auto t = TensorDyn::allocate({64, 64}, DType::U8, et_test::mem(MemoryKind::Heap));
  ASSERT_OK(t);
  const char* reason = "cudaErrorInsufficientDriver (35)";
  EXPECT_ERROR(cuda::map(*t), ErrorCode::Unavailable, reason);
  EXPECT_ERROR(cuda::Stream::create(), ErrorCode::Unavailable, reason);
  char buf[16] = {};
  EXPECT_ERROR(cuda::copy_host_to_device(buf, buf, sizeof buf), ErrorCode::Unavailable, reason);
  EXPECT_ERROR(cuda::copy_device_to_host(buf, buf, sizeof buf), ErrorCode::Unavailable, reason);
  EXPECT_ERROR(cuda::copy_device_to_device(buf, buf, sizeof buf), ErrorCode::Unavailable, reason);
  EXPECT_ERROR(cuda::copy_to_device(*t, buf, sizeof buf), ErrorCode::Unavailable, reason);
  EXPECT_ERROR(cuda::copy_from_device(buf, sizeof buf, *t), ErrorCode::Unavailable, reason);
  int memfd = memfd_create("et-cuda-test", MFD_CLOEXEC);
  ASSERT_GE(memfd, 0);
  ASSERT_EQ(ftruncate(memfd, 4096), 0);
  EXPECT_ERROR(cuda::ExternalMemory::import_fd_dup(memfd, cuda::ExternalMemoryHandleType::OpaqueFd),
               ErrorCode::Unavailable, reason);
  EXPECT_ERROR(cuda::ExternalMemory::import_fd_dup(memfd, cuda::ExternalMemoryHandleType::DmaBufFd),
               ErrorCode::Unavailable, reason);
  EXPECT_GE(fcntl(memfd, F_GETFD), 0) << "the caller's fd stays open";
  close(memfd);
  EXPECT_EQ(et_test::open_fd_count(), fds + 0) << "no dup leaked";
  t = TensorDyn();
  EXPECT_EQ(et_test::open_fd_count(), fds);
}

TEST_F(CudaRealRuntime, OtherBackendsUnaffected) {
  EXPECT_FALSE(cuda::available());
  for (MemoryKind kind : {MemoryKind::Heap, MemoryKind::Shm}) {
    auto t = TensorDyn::allocate({8, 32}, DType::U8, et_test::mem(kind));
    ASSERT_OK(t);
    EXPECT_ERROR(cuda::map(*t), ErrorCode::Unavailable, "cudaErrorInsufficientDriver");
    {
      auto w = t->map_write();
      ASSERT_OK(w);
      std::memset(w->data(), 0x5a, w->extent_bytes());
    }
    auto r = t->map_read();
    ASSERT_OK(r);
    for (auto b : r->bytes()) ASSERT_EQ(b, std::byte{0x5a});
  }
}

}  // namespace
