// SPDX-License-Identifier: Apache-2.0
// The loader's and the runtime's findings that cuda::RuntimeReport leaves out: what `edgetensor info`
// (src/probe) and the CUDA tests show. Public types only, so tests/gpu/gpu_check.cpp includes it too.
#pragma once

#include <edgetensor/export.h>

#include <string>
#include <vector>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace cuda {
namespace detail {

struct LoaderReport {
  bool disabled = false;          ///< EDGETENSOR_DISABLE_CUDA is set.
  bool loaded = false;            ///< A runtime library loaded with every required symbol.
  bool from_env = false;          ///< EDGETENSOR_CUDART named the file.
  /// Every candidate that did not work, in the order tried, "<name or path>: <why>": dlopen's reason,
  /// "<file> lacks required CUDA runtime symbol(s): ...", "<file> (runtime 13.0) cannot reach a CUDA
  /// driver: cudaGetDeviceCount: cudaErrorInsufficientDriver (35): ...", or "<file>: the same file as
  /// <earlier name>". The kept file appears here too when no candidate worked.
  std::vector<std::string> tried;
  /// Symbols the file lacks, by name. Required ones (any makes `loaded` false and is named in the
  /// report's error) and optional ones (each group off: driver_entry_points, gl_interop) are both
  /// always listed, whatever else is missing. Empty when no file was opened.
  std::vector<std::string> missing_required_symbols;
  std::vector<std::string> missing_optional_symbols;
  bool driver_entry_points = false;  ///< Optional group: cudaGetDriverEntryPoint[ByVersion].
  bool gl_interop = false;           ///< Optional group: cudaGraphicsGLRegisterBuffer and friends.
  bool dmabuf_handle_type = false;   ///< The driver offers cuImportExternalMemory with a driver >= 13.0
                                     ///< (CU_EXTERNAL_MEMORY_HANDLE_TYPE_DMABUF_FD, Jetson Thor+).
  /// The runtime's OpaqueFd import can be used: available and the runtime's major has an
  /// external-memory descriptor table here (11.x-13.x).
  bool external_opaque_fd = false;
};

/// The process's loader report, computed once with cuda::report()'s (loads the runtime on first call).
/// Any thread.
const LoaderReport& loader_report();

}  // namespace detail
}  // namespace cuda
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
