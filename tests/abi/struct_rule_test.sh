#!/usr/bin/env bash
# abi.struct_rule: scripts/abi_struct_rule.py on real abidiff reports. Each case builds a tiny C library
# twice (before and after a change), describes both with abidw as scripts/abi-check.sh does, and checks
# the rule's verdict: growth at the end of a struct that starts with struct_size, reached through a
# pointer, is compatible; every other change is not.
#   tests/abi/struct_rule_test.sh WORK_DIR [CC]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:?usage: struct_rule_test.sh WORK_DIR [CC]}
cc=${2:-cc}
for tool in abidw abidiff; do
  command -v "$tool" >/dev/null || { echo "abi.struct_rule skipped: $tool not found (abigail-tools)"; exit 77; }
done
rm -rf "$work" && mkdir -p "$work"
failures=0

# describe NAME SOURCE: a shared library of SOURCE and its abidw XML, $work/NAME.abi.
describe() {
  printf '%s\n' "$2" > "$work/$1.c"
  "$cc" -shared -fPIC -g -O0 -o "$work/$1.so" "$work/$1.c"
  abidw --exported-interfaces-only --no-corpus-path --no-comp-dir-path --no-show-locs \
        --out-file "$work/$1.abi" "$work/$1.so"
}

# expect VERDICT CASE BEFORE AFTER: VERDICT is compatible (exit 0) or incompatible (exit 1).
expect() {
  local verdict=$1 name=$2 rc=0
  describe "$name.before" "$3"
  describe "$name.after" "$4"
  abidiff "$work/$name.before.abi" "$work/$name.after.abi" > "$work/$name.report" || true
  "$root/scripts/abi_struct_rule.py" "$work/$name.before.abi" "$work/$name.report" > "$work/$name.verdict" || rc=$?
  local got=compatible
  ((rc == 0)) || got=incompatible
  ((rc <= 1)) || got="error (exit $rc)"
  if [ "$got" = "$verdict" ]; then
    echo "ok   $name: $got"
  else
    echo "FAIL $name: expected $verdict, got $got"
    sed 's/^/     report: /' "$work/$name.report"
    sed 's/^/     rule:   /' "$work/$name.verdict"
    failures=$((failures + 1))
  fi
}

stats_v1='typedef struct st { unsigned struct_size; unsigned pad; unsigned long long a; } st;'
stats_v2='typedef struct st { unsigned struct_size; unsigned pad; unsigned long long a; unsigned long long b; } st;'
opts_v1='typedef struct op { unsigned struct_size; int flags; } op;'

expect compatible grown_at_end \
  "$opts_v1 int f(const op* o) { return o->flags; }" \
  'typedef struct op { unsigned struct_size; int flags; long long added; } op; int f(const op* o) { return o->flags; }'
expect compatible added_function \
  "$opts_v1 int f(const op* o) { return o->flags; }" \
  "$opts_v1 int f(const op* o) { return o->flags; } int g(void) { return 1; }"
expect compatible nested_last_member_grew \
  "$stats_v1 typedef struct info { unsigned struct_size; int id; st stats; } info; int f(info* i) { return i->id; }" \
  "$stats_v2 typedef struct info { unsigned struct_size; int id; st stats; } info; int f(info* i) { return i->id; }"
# A pointer member to a grown struct, not last (et_pool_options.allocate -> et_allocate_options in 0.6).
expect compatible pointer_member_grew \
  "$opts_v1 typedef struct pool { unsigned struct_size; const op* allocate; int n; } pool; int f(const pool* p) { return p->n; }" \
  'typedef struct op { unsigned struct_size; int flags; long long added; } op; typedef struct pool { unsigned struct_size; const op* allocate; int n; } pool; int f(const pool* p) { return p->n; }'
expect incompatible pointer_member_inserted_in_the_middle \
  "$opts_v1 typedef struct pool { unsigned struct_size; const op* allocate; int n; } pool; int f(const pool* p) { return p->n; }" \
  'typedef struct op { unsigned struct_size; int added; int flags; } op; typedef struct pool { unsigned struct_size; const op* allocate; int n; } pool; int f(const pool* p) { return p->n; }'
expect incompatible pointer_member_no_struct_size \
  'typedef struct op { int flags; } op; typedef struct pool { unsigned struct_size; const op* allocate; int n; } pool; int f(const pool* p) { return p->n; }' \
  'typedef struct op { int flags; int added; } op; typedef struct pool { unsigned struct_size; const op* allocate; int n; } pool; int f(const pool* p) { return p->n; }'
expect incompatible inserted_in_the_middle \
  "$opts_v1 int f(const op* o) { return o->flags; }" \
  'typedef struct op { unsigned struct_size; int added; int flags; } op; int f(const op* o) { return o->flags; }'
expect incompatible no_struct_size \
  'typedef struct op { int flags; } op; int f(const op* o) { return o->flags; }' \
  'typedef struct op { int flags; int added; } op; int f(const op* o) { return o->flags; }'
expect incompatible passed_by_value \
  "$opts_v1 int f(op o) { return o.flags; }" \
  'typedef struct op { unsigned struct_size; int flags; long long added; } op; int f(op o) { return o.flags; }'
expect incompatible removed_function \
  "$opts_v1 int f(const op* o) { return o->flags; } int g(void) { return 1; }" \
  "$opts_v1 int f(const op* o) { return o->flags; }"
expect incompatible nested_member_not_last_grew \
  "$stats_v1 typedef struct info { unsigned struct_size; st stats; int id; } info; int f(info* i) { return i->id; }" \
  "$stats_v2 typedef struct info { unsigned struct_size; st stats; int id; } info; int f(info* i) { return i->id; }"
expect incompatible member_type_changed \
  "$opts_v1 int f(const op* o) { return o->flags; }" \
  'typedef struct op { unsigned struct_size; long long flags; } op; int f(const op* o) { return (int)o->flags; }'
expect incompatible array_member_grew \
  "$stats_v1 typedef struct info { unsigned struct_size; int id; st stats[2]; } info; int f(info* i) { return i->id; }" \
  "$stats_v2 typedef struct info { unsigned struct_size; int id; st stats[2]; } info; int f(info* i) { return i->id; }"

if ((failures)); then
  echo "abi.struct_rule: $failures case(s) failed"
  exit 1
fi
echo "abi.struct_rule: all cases as expected"
