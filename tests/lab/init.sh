#!/bin/busybox sh
# /init of the lab's initramfs (tests/lab/lab.py builds it). Runs as PID 1 in
# the L1 machine that QEMU emulates, with busybox only.
#
# Two serial ports, so that the lab's own lines never land in the middle of
# the script's output:
#   ttyS0  the kernel console, and "@@LAB ..." control lines: INIT, a TICK
#          heartbeat every 2 s (its absence tells the host that L1's timers
#          stopped: a freeze), STEP markers, BEGIN, EXIT <status>, ERROR
#   ttyS1  the script's stdout and stderr, raw
/bin/busybox mkdir -p /proc /sys /dev /tmp /bin /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
export PATH=/lab/bin:/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp

con=/dev/ttyS0
say() { echo "@@LAB $*" >$con; }
up() { cut -d' ' -f1 /proc/uptime; }
fail() {
	say ERROR "$*"
	poweroff -f
}

say INIT "$(up)" "$(uname -r)" "cpus=$(grep -c ^processor /proc/cpuinfo)"
(while :; do
	say TICK "$(up)"
	sleep 2
done) &

for m in $(cat /lab/modules.order); do
	insmod "/lab/modules/$m.ko" || fail "insmod $m failed"
done
[ -c /dev/kvm ] || fail "no /dev/kvm after loading $(cat /lab/modules.order | tr '\n' ' ')"
stty -F /dev/ttyS1 raw -echo || fail "stty on ttyS1 failed"
say MODULES "$(up)"

say BEGIN "$(up)"
(cd /extra && exec sh /lab/script.sh) >/dev/ttyS1 2>&1 </dev/null
rc=$?
say EXIT "$rc" "$(up)"
poweroff -f
