#!/usr/bin/env bash
# The DMA-BUF suite on a real kernel: runs tests/hardware/dmabuf_test.cpp's binary inside the kernel
# lane's VM (run-in-vm.sh, next to this script) twice — the whole suite, then the udmabuf tests with
# udmabuf.size_limit_mb=8 on the kernel command line — then the explicit-sync suite
# (tests/hardware/fence_test.cpp) with vgem loaded (x86_64; the arm64 kernels have no modules, so
# there only FenceHardware.*, the tests that need no vgem), and fails on any failure, any skip, a
# missing device or module, or a summary that does not count every selected test as passed.
#
# usage: dmabuf_lane.sh [--arch ARCH] [--skip-if-unavailable] BUILD_DIR
#   BUILD_DIR holds tests/edgetensor_dmabuf_hw_tests, tests/edgetensor_dmabuf_peer and
#   tests/edgetensor_fence_hw_tests.
#   ARCH is the guest (run-in-vm.sh --arch): by default x86_64 for an x86-64 build and arm64 for an
#   aarch64 or armhf build (an armhf build runs in the arm64 kernel's 32-bit compat mode); arm64-16k
#   boots the 16 KiB-page kernel.
# A native binary lists its tests on the host; a foreign one cannot run here, so its gtest XML
# report, collected from the guest, gives the number of tests the filter selected.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
run_in_vm="$here/run-in-vm.sh"
# shellcheck source=tests/kernel/lib.sh
. "$here/lib.sh"
die() { et_kl_die "$@"; }
log() { et_kl_log "$@"; }
usage="usage: $et_kl_prog [--arch x86_64|arm64|arm64-16k] [--skip-if-unavailable] BUILD_DIR"

skip=()
arch=""
while (($#)); do
    case "$1" in
        --skip-if-unavailable) skip=(--skip-if-unavailable) ;;
        --arch)
            (($# >= 2)) || die "$usage"
            arch="$2"
            shift
            ;;
        -*) die "$usage" ;;
        *) break ;;
    esac
    shift
done
(($# == 1)) || die "$usage"
build="$(cd "$1" && pwd)"
bin="$build/tests/edgetensor_dmabuf_hw_tests"
peer="$build/tests/edgetensor_dmabuf_peer"
fence_bin="$build/tests/edgetensor_fence_hw_tests"
[[ -x "$run_in_vm" ]] || die "$run_in_vm not found (the kernel lane's runner)"
[[ -x "$bin" ]] || die "$bin not built"
[[ -x "$peer" ]] || die "$peer not built"
[[ -x "$fence_bin" ]] || die "$fence_bin not built"

machine="$(LC_ALL=C readelf -hW "$bin" | sed -n 's/^ *Machine: *//p')"
case "$machine" in
    *X86-64*) native=1; : "${arch:=x86_64}" ;;
    AArch64 | ARM) native=0; : "${arch:=arm64}" ;;
    *) die "$bin: machine '$machine' has no kernel lane" ;;
esac
if ((native)) && [[ "$arch" != x86_64 ]]; then die "$bin is x86-64; it cannot run in an $arch guest"; fi
if ((!native)) && [[ "$arch" == x86_64 ]]; then die "$bin is $machine; use --arch arm64 or arm64-16k"; fi
log "$bin ($machine) in the $arch kernel lane"
# TCG emulates arm64 on x86 several times slower than x86 on x86.
if [[ "$arch" == x86_64 ]]; then timeout_s="${ET_DMABUF_LANE_TIMEOUT:-600}"; else timeout_s="${ET_DMABUF_LANE_TIMEOUT:-1800}"; fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
guest_xml=/tmp/edgetensor_dmabuf_hw_tests.xml

# One run's result: et_kl_check_gtest_run (lib.sh), against the host's test list for a native
# binary and the guest's XML report otherwise.
check_run() { et_kl_check_gtest_run "$1" "$2" "$3" "$4" "$5" "${6:-$bin}" "$native"; }

# The guest's init checks nothing about devices; the binary fails (not skips) without them, and
# this first command fails the run if the nodes are missing.
set +e
"$run_in_vm" --arch "$arch" "${skip[@]}" --timeout "$timeout_s" --file "$peer" \
    --env ET_DMABUF_REQUIRE_DEVICES=1 --env "GTEST_OUTPUT=xml:$guest_xml" --collect "$guest_xml:$tmp/full.xml" \
    -- "$bin" 2>&1 | tee "$tmp/full.log"
rc="${PIPESTATUS[0]}"
set -e
check_run "full suite" "$rc" "$tmp/full.log" '*' "$tmp/full.xml" || { [[ $? == 2 ]] && exit 0; exit 1; }

filter='DmaBufHardware.Udmabuf*'
set +e
"$run_in_vm" --arch "$arch" "${skip[@]}" --timeout "$timeout_s" \
    --kernel-args udmabuf.size_limit_mb=8 --env ET_DMABUF_REQUIRE_DEVICES=1 \
    --env ET_DMABUF_EXPECT_SIZE_LIMIT_MB=8 --env "GTEST_OUTPUT=xml:$guest_xml" \
    --collect "$guest_xml:$tmp/limit.xml" -- "$bin" --gtest_filter="$filter" 2>&1 | tee "$tmp/limit.log"
rc="${PIPESTATUS[0]}"
set -e
check_run "udmabuf.size_limit_mb=8" "$rc" "$tmp/limit.log" "$filter" "$tmp/limit.xml"

# Explicit sync: real unsignalled fences come from vgem, a module of the x86_64 kernel. The arm64
# kernels are built without modules (and without vgem: arm64-kernel.config says why).
if [[ "$arch" == x86_64 ]]; then
    filter='*'
    fence_args=(--modules vgem --env ET_FENCE_REQUIRE_VGEM=1)
else
    filter='FenceHardware.*'
    fence_args=()
    log "fences: $arch has no vgem; running $filter only"
fi
set +e
"$run_in_vm" --arch "$arch" "${skip[@]}" --timeout "$timeout_s" "${fence_args[@]}" \
    --env ET_DMABUF_REQUIRE_DEVICES=1 --env "GTEST_OUTPUT=xml:$guest_xml" --collect "$guest_xml:$tmp/fence.xml" \
    -- "$fence_bin" --gtest_filter="$filter" 2>&1 | tee "$tmp/fence.log"
rc="${PIPESTATUS[0]}"
set -e
check_run "fences" "$rc" "$tmp/fence.log" "$filter" "$tmp/fence.xml" "$fence_bin"
