// SPDX-License-Identifier: Apache-2.0
// Sizes, offsets and enumerator values of the legacy DLPack ABI as Debian's dlpack.h (libdlpack-dev,
// DLPack 0.6) declares them, measured in dlpack06_values.cpp: the one file that includes that header.
// It must stay apart from edgetensor's declarations (dlpack_abi_test.cpp): every copy of dlpack.h
// shares one include guard, so a translation unit could never hold two of them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace et_test {

struct Dlpack06Values {
  long header_version;  // DLPACK_VERSION (60 for 0.6)
  std::size_t device_size, device_id_offset;
  std::size_t data_type_size, bits_offset, lanes_offset;
  std::size_t tensor_size, data_offset, device_offset, ndim_offset, dtype_offset, shape_offset, strides_offset,
      byte_offset_offset;
  std::size_t managed_size, dl_tensor_offset, manager_ctx_offset, deleter_offset;
  int cpu, cuda, cuda_host, opencl, vulkan, metal, vpi, rocm, rocm_host, ext_dev, cuda_managed;
  int type_int, type_uint, type_float, type_opaque_handle, type_bfloat, type_complex;
};

/// The values, from Debian's header (defined only where it was found at configure time).
Dlpack06Values dlpack06_values();

}  // namespace et_test
