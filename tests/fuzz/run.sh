#!/usr/bin/env bash
# Runs each libFuzzer target of <build> (configured with -DET_BUILD_FUZZ=ON, tests/fuzz/README.md) for
# <seconds> (default 60) on a scratch copy of its committed corpus, with ASan + UBSan. Prints the
# executions and what was found; exits non-zero on the first crash, sanitizer report or fd leak.
#   tests/fuzz/run.sh <build> [seconds]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
seconds=${2:-60}
work=$build/fuzz-work
status=0
for t in ipc_receive ipc_receive_frame channel_receiver; do
  rm -rf "$work/$t" && mkdir -p "$work/$t"
  cp "$root/tests/fuzz/corpus/$t"/* "$work/$t/"
  log=$work/$t.log
  echo "---- et_fuzz_$t: ${seconds} s"
  # -rss_limit_mb: memfds up to 4 MiB each, a few per input; -timeout: one input never takes seconds.
  if ! (cd "$work" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "$build/tests/fuzz/et_fuzz_$t" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
        -print_final_stats=1 "$work/$t" >"$log" 2>&1); then
    status=1
    tail -60 "$log"
    echo "---- et_fuzz_$t FAILED: the input is $(ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* 2>/dev/null | head -1)"
    break
  fi
  grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ +DONE)' "$log" || true
  echo "corpus: $(ls "$work/$t" | wc -l) inputs (started from $(ls "$root/tests/fuzz/corpus/$t" | wc -l))"
done
exit $status
