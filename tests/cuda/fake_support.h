// SPDX-License-Identifier: Apache-2.0
// Fixture for the lanes that run on libet_fake_cudart.so, plus a memfd backing that poses as a
// DMA-BUF storage (the DMA-BUF backend is not needed to drive the external-memory paths).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include "core/storage.h"
#include "cuda/cuda_internal.h"
#include "cuda/loader_report.h"
#include "cuda_test_util.h"

namespace et_cuda_test {

class FakeLaneTest : public ::testing::Test {
 protected:
  void SetUp() override {
#if !ET_TEST_HAVE_CUDA_HEADERS
    GTEST_SKIP() << "the CUDA test-double runtime was not built: no toolkit headers at " ET_CUDA_TOOLKIT_INCLUDE;
#else
    if (et_test::env("EDGETENSOR_CUDART") != expected_path())
      GTEST_SKIP() << "needs EDGETENSOR_CUDART=" << expected_path() << " (run through its ctest lane)";
    report_ = edgetensor::cuda::report();
    loader_ = edgetensor::cuda::detail::loader_report();
    fake_ = Fake::open(expected_path());
    ASSERT_TRUE(fake_.ok()) << "control functions of the test double not found in " << expected_path();
    fake_.reset();
    fds_ = et_test::open_fd_count();
#endif
  }
  void TearDown() override {
    if (IsSkipped() || !fake_.ok()) return;
    fake_.hold_events(0);
    EXPECT_EQ(fake_.violations(), 0) << "teardown order / ownership violations seen by the fake";
    EXPECT_EQ(fake_.freed_while_pending(), 0) << "memory freed while recorded device work was still running";
    EXPECT_EQ(fake_.live("ext_mem"), 0);
    EXPECT_EQ(fake_.live("ext_buffer"), 0);
    EXPECT_EQ(fake_.live("host_register"), abandoned_host_registrations_) << "abandoned on purpose: " << abandoned_host_registrations_;
    EXPECT_EQ(fake_.live("stream"), 0);
    EXPECT_EQ(fake_.live("event"), 0);
    EXPECT_EQ(et_test::open_fd_count(), fds_) << "fd leak";
  }
  virtual const char* expected_path() const {
#if ET_TEST_HAVE_CUDA_HEADERS
    return ET_FAKE_CUDART_PATH;
#else
    return "";
#endif
  }
  edgetensor::cuda::RuntimeReport report_;
  edgetensor::cuda::detail::LoaderReport loader_;
  Fake fake_;
  int fds_ = 0;
  int abandoned_host_registrations_ = 0;  // a test that makes a storage abandon its memory says how many
};

/// The fixture of the cuda.fake lane's suite (one class for every file that adds cases to it).
class CudaFake : public FakeLaneTest {};

/// A memfd presented to the library as MemoryKind::DmaBuf storage.
class MemfdAsDmaBuf final : public edgetensor::detail::Backing {
 public:
  explicit MemfdAsDmaBuf(std::size_t size) : size_(size) {
    fd_.reset(memfd_create("et-fake-dmabuf", MFD_CLOEXEC));
    if (fd_.get() >= 0 && ftruncate(fd_.get(), static_cast<off_t>(size)) != 0) fd_.reset();
  }
  ~MemfdAsDmaBuf() override {
    if (base_) munmap(base_, size_);
  }
  edgetensor::MemoryKind kind() const noexcept override { return edgetensor::MemoryKind::DmaBuf; }
  std::string detail() const override { return "memfd posing as DMA-BUF (test)"; }
  std::size_t buffer_bytes() const noexcept override { return size_; }
  int fd() const noexcept override { return fd_.get(); }
  edgetensor::Result<std::byte*> begin_cpu_access(edgetensor::MapMode) override {
    if (!base_) {
      void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_.get(), 0);
      if (p == MAP_FAILED) return edgetensor::fail(edgetensor::ErrorCode::Internal, "mmap");
      base_ = static_cast<std::byte*>(p);
    }
    return base_;
  }

 private:
  edgetensor::UniqueFd fd_;
  std::size_t size_;
  std::byte* base_ = nullptr;
};

inline std::shared_ptr<edgetensor::detail::Storage> dmabuf_storage(std::size_t size) {
  return std::make_shared<edgetensor::detail::Storage>(std::make_unique<MemfdAsDmaBuf>(size));
}

inline bool all_zero(const EtFakeCall* c, std::size_t from) {
  for (std::size_t i = from; i < c->desc_size; ++i)
    if (c->desc[i]) return false;
  return true;
}
template <class T>
T desc_field(const EtFakeCall* c, std::size_t offset) {
  T v{};
  std::memcpy(&v, c->desc + offset, sizeof v);
  return v;
}

}  // namespace et_cuda_test
