#!/bin/busybox sh
# shellcheck shell=dash
# PID 1 of the kernel-lane guest (copied to /init of the initramfs by
# run-in-vm.sh; runs under busybox sh, not bash).
#
# Mounts the pseudo filesystems, runs the command that run-in-vm.sh wrote into
# /.et-lane/config.sh, prints the marker lines the host parses, then powers
# off. Every line the host looks for starts with ET_KERNEL_LANE_.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# Foreign-architecture initramfs images carry busybox without its applet links
# (the host cannot run it to list them): make them now. Existing files, such
# as /bin/sh (dash), are left alone.
[ -e /bin/mount ] || /bin/busybox --install -s /bin
export HOME=/root
umask 022

fail() { echo "ET_KERNEL_LANE_INIT_ERROR: $*"; }

mount -t proc -o nosuid,nodev,noexec proc /proc || fail "mount /proc"
mount -t sysfs -o nosuid,nodev,noexec sysfs /sys || fail "mount /sys"
mount -t devtmpfs -o nosuid,mode=0755 devtmpfs /dev || fail "mount /dev"
# Only KERN_EMERG (a panic) reaches the console from here on: a kernel message
# printed while a marker line or a collected file goes out can land inside that
# line (an RCU stall report on a loaded host did, in CI) and break what the host
# parses. The kernel log is printed whole, between markers, after a failure or
# with --dmesg.
echo 1 >/proc/sys/kernel/printk || fail "set the console log level"
# The kernel may have started us without a console (/dev was empty).
exec </dev/console >/dev/console 2>&1
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
mkdir -p /dev/shm /dev/pts
mount -t devpts -o nosuid,noexec,gid=5,mode=0620,ptmxmode=0666 devpts /dev/pts || fail "mount /dev/pts"
mount -t tmpfs -o nosuid,nodev,mode=1777 tmpfs /dev/shm || fail "mount /dev/shm"
# Payload files may live under /tmp (a build tree there): carry them into the
# new tmpfs instead of hiding them under it.
mkdir -p /tmp /.et-lane/tmp
mount -t tmpfs -o nosuid,nodev,mode=1777 tmpfs /.et-lane/tmp || fail "mount tmpfs for /tmp"
cp -a /tmp/. /.et-lane/tmp/ || fail "copy payload into /tmp"
mount -o move /.et-lane/tmp /tmp || fail "move tmpfs to /tmp"
hostname et-kernel-lane

# Loads one module: et_insmod NAME FILE [PARAM=VALUE...] (busybox insmod takes
# the decompressed .ko that run-in-vm.sh put there). On failure it prints
# ET_KERNEL_LANE_MODULE_ERROR, which fails the run on the host.
et_insmod() {
    et_mod="$1"
    shift
    if ! et_out="$(insmod "$@" 2>&1)"; then
        echo "ET_KERNEL_LANE_MODULE_ERROR $et_mod: insmod $*: $et_out"
        return 1
    fi
}

# Defines ET_CWD, ET_DMESG, ET_COLLECT_COUNT, ET_COLLECT_<i>, ET_MODULE_COUNT,
# et_load_modules and et_run.
# shellcheck source=/dev/null
. /.et-lane/config.sh || fail "read /.et-lane/config.sh"

# --modules: load them before the binary starts; the host reads the guest's
# uptime before and after (seconds) from the marker.
if [ "${ET_MODULE_COUNT:-0}" -gt 0 ]; then
    read -r et_t0 _ </proc/uptime
    if et_load_modules; then
        read -r et_t1 _ </proc/uptime
        echo "ET_KERNEL_LANE_MODULES_LOADED $ET_MODULE_COUNT $et_t0 $et_t1"
    fi
fi

cd "$ET_CWD" || fail "cd $ET_CWD"
echo "ET_KERNEL_LANE_BEGIN"
et_run
rc=$?
echo "ET_KERNEL_LANE_EXIT=$rc"

i=0
path=""
while [ "$i" -lt "${ET_COLLECT_COUNT:-0}" ]; do
    eval "path=\$ET_COLLECT_$i"
    if [ -f "$path" ]; then
        echo "ET_KERNEL_LANE_FILE_BEGIN $i"
        base64 <"$path"
        echo "ET_KERNEL_LANE_FILE_END $i"
    else
        echo "ET_KERNEL_LANE_FILE_MISSING $i"
    fi
    i=$((i + 1))
done
if [ "${ET_DMESG:-0}" = 1 ] || [ "$rc" != 0 ]; then
    echo "ET_KERNEL_LANE_DMESG_BEGIN"
    dmesg
    echo "ET_KERNEL_LANE_DMESG_END"
fi
echo "ET_KERNEL_LANE_DONE"
poweroff -f
# Not reached; if it were, PID 1 exiting panics the kernel, and panic=-1 with
# QEMU's -no-reboot ends the VM as well.
sleep 5
