// SPDX-License-Identifier: Apache-2.0
// Copies and views of a tensor: a plain tensor, and one that carries every kind of metadata
// (a name longer than std::string's small buffer, a planar RGB image layout, colorimetry, per-axis
// quantization), against a shared_ptr copy measured in the same run (tensor_benchmark.cpp's baseline).
// sizeof(TensorDyn) heads the table.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>

#include "bench.h"

using namespace edgetensor;

namespace et_bench {
namespace {

template <class T>
T must(Result<T> r, const char* what) {
  if (!r) {
    std::fprintf(stderr, "%s failed: %s\n", what, r.error().to_string().c_str());
    std::exit(1);
  }
  return std::move(*r);
}
void must(Result<void> r, const char* what) {
  if (!r) {
    std::fprintf(stderr, "%s failed: %s\n", what, r.error().to_string().c_str());
    std::exit(1);
  }
}

// A 1080p planar RGB image as [3, h, w] u8 with a long name, colorimetry and per-channel quantization.
TensorDyn image_with_metadata() {
  AllocateOptions o;
  o.memory = MemoryKind::Heap;
  o.name = "camera0/front/planar-rgb-1080p-with-quantization";  // longer than any small-string buffer
  const FrameSize f = kFrames[2];
  auto layout = must(ImageLayout::make(static_cast<std::uint32_t>(f.width), static_cast<std::uint32_t>(f.height),
                                       PixelFormat::PlanarRgb),
                     "ImageLayout::make");
  auto t = must(TensorDyn::allocate({3, f.height, f.width}, DType::U8, o), "allocate");
  must(t.set_image_layout(layout), "set_image_layout");
  t.set_colorimetry({ColorPrimaries::Bt709, TransferFunction::Srgb, YcbcrMatrix::Identity, ColorRange::Full});
  const float scales[] = {0.5f, 0.25f, 0.125f};
  const std::int32_t zero_points[] = {1, 2, 3};
  auto q = must(Quantization::per_axis(0, scales, zero_points), "per_axis");
  must(t.set_quantization(q), "set_quantization");
  return t;
}

TensorDyn plain_tensor() { return must_allocate(kFrames[2], MemoryKind::Heap); }

enum class Op { Copy, View, Batch, Slice, Reshape, Plane };

void tensor_op(benchmark::State& state, bool metadata, Op op) {
  const TensorDyn t = metadata ? image_with_metadata() : plain_tensor();
  const std::size_t rows = t.shape()[1];
  std::size_t same_shape[kMaxRank];
  for (std::size_t i = 0; i < t.rank(); ++i) same_shape[i] = t.shape()[i];
  const std::size_t flat[] = {t.shape()[0], t.element_count() / t.shape()[0]};
  for (auto _ : state) {
    switch (op) {
      case Op::Copy: {
        TensorDyn c = t;
        benchmark::DoNotOptimize(c);
        break;
      }
      case Op::View: {
        auto v = t.view(0, ArrayRef<std::size_t>(same_shape, t.rank()));
        benchmark::DoNotOptimize(v);
        break;
      }
      case Op::Batch: {
        auto v = t.batch(0);
        benchmark::DoNotOptimize(v);
        break;
      }
      case Op::Slice: {
        auto v = t.slice(1, 0, rows / 2);
        benchmark::DoNotOptimize(v);
        break;
      }
      case Op::Reshape: {
        auto v = t.reshape(flat);
        benchmark::DoNotOptimize(v);
        break;
      }
      case Op::Plane: {
        auto v = t.plane(1);
        benchmark::DoNotOptimize(v);
        break;
      }
    }
  }
}

struct Row {
  const char* label;
  Op op;
};
constexpr Row kRows[] = {{"copy", Op::Copy},   {"view same shape", Op::View}, {"batch(0)", Op::Batch},
                         {"slice(1, 0, h/2)", Op::Slice}, {"reshape [3, h*w]", Op::Reshape},
                         {"plane(1)", Op::Plane}};

std::string bench_name(bool metadata, const Row& r) {
  return std::string("tensor/") + (metadata ? "with-metadata/" : "plain/") + r.label;
}

}  // namespace

void register_metadata_benchmarks() {
  for (bool metadata : {false, true})
    for (const Row& r : kRows) {
      if (r.op == Op::Plane && !metadata) continue;  // a plain tensor has no planes
      benchmark::RegisterBenchmark(bench_name(metadata, r).c_str(), tensor_op, metadata, r.op);
    }
}

std::vector<Target> metadata_targets() {
  std::vector<Target> rows;
  for (bool metadata : {false, true})
    for (const Row& r : kRows) {
      if (r.op == Op::Plane && !metadata) continue;
      rows.push_back({nullptr, "baseline/shared_ptr-copy", bench_name(metadata, r), 0.0});
    }
  return rows;
}

}  // namespace et_bench
