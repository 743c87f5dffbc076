// SPDX-License-Identifier: Apache-2.0
// Steady-state frames: a pool's acquire + a full write of the frame against a memset of a
// warm (prefaulted, reused) buffer of the same size, the baseline a pipeline that reuses one malloc'ed
// block pays. Fresh allocate + first write is shown against the same baseline for comparison.
// The frame channel's rows (handoff, receive + read) are in channel_benchmark.cpp.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "bench.h"

using namespace edgetensor;

namespace et_bench {
namespace {

void baseline_warm_memset(benchmark::State& state, FrameSize f) {
  auto* p = static_cast<unsigned char*>(std::malloc(f.bytes()));
  std::memset(p, 1, f.bytes());  // prefaulted: the pages exist before the loop
  for (auto _ : state) {
    std::memset(p, 0x5a, f.bytes());
    benchmark::ClobberMemory();
  }
  std::free(p);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * f.bytes()));
}

void pool_acquire_and_write(benchmark::State& state, FrameSize f, MemoryKind kind) {
  PoolOptions o;
  o.name = "bench";
  o.min_buffers = 1;
  o.max_buffers = 2;
  o.allocate.memory = kind;
  auto pool = Pool::create({f.height, f.width, 4}, DType::U8, o);
  if (!pool) {
    state.SkipWithError(pool.error().to_string().c_str());
    return;
  }
  {
    auto warm = pool->acquire(std::chrono::milliseconds(0));  // its pages are faulted in once, as a reused block's
    auto m = warm->map_write();
    std::memset(m->data(), 1, m->extent_bytes());
  }
  for (auto _ : state) {
    auto t = pool->acquire(std::chrono::milliseconds(0));
    auto m = t->map_write();
    std::memset(m->data(), 0x5a, m->extent_bytes());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * f.bytes()));
}

}  // namespace

void register_pool_benchmarks() {
  for (const FrameSize& f : kFrames) {
    const std::string s = f.name;
    benchmark::RegisterBenchmark(("baseline/warm-memset/" + s).c_str(), baseline_warm_memset, f);
    for (auto [kind, label] : {std::pair{MemoryKind::Heap, "heap"}, std::pair{MemoryKind::Shm, "memfd"}})
      benchmark::RegisterBenchmark(("pool-acquire+write/" + std::string(label) + "/" + s).c_str(),
                                   pool_acquire_and_write, f, kind);
  }
}

std::vector<Target> pool_targets(const FrameSize& f) {
  const std::string s = f.name;
  return {
      {"pool acquire+write heap vs warm memset", "baseline/warm-memset/" + s, "pool-acquire+write/heap/" + s, 0.95},
      {"pool acquire+write memfd vs warm memset", "baseline/warm-memset/" + s, "pool-acquire+write/memfd/" + s, 0.95},
      {"fresh allocate+write heap vs warm memset", "baseline/warm-memset/" + s, "allocate+write/heap/" + s, 0.0},
      {"fresh allocate+write memfd vs warm memset", "baseline/warm-memset/" + s, "allocate+write/memfd/" + s, 0.0},
  };
}

}  // namespace et_bench
