// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: ipc::receive_frame fed raw messages with fds (fuzz_input.h). One receive per
// message sent, one more after the sender closed; every plane of a received frame has its first and
// last byte read; the open-fd count must be what it was before the input.
#include <edgetensor/edgetensor.h>

#include <cstddef>
#include <cstdint>

#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return et_fuzz::run_input({data, size}, "ipc_receive_frame", [](edgetensor::UniqueFd& sock, std::size_t receives) {
    for (std::size_t i = 0; i < receives; ++i) {
      auto f = edgetensor::ipc::receive_frame(sock.get());
      if (!f) continue;
      if (auto m = f->map_read())
        for (std::size_t plane = 0; plane < m->plane_count(); ++plane) et_fuzz::touch(m->plane_bytes(plane));
    }
  });
}
