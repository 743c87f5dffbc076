# shellcheck shell=bash disable=SC2034
# Shared helpers for the kernel lane (sourced by setup.sh, run-in-vm.sh and
# selftest.sh; not executable on its own).

# The QEMU major version the lane requires. Bookworm's QEMU 7.2 crashed in
# 20-40 % of TCG boots of the 6.12 kernel; 10.x from backports crashed in none.
ET_KL_MIN_QEMU_MAJOR=10

ET_KL_CACHE="${ET_KERNEL_LANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edgetensor-kernel-lane}"
ET_KL_QEMU="${ET_KERNEL_LANE_QEMU:-qemu-system-x86_64}"
ET_KL_BUSYBOX="${ET_KERNEL_LANE_BUSYBOX:-/bin/busybox}"
# The metapackage whose current dependency names the kernel image we boot.
ET_KL_KERNEL_META="${ET_KERNEL_LANE_KERNEL_PACKAGE:-linux-image-cloud-amd64}"
# Kernel options the lane exists for; setup.sh refuses a kernel without them.
ET_KL_REQUIRED_CONFIG=(
    CONFIG_BLK_DEV_INITRD
    CONFIG_DEVTMPFS
    CONFIG_TMPFS
    CONFIG_SERIAL_8250_CONSOLE
    CONFIG_DMABUF_HEAPS
    CONFIG_DMABUF_HEAPS_SYSTEM
    CONFIG_UDMABUF
    CONFIG_MEMFD_CREATE
)

et_kl_prog="${0##*/}"

et_kl_log() { printf '%s: %s\n' "$et_kl_prog" "$*" >&2; }
et_kl_die() { printf '%s: error: %s\n' "$et_kl_prog" "$*" >&2; exit 1; }

# True when running under CI. Any non-empty CI value except "false"/"0" counts,
# which matches what GitHub Actions, GitLab CI and others export.
et_kl_in_ci() {
    case "${CI:-}" in
        "" | false | 0) return 1 ;;
        *) return 0 ;;
    esac
}

# Prints the major version of $ET_KL_QEMU, or nothing if it is not runnable.
et_kl_qemu_major() {
    local line
    line="$("$ET_KL_QEMU" --version 2>/dev/null | head -n 1)" || return 0
    # "QEMU emulator version 10.0.2 (Debian 1:10.0.2+ds-2+deb13u1~bpo12+1)"
    if [[ "$line" =~ version\ ([0-9]+)\. ]]; then
        printf '%s\n' "${BASH_REMATCH[1]}"
    fi
}

et_kl_qemu_version_line() {
    "$ET_KL_QEMU" --version 2>/dev/null | head -n 1 || true
}

# Prints why QEMU is unusable, or nothing when it is fine.
et_kl_qemu_problem() {
    local major
    if ! command -v "$ET_KL_QEMU" >/dev/null 2>&1; then
        printf '%s not found (run tests/kernel/setup.sh)\n' "$ET_KL_QEMU"
        return 0
    fi
    major="$(et_kl_qemu_major)"
    if [[ -z "$major" ]]; then
        printf '%s --version gave no version\n' "$ET_KL_QEMU"
    elif ((major < ET_KL_MIN_QEMU_MAJOR)); then
        printf '%s is "%s", older than %s (QEMU < 10 crashes in TCG boots of the 6.12 kernel; run tests/kernel/setup.sh)\n' \
            "$ET_KL_QEMU" "$(et_kl_qemu_version_line)" "$ET_KL_MIN_QEMU_MAJOR"
    fi
}

# The kernel image to boot: $ET_KERNEL_LANE_KERNEL, or the one setup.sh cached.
et_kl_kernel_path() {
    if [[ -n "${ET_KERNEL_LANE_KERNEL:-}" ]]; then
        printf '%s\n' "$ET_KERNEL_LANE_KERNEL"
    else
        printf '%s\n' "$ET_KL_CACHE/kernel/current/vmlinuz"
    fi
}

# Checks that a kernel config file has every option of ET_KL_REQUIRED_CONFIG
# built in (=y); prints the missing ones and fails otherwise.
et_kl_check_kernel_config() {
    local config="$1" opt missing=()
    for opt in "${ET_KL_REQUIRED_CONFIG[@]}"; do
        grep -qx "$opt=y" "$config" || missing+=("$opt")
    done
    if ((${#missing[@]})); then
        printf '%s\n' "${missing[@]}"
        return 1
    fi
}
