#!/bin/sh
# PID 1 of a test VM (tests/vm/vm.py builds the initramfs around it), run by
# busybox sh. It mounts the host's root (virtio-9p, read-only) under a tmpfs
# overlay, the kernel filesystems inside that, runs /cmd.sh there in a child
# (chroot), prints the child's exit status on the console for vm.py, and
# powers off. /vm.env gives KVER (the kernel's release) and KDIR (the
# unpacked package, a host path).
export PATH=/bin:/sbin

die() {
	echo "depwatch-vm: init: $*"
	echo "depwatch-vm: exit 125"
	poweroff -f
	sleep 10	# poweroff -f does not return; if it did, the kernel panics (panic=-1 reboots, -no-reboot ends qemu)
	exit 1
}

mount -t proc proc /proc || die "cannot mount /proc"
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
. /vm.env

# virtio, 9p and overlay are modules in Debian's kernel: their files, in dependency order
for m in $(cat /modules.list); do
	insmod "/modules/$m" || die "insmod $m failed"
done

mkdir -p /lower /rw /newroot
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose hostroot /lower ||
	die "cannot mount the host's root over virtio-9p"
mount -t tmpfs -o mode=0755 tmpfs /rw
mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /newroot ||
	die "cannot mount the overlay"

# The kernel's own module loads (a netlink family, a qdisc) run /sbin/modprobe in
# this root, not the chroot's (PID 1 never leaves it): busybox's, over the package's tree.
mkdir -p /lib/modules
mount --bind "/lower$KDIR/lib/modules" /lib/modules || die "no modules under $KDIR"

R=/newroot
mount -t proc proc $R/proc
mount -t sysfs sysfs $R/sys
mount -t devtmpfs devtmpfs $R/dev
mkdir -p $R/dev/pts $R/dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts $R/dev/pts
mount -t tmpfs -o mode=1777 tmpfs $R/dev/shm
mount -t tmpfs -o mode=1777 tmpfs $R/tmp
mount -t tmpfs -o mode=0755 tmpfs $R/run
mount -t bpf bpf $R/sys/fs/bpf || die "cannot mount bpffs"
mount -t tracefs tracefs $R/sys/kernel/tracing || die "cannot mount tracefs"
mount -t debugfs debugfs $R/sys/kernel/debug
mount -t cgroup2 cgroup2 $R/sys/fs/cgroup || die "cannot mount cgroup2"
ip link set lo up
hostname depwatch-vm

cp /cmd.sh $R/vm-cmd.sh
echo "depwatch-vm: up, Linux $(uname -r), $(grep -c ^processor /proc/cpuinfo) CPUs, running the command"
chroot $R /bin/sh /vm-cmd.sh
rc=$?
echo "depwatch-vm: exit $rc"
poweroff -f
sleep 10
