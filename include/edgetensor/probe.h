// SPDX-License-Identifier: Apache-2.0
// The machine report behind `edgetensor info` and Python's edgetensor.info(): every backend and device
// tried for real. Sections and fields: docs/ARCHITECTURE.md, "The probe report".
#pragma once

#include <edgetensor/error.h>
#include <edgetensor/export.h>
#include <edgetensor/tensor.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace edgetensor {
inline namespace ET_ABI_NAMESPACE {

/// The "schema" field of ProbeReport::to_json().
inline constexpr const char* kProbeSchema = "edgetensor.info/1";

/// The verdict of one section.
enum class ProbeStatus : std::uint8_t {
  Ok = 0,           ///< Tried for real and it worked.
  Unavailable = 1,  ///< Not built, no device or no runtime here (`detail` says which).
  Failed = 2,       ///< Present, but the check went wrong (`detail` says where).
};

/// "ok", "unavailable", "failed".
ET_API std::string_view probe_status_name(ProbeStatus status) noexcept;

/// One backend or subsystem: "heap", "shm (memfd)", "shm (named POSIX)", "dmabuf", "gl_pbo", "cuda".
struct ProbeSection {
  std::string name;
  ProbeStatus status = ProbeStatus::Failed;
  std::string detail;               ///< One line.
  std::string fields_json = "{}";   ///< The section's other fields: the text of one JSON object.
};

/// What probe() found.
struct ET_API ProbeReport {
  std::string version;                ///< The loaded library's version().
  std::vector<ProbeSection> sections;  ///< In the order above.
  std::string system_json = "{}";      ///< Kernel, page size, /dev/shm, device nodes: one JSON object.

  /// {"schema", "version", "system", "sections": [{name, status, detail, ...fields}]}, indented by
  /// two spaces, as `edgetensor info --json` prints it.
  std::string to_json() const;
  /// The table `edgetensor info` prints: one line per section, then the system lines.
  std::string to_table() const;
  /// The section named `name`; null when there is none. Valid while the report lives unchanged.
  const ProbeSection* find(std::string_view name) const noexcept;
};

/// Runs a cross-process round trip of `tensor`, already allocated: hands it to another process, which
/// checks it and writes back; returns a one-line summary of what ran, or the error. `shm_name` empty:
/// the tensor travels by fd; otherwise it is the named POSIX shm object the other process opens.
using ProbeRoundTrip = std::function<Result<std::string>(const TensorDyn& tensor, std::string_view shm_name)>;

/// Options for probe().
struct ProbeOptions {
  /// Called for each shareable section (memfd, named shm, DMA-BUF). Empty: no cross-process round
  /// trip (a library cannot start a peer of its own); those sections check within this process and say so.
  ProbeRoundTrip round_trip;
};

/// Probes this machine: allocates a 1.2 MB tensor of each memory kind and checks it through maps,
/// creates and drops a GL context with a PBO, loads the CUDA runtime (it stays loaded) and, with a
/// device, runs a device round trip per memory kind. Opens the dma-heap nodes, /dev/udmabuf, EGL and
/// libcudart; creates and removes a named shm object "/edgetensor-info-<pid>-<n>". Takes about 0.1 s
/// without a CUDA device (context creation dominates; a device adds its round trips), plus what
/// `options.round_trip` takes. Any thread; not for a hot path. Never throws: a failure, even an
/// exception, becomes a Failed section.
[[nodiscard]] ET_API ProbeReport probe(const ProbeOptions& options = {});

}  // namespace ET_ABI_NAMESPACE
}  // namespace edgetensor
