// SPDX-License-Identifier: Apache-2.0
// Shared by the benchmark files: frame sizes, allocation helper, the ratio targets.
#pragma once

#include <edgetensor/edgetensor.h>

#include <cstddef>
#include <string>
#include <vector>

namespace et_bench {

/// The size of an RGBA u8 frame.
struct FrameSize {
  const char* name;
  std::size_t width, height;
  std::size_t bytes() const { return width * height * 4; }
};
inline constexpr FrameSize kFrames[] = {{"360p", 640, 360}, {"720p", 1280, 720}, {"1080p", 1920, 1080}, {"4K", 3840, 2160}};

/// One row of the ratio table: baseline time / measured time, both benchmark names of the same run.
struct Target {
  const char* what;
  std::string baseline, measured;
  double min_ratio;  // 0 = report only
  bool judge_wall = false;  // judged on the wall-time ratio (benchmarks of two processes)
};

/// Allocates [height, width, 4] u8 of `kind` or exits naming the error.
edgetensor::TensorDyn must_allocate(const FrameSize& f, edgetensor::MemoryKind kind);

/// pool_benchmark.cpp: the pool benchmarks and their rows of the table.
void register_pool_benchmarks();
std::vector<Target> pool_targets(const FrameSize& f);

/// channel_benchmark.cpp: the frame channel between two processes and its rows of the table.
void register_channel_benchmarks();
std::vector<Target> channel_targets(const FrameSize& f);
/// Its size-free rows: the release lookup with 1024 frames out, newest first against in order.
std::vector<Target> channel_size_free_targets();

/// result_benchmark.cpp: Result's checked accessors against tl::expected's unchecked ones (size-free rows).
void register_result_benchmarks();
std::vector<Target> result_targets();
/// metadata_benchmark.cpp: copies and views of a plain tensor and of one with every kind of metadata;
/// its rows (what = nullptr: the measured name is the label) compare with baseline/shared_ptr-copy.
void register_metadata_benchmarks();
std::vector<Target> metadata_targets();

/// capi_benchmark.cpp: C API calls against the C++ calls they wrap (target: <= 1.2x + 50 ns).
void register_capi_benchmarks();
std::vector<Target> capi_targets();

}  // namespace et_bench
