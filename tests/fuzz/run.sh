#!/usr/bin/env bash
# Runs the libFuzzer targets of <build> (configured with -DET_BUILD_FUZZ=ON, tests/fuzz/README.md) at
# once, each for <seconds> (default 60) on a scratch copy of its committed corpus, with ASan + UBSan.
# Prints each target's executions and what was found; exits non-zero when any target found a crash,
# a sanitizer report, a timeout or an fd leak (its log's tail and the input are printed).
# The three run side by side: on 2 cores each gets about 2/3 of a core, so the wall time is
# <seconds> and not 3 x <seconds> (docs/TESTING.md, "Time").
#   tests/fuzz/run.sh <build> [seconds]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
seconds=${2:-60}
work=$build/fuzz-work
targets=(ipc_receive ipc_receive_frame channel_receiver)
# A tree whose binaries share clang's ASan runtime (cmake/sanitizers.cmake): -fsanitize=fuzzer puts
# libstdc++ ahead of it in the targets' DT_NEEDED, and ASan refuses to start unless it comes first.
runtime=$(ldd "$build/tests/fuzz/et_fuzz_${targets[0]}" | awk '/libclang_rt\.asan/ {print $3; exit}')
declare -A pid
for t in "${targets[@]}"; do
  rm -rf "${work:?}/$t" && mkdir -p "$work/$t/artifacts"
  cp "$root/tests/fuzz/corpus/$t"/* "$work/$t/"
  echo "---- et_fuzz_$t: ${seconds} s"
  # -rss_limit_mb: memfds up to 4 MiB each, a few per input; -timeout: one input never takes seconds.
  (cd "$work/$t/artifacts" && LD_PRELOAD="$runtime" ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
     UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     exec "$build/tests/fuzz/et_fuzz_$t" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
       -print_final_stats=1 "$work/$t" >"$work/$t.log" 2>&1) &
  pid[$t]=$!
done
status=0
for t in "${targets[@]}"; do
  if wait "${pid[$t]}"; then
    echo "---- et_fuzz_$t passed"
    grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ +DONE)' "$work/$t.log" || true
    echo "corpus: $(find "$work/$t" -maxdepth 1 -type f | wc -l) inputs (started from $(ls "$root/tests/fuzz/corpus/$t" | wc -l))"
  else
    status=1
    tail -60 "$work/$t.log"
    echo "---- et_fuzz_$t FAILED: the input is $(ls "$work/$t/artifacts"/* 2>/dev/null | head -1)"
  fi
done
exit $status
