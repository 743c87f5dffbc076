// SPDX-License-Identifier: Apache-2.0
// The cross-process round trip `edgetensor info` gives probe() (ProbeOptions::round_trip): ipc::send the
// tensor (header + fd) over a Unix socket to a separately exec'd `edgetensor peer`, which imports it,
// verifies a pattern and writes a reply pattern.
#pragma once

#include <edgetensor/edgetensor.h>

#include <cstdint>
#include <string>

namespace edgetensor_cli {

/// Runs the whole round trip with a child exec'd from `self_exe`. Returns a one-line summary.
/// With `shm_name`, the peer opens that named POSIX shm object instead of receiving the fd.
edgetensor::Result<std::string> cross_process_round_trip(const edgetensor::TensorDyn& t, const std::string& self_exe,
                                                         const std::string& shm_name = {});

/// The `peer` side: serves one request on the inherited socket fd and returns the process exit code.
int run_peer(int socket_fd);

}  // namespace edgetensor_cli
