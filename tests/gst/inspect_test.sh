#!/bin/sh
# gst-inspect-1.0 finds the build tree's plugin (GST_PLUGIN_PATH) and lists each element with its
# properties and pad templates.
set -eu
. "$(dirname "$0")/common.sh"
out=$($GST_INSPECT edgetensor 2>&1) || fail "gst-inspect-1.0 edgetensor: $out"
echo "$out"
echo "$out" | grep -q "edgetensorsink" || fail "the plugin does not list edgetensorsink"
sink=$($GST_INSPECT edgetensorsink 2>&1) || fail "gst-inspect-1.0 edgetensorsink: $sink"
for word in socket-path policy max-frames-out pool-size wait-receivers drain-timeout stats "SINK template" NV12 P010_10LE GRAY16_LE; do
  echo "$sink" | grep -q -- "$word" || fail "edgetensorsink does not show '$word'"
done
echo "$out" | grep -q "edgetensorsrc" || fail "the plugin does not list edgetensorsrc"
src=$($GST_INSPECT edgetensorsrc 2>&1) || fail "gst-inspect-1.0 edgetensorsrc: $src"
for word in socket-path connect-timeout latest reconnect stats "SRC template" NV12 P010_10LE; do
  echo "$src" | grep -q -- "$word" || fail "edgetensorsrc does not show '$word'"
done
echo "ok: edgetensorsink and edgetensorsrc listed with their properties and pad templates"
