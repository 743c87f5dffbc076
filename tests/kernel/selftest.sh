#!/usr/bin/env bash
# Builds the kernel-lane self-test (a small GoogleTest program plus a helper it
# executes) and runs it through run-in-vm.sh, N times. A run passes only if the
# binary exits 0, its summary says "[  PASSED  ] N tests." for every test it
# lists, nothing is skipped or failed, and the XML report collected from the
# guest agrees.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=tests/kernel/lib.sh
. "$here/lib.sh"

usage() {
    cat <<EOF
usage: $et_kl_prog [--arch ARCH] [--runs N] [--skip-if-unavailable]

  --arch ARCH            the guest: x86_64 (default), arm64 or arm64-16k
  --runs N               boot N times (default 1) and report boot times
  --skip-if-unavailable  passed to run-in-vm.sh (skip, exit 0, outside CI)

Builds into \$ET_KERNEL_LANE_SELFTEST_BUILD (default $repo/build/kernel-lane-selftest,
with -<arch> appended for arm64) with \$CXX and \$CC (g++ and gcc; for arm64
aarch64-linux-gnu-g++ and -gcc, with libgtest-dev:arm64).
EOF
}

runs=1
skip=()
while (($#)); do
    case "$1" in
        --runs)
            (($# >= 2)) || et_kl_die "--runs needs a number"
            runs="$2"
            shift
            ;;
        --skip-if-unavailable) skip=(--skip-if-unavailable) ;;
        --arch)
            (($# >= 2)) || et_kl_die "--arch needs an argument"
            et_kl_set_arch "$2"
            shift
            ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; et_kl_die "unknown argument: $1" ;;
    esac
    shift
done
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || et_kl_die "--runs wants a positive number, not '$runs'"

if [[ "$ET_KL_ARCH" == x86_64 ]]; then
    build="${ET_KERNEL_LANE_SELFTEST_BUILD:-$repo/build/kernel-lane-selftest}"
    cxx="${CXX:-g++}"
    cc="${CC:-gcc}"
    native=1
else
    build="${ET_KERNEL_LANE_SELFTEST_BUILD:-$repo/build/kernel-lane-selftest-$ET_KL_ARCH}"
    cxx="${CXX:-aarch64-linux-gnu-g++}"
    cc="${CC:-aarch64-linux-gnu-gcc}"
    native=0
fi
mkdir -p "$build"
test_bin="$build/kernel_lane_selftest"
helper_bin="$build/kernel_lane_helper"

et_kl_log "building $test_bin"
"$cxx" -std=c++17 -O1 -g -Wall -Wextra -Werror \
    -o "$test_bin" "$here/selftest/kernel_lane_selftest.cpp" -lgtest -lgtest_main -pthread ||
    et_kl_die "building the self-test failed (is libgtest-dev installed?)"
"$cc" -O1 -g -Wall -Wextra -Werror -o "$helper_bin" "$here/selftest/kernel_lane_helper.c" ||
    et_kl_die "building the self-test helper failed"

# Tests the binary has, from the host (listing runs no test). A foreign binary
# cannot run here: its count comes from each run's XML report, and every run
# must report the same count.
if ((native)); then
    expected="$("$test_bin" --gtest_list_tests | grep -c '^  ')"
    ((expected > 0)) || et_kl_die "$test_bin lists no tests"
else
    expected=""
fi

env_value="it's a \"quoted\" value with  spaces \$HOME \`x\`"
guest_xml=/tmp/kernel_lane_selftest.xml
passed=0
boot_times=()
total_times=()
for ((i = 1; i <= runs; i++)); do
    et_kl_log "run $i/$runs"
    out="$build/run-$i.log"  # the binary's output and run-in-vm.sh's notes
    xml="$build/run-$i.xml"
    rm -f "$xml"
    set +e
    "$here/run-in-vm.sh" --arch "$ET_KL_ARCH" "${skip[@]}" \
        --kernel-args "udmabuf.size_limit_mb=8" \
        --file "$helper_bin" \
        --env "ET_KERNEL_LANE_SELFTEST_HELPER=$helper_bin" \
        --env "ET_KERNEL_LANE_SELFTEST_ENV=$env_value" \
        --env "GTEST_OUTPUT=xml:$guest_xml" \
        --collect "$guest_xml:$xml" \
        -- "$test_bin" 2>&1 | tee "$out"
    rc="${PIPESTATUS[0]}"
    set -e
    if grep -q '^kernel lane skipped:' "$out"; then
        exit 0
    fi

    problems=()
    if [[ -z "$expected" && -s "$xml" ]] &&
        [[ "$(grep -m1 -o '<testsuites tests="[0-9]*"' "$xml")" =~ \"([0-9]+)\" ]] && ((BASH_REMATCH[1] > 0)); then
        expected="${BASH_REMATCH[1]}"
        et_kl_log "the guest's XML report counts $expected tests"
    fi
    ((rc == 0)) || problems+=("exit code $rc")
    summary="$(grep -E '^\[  PASSED  \] [0-9]+ tests?\.' "$out" | tail -n 1 || true)"
    if [[ "$summary" =~ \]\ ([0-9]+)\ test ]]; then
        ((BASH_REMATCH[1] == expected)) || problems+=("${BASH_REMATCH[1]} of $expected tests passed")
    else
        problems+=("no '[  PASSED  ] N tests.' line")
    fi
    grep -q '^\[  SKIPPED \]' "$out" && problems+=("tests were skipped")
    grep -q '^\[  FAILED  \]' "$out" && problems+=("tests failed")
    if [[ ! -s "$xml" ]]; then
        problems+=("no XML report came back from the guest")
    else
        grep -q "<testsuites tests=\"$expected\" failures=\"0\" disabled=\"0\" errors=\"0\"" "$xml" ||
            problems+=("XML report does not say $expected tests, 0 failures")
        grep -q 'result="skipped"' "$xml" && problems+=("XML report lists skipped tests")
    fi
    if [[ "$(grep 'guest exit code' "$out" | tail -n 1)" =~ boot\ ([0-9.]+)\ s,\ total\ ([0-9.]+)\ s ]]; then
        boot_times+=("${BASH_REMATCH[1]}")
        total_times+=("${BASH_REMATCH[2]}")
    fi
    if ((${#problems[@]})); then
        et_kl_log "run $i FAILED: $(printf '%s; ' "${problems[@]}" | sed 's/; $//')"
    else
        et_kl_log "run $i passed: $summary"
        passed=$((passed + 1))
    fi
done

stats() {
    printf '%s\n' "$@" | awk '{ s += $1; if (NR == 1 || $1 < lo) lo = $1; if ($1 > hi) hi = $1 }
        END { if (NR) printf "min %.1f s, mean %.1f s, max %.1f s", lo, s / NR, hi }'
}
if ((${#boot_times[@]})); then
    et_kl_log "boot (QEMU start to binary start): $(stats "${boot_times[@]}")"
    et_kl_log "whole run (QEMU start to exit):    $(stats "${total_times[@]}")"
fi
et_kl_log "$passed of $runs runs passed ($expected tests each)"
((passed == runs))
