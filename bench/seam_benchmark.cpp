// SPDX-License-Identifier: Apache-2.0
// The syscall seam of the shipped library costs nothing per call: sys::fstat and sys::lseek
// (src/base/sys.h) as linked into libedgetensor.a, against the same libc call in the same run, on one
// memfd. The release seam is each libc call and nothing else, so the ratio should read about 1.00; the
// testing seam (counters, fault hook: edgetensor_testing) is not linked here.
//
// Usage: edgetensor_seam_bench [--quick] [Google Benchmark flags]; ratios as in edgetensor_bench.
#include <benchmark/benchmark.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "base/sys.h"
#include "reporter.h"

namespace {

namespace sys = edgetensor::sys;

// Runs `call(fd)` on a fresh memfd of one page per iteration.
template <class Call>
void on_memfd(benchmark::State& state, Call call) {
  int fd = ::memfd_create("seam-bench", MFD_CLOEXEC);
  if (fd < 0 || ::ftruncate(fd, 4096) != 0) {
    state.SkipWithError("memfd_create/ftruncate failed");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(call(fd));
  ::close(fd);
}

void libc_fstat(benchmark::State& state) {
  on_memfd(state, [](int fd) {
    struct stat st;
    return ::fstat(fd, &st) + static_cast<int>(st.st_size);
  });
}
void seam_fstat(benchmark::State& state) {
  on_memfd(state, [](int fd) {
    struct stat st;
    return sys::fstat(fd, &st) + static_cast<int>(st.st_size);
  });
}
void libc_lseek(benchmark::State& state) {
  on_memfd(state, [](int fd) { return ::lseek(fd, 0, SEEK_CUR); });
}
void seam_lseek(benchmark::State& state) {
  on_memfd(state, [](int fd) { return sys::lseek(fd, 0, SEEK_CUR); });
}

}  // namespace

int main(int argc, char** argv) {
  const auto color = et_bench::initialize(argc, argv);
  if (!color) return 1;
  struct Row {
    const char* what;
    const char* baseline;
    const char* measured;
  };
  const Row rows[] = {{"sys::fstat vs fstat (memfd)", "baseline/libc-fstat", "seam/sys::fstat"},
                      {"sys::lseek vs lseek (memfd, SEEK_CUR)", "baseline/libc-lseek", "seam/sys::lseek"}};
  benchmark::RegisterBenchmark(rows[0].baseline, libc_fstat);
  benchmark::RegisterBenchmark(rows[0].measured, seam_fstat);
  benchmark::RegisterBenchmark(rows[1].baseline, libc_lseek);
  benchmark::RegisterBenchmark(rows[1].measured, seam_lseek);
  et_bench::CapturingReporter reporter(*color ? benchmark::ConsoleReporter::OO_Defaults
                                              : benchmark::ConsoleReporter::OO_Tabular);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  std::printf("\nseam ratios = libc time / seam time per call, same run (1.00 = the seam costs nothing).\n");
  std::printf("%-40s %12s %12s %9s %10s\n", "comparison", "libc cpu ns", "seam cpu ns", "cpu ratio", "wall ratio");
  for (const Row& r : rows) {
    const auto base = reporter.times(r.baseline), mine = reporter.times(r.measured);
    if (base.cpu_ns < 0 || mine.cpu_ns <= 0 || mine.real_ns <= 0) {
      std::printf("%-40s %12s %12s %9s %10s  (not run)\n", r.what, "-", "-", "-", "-");
      continue;
    }
    std::printf("%-40s %12.1f %12.1f %8.2fx %9.2fx\n", r.what, base.cpu_ns, mine.cpu_ns, base.cpu_ns / mine.cpu_ns,
                base.real_ns / mine.real_ns);
  }
  return 0;  // a report, never a failure
}
