// SPDX-License-Identifier: Apache-2.0
// The GL checks of probe() (the gl_pbo section and the CUDA-GL round trip of the cuda section), built
// from public API calls only. The GL and CUDA-GL tests call them too (tests/hardware, tests/cuda,
// tests/gpu), so this header needs nothing but the public headers.
#pragma once

#include <edgetensor/gl.h>

#include <memory>
#include <string>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

/// What probe() shows about GL on this machine.
struct GlCheck {
  bool available = false;           ///< A context could be created.
  std::string reason;               ///< Why not (the creation error), when !available.
  edgetensor::gl::ContextInfo info;  ///< Valid when available.
  bool pbo_round_trip = false;      ///< A pattern written through a CPU map of a real PBO read back equal.
  std::string pbo_detail;           ///< What the round trip did, or where it failed.
};

/// Creates a context with `options`, allocates a 64 KiB PBO tensor, checks it reads as zeros, writes a
/// pattern through a write map, reads it back through a read map, then drops both. Never fails: the
/// outcome is in the result. Takes milliseconds (context creation dominates).
GlCheck gl_check(const edgetensor::gl::ContextOptions& options = {});

/// Outcome of cuda_gl_round_trip().
struct CudaGlRoundTrip {
  bool ok = false;     ///< Both directions read back equal.
  std::string detail;  ///< What ran (renderer, device, map+unmap time), or where it failed.
};

/// The CUDA-GL path end to end: allocates a 64 KiB PBO tensor on `context` (null: a context with
/// default options, made and dropped here), writes a pattern through a CPU map and reads it through
/// cuda::map + copy_device_to_host, writes a second pattern through the device pointer, releases the
/// CudaMap and reads it through a CPU map. Never fails: the outcome is in the result. With CUDA
/// unavailable it returns at once with the reason ("CUDA unavailable: ...").
CudaGlRoundTrip cuda_gl_round_trip(const std::shared_ptr<edgetensor::gl::Context>& context = nullptr);

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
