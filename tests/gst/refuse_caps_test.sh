#!/bin/sh
# Caps whose format edgetensor does not map (AYUV) are refused at negotiation: gst-launch-1.0 fails and
# its message names the format; nothing hangs.
set -u
. "$(dirname "$0")/common.sh"
need_element videotestsrc gstreamer1.0-plugins-base
dir=$(mktemp -d) && trap 'rm -rf "$dir"' EXIT
out=$(timeout 30 $GST_LAUNCH -q videotestsrc num-buffers=2 ! video/x-raw,format=AYUV,width=64,height=48 ! \
      edgetensorsink socket-path="$dir/s" 2>&1)
rc=$?
echo "$out"
[ $rc -ne 124 ] || fail "gst-launch-1.0 hung"
[ $rc -ne 0 ] || fail "the pipeline ran with AYUV caps"
echo "$out" | grep -q "AYUV" || fail "the error does not name AYUV"
echo "ok: AYUV refused (status $rc)"
