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

}  // namespace detail
}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
