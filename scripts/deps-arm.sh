#!/usr/bin/env bash
# Installs what the ARM lanes need on Debian 12 (as root, or with sudo): Debian's cross toolchain for
# ARCH (crossbuild-essential-ARCH), the -dev packages the build needs for ARCH through multiarch
# (dpkg --add-architecture; they are Multi-Arch: same), Mesa for ARCH (llvmpipe, for the GL suites
# under QEMU), QEMU user-mode emulation with its binfmt entries, and what the Python module and the
# GStreamer plugin build against for ARCH (python3-edgetensor, gstreamer1.0-edgetensor: below).
#   usage: scripts/deps-arm.sh arm64|armhf [arm64|armhf ...]
# Idempotent: apt runs (with one apt-get update) only when a package is missing. Every package comes
# from Debian's own archive. Header-only dependencies (CLI11, nlohmann-json, tl-expected) are
# Architecture: all and come from scripts/deps.sh. The binfmt_misc registration is .ci/run's job
# (scripts/qemu-binfmt.sh): a package install cannot register it where systemd does not run.
set -euo pipefail

if (($# == 0)); then
  echo "usage: $0 arm64|armhf [...]" >&2
  exit 2
fi

arches=()
packages=(qemu-user qemu-user-binfmt binfmt-support)
for arch in "$@"; do
  case "$arch" in
    arm64 | armhf) ;;
    *) echo "deps-arm: unknown architecture '$arch' (arm64 or armhf)" >&2; exit 2 ;;
  esac
  arches+=("$arch")
  packages+=("crossbuild-essential-$arch")
  # libpython3-dev: the target's pyconfig.h (/usr/include/<triplet>/python3.X, which Debian's
  # /usr/include/python3.X/pyconfig.h includes by the compiler's macros) and its stdlib with the
  # sysconfig data that names the extension suffix. libgstreamer1.0-dev: gstreamer(-base)-1.0, GLib and
  # the cross pkg-config (pkgconf:ARCH: /usr/bin/<triplet>-pkg-config). libgstreamer-plugins-base1.0-0:
  # gstreamer-video-1.0 and -allocators-1.0; their -dev package is not Multi-Arch: same in Debian 12
  # (installing it for ARCH removes the build machine's), so its files come from unpack_gst_base_dev.
  # liborc-0.4-dev: orc-0.4.pc, which gstreamer-video-1.0.pc requires (Requires.private; pkgconf checks it).
  for p in libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev \
           libegl-dev libgles-dev libegl1 libegl-mesa0 libgles2 libgl1-mesa-dri \
           libpython3-dev libgstreamer1.0-dev libgstreamer-plugins-base1.0-0 liborc-0.4-dev; do
    packages+=("$p:$arch")
  done
done

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

triplet_of() { case "$1" in arm64) echo aarch64-linux-gnu ;; armhf) echo arm-linux-gnueabihf ;; esac; }
# libgstreamer-plugins-base1.0-dev for ARCH, unpacked (not installed) under /opt/edgetensor-cross/<triplet>,
# which cmake/toolchains/cross-debian.cmake adds to CMAKE_PREFIX_PATH: its pkg-config files in lib/pkgconfig
# (prefix made relative to the file, ${pcfiledir}), its headers and its lib/<triplet>/lib*.so links, pointed
# at the runtime libraries of libgstreamer-plugins-base1.0-0:ARCH. The version is the installed runtime's;
# a stamp file names it. Nothing else reads that directory; removing it undoes this.
gst_base_dev_root() { echo "/opt/edgetensor-cross/$(triplet_of "$1")"; }
gst_base_dev_current() {
  local root version
  root=$(gst_base_dev_root "$1")
  version=$(dpkg-query -W -f='${Version}' "libgstreamer-plugins-base1.0-0:$1" 2>/dev/null) || return 1
  [ "$(cat "$root/.version" 2>/dev/null)" = "$version" ]
}
unpack_gst_base_dev() {
  local arch=$1 triplet root version tmp link
  triplet=$(triplet_of "$arch")
  root=$(gst_base_dev_root "$arch")
  version=$(dpkg-query -W -f='${Version}' "libgstreamer-plugins-base1.0-0:$arch")
  tmp=$(mktemp -d)
  # apt-get download as root writes as user _apt: a directory it may write to.
  chmod 755 "$tmp"
  (cd "$tmp" && chown _apt "$tmp" 2>/dev/null; $SUDO apt-get download -qq "libgstreamer-plugins-base1.0-dev:$arch=$version")
  dpkg-deb -x "$tmp"/libgstreamer-plugins-base1.0-dev_*.deb "$tmp/x"
  $SUDO rm -rf "$root"
  $SUDO mkdir -p "$root/lib/$triplet"
  $SUDO cp -a "$tmp/x/usr/include" "$root/"
  # lib/pkgconfig, not lib/<triplet>/pkgconfig: FindPkgConfig searches only the former in cross builds.
  $SUDO cp -a "$tmp/x/usr/lib/$triplet/pkgconfig" "$root/lib/"
  $SUDO cp -a "$tmp/x/usr/lib/$triplet/gstreamer-1.0" "$root/lib/$triplet/"
  # shellcheck disable=SC2016  # ${pcfiledir} is pkg-config's variable, written as is
  $SUDO sed -i 's|^prefix=/usr$|prefix=${pcfiledir}/../..|' "$root/lib/pkgconfig"/*.pc
  for link in "$tmp/x/usr/lib/$triplet"/lib*.so; do
    $SUDO ln -s "/usr/lib/$triplet/$(readlink "$link")" "$root/lib/$triplet/$(basename "$link")"
  done
  echo "$version" | $SUDO tee "$root/.version" >/dev/null
  rm -rf "$tmp"
  echo "deps-arm: libgstreamer-plugins-base1.0-dev:$arch $version unpacked in $root"
}

added=0
for arch in "${arches[@]}"; do
  if ! dpkg --print-foreign-architectures | grep -qx "$arch"; then
    echo "deps-arm: dpkg --add-architecture $arch"
    $SUDO dpkg --add-architecture "$arch"
    added=1
  fi
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
stale=()
for arch in "${arches[@]}"; do gst_base_dev_current "$arch" || stale+=("$arch"); done
if ((${#missing[@]} == 0 && added == 0 && ${#stale[@]} == 0)); then
  echo "deps-arm: all ${#packages[@]} packages present for ${arches[*]}"
  exit 0
fi
if ((${#missing[@]} == 0 && added == 0)); then
  for arch in "${stale[@]}"; do unpack_gst_base_dev "$arch"; done
  exit 0
fi
echo "deps-arm: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# A mirror caught mid-sync can fail one foreign index (seen: bookworm-security armhf): apt then keeps the
# other indexes and the install below decides.
$SUDO apt-get update -qq || echo "deps-arm: apt-get update reported errors (above); installing from the indexes it has"
# Multi-Arch: same packages must have one version on every architecture. -t <codename> prefers the
# release's own versions, which exist for every architecture even when a security index for one of
# them is missing; the host's copies are upgraded to match where they are older (never downgraded).
# Where the host already has a security update of such a library (libpcre2-8-0, linux-libc-dev, which
# GLib and libc6-dev bring), the release's version cannot match it: then apt's own candidates, the newest.
codename="$( (. /etc/os-release && printf '%s' "${VERSION_CODENAME:-}") )"
if ! $SUDO apt-get install -y -qq --no-install-recommends ${codename:+-t "$codename"} "${missing[@]}"; then
  echo "deps-arm: no install with the $codename release's versions (above); with the newest versions"
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
for arch in "${arches[@]}"; do gst_base_dev_current "$arch" || unpack_gst_base_dev "$arch"; done
