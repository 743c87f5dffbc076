// SPDX-License-Identifier: Apache-2.0
// The loader's search without EDGETENSOR_CUDART, on test doubles installed under the real sonames
// (tests/cuda/CMakeLists.txt, fake_sonames/): a runtime that loads but cannot reach a driver
// (cudaErrorInsufficientDriver) makes the loader try the next soname, and the loader report's `tried` lists
// every candidate that did not work.
#include <sys/mman.h>

#include "cuda/loader_report.h"
#include "cuda_test_util.h"

namespace cuda = edgetensor::cuda;
using edgetensor::DType;
using edgetensor::MemoryKind;
using edgetensor::TensorDyn;
using et_cuda_test::occurrences;

namespace {

#if ET_TEST_HAVE_CUDA_HEADERS
// Skips unless this process runs in the lane whose LD_LIBRARY_PATH is `dir`.
#define ET_FALLBACK_LANE_OR_SKIP(dir, lane)                                                            \
  do {                                                                                                 \
    if (!et_test::env("EDGETENSOR_CUDART").empty() || et_test::env("LD_LIBRARY_PATH") != (dir))        \
      GTEST_SKIP() << "needs LD_LIBRARY_PATH=" << (dir) << " and no EDGETENSOR_CUDART (ctest lane " lane ")"; \
    const std::string disable = et_test::env("EDGETENSOR_DISABLE_CUDA");                               \
    if (!disable.empty() && disable != "0") GTEST_SKIP() << "EDGETENSOR_DISABLE_CUDA is set";          \
  } while (0)

const std::string kFallbackDir = ET_FAKE_SONAMES_DIR "/fallback";
const std::string kNoDriverDir = ET_FAKE_SONAMES_DIR "/nodriver";
const std::string kInsufficient =
    "cudaGetDeviceCount: cudaErrorInsufficientDriver (35): CUDA driver version is insufficient for CUDA runtime version";

TEST(CudaFakeFallback, NextSonameIsTriedWhenTheFirstCannotReachADriver) {
  ET_FALLBACK_LANE_OR_SKIP(kFallbackDir, "cuda.fakefallback");
  const auto st = cuda::report();
  const cuda::detail::LoaderReport& loader = cuda::detail::loader_report();
  EXPECT_TRUE(loader.loaded);
  EXPECT_FALSE(loader.from_env);
  EXPECT_EQ(st.runtime_file, kFallbackDir + "/libcudart.so.12");
  EXPECT_EQ(st.runtime_version, 12080);
  EXPECT_TRUE(st.available) << st.summary();
  ASSERT_EQ(loader.tried.size(), 1u) << "the search stopped at the first runtime that works";
  EXPECT_EQ(loader.tried[0], "libcudart.so.13: " + kFallbackDir + "/libcudart.so.13 (runtime 13.0) cannot reach a CUDA driver: " +
                             kInsufficient);
  // Only the runtime in use is called after the search.
  et_cuda_test::Fake used = et_cuda_test::Fake::open((kFallbackDir + "/libcudart.so.12").c_str());
  et_cuda_test::Fake skipped = et_cuda_test::Fake::open((kFallbackDir + "/libcudart.so.13").c_str());
  ASSERT_TRUE(used.ok());
  ASSERT_TRUE(skipped.ok()) << "the skipped runtime stays loaded (never unloaded)";
  EXPECT_EQ(skipped.count("cudaGetDeviceCount"), 1) << "probed once";
  used.reset();
  skipped.reset();
  auto t = TensorDyn::allocate({4096}, DType::U8, et_test::mem(MemoryKind::Heap));
  ASSERT_OK(t);
  {
    auto m = cuda::map(*t);
    ASSERT_OK(m);
    EXPECT_EQ(m->path(), cuda::CudaPath::HostRegistered);
  }
  EXPECT_EQ(used.count("cudaHostRegister"), 1);
  EXPECT_EQ(skipped.call_count(), 0);
  *t = TensorDyn();
  EXPECT_EQ(used.live("host_register"), 0);
  EXPECT_EQ(used.violations(), 0);
}

TEST(CudaFakeNoDriverAnywhere, EveryCandidateIsListedAndTheFirstIsReported) {
  ET_FALLBACK_LANE_OR_SKIP(kNoDriverDir, "cuda.fakenodriverany");
  const auto st = cuda::report();
  const cuda::detail::LoaderReport& loader = cuda::detail::loader_report();
  const std::string file = kNoDriverDir + "/libcudart.so.13";
  EXPECT_TRUE(loader.loaded);
  EXPECT_FALSE(st.available);
  EXPECT_EQ(st.runtime_file, file) << "none reached a driver: the newest runtime that loaded is reported";
  EXPECT_NE(st.error.find(kInsufficient), std::string::npos) << st.error;
  const std::vector<std::string> expected = {
      "libcudart.so.13: " + file + " (runtime 13.0) cannot reach a CUDA driver: " + kInsufficient,
      "libcudart.so.12: " + file + ": the same file as libcudart.so.13",
      "libcudart.so.11.0: " + file + ": the same file as libcudart.so.13",
      "libcudart.so: " + file + ": the same file as libcudart.so.13",
  };
  EXPECT_EQ(loader.tried, expected);
  for (const auto& line : loader.tried) EXPECT_EQ(occurrences(line, file), 1) << line;
}
#else
TEST(CudaFakeFallback, NeedsTheTestDouble) {
  GTEST_SKIP() << "the CUDA test-double runtime was not built: no toolkit headers at " ET_CUDA_TOOLKIT_INCLUDE;
}
#endif

}  // namespace
