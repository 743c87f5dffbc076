#!/usr/bin/env bash
# The DMA-BUF suite on a real kernel: runs tests/hardware/dmabuf_test.cpp's binary inside the kernel
# lane's VM (run-in-vm.sh, next to this script) twice — the whole suite, then the udmabuf tests with
# udmabuf.size_limit_mb=8 on the kernel command line — and fails on any failure, any skip, a missing
# device, or a summary that does not count every listed test as passed.
#
# usage: dmabuf_lane.sh [--skip-if-unavailable] BUILD_DIR
#   BUILD_DIR holds tests/edgetensor_dmabuf_hw_tests and tests/edgetensor_dmabuf_peer.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
run_in_vm="$here/run-in-vm.sh"
prog="${0##*/}"
die() { printf '%s: error: %s\n' "$prog" "$*" >&2; exit 1; }
log() { printf '%s: %s\n' "$prog" "$*" >&2; }

skip=()
if [[ "${1:-}" == --skip-if-unavailable ]]; then skip=(--skip-if-unavailable); shift; fi
(($# == 1)) || die "usage: $prog [--skip-if-unavailable] BUILD_DIR"
build="$(cd "$1" && pwd)"
bin="$build/tests/edgetensor_dmabuf_hw_tests"
peer="$build/tests/edgetensor_dmabuf_peer"
[[ -x "$run_in_vm" ]] || die "$run_in_vm not found (the kernel lane's runner)"
[[ -x "$bin" ]] || die "$bin not built"
[[ -x "$peer" ]] || die "$peer not built"

# Checks one run's output: exit code 0, "[  PASSED  ] N tests." for the N tests the filter selects,
# and no skipped or failed test.
check_run() {
    local name="$1" rc="$2" out="$3" filter="$4" expected passed
    expected="$("$bin" --gtest_list_tests --gtest_filter="$filter" | grep -c '^  ')"
    ((rc == 0)) || die "$name: exit code $rc"
    grep -q 'kernel lane skipped:' "$out" && { log "$name: $(grep 'kernel lane skipped:' "$out")"; return 2; }
    passed="$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\?\..*/\1/p' "$out" | tail -n 1)"
    [[ "$passed" == "$expected" ]] || die "$name: $passed of $expected tests passed"
    if grep -q '^\[  SKIPPED \]' "$out"; then die "$name: tests were skipped (a skip is a failure here)"; fi
    if grep -q '^\[  FAILED  \]' "$out"; then die "$name: tests failed"; fi
    log "$name: $passed/$expected passed, 0 skipped"
}

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# The guest's init checks nothing about devices; the binary fails (not skips) without them, and
# this first command fails the run if the nodes are missing.
set +e
"$run_in_vm" "${skip[@]}" --timeout "${ET_DMABUF_LANE_TIMEOUT:-600}" --file "$peer" \
    --env ET_DMABUF_REQUIRE_DEVICES=1 -- "$bin" 2>&1 | tee "$tmp/full.log"
rc="${PIPESTATUS[0]}"
set -e
check_run "full suite" "$rc" "$tmp/full.log" '*' || { [[ $? == 2 ]] && exit 0; exit 1; }

filter='DmaBufHardware.Udmabuf*'
set +e
"$run_in_vm" "${skip[@]}" --kernel-args udmabuf.size_limit_mb=8 --env ET_DMABUF_REQUIRE_DEVICES=1 \
    --env ET_DMABUF_EXPECT_SIZE_LIMIT_MB=8 -- "$bin" --gtest_filter="$filter" 2>&1 | tee "$tmp/limit.log"
rc="${PIPESTATUS[0]}"
set -e
check_run "udmabuf.size_limit_mb=8" "$rc" "$tmp/limit.log" "$filter"
