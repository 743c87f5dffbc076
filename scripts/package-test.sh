#!/usr/bin/env bash
# Proves the Debian packages that scripts/package.sh made (docs/PACKAGING.md, "Tests").
#   usage: scripts/package-test.sh ARCH=DIR [ARCH=DIR ...]      e.g. amd64=build/packages arm64=build-arm64/packages
# For every DIR: the packages expected for that tree are there; every .deb and .ddeb says Architecture: ARCH;
# every ELF file in them (static library members included) is for ARCH's machine (readelf -h); the Python
# module is named for ARCH's CPython (_edgetensor.cpython-3X-<multiarch>.so), the plugin lies in ARCH's
# gstreamer-1.0 directory, and the Depends dpkg-shlibdeps gave them name ARCH's libraries.
# For this machine's architecture, also (as root; it installs into /usr and removes everything again):
#   - dpkg -i every package (apt-get install -f -y when dependencies are missing), then dpkg --verify;
#   - the installed ELF files are stripped, and the -dbgsym packages hold their debug info by build ID;
#   - tests/docs/install_consumer (C++ shared and static, C) built against the installed files with
#     find_package, and C++ and C programs with pkg-config, and run;
#   - /usr/bin/python3 imports the installed module and allocates, maps and views a tensor;
#   - gst-inspect-1.0 finds edgetensorsink and edgetensorsrc in the installed plugin;
#   - the packaged `edgetensor info` runs;
#   - dpkg --purge leaves none of the packages' files behind.
# Each failure says what failed; the exit status is then 1 (and the packages are purged).
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "package-test: FAILED: $*" >&2; exit 1; }
say() { echo "package-test: $*"; }

(($# > 0)) || { echo "usage: $0 ARCH=DIR [ARCH=DIR ...]" >&2; exit 2; }
native=$(dpkg --print-architecture)
work=$(mktemp -d /tmp/et-package-test.XXXXXX)
installed=()
cleanup() {
  local rc=$?
  if ((${#installed[@]})); then
    dpkg --purge "${installed[@]}" >/dev/null 2>&1 || echo "package-test: dpkg --purge ${installed[*]} failed" >&2
  fi
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT

# The multiarch triplet of each Debian architecture.
triplet_of() {
  case "$1" in
    amd64) echo x86_64-linux-gnu ;;
    arm64) echo aarch64-linux-gnu ;;
    armhf) echo arm-linux-gnueabihf ;;
    *) fail "no multiarch triplet known for the architecture '$1'" ;;
  esac
}

# readelf -h's Machine (and class, float ABI) for each Debian architecture.
machine_of() {
  case "$1" in
    amd64) echo "ELF64|Advanced Micro Devices X86-64" ;;
    arm64) echo "ELF64|AArch64" ;;
    armhf) echo "ELF32|ARM|hard-float ABI" ;;
    *) fail "no ELF machine known for the architecture '$1'" ;;
  esac
}

is_elf() { [ "$(head -c 4 "$1" | od -An -tx1 | tr -d ' \n')" = 7f454c46 ]; }
is_archive() { [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 213c617263683e0a ]; }

# check_contents ARCH TRIPLET PACKAGE FILE (unpacked in $work/x): where the module and the plugin lie for
# ARCH, and that their Depends (dpkg-shlibdeps with DEB_HOST_ARCH) came from ARCH's libraries.
check_contents() {
  local arch=$1 triplet=$2 pkg=$3 f=$4 files depends want
  depends=$(dpkg-deb -f "$f" Depends)
  case "$pkg" in
    python3-edgetensor)
      files=$(cd "$work/x" && find . -name '_edgetensor*.so' | sed 's|^\./|/|')
      if ! grep -Eqx "/usr/lib/python3/dist-packages/edgetensor/_edgetensor\.cpython-3[0-9]+-$triplet\.so" <<<"$files" ||
         [ "$(grep -c '' <<<"$files")" != 1 ]; then
        fail "$pkg ($arch): the module is not one /usr/lib/python3/dist-packages/edgetensor/_edgetensor.cpython-3X-$triplet.so: $files"
      fi
      if ! grep -Eq 'python3 \(>= 3\.[0-9]+\), python3 \(<< 3\.[0-9]+\)' <<<"$depends" ||
         ! grep -q 'libstdc++6' <<<"$depends"; then
        fail "$pkg ($arch): Depends '$depends' lacks python3's range or libstdc++6"
      fi
      say "$arch: $pkg holds ${files##*/}; Depends: $depends"
      ;;
    gstreamer1.0-edgetensor)
      [ -f "$work/x/usr/lib/$triplet/gstreamer-1.0/libgstedgetensor.so" ] ||
        fail "$pkg ($arch): no /usr/lib/$triplet/gstreamer-1.0/libgstedgetensor.so: $(cd "$work/x" && find . -name '*.so')"
      for want in libgstreamer1.0-0 libgstreamer-plugins-base1.0-0 libglib2.0-0 'libedgetensor-c[0-9]+ \(='; do
        grep -Eq "$want" <<<"$depends" || fail "$pkg ($arch): Depends '$depends' lacks $want"
      done
      say "$arch: $pkg holds /usr/lib/$triplet/gstreamer-1.0/libgstedgetensor.so; Depends: $depends"
      ;;
  esac
}

# check_dir ARCH DIR: the expected packages, their Architecture, their ELF files' machine.
check_dir() {
  local arch=$1 dir=$2 f pkg machine want class abi n_elf=0
  shopt -s nullglob
  local debs=("$dir"/*.deb "$dir"/*.ddeb)
  shopt -u nullglob
  ((${#debs[@]})) || fail "$dir: no .deb or .ddeb (scripts/package.sh makes them)"
  local names=()
  for f in "${debs[@]}"; do names+=("$(dpkg-deb -f "$f" Package)"); done
  # Every tree CI packages has the module and the plugin (-DET_REQUIRE_PYTHON=ON -DET_REQUIRE_GSTREAMER=ON;
  # the cross trees through scripts/deps-arm.sh: docs/PACKAGING.md, "The cross packages").
  local expected=('libedgetensor[0-9.]+' libedgetensor-dev 'libedgetensor-c[0-9]+' libedgetensor-c-dev edgetensor-tools
                  python3-edgetensor gstreamer1.0-edgetensor)
  local triplet
  triplet=$(triplet_of "$arch")
  for want in "${expected[@]}"; do
    printf '%s\n' "${names[@]}" | grep -Eqx "$want" || fail "$dir: no package named /$want/ (have: ${names[*]})"
  done
  IFS='|' read -r class want abi <<<"$(machine_of "$arch")"
  for f in "${debs[@]}"; do
    pkg=$(dpkg-deb -f "$f" Package)
    [ "$(dpkg-deb -f "$f" Architecture)" = "$arch" ] ||
      fail "$f: Architecture is '$(dpkg-deb -f "$f" Architecture)', not $arch"
    rm -rf "$work/x" && mkdir -p "$work/x" && dpkg-deb -x "$f" "$work/x"
    check_contents "$arch" "$triplet" "$pkg" "$f"
    while IFS= read -r -d '' elf; do
      if is_elf "$elf" || is_archive "$elf"; then
        local header
        header=$(readelf -h "$elf" 2>&1) || fail "$pkg: readelf -h ${elf#"$work"/x} failed: $header"
        machine=$(sed -n 's/^ *Machine: *//p' <<<"$header" | sort -u)
        [ "$machine" = "$want" ] || fail "$pkg: ${elf#"$work"/x} is for '$machine', not $arch's '$want'"
        grep -q "Class: *$class" <<<"$header" || fail "$pkg: ${elf#"$work"/x} is not $class"
        if [ -n "$abi" ] && is_elf "$elf" && ! grep -q "$abi" <<<"$header"; then
          fail "$pkg: ${elf#"$work"/x} lacks the $abi flag"
        fi
        n_elf=$((n_elf + 1))
      fi
    done < <(find "$work/x" -type f -print0)
  done
  say "$arch: ${#debs[@]} packages in $dir, all Architecture: $arch; $n_elf ELF files and archives, all $want"
}

# install_test DIR: this machine's packages, installed, used and purged.
install_test() {
  local dir=$1 f p status
  [ "$(id -u)" = 0 ] || fail "installing the packages needs root (dpkg -i)"
  local multiarch
  multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
  shopt -s nullglob
  local debs=("$dir"/*.deb "$dir"/*.ddeb)
  shopt -u nullglob
  local pkgs=()
  for f in "${debs[@]}"; do pkgs+=("$(dpkg-deb -f "$f" Package)"); done
  # Left from an interrupted run: purge first. A file of ours that no package owns would be overwritten.
  for p in "${pkgs[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    if [ -n "$status" ] && [ "$status" != not-installed ]; then
      say "purging $p, installed before this test"
      dpkg --purge "$p" >/dev/null
    fi
  done
  # Every path in the packages (dpkg-deb -c: "./usr/..."; a link's line ends in "-> target").
  local paths=()
  for f in "${debs[@]}"; do
    while read -r path; do paths+=("$path"); done < <(dpkg-deb -c "$f" | awk '{print substr($6, 2)}')
  done
  for path in "${paths[@]}"; do
    if [ -e "$path" ] && [ ! -d "$path" ]; then fail "$path exists before the install (from outside the packages)"; fi
  done

  installed=("${pkgs[@]}")
  # --force-unsafe-io: no fsync per file (seconds for the -dbgsym packages); the files are removed again.
  if ! dpkg -i --force-unsafe-io "${debs[@]}" >"$work/dpkg.log" 2>&1; then
    say "dpkg -i left dependencies missing; apt-get install -f -y"
    DEBIAN_FRONTEND=noninteractive apt-get install -f -y -q >>"$work/dpkg.log" 2>&1 ||
      { cat "$work/dpkg.log" >&2; fail "apt-get install -f could not complete the install"; }
  fi
  for p in "${pkgs[@]}"; do
    [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] ||
      { cat "$work/dpkg.log" >&2; fail "$p is not installed after dpkg -i"; }
  done
  say "installed: ${pkgs[*]}"
  # The md5sums of every package match the installed files (the -dbgsym ones: cmake/deb/fix_packages.cmake).
  out=$(dpkg --verify "${pkgs[@]}" 2>&1) || fail "dpkg --verify: $out"
  [ -z "$out" ] || fail "dpkg --verify: $out"

  # Stripped, with the debug info in the -dbgsym packages by build ID.
  local n=0 id debug
  for p in "${pkgs[@]}"; do
    [[ $p == *-dbgsym ]] && continue
    while read -r f; do
      if [ ! -f "$f" ] || [ -L "$f" ] || ! is_elf "$f"; then continue; fi
      grep -q ', stripped' <<<"$(file -b "$f")" || fail "$f ($p) is not stripped: $(file -b "$f")"
      # (Here-strings, not pipes: with pipefail, grep -q closing a pipe early fails the writer.)
      grep -q '\.debug_info' <<<"$(readelf -SW "$f" 2>&1)" && fail "$f ($p) still has .debug_info"
      id=$(readelf -n "$f" 2>/dev/null | sed -n 's/^ *Build ID: *//p')
      [ -n "$id" ] || fail "$f ($p) has no build ID"
      debug=/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
      [ -f "$debug" ] || fail "$f ($p): no $debug (its -dbgsym package)"
      grep -q '\.debug_info' <<<"$(readelf -SW "$debug" 2>&1)" || fail "$debug ($p's debug info) has no .debug_info"
      grep -qx "$debug" <<<"$(dpkg -L "$p-dbgsym")" || fail "$debug is not in $p-dbgsym"
      n=$((n + 1))
    done < <(dpkg -L "$p")
  done
  ((n >= 5)) || fail "only $n installed ELF files checked (the two libraries, the CLI, the module, the plugin)"
  say "$n installed ELF files stripped; their debug info is in the -dbgsym packages (by build ID)"
  local lib
  lib=$(realpath "/usr/lib/$multiarch/libedgetensor.so")
  say "installed runtime library: $lib, $(stat -c %s "$lib") bytes"

  # Programs of a user's own against the installed files: nothing points at the source or build trees.
  local clean=(env -u LD_LIBRARY_PATH -u CMAKE_PREFIX_PATH -u PKG_CONFIG_PATH -u PYTHONPATH -u GST_PLUGIN_PATH)
  cp -r tests/docs/install_consumer "$work/consumer-src"
  local gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  if ! { "${clean[@]}" cmake -S "$work/consumer-src" -B "$work/consumer" "${gen[@]}" &&
         "${clean[@]}" cmake --build "$work/consumer"; } >"$work/consumer.log" 2>&1; then
    cat "$work/consumer.log" >&2
    fail "the find_package consumer (tests/docs/install_consumer) did not build"
  fi
  for f in consumer_shared consumer_static consumer_c; do
    out=$("${clean[@]}" "$work/consumer/$f" 2>&1) || fail "find_package consumer $f: $out"
    say "find_package $f: $out"
  done
  grep -Eq "libedgetensor.so.* => (/usr)?/lib/$multiarch/" <<<"$(ldd "$work/consumer/consumer_shared")" ||
    fail "consumer_shared does not load the installed library: $(ldd "$work/consumer/consumer_shared")"
  # shellcheck disable=SC2046  # pkg-config's flags are words
  "${clean[@]}" g++ -std=c++20 -Wall -Wextra -Werror "$work/consumer-src/main.cpp" $(pkg-config --cflags --libs edgetensor) \
    -o "$work/pc_cpp" 2>"$work/pc.log" || { cat "$work/pc.log" >&2; fail "C++ program with pkg-config edgetensor"; }
  # shellcheck disable=SC2046
  "${clean[@]}" gcc -std=c11 -Wall -Wextra -Wpedantic -Werror "$work/consumer-src/main.c" \
    $(pkg-config --cflags --libs edgetensor-c) -o "$work/pc_c" 2>"$work/pc.log" ||
    { cat "$work/pc.log" >&2; fail "C program with pkg-config edgetensor-c"; }
  out=$("${clean[@]}" "$work/pc_cpp" 2>&1) || fail "pkg-config C++ program: $out"
  say "pkg-config edgetensor: $out"
  out=$("${clean[@]}" "$work/pc_c" 2>&1) || fail "pkg-config C program: $out"
  say "pkg-config edgetensor-c: $out"

  # Python: the installed module, from /usr/lib/python3/dist-packages, with the installed library.
  out=$(cd "$work" && "${clean[@]}" /usr/bin/python3 -c '
import sys, edgetensor
assert edgetensor.__file__ == "/usr/lib/python3/dist-packages/edgetensor/__init__.py", edgetensor.__file__
libs = {l.split()[-1] for l in open("/proc/self/maps") if "libedgetensor.so" in l}
assert libs == {sys.argv[1]}, libs
t = edgetensor.allocate((480, 640), "uint8", memory="shm")
with t.map_write() as m:
    memoryview(m).cast("B")[:] = b"\x07" * (480 * 640)
try:
    import numpy
    view = numpy.asarray(t)
    assert view.shape == (480, 640) and int(view.sum()) == 7 * 480 * 640
    how = "numpy view"
except ImportError:
    how = "memoryview (no numpy)"
print("python3 edgetensor %s from %s: shm tensor %s, read back through a %s" % (
    edgetensor.__version__, edgetensor.__file__, t.shape, how))
' "$lib" 2>&1) || fail "python3 import and allocation: $out"
  say "$out"

  # GStreamer: the installed plugin, found where GStreamer looks (no GST_PLUGIN_PATH), a fresh registry.
  for f in edgetensorsink edgetensorsrc; do
    out=$(GST_REGISTRY="$work/gst-registry.bin" "${clean[@]}" gst-inspect-1.0 "$f" 2>&1) ||
      fail "gst-inspect-1.0 $f: $out"
    grep -Eq "Filename +(/usr)?/lib/$multiarch/gstreamer-1.0/libgstedgetensor.so" <<<"$out" ||
      fail "gst-inspect-1.0 $f did not load the installed plugin: $(grep Filename <<<"$out")"
  done
  say "gst-inspect-1.0: edgetensorsink, edgetensorsrc from /usr/lib/$multiarch/gstreamer-1.0/libgstedgetensor.so"

  # The CLI of edgetensor-tools.
  grep -qx /usr/bin/edgetensor <<<"$(dpkg -L edgetensor-tools)" || fail "/usr/bin/edgetensor is not edgetensor-tools'"
  out=$("${clean[@]}" /usr/bin/edgetensor info 2>&1) || { echo "$out" >&2; fail "/usr/bin/edgetensor info"; }
  grep -Eq '^heap +ok' <<<"$out" || { echo "$out" >&2; fail "/usr/bin/edgetensor info: heap is not ok"; }
  say "/usr/bin/edgetensor info: $(grep -c '' <<<"$out") lines, $(grep -Ec ' ok ' <<<"$out") backends ok"
  [ "$(/usr/bin/edgetensor -V)" = "edgetensor $(dpkg-query -W -f='${Version}' edgetensor-tools | sed 's/-[^-]*$//')" ] ||
    fail "/usr/bin/edgetensor -V says '$(/usr/bin/edgetensor -V)'"

  # Removal: nothing of the packages' left.
  dpkg --purge "${pkgs[@]}" >"$work/purge.log" 2>&1 || { cat "$work/purge.log" >&2; fail "dpkg --purge"; }
  installed=()
  for p in "${pkgs[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    [ -z "$status" ] || [ "$status" = not-installed ] || fail "$p is still known to dpkg ($status)"
  done
  local left=()
  for path in "${paths[@]}"; do
    if [ -L "$path" ] || { [ -e "$path" ] && [ ! -d "$path" ]; }; then
      left+=("$path")
    elif [ -d "$path" ]; then
      # Directories shared with other packages (/usr/lib/<multiarch>, /usr/include) stay; ours must go.
      case "$path" in
        */edgetensor | */edgetensor/* | /usr/share/doc/*edgetensor*) left+=("$path/") ;;
      esac
    fi
  done
  ((${#left[@]} == 0)) || fail "left after dpkg --purge: ${left[*]}"
  say "dpkg --purge ${#pkgs[@]} packages: nothing of theirs left (${#paths[@]} paths checked)"
}

for arg in "$@"; do
  arch=${arg%%=*}
  dir=${arg#*=}
  if [ "$arch" = "$arg" ] || [ ! -d "$dir" ]; then fail "'$arg' is not ARCH=DIR with an existing DIR"; fi
  check_dir "$arch" "$dir"
  if [ "$arch" = "$native" ]; then
    install_test "$dir"
  fi
done
say "all passed"
