#!/usr/bin/env bash
# Prepares this (Debian) machine for the kernel lane:
#   - busybox-static and cpio (to build the guest initramfs),
#   - QEMU >= 10 (qemu-system-x86 from <codename>-backports when the installed
#     one is missing or older),
#   - a kernel with DMA-BUF heaps and udmabuf built in, cached as
#     $ET_KERNEL_LANE_CACHE/kernel/current/vmlinuz.
# Idempotent: what is already in place is reported and left alone.
# /etc/apt is never edited: backports is reached through a private sources
# directory under the cache, passed to apt with -o Dir::Etc::SourceParts.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=tests/kernel/lib.sh
. "$here/lib.sh"

usage() {
    cat <<EOF
usage: $et_kl_prog [--refresh-kernel]

  --refresh-kernel  look up the newest kernel in backports even if one is
                    cached (the old one stays in the cache)

Environment: ET_KERNEL_LANE_CACHE (cache dir, now $ET_KL_CACHE),
ET_KERNEL_LANE_KERNEL_PACKAGE (kernel metapackage, now $ET_KL_KERNEL_META),
ET_KERNEL_LANE_BACKPORTS_SUITE (default: <codename>-backports).
EOF
}

refresh_kernel=0
while (($#)); do
    case "$1" in
        --refresh-kernel) refresh_kernel=1 ;;
        -h | --help) usage; exit 0 ;;
        *) usage >&2; et_kl_die "unknown argument: $1" ;;
    esac
    shift
done

command -v apt-get >/dev/null 2>&1 || et_kl_die "apt-get not found: setup.sh supports Debian only; install QEMU >= $ET_KL_MIN_QEMU_MAJOR, busybox-static and cpio by hand and set ET_KERNEL_LANE_KERNEL to a kernel image with DMA-BUF heaps and udmabuf"

did=()  # one line per action, printed at the end

as_root() {
    if ((EUID == 0)); then
        "$@"
    elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        sudo -n "$@"
    else
        et_kl_die "need root to run: $* (run setup.sh as root or with passwordless sudo)"
    fi
}

# --- apt configuration: the system sources plus <codename>-backports --------

codename="$( (. /etc/os-release && printf '%s' "${VERSION_CODENAME:-}") )"
[[ -n "$codename" ]] || et_kl_die "cannot read VERSION_CODENAME from /etc/os-release"
bp_suite="${ET_KERNEL_LANE_BACKPORTS_SUITE:-$codename-backports}"

# Sites (mirror URIs) the system's own sources use for each suite; from the
# configuration alone (--no-release-info), so it works before any apt-get update.
# shellcheck disable=SC2016 # $(...) are apt format fields
targets="$(apt-get indextargets --no-release-info --format '$(TARGET_OF) $(RELEASE) $(SITE)' 'Identifier: Packages' | sort -u)"
mirror="$(awk -v s="$codename" '$1 == "deb" && $2 == s { print $3; exit }' <<<"$targets")"
[[ -n "$mirror" ]] || et_kl_die "no 'deb' source for suite $codename in the apt sources; cannot derive the $bp_suite mirror"

apt_opts=()
if awk -v s="$bp_suite" '$1 == "deb" && $2 == s { f = 1 } END { exit !f }' <<<"$targets"; then
    bp_origin="the system's apt sources"
else
    # A private copy of the system's source parts plus one file for backports.
    # Dir::Etc::SourceList (the one-line sources.list) is still the system's.
    parts_dir="$ET_KL_CACHE/apt/sources.list.d"
    sys_parts="$(apt-config shell P Dir::Etc::sourceparts/d | sed -n "s/^P='\(.*\)'$/\1/p")"
    mkdir -p "$parts_dir"
    find "$parts_dir" -mindepth 1 -maxdepth 1 -type f -delete
    if [[ -n "$sys_parts" && -d "$sys_parts" ]]; then
        find "$sys_parts" -mindepth 1 -maxdepth 1 \( -name '*.list' -o -name '*.sources' \) \
            -exec cp -L -t "$parts_dir" {} +
    fi
    {
        printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\n' "$mirror" "$bp_suite"
        if [[ -r /usr/share/keyrings/debian-archive-keyring.gpg ]]; then
            printf 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n'
        fi
    } >"$parts_dir/edgetensor-kernel-lane-backports.sources"
    apt_opts=(-o "Dir::Etc::SourceParts=$parts_dir")
    bp_origin="$parts_dir/edgetensor-kernel-lane-backports.sources ($mirror)"
fi

apt_updated=0
apt_update() {
    ((apt_updated)) && return 0
    et_kl_log "apt-get update (system sources + $bp_suite from $bp_origin)"
    as_root apt-get "${apt_opts[@]}" update -q || et_kl_die "apt-get update failed"
    apt_updated=1
    did+=("apt: updated package lists including $bp_suite")
}

apt_install() {
    apt_update
    as_root env DEBIAN_FRONTEND=noninteractive \
        apt-get "${apt_opts[@]}" install -y -q --no-install-recommends "$@" ||
        et_kl_die "apt-get install $* failed"
}

pkg_installed() {
    [[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true)" == installed ]]
}

# --- busybox-static and cpio --------------------------------------------------

base_missing=()
pkg_installed busybox-static || base_missing+=(busybox-static)
command -v cpio >/dev/null 2>&1 || base_missing+=(cpio)
if ((${#base_missing[@]})); then
    et_kl_log "installing ${base_missing[*]}"
    apt_install "${base_missing[@]}"
    did+=("installed ${base_missing[*]}")
else
    did+=("busybox-static and cpio: already installed")
fi
[[ -x "$ET_KL_BUSYBOX" ]] || et_kl_die "$ET_KL_BUSYBOX missing even though busybox-static is installed"

# --- QEMU >= 10 ----------------------------------------------------------------

problem="$(et_kl_qemu_problem)"
if [[ -n "$problem" ]]; then
    et_kl_log "QEMU: $problem; installing qemu-system-x86 from $bp_suite"
    apt_install -t "$bp_suite" qemu-system-x86
    problem="$(et_kl_qemu_problem)"
    [[ -z "$problem" ]] || et_kl_die "after installing qemu-system-x86 from $bp_suite: $problem"
    did+=("installed qemu-system-x86 from $bp_suite: $(et_kl_qemu_version_line)")
else
    did+=("QEMU: already usable: $(et_kl_qemu_version_line)")
fi

# --- the kernel image ------------------------------------------------------------

kernel_root="$ET_KL_CACHE/kernel"
current="$kernel_root/current"
if ((!refresh_kernel)) && [[ -s "$current/vmlinuz" && -s "$current/config" ]]; then
    did+=("kernel: cached $(cat "$current/package" 2>/dev/null || echo '(unknown package)') in $(readlink -f "$current")")
else
    apt_update
    # The metapackage depends on exactly one versioned image package.
    kpkg="$(apt-cache "${apt_opts[@]}" depends -t "$bp_suite" "$ET_KL_KERNEL_META" 2>/dev/null |
        awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }')"
    [[ -n "$kpkg" ]] || et_kl_die "cannot resolve $ET_KL_KERNEL_META in $bp_suite to a linux-image package"
    kver="$(apt-cache "${apt_opts[@]}" show "$kpkg/$bp_suite" 2>/dev/null | awk '$1 == "Version:" { print $2; exit }')"
    [[ -n "$kver" ]] || et_kl_die "no version of $kpkg in $bp_suite"
    kdir="$kernel_root/${kpkg}_$kver"
    if [[ -s "$kdir/vmlinuz" && -s "$kdir/config" ]]; then
        did+=("kernel: $kpkg $kver was already cached in $kdir")
    else
        mkdir -p "$kernel_root"
        tmp="$(mktemp -d "$kernel_root/.staging.XXXXXX")"
        # The .deb goes to a directory under $TMPDIR that apt's download
        # sandbox user (_apt) can reach; the cache may sit in a private $HOME.
        dl="$(mktemp -d)"
        trap 'rm -rf "$tmp" "$dl"' EXIT
        if ((EUID == 0)) && id _apt >/dev/null 2>&1; then chown _apt "$dl"; fi
        et_kl_log "downloading $kpkg $kver"
        (cd "$dl" && apt-get "${apt_opts[@]}" download -q "$kpkg=$kver") ||
            et_kl_die "apt-get download $kpkg=$kver failed"
        debs=("$dl"/*.deb)
        [[ -f "${debs[0]}" ]] || et_kl_die "apt-get download left no .deb in $dl"
        mkdir -p "$tmp/x"
        dpkg-deb --fsys-tarfile "${debs[0]}" | tar -x -C "$tmp/x" --wildcards './boot/*' ||
            et_kl_die "cannot extract /boot from ${debs[0]}"
        vmlinuz=("$tmp"/x/boot/vmlinuz-*)
        config=("$tmp"/x/boot/config-*)
        [[ -f "${vmlinuz[0]}" && -f "${config[0]}" ]] || et_kl_die "${debs[0]} has no /boot/vmlinuz-* and /boot/config-*"
        if ! lacking="$(et_kl_check_kernel_config "${config[0]}")"; then
            et_kl_die "$kpkg $kver lacks required built-in options: $(echo "$lacking" | tr '\n' ' ')"
        fi
        mkdir -p "$tmp/k"
        cp "${vmlinuz[0]}" "$tmp/k/vmlinuz"
        cp "${config[0]}" "$tmp/k/config"
        printf '%s %s (%s)\n' "$kpkg" "$kver" "${vmlinuz[0]##*/}" >"$tmp/k/package"
        rm -rf "$kdir"
        mv "$tmp/k" "$kdir"
        rm -rf "$tmp" "$dl"
        trap - EXIT
        did+=("kernel: downloaded $kpkg $kver into $kdir")
    fi
    ln -sfn "${kdir##*/}" "$current.new"
    mv -T "$current.new" "$current"
fi
if ! lacking="$(et_kl_check_kernel_config "$current/config")"; then
    et_kl_die "cached kernel $(readlink -f "$current") lacks: $(echo "$lacking" | tr '\n' ' ') (rerun with --refresh-kernel)"
fi

printf '%s: done\n' "$et_kl_prog"
printf '  - %s\n' "${did[@]}"
printf '  kernel image: %s\n' "$current/vmlinuz"
