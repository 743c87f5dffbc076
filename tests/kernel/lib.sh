# shellcheck shell=bash disable=SC2034
# Shared helpers for the kernel lane (sourced by setup.sh, run-in-vm.sh and
# selftest.sh; not executable on its own).

# The QEMU major version the lane requires. Bookworm's QEMU 7.2 crashed in
# 20-40 % of TCG boots of the 6.12 kernel; 10.x from backports crashed in none.
ET_KL_MIN_QEMU_MAJOR=10

ET_KL_CACHE="${ET_KERNEL_LANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/edgetensor-kernel-lane}"
# Kernel options the lane exists for, on every architecture; setup.sh refuses a
# kernel without them (et_kl_set_arch adds the architecture's console and page size).
ET_KL_COMMON_CONFIG=(
    CONFIG_BLK_DEV_INITRD
    CONFIG_DEVTMPFS
    CONFIG_TMPFS
    CONFIG_DMABUF_HEAPS
    CONFIG_DMABUF_HEAPS_SYSTEM
    CONFIG_UDMABUF
    CONFIG_MEMFD_CREATE
    CONFIG_SYNC_FILE
)

# Selects the guest architecture (the lane's "arch"): sets the QEMU binary and
# machine, the console, the kernel cache directory, the busybox to use and the
# required kernel options. Called by this file with $ET_KERNEL_LANE_ARCH
# (default x86_64) and again by scripts that take --arch.
#   x86_64     Debian's generic linux-image-amd64 from backports (with its modules:
#              vivid for the V4L2 lane), qemu-system-x86_64
#   arm64      a kernel built from Debian's linux-source (4 KiB pages), qemu-system-aarch64 -M virt
#   arm64-16k  the same with 16 KiB pages (CONFIG_ARM64_16K_PAGES)
et_kl_set_arch() {
    ET_KL_ARCH="$1"
    # The command that prepares this arch (for error messages).
    ET_KL_SETUP="tests/kernel/setup.sh --arch $1"
    [[ "$1" == x86_64 ]] && ET_KL_SETUP=tests/kernel/setup.sh
    case "$ET_KL_ARCH" in
        x86_64)
            ET_KL_QEMU="${ET_KERNEL_LANE_QEMU:-qemu-system-x86_64}"
            ET_KL_QEMU_PACKAGE=qemu-system-x86
            ET_KL_QEMU_MACHINE=()
            ET_KL_CONSOLE=ttyS0
            ET_KL_BUSYBOX="${ET_KERNEL_LANE_BUSYBOX:-/bin/busybox}"
            # The metapackage whose current dependency names the kernel image we boot.
            # The generic flavour, not the cloud one: only it has the media drivers
            # (vivid) as modules.
            ET_KL_KERNEL_META="${ET_KERNEL_LANE_KERNEL_PACKAGE:-linux-image-amd64}"
            # The x86 lane's cache layout predates the other architectures.
            ET_KL_KERNEL_ROOT="$ET_KL_CACHE/kernel"
            ET_KL_REQUIRED_CONFIG=("${ET_KL_COMMON_CONFIG[@]}" CONFIG_SERIAL_8250_CONSOLE CONFIG_MODULES)
            # OPTION:module pairs the kernel must have built in or as a module:
            # the virtual camera of the V4L2 lane (v4l2_lane.sh), loaded with
            # run-in-vm.sh --modules vivid; vgem, the source of real fences for
            # the explicit-sync tests (dmabuf_lane.sh, --modules vgem).
            ET_KL_REQUIRED_MODULE_CONFIG=(CONFIG_VIDEO_VIVID:vivid CONFIG_DRM_VGEM:vgem)
            ;;
        arm64 | arm64-16k)
            ET_KL_QEMU="${ET_KERNEL_LANE_QEMU:-qemu-system-aarch64}"
            ET_KL_QEMU_PACKAGE=qemu-system-arm
            # -cpu max: the only QEMU CPU with both 16 KiB pages and AArch32 EL0
            # (armhf binaries); pauth-impdef: QEMU's cheap pointer-auth hash,
            # much faster under TCG than the architected one (QEMU docs,
            # "A-profile CPU architecture support", pauth-impdef).
            # shellcheck disable=SC2054 # the comma belongs to QEMU's -cpu value
            ET_KL_QEMU_MACHINE=(-M virt -cpu max,pauth-impdef=on)
            ET_KL_CONSOLE=ttyAMA0
            # busybox-static, dash and setpriv from Debian's arm64 packages.
            ET_KL_USERLAND="$ET_KL_CACHE/arm64-userland"
            ET_KL_BUSYBOX="${ET_KERNEL_LANE_BUSYBOX:-$ET_KL_USERLAND/bin/busybox}"
            # The source package setup.sh builds the kernel from (Debian ships
            # no arm64 image with DMA-BUF heaps; see README.md).
            ET_KL_KERNEL_META="${ET_KERNEL_LANE_KERNEL_PACKAGE:-linux-source}"
            ET_KL_KERNEL_ROOT="$ET_KL_CACHE/$ET_KL_ARCH/kernel"
            ET_KL_REQUIRED_CONFIG=("${ET_KL_COMMON_CONFIG[@]}" CONFIG_SERIAL_AMBA_PL011_CONSOLE)
            ET_KL_REQUIRED_MODULE_CONFIG=()
            if [[ "$ET_KL_ARCH" == arm64-16k ]]; then
                ET_KL_REQUIRED_CONFIG+=(CONFIG_ARM64_16K_PAGES)
            else
                ET_KL_REQUIRED_CONFIG+=(CONFIG_ARM64_4K_PAGES)
            fi
            ;;
        *)
            printf '%s: error: unknown kernel lane arch "%s" (x86_64, arm64 or arm64-16k)\n' "${0##*/}" "$ET_KL_ARCH" >&2
            exit 1
            ;;
    esac
}
et_kl_set_arch "${ET_KERNEL_LANE_ARCH:-x86_64}"

et_kl_prog="${0##*/}"

et_kl_log() { printf '%s: %s\n' "$et_kl_prog" "$*" >&2; }
et_kl_die() { printf '%s: error: %s\n' "$et_kl_prog" "$*" >&2; exit 1; }

# The vivid lanes' command line, "[--skip-if-unavailable] BUILD_DIR": sets et_kl_skip (an array holding that
# flag for run-in-vm.sh, or nothing) and et_kl_build (BUILD_DIR, absolute); dies with `usage` otherwise.
et_kl_parse_build_args() {
    local usage="$1"
    shift
    et_kl_skip=()
    while (($#)); do
        case "$1" in
            --skip-if-unavailable) et_kl_skip=(--skip-if-unavailable) ;;
            -*) et_kl_die "$usage" ;;
            *) break ;;
        esac
        shift
    done
    (($# == 1)) || et_kl_die "$usage"
    et_kl_build="$(cd "$1" && pwd)"
}

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
        printf '%s not found (run %s)\n' "$ET_KL_QEMU" "$ET_KL_SETUP"
        return 0
    fi
    major="$(et_kl_qemu_major)"
    if [[ -z "$major" ]]; then
        printf '%s --version gave no version\n' "$ET_KL_QEMU"
    elif ((major < ET_KL_MIN_QEMU_MAJOR)); then
        printf '%s is "%s", older than %s (QEMU < 10 crashes in TCG boots of the 6.12 kernel; run %s)\n' \
            "$ET_KL_QEMU" "$(et_kl_qemu_version_line)" "$ET_KL_MIN_QEMU_MAJOR" "$ET_KL_SETUP"
    fi
}

# The kernel image to boot: $ET_KERNEL_LANE_KERNEL, or the one setup.sh cached
# for the current arch.
et_kl_kernel_path() {
    if [[ -n "${ET_KERNEL_LANE_KERNEL:-}" ]]; then
        printf '%s\n' "$ET_KERNEL_LANE_KERNEL"
    else
        printf '%s\n' "$ET_KL_KERNEL_ROOT/current/vmlinuz"
    fi
}

# Checks that a kernel config file has every option of ET_KL_REQUIRED_CONFIG
# built in (=y) and every option of ET_KL_REQUIRED_MODULE_CONFIG (OPTION:module)
# built in or as a module (=y or =m); prints the missing ones and fails otherwise.
et_kl_check_kernel_config() {
    local config="$1" opt missing=()
    for opt in "${ET_KL_REQUIRED_CONFIG[@]}"; do
        grep -qx "$opt=y" "$config" || missing+=("$opt")
    done
    for opt in "${ET_KL_REQUIRED_MODULE_CONFIG[@]}"; do
        grep -qxE "${opt%%:*}=[ym]" "$config" || missing+=("${opt%%:*} (=y or =m)")
    done
    if ((${#missing[@]})); then
        printf '%s\n' "${missing[@]}"
        return 1
    fi
}

# The module directory of the kernel $1 (an image path): $ET_KERNEL_LANE_MODULES
# when set, else the one directory lib/modules/<release> next to the image that
# holds a modules.dep (setup.sh generates it with depmod). Prints nothing when
# there is none.
et_kl_modules_dir() {
    local d found=()
    if [[ -n "${ET_KERNEL_LANE_MODULES:-}" ]]; then
        printf '%s\n' "$ET_KERNEL_LANE_MODULES"
        return 0
    fi
    for d in "$(dirname "$1")"/lib/modules/*/; do
        [[ -s "$d/modules.dep" ]] && found+=("${d%/}")
    done
    ((${#found[@]} == 1)) && printf '%s\n' "${found[0]}"
    return 0
}

# Checks one gtest run of a lane: exit code 0, "[  PASSED  ] N tests." for the N tests the filter
# selects, no skipped or failed test, and a gtest XML report that agrees (N tests, nothing failed,
# errored, disabled or skipped). N comes from LISTED's --gtest_list_tests when NATIVE is 1 (the
# binary runs here), from the report otherwise. Returns 2 when run-in-vm.sh skipped the lane; dies
# on anything else that is not a full pass.
# usage: et_kl_check_gtest_run NAME RC OUTPUT_LOG FILTER XML LISTED NATIVE
et_kl_check_gtest_run() {
    local name="$1" rc="$2" out="$3" filter="$4" xml="$5" listed="$6" native="$7" expected passed header attr
    if grep -q 'kernel lane skipped:' "$out"; then
        et_kl_log "$name: $(grep 'kernel lane skipped:' "$out")"
        return 2
    fi
    ((rc == 0)) || et_kl_die "$name: exit code $rc"
    [[ -s "$xml" ]] || et_kl_die "$name: no gtest XML report came back from the guest"
    header="$(grep -m1 -o '<testsuites [^>]*>' "$xml")" || et_kl_die "$name: $xml has no <testsuites> element"
    [[ "$header" =~ \ tests=\"([0-9]+)\" ]] || et_kl_die "$name: $xml: no tests count in $header"
    if ((native)); then
        expected="$("$listed" --gtest_list_tests --gtest_filter="$filter" | grep -c '^  ')"
        [[ "${BASH_REMATCH[1]}" == "$expected" ]] ||
            et_kl_die "$name: the XML report counts ${BASH_REMATCH[1]} tests, the host lists $expected"
    else
        expected="${BASH_REMATCH[1]}"
    fi
    ((expected > 0)) || et_kl_die "$name: the filter '$filter' selects no test"
    for attr in failures errors disabled; do
        [[ "$header" == *" $attr=\"0\""* ]] || et_kl_die "$name: the XML report says $header"
    done
    if grep -q 'result="skipped"\|<skipped' "$xml"; then et_kl_die "$name: the XML report lists skipped tests"; fi
    passed="$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\?\..*/\1/p' "$out" | tail -n 1)"
    [[ "$passed" == "$expected" ]] || et_kl_die "$name: $passed of $expected tests passed"
    if grep -q '^\[  SKIPPED \]' "$out"; then et_kl_die "$name: tests were skipped (a skip is a failure here)"; fi
    if grep -q '^\[  FAILED  \]' "$out"; then et_kl_die "$name: tests failed"; fi
    et_kl_log "$name: $passed/$expected passed, 0 skipped"
}
