// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: ipc::receive fed raw messages with fds (fuzz_input.h). One receive per message
// sent (each is there: never blocks), one more after the sender closed; a received tensor's first and
// last byte are read; the open-fd count must be what it was before the input.
#include <edgetensor/edgetensor.h>

#include <cstddef>
#include <cstdint>

#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return et_fuzz::run_input({data, size}, "ipc_receive", [](edgetensor::UniqueFd& sock, std::size_t receives) {
    for (std::size_t i = 0; i < receives; ++i) {
      auto t = edgetensor::ipc::receive(sock.get());
      if (!t) continue;
      if (auto m = t->map_read()) et_fuzz::touch(m->bytes());
    }
  });
}
