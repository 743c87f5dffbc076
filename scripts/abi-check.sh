#!/usr/bin/env bash
# Compares the ABI of <build>/src/libedgetensor.so with the committed baseline abi/libedgetensor.abi
# (README, "ABI policy"), using libabigail's abidw and abidiff (Debian: abigail-tools).
#   scripts/abi-check.sh <build>            check; exit 0 only when abidiff finds no change
#   scripts/abi-check.sh --update <build>   regenerate the baseline from <build> (commit it)
#   --library edgetensor-c (before <build>)  the same for the C API, <build>/src/libedgetensor-c.so
#                                           against abi/libedgetensor-c.abi (its own SONAME and baseline)
# <build> is a RelWithDebInfo build (the default; the ABI is read from its DWARF).
# Only types declared in the public headers count (include/ and <build>/include); the others are
# kept opaque. abidw matches headers by file name, so types of a private header named like a public
# one (src/backends/shm/shm.h) count too: more is reported, never less. No absolute path is kept, so
# builds of clones at different paths give the same bytes (see the ccache note under --update).
# A library of another architecture is compared with its own baseline, abi/lib<name>.<arch>.abi (arch:
# armhf, arm64; --update writes it there), where one is committed.
# Exit: 0 no change (or baseline written); 1 ABI change or SONAME mismatch; 2 usage or tool error;
# 77 no baseline describes this architecture (nothing to compare here).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage() { echo "usage: scripts/abi-check.sh [--update] [--library edgetensor|edgetensor-c] <build-dir>" >&2; exit 2; }
die() { echo "abi-check: $*" >&2; exit 2; }

update=0
name=edgetensor
while [ $# -gt 1 ]; do
  case "$1" in
    --update) update=1; shift ;;
    --library) [ $# -gt 2 ] || usage; name=$2; shift 2 ;;
    *) usage ;;
  esac
done
[ $# -eq 1 ] || usage
case "$name" in edgetensor|edgetensor-c) ;; *) die "unknown library '$name' (edgetensor or edgetensor-c)" ;; esac
update_cmd="scripts/abi-check.sh --update"
bump_where="the version in CMakeLists.txt project(VERSION) as README's \"ABI policy\" says (the SOVERSION changes with it)"
if [ "$name" != edgetensor ]; then
  update_cmd="$update_cmd --library $name"
  bump_where="ET_C_SOVERSION in cmake/abi.cmake (README, \"ABI policy\", C API: a new SONAME)"
fi
baseline_rel=abi/lib$name.abi
baseline=$root/$baseline_rel
build=$(cd "$1" 2>/dev/null && pwd) || die "no build directory '$1'"
lib=$build/src/lib$name.so

for tool in abidw abidiff readelf; do
  command -v "$tool" >/dev/null || die "$tool not found (abidw, abidiff: Debian package abigail-tools, see scripts/deps.sh)"
done
[ -e "$lib" ] || die "$lib not found: build it first (cmake --build $1)"
[ -e "$build/include/edgetensor/abi.h" ] || die "$build/include/edgetensor/abi.h not found: is $1 an edgetensor build?"
readelf -S --wide "$lib" | grep -q '\.debug_info' ||
  die "$lib has no DWARF: configure with -DCMAKE_BUILD_TYPE=RelWithDebInfo (the default)"

# abidw: the exported interfaces only, private types opaque, no paths or locations, content-hashed
# type ids (a local change keeps the other ids, so baseline diffs stay readable).
current=$build/abi/lib$name.abi
mkdir -p "$build/abi"
abidw --headers-dir "$root/include" --headers-dir "$build/include" --drop-private-types \
      --exported-interfaces-only --no-corpus-path --no-comp-dir-path --no-show-locs \
      --type-id-style hash --out-file "$current.tmp" "$lib" || die "abidw failed on $lib"
# abidw still names each translation unit as DWARF recorded it: absolute, or relative to the build
# dir (ccache base_dir). Keep it from src/ on (greedy: up to the last "/src/"; none nests in src/).
sed -E "s#(<abi-instr [^>]*path=')[^']*/src/#\1src/#" "$current.tmp" > "$current"
rm -f "$current.tmp"
if grep -q "path='/" "$current"; then die "an absolute path is left in $current"; fi

corpus_attr() { sed -nE "s/^<abi-corpus [^>]*$1='([^']*)'.*/\1/p" "$2" | head -n1; }
soname=$(corpus_attr soname "$current")
arch=$(corpus_attr architecture "$current")
# x86-64 is the baseline of abi/lib<name>.abi; other architectures have a file of their own.
case "$arch" in
  elf-amd-x86_64) ;;
  elf-arm) baseline_rel=abi/lib$name.armhf.abi ;;
  elf-arm-aarch64) baseline_rel=abi/lib$name.arm64.abi ;;
  *) baseline_rel=abi/lib$name.$arch.abi ;;
esac
baseline=$root/$baseline_rel

if [ "$update" = 1 ]; then
  mkdir -p "$(dirname "$baseline")"
  cp "$current" "$baseline"
  echo "abi-check: wrote $baseline_rel ($soname, $arch) from $lib; commit it"
  # abidw orders translation units by absolute path (DW_AT_comp_dir + name). ccache with base_dir
  # hands out objects compiled in other trees, whose comp_dir differs: same ABI, other byte order.
  ndirs=$(readelf --debug-dump=info --dwarf-depth=1 "$lib" 2>/dev/null |
          sed -n 's/.*DW_AT_comp_dir *:.*: //p' | sort -u | wc -l)
  if ((ndirs > 1)); then
    echo "abi-check: note: $lib was linked from objects compiled in $ndirs directories (ccache" \
         "base_dir); abidiff sees the same ABI, but for the byte order of a one-directory build (CI)" \
         "rebuild with CCACHE_RECACHE=1 and run --update again"
  fi
  exit 0
fi

if [ ! -f "$baseline" ] && [ "$arch" != elf-amd-x86_64 ]; then
  echo "abi-check: no baseline for $arch ($baseline_rel): nothing to compare here"
  exit 77
fi
[ -f "$baseline" ] || die "no baseline $baseline_rel: create it with $update_cmd $1"
base_soname=$(corpus_attr soname "$baseline")
base_arch=$(corpus_attr architecture "$baseline")
if [ "$base_arch" != "$arch" ]; then
  echo "abi-check: $baseline_rel describes $base_arch, this library is $arch: nothing to compare here"
  exit 77
fi
if [ "$base_soname" != "$soname" ]; then
  echo "abi-check: FAILED: $baseline_rel describes $base_soname but the library is $soname." >&2
  echo "  The version was bumped without regenerating the baseline: run" >&2
  echo "  $update_cmd $1 and commit $baseline_rel with the bump." >&2
  exit 1
fi

set +e
report=$(abidiff "$baseline" "$current" 2>&1)
rc=$?
set -e
# abidiff's exit status is a bit set: 1 error, 2 usage error, 4 ABI change, 8 incompatible change.
# Bit 8 covers only what abidiff can prove (a removed function or variable); a changed type layout
# (a member added to a public struct) sets bit 4 alone, listed as a "Changed" function or variable.
# What abidiff lists is harmful by its own filter (harmless changes are hidden), so we call any
# removed or changed interface incompatible, and only pure additions compatible (for the C API, also the
# struct_size rule's growth, below).
if ((rc == 0)); then
  echo "abi-check: no ABI change against $baseline_rel ($soname)"
  exit 0
fi
if ((rc & 3)); then
  echo "$report" >&2
  die "abidiff failed (exit $rc)"
fi
echo "$report"
changed=$(grep -E '^(Functions|Variables) changes summary:' <<<"$report" |
          grep -cE '[1-9][0-9]* (Removed|Changed)' || true)
# The C API's structs start with struct_size and may grow at their end (docs/CAPI.md, "ABI"): such growth,
# which abidiff lists as changed functions, is compatible when scripts/abi_struct_rule.py accepts every
# line of the report (it prints what it refuses).
grown=""
if [ "$name" = edgetensor-c ] && ! ((rc & 8)) && ((changed > 0)); then
  if rule=$("$root/scripts/abi_struct_rule.py" "$baseline" <(printf '%s\n' "$report")); then
    changed=0
    grown=" and structs grown at their end under the struct_size rule"
  else
    echo "abi-check: not the struct_size rule's growth:" >&2
    printf '%s\n' "$rule" | sed 's/^/  /' >&2
  fi
fi
if ((rc & 8)) || ((changed > 0)); then
  echo "abi-check: FAILED: INCOMPATIBLE ABI change against $baseline_rel ($soname; abidiff exit $rc)." >&2
  echo "  Bump $bump_where," >&2
  echo "  and regenerate the baseline in the same commit: $update_cmd $1" >&2
else
  echo "abi-check: FAILED: compatible ABI change (additions$grown) against $baseline_rel ($soname;" \
       "abidiff exit $rc)." >&2
  echo "  Update the baseline in the same commit ($update_cmd $1)." >&2
fi
echo "  The new ABI is in $current." >&2
exit 1
