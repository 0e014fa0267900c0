#!/bin/busybox sh
# /init of the Linux guest's initramfs (tests/linux/linuxguest.py builds it):
# busybox and the split-lock program, nothing else. Prints "VMMTEST ..."
# lines on the console for tests/linux/linux_test.py and bench/linux.py:
#   VMMTEST INIT uptime=S kernel=RELEASE   as soon as /init runs
#   VMMTEST CPUS online=N list=LIST        the CPUs Linux brought online
#   SPLITLOCK ...                          the program's line (splitlock.c)
# Then, with `vmm.test` on the kernel command line:
#   VMMTEST READY                          before it reads one console line
#   VMMTEST ECHO <LINE>                    what it read (120 s at most)
# and powers off. Without it, a shell on the console; power-off when it ends.
/bin/busybox mkdir -p /proc /sys /dev /tmp /bin /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t tmpfs tmp /tmp

echo "VMMTEST INIT uptime=$(cut -d' ' -f1 /proc/uptime) kernel=$(uname -r)"
echo "VMMTEST CPUS online=$(grep -c ^processor /proc/cpuinfo) list=$(cat /sys/devices/system/cpu/online)"
/bin/splitlock 1000 || echo "VMMTEST ERROR splitlock exited $?"

case " $(cat /proc/cmdline) " in
*" vmm.test "*)
	echo "VMMTEST READY"
	read -t 120 -r line || line="(nothing read)"
	echo "VMMTEST ECHO <$line>"
	;;
*)
	echo "Linux is up: busybox sh on the console; 'exit' powers off."
	setsid cttyhack sh
	;;
esac
poweroff -f
