// SPDX-License-Identifier: Apache-2.0
// The C++ consumer of gstreamer.sink_feeds_c_cpp_python_consumers (gst_pipelines_test.c), on the public C++
// API (edgetensor/channel.h):
//   et_gst_cpp_consumer <socket-path> <reference-file> <frames>
// Connects to the edgetensorsink on <socket-path> (retrying for 20 s while it is not up), receives until the
// end of stream, and checks each frame: its sequence is the next one, and the SHA-256 of its NV12 planes' rows
// (each row's width bytes, Y then UV, strides skipped) equals line <sequence> of <reference-file> (GStreamer's
// own rendering of the pattern, one hex digest a line). Exits 0 when all <frames> frames matched and the end
// came, printing one line; 1 otherwise, naming the first frame that differed.
#include <edgetensor/edgetensor.h>
#include <glib.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace et = edgetensor;
using namespace std::chrono_literals;

namespace {

// The frame's digest, or "" when a plane cannot be read (the error on stderr).
std::string frame_digest(const et::Frame& frame) {
  GChecksum* sum = g_checksum_new(G_CHECKSUM_SHA256);
  bool ok = frame.plane_count() == 2;
  for (std::size_t p = 0; ok && p < frame.plane_count(); ++p) {
    auto plane = frame.plane(p);
    if (!plane) {
      std::fprintf(stderr, "et_gst_cpp_consumer: plane %zu: %s\n", p, plane.error().to_string().c_str());
      ok = false;
      break;
    }
    auto map = plane->map_read();
    if (!map) {
      std::fprintf(stderr, "et_gst_cpp_consumer: map of plane %zu: %s\n", p, map.error().to_string().c_str());
      ok = false;
      break;
    }
    // Rows of width bytes (NV12: Y [h, w], UV [h/2, w/2, 2]), row_stride apart.
    const std::size_t rows = plane->shape()[0];
    const std::size_t row_bytes = frame.layout().width;
    const auto stride = static_cast<std::size_t>(plane->strides()[0]);
    for (std::size_t r = 0; r < rows; ++r)
      g_checksum_update(sum, reinterpret_cast<const guchar*>(map->data() + r * stride), static_cast<gssize>(row_bytes));
  }
  std::string digest = ok ? g_checksum_get_string(sum) : "";
  g_checksum_free(sum);
  return digest;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: et_gst_cpp_consumer <socket-path> <reference-file> <frames>\n");
    return 2;
  }
  const std::string path = argv[1];
  const long frames = std::strtol(argv[3], nullptr, 10);
  std::vector<std::string> reference;
  std::ifstream in(argv[2]);
  for (std::string line; std::getline(in, line);) reference.push_back(line);
  if (static_cast<long>(reference.size()) != frames) {
    std::fprintf(stderr, "et_gst_cpp_consumer: %s holds %zu digests, not %ld\n", argv[2], reference.size(), frames);
    return 1;
  }
  auto socket = et::channel::connect(path);
  for (int tries = 0; tries < 2000 && !socket; ++tries) {  // the sink may not listen yet
    std::this_thread::sleep_for(10ms);
    socket = et::channel::connect(path);
  }
  if (!socket) {
    std::fprintf(stderr, "et_gst_cpp_consumer: connect %s: %s\n", path.c_str(), socket.error().to_string().c_str());
    return 1;
  }
  auto receiver = et::channel::Receiver::create(std::move(*socket), {.name = "cpp-consumer"});
  if (!receiver) {
    std::fprintf(stderr, "et_gst_cpp_consumer: receiver: %s\n", receiver.error().to_string().c_str());
    return 1;
  }
  long received = 0, right = 0;
  for (;;) {
    auto d = receiver->receive(10s);
    if (!d) {
      std::fprintf(stderr, "et_gst_cpp_consumer: receive after %ld frames: %s\n", received,
                   d.error().to_string().c_str());
      return 1;
    }
    if (d->end_of_stream) break;
    const std::string digest = d->frame.is_empty() ? "" : frame_digest(d->frame);
    const bool good = d->sequence == static_cast<std::uint64_t>(received) && received < frames &&
                      digest == reference[static_cast<std::size_t>(received)];
    if (!good)
      std::fprintf(stderr, "et_gst_cpp_consumer: frame %ld (sequence %llu): digest %s, the reference's %s\n", received,
                   static_cast<unsigned long long>(d->sequence), digest.c_str(),
                   received < frames ? reference[static_cast<std::size_t>(received)].c_str() : "(none: too many frames)");
    right += good;
    ++received;
  }
  std::printf("C++ consumer: %ld frames, %ld equal to the reference, then the end of stream\n", received, right);
  return received == frames && right == frames ? 0 : 1;
}
