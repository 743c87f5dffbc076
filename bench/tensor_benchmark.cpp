// SPDX-License-Identifier: Apache-2.0
// edgetensor benchmarks: allocation, first write, map+unmap, writes through a map and pool reuse
// (pool_benchmark.cpp), for heap and memfd tensors of RGBA u8 frames (360p, 720p, 1080p, 4K), against
// fixed baselines measured in the same run: malloc+memset | mmap+munmap of the same memfd without
// touching pages | memcpy into a prefaulted buffer | memset of a warm (prefaulted, reused) buffer.
// After the run a ratio table is printed with each target; a missed target reads "NOT MET" (exit 0).
// DLPack (dlpack.h): versioned export + import + deleter of one 1080p tensor, target < 1 us, printed
// beside same-run baselines (a shared_ptr copy; a TensorDyn view, which builds a tensor too).
// Tensor copies and views (metadata_benchmark.cpp) against the shared_ptr copy, with sizeof(TensorDyn).
// The C API's calls against the C++ calls they wrap (capi_benchmark.cpp), target <= 1.2x + 50 ns.
//
// Usage: edgetensor_bench [--quick] [Google Benchmark flags]
//   --quick   a smoke run in seconds (same as --benchmark_min_time=0.01); the ratios are then rough.
// On a shared machine: --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true.
#include <benchmark/benchmark.h>
#include <edgetensor/edgetensor.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench.h"
#include "reporter.h"

using namespace edgetensor;
using et_bench::FrameSize;
using et_bench::kFrames;
using et_bench::CapturingReporter;
using et_bench::Target;

namespace et_bench {
TensorDyn must_allocate(const FrameSize& f, MemoryKind kind) {
  AllocateOptions o;
  o.memory = kind;
  auto t = TensorDyn::allocate({f.height, f.width, 4}, DType::U8, o);
  if (!t) {
    std::fprintf(stderr, "allocate %s %s failed: %s\n", f.name, std::string(memory_kind_name(kind)).c_str(),
                 t.error().to_string().c_str());
    std::exit(1);
  }
  return std::move(*t);
}
}  // namespace et_bench

namespace {

using et_bench::must_allocate;

// ---- baselines (plain libc) ----------------------------------------------------------------------
void baseline_malloc_memset(benchmark::State& state, FrameSize f) {
  for (auto _ : state) {
    void* p = std::malloc(f.bytes());
    std::memset(p, 0, f.bytes());
    benchmark::DoNotOptimize(p);
    benchmark::ClobberMemory();
    std::free(p);
  }
}

void baseline_mmap_munmap(benchmark::State& state, FrameSize f) {
  int fd = ::memfd_create("bench-baseline", MFD_CLOEXEC);
  if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(f.bytes())) != 0) {
    state.SkipWithError("memfd_create/ftruncate failed");
    return;
  }
  for (auto _ : state) {
    void* p = ::mmap(nullptr, f.bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    benchmark::DoNotOptimize(p);
    ::munmap(p, f.bytes());
  }
  ::close(fd);
}

void baseline_memcpy(benchmark::State& state, FrameSize f) {
  std::vector<unsigned char> src(f.bytes(), 0x5a);
  auto* dst = static_cast<unsigned char*>(std::malloc(f.bytes()));
  std::memset(dst, 1, f.bytes());  // prefaulted
  for (auto _ : state) {
    std::memcpy(dst, src.data(), f.bytes());
    benchmark::ClobberMemory();
  }
  std::free(dst);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * f.bytes()));
}

// ---- edgetensor ----------------------------------------------------------------------------------
void allocate_only(benchmark::State& state, FrameSize f, MemoryKind kind) {
  for (auto _ : state) {
    TensorDyn t = must_allocate(f, kind);
    benchmark::DoNotOptimize(t);
  }
}

void allocate_and_write(benchmark::State& state, FrameSize f, MemoryKind kind) {
  for (auto _ : state) {
    TensorDyn t = must_allocate(f, kind);
    auto m = t.map_write();
    std::memset(m->data(), 0x5a, m->extent_bytes());
    benchmark::ClobberMemory();
  }
}

void map_unmap(benchmark::State& state, FrameSize f, MemoryKind kind) {
  TensorDyn t = must_allocate(f, kind);
  (void)t.map_read();  // the persistent mapping is made once, on the first map
  for (auto _ : state) {
    auto m = t.map_read_write();
    benchmark::DoNotOptimize(m->data());
  }
}

void write_through_map(benchmark::State& state, FrameSize f, MemoryKind kind) {
  TensorDyn t = must_allocate(f, kind);
  std::vector<unsigned char> src(f.bytes(), 0x5a);
  {
    auto m = t.map_write();
    std::memset(m->data(), 1, m->extent_bytes());  // prefault, like the memcpy baseline
  }
  for (auto _ : state) {
    auto m = t.map_write();
    std::memcpy(m->data(), src.data(), f.bytes());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * f.bytes()));
}

// ---- DLPack --------------------------------------------------------------------------------------
void baseline_shared_ptr_copy(benchmark::State& state) {
  auto p = std::make_shared<int>(1);
  for (auto _ : state) {
    std::shared_ptr<int> q = p;
    benchmark::DoNotOptimize(q);
  }
}

void baseline_tensor_view(benchmark::State& state) {
  TensorDyn t = must_allocate(kFrames[2], MemoryKind::Heap);
  for (auto _ : state) {
    auto v = t.batch(0);
    benchmark::DoNotOptimize(v);
  }
}

// export_versioned + adopt_versioned + dropping the import (which runs our export's deleter).
void dlpack_round_trip(benchmark::State& state) {
  TensorDyn t = must_allocate(kFrames[2], MemoryKind::Heap);
  (void)t.map_read();  // the persistent mapping is made once
  for (auto _ : state) {
    auto e = dlpack::export_versioned(t);
    auto back = dlpack::adopt_versioned(*e);
    benchmark::DoNotOptimize(back);
  }
  if (dlpack::live_export_count() != 0) state.SkipWithError("an export was not deleted");
}

void dlpack_export_delete(benchmark::State& state) {
  TensorDyn t = must_allocate(kFrames[2], MemoryKind::Heap);
  (void)t.map_read();
  for (auto _ : state) {
    auto e = dlpack::export_versioned(t);
    benchmark::DoNotOptimize(*e);
    (*e)->deleter(*e);
  }
}

// ---- ratio table ---------------------------------------------------------------------------------
int print_ratios(const CapturingReporter& rep) {
  std::printf("\nedgetensor ratios = baseline time / edgetensor time per iteration, same run (higher is faster).\n"
              "Targets are judged on the CPU-time ratio; rows marked (wall) (two processes) on the wall-time ratio,\n"
              "with wall ns in the ns columns. The wall-time ratio is shown for reference.\n");
  std::printf("%-6s %-46s %13s %13s %9s %9s  %s\n", "size", "comparison", "base cpu ns", "et cpu ns", "cpu ratio",
              "wall ratio", "target");
  int missed = 0;
  for (const FrameSize& f : kFrames) {
    const std::string s = f.name;
    std::vector<Target> targets = {
        {"allocate heap vs malloc+memset", "baseline/malloc+memset/" + s, "allocate/heap/" + s, 20.0},
        {"allocate memfd vs malloc+memset", "baseline/malloc+memset/" + s, "allocate/memfd/" + s, 20.0},
        {"allocate+first write heap vs malloc+memset", "baseline/malloc+memset/" + s, "allocate+write/heap/" + s, 0.0},
        {"allocate+first write memfd vs malloc+memset", "baseline/malloc+memset/" + s, "allocate+write/memfd/" + s, 0.0},
        {"map+unmap heap vs per-map mmap+munmap", "baseline/mmap+munmap/" + s, "map+unmap/heap/" + s, 50.0},
        {"map+unmap memfd vs per-map mmap+munmap", "baseline/mmap+munmap/" + s, "map+unmap/memfd/" + s, 50.0},
        {"write through map heap vs memcpy", "baseline/memcpy/" + s, "write-through-map/heap/" + s, 0.95},
        {"write through map memfd vs memcpy", "baseline/memcpy/" + s, "write-through-map/memfd/" + s, 0.95},
    };
    for (auto& t : et_bench::pool_targets(f)) targets.push_back(std::move(t));
    for (auto& t : et_bench::channel_targets(f)) targets.push_back(std::move(t));
    for (const auto& t : targets) {
      const auto base = rep.times(t.baseline), mine = rep.times(t.measured);
      if (base.cpu_ns < 0 || mine.cpu_ns <= 0 || mine.real_ns <= 0) {
        std::printf("%-6s %-46s %13s %13s %9s %9s  (not run)\n", f.name, t.what, "-", "-", "-", "-");
        continue;
      }
      const double wall_ratio = base.real_ns / mine.real_ns;
      const double ratio = t.judge_wall ? wall_ratio : base.cpu_ns / mine.cpu_ns;
      char target[48] = "report only";
      if (t.min_ratio > 0) {
        const bool met = ratio >= t.min_ratio;
        missed += met ? 0 : 1;
        std::snprintf(target, sizeof target, ">= %gx %s", t.min_ratio, met ? "met" : "NOT MET");
      }
      // A row judged on wall time shows wall ns in the ns columns.
      std::printf("%-6s %-46s %13.0f %13.0f %8.2fx %8.2fx  %s\n", f.name, t.what,
                  t.judge_wall ? base.real_ns : base.cpu_ns, t.judge_wall ? mine.real_ns : mine.cpu_ns, ratio,
                  wall_ratio, target);
    }
  }
  std::printf("%d target(s) not met\n", missed);
  return missed;
}

// Rows that do not depend on a frame size; a row judged on wall time shows wall ns.
int print_size_free(const CapturingReporter& rep) {
  std::printf("\nPer-call costs, same run (ratio = baseline / edgetensor; 1.00 = the same cost):\n");
  std::printf("%-46s %13s %13s %9s  %s\n", "comparison", "base ns", "et ns", "ratio", "target");
  auto rows = et_bench::result_targets();
  for (auto& t : et_bench::channel_size_free_targets()) rows.push_back(std::move(t));
  int missed = 0;
  for (const auto& t : rows) {
    const auto base = rep.times(t.baseline), mine = rep.times(t.measured);
    if (base.cpu_ns < 0 || mine.cpu_ns <= 0 || mine.real_ns <= 0) continue;
    const double b = t.judge_wall ? base.real_ns : base.cpu_ns, m = t.judge_wall ? mine.real_ns : mine.cpu_ns;
    char target[48] = "report only";
    if (t.min_ratio > 0) {
      const bool met = b / m >= t.min_ratio;
      missed += met ? 0 : 1;
      std::snprintf(target, sizeof target, ">= %.2fx %s%s", t.min_ratio, met ? "met" : "NOT MET",
                    t.judge_wall ? " (wall)" : "");
    }
    std::printf("%-46s %13.1f %13.1f %8.2fx  %s\n", t.what, b, m, b / m, target);
  }
  return missed;
}

int print_dlpack(const CapturingReporter& rep) {
  std::printf("\nDLPack (one 1080p u8 heap tensor; the cost does not depend on its size), same run:\n");
  std::printf("%-48s %10s %10s  %s\n", "measured", "cpu ns", "wall ns", "target");
  int missed = 0;
  const auto round_trip = rep.times("dlpack/export+import+deleter");
  for (const char* name : {"baseline/shared_ptr-copy", "baseline/tensor-view", "dlpack/export+deleter",
                           "dlpack/export+import+deleter"}) {
    const auto t = rep.times(name);
    if (t.cpu_ns < 0) continue;
    char target[48] = "";
    if (std::strcmp(name, "dlpack/export+import+deleter") == 0) {
      const bool met = t.cpu_ns < 1000.0;
      missed += met ? 0 : 1;
      std::snprintf(target, sizeof target, "< 1000 ns %s", met ? "met" : "NOT MET");
    } else if (round_trip.cpu_ns > 0) {
      std::snprintf(target, sizeof target, "round trip = %.1fx this", round_trip.cpu_ns / t.cpu_ns);
    }
    std::printf("%-48s %10.0f %10.0f  %s\n", name, t.cpu_ns, t.real_ns, target);
  }
  return missed;
}

// Copies and views against a shared_ptr copy (metadata_benchmark.cpp): report only.
void print_metadata(const CapturingReporter& rep) {
  std::printf("\nTensor copies and views, sizeof(TensorDyn) = %zu B; ratio = shared_ptr copy time / this time "
              "(same run):\n", sizeof(TensorDyn));
  std::printf("%-48s %10s %10s %9s\n", "measured", "base cpu ns", "cpu ns", "ratio");
  for (const Target& t : et_bench::metadata_targets()) {
    const auto base = rep.times(t.baseline), mine = rep.times(t.measured);
    if (base.cpu_ns < 0 || mine.cpu_ns <= 0) continue;
    std::printf("%-48s %10.1f %10.1f %8.3fx\n", t.measured.c_str(), base.cpu_ns, mine.cpu_ns,
                base.cpu_ns / mine.cpu_ns);
  }
}

// The C API against C++ (capi_benchmark.cpp): C ns <= 1.2 x C++ ns + 50 ns.
int print_capi(const CapturingReporter& rep) {
  std::printf("\nC API overhead, same run (target: C <= 1.2 x C++ + 50 ns):\n");
  std::printf("%-40s %12s %12s %8s  %s\n", "call", "C++ cpu ns", "C cpu ns", "C / C++", "target");
  int missed = 0;
  for (const Target& t : et_bench::capi_targets()) {
    const auto cpp = rep.times(t.baseline), c = rep.times(t.measured);
    if (cpp.cpu_ns <= 0 || c.cpu_ns < 0) continue;
    const bool met = c.cpu_ns <= 1.2 * cpp.cpu_ns + 50.0;
    missed += met ? 0 : 1;
    std::printf("%-40s %12.1f %12.1f %7.2fx  %s\n", t.what, cpp.cpu_ns, c.cpu_ns, c.cpu_ns / cpp.cpu_ns,
                met ? "met" : "NOT MET");
  }
  return missed;
}

void register_all() {
  benchmark::RegisterBenchmark("baseline/shared_ptr-copy", baseline_shared_ptr_copy);
  benchmark::RegisterBenchmark("baseline/tensor-view", baseline_tensor_view);
  benchmark::RegisterBenchmark("dlpack/export+deleter", dlpack_export_delete);
  benchmark::RegisterBenchmark("dlpack/export+import+deleter", dlpack_round_trip);
  for (const FrameSize& f : kFrames) {
    const std::string s = f.name;
    benchmark::RegisterBenchmark(("baseline/malloc+memset/" + s).c_str(), baseline_malloc_memset, f);
    benchmark::RegisterBenchmark(("baseline/mmap+munmap/" + s).c_str(), baseline_mmap_munmap, f);
    benchmark::RegisterBenchmark(("baseline/memcpy/" + s).c_str(), baseline_memcpy, f);
    for (auto [kind, label] : {std::pair{MemoryKind::Heap, "heap"}, std::pair{MemoryKind::Shm, "memfd"}}) {
      const std::string k = label;
      benchmark::RegisterBenchmark(("allocate/" + k + "/" + s).c_str(), allocate_only, f, kind);
      benchmark::RegisterBenchmark(("allocate+write/" + k + "/" + s).c_str(), allocate_and_write, f, kind);
      benchmark::RegisterBenchmark(("map+unmap/" + k + "/" + s).c_str(), map_unmap, f, kind);
      benchmark::RegisterBenchmark(("write-through-map/" + k + "/" + s).c_str(), write_through_map, f, kind);
    }
  }
  et_bench::register_pool_benchmarks();
  et_bench::register_channel_benchmarks();
  et_bench::register_result_benchmarks();
  et_bench::register_metadata_benchmarks();
  et_bench::register_capi_benchmarks();
}

}  // namespace

int main(int argc, char** argv) {
  const auto color = et_bench::initialize(argc, argv);
  if (!color) return 1;
  register_all();
  CapturingReporter reporter(*color ? benchmark::ConsoleReporter::OO_Defaults
                                    : benchmark::ConsoleReporter::OO_Tabular);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  print_ratios(reporter);
  print_dlpack(reporter);
  print_size_free(reporter);
  print_metadata(reporter);
  print_capi(reporter);
  return 0;  // a missed target is reported, never a failure
}
