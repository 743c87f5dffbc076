// SPDX-License-Identifier: Apache-2.0
// The cross-process round trip `edgetensor info` gives probe() (ProbeOptions::round_trip): ipc::send the
// tensor (header + fd) over a Unix socket to a separately exec'd `edgetensor peer`, which imports it,
// verifies a pattern and writes a reply pattern.
#pragma once

#include <edgetensor/edgetensor.h>

#include <cstdint>
#include <string>

namespace edgetensor_cli {

/// Byte i of the pattern for `seed`.
inline std::uint8_t pattern_byte(std::size_t i, std::uint32_t seed) {
  return static_cast<std::uint8_t>((i * 131u + seed * 7u + (i >> 8)) & 0xffu);
}

/// Writes pattern(seed) through a write map. Errors: the map's.
edgetensor::Result<void> write_pattern(const edgetensor::TensorDyn& t, std::uint32_t seed);
/// Checks pattern(seed) through a read map. Errors: the map's; Internal naming the first bad byte.
edgetensor::Result<void> check_pattern(const edgetensor::TensorDyn& t, std::uint32_t seed);

/// Runs the whole round trip with a child exec'd from `self_exe`. Returns a one-line summary.
/// With `shm_name`, the peer opens that named POSIX shm object instead of receiving the fd.
edgetensor::Result<std::string> cross_process_round_trip(const edgetensor::TensorDyn& t, const std::string& self_exe,
                                                         const std::string& shm_name = {});

/// The `peer` side: serves one request on the inherited socket fd and returns the process exit code.
int run_peer(int socket_fd);

}  // namespace edgetensor_cli
