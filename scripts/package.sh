#!/usr/bin/env bash
# Debian packages of a built tree (docs/PACKAGING.md): runs CPack's DEB generator on BUILD_DIR and lists the
# packages it made in OUT_DIR (default BUILD_DIR/packages): .deb files and their -dbgsym .ddeb files.
#   usage: scripts/package.sh BUILD_DIR [OUT_DIR]
# The tree must already be built (CPack packs what `cmake --install` installs; nothing is compiled here).
# A tree configured for another layout is reconfigured first for Debian's, and left so:
# CMAKE_INSTALL_PREFIX=/usr, CMAKE_INSTALL_LIBDIR=lib/<multiarch> and, where the Python module is built,
# ET_PYTHON_INSTALL_DIR=lib/python3/dist-packages; the build step after it relinks what the new install
# paths change, no more. Needs dpkg-dev (dpkg-shlibdeps) and file: scripts/deps.sh --package.
# Cross trees (cmake/toolchains/) give packages for their architecture.
# ET_DEB_COMPRESSION=gzip|xz|zstd chooses the packages' compression (default: xz, as Debian's).
set -euo pipefail

if (($# < 1 || $# > 2)); then
  echo "usage: $0 BUILD_DIR [OUT_DIR]" >&2
  exit 2
fi
build=$(realpath "$1")
out=$(realpath -m "${2:-$build/packages}")
cache=$build/CMakeCache.txt
if [ ! -f "$cache" ]; then
  echo "package: $build has no CMakeCache.txt: configure and build it first (README)" >&2
  exit 1
fi
for tool in cpack dpkg-shlibdeps dpkg-deb file; do
  command -v "$tool" >/dev/null || { echo "package: $tool not found (scripts/deps.sh --package)" >&2; exit 1; }
done

cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$cache"; }
[ -f "$build/CPackConfig.cmake" ] ||
  { echo "package: $build has no CPackConfig.cmake (configured by a tree without cmake/packaging.cmake?)" >&2; exit 1; }
triplet=$(sed -n 's/^set(CPACK_ET_TRIPLET "\(.*\)")$/\1/p' "$build/CPackConfig.cmake")
config=()
[ "$(cache_value CMAKE_INSTALL_PREFIX)" = /usr ] || config+=(-DCMAKE_INSTALL_PREFIX=/usr)
# GNUInstallDirs picks lib/<multiarch> for /usr in native builds only: cross trees are told.
[ "$(cache_value CMAKE_INSTALL_LIBDIR)" = "lib/$triplet" ] || config+=("-DCMAKE_INSTALL_LIBDIR=lib/$triplet")
if grep -q '^ET_PYTHON_INSTALL_DIR:' "$cache" &&
   [ "$(cache_value ET_PYTHON_INSTALL_DIR)" != lib/python3/dist-packages ]; then
  config+=(-DET_PYTHON_INSTALL_DIR=lib/python3/dist-packages)
fi
if ((${#config[@]})); then
  echo "package: configuring $build for Debian's layout: ${config[*]}"
  cmake "${config[@]}" -B "$build" >/dev/null
fi
# A no-op on a built tree, apart from the relinks a new install RPATH needs.
cmake --build "$build"

# Only what an earlier run left there goes: OUT_DIR may hold other files.
mkdir -p "$out"
rm -rf "$out"/*.deb "$out"/*.ddeb "$out/cpack.log" "$out/_CPack_Packages"
compression=()
[ -z "${ET_DEB_COMPRESSION:-}" ] || compression=(-D "CPACK_DEBIAN_COMPRESSION_TYPE=$ET_DEB_COMPRESSION")
cpack --config "$build/CPackConfig.cmake" -B "$out" "${compression[@]}" >"$out/cpack.log" 2>&1 || {
  cat "$out/cpack.log" >&2
  echo "package: cpack failed (log above, $out/cpack.log)" >&2
  exit 1
}
rm -rf "$out/_CPack_Packages"

shopt -s nullglob
debs=("$out"/*.deb "$out"/*.ddeb)
if ((${#debs[@]} == 0)); then
  echo "package: cpack made no package in $out (log: $out/cpack.log)" >&2
  exit 1
fi
echo "package: ${#debs[@]} packages in $out"
printf '%-32s %-10s %-6s %10s  %s\n' Package Version Arch Bytes File
for d in "${debs[@]}"; do
  printf '%-32s %-10s %-6s %10s  %s\n' "$(dpkg-deb -f "$d" Package)" "$(dpkg-deb -f "$d" Version)" \
    "$(dpkg-deb -f "$d" Architecture)" "$(stat -c %s "$d")" "$(basename "$d")"
done
