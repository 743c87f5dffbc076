// SPDX-License-Identifier: Apache-2.0
// The C++ producer of the Python channel tests (test_channel.py): a camera-like loop on the frame channel.
//
//   et_py_channel_peer --socket-fd <fd> --frames <n> --pool <buffers> --width <w> --height <h>
//                      [--interval-ms <ms>] [--policy block|drop] [--max-frames-out <m>]
// Sends n NV12 frames from an image Pool (shm) through channel::Sender::acquire and send_frame; frame s has
// byte o of its buffer = (13 o + s) & 0xff, pts_ns = 1000 s, duration_ns = 33, flags = s. Then end_stream()
// and drain(10 s). Prints "ok sent <n> dropped <d>" and exits 0, or prints the error to stderr and exits 1.
#include <edgetensor/edgetensor.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace et = edgetensor;
using namespace std::chrono_literals;

namespace {

int fail(const char* what, const et::Error& e) {
  std::fprintf(stderr, "et_py_channel_peer: %s: %s\n", what, e.to_string().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  int fd = -1;
  long frames = 0, buffers = 0, width = 0, height = 0, interval_ms = 0, max_out = 0;
  std::string policy = "block";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* v = argv[i + 1];
    if (flag == "--socket-fd") fd = std::atoi(v);
    else if (flag == "--frames") frames = std::atol(v);
    else if (flag == "--pool") buffers = std::atol(v);
    else if (flag == "--width") width = std::atol(v);
    else if (flag == "--height") height = std::atol(v);
    else if (flag == "--interval-ms") interval_ms = std::atol(v);
    else if (flag == "--policy") policy = v;
    else if (flag == "--max-frames-out") max_out = std::atol(v);
  }
  if (fd < 0 || frames <= 0 || buffers <= 0 || width <= 0 || height <= 0) {
    std::fprintf(stderr, "usage: %s --socket-fd <fd> --frames <n> --pool <buffers> --width <w> --height <h> "
                         "[--interval-ms <ms>] [--policy block|drop] [--max-frames-out <m>]\n", argv[0]);
    return 2;
  }
  auto layout = et::ImageLayout::make(static_cast<std::uint32_t>(width), static_cast<std::uint32_t>(height),
                                      et::PixelFormat::Nv12);
  if (!layout) return fail("layout", layout.error());
  auto pool = et::Pool::create_image(*layout, {.name = "cpp-cam", .max_buffers = static_cast<std::size_t>(buffers),
                                               .allocate = {.memory = et::MemoryKind::Shm}});
  if (!pool) return fail("pool", pool.error());
  et::channel::SenderOptions so;
  so.name = "cpp-cam";
  so.policy = policy == "drop" ? et::channel::ReceiverPolicy::Drop : et::channel::ReceiverPolicy::Block;
  so.max_frames_out = static_cast<std::size_t>(max_out);
  so.send_timeout = 10s;
  auto sender = et::channel::Sender::create(et::UniqueFd(fd), so);
  if (!sender) return fail("sender", sender.error());
  for (long s = 0; s < frames; ++s) {
    auto t = sender->acquire(*pool, 10s);
    if (!t) return fail("acquire", t.error());
    {
      auto m = t->map_write();
      if (!m) return fail("map_write", m.error());
      for (std::size_t o = 0; o < m->extent_bytes(); ++o) m->data()[o] = static_cast<std::byte>((13 * o + s) & 0xff);
    }
    auto frame = et::Frame::from_tensor(*t);
    if (!frame) return fail("frame", frame.error());
    auto sent = sender->send_frame(*frame, {.pts_ns = 1000 * s, .duration_ns = 33, .flags = static_cast<std::uint32_t>(s)});
    if (!sent) return fail("send_frame", sent.error());
    if (interval_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));
  }
  if (auto ended = sender->end_stream(); !ended) return fail("end_stream", ended.error());
  if (auto drained = sender->drain(10s); !drained) return fail("drain", drained.error());
  std::printf("ok sent %ld dropped %llu\n", frames, static_cast<unsigned long long>(sender->stats().frames_dropped));
  return 0;
}
