// SPDX-License-Identifier: Apache-2.0
// CUDA supports 64-bit targets only: a 32-bit process (armhf) never loads a runtime, whatever
// EDGETENSOR_CUDART names, and says why (src/cuda/cuda_runtime_api.cpp).
#include <edgetensor/cuda.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "cuda/loader_report.h"

// Only in 32-bit builds; 64-bit builds test the loader in the CUDA lanes (tests/cuda).
#if UINTPTR_MAX == UINT32_MAX
namespace {

using namespace edgetensor;

TEST(CudaLoader, NoRuntimeIn32BitProcesses) {
  const cuda::RuntimeReport s = cuda::report();
  const cuda::detail::LoaderReport& loader = cuda::detail::loader_report();
  EXPECT_FALSE(loader.loaded);
  EXPECT_FALSE(s.available);
  EXPECT_TRUE(loader.tried.empty()) << "nothing is dlopen'ed";
  EXPECT_NE(s.error.find("32-bit process"), std::string::npos) << s.error;
  EXPECT_NE(s.error.find("64-bit targets only"), std::string::npos) << s.error;
}

}  // namespace
#endif
