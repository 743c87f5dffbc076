#!/usr/bin/env bash
# The V4L2 capture suite on a real kernel: runs tests/hardware/v4l2_capture_test.cpp's binary inside
# the kernel lane's x86_64 VM (run-in-vm.sh, next to this script) with vivid, the kernel's virtual
# camera, loaded as two instances: a single-planar and a multi-planar capture node
# (vivid n_devs=2 multiplanar=1,2 node_types=0x1,0x1; Documentation/admin-guide/media/vivid.rst).
# Fails on any failure, any skip, a module that does not load, a missing device, or a summary that
# does not count every test the host lists as passed.
#
# usage: v4l2_lane.sh [--skip-if-unavailable] BUILD_DIR
#   BUILD_DIR holds tests/edgetensor_v4l2_hw_tests (an x86-64 build: the arm64 lane's kernel is
#   built without modules, so it has no vivid).
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
bin="$build/tests/edgetensor_v4l2_hw_tests"
[[ -x "$run_in_vm" ]] || die "$run_in_vm not found (the kernel lane's runner)"
[[ -x "$bin" ]] || die "$bin not built"
machine="$(LC_ALL=C readelf -hW "$bin" | sed -n 's/^ *Machine: *//p')"
[[ "$machine" == *X86-64* ]] || die "$bin is '$machine': the V4L2 lane runs x86-64 binaries only (vivid comes from Debian's x86_64 kernel)"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
guest_xml=/tmp/edgetensor_v4l2_hw_tests.xml
out="$tmp/run.log"
xml="$tmp/run.xml"

set +e
"$run_in_vm" "${skip[@]}" --timeout "${ET_V4L2_LANE_TIMEOUT:-600}" \
    --modules vivid --kernel-args "vivid.n_devs=2 vivid.multiplanar=1,2 vivid.node_types=0x1,0x1" \
    --env ET_V4L2_REQUIRE_DEVICES=1 --env "GTEST_OUTPUT=xml:$guest_xml" --collect "$guest_xml:$xml" \
    -- "$bin" 2>&1 | tee "$out"
rc="${PIPESTATUS[0]}"
set -e

et_kl_check_gtest_run "V4L2 capture from vivid" "$rc" "$out" '*' "$xml" "$bin" 1 || exit 0
