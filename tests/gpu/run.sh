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
# A tree of its own is configured lean (no CLI, no benchmarks). A tree configured before (CI passes build/,
# README's) keeps its options: turning its CLI off would drop edgetensor-tools from the packages made of it.
if [ -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" >/dev/null
else
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DET_BUILD_TOOLS=OFF -DET_BUILD_BENCH=OFF >/dev/null
fi
# et_capi_cuda_tests: the C API's CUDA lanes (capi.cuda_*, label cuda); with a GPU, capi.cuda_real_runtime
# writes through a device pointer from et_tensor_cuda_map and reads it back.
cmake --build "$build" -j"$jobs" --target edgetensor_static edgetensor_cuda_tests et_capi_cuda_tests >/dev/null
# The CUDA-GL lanes exist only in builds with the GL backend (ET_WITH_EGL).
cmake --build "$build" -j"$jobs" --target edgetensor_cuda_gl_tests >/dev/null 2>&1 ||
  echo "== no CUDA-GL test binary (built without EGL): the cuda.gl lanes do not run"
# $build/include: the generated <edgetensor/abi.h>; src: probe/gl_checks.h, the CUDA-GL round trip of
# probe(), whose code is in the static library (internal symbols link from an archive).
g++ -std=c++20 -O2 -I"$root/include" -I"$build/include" -I"$root/src" -I"$cuda_home/include" \
    "$root/tests/gpu/gpu_check.cpp" -o "$build/gpu_check" \
    "$build/src/libedgetensor.a" -L"$cuda_home/lib64" -Wl,-rpath,"$cuda_home/lib64" -lcudart -ldl -lpthread

echo "== CUDA lanes, C++ and C API (real runtime as found, no runtime, test double; label cuda_gl matches -L cuda)"
(cd "$build" && ctest -L cuda --output-on-failure -j"$jobs" | grep -E "tests passed|tests failed|Failed|\*\*\*")

echo "== GPU check"
set +e
"$build/gpu_check"
rc=$?
set -e

# The Python module's kDLCUDA exports (Tensor.__dlpack__(dl_device=(2, n))), read and written with the
# real libcudart. Needs python3-dev and pybind11-dev (scripts/deps.sh); without them the step says so
# and does not count.
echo "== Python: kDLCUDA DLPack exports"
if cmake --build "$build" -j"$jobs" --target _edgetensor >/dev/null 2>&1; then
  set +e
  PYTHONPATH="$build/python" /usr/bin/python3 "$root/tests/gpu/python_cuda_check.py"
  prc=$?
  set -e
  if [ $prc -ne 0 ] && [ $prc -ne 77 ]; then rc=1; fi
  if [ $prc -eq 77 ] && [ $rc -eq 0 ]; then rc=77; fi
else
  echo "NOT RUN python kDLCUDA step: the module _edgetensor is not built here (python3-dev, pybind11-dev: scripts/deps.sh)"
fi
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
