// SPDX-License-Identifier: Apache-2.0
// Our legacy DLPack struct against an independent source: Debian's dlpack.h 0.6 (libdlpack-dev),
// measured in its own translation unit (dlpack06_values.cpp; both headers cannot share one).
#include <edgetensor/dlpack.h>
#include <gtest/gtest.h>

#include <cstddef>

#include "unit/dlpack/dlpack06_values.h"

namespace dl = edgetensor::dlpack;

namespace {

TEST(DlpackAbi, LegacyStructMatchesDebiansDlpack06Header) {
#if !ET_TEST_HAVE_DLPACK06
  GTEST_SKIP() << "<dlpack/dlpack.h> not found at configure time (Debian: libdlpack-dev, scripts/deps.sh)";
#else
  const et_test::Dlpack06Values v = et_test::dlpack06_values();
  EXPECT_EQ(v.header_version, 60) << "Debian 12's libdlpack-dev is DLPack 0.6";
  EXPECT_EQ(sizeof(dl::Device), v.device_size);
  EXPECT_EQ(offsetof(dl::Device, device_id), v.device_id_offset);
  EXPECT_EQ(sizeof(dl::DataType), v.data_type_size);
  EXPECT_EQ(offsetof(dl::DataType, bits), v.bits_offset);
  EXPECT_EQ(offsetof(dl::DataType, lanes), v.lanes_offset);
  EXPECT_EQ(sizeof(dl::DlTensor), v.tensor_size);
  EXPECT_EQ(offsetof(dl::DlTensor, data), v.data_offset);
  EXPECT_EQ(offsetof(dl::DlTensor, device), v.device_offset);
  EXPECT_EQ(offsetof(dl::DlTensor, ndim), v.ndim_offset);
  EXPECT_EQ(offsetof(dl::DlTensor, dtype), v.dtype_offset);
  EXPECT_EQ(offsetof(dl::DlTensor, shape), v.shape_offset);
  EXPECT_EQ(offsetof(dl::DlTensor, strides), v.strides_offset);
  EXPECT_EQ(offsetof(dl::DlTensor, byte_offset), v.byte_offset_offset);
  EXPECT_EQ(sizeof(dl::ManagedTensor), v.managed_size);
  EXPECT_EQ(offsetof(dl::ManagedTensor, dl_tensor), v.dl_tensor_offset);
  EXPECT_EQ(offsetof(dl::ManagedTensor, manager_ctx), v.manager_ctx_offset);
  EXPECT_EQ(offsetof(dl::ManagedTensor, deleter), v.deleter_offset);
  using D = dl::DeviceType;
  EXPECT_EQ(static_cast<int>(D::Cpu), v.cpu);
  EXPECT_EQ(static_cast<int>(D::Cuda), v.cuda);
  EXPECT_EQ(static_cast<int>(D::CudaHost), v.cuda_host);
  EXPECT_EQ(static_cast<int>(D::OpenCl), v.opencl);
  EXPECT_EQ(static_cast<int>(D::Vulkan), v.vulkan);
  EXPECT_EQ(static_cast<int>(D::Metal), v.metal);
  EXPECT_EQ(static_cast<int>(D::Vpi), v.vpi);
  EXPECT_EQ(static_cast<int>(D::Rocm), v.rocm);
  EXPECT_EQ(static_cast<int>(D::RocmHost), v.rocm_host);
  EXPECT_EQ(static_cast<int>(D::ExtDev), v.ext_dev);
  EXPECT_EQ(static_cast<int>(D::CudaManaged), v.cuda_managed);
  using C = dl::TypeCode;
  EXPECT_EQ(static_cast<int>(C::Int), v.type_int);
  EXPECT_EQ(static_cast<int>(C::UInt), v.type_uint);
  EXPECT_EQ(static_cast<int>(C::Float), v.type_float);
  EXPECT_EQ(static_cast<int>(C::OpaqueHandle), v.type_opaque_handle);
  EXPECT_EQ(static_cast<int>(C::Bfloat), v.type_bfloat);
  EXPECT_EQ(static_cast<int>(C::Complex), v.type_complex);
#endif
}

// The versioned struct has no independent copy on Debian 12: check the spec's layout rule instead
// (version, manager_ctx and deleter first, then flags, then the DLTensor), on this target.
TEST(DlpackAbi, VersionedStructLayout) {
  EXPECT_EQ(offsetof(dl::ManagedTensorVersioned, version), 0u);
  EXPECT_EQ(offsetof(dl::ManagedTensorVersioned, manager_ctx), 8u);
  EXPECT_EQ(offsetof(dl::ManagedTensorVersioned, deleter), 8u + sizeof(void*));
  EXPECT_EQ(offsetof(dl::ManagedTensorVersioned, dl_tensor) + sizeof(dl::DlTensor), sizeof(dl::ManagedTensorVersioned));
  EXPECT_EQ(dl::kFlagReadOnly, 1u);
  EXPECT_EQ(dl::kFlagIsCopied, 2u);
  EXPECT_EQ(static_cast<int>(dl::TypeCode::Bool), 6);
  EXPECT_EQ(static_cast<int>(dl::DeviceType::OneApi), 14);
  EXPECT_EQ(static_cast<int>(dl::DeviceType::Maia), 17);
  if (sizeof(void*) == 8) {
    EXPECT_EQ(sizeof(dl::DlTensor), 48u);
    EXPECT_EQ(sizeof(dl::ManagedTensor), 64u);
    EXPECT_EQ(sizeof(dl::ManagedTensorVersioned), 80u);
  }
}

}  // namespace
