// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: ipc::receive fed raw messages with fds (fuzz_input.h). One receive per message
// sent (each is there: never blocks), one more after the sender closed; a received tensor's first and
// last byte are read; the open-fd count must be what it was before the input.
#include <edgetensor/edgetensor.h>

#include <cstddef>
#include <cstdint>

#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace edgetensor;
  const int before = et_fuzz::open_fd_count();
  {
    const et_fuzz::Input input = et_fuzz::parse({data, size});
    et_fuzz::SocketPair p;
    const std::size_t sent = et_fuzz::send_all(input, p.sender);
    for (std::size_t i = 0; i < sent + (input.close_sender ? 1 : 0); ++i) {
      auto t = ipc::receive(p.receiver.get());
      if (!t) continue;
      if (auto m = t->map_read()) et_fuzz::touch(m->bytes());
    }
  }
  et_fuzz::check_fds(before, et_fuzz::open_fd_count(), "ipc_receive");
  return 0;
}
