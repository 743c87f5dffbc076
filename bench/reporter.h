// SPDX-License-Identifier: Apache-2.0
// Shared by the benchmark executables (edgetensor_bench, edgetensor_seam_bench): the command line
// (--quick) and the reporter whose times the ratio tables are computed from.
#pragma once

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace et_bench {

/// Initialises Google Benchmark from the command line, with `--quick` meaning a smoke run in seconds
/// (--benchmark_min_time=0.01; the ratios are then rough). Returns whether to print in colour (on a
/// terminal, unless --benchmark_color=false), or std::nullopt after reporting an unrecognised argument.
inline std::optional<bool> initialize(int argc, char** argv) {
  std::vector<char*> args;
  static char quick_flag[] = "--benchmark_min_time=0.01";
  bool color = ::isatty(STDOUT_FILENO) != 0;  // our reporter decides colour itself: only on a terminal
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--benchmark_color=", 18) == 0) color = std::strcmp(argv[i] + 18, "false") != 0;
    args.push_back(std::strcmp(argv[i], "--quick") == 0 ? quick_flag : argv[i]);
  }
  int n = static_cast<int>(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return std::nullopt;
  return color;
}

/// Captures the mean CPU and real time per iteration (ns) of every run, then prints what the console
/// shows. Targets are judged on CPU time (user + system time of the benchmark thread, so page faults
/// and syscalls count): on a shared machine, wall time also counts time spent preempted. With
/// --benchmark_repetitions=N each benchmark keeps its fastest repetition (the one least disturbed by
/// other load); --benchmark_enable_random_interleaving=true spreads such load over all of them.
class CapturingReporter : public benchmark::ConsoleReporter {
 public:
  explicit CapturingReporter(OutputOptions options) : ConsoleReporter(options) {}
  struct Times {
    double cpu_ns = -1, real_ns = -1;
  };
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& run : runs) {
      if (run.run_type != Run::RT_Iteration || run.iterations <= 0) continue;
      const double n = static_cast<double>(run.iterations);
      const Times t{run.cpu_accumulated_time * 1e9 / n, run.real_accumulated_time * 1e9 / n};
      auto [it, fresh] = times_.try_emplace(run.run_name.function_name, t);
      if (!fresh && t.cpu_ns < it->second.cpu_ns) it->second = t;
    }
    ConsoleReporter::ReportRuns(runs);
  }
  /// Times of `name`; negative when it did not run (filtered out, or it failed).
  Times times(const std::string& name) const {
    auto it = times_.find(name);
    return it == times_.end() ? Times{} : it->second;
  }

 private:
  std::map<std::string, Times> times_;
};

}  // namespace et_bench
