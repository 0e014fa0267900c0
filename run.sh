#!/usr/bin/env bash
# Installs what is missing, builds, and boots the self-test guest.
# Extra arguments go to vmm, e.g. ./run.sh -c 4 --split-lock=off,
# ./run.sh --host-info, ./run.sh --self-test.
# Without a usable /dev/kvm here, vmm runs on a stock KVM inside QEMU (the
# lab, docs/lab.md): the first run downloads a Debian kernel package.
set -euo pipefail
cd "$(dirname "$0")"
. scripts/setup.sh
vmm_install_packages
echo "run.sh: building ./build (a minute the first time; build/*.compile.log has the details)" >&2
vmm_build build

args=("$@")
# build/guest.bin unless the arguments name an image of their own or run
# no VM. The long options that may take their value as the next argument,
# from vmm's own --help ("--cpus N", "--split-lock=POLICY"; not "--stats[=FILE]"):
image=(build/guest.bin)
takes_value=" $(./build/vmm --help | sed -nE 's/^ +(-[a-z], )?(--[a-z-]+)[ =][A-Z]+ .*/\2/p' | tr '\n' ' ')"
skip_next=0
for a in "$@"; do
	if [ $skip_next = 1 ]; then
		skip_next=0
		continue
	fi
	case $a in
	--host-info | --self-test | --help | -h | --version) image=() ;;
	--) ;;
	-[!-]*) [[ $a =~ ^-[^-]*[cmta]$ ]] && skip_next=1 ;; # -c 2, -qc 2; not -c2
	-*) [[ $takes_value == *" $a "* ]] && skip_next=1 ;;
	*) image=() ;; # the user's own image
	esac
done

if python3 -c 'import os; os.close(os.open("/dev/kvm", os.O_RDWR))' 2>/dev/null; then
	exec ./build/vmm "${args[@]}" "${image[@]}"
fi
echo "run.sh: no usable /dev/kvm here; running vmm on a stock KVM inside QEMU instead (the lab: docs/lab.md)" >&2
exec python3 tests/lab/labrun.py --build build ./build/vmm "${args[@]}" "${image[@]}"
