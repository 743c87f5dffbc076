#!/usr/bin/env bash
# Installs what the ARM lanes need on Debian 12 (as root, or with sudo): Debian's cross toolchain for
# ARCH (crossbuild-essential-ARCH), the -dev packages the build needs for ARCH through multiarch
# (dpkg --add-architecture; they are Multi-Arch: same), Mesa for ARCH (llvmpipe, for the GL suites
# under QEMU) and QEMU user-mode emulation with its binfmt entries.
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
  for p in libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev \
           libegl-dev libgles-dev libegl1 libegl-mesa0 libgles2 libgl1-mesa-dri; do
    packages+=("$p:$arch")
  done
done

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

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
if ((${#missing[@]} == 0 && added == 0)); then
  echo "deps-arm: all ${#packages[@]} packages present for ${arches[*]}"
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
codename="$( (. /etc/os-release && printf '%s' "${VERSION_CODENAME:-}") )"
$SUDO apt-get install -y -qq --no-install-recommends ${codename:+-t "$codename"} "${missing[@]}"
