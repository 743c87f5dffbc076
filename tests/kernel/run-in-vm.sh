#!/usr/bin/env bash
# Runs one test binary as root inside a real Linux kernel (QEMU, TCG) whose
# config has DMA-BUF heaps and udmabuf, and exits with the binary's exit code.
# See tests/kernel/README.md.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=tests/kernel/lib.sh
. "$here/lib.sh"

usage() {
    cat <<EOF
usage: $et_kl_prog [OPTIONS] -- BINARY [ARGS...]

Boots the kernel cached by tests/kernel/setup.sh under QEMU (TCG) with an
initramfs holding busybox, BINARY and the libraries it needs, runs
BINARY ARGS... as root, streams its output and exits with its exit code.
Files keep their host paths in the guest; BINARY runs in its own directory.

  --arch ARCH            the guest: x86_64 (default: \$ET_KERNEL_LANE_ARCH or
                         x86_64), arm64 or arm64-16k; arm64 guests run
                         aarch64 binaries, and armhf ones when the kernel has
                         CONFIG_COMPAT (libraries from the cross toolchains'
                         /usr/<triplet>/lib and the multiarch directories)

  --kernel-args ARGS     append ARGS to the kernel command line
                         (e.g. "udmabuf.size_limit_mb=8"); repeatable
  --timeout SEC          kill the VM after SEC seconds (default
                         \$ET_KERNEL_LANE_TIMEOUT or 300)
  --file SRC[:DEST]      also copy SRC (file or directory) to DEST (absolute;
                         default: SRC's absolute path) with the libraries of
                         every ELF file in it; repeatable
  --env NAME=VALUE       set NAME in BINARY's environment; repeatable
  --collect GUEST[:HOST] after BINARY exits, copy the guest file GUEST back to
                         HOST (default: GUEST); repeatable
  --cwd DIR              run BINARY in guest directory DIR
  --modules NAME[,NAME]  load these kernel modules (and what they depend on, in
                         modules.dep order) with insmod before BINARY starts;
                         a NAME.PARAM=VALUE in --kernel-args becomes an insmod
                         parameter of NAME, as modprobe would take it from the
                         kernel command line (e.g. --modules vivid
                         --kernel-args "vivid.n_devs=2 vivid.multiplanar=1,2");
                         repeatable; a module that fails to load fails the run
  --dmesg                print the guest's kernel log to stderr afterwards
  --skip-if-unavailable  if QEMU or the kernel is missing, print "kernel lane
                         skipped: <reason>" and exit 0 (never under CI)
  -h, --help             this text

The guest has util-linux setpriv (/usr/bin/setpriv) for dropping privileges,
e.g. setpriv --reuid=65534 --regid=65534 --clear-groups CMD, and dash as
/bin/sh (the host's on x86_64, Debian's arm64 one on arm64); the other tools
are busybox applets.
Exit status: BINARY's, or 1 if the VM failed, timed out or printed no marker.
EOF
}

timeout_s="${ET_KERNEL_LANE_TIMEOUT:-300}"
memory_mib="${ET_KERNEL_LANE_MEMORY:-512}"
smp="${ET_KERNEL_LANE_SMP:-2}"
kernel_args=()
files=()
envs=()
collects=()
cwd=""
dmesg=0
modules=()
skip_if_unavailable=0

need_arg() { (($# >= 2)) || { usage >&2; et_kl_die "$1 needs an argument"; }; }
while (($#)); do
    case "$1" in
        --arch) need_arg "$@"; et_kl_set_arch "$2"; shift ;;
        --kernel-args) need_arg "$@"; kernel_args+=("$2"); shift ;;
        --timeout) need_arg "$@"; timeout_s="$2"; shift ;;
        --file) need_arg "$@"; files+=("$2"); shift ;;
        --env) need_arg "$@"; envs+=("$2"); shift ;;
        --collect) need_arg "$@"; collects+=("$2"); shift ;;
        --cwd) need_arg "$@"; cwd="$2"; shift ;;
        --dmesg) dmesg=1 ;;
        --modules)
            need_arg "$@"
            IFS=, read -r -a names <<<"$2"
            for n in "${names[@]}"; do
                [[ "$n" =~ ^[A-Za-z0-9_-]+$ ]] || et_kl_die "--modules wants module names (letters, digits, _ and -), not '$n'"
                modules+=("$n")
            done
            shift
            ;;
        --skip-if-unavailable) skip_if_unavailable=1 ;;
        -h | --help) usage; exit 0 ;;
        --) shift; break ;;
        -*) usage >&2; et_kl_die "unknown option: $1" ;;
        *) break ;;
    esac
    shift
done
(($#)) || { usage >&2; et_kl_die "no BINARY given"; }
binary="$1"
shift
binary_args=("$@")

[[ "$timeout_s" =~ ^[1-9][0-9]*$ ]] || et_kl_die "--timeout wants a positive number of seconds, not '$timeout_s'"
for e in "${envs[@]}"; do
    [[ "$e" =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || et_kl_die "--env wants NAME=VALUE, not '$e'"
done

# --- is the lane usable here? --------------------------------------------------

kernel="$(et_kl_kernel_path)"
unavailable=""
if [[ -n "$(et_kl_qemu_problem)" ]]; then
    unavailable="$(et_kl_qemu_problem)"
elif [[ ! -s "$kernel" ]]; then
    unavailable="no kernel image at $kernel (run $ET_KL_SETUP)"
elif [[ ! -x "$ET_KL_BUSYBOX" ]]; then
    unavailable="$ET_KL_BUSYBOX missing (run $ET_KL_SETUP)"
elif ! command -v cpio >/dev/null 2>&1; then
    unavailable="cpio missing (run $ET_KL_SETUP)"
elif ((${#modules[@]})) && [[ -z "$(et_kl_modules_dir "$kernel")" ]]; then
    if [[ "$ET_KL_ARCH" == x86_64 ]]; then
        unavailable="--modules ${modules[*]}: no modules.dep for $kernel (ET_KERNEL_LANE_MODULES, or lib/modules/<release>/ next to the image: run $ET_KL_SETUP)"
    else
        unavailable="--modules ${modules[*]}: the $ET_KL_ARCH kernel is built without modules (no modules.dep for $kernel; ET_KERNEL_LANE_MODULES names another)"
    fi
fi
if [[ -n "$unavailable" ]]; then
    if ((skip_if_unavailable)) && ! et_kl_in_ci; then
        echo "kernel lane skipped: $unavailable"
        exit 0
    fi
    if ((skip_if_unavailable)); then
        et_kl_die "kernel lane unavailable under CI=$CI (--skip-if-unavailable applies only outside CI): $unavailable"
    fi
    et_kl_die "kernel lane unavailable: $unavailable"
fi
if [[ "$ET_KL_ARCH" == x86_64 ]]; then
    if ldd "$ET_KL_BUSYBOX" >/dev/null 2>&1; then
        et_kl_die "$ET_KL_BUSYBOX is dynamically linked; install busybox-static"
    fi
elif LC_ALL=C readelf -lW "$ET_KL_BUSYBOX" 2>/dev/null | grep -q 'program interpreter'; then
    et_kl_die "$ET_KL_BUSYBOX is dynamically linked; it must be a static busybox (run $ET_KL_SETUP)"
fi
# The kernel's config, when setup.sh cached one next to the image: an arm64
# kernel runs 32-bit ARM binaries only with CONFIG_COMPAT.
kernel_config="$(dirname "$kernel")/config"

# --- build the initramfs ----------------------------------------------------------

work="$(mktemp -d "${TMPDIR:-/tmp}/et-kernel-lane.XXXXXX")"
if [[ "${ET_KERNEL_LANE_KEEP:-0}" == 1 ]]; then
    trap 'et_kl_log "kept $work"' EXIT
else
    trap 'rm -rf "$work"' EXIT
fi
root="$work/root"
mkdir -p "$root"/{bin,dev,proc,sys,tmp,run,root,etc,.et-lane}

# Absolute, normalized form of a host path, without resolving symlinks.
abs_path() { realpath -s -m -- "$1"; }

check_guest_dest() {
    case "$1" in
        /*) ;;
        *) et_kl_die "guest path '$1' is not absolute" ;;
    esac
    case "$1/" in
        /proc/* | /sys/* | /dev/* | /.et-lane/* | /init/*)
            et_kl_die "guest path '$1' would be hidden by a guest mount or clash with the lane's files" ;;
    esac
}

is_elf() {
    [[ "$(head -c 4 "$1" 2>/dev/null | od -An -tx1 | tr -d ' \n')" == 7f454c46 ]]
}

declare -A copied=()
# Copies host file SRC to guest path DEST (dereferencing symlinks).
put_file() {
    local src="$1" dest="$2"
    [[ -n "${copied[$dest]:-}" ]] && return 0
    mkdir -p "$root$(dirname "$dest")"
    cp -L --preserve=mode "$src" "$root$dest" || et_kl_die "cannot copy $src into the initramfs"
    copied[$dest]=1
}

# Copies the shared libraries and dynamic loader of ELF file $1 (guest path
# $2) to where the guest's loader will look for them: on x86_64 the paths ldd
# prints (the host's), on arm64 those put_libs_foreign finds.
# $3 = "in-dir": the file came with a --file directory, where an ELF file the
# guest cannot run (a host tool in a build tree) is copied with a warning.
put_libs() {
    local elf="$1" out line lib why
    if [[ "$ET_KL_ARCH" != x86_64 ]]; then
        if [[ "${3:-}" == in-dir ]]; then
            why="$(guest_cannot_run "$elf" "$(elf_triplet "$elf")")"
            if [[ -n "$why" ]]; then
                et_kl_log "warning: $why (copied without its libraries)"
                return 0
            fi
        fi
        guest_root_elf="$2"
        put_libs_foreign "$elf" "$2"
        return 0
    fi
    out="$(LC_ALL=C ldd "$elf" 2>&1)" || {
        # ldd fails on static executables; anything else is a real error.
        grep -qE 'not a dynamic executable|statically linked' <<<"$out" && return 0
        et_kl_die "ldd $elf failed: $out"
    }
    if grep -q 'not found' <<<"$out"; then
        et_kl_die "ldd $elf: missing libraries: $(grep 'not found' <<<"$out" | tr -s ' \t' ' ')"
    fi
    while IFS= read -r line; do
        lib=""
        if [[ "$line" =~ =\>\ (/[^ ]+)\ \( ]]; then
            lib="${BASH_REMATCH[1]}"
        elif [[ "$line" =~ ^[[:space:]]*(/[^ ]+)\ \( ]]; then
            lib="${BASH_REMATCH[1]}"  # the dynamic loader
        fi
        [[ -n "$lib" ]] && put_file "$lib" "$lib"
    done <<<"$out"
}

# --- libraries of foreign (non-x86) ELF files ----------------------------------
# ldd cannot inspect an aarch64 or armhf binary on an x86 host, so the arm64
# guests resolve libraries the way the guest's loader will (ld.so(8)): the
# NEEDED entries of each object, looked up in its DT_RUNPATH, or else its
# DT_RPATH and the executable's ($ORIGIN expanded), then in the default
# directories. On the host those are the cross toolchain's /usr/<triplet>/lib
# (what the binary was linked against), the multiarch /lib/<triplet> and
# /usr/lib/<triplet>, and the unpacked arm64 userland. A library found in a
# RUNPATH/RPATH directory keeps its host path in the guest (payload keeps its
# host paths); one from a default directory goes to the guest's /lib/<triplet>,
# which glibc's loader searches without an ld.so.cache. The loader goes to its
# PT_INTERP path.

# Prints the Debian multiarch triplet of ELF file $1 (from its header), or
# nothing for a machine the lane does not know.
elf_triplet() {
    local h
    h="$(LC_ALL=C readelf -hW "$1" 2>/dev/null)" || return 0
    case "$(sed -n 's/^ *Machine: *//p' <<<"$h")" in
        AArch64) echo aarch64-linux-gnu ;;
        ARM)
            if grep -q 'hard-float' <<<"$h"; then echo arm-linux-gnueabihf; else echo arm-linux-gnueabi; fi
            ;;
        *X86-64*) echo x86_64-linux-gnu ;;
        *80386*) echo i386-linux-gnu ;;
    esac
}

# Host directories searched for a library of triplet $1 that no RUNPATH/RPATH
# names, in order.
default_lib_dirs() {
    printf '%s\n' "/usr/$1/lib" "/lib/$1" "/usr/lib/$1"
    if [[ -n "${ET_KL_USERLAND:-}" ]]; then
        printf '%s\n' "$ET_KL_USERLAND/lib/$1" "$ET_KL_USERLAND/usr/lib/$1"
    fi
}

# The guest kernel's page size in bytes, from its config (4096 without one).
guest_page_size=4096
if [[ -r "$kernel_config" ]]; then
    if grep -qx 'CONFIG_ARM64_64K_PAGES=y' "$kernel_config"; then
        guest_page_size=65536
    elif grep -qx 'CONFIG_ARM64_16K_PAGES=y' "$kernel_config"; then
        guest_page_size=16384
    fi
fi

# Prints why the guest cannot run ELF file $1 of triplet $2, or nothing.
guest_cannot_run() {
    local elf="$1" t="$2" align
    # The kernel maps each PT_LOAD segment at its p_align; one aligned below
    # the page size cannot be mapped (Debian's armhf binaries and libraries
    # are linked with 4 KiB alignment, so they die with SIGSEGV at exec on a
    # 16 KiB-page kernel).
    while IFS= read -r align; do
        if ((align < guest_page_size)); then
            echo "$elf has PT_LOAD segments aligned to $((align)) B, below the guest kernel's page size $guest_page_size B: it cannot be mapped there"
            return 0
        fi
    done < <(LC_ALL=C readelf -lW "$elf" 2>/dev/null | awk '$1 == "LOAD" { print $NF }')
    case "$t" in
        aarch64-linux-gnu) ;;
        arm-linux-gnueabihf | arm-linux-gnueabi)
            if [[ -r "$kernel_config" ]] && ! grep -qx 'CONFIG_COMPAT=y' "$kernel_config"; then
                echo "$elf is 32-bit ARM ($t), but the kernel ($kernel_config) has no CONFIG_COMPAT"
            fi
            ;;
        "") echo "$elf: not an ELF file readelf understands" ;;
        *) echo "$elf is $t: the $ET_KL_ARCH guest runs aarch64 and (with CONFIG_COMPAT) 32-bit ARM binaries" ;;
    esac
}

declare -A foreign_done=()
# Copies the loader and the libraries of foreign ELF file $1 (guest path $2)
# into the initramfs, recursively. $3: the executable's DT_RPATH directories
# (':'-separated), which its libraries inherit when they have no DT_RUNPATH.
put_libs_foreign() {
    local elf="$1" guest="$2" exe_rpath="${3:-}" t dyn interp runpath rpath origin dirs=() d n i found dest why
    [[ -n "${foreign_done[$guest]:-}" ]] && return 0
    foreign_done[$guest]=1
    t="$(elf_triplet "$elf")"
    why="$(guest_cannot_run "$elf" "$t")"
    [[ -z "$why" ]] || et_kl_die "$why"
    interp="$(LC_ALL=C readelf -lW "$elf" 2>/dev/null | sed -n 's/.*\[Requesting program interpreter: \(.*\)\]$/\1/p')"
    dyn="$(LC_ALL=C readelf -dW "$elf" 2>/dev/null)" || true
    if [[ -n "$interp" && -z "${copied[$interp]:-}" ]]; then
        found=""
        while IFS= read -r d; do
            if [[ -f "$d/${interp##*/}" && "$(elf_triplet "$d/${interp##*/}")" == "$t" ]]; then
                found="$d/${interp##*/}"
                break
            fi
        done < <(default_lib_dirs "$t")
        [[ -n "$found" ]] || et_kl_die "$elf: its loader ${interp##*/} ($t) is in none of: $(default_lib_dirs "$t" | tr '\n' ' ')(install the cross toolchain, e.g. crossbuild-essential-arm64)"
        put_file "$found" "$interp"
    fi
    origin="$(dirname "$guest")"
    runpath="$(sed -n 's/.*(RUNPATH).*Library runpath: \[\(.*\)\]$/\1/p' <<<"$dyn")"
    rpath="$(sed -n 's/.*(RPATH).*Library rpath: \[\(.*\)\]$/\1/p' <<<"$dyn")"
    # The executable (the first object) passes its RPATH on; with a RUNPATH,
    # nothing is inherited.
    if [[ -z "$exe_rpath" && -z "$runpath" && "$guest" == "$guest_root_elf" ]]; then exe_rpath="$rpath"; fi
    if [[ -n "$runpath" ]]; then
        IFS=: read -r -a dirs <<<"$runpath"
    else
        IFS=: read -r -a dirs <<<"$rpath${exe_rpath:+:$exe_rpath}"
    fi
    for i in "${!dirs[@]}"; do
        dirs[i]="${dirs[i]//\$\{ORIGIN\}/$origin}"
        dirs[i]="${dirs[i]//\$ORIGIN/$origin}"
    done
    while IFS= read -r n; do
        [[ -n "$n" ]] || continue
        found=""
        dest=""
        for d in "${dirs[@]}"; do
            [[ -n "$d" && -f "$d/$n" ]] || continue
            [[ "$(elf_triplet "$d/$n")" == "$t" ]] || continue
            found="$d/$n"
            dest="$(abs_path "$d/$n")"
            break
        done
        if [[ -z "$found" ]]; then
            while IFS= read -r d; do
                if [[ -f "$d/$n" && "$(elf_triplet "$d/$n")" == "$t" ]]; then
                    found="$d/$n"
                    dest="/lib/$t/$n"
                    break
                fi
            done < <(default_lib_dirs "$t")
        fi
        [[ -n "$found" ]] || et_kl_die "$elf needs $n ($t), found in none of: ${dirs[*]} $(default_lib_dirs "$t" | tr '\n' ' ')"
        put_file "$found" "$dest"
        put_libs_foreign "$found" "$dest" "$exe_rpath"
    done < <(sed -n 's/.*(NEEDED).*Shared library: \[\(.*\)\]$/\1/p' <<<"$dyn")
}

# Copies host file or directory SRC to guest DEST, with the libraries of the
# ELF files in it.
put_payload() {
    local src="$1" dest="$2" f rel
    [[ -e "$src" ]] || et_kl_die "no such file: $src"
    check_guest_dest "$dest"
    if [[ -d "$src" ]]; then
        mkdir -p "$root$dest"
        cp -a -L "$src/." "$root$dest/" || et_kl_die "cannot copy $src into the initramfs"
        while IFS= read -r -d '' f; do
            rel="${f#"$src"}"
            copied[$dest$rel]=1
            if is_elf "$f"; then put_libs "$f" "$dest$rel" in-dir; fi
        done < <(find -L "$src" -type f -print0)
    else
        put_file "$src" "$dest"
        if is_elf "$src"; then put_libs "$src" "$dest"; fi
    fi
}

[[ -f "$binary" ]] || et_kl_die "BINARY '$binary' is not a file"
[[ -x "$binary" ]] || et_kl_die "BINARY '$binary' is not executable"
guest_binary="$(abs_path "$binary")"
put_payload "$binary" "$guest_binary"
for spec in "${files[@]}"; do
    src="${spec%%:*}"
    if [[ "$spec" == *:* ]]; then dest="${spec#*:}"; else dest="$(abs_path "$src")"; fi
    put_payload "$src" "$dest"
done

if [[ "$ET_KL_ARCH" == x86_64 ]]; then
    # util-linux setpriv: busybox's setpriv has no --reuid/--regid, which tests
    # need to drop to uid 65534 and check EACCES.
    setpriv_host="$(command -v setpriv || true)"
    if [[ -n "$setpriv_host" ]] && ! [[ "$(readlink -f "$setpriv_host")" == "$(readlink -f "$ET_KL_BUSYBOX")" ]]; then
        put_payload "$setpriv_host" /usr/bin/setpriv
    else
        et_kl_log "warning: util-linux setpriv not found; the guest has only busybox's (no --reuid)"
    fi

    # The host's /bin/sh (dash on Debian) is the guest's too, for system() and
    # popen(): busybox ash runs its own applets before searching PATH, so it would
    # pick busybox setpriv over util-linux's.
    if [[ -x /bin/sh && "$(readlink -f /bin/sh)" != "$(readlink -f "$ET_KL_BUSYBOX")" ]]; then
        put_payload /bin/sh /bin/sh
    fi
    put_file "$ET_KL_BUSYBOX" /bin/busybox
    while IFS= read -r applet; do
        [[ "$applet" == busybox || -e "$root/bin/$applet" ]] || ln -s busybox "$root/bin/$applet"
    done < <("$ET_KL_BUSYBOX" --list)
else
    # The same tools from Debian's arm64 packages (setup.sh --arch unpacks
    # them). The arm64 busybox cannot run here to list its applets: the
    # guest's init links them at boot (busybox --install -s, which leaves
    # /bin/sh alone).
    for tool in "$ET_KL_USERLAND/usr/bin/setpriv:/usr/bin/setpriv" "$ET_KL_USERLAND/bin/dash:/bin/sh"; do
        [[ -x "${tool%%:*}" ]] || et_kl_die "${tool%%:*} missing (run $ET_KL_SETUP)"
        put_payload "${tool%%:*}" "${tool#*:}"
    done
    put_file "$ET_KL_BUSYBOX" /bin/busybox
fi
[[ -e "$root/sbin" ]] || ln -s bin "$root/sbin"

# Quotes $1 for sh as one word.
sh_quote() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

# --- kernel modules (--modules) ---------------------------------------------------
# The dependencies come from the modules.dep that setup.sh generated with
# depmod; each module goes into the guest decompressed (busybox insmod takes
# plain .ko files), at /lib/modules/<release>/<its path in modules.dep>, and
# the guest's init loads them dependencies first.

# Sets mod_name to the name of a module from its path: basename without
# .ko[.xz|.zst|.gz], with '-' as '_' (the kernel treats both alike). No
# subshell: it runs once per line of modules.dep (thousands).
module_name() {
    mod_name="${1##*/}"
    mod_name="${mod_name%%.ko*}"
    mod_name="${mod_name//-/_}"
}

module_lines=()
if ((${#modules[@]})); then
    moddir="$(et_kl_modules_dir "$kernel")"
    release="${moddir%/}"
    release="${release##*/}"
    declare -A mod_rel=() mod_deps=() mod_state=() builtin=()
    while IFS= read -r line; do
        rel="${line%%:*}"
        module_name "$rel"
        mod_rel[$mod_name]="$rel"
        mod_deps[$mod_name]="${line#*:}"
    done <"$moddir/modules.dep"
    if [[ -r "$moddir/modules.builtin" ]]; then
        while IFS= read -r line; do
            module_name "$line"
            builtin[$mod_name]=1
        done <"$moddir/modules.builtin"
    fi
    mod_order=()
    # Depth first: every module after the modules it depends on.
    visit_module() {
        local n="$1" d
        case "${mod_state[$n]:-}" in
            loaded) return 0 ;;
            visiting) et_kl_die "--modules: $moddir/modules.dep has a dependency cycle through $n" ;;
        esac
        mod_state[$n]=visiting
        # shellcheck disable=SC2086 # a space-separated list of paths
        for d in ${mod_deps[$n]}; do
            module_name "$d"
            visit_module "$mod_name"
        done
        mod_state[$n]=loaded
        mod_order+=("$n")
    }
    for n in "${modules[@]}"; do
        n="${n//-/_}"
        if [[ -n "${mod_rel[$n]:-}" ]]; then
            visit_module "$n"
        elif [[ -n "${builtin[$n]:-}" ]]; then
            et_kl_log "--modules: $n is built into the kernel; nothing to load (its NAME.PARAM=VALUE arguments reach it from the command line)"
        else
            et_kl_die "--modules: no module $n in $moddir/modules.dep (nor built in)"
        fi
    done
    # NAME.PARAM=VALUE words of the kernel command line, per module.
    declare -A mod_params=()
    for a in "${kernel_args[@]}"; do
        for w in $a; do
            [[ "$w" == *.*=* ]] || continue
            n="${w%%.*}"
            n="${n//-/_}"
            mod_params[$n]+=" $(sh_quote "${w#*.}")"
        done
    done
    for n in "${mod_order[@]}"; do
        rel="${mod_rel[$n]}"
        src="$moddir/$rel"
        dest="/lib/modules/$release/${rel%.ko*}.ko"
        mkdir -p "$root$(dirname "$dest")"
        case "$rel" in
            *.ko) cp "$src" "$root$dest" ;;
            *.ko.xz) xz -dc "$src" >"$root$dest" ;;
            *.ko.zst) zstd -q -dc "$src" >"$root$dest" ;;
            *.ko.gz) gzip -dc "$src" >"$root$dest" ;;
            *) false ;;
        esac || et_kl_die "--modules: cannot copy or decompress $src"
        module_lines+=("    et_insmod $(sh_quote "$n") $(sh_quote "$dest")${mod_params[$n]:-}")
    done
    et_kl_log "--modules ${modules[*]}: ${#mod_order[@]} modules from $moddir ($(du -sk "$root/lib/modules" | cut -f1) KiB decompressed): ${mod_order[*]}"
fi
cp "$here/guest-init.sh" "$root/init"
chmod 0755 "$root/init"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$root/etc/passwd"
printf 'root:x:0:\ntty:x:5:\nnogroup:x:65534:\n' >"$root/etc/group"

{
    echo "# Generated by run-in-vm.sh"
    printf 'ET_CWD=%s\n' "$(sh_quote "${cwd:-$(dirname "$guest_binary")}")"
    printf 'ET_DMESG=%s\n' "$dmesg"
    printf 'ET_COLLECT_COUNT=%s\n' "${#collects[@]}"
    printf 'ET_MODULE_COUNT=%s\n' "${#module_lines[@]}"
    # Loads the --modules in dependency order (et_insmod: guest-init.sh).
    echo "et_load_modules() {"
    echo "    :"
    for l in "${module_lines[@]}"; do printf '%s || return 1\n' "$l"; done
    echo "}"
    for i in "${!collects[@]}"; do
        printf 'ET_COLLECT_%s=%s\n' "$i" "$(sh_quote "${collects[$i]%%:*}")"
    done
    # A subshell, so --env reaches only the binary.
    echo "et_run() ("
    for e in "${envs[@]}"; do
        printf '    export %s=%s\n' "${e%%=*}" "$(sh_quote "${e#*=}")"
    done
    printf '    exec %s' "$(sh_quote "$guest_binary")"
    for a in "${binary_args[@]}"; do printf ' %s' "$(sh_quote "$a")"; done
    printf '\n)\n'
} >"$root/.et-lane/config.sh"

initrd="$work/initramfs.cpio"
(cd "$root" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc -R 0:0 --quiet) >"$initrd" ||
    et_kl_die "cpio failed"

# --- boot --------------------------------------------------------------------------

cmdline="console=$ET_KL_CONSOLE quiet panic=-1"
for a in "${kernel_args[@]}"; do cmdline+=" $a"; done
log="$work/serial.log"
et_kl_log "booting $(cat "$(dirname "$kernel")/package" 2>/dev/null || echo "$kernel") with $(et_kl_qemu_version_line | sed 's/ (.*//') (TCG, ${memory_mib} MiB, $smp vCPUs, timeout ${timeout_s} s), initramfs $(($(stat -c %s "$initrd") / 1024)) KiB"
et_kl_log "kernel command line: $cmdline"

# Prints the binary's lines (between the BEGIN and EXIT markers) as they come,
# and notes when BEGIN arrived. Reads to the end so tee never gets SIGPIPE.
stream_guest_output() {
    local state=0 line
    while IFS= read -r line || [[ -n "$line" ]]; do
        case "$state" in
            0)
                if [[ "$line" == *ET_KERNEL_LANE_BEGIN* ]]; then
                    printf '%s\n' "$EPOCHREALTIME" >"$work/begin.time"
                    state=1
                fi
                ;;
            1)
                if [[ "$line" =~ ^(.*)ET_KERNEL_LANE_EXIT=[0-9]+ ]]; then
                    # The binary's last line may lack its newline.
                    [[ -n "${BASH_REMATCH[1]}" ]] && printf '%s\n' "${BASH_REMATCH[1]}"
                    state=2
                else
                    printf '%s\n' "$line" 2>/dev/null || true
                fi
                ;;
        esac
    done
}

start="$EPOCHREALTIME"
set +e
LC_ALL=C timeout -k 5 "$timeout_s" "$ET_KL_QEMU" \
    "${ET_KL_QEMU_MACHINE[@]}" -accel tcg -m "$memory_mib" -smp "$smp" -nographic -no-reboot -nic none \
    -kernel "$kernel" -initrd "$initrd" -append "$cmdline" </dev/null 2>"$work/qemu.err" |
    LC_ALL=C sed -u \
        -e 's/\r//g' \
        -e 's/\x1b\[[0-?]*[ -/]*[@-~]//g' \
        -e 's/\x1b\][^\x07]*\x07//g' \
        -e 's/\x1b[ -/]*[0-~]//g' \
        -e 's/[\x01-\x08\x0b-\x1f\x7f]//g' |
    tee "$log" | stream_guest_output
statuses=("${PIPESTATUS[@]}")
set -e
end="$EPOCHREALTIME"
qemu_status="${statuses[0]}"

elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
show_log_tail() {
    et_kl_log "last lines of the serial console (full log: ${ET_KERNEL_LANE_KEEP:+$log}${ET_KERNEL_LANE_KEEP:-set ET_KERNEL_LANE_KEEP=1 to keep it}):"
    tail -n 40 "$log" | sed 's/^/    | /' >&2
}

if [[ -s "$work/qemu.err" ]]; then
    sed "s/^/$et_kl_prog: qemu: /" "$work/qemu.err" >&2
fi
marker="$(grep -a -o 'ET_KERNEL_LANE_EXIT=[0-9]*' "$log" | tail -n 1 || true)"
if ((qemu_status == 124 || qemu_status == 137)) && [[ -z "$marker" ]]; then
    show_log_tail
    et_kl_die "timed out after ${timeout_s} s without the exit marker (guest hung or too slow; raise --timeout)"
fi
if [[ -z "$marker" ]]; then
    show_log_tail
    if ! grep -aq ET_KERNEL_LANE_BEGIN "$log"; then
        et_kl_die "the guest never started the binary (QEMU exit status $qemu_status); see the console above"
    fi
    et_kl_die "the guest printed no ET_KERNEL_LANE_EXIT marker (QEMU exit status $qemu_status)"
fi
rc="${marker#ET_KERNEL_LANE_EXIT=}"
grep -a -o 'ET_KERNEL_LANE_INIT_ERROR.*' "$log" | sed "s/^/$et_kl_prog: guest init: /" >&2 || true

modules_failed=0
if ((${#module_lines[@]})); then
    # Not anchored: the line may follow other console output without a newline.
    loaded="$(grep -a -o -m1 'ET_KERNEL_LANE_MODULES_LOADED [0-9]* [0-9.]* [0-9.]*' "$log" || true)"
    if [[ -n "$loaded" ]]; then
        read -r _ n t0 t1 <<<"$loaded"
        et_kl_log "the guest loaded $n modules in $(elapsed "$t0" "$t1") s"
    else
        grep -a -o 'ET_KERNEL_LANE_MODULE_ERROR .*' "$log" | sed "s/^ET_KERNEL_LANE_MODULE_ERROR /$et_kl_prog: error: guest module: /" >&2 || true
        show_log_tail
        et_kl_log "error: --modules ${modules[*]}: the guest did not load every module (the binary ran without them)"
        modules_failed=1
    fi
fi

if grep -aq '^ET_KERNEL_LANE_DMESG_BEGIN' "$log"; then
    if ((dmesg)); then et_kl_log "guest kernel log:"; else et_kl_log "guest kernel log (the binary exited with $rc):"; fi
    awk '/^ET_KERNEL_LANE_DMESG_END$/ { p = 0 } p { print "    | " $0 } /^ET_KERNEL_LANE_DMESG_BEGIN$/ { p = 1 }' "$log" >&2
fi

collect_failed=0
for i in "${!collects[@]}"; do
    spec="${collects[$i]}"
    guest_path="${spec%%:*}"
    if [[ "$spec" == *:* ]]; then host_path="${spec#*:}"; else host_path="$guest_path"; fi
    if grep -aqx "ET_KERNEL_LANE_FILE_MISSING $i" "$log"; then
        et_kl_log "warning: --collect: the guest has no $guest_path"
        continue
    fi
    if ! grep -aqx "ET_KERNEL_LANE_FILE_END $i" "$log"; then
        et_kl_log "error: --collect: $guest_path did not come back complete"
        collect_failed=1
        continue
    fi
    mkdir -p "$(dirname "$host_path")"
    if awk -v i="$i" '$0 == "ET_KERNEL_LANE_FILE_END " i { p = 0 } p { print } $0 == "ET_KERNEL_LANE_FILE_BEGIN " i { p = 1 }' "$log" |
        base64 -d >"$host_path"; then
        et_kl_log "collected $guest_path -> $host_path"
    else
        et_kl_log "error: --collect: $guest_path came back corrupted"
        collect_failed=1
    fi
done

if ((qemu_status != 0)); then
    et_kl_log "warning: QEMU exited with status $qemu_status after the guest reported its exit code"
fi
boot_note=""
if [[ -s "$work/begin.time" ]]; then
    boot_note="boot $(elapsed "$start" "$(cat "$work/begin.time")") s, "
fi
et_kl_log "guest exit code $rc (${boot_note}total $(elapsed "$start" "$end") s)"
if ((rc == 0 && (collect_failed || modules_failed))); then
    exit 1
fi
exit "$rc"
