// SPDX-License-Identifier: Apache-2.0
// The sections of probe(): each is one backend or subsystem (probe_backends.cpp: heap, shm, DMA-BUF;
// probe_devices.cpp: GL, CUDA). A section is built with nlohmann::json fields and becomes a
// ProbeSection (fields as JSON text) once done: nlohmann stays out of the public header.
#pragma once

#include <edgetensor/probe.h>
#include <edgetensor/tensor.h>

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {
namespace detail {

/// A section while it is built.
struct ProbeDraft {
  std::string name;
  ProbeStatus status = ProbeStatus::Failed;
  std::string detail;
  nlohmann::json fields = nlohmann::json::object();

  ProbeSection finish() &&;
};

nlohmann::json probe_system();
ProbeDraft probe_heap();
/// memfd, named POSIX shm, DMA-BUF: allocated, then `options.round_trip` or a check in this process.
ProbeDraft probe_memfd(const ProbeOptions& options);
ProbeDraft probe_named_shm(const ProbeOptions& options);
ProbeDraft probe_dmabuf(const ProbeOptions& options);
ProbeDraft probe_gl();
ProbeDraft probe_cuda();

/// Byte `i` of the test pattern for `seed`.
inline std::uint8_t probe_pattern_byte(std::size_t i, std::uint32_t seed) {
  return static_cast<std::uint8_t>((i * 131u + seed * 7u + (i >> 8)) & 0xffu);
}
/// Writes the pattern for `seed` through a write map. Errors: the map's.
Result<void> write_probe_pattern(const TensorDyn& t, std::uint32_t seed);
/// Checks the pattern for `seed` through a read map. Errors: the map's; Internal naming the first bad byte.
Result<void> check_probe_pattern(const TensorDyn& t, std::uint32_t seed);

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
