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
initramfs holding busybox, BINARY and the libraries ldd lists for it, runs
BINARY ARGS... as root, streams its output and exits with its exit code.
Files keep their host paths in the guest; BINARY runs in its own directory.

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
  --dmesg                print the guest's kernel log to stderr afterwards
  --skip-if-unavailable  if QEMU or the kernel is missing, print "kernel lane
                         skipped: <reason>" and exit 0 (never under CI)
  -h, --help             this text

The guest has util-linux setpriv (/usr/bin/setpriv) for dropping privileges,
e.g. setpriv --reuid=65534 --regid=65534 --clear-groups CMD, and the host's
/bin/sh (dash) as /bin/sh; the other tools are busybox applets.
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
skip_if_unavailable=0

need_arg() { (($# >= 2)) || { usage >&2; et_kl_die "$1 needs an argument"; }; }
while (($#)); do
    case "$1" in
        --kernel-args) need_arg "$@"; kernel_args+=("$2"); shift ;;
        --timeout) need_arg "$@"; timeout_s="$2"; shift ;;
        --file) need_arg "$@"; files+=("$2"); shift ;;
        --env) need_arg "$@"; envs+=("$2"); shift ;;
        --collect) need_arg "$@"; collects+=("$2"); shift ;;
        --cwd) need_arg "$@"; cwd="$2"; shift ;;
        --dmesg) dmesg=1 ;;
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
    unavailable="no kernel image at $kernel (run tests/kernel/setup.sh)"
elif [[ ! -x "$ET_KL_BUSYBOX" ]]; then
    unavailable="$ET_KL_BUSYBOX missing (run tests/kernel/setup.sh)"
elif ! command -v cpio >/dev/null 2>&1; then
    unavailable="cpio missing (run tests/kernel/setup.sh)"
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
if ldd "$ET_KL_BUSYBOX" >/dev/null 2>&1; then
    et_kl_die "$ET_KL_BUSYBOX is dynamically linked; install busybox-static"
fi

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

# Copies the shared libraries and dynamic loader of ELF file $1 to their host
# paths, which is where the guest's loader will look for them.
put_libs() {
    local elf="$1" out line lib
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
            if is_elf "$f"; then put_libs "$f"; fi
        done < <(find -L "$src" -type f -print0)
    else
        put_file "$src" "$dest"
        if is_elf "$src"; then put_libs "$src"; fi
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
[[ -e "$root/sbin" ]] || ln -s bin "$root/sbin"
cp "$here/guest-init.sh" "$root/init"
chmod 0755 "$root/init"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$root/etc/passwd"
printf 'root:x:0:\ntty:x:5:\nnogroup:x:65534:\n' >"$root/etc/group"

# Quotes $1 for sh as one word.
sh_quote() { printf "'%s'" "${1//\'/\'\\\'\'}"; }
{
    echo "# Generated by run-in-vm.sh"
    printf 'ET_CWD=%s\n' "$(sh_quote "${cwd:-$(dirname "$guest_binary")}")"
    printf 'ET_DMESG=%s\n' "$dmesg"
    printf 'ET_COLLECT_COUNT=%s\n' "${#collects[@]}"
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

cmdline="console=ttyS0 quiet panic=-1"
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
    -accel tcg -m "$memory_mib" -smp "$smp" -nographic -no-reboot -nic none \
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
if grep -aq '^ET_KERNEL_LANE_INIT_ERROR' "$log"; then
    grep -a '^ET_KERNEL_LANE_INIT_ERROR' "$log" | sed "s/^/$et_kl_prog: guest init: /" >&2
fi

if ((dmesg)); then
    et_kl_log "guest kernel log:"
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
if ((rc == 0 && collect_failed)); then
    exit 1
fi
exit "$rc"
