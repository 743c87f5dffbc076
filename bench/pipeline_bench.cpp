// SPDX-License-Identifier: Apache-2.0
// The camera pipeline of issue 25, run for real: a producer publishes 1080p NV12 frames at 30 fps from a
// Pool through a channel::Publisher; consumers are forked processes on socket pairs.
//   1. one "model" consumer: receive_latest(), then 50 ms of work (a read of the Y plane, then sleep to
//      50 ms); latency = end of its work - the frame's capture stamp (CLOCK_MONOTONIC, Delivery::timestamp_ns).
//   2. the same, beside a "recorder" under ReceiverPolicy::Drop (max_frames_out 2) that takes 120 ms per
//      frame: the model's frame rate and latency should not change.
//   3. stopping mid-stream: end_stream() then drain() while both consumers hold frames; the time until
//      every consumer saw the end and every buffer came back.
// Prints figures and ratios measured in this run; nothing is asserted (docs/TESTING.md: performance is
// measured in benchmarks). Usage: edgetensor_pipeline_bench [--seconds S] (default 5 per run; --help; a bad
// argument exits 2 naming it).
#include <edgetensor/edgetensor.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using namespace edgetensor;
using namespace std::chrono_literals;

namespace {

std::int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// What a consumer reports back through its pipe.
struct Report {
  std::uint64_t frames = 0;       // frames worked on
  std::uint64_t skipped = 0;      // released unseen by receive_latest
  std::uint64_t missing = 0;      // gaps (frames the publisher dropped for it)
  double p50_ms = 0, p99_ms = 0;  // capture to end of work
  double fps = 0;                 // frames worked on per second, first to last
  bool saw_end = false;
};

// A consumer: `work` ms per frame; latest-frame or every frame. Returns its exit status; writes a Report.
int consume(UniqueFd socket, int report_fd, int work_ms, bool latest) {
  auto r = channel::Receiver::create(std::move(socket), {.name = latest ? "model" : "recorder"});
  if (!r) return 2;
  std::vector<double> latencies;
  Report rep;
  std::int64_t first = 0, last = 0;
  for (;;) {
    auto d = latest ? r->receive_latest(10s) : r->receive(10s);
    if (!d) return 3;
    if (d->end_of_stream) {
      rep.saw_end = true;
      break;
    }
    const std::int64_t start = now_ns();
    {
      auto m = d->frame.is_empty() ? d->tensor.map_read() : Result<ReadMap>(fail(ErrorCode::Internal, "frame"));
      std::uint64_t sum = 0;
      if (m)
        for (std::size_t i = 0; i < m->extent_bytes(); i += 64) sum += static_cast<std::uint8_t>(m->data()[i]);
      if (sum == 1) std::fputc(' ', stderr);  // keeps the read
    }
    const std::int64_t left = static_cast<std::int64_t>(work_ms) * 1'000'000 - (now_ns() - start);
    if (left > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(left));
    last = now_ns();
    if (first == 0) first = last;
    latencies.push_back(static_cast<double>(last - d->timestamp_ns) / 1e6);
    ++rep.frames;
  }
  const auto st = r->stats();
  rep.skipped = st.frames_skipped;
  rep.missing = st.frames_missing;
  if (!latencies.empty()) {
    std::sort(latencies.begin(), latencies.end());
    rep.p50_ms = latencies[latencies.size() / 2];
    rep.p99_ms = latencies[std::min(latencies.size() - 1, latencies.size() * 99 / 100)];
  }
  if (rep.frames > 1) rep.fps = static_cast<double>(rep.frames - 1) * 1e9 / static_cast<double>(last - first);
  return ::write(report_fd, &rep, sizeof rep) == sizeof rep ? 0 : 4;
}

struct Child {
  pid_t pid = -1;
  int report_fd = -1;
};

// Forks a consumer on one end of a socket pair; the other end is returned for the publisher.
Result<UniqueFd> spawn(Child& child, int work_ms, bool latest) {
  ET_TRY_ASSIGN(auto sp, channel::socket_pair());
  int p[2];
  if (::pipe(p) != 0) return fail(ErrorCode::Internal, "pipe");
  child.pid = ::fork();
  if (child.pid == 0) {
    ::close(p[0]);
    sp.first.reset();
    ::_exit(consume(std::move(sp.second), p[1], work_ms, latest));
  }
  ::close(p[1]);
  child.report_fd = p[0];
  return std::move(sp.first);
}

bool collect(Child& child, Report& rep) {
  const bool ok = ::read(child.report_fd, &rep, sizeof rep) == sizeof rep;
  ::close(child.report_fd);
  int status = 0;
  ::waitpid(child.pid, &status, 0);
  return ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

struct RunResult {
  Report model, recorder;
  double stop_ms = 0;           // end_stream() until drain() returned
  std::uint64_t published = 0;
  bool ok = false;
};

// Must be called before any thread exists in this process (the consumers are forked).
RunResult run(double seconds, bool with_recorder) {
  RunResult out;
  Child model, recorder;
  auto model_end = spawn(model, 50, true);
  if (!model_end) return out;
  Result<UniqueFd> recorder_end = fail(ErrorCode::NotFound, "none");
  if (with_recorder) {
    recorder_end = spawn(recorder, 120, false);
    if (!recorder_end) return out;
  }
  auto layout = ImageLayout::make(1920, 1080, PixelFormat::Nv12);
  auto pool = layout ? Pool::create_image(*layout, {.name = "camera", .max_buffers = 8}) : Result<Pool>(fail(layout.error()));
  auto pub = channel::Publisher::create({.name = "camera"});
  if (!pool || !pub) {
    std::fprintf(stderr, "pipeline: %s\n", (!pool ? pool.error() : pub.error()).to_string().c_str());
    return out;
  }
  if (!pub->add_receiver(std::move(*model_end))) return out;
  if (with_recorder &&
      !pub->add_receiver(std::move(*recorder_end),
                         {.policy = channel::ReceiverPolicy::Drop, .max_frames_out = 2}))
    return out;
  const auto interval = std::chrono::nanoseconds(1'000'000'000 / 30);
  auto next = std::chrono::steady_clock::now();
  const auto until = next + std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(seconds));
  std::uint8_t shade = 0;
  while (std::chrono::steady_clock::now() < until) {
    auto t = pub->acquire(*pool, 1s);
    if (!t) {
      std::fprintf(stderr, "pipeline: %s\n", t.error().to_string().c_str());
      return out;
    }
    if (auto m = t->map_write()) std::memset(m->data(), ++shade, m->extent_bytes());  // the "camera" fills it
    if (!pub->send(*t)) return out;
    ++out.published;
    next += interval;
    std::this_thread::sleep_until(next);
  }
  const std::int64_t stop = now_ns();
  if (!pub->end_stream() || !pub->drain(5s)) return out;
  out.stop_ms = static_cast<double>(now_ns() - stop) / 1e6;
  out.ok = collect(model, out.model) && (!with_recorder || collect(recorder, out.recorder));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 5;
  constexpr double kMaxSeconds = 3600;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::printf("usage: %s [--seconds S]\n  S: seconds per run, 0 < S <= %.0f (default 5); two runs, then the "
                  "figures (nothing is asserted)\n", argv[0], kMaxSeconds);
      return 0;
    }
    if (std::strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      char* end = nullptr;
      seconds = std::strtod(argv[++i], &end);
      if (end == argv[i] || *end != '\0' || !(seconds > 0 && seconds <= kMaxSeconds)) {
        std::fprintf(stderr, "%s: --seconds %s is not a number in (0, %.0f]\n", argv[0], argv[i], kMaxSeconds);
        return 2;
      }
      continue;
    }
    if (std::strcmp(argv[i], "--seconds") == 0) {
      std::fprintf(stderr, "%s: --seconds needs a value\n", argv[0]);
      return 2;
    }
    std::fprintf(stderr, "%s: unknown argument '%s' (usage: %s [--seconds S]; --help)\n", argv[0], argv[i], argv[0]);
    return 2;
  }
  std::printf("Pipeline (issue 25): 1080p NV12 at 30 fps from a pool of 8, %.0f s per run, one process per consumer\n",
              seconds);
  const RunResult alone = run(seconds, false);
  const RunResult both = run(seconds, true);
  if (!alone.ok || !both.ok) {
    std::printf("a run failed (see above)\n");
    return 1;
  }
  const double interval_ms = 1000.0 / 30;
  std::printf("%-44s %8s %8s %8s %8s %9s\n", "consumer", "frames", "fps", "p50 ms", "p99 ms", "skipped");
  auto row = [](const char* what, const Report& r) {
    std::printf("%-44s %8llu %8.1f %8.1f %8.1f %9llu\n", what, static_cast<unsigned long long>(r.frames), r.fps, r.p50_ms,
                r.p99_ms, static_cast<unsigned long long>(r.skipped));
  };
  row("model (latest frame, 50 ms), alone", alone.model);
  row("model (latest frame, 50 ms), beside recorder", both.model);
  row("recorder (drop policy, limit 2, 120 ms)", both.recorder);
  std::printf("model p50 latency %.1f ms; target <= one frame interval + its work = %.1f ms: %s\n", both.model.p50_ms,
              interval_ms + 50, both.model.p50_ms <= interval_ms + 50 ? "met" : "NOT MET");
  std::printf("model frame rate beside the recorder / alone: %.2fx (1.00 = unchanged)\n",
              alone.model.fps > 0 ? both.model.fps / alone.model.fps : 0.0);
  std::printf("recorder: %llu frames missing (dropped for it by the publisher), end of stream seen: %s\n",
              static_cast<unsigned long long>(both.recorder.missing), both.recorder.saw_end ? "yes" : "no");
  std::printf("stop mid-stream: end_stream() + drain() took %.1f ms (alone) and %.1f ms (with the recorder holding "
              "frames); every consumer saw the end: %s\n",
              alone.stop_ms, both.stop_ms, alone.model.saw_end && both.model.saw_end && both.recorder.saw_end ? "yes" : "no");
  return 0;
}
