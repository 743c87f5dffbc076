// SPDX-License-Identifier: Apache-2.0
// The CUDA-GL path in a build without the GL backend (ET_WITH_EGL=OFF): no PBO tensor can exist, and
// the round trip says why it did not run.
#include "cuda/cuda_internal.h"

namespace edgetensor::inline ET_ABI_NAMESPACE::cuda {
namespace detail {

Result<std::unique_ptr<edgetensor::detail::DeviceHandle>> make_gl_handle(const CudaRuntimeApi&,
                                                                          edgetensor::detail::Storage&, int) {
  return fail(ErrorCode::Unsupported,
              "cuda::map of a gl_pbo tensor: this edgetensor was built without the GL backend (ET_WITH_EGL=OFF)");
}

}  // namespace detail

GlRoundTrip gl_round_trip(const std::shared_ptr<gl::Context>&) {
  GlRoundTrip out;
  out.detail = "not built: this edgetensor was built without the GL backend (ET_WITH_EGL=OFF)";
  return out;
}

}  // namespace edgetensor::cuda
