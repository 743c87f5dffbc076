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
work=$(mktemp -d)
trap 'rm -rf "$GST_REGISTRY" "$work"' EXIT

# consumer <pid file> <command...>: runs the command in a shell of its own, writing the command's pid to
# <pid file> (killed if still there once the producer is done), and prints the command's CPU ms (user + system, its
# gst-launch-1.0 start-up included) from that shell's waited-for children (/proc: cutime, cstime), so a
# consumer that already exited at EOS is counted too.
consumer() {
  sh -c 'tick=$1 pidfile=$2
    shift 2
    "$@" >/dev/null 2>&1 &
    echo $! >"$pidfile"
    wait $! || true
    awk -v t="$tick" "{ print (\$16 + \$17) * 1000 / t }" /proc/$$/stat' sh "$tick" "$@"
}

# run <label> <sink description> <socket file to wait for, or ""> [consumer command...]: the producer
# (source + sink) first, then the consumer once the sink listens; appends "<label> <producer ms> <consumer ms>"
# to $work/results. Not called in $(...): a shmsrc started inside a command substitution never got a frame
# here (the producer then waits for EOS until its 120 s bound).
run() {
  label=$1 sink=$2 socket=$3
  shift 3
  rm -f "$work/pid" "$work/consumer"
  "$bin" bench "$sink" "$frames" >"$work/producer" 2>"$work/stats" &
  producer_pid=$!
  consumer_pid=""
  if [ $# -gt 0 ]; then
    if [ -n "$socket" ]; then
      i=0
      while [ ! -S "$socket" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
      sleep 3  # shmsink serves a client only once its pipeline plays (1 s was too short under load)
    fi
    consumer "$work/pid" "$@" >"$work/consumer" &
    consumer_pid=$!
  fi
  wait "$producer_pid" || { echo "bench: $label: the producer failed:" >&2; cat "$work/stats" >&2; exit 1; }
  consumer_ms=0
  if [ -n "$consumer_pid" ]; then
    sleep 0.5  # what is still in flight
    kill "$(cat "$work/pid")" 2>/dev/null || true  # gone already when it saw EOS
    wait "$consumer_pid"
    consumer_ms=$(cat "$work/consumer")
  fi
  producer_ms=$(awk '/^cpu_ms/ { print $2 }' "$work/producer")
  stats=$(grep -o 'imported=(guint64)[0-9]*\|copies=(guint64)[0-9]*' "$work/stats" | sed 's/(guint64)//' | tr '\n' ' ')
  [ -z "$stats" ] || echo "$label sink stats: $stats(of $frames frames)" >&2
  echo "$label $producer_ms $consumer_ms" >>"$work/results"
}

run source "fakesink sync=false" ""
run edgetensor "edgetensorsink name=sink socket-path=@et-bench-$$ wait-receivers=1 sync=false" "" \
  gst-launch-1.0 -q edgetensorsrc socket-path=@et-bench-$$ connect-timeout=5000 ! fakesink sync=false
# shmsrc gets no EOS from shmsink, and shmsink's EOS waits until its client has released every buffer or gone:
# the consumer ends itself after the frames sent (num-buffers), else producer and consumer wait for each other.
run shm "shmsink socket-path=$work/shm wait-for-connection=true shm-size=67108864 sync=false" "$work/shm" \
  gst-launch-1.0 -q shmsrc socket-path="$work/shm" is-live=true num-buffers="$frames" ! "$caps" ! fakesink sync=false
awk -v n="$frames" '
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
  }' "$work/results"
