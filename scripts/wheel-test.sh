#!/usr/bin/env bash
# Builds the wheel and proves it in a fresh venv (docs/PACKAGING.md, "The wheel").
#   usage: scripts/wheel-test.sh [OUT_DIR]          (default OUT_DIR: build-wheel/dist)
# /usr/bin/python3 -m build --wheel --no-isolation (Debian's python3-build, setuptools, wheel; no index):
# a Release tree compiled from source in build-wheel/, or, with ET_WHEEL_BUILD_DIR=<tree>, the binaries of a
# tree already built for this interpreter (CI: its README tree, no second compile). Then, in a fresh
# `python3 -m venv --system-site-packages` venv: pip installs the wheel (no index), `import edgetensor`
# loads the bundled library, allocates a tensor, writes it through a map and reads it through a numpy view,
# and the venv's `edgetensor info` and `edgetensor -V` run the bundled CLI. Also checked: the wheel's tag,
# that it holds the module, the library under its SONAME (no link), the CLI and the stubs, all stripped.
# Each failure says what failed; the exit status is then 1.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=$(realpath -m "${1:-build-wheel/dist}")
python=/usr/bin/python3

fail() { echo "wheel-test: FAILED: $*" >&2; exit 1; }
say() { echo "wheel-test: $*"; }

work=$(mktemp -d /tmp/et-wheel-test.XXXXXX)
trap 'rm -rf "$work"' EXIT

mkdir -p "$out"
rm -f "$out"/edgetensor-*.whl
start=$SECONDS
"$python" -m build --wheel --no-isolation --outdir "$out" >"$work/build.log" 2>&1 ||
  { tail -40 "$work/build.log" >&2; fail "python3 -m build --wheel --no-isolation (log above)"; }
shopt -s nullglob
wheels=("$out"/edgetensor-*.whl)
shopt -u nullglob
((${#wheels[@]} == 1)) || fail "expected one wheel in $out, found ${#wheels[@]}"
wheel=${wheels[0]}
say "built $(basename "$wheel") ($(stat -c %s "$wheel") bytes) in $((SECONDS - start)) s${ET_WHEEL_BUILD_DIR:+ from $ET_WHEEL_BUILD_DIR}"

# The tag: this interpreter's CPython ABI on linux_x86_64-style platform tags (not manylinux: no auditwheel).
tag=$("$python" -c 'import sys, sysconfig; v = "%d%d" % sys.version_info[:2]; print("cp%s-cp%s-%s" % (v, v, sysconfig.get_platform().replace("-", "_").replace(".", "_")))')
[[ $(basename "$wheel") == edgetensor-*-"$tag".whl ]] || fail "$(basename "$wheel") is not tagged $tag"

# The contents: no links (a wheel cannot hold them), every binary stripped.
mkdir -p "$work/unpacked"
"$python" -m zipfile -e "$wheel" "$work/unpacked"
pkg=$work/unpacked/edgetensor
suffix=$("$python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
for f in "__init__.py" "__init__.pyi" "py.typed" "_cli.py" "_edgetensor$suffix" "bin/edgetensor"; do
  [ -f "$pkg/$f" ] || fail "the wheel has no edgetensor/$f"
done
libs=("$pkg"/libedgetensor.so.*)
[ -f "${libs[0]}" ] || fail "the wheel has no edgetensor/libedgetensor.so.*"
((${#libs[@]} == 1)) || fail "the wheel has ${#libs[@]} copies of libedgetensor: ${libs[*]}"
soname=$(readelf -d "${libs[0]}" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$(basename "${libs[0]}")" = "$soname" ] || fail "the bundled library is $(basename "${libs[0]}"), its SONAME $soname"
for f in "${libs[0]}" "$pkg/_edgetensor$suffix" "$pkg/bin/edgetensor"; do
  grep -q ', stripped' <<<"$(file -b "$f")" || fail "${f#"$pkg"/} is not stripped"
done
say "contents: the module, ${libs[0]#"$pkg"/} ($(stat -c %s "${libs[0]}") bytes), bin/edgetensor, the stubs; all stripped"

# A fresh venv, as a user makes one; pip installs from the file alone.
"$python" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/pip" install -q --no-index "$wheel" >"$work/pip.log" 2>&1 ||
  { cat "$work/pip.log" >&2; fail "pip install $(basename "$wheel") into a fresh venv"; }
clean=(env -u PYTHONPATH -u LD_LIBRARY_PATH)
out=$(cd "$work" && "${clean[@]}" "$work/venv/bin/python" -c '
import sys, edgetensor, numpy
assert sys.prefix != sys.base_prefix and edgetensor.__file__.startswith(sys.prefix), edgetensor.__file__
libs = {l.split()[-1] for l in open("/proc/self/maps") if "libedgetensor.so" in l}
assert len(libs) == 1 and next(iter(libs)).startswith(sys.prefix), libs
t = edgetensor.allocate((480, 640), "uint8", memory="shm")
with t.map_write() as m:
    numpy.asarray(m)[:] = 5
view = numpy.asarray(t)
assert view.shape == (480, 640) and int(view.sum()) == 5 * 480 * 640
print("import edgetensor %s from %s with %s: shm tensor %s, numpy view sums to %d" % (
    edgetensor.__version__, edgetensor.__file__, next(iter(libs)), view.shape, view.sum()))
' 2>&1) || fail "import and allocation in the venv: $out"
say "$out"
info=$("${clean[@]}" "$work/venv/bin/edgetensor" info 2>&1) || { echo "$info" >&2; fail "the venv's edgetensor info"; }
grep -Eq '^heap +ok' <<<"$info" || { echo "$info" >&2; fail "the venv's edgetensor info: heap is not ok"; }
version=$("${clean[@]}" "$work/venv/bin/edgetensor" -V)
[ "$version" = "edgetensor $("$work/venv/bin/python" -c 'import edgetensor; print(edgetensor.__version__)')" ] ||
  fail "the venv's edgetensor -V says '$version'"
say "$work/venv/bin/edgetensor info: heap ok ($(grep -Ec '^[a-z].* ok ' <<<"$info") backends ok); -V: $version"
cd "$root"
say "all passed"
