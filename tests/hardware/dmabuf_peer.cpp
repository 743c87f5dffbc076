// SPDX-License-Identifier: Apache-2.0
// A separately exec'd process for the DMA-BUF sharing test: receives one DMA-BUF fd over SCM_RIGHTS on
// the socket whose number is argv[1], checks that every byte equals `expect`, fills it with `write`,
// and answers 'K' (or 'E' + the reason). Exit status 0 only when the round trip worked.
#include <edgetensor/edgetensor.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {
struct Request {
  std::uint64_t size_bytes;
  std::uint8_t expect;
  std::uint8_t write;
};

int answer(int sock, const std::string& reply) {
  auto r = edgetensor::ipc::send_fds(sock, std::as_bytes(std::span(reply.data(), reply.size())));
  if (!r) std::fprintf(stderr, "peer: reply failed: %s\n", r.error().to_string().c_str());
  return reply[0] == 'K' && r ? 0 : 1;
}
}  // namespace

int main(int argc, char** argv) {
  using namespace edgetensor;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s SOCKET_FD\n", argv[0]);
    return 2;
  }
  int sock = std::atoi(argv[1]);
  Request req{};
  auto got = ipc::receive_fds(sock, std::as_writable_bytes(std::span(&req, 1)), 1);
  if (!got) {
    std::fprintf(stderr, "peer: receive failed: %s\n", got.error().to_string().c_str());
    return 1;
  }
  if (got->size_bytes != sizeof req || got->fds.size() != 1) return answer(sock, "Ebad message");
  auto t = TensorDyn::adopt_fd(std::move(got->fds[0]), {static_cast<std::size_t>(req.size_bytes)}, DType::U8);
  if (!t) return answer(sock, "Eimport: " + t.error().to_string());
  if (t->memory() != MemoryKind::DmaBuf) return answer(sock, "Enot recognised as a DMA-BUF");
  {
    auto r = t->map_read();
    if (!r) return answer(sock, "Emap_read: " + r.error().to_string());
    for (std::size_t i = 0; i < r->bytes().size(); ++i)
      if (r->bytes()[i] != std::byte{req.expect})
        return answer(sock, "Ebyte " + std::to_string(i) + " differs from the sender's");
  }
  {
    auto w = t->map_write();
    if (!w) return answer(sock, "Emap_write: " + w.error().to_string());
    std::memset(w->data(), req.write, w->bytes().size());
  }
  return answer(sock, "K");
}
