// SPDX-License-Identifier: Apache-2.0
// The C++ side of the Python channel tests (test_channel.py) and of bench/python_consumer_bench.py.
//
// Producer (the default role): a camera-like loop on the frame channel.
//   et_py_channel_peer --socket-fd <fd> --frames <n> --pool <buffers> --width <w> --height <h>
//                      [--interval-ms <ms> | --fps <f>] [--policy block|drop] [--max-frames-out <m>]
// Sends n NV12 frames from an image Pool (shm) through channel::Sender::acquire and send_frame; frame s has
// byte o of its buffer = (13 o + s) & 0xff, pts_ns = 1000 s, duration_ns = 33, flags = s, and the send
// time as its timestamp. --interval-ms sleeps that long after each send; --fps sends frame s at start + s / f
// (a late frame goes at once, and the schedule restarts from it: no burst to catch up). Then end_stream()
// and drain(10 s). Prints "ok sent <n> dropped <d>" and exits 0, or prints the error to stderr and exits 1.
//
// Consumer (the C++ consumer the bench compares Python's with):
//   et_py_channel_peer --role consume --socket-fd <fd> [--warmup <frames>] [--convert cast|scale]
// Prints "ready" once its Receiver exists, then per frame until the end of stream: receive, the Y plane to
// float32 into one buffer kept across frames (cast, the default: y as float; scale: y / 255), check its first
// pixel against the producer's pattern, release (the Delivery goes), then stamp CLOCK_MONOTONIC. The first
// `warmup` frames (default 10: buffers announced, imported and first touched) are not counted. Prints one line
//   result {"frames": n, "cpu_ns": c, "wall_ns": w, "receive_ns": r, "convert_ns": v, "minflt": f,
//           "latency_ns": [...]}
// over the counted frames (cpu_ns: CLOCK_PROCESS_CPUTIME_ID, from the end of the last warm-up frame to the
// end of the last frame; receive_ns and convert_ns: this thread's CPU in receive() and in the conversion;
// latency: the frame's timestamp to its release) and exits 0; errors as the producer.
#include <edgetensor/edgetensor.h>
#include <sys/resource.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace et = edgetensor;
using namespace std::chrono_literals;

namespace {

int fail(const char* what, const et::Error& e) {
  std::fprintf(stderr, "et_py_channel_peer: %s: %s\n", what, e.to_string().c_str());
  return 1;
}

std::int64_t clock_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// The bench's conversions, as the Python consumers do them (bench/python_consumer_bench.py): every pixel of a
// [h, w] uint8 plane with `stride` bytes per row to float32, as it is (cast) or times 1 / 255 (scale), in one
// pass.
template <bool kScaled>
void y_to_float(const std::uint8_t* y, std::size_t h, std::size_t w, std::size_t stride, float* out) {
  constexpr float kScale = 1.0f / 255.0f;
  for (std::size_t r = 0; r < h; ++r) {
    const std::uint8_t* row = y + r * stride;
    float* o = out + r * w;
    for (std::size_t c = 0; c < w; ++c) o[c] = kScaled ? static_cast<float>(row[c]) * kScale : row[c];
  }
}

int consume(int fd, long warmup, bool scaled) {
  auto r = et::channel::Receiver::create(et::UniqueFd(fd), {.name = "cpp-consumer"});
  if (!r) return fail("receiver", r.error());
  std::printf("ready\n");
  std::fflush(stdout);
  std::vector<float> out;
  std::vector<std::int64_t> latencies;
  long seen = 0;
  std::int64_t cpu0 = 0, cpu1 = 0, wall0 = 0, wall1 = 0, convert = 0, receive = 0;
  long faults0 = 0, faults1 = 0;
  for (;;) {
    std::int64_t stamp = 0;
    {
      const std::int64_t r0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
      auto d = r->receive(10s);
      if (!d) return fail("receive", d.error());
      if (seen >= warmup) receive += clock_ns(CLOCK_THREAD_CPUTIME_ID) - r0;
      if (d->end_of_stream) break;
      auto y = d->frame.plane(0);
      if (!y) return fail("plane", y.error());
      auto m = y->map_read();
      if (!m) return fail("map_read", m.error());
      const std::size_t h = y->shape()[0], w = y->shape()[1], stride = static_cast<std::size_t>(y->strides()[0]);
      out.resize(h * w);
      const std::int64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
      const auto* pixels = reinterpret_cast<const std::uint8_t*>(m->data());
      if (scaled) y_to_float<true>(pixels, h, w, stride, out.data());
      else y_to_float<false>(pixels, h, w, stride, out.data());
      if (seen >= warmup) convert += clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
      if (static_cast<long>(out[0] * (scaled ? 255.0f : 1.0f) + 0.5f) != static_cast<long>(d->sequence & 0xff)) {
        std::fprintf(stderr, "et_py_channel_peer: frame %llu: Y[0, 0] is %f, not %llu%s\n",
                     static_cast<unsigned long long>(d->sequence), static_cast<double>(out[0]),
                     static_cast<unsigned long long>(d->sequence & 0xff), scaled ? " / 255" : "");
        return 1;
      }
      stamp = d->timestamp_ns;
    }  // the map, the plane and the Delivery go: the frame is released
    const std::int64_t now = clock_ns(CLOCK_MONOTONIC);
    ++seen;
    if (seen == warmup) {
      cpu0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
      wall0 = now;
      faults0 = minor_faults();
    } else if (seen > warmup) {
      latencies.push_back(now - stamp);
      cpu1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
      wall1 = now;
      faults1 = minor_faults();
    }
  }
  std::string lat;
  for (const auto l : latencies) lat += (lat.empty() ? "" : ", ") + std::to_string(l);
  std::printf("result {\"frames\": %zu, \"cpu_ns\": %lld, \"wall_ns\": %lld, \"receive_ns\": %lld, "
              "\"convert_ns\": %lld, \"minflt\": %ld, \"latency_ns\": [%s]}\n",
              latencies.size(), static_cast<long long>(cpu1 - cpu0), static_cast<long long>(wall1 - wall0),
              static_cast<long long>(receive), static_cast<long long>(convert), faults1 - faults0, lat.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int fd = -1;
  long frames = 0, buffers = 0, width = 0, height = 0, interval_ms = 0, max_out = 0, warmup = 10;
  double fps = 0;
  std::string policy = "block", role = "produce", convert = "cast";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* v = argv[i + 1];
    if (flag == "--socket-fd") fd = std::atoi(v);
    else if (flag == "--role") role = v;
    else if (flag == "--frames") frames = std::atol(v);
    else if (flag == "--pool") buffers = std::atol(v);
    else if (flag == "--width") width = std::atol(v);
    else if (flag == "--height") height = std::atol(v);
    else if (flag == "--interval-ms") interval_ms = std::atol(v);
    else if (flag == "--fps") fps = std::atof(v);
    else if (flag == "--policy") policy = v;
    else if (flag == "--max-frames-out") max_out = std::atol(v);
    else if (flag == "--warmup") warmup = std::atol(v);
    else if (flag == "--convert") convert = v;
  }
  if (role == "consume" && fd >= 0 && warmup >= 0 && (convert == "cast" || convert == "scale"))
    return consume(fd, warmup, convert == "scale");
  if (role != "produce" || fd < 0 || frames <= 0 || buffers <= 0 || width <= 0 || height <= 0 || fps < 0) {
    std::fprintf(stderr, "usage: %s --socket-fd <fd> --frames <n> --pool <buffers> --width <w> --height <h> "
                         "[--interval-ms <ms> | --fps <f>] [--policy block|drop] [--max-frames-out <m>]\n"
                         "       %s --role consume --socket-fd <fd> [--warmup <frames>] [--convert cast|scale]\n",
                 argv[0], argv[0]);
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
  using Clock = std::chrono::steady_clock;
  const auto period = fps > 0 ? std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / fps))
                              : Clock::duration::zero();
  auto next = Clock::now();
  for (long s = 0; s < frames; ++s) {
    if (fps > 0) {
      const auto now = Clock::now();
      if (next > now) std::this_thread::sleep_until(next);
      else next = now;  // late: this frame goes now, the next one a period later
      next += period;
    }
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
