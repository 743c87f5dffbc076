#!/usr/bin/env bash
# Prepares this (Debian) machine for the kernel lane of one guest architecture
# (--arch, default $ET_KERNEL_LANE_ARCH or x86_64):
#   - busybox-static and cpio (to build the guest initramfs); for x86_64 also
#     kmod (depmod) and xz-utils (the kernel's modules),
#   - QEMU >= 10 (qemu-system-x86 or qemu-system-arm from <codename>-backports
#     when the installed one is missing or older),
#   - a kernel with DMA-BUF heaps and udmabuf built in:
#       x86_64: Debian's generic linux-image-amd64 from backports, cached as
#               $ET_KERNEL_LANE_CACHE/kernel/current/vmlinuz with its modules
#               (still compressed) and a modules.dep made with depmod -b in
#               .../current/lib/modules/<release>/ (run-in-vm.sh --modules
#               loads vivid, the virtual camera, from there);
#       arm64, arm64-16k: built from Debian's linux-source (backports) with
#               allnoconfig plus arm64-kernel.config, because no Debian arm64
#               image enables CONFIG_DMABUF_HEAPS; cached as
#               $ET_KERNEL_LANE_CACHE/<arch>/kernel/current/vmlinuz;
#   - for arm64: busybox-static, dash and util-linux's setpriv (with their
#     libraries) from Debian's arm64 packages, unpacked into
#     $ET_KERNEL_LANE_CACHE/arm64-userland (never installed).
# Idempotent: what is already in place is reported and left alone.
# /etc/apt is never edited: backports is reached through a private sources
# directory under the cache, passed to apt with -o Dir::Etc::SourceParts; the
# arm64 packages come through a private apt state directory under the cache.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=tests/kernel/lib.sh
. "$here/lib.sh"

usage() {
    cat <<EOF
usage: $et_kl_prog [--arch ARCH] [--refresh-kernel]

  --arch ARCH       x86_64 (default: \$ET_KERNEL_LANE_ARCH or x86_64), arm64
                    or arm64-16k (16 KiB pages)
  --refresh-kernel  look up the newest kernel (x86_64) or kernel source
                    (arm64) in backports even if one is cached (the old one
                    stays in the cache)

Environment: ET_KERNEL_LANE_CACHE (cache dir, now $ET_KL_CACHE),
ET_KERNEL_LANE_KERNEL_PACKAGE (kernel metapackage, now $ET_KL_KERNEL_META),
ET_KERNEL_LANE_BACKPORTS_SUITE (default: <codename>-backports),
ET_KERNEL_LANE_JOBS (arm64 kernel build jobs, default: nproc).
EOF
}

refresh_kernel=0
while (($#)); do
    case "$1" in
        --refresh-kernel) refresh_kernel=1 ;;
        --arch)
            (($# >= 2)) || et_kl_die "--arch needs an argument"
            et_kl_set_arch "$2"
            shift
            ;;
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
    # One broken index (a mirror mid-sync, a foreign architecture's security
    # list) fails the whole update although the lists the lane needs arrived;
    # what is really missing makes the install or lookup below fail.
    as_root apt-get "${apt_opts[@]}" update -q ||
        et_kl_log "warning: apt-get update reported errors (see above); continuing with the package lists it has"
    apt_updated=1
    did+=("apt: updated package lists including $bp_suite")
}

apt_install() {
    apt_update
    as_root env DEBIAN_FRONTEND=noninteractive \
        apt-get "${apt_opts[@]}" install -y -q --no-install-recommends "$@" ||
        et_kl_die "apt-get install $* failed"
}

# resolve_versioned PREFIX: the one PREFIX* package ET_KL_KERNEL_META depends on in bp_suite (a
# metapackage depends on exactly one versioned package), and its version: sets rv_pkg and rv_ver.
resolve_versioned() {
    local prefix="$1"
    rv_pkg="$(apt-cache "${apt_opts[@]}" depends -t "$bp_suite" "$ET_KL_KERNEL_META" 2>/dev/null |
        awk -v p="$prefix" '$1 == "Depends:" && index($2, p) == 1 { print $2; exit }')"
    [[ -n "$rv_pkg" ]] || et_kl_die "cannot resolve $ET_KL_KERNEL_META in $bp_suite to a $prefix package"
    rv_ver="$(apt-cache "${apt_opts[@]}" show "$rv_pkg/$bp_suite" 2>/dev/null | awk '$1 == "Version:" { print $2; exit }')"
    [[ -n "$rv_ver" ]] || et_kl_die "no version of $rv_pkg in $bp_suite"
}

pkg_installed() {
    [[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true)" == installed ]]
}

# --- busybox-static and cpio --------------------------------------------------

# kmod's depmod (the generic kernel package ships no modules.dep) may sit in an
# sbin directory that a non-root PATH lacks.
depmod_path() { command -v depmod || { [[ -x /usr/sbin/depmod ]] && echo /usr/sbin/depmod; } || { [[ -x /sbin/depmod ]] && echo /sbin/depmod; } || true; }

base_missing=()
if [[ "$ET_KL_ARCH" == x86_64 ]]; then
    pkg_installed busybox-static || base_missing+=(busybox-static)
    # depmod for the modules.dep of the kernel's modules; xz to decompress the
    # modules run-in-vm.sh --modules puts into the guest.
    [[ -n "$(depmod_path)" ]] || base_missing+=(kmod)
    command -v xz >/dev/null 2>&1 || base_missing+=(xz-utils)
else
    # The arm64 kernel is built here: a cross compiler and kbuild's host tools.
    command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || base_missing+=(gcc-aarch64-linux-gnu)
    for tool in flex bison bc make; do
        command -v "$tool" >/dev/null 2>&1 || base_missing+=("$tool")
    done
    command -v gcc >/dev/null 2>&1 || base_missing+=(gcc)
    command -v xz >/dev/null 2>&1 || base_missing+=(xz-utils)
fi
command -v cpio >/dev/null 2>&1 || base_missing+=(cpio)
if ((${#base_missing[@]})); then
    et_kl_log "installing ${base_missing[*]}"
    apt_install "${base_missing[@]}"
    did+=("installed ${base_missing[*]}")
elif [[ "$ET_KL_ARCH" == x86_64 ]]; then
    did+=("busybox-static, cpio, kmod (depmod) and xz-utils: already installed")
else
    did+=("cpio, aarch64-linux-gnu-gcc, flex, bison, bc, make: already installed")
fi
if [[ "$ET_KL_ARCH" == x86_64 ]]; then
    [[ -x "$ET_KL_BUSYBOX" ]] || et_kl_die "$ET_KL_BUSYBOX missing even though busybox-static is installed"
fi

# --- QEMU >= 10 ----------------------------------------------------------------

problem="$(et_kl_qemu_problem)"
if [[ -n "$problem" ]]; then
    et_kl_log "QEMU: $problem; installing $ET_KL_QEMU_PACKAGE from $bp_suite"
    apt_install -t "$bp_suite" "$ET_KL_QEMU_PACKAGE"
    problem="$(et_kl_qemu_problem)"
    [[ -z "$problem" ]] || et_kl_die "after installing $ET_KL_QEMU_PACKAGE from $bp_suite: $problem"
    did+=("installed $ET_KL_QEMU_PACKAGE from $bp_suite: $(et_kl_qemu_version_line)")
else
    did+=("QEMU: already usable: $(et_kl_qemu_version_line)")
fi

# --- arm64: guest userland and kernel ------------------------------------------

# A private apt state for Debian's arm64 packages (the guest's busybox-static,
# dash and setpriv): its own lists, cache and an empty dpkg status, so nothing
# on this machine changes and dpkg needs no foreign architecture. Only
# `apt-get download` is ever run with it.
foreign_dir="$ET_KL_CACHE/apt/arm64"
foreign_opts=(
    -o "Dir::State::Lists=$foreign_dir/lists"
    -o "Dir::Cache=$foreign_dir/cache"
    -o "Dir::State::status=$foreign_dir/status"
    -o "Dir::Etc::SourceList=/dev/null"
    -o "Dir::Etc::SourceParts=$foreign_dir/sources.list.d"
    -o "Dir::Etc::Preferences=/dev/null"
    -o "Dir::Etc::PreferencesParts=$foreign_dir/preferences.d"
    -o "APT::Architecture=arm64"
    -o "APT::Architectures::=arm64"
)
# As root, apt fetches as _apt, which cannot write into a private $HOME.
if ((EUID == 0)); then foreign_opts+=(-o "APT::Sandbox::User=root"); fi

foreign_updated=0
foreign_update() {
    ((foreign_updated)) && return 0
    mkdir -p "$foreign_dir"/{lists/partial,cache/archives/partial,sources.list.d,preferences.d}
    : >"$foreign_dir/status"
    {
        printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\n' "$mirror" "$codename"
        if [[ -r /usr/share/keyrings/debian-archive-keyring.gpg ]]; then
            printf 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n'
        fi
    } >"$foreign_dir/sources.list.d/debian-arm64.sources"
    et_kl_log "apt-get update for arm64 packages ($codename from $mirror, state in $foreign_dir)"
    apt-get "${foreign_opts[@]}" update -q ||
        et_kl_log "warning: apt-get update (arm64 lists in $foreign_dir) reported errors; continuing"
    foreign_updated=1
}

# The guest's tools: a static busybox (PID 1 and the applets), dash as /bin/sh
# and util-linux's setpriv, with the libraries dash and setpriv need; unpacked
# with dpkg-deb -x into $ET_KL_USERLAND (installed nowhere).
userland_packages=(busybox-static dash util-linux libc6 libcap-ng0)
setup_arm64_userland() {
    if [[ -x "$ET_KL_USERLAND/bin/busybox" && -x "$ET_KL_USERLAND/bin/dash" &&
        -x "$ET_KL_USERLAND/usr/bin/setpriv" && -s "$ET_KL_USERLAND/packages" ]]; then
        did+=("arm64 userland: cached in $ET_KL_USERLAND ($(tr '\n' ' ' <"$ET_KL_USERLAND/packages"))")
        return 0
    fi
    foreign_update
    local tmp deb
    mkdir -p "$ET_KL_CACHE"
    tmp="$(mktemp -d "$ET_KL_CACHE/.userland.XXXXXX")"
    et_kl_log "downloading arm64 ${userland_packages[*]}"
    (cd "$tmp" && apt-get "${foreign_opts[@]}" download -q "${userland_packages[@]}") ||
        et_kl_die "apt-get download (arm64) ${userland_packages[*]} failed"
    mkdir -p "$tmp/root"
    for deb in "$tmp"/*.deb; do
        dpkg-deb -x "$deb" "$tmp/root" || et_kl_die "cannot unpack $deb"
        printf '%s=%s\n' "$(dpkg-deb -f "$deb" Package)" "$(dpkg-deb -f "$deb" Version)" >>"$tmp/root/packages"
    done
    rm -rf "$ET_KL_USERLAND"
    mv "$tmp/root" "$ET_KL_USERLAND"
    rm -rf "$tmp"
    [[ -x "$ET_KL_USERLAND/bin/busybox" ]] || et_kl_die "busybox-static (arm64) has no /bin/busybox"
    did+=("arm64 userland: unpacked $(tr '\n' ' ' <"$ET_KL_USERLAND/packages")into $ET_KL_USERLAND")
}

# The config fragments of the current arch: arm64-kernel.config, and for
# arm64-16k also arm64-16k-kernel.config (16 KiB pages, EXPERT for COMPAT).
arm64_kernel_fragments() {
    printf '%s\n' "$here/arm64-kernel.config"
    [[ "$ET_KL_ARCH" == arm64-16k ]] && printf '%s\n' "$here/arm64-16k-kernel.config"
    return 0
}

# The part of an arm64 kernel's cache directory name that the checkout decides:
# the page size and a hash of the fragments. A cached kernel whose name does
# not end with it was built from other fragments and is rebuilt.
arm64_kernel_tag() {
    local page=4k
    [[ "$ET_KL_ARCH" == arm64-16k ]] && page=16k
    printf '%s_%s\n' "$page" "$(arm64_kernel_fragments | xargs cat | sha256sum | cut -c1-12)"
}

# Builds the arm64 kernel from Debian's kernel source in backports:
# `make allnoconfig` with KCONFIG_ALLCONFIG = the fragments (4 KiB pages are
# allnoconfig's default), then Image. Sets kdir to the cache directory holding vmlinuz (the raw
# arm64 Image), config, package and build.log. The directory name carries the
# source version, the page size and a hash of the fragment, so a changed
# fragment builds a new kernel.
build_arm64_kernel() {
    local spkg sver frag page tag tmp dl debs src obj jobs opt missing=() start_s
    while IFS= read -r frag; do
        [[ -r "$frag" ]] || et_kl_die "$frag missing"
    done < <(arm64_kernel_fragments)
    tag="$(arm64_kernel_tag)"
    page="${tag%%_*}"
    apt_update
    resolve_versioned linux-source-
    spkg="$rv_pkg"
    sver="$rv_ver"
    kdir="$ET_KL_KERNEL_ROOT/${spkg}_${sver}_$tag"
    if [[ -s "$kdir/vmlinuz" && -s "$kdir/config" ]]; then
        did+=("kernel: $spkg $sver ($page pages) was already built in $kdir")
        return 0
    fi
    mkdir -p "$ET_KL_KERNEL_ROOT"
    tmp="$(mktemp -d "$ET_KL_KERNEL_ROOT/.staging.XXXXXX")"
    dl="$(mktemp -d)"
    trap 'rm -rf "$tmp" "$dl"' EXIT
    if ((EUID == 0)) && id _apt >/dev/null 2>&1; then chown _apt "$dl"; fi
    et_kl_log "downloading $spkg $sver"
    (cd "$dl" && apt-get "${apt_opts[@]}" download -q "$spkg=$sver") ||
        et_kl_die "apt-get download $spkg=$sver failed"
    debs=("$dl"/*.deb)
    [[ -f "${debs[0]}" ]] || et_kl_die "apt-get download left no .deb in $dl"
    src="$tmp/src"
    obj="$tmp/obj"
    mkdir -p "$src" "$obj"
    et_kl_log "unpacking $spkg (about 1.5 GB)"
    dpkg-deb --fsys-tarfile "${debs[0]}" | tar -x -O --wildcards "./usr/src/$spkg.tar.*" |
        nice -n 5 tar -xJ -C "$src" --strip-components=1 ||
        et_kl_die "cannot unpack /usr/src/$spkg.tar.* from ${debs[0]}"
    rm -rf "$dl"
    arm64_kernel_fragments | xargs cat >"$tmp/allconfig"
    local kmake=(make -C "$src" O="$obj" ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-)
    "${kmake[@]}" -s KCONFIG_ALLCONFIG="$tmp/allconfig" allnoconfig >"$tmp/build.log" 2>&1 ||
        { tail -n 30 "$tmp/build.log" >&2; et_kl_die "make allnoconfig failed"; }
    # Every option the fragment asks for must have survived (a dependency
    # Kconfig refused would otherwise vanish silently).
    while IFS= read -r opt; do
        grep -qx "$opt" "$obj/.config" || missing+=("$opt")
    done < <(grep -E '^CONFIG_[A-Z0-9_]+=y$' "$tmp/allconfig")
    ((${#missing[@]} == 0)) || et_kl_die "the kernel config lost: ${missing[*]} (fix $(arm64_kernel_fragments | xargs -n1 basename | paste -sd ' '))"
    jobs="${ET_KERNEL_LANE_JOBS:-$(nproc)}"
    et_kl_log "building $spkg $sver for arm64 ($page pages, -j$jobs, log in $kdir/build.log); takes minutes"
    start_s=$SECONDS
    nice -n 5 "${kmake[@]}" -j"$jobs" Image >>"$tmp/build.log" 2>&1 ||
        { tail -n 40 "$tmp/build.log" >&2; et_kl_die "the arm64 kernel build failed"; }
    mkdir -p "$tmp/k"
    cp "$obj/arch/arm64/boot/Image" "$tmp/k/vmlinuz"
    cp "$obj/.config" "$tmp/k/config"
    cp "$tmp/build.log" "$tmp/k/build.log"
    printf '%s %s built for arm64 (%s pages, allnoconfig + %s %s, %s)\n' \
        "$spkg" "$sver" "$page" "$(arm64_kernel_fragments | xargs -n1 basename | paste -sd +)" "${tag#*_}" \
        "$(aarch64-linux-gnu-gcc --version | head -n 1)" >"$tmp/k/package"
    rm -rf "$kdir"
    mv "$tmp/k" "$kdir"
    rm -rf "$tmp"
    trap - EXIT
    did+=("kernel: built $spkg $sver ($page pages) in $((SECONDS - start_s)) s into $kdir")
}

# Downloads Debian's x86_64 kernel image package (the versioned package that
# $ET_KL_KERNEL_META depends on in backports) and caches, in
# $ET_KL_KERNEL_ROOT/<package>_<version>/: vmlinuz, config, the modules
# (lib/modules/<release>/, still compressed as the package ships them), the
# modules.dep and friends that `depmod -b` generates (the package ships none),
# a `package` note and a `meta` file naming the metapackage. Sets kdir.
fetch_x86_kernel() {
    local kpkg kver tmp dl debs vmlinuz config release lacking opt missing_mods=()
    apt_update
    resolve_versioned linux-image-
    kpkg="$rv_pkg"
    kver="$rv_ver"
    kdir="$kernel_root/${kpkg}_$kver"
    if [[ -s "$kdir/vmlinuz" && -s "$kdir/config" && "$(cat "$kdir/meta" 2>/dev/null)" == "$ET_KL_KERNEL_META" &&
        -n "$(ET_KERNEL_LANE_MODULES="" et_kl_modules_dir "$kdir/vmlinuz")" ]]; then
        did+=("kernel: $kpkg $kver was already cached in $kdir")
        return 0
    fi
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
    dpkg-deb --fsys-tarfile "${debs[0]}" | tar -x -C "$tmp/x" ||
        et_kl_die "cannot unpack ${debs[0]}"
    rm -rf "$dl"
    vmlinuz=("$tmp"/x/boot/vmlinuz-*)
    config=("$tmp"/x/boot/config-*)
    [[ -f "${vmlinuz[0]}" && -f "${config[0]}" ]] || et_kl_die "${debs[0]} has no /boot/vmlinuz-* and /boot/config-*"
    if ! lacking="$(et_kl_check_kernel_config "${config[0]}")"; then
        et_kl_die "$kpkg $kver lacks required options: $(echo "$lacking" | tr '\n' ' ')"
    fi
    release="${vmlinuz[0]##*/vmlinuz-}"
    mkdir -p "$tmp/k/lib/modules"
    # Debian's packages put modules in /lib/modules (bookworm) or /usr/lib/modules.
    if [[ -d "$tmp/x/lib/modules/$release" ]]; then
        mv "$tmp/x/lib/modules/$release" "$tmp/k/lib/modules/"
    elif [[ -d "$tmp/x/usr/lib/modules/$release" ]]; then
        mv "$tmp/x/usr/lib/modules/$release" "$tmp/k/lib/modules/"
    else
        et_kl_die "${debs[0]} has no /lib/modules/$release"
    fi
    # The package ships modules.order and modules.builtin but no modules.dep.
    "$(depmod_path)" -b "$tmp/k" "$release" || et_kl_die "depmod -b $tmp/k $release failed"
    [[ -s "$tmp/k/lib/modules/$release/modules.dep" ]] || et_kl_die "depmod wrote no modules.dep"
    # Every =m option the lane needs must have its module in modules.dep.
    for opt in "${ET_KL_REQUIRED_MODULE_CONFIG[@]}"; do
        if grep -qx "${opt%%:*}=m" "${config[0]}" &&
            ! grep -q "/${opt#*:}\.ko[.a-z]*:" "$tmp/k/lib/modules/$release/modules.dep"; then
            missing_mods+=("${opt#*:}")
        fi
    done
    ((${#missing_mods[@]} == 0)) || et_kl_die "$kpkg $kver: the config builds ${missing_mods[*]} as a module, but modules.dep lacks it"
    cp "${vmlinuz[0]}" "$tmp/k/vmlinuz"
    cp "${config[0]}" "$tmp/k/config"
    printf '%s %s (%s)\n' "$kpkg" "$kver" "${vmlinuz[0]##*/}" >"$tmp/k/package"
    printf '%s\n' "$ET_KL_KERNEL_META" >"$tmp/k/meta"
    rm -rf "$kdir"
    mv "$tmp/k" "$kdir"
    rm -rf "$tmp"
    trap - EXIT
    did+=("kernel: downloaded $kpkg $kver into $kdir ($(du -sm "$kdir" | cut -f1) MiB with its modules; modules.dep from depmod -b)")
}

if [[ "$ET_KL_ARCH" != x86_64 ]]; then
    setup_arm64_userland
fi

# --- the kernel image ------------------------------------------------------------

kernel_root="$ET_KL_KERNEL_ROOT"
current="$kernel_root/current"
stale=0
if [[ "$ET_KL_ARCH" != x86_64 && -e "$current" && "$(readlink "$current")" != *"_$(arm64_kernel_tag)" ]]; then
    et_kl_log "the cached kernel $(readlink "$current") was built from another arm64-kernel.config: rebuilding"
    stale=1
fi
# x86_64: the cached image must come from the metapackage asked for (a cache
# from before the move to the generic kernel holds the cloud one, which has no
# media drivers) and carry its modules with the modules.dep setup.sh generated.
if [[ "$ET_KL_ARCH" == x86_64 && -e "$current" ]]; then
    if [[ "$(cat "$current/meta" 2>/dev/null)" != "$ET_KL_KERNEL_META" ]]; then
        et_kl_log "the cached kernel $(readlink "$current") is not from $ET_KL_KERNEL_META: looking that one up (the old one stays in the cache)"
        stale=1
    elif [[ -z "$(ET_KERNEL_LANE_MODULES="" et_kl_modules_dir "$current/vmlinuz")" ]]; then
        et_kl_log "the cached kernel $(readlink "$current") has no modules.dep: fetching it again"
        stale=1
    fi
fi
if ((!refresh_kernel && !stale)) && [[ -s "$current/vmlinuz" && -s "$current/config" ]]; then
    did+=("kernel: cached $(cat "$current/package" 2>/dev/null || echo '(unknown package)') in $(readlink -f "$current")")
elif [[ "$ET_KL_ARCH" != x86_64 ]]; then
    build_arm64_kernel
    ln -sfn "${kdir##*/}" "$current.new"
    mv -T "$current.new" "$current"
else
    fetch_x86_kernel
    ln -sfn "${kdir##*/}" "$current.new"
    mv -T "$current.new" "$current"
fi
if ! lacking="$(et_kl_check_kernel_config "$current/config")"; then
    et_kl_die "cached kernel $(readlink -f "$current") lacks: $(echo "$lacking" | tr '\n' ' ') (rerun with --refresh-kernel)"
fi

printf '%s: done\n' "$et_kl_prog"
printf '  - %s\n' "${did[@]}"
printf '  kernel image: %s\n' "$current/vmlinuz"
