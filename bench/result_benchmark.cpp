// SPDX-License-Identifier: Apache-2.0
// The checked accessors of Result (operator* ends the process on an error instead of reading garbage):
// reading values through edgetensor::Result against the same reads through the tl::expected it wraps,
// whose operator* does not check. Same run, same data, three ways to read (below).
#include <benchmark/benchmark.h>
#include <edgetensor/error.h>

#include <array>
#include <cstdint>
#include <cstdio>

#include "bench.h"

namespace et_bench {
namespace {

constexpr std::size_t kValues = 1024;

// How one value is read: directly (no check of the caller's), after the caller's own check (the usual
// code: Result's check then repeats it), or through map() (Result's returns a checked Result).
struct Deref {
  template <class R>
  std::int64_t operator()(const R& r) const { return *r; }
};
struct CheckThenDeref {
  template <class R>
  std::int64_t operator()(const R& r) const { return r ? *r : 0; }
};
struct MapDeref {
  template <class R>
  std::int64_t operator()(const R& r) const { return *r.map([](std::int64_t v) { return v + 1; }); }
};

template <class R, class Read>
void sum_values(benchmark::State& state) {
  std::array<R, kValues> values;
  for (std::size_t i = 0; i < kValues; ++i) values[i] = R(static_cast<std::int64_t>(i));
  for (auto _ : state) {
    std::int64_t sum = 0;
    for (const R& r : values) {
      benchmark::DoNotOptimize(r);
      sum += Read{}(r);
    }
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kValues));
}

using Plain = tl::expected<std::int64_t, edgetensor::Error>;
using Checked = edgetensor::Result<std::int64_t>;

}  // namespace

void register_result_benchmarks() {
  benchmark::RegisterBenchmark("baseline/tl-expected-deref", sum_values<Plain, Deref>);
  benchmark::RegisterBenchmark("result/checked-deref", sum_values<Checked, Deref>);
  benchmark::RegisterBenchmark("baseline/tl-expected-if-deref", sum_values<Plain, CheckThenDeref>);
  benchmark::RegisterBenchmark("result/checked-if-deref", sum_values<Checked, CheckThenDeref>);
  benchmark::RegisterBenchmark("baseline/tl-expected-map-deref", sum_values<Plain, MapDeref>);
  benchmark::RegisterBenchmark("result/checked-map-deref", sum_values<Checked, MapDeref>);
}

std::vector<Target> result_targets() {
  // Report only. With no check of the caller's, Result's *r adds one compare and branch (never taken)
  // to each read: in this loop, where the read is all the work, that shows (ratio below 1). With the
  // caller's own if (r), the usual code, the compiler merges both checks into one: the same
  // instructions as tl::expected's, ratio 1 within noise. map() + *r checks once more than tl's.
  return {{"Result *r vs tl::expected *r (no if)", "baseline/tl-expected-deref", "result/checked-deref", 0.0},
          {"Result if (r) *r vs tl::expected's", "baseline/tl-expected-if-deref", "result/checked-if-deref", 0.0},
          {"Result map + *r vs tl::expected's", "baseline/tl-expected-map-deref", "result/checked-map-deref", 0.0}};
}

}  // namespace et_bench
