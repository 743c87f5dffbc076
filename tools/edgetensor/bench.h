// SPDX-License-Identifier: Apache-2.0
// `edgetensor bench`: a seconds-long version of edgetensor_bench's steady-state rows on the user's
// machine (public API only). JSON schema "edgetensor.bench/1": {schema, version, method, rows:[{size,
// width, height, bytes, memory, baseline, measured, clock, baseline_cpu_ns, measured_cpu_ns, ratio,
// min_ratio, met}], not_measured:[...]}; min_ratio 0 = report only; clock "wall" rows hold wall ns in
// the *_cpu_ns fields.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace edgetensor_cli {

inline constexpr const char* kBenchSchema = "edgetensor.bench/1";

struct BenchRow {
  std::string size;     // "360p", "720p", "1080p", "4K"
  std::size_t width = 0, height = 0, bytes = 0;
  std::string memory;   // "heap", "memfd"
  std::string baseline, measured;  // what was timed
  std::string clock = "thread cpu";  // "thread cpu", "wall" (a case of two processes), or "process cpu"
  double baseline_cpu_ns = 0, measured_cpu_ns = 0;
  double ratio = 0;      // baseline / measured: higher is faster
  double min_ratio = 0;  // the target, 0 = report only
  bool met = true;
};

struct BenchReport {
  std::vector<BenchRow> rows;
  std::vector<std::string> not_measured;  // one line each: what this version cannot measure yet, and why
  std::string error;                      // non-empty when the run could not start (an allocation failed)
};

/// Measures, in a few seconds: per frame size and memory, pool acquire + full write, and a fresh
/// allocate + first write, each against a memset of a warm buffer of the same size (CPU time of this
/// thread, best of several interleaved rounds); then the frame channel rows (run_channel_bench).
BenchReport run_bench();
/// bench_channel.cpp: per frame size, the frame channel's handoff between two processes (send,
/// receive, release; wall time) against writing the frame's bytes through the same socket, and
/// receive + read of every byte (this thread's CPU time) against reading a warm local buffer.
void run_channel_bench(BenchReport& report);
nlohmann::json to_json(const BenchReport& report);
std::string to_table(const BenchReport& report);

}  // namespace edgetensor_cli
