// SPDX-License-Identifier: Apache-2.0
// The C API's overhead (include/edgetensor/c/edgetensor_c.h): each C call against the C++ call it wraps,
// same run, on a 64x64 u8 heap tensor: allocate+release, a view (batch) and its release, map+unmap; and an
// image pool's acquire+release (a 64x48 NV12 heap image, reused). The target is the issue's: the C call
// costs at most 1.2x the C++ call plus 50 ns.
#include <benchmark/benchmark.h>
#include <edgetensor/c/edgetensor_c.h>
#include <edgetensor/edgetensor.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "bench.h"

namespace et_bench {
namespace {

const edgetensor::AllocateOptions kHeap{.memory = edgetensor::MemoryKind::Heap};
const uint64_t kShape[2] = {64, 64};

void fail(const char* what) {
  std::fprintf(stderr, "capi benchmark: %s failed: %s\n", what, et_last_error_message());
  std::exit(1);
}

et_tensor* c_heap_tensor() {
  et_allocate_options o{};
  o.struct_size = sizeof o;
  o.memory = ET_MEMORY_HEAP;
  et_tensor* t = nullptr;
  if (et_tensor_allocate(2, kShape, ET_DTYPE_U8, &o, &t) != ET_OK) fail("et_tensor_allocate");
  return t;
}

void cpp_allocate_release(benchmark::State& state) {
  for (auto _ : state) {
    auto t = edgetensor::TensorDyn::allocate({64, 64}, edgetensor::DType::U8, kHeap);
    benchmark::DoNotOptimize(t);
  }
}
void c_allocate_release(benchmark::State& state) {
  et_allocate_options o{};
  o.struct_size = sizeof o;
  o.memory = ET_MEMORY_HEAP;
  for (auto _ : state) {
    et_tensor* t = nullptr;
    benchmark::DoNotOptimize(et_tensor_allocate(2, kShape, ET_DTYPE_U8, &o, &t));
    et_tensor_release(t);
  }
}

void cpp_view(benchmark::State& state) {
  auto t = *edgetensor::TensorDyn::allocate({64, 64}, edgetensor::DType::U8, kHeap);
  for (auto _ : state) {
    auto v = t.batch(1);
    benchmark::DoNotOptimize(v);
  }
}
void c_view(benchmark::State& state) {
  et_tensor* t = c_heap_tensor();
  for (auto _ : state) {
    et_tensor* v = nullptr;
    benchmark::DoNotOptimize(et_tensor_batch(t, 1, &v));
    et_tensor_release(v);
  }
  et_tensor_release(t);
}

void cpp_map_unmap(benchmark::State& state) {
  auto t = *edgetensor::TensorDyn::allocate({64, 64}, edgetensor::DType::U8, kHeap);
  for (auto _ : state) {
    auto m = t.map_read_write();
    benchmark::DoNotOptimize(m);
  }
}
void c_map_unmap(benchmark::State& state) {
  et_tensor* t = c_heap_tensor();
  for (auto _ : state) {
    et_map* m = nullptr;
    void* data = nullptr;
    size_t size = 0;
    benchmark::DoNotOptimize(et_tensor_map_read_write(t, &m, &data, &size));
    et_map_release(m);
  }
  et_tensor_release(t);
}

edgetensor::PoolOptions pool_options() {
  edgetensor::PoolOptions o;
  o.name = "bench";
  o.max_buffers = 1;
  o.allocate = kHeap;
  return o;
}

void cpp_image_pool_acquire(benchmark::State& state) {
  auto layout = edgetensor::ImageLayout::make(64, 48, edgetensor::PixelFormat::Nv12);
  if (!layout) {
    std::fprintf(stderr, "capi benchmark: ImageLayout::make failed: %s\n", layout.error().to_string().c_str());
    std::exit(1);
  }
  auto pool = edgetensor::Pool::create_image(*layout, pool_options());
  if (!pool) {
    std::fprintf(stderr, "capi benchmark: Pool::create_image failed: %s\n", pool.error().to_string().c_str());
    std::exit(1);
  }
  for (auto _ : state) {
    auto t = pool->acquire(std::chrono::milliseconds(0));
    benchmark::DoNotOptimize(t);
  }
}
void c_image_pool_acquire(benchmark::State& state) {
  et_allocate_options a{};
  a.struct_size = sizeof a;
  a.memory = ET_MEMORY_HEAP;
  et_pool_options o{};
  o.struct_size = sizeof o;
  o.max_buffers = 1;
  o.name = "bench";
  o.allocate = &a;
  et_pool* pool = nullptr;
  if (et_pool_create_image(64, 48, ET_PIXEL_FORMAT_NV12, nullptr, &o, &pool) != ET_OK) fail("et_pool_create_image");
  for (auto _ : state) {
    et_tensor* t = nullptr;
    benchmark::DoNotOptimize(et_pool_acquire(pool, 0, &t));
    et_tensor_release(t);
  }
  et_pool_release(pool);
}

}  // namespace

void register_capi_benchmarks() {
  benchmark::RegisterBenchmark("cpp/allocate+release", cpp_allocate_release);
  benchmark::RegisterBenchmark("capi/allocate+release", c_allocate_release);
  benchmark::RegisterBenchmark("cpp/view+release", cpp_view);
  benchmark::RegisterBenchmark("capi/view+release", c_view);
  benchmark::RegisterBenchmark("cpp/map+unmap", cpp_map_unmap);
  benchmark::RegisterBenchmark("capi/map+unmap", c_map_unmap);
  benchmark::RegisterBenchmark("cpp/image-pool-acquire+release", cpp_image_pool_acquire);
  benchmark::RegisterBenchmark("capi/image-pool-acquire+release", c_image_pool_acquire);
}

std::vector<Target> capi_targets() {
  return {{"allocate+release (64x64 u8 heap)", "cpp/allocate+release", "capi/allocate+release", 0},
          {"view (batch) + release", "cpp/view+release", "capi/view+release", 0},
          {"map+unmap (read-write)", "cpp/map+unmap", "capi/map+unmap", 0},
          {"image pool acquire+release (NV12 64x48)", "cpp/image-pool-acquire+release",
           "capi/image-pool-acquire+release", 0}};
}

}  // namespace et_bench
