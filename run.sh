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
vmm_build build

args=("$@")
# Options that run no VM of build/guest.bin, or name their own guest.
image=(build/guest.bin)
for a in "$@"; do
	case $a in
	--host-info | --self-test | --help | -h | --version) image=() ;;
	esac
done

if python3 -c 'import os; os.close(os.open("/dev/kvm", os.O_RDWR))' 2>/dev/null; then
	exec ./build/vmm "${args[@]}" "${image[@]}"
fi
echo "run.sh: no usable /dev/kvm here; running vmm on a stock KVM inside QEMU instead (the lab: docs/lab.md)" >&2
exec python3 tests/lab/labrun.py --build build ./build/vmm "${args[@]}" "${image[@]}"
