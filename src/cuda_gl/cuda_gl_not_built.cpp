// SPDX-License-Identifier: Apache-2.0
// The CUDA-GL path in a build without GL (ET_WITH_EGL=OFF): no PBO tensor can exist.
#include "cuda/cuda_internal.h"

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace cuda {
namespace detail {

Result<std::unique_ptr<edgetensor::detail::DeviceHandle>> make_gl_handle(const CudaRuntimeApi&,
                                                                          edgetensor::detail::Storage&, int) {
  return fail(ErrorCode::Unsupported,
              "cuda::map of a gl_pbo tensor: this edgetensor was built without the GL backend (ET_WITH_EGL=OFF)");
}

}  // namespace detail
}  // namespace cuda
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
