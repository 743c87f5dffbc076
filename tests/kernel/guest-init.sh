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

# Defines ET_CWD, ET_DMESG, ET_COLLECT_COUNT, ET_COLLECT_<i> and et_run.
# shellcheck source=/dev/null
. /.et-lane/config.sh || fail "read /.et-lane/config.sh"

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
if [ "${ET_DMESG:-0}" = 1 ]; then
    echo "ET_KERNEL_LANE_DMESG_BEGIN"
    dmesg
    echo "ET_KERNEL_LANE_DMESG_END"
fi
echo "ET_KERNEL_LANE_DONE"
poweroff -f
# Not reached; if it were, PID 1 exiting panics the kernel, and panic=-1 with
# QEMU's -no-reboot ends the VM as well.
sleep 5
