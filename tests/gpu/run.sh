#!/usr/bin/env bash
# Lane 4: builds the library and the real-GPU check, runs the non-GPU lanes, then the GPU check.
#   tests/gpu/run.sh            build in build-gpu/ (or $ET_GPU_BUILD_DIR) and run
# Without a GPU (no /dev/nvidia0, no usable driver) the GPU steps are SKIPPED and the script says so
# (exit 0: a dry run). With a GPU visible, any skip or failure makes the script fail.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${ET_GPU_BUILD_DIR:-$root/build-gpu}
cuda_home=${CUDA_HOME:-/usr/local/cuda}
jobs=${ET_JOBS:-$(nproc)}

gpu_visible=0
if [ -e /dev/nvidia0 ] || [ -e /dev/nvidiactl ] || { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; }; then
  gpu_visible=1
fi
echo "== lane 4: GPU visible: $gpu_visible"
[ "$gpu_visible" = 1 ] && command -v nvidia-smi >/dev/null && nvidia-smi -L || true

echo "== build (library, CUDA lanes, GPU check) in $build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DET_BUILD_TOOLS=OFF -DET_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j"$jobs" --target edgetensor_static edgetensor_cuda_tests >/dev/null
# The CUDA-GL lanes exist only in builds with the GL backend (ET_WITH_EGL).
cmake --build "$build" -j"$jobs" --target edgetensor_cuda_gl_tests >/dev/null 2>&1 ||
  echo "== no CUDA-GL test binary (built without EGL): the cuda.gl lanes do not run"
# $build/include: the generated <edgetensor/abi.h>; tools/edgetensor: the CLI's CUDA-GL round trip.
g++ -std=c++20 -O2 -I"$root/include" -I"$build/include" -I"$root/tools/edgetensor" -I"$cuda_home/include" \
    "$root/tests/gpu/gpu_check.cpp" "$root/tools/edgetensor/gl_checks.cpp" -o "$build/gpu_check" \
    "$build/src/libedgetensor.a" -L"$cuda_home/lib64" -Wl,-rpath,"$cuda_home/lib64" -lcudart -ldl -lpthread

echo "== non-GPU CUDA lanes (real runtime as found, no runtime, test double; label cuda_gl matches -L cuda)"
(cd "$build" && ctest -L cuda --output-on-failure -j"$jobs" | grep -E "tests passed|tests failed|Failed|\*\*\*")

echo "== GPU check"
set +e
"$build/gpu_check"
rc=$?
set -e
if [ $rc -eq 77 ]; then
  if [ "$gpu_visible" = 1 ]; then
    echo "lane 4: FAILED: a GPU is visible but GPU steps were skipped"
    exit 1
  fi
  echo "lane 4: dry run: every non-GPU step ran; GPU steps SKIPPED (no GPU on this machine)"
  exit 0
fi
[ $rc -eq 0 ] && echo "lane 4: PASSED on a GPU" || echo "lane 4: FAILED (rc $rc)"
exit $rc
