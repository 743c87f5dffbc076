// SPDX-License-Identifier: Apache-2.0
// Byte layouts of the external-memory descriptors, per CUDA runtime major (x86-64 and aarch64 LP64).
//
// Sources (checked by tests/cuda/header_layout_test.cpp against the installed toolkit headers when present):
//  - 11.x and 12.x runtime: driver_types.h `struct cudaExternalMemoryHandleDesc { type; union handle
//    { int fd; struct { void* handle; const void* name; } win32; const void* nvSciBufObject; };
//    unsigned long long size; unsigned int flags; }` and `struct cudaExternalMemoryBufferDesc
//    { unsigned long long offset; unsigned long long size; unsigned int flags; }` (CUDA Runtime API
//    reference 12.x, "cudaExternalMemoryHandleDesc Struct Reference": no reserved member).
//  - 13.0 runtime: driver_types.h (CUDART_VERSION 13000) adds `unsigned int reserved[16]` ("Must be
//    zero") after `flags` in both structs, so they grow from 40 to 104 and from 24 to 88 bytes.
//  - Driver API (cuda.h, CUDA_EXTERNAL_MEMORY_HANDLE_DESC_v1 / CUDA_EXTERNAL_MEMORY_BUFFER_DESC_v1):
//    has had reserved[16] since CUDA 10.0; 104 and 88 bytes.
// Passing a 12.x-sized descriptor to a 13.0 runtime would make it read 64 bytes past the struct as
// "reserved", so the layout is chosen from cudaRuntimeGetVersion() and every byte is zeroed.
#pragma once

#include <edgetensor/abi.h>  // ET_ABI_NAMESPACE

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace cuda {
namespace detail {

struct DescriptorLayout {
  const char* source;  // where the numbers come from
  std::size_t handle_desc_size;
  std::size_t handle_type_offset, handle_fd_offset, handle_size_offset, handle_flags_offset;
  std::size_t buffer_desc_size;
  std::size_t buffer_offset_offset, buffer_size_offset, buffer_flags_offset;
};

// Mirrors used only to let the compiler check the numbers below (never passed to CUDA).
union MirrorHandle {
  int fd;
  struct {
    void* handle;
    const void* name;
  } win32;
  const void* nv_sci_buf_object;
};
struct MirrorHandleDescV11 {
  int type;
  MirrorHandle handle;
  unsigned long long size;
  unsigned int flags;
};
struct MirrorBufferDescV11 {
  unsigned long long offset;
  unsigned long long size;
  unsigned int flags;
};
struct MirrorHandleDescReserved {
  int type;
  MirrorHandle handle;
  unsigned long long size;
  unsigned int flags;
  unsigned int reserved[16];
};
struct MirrorBufferDescReserved {
  unsigned long long offset;
  unsigned long long size;
  unsigned int flags;
  unsigned int reserved[16];
};

inline constexpr DescriptorLayout kLayoutRuntime11 = {
    "CUDA 11.x/12.x driver_types.h (no reserved fields)", 40, 0, 8, 24, 32, 24, 0, 8, 16};
inline constexpr DescriptorLayout kLayoutRuntime13 = {
    "CUDA 13.0 driver_types.h (CUDART_VERSION 13000, reserved[16])", 104, 0, 8, 24, 32, 88, 0, 8, 16};
inline constexpr DescriptorLayout kLayoutDriverV1 = {
    "cuda.h CUDA_EXTERNAL_MEMORY_{HANDLE,BUFFER}_DESC_v1 (reserved[16] since 10.0)", 104, 0, 8, 24, 32, 88, 0, 8, 16};

// The tables describe LP64 targets (x86-64, aarch64), the only ones NVIDIA ships a CUDA runtime for; a
// 32-bit build (armhf) compiles this module but its loader refuses to load any runtime
// (cuda_runtime_api.cpp), so no descriptor is ever built there.
#if UINTPTR_MAX == UINT64_MAX
static_assert(sizeof(MirrorHandleDescV11) == kLayoutRuntime11.handle_desc_size);
static_assert(offsetof(MirrorHandleDescV11, type) == kLayoutRuntime11.handle_type_offset);
static_assert(offsetof(MirrorHandleDescV11, handle) == kLayoutRuntime11.handle_fd_offset);
static_assert(offsetof(MirrorHandleDescV11, size) == kLayoutRuntime11.handle_size_offset);
static_assert(offsetof(MirrorHandleDescV11, flags) == kLayoutRuntime11.handle_flags_offset);
static_assert(sizeof(MirrorBufferDescV11) == kLayoutRuntime11.buffer_desc_size);
static_assert(offsetof(MirrorBufferDescV11, offset) == kLayoutRuntime11.buffer_offset_offset);
static_assert(offsetof(MirrorBufferDescV11, size) == kLayoutRuntime11.buffer_size_offset);
static_assert(offsetof(MirrorBufferDescV11, flags) == kLayoutRuntime11.buffer_flags_offset);
static_assert(sizeof(MirrorHandleDescReserved) == kLayoutRuntime13.handle_desc_size);
static_assert(offsetof(MirrorHandleDescReserved, type) == kLayoutRuntime13.handle_type_offset);
static_assert(offsetof(MirrorHandleDescReserved, handle) == kLayoutRuntime13.handle_fd_offset);
static_assert(offsetof(MirrorHandleDescReserved, size) == kLayoutRuntime13.handle_size_offset);
static_assert(offsetof(MirrorHandleDescReserved, flags) == kLayoutRuntime13.handle_flags_offset);
static_assert(sizeof(MirrorBufferDescReserved) == kLayoutRuntime13.buffer_desc_size);
static_assert(offsetof(MirrorBufferDescReserved, offset) == kLayoutRuntime13.buffer_offset_offset);
static_assert(offsetof(MirrorBufferDescReserved, size) == kLayoutRuntime13.buffer_size_offset);
static_assert(offsetof(MirrorBufferDescReserved, flags) == kLayoutRuntime13.buffer_flags_offset);
static_assert(kLayoutDriverV1.handle_desc_size == sizeof(MirrorHandleDescReserved));
static_assert(kLayoutDriverV1.buffer_desc_size == sizeof(MirrorBufferDescReserved));
#endif  // LP64

/// The layout for a runtime version as cudaRuntimeGetVersion reports it (major * 1000 + minor * 10);
/// null for a major we have no table for (below 11 or above 13).
inline const DescriptorLayout* layout_for_runtime(int runtime_version) noexcept {
  const int major = runtime_version / 1000;
  if (major == 11 || major == 12) return &kLayoutRuntime11;
  if (major == 13) return &kLayoutRuntime13;
  return nullptr;
}

/// A zero-filled handle descriptor of exactly the layout's size (heap-allocated at that size, so a
/// runtime reading past it is caught by ASan).
inline std::vector<unsigned char> make_handle_desc(const DescriptorLayout& l, int type, int fd,
                                                   std::uint64_t size_bytes, unsigned flags) {
  std::vector<unsigned char> d(l.handle_desc_size, 0);
  std::memcpy(d.data() + l.handle_type_offset, &type, sizeof type);
  std::memcpy(d.data() + l.handle_fd_offset, &fd, sizeof fd);
  std::memcpy(d.data() + l.handle_size_offset, &size_bytes, sizeof size_bytes);
  std::memcpy(d.data() + l.handle_flags_offset, &flags, sizeof flags);
  return d;
}

/// A zero-filled buffer descriptor (offset, size, flags = 0) of exactly the layout's size.
inline std::vector<unsigned char> make_buffer_desc(const DescriptorLayout& l, std::uint64_t offset_bytes,
                                                   std::uint64_t size_bytes) {
  std::vector<unsigned char> d(l.buffer_desc_size, 0);
  std::memcpy(d.data() + l.buffer_offset_offset, &offset_bytes, sizeof offset_bytes);
  std::memcpy(d.data() + l.buffer_size_offset, &size_bytes, sizeof size_bytes);
  return d;
}

}  // namespace detail
}  // namespace cuda
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
