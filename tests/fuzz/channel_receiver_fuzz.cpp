// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: a channel::Receiver fed raw messages with fds (fuzz_input.h): announces,
// frames, retires and anything else, in any order. It receives (without waiting) until an error or
// nothing is left; every delivery is held to the end (frames out, then released at once when they
// go), and its tensor's or every plane's first and last byte are read. The open-fd count must be
// what it was before the input (imports, eventfd and socket closed).
#include <edgetensor/edgetensor.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace edgetensor;
  return et_fuzz::run_input({data, size}, "channel_receiver", [](UniqueFd& sock, std::size_t) {
    auto receiver = channel::Receiver::create(std::move(sock), {.name = "fuzz", .max_buffers = 8});
    if (!receiver) __builtin_trap();
    std::vector<channel::Delivery> held;
    for (std::size_t i = 0; i <= et_fuzz::kMaxMessages; ++i) {
      auto d = receiver->receive(std::chrono::milliseconds(0));
      if (!d) break;
      if (!d->tensor.is_empty_handle()) {
        if (auto m = d->tensor.map_read()) et_fuzz::touch(m->bytes());
      } else if (auto m = d->frame.map_read()) {
        for (std::size_t plane = 0; plane < m->plane_count(); ++plane) et_fuzz::touch(m->plane_bytes(plane));
      }
      held.push_back(std::move(*d));
    }
    (void)receiver->stats();
    held.clear();  // releases go to the sending end (or find it closed)
  });
}
