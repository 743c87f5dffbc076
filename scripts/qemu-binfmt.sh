#!/usr/bin/env bash
# Lets the kernel start ARM programs through QEMU user mode, so a test running under QEMU can exec
# another ARM program (the CLI's peer, a two-process IPC test): mounts binfmt_misc when it is not
# mounted and enables the binfmt entries that Debian's qemu-user-binfmt installs for binfmt-support
# (/usr/share/binfmts/qemu-<name>). Needs root. Idempotent.
#   usage: scripts/qemu-binfmt.sh [qemu-aarch64] [qemu-arm]     (default: both)
# The exec'd programs find their loader and libraries through Debian multiarch (libc6:arm64/armhf,
# installed by scripts/deps-arm.sh), so no QEMU_LD_PREFIX is needed for them.
set -euo pipefail

names=("$@")
((${#names[@]})) || names=(qemu-aarch64 qemu-arm)
dir=/proc/sys/fs/binfmt_misc

if [ ! -e "$dir/register" ]; then
  echo "qemu-binfmt: mounting binfmt_misc on $dir"
  mount -t binfmt_misc binfmt_misc "$dir"
fi
command -v update-binfmts >/dev/null || { echo "qemu-binfmt: update-binfmts missing (scripts/deps-arm.sh installs binfmt-support)" >&2; exit 1; }
for name in "${names[@]}"; do
  if [ -e "$dir/$name" ] && head -1 "$dir/$name" | grep -qx enabled; then
    echo "qemu-binfmt: $name enabled"
    continue
  fi
  if [ -e "$dir/$name" ]; then
    echo 1 > "$dir/$name"  # registered but disabled
  else
    update-binfmts --enable "$name"
  fi
  head -1 "$dir/$name" | grep -qx enabled || { echo "qemu-binfmt: could not enable $name" >&2; exit 1; }
  echo "qemu-binfmt: $name enabled: $(sed -n 's/^interpreter //p' "$dir/$name")"
done
