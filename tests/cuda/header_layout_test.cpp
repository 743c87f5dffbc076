// SPDX-License-Identifier: Apache-2.0
// Our descriptor tables and ABI constants against the installed toolkit headers (when present).
// The library never includes these headers; only this test does.
#include <gtest/gtest.h>

#include "cuda/cuda_runtime_api.h"
#include "cuda/descriptor_layout.h"

#if ET_TEST_HAVE_CUDA_HEADERS
#include <cuda.h>
#include <cuda_runtime_api.h>
#endif

namespace d = edgetensor::cuda::detail;

namespace {

TEST(CudaHeaderLayout, DescriptorTablesMatchInstalledHeaders) {
#if !ET_TEST_HAVE_CUDA_HEADERS
  GTEST_SKIP() << "no CUDA toolkit headers at " ET_CUDA_TOOLKIT_INCLUDE;
#else
  const d::DescriptorLayout* rt = d::layout_for_runtime(CUDART_VERSION);
  ASSERT_NE(rt, nullptr) << "no table for the installed toolkit " << CUDART_VERSION;
  std::printf("installed CUDART_VERSION %d; table: %s\n", CUDART_VERSION, rt->source);
  EXPECT_EQ(sizeof(cudaExternalMemoryHandleDesc), rt->handle_desc_size);
  EXPECT_EQ(offsetof(cudaExternalMemoryHandleDesc, type), rt->handle_type_offset);
  EXPECT_EQ(offsetof(cudaExternalMemoryHandleDesc, handle), rt->handle_fd_offset);
  EXPECT_EQ(offsetof(cudaExternalMemoryHandleDesc, size), rt->handle_size_offset);
  EXPECT_EQ(offsetof(cudaExternalMemoryHandleDesc, flags), rt->handle_flags_offset);
  EXPECT_EQ(sizeof(cudaExternalMemoryBufferDesc), rt->buffer_desc_size);
  EXPECT_EQ(offsetof(cudaExternalMemoryBufferDesc, offset), rt->buffer_offset_offset);
  EXPECT_EQ(offsetof(cudaExternalMemoryBufferDesc, size), rt->buffer_size_offset);
  EXPECT_EQ(offsetof(cudaExternalMemoryBufferDesc, flags), rt->buffer_flags_offset);
#if CUDART_VERSION >= 13000
  EXPECT_EQ(rt, &d::kLayoutRuntime13);
  // The fields before `reserved` are the 11.x/12.x struct: its size is them, padded to 8.
  EXPECT_EQ((offsetof(cudaExternalMemoryHandleDesc, reserved) + 7) & ~std::size_t{7}, d::kLayoutRuntime11.handle_desc_size);
  EXPECT_EQ((offsetof(cudaExternalMemoryBufferDesc, reserved) + 7) & ~std::size_t{7}, d::kLayoutRuntime11.buffer_desc_size);
#endif
  EXPECT_EQ(sizeof(CUDA_EXTERNAL_MEMORY_HANDLE_DESC), d::kLayoutDriverV1.handle_desc_size);
  EXPECT_EQ(offsetof(CUDA_EXTERNAL_MEMORY_HANDLE_DESC, size), d::kLayoutDriverV1.handle_size_offset);
  EXPECT_EQ(offsetof(CUDA_EXTERNAL_MEMORY_HANDLE_DESC, flags), d::kLayoutDriverV1.handle_flags_offset);
  EXPECT_EQ(sizeof(CUDA_EXTERNAL_MEMORY_BUFFER_DESC), d::kLayoutDriverV1.buffer_desc_size);
#endif
}

TEST(CudaHeaderLayout, AbiConstantsMatchInstalledHeaders) {
#if !ET_TEST_HAVE_CUDA_HEADERS
  GTEST_SKIP() << "no CUDA toolkit headers at " ET_CUDA_TOOLKIT_INCLUDE;
#else
  EXPECT_EQ(d::kCudaErrorInvalidValue, cudaErrorInvalidValue);
  EXPECT_EQ(d::kCudaErrorMemoryAllocation, cudaErrorMemoryAllocation);
  EXPECT_EQ(d::kCudaErrorInitializationError, cudaErrorInitializationError);
  EXPECT_EQ(d::kCudaErrorInsufficientDriver, cudaErrorInsufficientDriver);
  EXPECT_EQ(d::kCudaErrorNoDevice, cudaErrorNoDevice);
  EXPECT_EQ(d::kCudaErrorNotReady, cudaErrorNotReady);
  EXPECT_EQ(d::kCudaErrorHostMemoryAlreadyRegistered, cudaErrorHostMemoryAlreadyRegistered);
  EXPECT_EQ(d::kCudaErrorNotSupported, cudaErrorNotSupported);
  EXPECT_EQ(d::kMemcpyHostToDevice, cudaMemcpyHostToDevice);
  EXPECT_EQ(d::kMemcpyDeviceToHost, cudaMemcpyDeviceToHost);
  EXPECT_EQ(d::kMemcpyDeviceToDevice, cudaMemcpyDeviceToDevice);
  EXPECT_EQ(d::kHostRegisterPortable, unsigned{cudaHostRegisterPortable});
  EXPECT_EQ(d::kHostRegisterMapped, unsigned{cudaHostRegisterMapped});
  EXPECT_EQ(d::kHostRegisterReadOnly, unsigned{cudaHostRegisterReadOnly});
  EXPECT_EQ(d::kStreamNonBlocking, unsigned{cudaStreamNonBlocking});
  EXPECT_EQ(d::kEventDisableTiming, unsigned{cudaEventDisableTiming});
  EXPECT_EQ(d::kDevAttrComputeCapabilityMajor, cudaDevAttrComputeCapabilityMajor);
  EXPECT_EQ(d::kDevAttrComputeCapabilityMinor, cudaDevAttrComputeCapabilityMinor);
  EXPECT_EQ(d::kDevAttrIntegrated, cudaDevAttrIntegrated);
  EXPECT_EQ(d::kDevAttrCanMapHostMemory, cudaDevAttrCanMapHostMemory);
  EXPECT_EQ(d::kExternalMemoryHandleTypeOpaqueFd, cudaExternalMemoryHandleTypeOpaqueFd);
  EXPECT_EQ(d::kCuExternalMemoryHandleTypeDmaBufFd, CU_EXTERNAL_MEMORY_HANDLE_TYPE_DMABUF_FD);
  EXPECT_EQ(d::kDriverEntryPointSuccess, cudaDriverEntryPointSuccess);
  EXPECT_EQ(d::kEnableDefault, static_cast<unsigned long long>(cudaEnableDefault));
  EXPECT_EQ(sizeof(d::CuDevicePtr), sizeof(CUdeviceptr));
#endif
}

}  // namespace
