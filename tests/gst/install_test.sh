#!/bin/sh
# cmake --install <build> into a fresh prefix: the plugin lands in <prefix>/<plugin dir> and GStreamer
# loads it from there through GST_PLUGIN_PATH, finding libedgetensor-c.so beside it (RPATH $ORIGIN/..).
set -eu
. "$(dirname "$0")/common.sh"
build=$1 prefix=$2 plugin_dir=$3
rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null || fail "cmake --install"
plugin="$prefix/$plugin_dir/libgstedgetensor.so"
[ -f "$plugin" ] || fail "no $plugin"
out=$(GST_PLUGIN_PATH="$prefix/$plugin_dir" GST_REGISTRY="$prefix/registry.bin" $GST_INSPECT "$plugin" 2>&1) ||
  fail "gst-inspect-1.0 $plugin: $out"
echo "$out" | grep -q edgetensorsink || fail "the installed plugin lists no edgetensorsink: $out"
# Loaded from the prefix, not the build tree.
echo "$out" | grep -q "Filename.*$prefix" || fail "the plugin was not loaded from $prefix: $out"
echo "ok: $plugin loads"
rm -rf "$prefix"
