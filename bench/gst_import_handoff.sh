#!/bin/sh
# Performance case (b) of issue 27: CPU time per 1080p NV12 frame of the hand-off when upstream brings its
# own fd memory (tests/gst/gst_import_test.c's FdPool: 8 sealed memfds wrapped as GstFdMemory, each written
# once before the run), edgetensorsink -> edgetensorsrc against shmsink -> shmsrc (gstreamer1.0-plugins-bad;
# shmsink copies such buffers into its shared area). Prints figures; asserts nothing about time.
# Usage: bench/gst_import_handoff.sh [BUILD_DIR] [FRAMES]     (default build, 300)
set -eu
build=$(cd "${1:-build}" && pwd)
frames=${2:-300}
bin="$build/tests/gst/et_gst_import_tests"
export GST_PLUGIN_PATH="$build/gst" GST_REGISTRY="${TMPDIR:-/tmp}/et-bench-registry-$$.bin" GST_REGISTRY_FORK=no
caps="video/x-raw,format=NV12,width=1920,height=1080,framerate=30/1"
tick=$(getconf CLK_TCK)
trap 'rm -f "$GST_REGISTRY" /tmp/et-bench-shm-$$' EXIT

# CPU ms (user + system) of process $1 so far.
cpu_ms() { awk -v t="$tick" '{ print ($14 + $15) * 1000 / t }' "/proc/$1/stat"; }

# run <label> <sink description> <consumer pipeline or ""> : producer CPU (source + sink) and consumer CPU.
run() {
  consumer_pid=""
  if [ -n "$3" ]; then
    # shellcheck disable=SC2086
    gst-launch-1.0 -q $3 >/dev/null 2>&1 &
    consumer_pid=$!
  fi
  producer=$("$bin" bench "$2" "$frames" 2>/dev/null | awk '/^cpu_ms/ { print $2 }')
  consumer=0
  if [ -n "$consumer_pid" ]; then
    sleep 0.5
    consumer=$(cpu_ms "$consumer_pid" 2>/dev/null || echo 0)
    kill "$consumer_pid" 2>/dev/null || true
    wait "$consumer_pid" 2>/dev/null || true
  fi
  echo "$1 $producer $consumer"
}

base=$(run source "fakesink sync=false" "")
et=$(run edgetensor "edgetensorsink name=sink socket-path=@et-bench-$$ wait-receivers=1 sync=false" \
  "edgetensorsrc socket-path=@et-bench-$$ connect-timeout=5000 ! fakesink sync=false")
shm=$(run shm "shmsink socket-path=/tmp/et-bench-shm-$$ wait-for-connection=true shm-size=67108864 sync=false" \
  "shmsrc socket-path=/tmp/et-bench-shm-$$ is-live=true ! $caps ! fakesink sync=false")
printf '%s\n%s\n%s\n' "$base" "$et" "$shm" | awk -v n="$frames" '
  { p[$1] = $2; c[$1] = $3 }
  END {
    printf "%d frames of 1080p NV12, CPU ms (user+system)\n", n
    printf "%-12s %10s %10s %14s\n", "", "producer", "consumer", "hand-off/frame"
    for (k in p) if (k != "source") {
      h[k] = (p[k] - p["source"] + c[k]) / n
      printf "%-12s %10.0f %10.0f %11.3f ms\n", k, p[k], c[k], h[k]
    }
    printf "%-12s %10.0f %10s\n", "source only", p["source"], "-"
    if (h["edgetensor"] > 0) printf "ratio shm / edgetensor (hand-off CPU per frame): %.1f\n", h["shm"] / h["edgetensor"]
  }'
