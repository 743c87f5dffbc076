#!/bin/sh
# Sink in one gst-launch-1.0 process, src in another. 1: every frame of `videotestsrc pattern=ball` crosses
# and the src's output equals the same pattern written by a reference pipeline, byte for byte. 2: the sink
# killed (-9) mid-stream: the src reports the producer gone and exits with an error. 3: the src killed
# mid-stream: the sink logs the receiver leaving and finishes its stream. 4: a slow consumer gets every frame
# and the end (the sink's drain-timeout; ET_GST_DRAIN_TIMEOUT=0 shows the loss without it). Nothing may hang.
set -u
. "$(dirname "$0")/common.sh"
need_element videotestsrc gstreamer1.0-plugins-base
need_element filesink "GStreamer's core elements"
dir=$(mktemp -d)
pids=""
cleanup() { for p in $pids; do kill -9 "$p" 2>/dev/null; done; rm -rf "$dir"; }
trap cleanup EXIT
caps="video/x-raw,format=NV12,width=320,height=240,framerate=30/1"
frames=60

# 1. Every frame, checked.
timeout 30 $GST_LAUNCH -q videotestsrc num-buffers=$frames pattern=ball ! $caps ! filesink location="$dir/ref.nv12" ||
  fail "reference pipeline"
# The src first (it retries its connect until the sink listens); the sink holds frames until it joins.
timeout 60 $GST_LAUNCH -q edgetensorsrc socket-path="$dir/sock" connect-timeout=20000 ! \
  filesink location="$dir/out.nv12" >"$dir/src.log" 2>&1 &
src=$!
pids="$src"
timeout 60 $GST_LAUNCH -q videotestsrc num-buffers=$frames pattern=ball ! $caps ! \
  edgetensorsink socket-path="$dir/sock" wait-receivers=1 >"$dir/sink.log" 2>&1 || { cat "$dir/sink.log"; fail "sink process"; }
rc=0; wait "$src" || rc=$?
[ $rc -eq 0 ] || { cat "$dir/src.log"; fail "src process (status $rc)"; }
expected=$((frames * 320 * 240 * 3 / 2))
size=$(stat -c %s "$dir/out.nv12")
[ "$size" -eq "$expected" ] || fail "the src wrote $size bytes, $frames frames are $expected"
cmp "$dir/ref.nv12" "$dir/out.nv12" || fail "the frames differ from the reference"
echo "ok: $frames frames crossed from one gst-launch-1.0 to another, equal to the reference byte for byte"

# 2. The sink killed: the src reports it and exits.
rm -f "$dir/sock"
timeout 30 $GST_LAUNCH edgetensorsrc socket-path="$dir/sock" connect-timeout=20000 ! fakesink >"$dir/src2.log" 2>&1 &
src=$!
$GST_LAUNCH -q videotestsrc is-live=true pattern=ball ! $caps ! edgetensorsink socket-path="$dir/sock" \
  wait-receivers=1 >"$dir/sink2.log" 2>&1 &
sink=$!
pids="$src $sink"
sleep 2
kill -9 "$sink"
wait "$src"
rc=$?
[ $rc -ne 124 ] || fail "the src hung after its producer died"
[ $rc -ne 0 ] || { cat "$dir/src2.log"; fail "the src exited 0 after its producer died"; }
grep -q "producer is gone" "$dir/src2.log" || { cat "$dir/src2.log"; fail "the src's error does not say the producer is gone"; }
echo "ok: sink killed, the src reported: $(grep -m1 'producer is gone' "$dir/src2.log")"

# 3. The src killed: the sink notices the receiver leaving and finishes its stream.
rm -f "$dir/sock"
GST_DEBUG=edgetensorsink:4 timeout 30 $GST_LAUNCH -q videotestsrc is-live=true num-buffers=90 pattern=ball ! $caps ! \
  edgetensorsink socket-path="$dir/sock" wait-receivers=1 >"$dir/sink3.log" 2>&1 &
sink=$!
$GST_LAUNCH -q edgetensorsrc socket-path="$dir/sock" connect-timeout=20000 ! fakesink >"$dir/src3.log" 2>&1 &
src=$!
pids="$src $sink"
sleep 1.5
kill -9 "$src"
wait "$sink"
rc=$?
[ $rc -eq 0 ] || { tail -20 "$dir/sink3.log"; fail "the sink exited $rc after its receiver died (124: hung)"; }
grep -q "receivers left" "$dir/sink3.log" || { tail -20 "$dir/sink3.log"; fail "the sink did not log the receiver leaving"; }
echo "ok: src killed, the sink logged: $(grep -m1 'receivers left' "$dir/sink3.log" | sed 's/.*edgetensorsink//')"

# 4. A slow consumer (30 ms a frame) still gets every frame and the end: the sink's EOS waits (drain-timeout)
# for its releases instead of closing the socket under frames it has not read yet.
rm -f "$dir/sock" "$dir/out4.nv12"
slow=20
timeout 60 $GST_LAUNCH -q edgetensorsrc socket-path="$dir/sock" connect-timeout=20000 ! identity sleep-time=30000 ! \
  filesink location="$dir/out4.nv12" >"$dir/src4.log" 2>&1 &
src=$!
pids="$src"
timeout 60 $GST_LAUNCH -q videotestsrc num-buffers=$slow pattern=ball ! $caps ! \
  edgetensorsink socket-path="$dir/sock" wait-receivers=1 sync=false drain-timeout=${ET_GST_DRAIN_TIMEOUT:-5000} \
  >"$dir/sink4.log" 2>&1 || { cat "$dir/sink4.log"; fail "sink process (4)"; }
rc=0; wait "$src" || rc=$?
[ $rc -eq 0 ] || { cat "$dir/src4.log"; fail "the slow src exited $rc (it lost its producer before the end?)"; }
size=$(stat -c %s "$dir/out4.nv12")
[ "$size" -eq $((slow * 320 * 240 * 3 / 2)) ] || fail "the slow src wrote $size bytes, not $slow frames"
echo "ok: a consumer at 30 ms a frame got all $slow frames and the end of stream"
