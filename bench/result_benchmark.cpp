// SPDX-License-Identifier: Apache-2.0
// The checked accessors of Result (operator* ends the process on an error instead of reading garbage):
// reading values through edgetensor::Result against the same reads through the tl::expected it wraps,
// whose operator* does not check, directly and through map(). Same run, same data; the ratio should
// stay within noise of 1.
#include <benchmark/benchmark.h>
#include <edgetensor/error.h>

#include <array>
#include <cstdint>
#include <cstdio>

#include "bench.h"

namespace et_bench {
namespace {

constexpr std::size_t kValues = 1024;

template <class R>
void sum_values(benchmark::State& state) {
  std::array<R, kValues> values;
  for (std::size_t i = 0; i < kValues; ++i) values[i] = R(static_cast<std::int64_t>(i));
  for (auto _ : state) {
    std::int64_t sum = 0;
    for (const R& r : values) {
      benchmark::DoNotOptimize(r);
      sum += *r;
    }
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kValues));
}

// The same reads through map(): Result's map returns a checked Result, tl::expected's an unchecked one.
template <class R>
void sum_mapped_values(benchmark::State& state) {
  std::array<R, kValues> values;
  for (std::size_t i = 0; i < kValues; ++i) values[i] = R(static_cast<std::int64_t>(i));
  for (auto _ : state) {
    std::int64_t sum = 0;
    for (const R& r : values) {
      benchmark::DoNotOptimize(r);
      sum += *r.map([](std::int64_t v) { return v + 1; });
    }
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kValues));
}

}  // namespace

void register_result_benchmarks() {
  benchmark::RegisterBenchmark("baseline/tl-expected-deref", sum_values<tl::expected<std::int64_t, edgetensor::Error>>);
  benchmark::RegisterBenchmark("result/checked-deref", sum_values<edgetensor::Result<std::int64_t>>);
  benchmark::RegisterBenchmark("baseline/tl-expected-map-deref",
                               sum_mapped_values<tl::expected<std::int64_t, edgetensor::Error>>);
  benchmark::RegisterBenchmark("result/checked-map-deref", sum_mapped_values<edgetensor::Result<std::int64_t>>);
}

std::vector<Target> result_targets() {
  // Report only: a per-value branch that is never taken; within noise of 1 is the expectation.
  return {{"Result checked deref vs tl::expected deref", "baseline/tl-expected-deref", "result/checked-deref", 0.0},
          {"Result map + deref vs tl::expected's", "baseline/tl-expected-map-deref", "result/checked-map-deref", 0.0}};
}

}  // namespace et_bench
