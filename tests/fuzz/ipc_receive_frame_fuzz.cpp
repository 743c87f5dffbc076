// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: ipc::receive_frame fed raw messages with fds (fuzz_input.h). One receive per
// message sent, one more after the sender closed; every plane of a received frame has its first and
// last byte read; the open-fd count must be what it was before the input.
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
      auto f = ipc::receive_frame(p.receiver.get());
      if (!f) continue;
      if (auto m = f->map_read())
        for (std::size_t plane = 0; plane < m->plane_count(); ++plane) et_fuzz::touch(m->plane_bytes(plane));
    }
  }
  et_fuzz::check_fds(before, et_fuzz::open_fd_count(), "ipc_receive_frame");
  return 0;
}
