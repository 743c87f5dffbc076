// SPDX-License-Identifier: Apache-2.0
// Lane 2: no runtime (EDGETENSOR_CUDART names a missing file), CUDA disabled, and a bare name refused.
#include <fstream>
#include <string>

#include "cuda/loader_report.h"
#include "cuda_test_util.h"

namespace cuda = edgetensor::cuda;
using edgetensor::DType;
using edgetensor::ErrorCode;
using edgetensor::MemoryKind;
using edgetensor::TensorDyn;

namespace {

bool libcudart_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find("libcudart") != std::string::npos) return true;
  return false;
}

void expect_heap_and_shm_work() {
  for (MemoryKind kind : {MemoryKind::Heap, MemoryKind::Shm}) {
    auto t = TensorDyn::allocate({4, 4}, DType::F32, et_test::mem(kind));
    ASSERT_OK(t);
    auto w = t->map_write();
    ASSERT_OK(w);
    EXPECT_EQ(w->extent_bytes(), 64u);
  }
}

TEST(CudaNoRuntime, UnavailableNamingPathAndDlerror) {
  const std::string path = et_test::env("EDGETENSOR_CUDART");
  if (path != "/nonexistent/libcudart.so.13") GTEST_SKIP() << "run through ctest lane cuda.noruntime";
  auto st = cuda::report();
  const cuda::detail::LoaderReport& loader = cuda::detail::loader_report();
  EXPECT_FALSE(loader.loaded);
  EXPECT_TRUE(loader.from_env);
  EXPECT_FALSE(st.available);
  EXPECT_FALSE(cuda::available());
  ASSERT_EQ(loader.tried.size(), 1u) << "exactly that file, nothing else";
  // The path once, then dlerror's reason (dlerror starts with the path itself: not repeated).
  EXPECT_EQ(loader.tried[0], path + ": cannot open shared object file: No such file or directory");
  EXPECT_EQ(et_cuda_test::occurrences(st.error, path), 1) << st.error;
  EXPECT_NE(st.error.find("cannot open shared object file"), std::string::npos) << "dlerror text: " << st.error;
  EXPECT_FALSE(libcudart_mapped()) << "no other runtime was loaded instead";
  auto t = TensorDyn::allocate({16}, DType::U8, et_test::mem(MemoryKind::Heap));
  ASSERT_OK(t);
  EXPECT_ERROR(cuda::map(*t), ErrorCode::Unavailable, path);
  EXPECT_ERROR(cuda::Stream::create(), ErrorCode::Unavailable, "cannot open shared object file");
  EXPECT_NE(st.summary().find(path), std::string::npos) << st.summary();
  expect_heap_and_shm_work();
}

TEST(CudaDisabled, DisabledLoadsNothing) {
  if (et_test::env("EDGETENSOR_DISABLE_CUDA") != "1") GTEST_SKIP() << "run through ctest lane cuda.disabled";
  auto st = cuda::report();
  const cuda::detail::LoaderReport& loader = cuda::detail::loader_report();
  EXPECT_TRUE(loader.disabled);
  EXPECT_FALSE(loader.loaded);
  EXPECT_TRUE(loader.tried.empty());
  EXPECT_NE(st.error.find("EDGETENSOR_DISABLE_CUDA"), std::string::npos) << st.error;
  EXPECT_FALSE(libcudart_mapped());
  auto t = TensorDyn::allocate({16}, DType::U8, et_test::mem(MemoryKind::Heap));
  ASSERT_OK(t);
  EXPECT_ERROR(cuda::map(*t), ErrorCode::Unavailable, "EDGETENSOR_DISABLE_CUDA");
  EXPECT_EQ(st.summary(), "CUDA unavailable: CUDA disabled by EDGETENSOR_DISABLE_CUDA");
  expect_heap_and_shm_work();
}

TEST(CudaBareName, OverrideMustBeAPath) {
  if (et_test::env("EDGETENSOR_CUDART") != "libcudart.so.13") GTEST_SKIP() << "run through ctest lane cuda.barename";
  auto st = cuda::report();
  const cuda::detail::LoaderReport& loader = cuda::detail::loader_report();
  EXPECT_FALSE(loader.loaded);
  EXPECT_NE(st.error.find("is not a path"), std::string::npos) << st.error;
  EXPECT_FALSE(libcudart_mapped()) << "a bare name would be searched for; it must not load anything";
}

}  // namespace
