#!/usr/bin/env bash
# Issue 27's pipeline 4 on a real kernel: tests/gst/gst_vivid_test.c's binary (et_gst_vivid_tests) inside
# the kernel lane's x86_64 VM (run-in-vm.sh, next to this script) with vivid loaded as two capture nodes, one
# single-planar and one multi-planar (vivid n_devs=2 multiplanar=1,2 node_types=0x1,0x1): on each,
# v4l2src io-mode=mmap as the reference, io-mode=dmabuf-import into edgetensorsink's DMA-BUF pool (NV12M:
# plane-buffers=true, one DMA-BUF per plane, NV12M and YUV420M; and without it, v4l2src's error), io-mode=dmabuf
# imported by the sink.
# GStreamer in the guest loads only the plugins the pipelines use: a plugin directory of copies of
# coreelements (capsfilter), app (appsink) and video4linux2 (v4l2src) as GST_PLUGIN_SYSTEM_PATH_1_0, and the
# build tree's gstedgetensor as GST_PLUGIN_PATH; the registry under /tmp, scanned in the test's process
# (GST_REGISTRY_FORK=no: no gst-plugin-scanner in the guest).
# Fails on any failure, any skip (ET_V4L2_REQUIRE_DEVICES=1 and EDGETENSOR_REQUIRE_GSTREAMER=1 make a
# missing node or element a failure), a module that does not load, or a missing case or result line.
#
# usage: gst_v4l2_lane.sh [--skip-if-unavailable] BUILD_DIR
#   BUILD_DIR holds tests/gst/et_gst_vivid_tests and gst/libgstedgetensor.so (an x86-64 build).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
run_in_vm="$here/run-in-vm.sh"
# shellcheck source=tests/kernel/lib.sh
. "$here/lib.sh"
die() { et_kl_die "$@"; }
log() { et_kl_log "$@"; }
usage="usage: $et_kl_prog [--skip-if-unavailable] BUILD_DIR"

et_kl_parse_build_args "$usage" "$@"
skip=("${et_kl_skip[@]}")
build="$et_kl_build"
bin="$build/tests/gst/et_gst_vivid_tests"
plugin="$build/gst/libgstedgetensor.so"
[[ -x "$run_in_vm" ]] || die "$run_in_vm not found (the kernel lane's runner)"
[[ -x "$bin" ]] || die "$bin not built (a build with the GStreamer plugin: ET_REQUIRE_GSTREAMER=ON)"
[[ -f "$plugin" ]] || die "$plugin not built"
machine="$(LC_ALL=C readelf -hW "$bin" | sed -n 's/^ *Machine: *//p')"
[[ "$machine" == *X86-64* ]] || die "$bin is '$machine': the V4L2 lanes run x86-64 binaries only (vivid comes from Debian's x86_64 kernel)"

# The system plugins the pipelines use, from the directory GStreamer was installed with.
system_dir="$(pkg-config --variable=pluginsdir gstreamer-1.0 2>/dev/null || true)"
[[ -n "$system_dir" ]] || system_dir=/usr/lib/x86_64-linux-gnu/gstreamer-1.0
plugins=(libgstcoreelements.so libgstapp.so libgstvideo4linux2.so)

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/plugins"
for p in "${plugins[@]}"; do
    [[ -f "$system_dir/$p" ]] || die "$system_dir/$p missing (gstreamer1.0-plugins-base, gstreamer1.0-plugins-good)"
    cp "$system_dir/$p" "$tmp/plugins/"
done
guest_plugins=/opt/edgetensor-gst-plugins
out="$tmp/run.log"

cases=(mmap_reference_frames_are_identical dmabuf_import_writes_into_the_sink_pool dmabuf_is_imported_by_the_sink
       mplane_mmap_reference_frames_are_identical mplane_dmabuf_import_writes_one_buffer_per_plane
       mplane_dmabuf_import_needs_plane_buffers mplane_dmabuf_is_imported_by_the_sink
       mplane_i420_dmabuf_import_writes_three_buffers)
set +e
"$run_in_vm" "${skip[@]}" --timeout "${ET_GST_V4L2_LANE_TIMEOUT:-600}" \
    --modules vivid --kernel-args "vivid.n_devs=2 vivid.multiplanar=1,2 vivid.node_types=0x1,0x1" \
    --file "$tmp/plugins:$guest_plugins" --file "$plugin" \
    --env "GST_PLUGIN_SYSTEM_PATH_1_0=$guest_plugins" --env "GST_PLUGIN_PATH=$build/gst" \
    --env GST_REGISTRY=/tmp/edgetensor-gst-registry.bin --env GST_REGISTRY_FORK=no \
    --env ET_V4L2_REQUIRE_DEVICES=1 --env EDGETENSOR_REQUIRE_GSTREAMER=1 \
    -- "$bin" 2>&1 | tee "$out"
rc="${PIPESTATUS[0]}"
set -e

name="GStreamer pipeline 4 (vivid into edgetensorsink)"
if grep -q 'kernel lane skipped:' "$out"; then
    log "$name: $(grep 'kernel lane skipped:' "$out")"
    exit 0
fi
((rc == 0)) || die "$name: exit code $rc"
if grep -q '^SKIP: \|^skipped ' "$out"; then die "$name: skipped (a skip is a failure here)"; fi
for c in "${cases[@]}"; do
    grep -qx "ok $c" "$out" || die "$name: no 'ok $c' line"
done
for line in '^mmap reference: ' '^dmabuf-import: ' '^dmabuf: ' '^mplane mmap reference: ' \
    '^mplane dmabuf-import plane-buffers=true: ' '^mplane dmabuf-import without plane-buffers: error ' '^mplane dmabuf: ' \
    '^mplane I420 dmabuf-import plane-buffers=true: '; do
    grep -q "$line" "$out" || die "$name: no result line matching '$line'"
done
log "$name: ${#cases[@]}/${#cases[@]} cases passed, 0 skipped"
