// SPDX-License-Identifier: Apache-2.0
// Debian's DLPack 0.6 header (libdlpack-dev), measured. This file includes nothing of edgetensor's:
// see dlpack06_values.h. Built only where CMake found <dlpack/dlpack.h> (tests/CMakeLists.txt).
#include <dlpack/dlpack.h>

#include <cstddef>

#include "unit/dlpack/dlpack06_values.h"

namespace et_test {

Dlpack06Values dlpack06_values() {
  Dlpack06Values v{};
#ifdef DLPACK_VERSION
  v.header_version = DLPACK_VERSION;
#else
  v.header_version = -1;
#endif
  v.device_size = sizeof(DLDevice);
  v.device_id_offset = offsetof(DLDevice, device_id);
  v.data_type_size = sizeof(DLDataType);
  v.bits_offset = offsetof(DLDataType, bits);
  v.lanes_offset = offsetof(DLDataType, lanes);
  v.tensor_size = sizeof(DLTensor);
  v.data_offset = offsetof(DLTensor, data);
  v.device_offset = offsetof(DLTensor, device);
  v.ndim_offset = offsetof(DLTensor, ndim);
  v.dtype_offset = offsetof(DLTensor, dtype);
  v.shape_offset = offsetof(DLTensor, shape);
  v.strides_offset = offsetof(DLTensor, strides);
  v.byte_offset_offset = offsetof(DLTensor, byte_offset);
  v.managed_size = sizeof(DLManagedTensor);
  v.dl_tensor_offset = offsetof(DLManagedTensor, dl_tensor);
  v.manager_ctx_offset = offsetof(DLManagedTensor, manager_ctx);
  v.deleter_offset = offsetof(DLManagedTensor, deleter);
  v.cpu = kDLCPU;
  v.cuda = kDLCUDA;
  v.cuda_host = kDLCUDAHost;
  v.opencl = kDLOpenCL;
  v.vulkan = kDLVulkan;
  v.metal = kDLMetal;
  v.vpi = kDLVPI;
  v.rocm = kDLROCM;
  v.rocm_host = kDLROCMHost;
  v.ext_dev = kDLExtDev;
  v.cuda_managed = kDLCUDAManaged;
  v.type_int = kDLInt;
  v.type_uint = kDLUInt;
  v.type_float = kDLFloat;
  v.type_opaque_handle = kDLOpaqueHandle;
  v.type_bfloat = kDLBfloat;
  v.type_complex = kDLComplex;
  return v;
}

}  // namespace et_test
