#!/usr/bin/env bash
# Installs what the build and the tests need from the Debian archive, then
# configures and builds ./build. Sourced by run.sh and test.sh; idempotent and
# quick when everything is already there.
set -euo pipefail

VMM_PACKAGES=(
	meson ninja-build pkg-config gcc clang binutils python3
	libcmocka-dev libcap-dev libseccomp-dev libzydis-dev scdoc
	zlib1g-dev liblzma-dev libzstd-dev # unpacking a bzImage's payload (src/vmm/unpack.c)
	libclang-rt-14-dev
	qemu-system-x86 # tests/conformance and the lab: QEMU (TCG)
	busybox-static cpio xz-utils zstd # the lab's initramfs and modules (docs/lab.md)
)

vmm_install_packages() {
	local missing=() p
	for p in "${VMM_PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "setup: installing ${missing[*]}"
	if [ "$(id -u)" -ne 0 ]; then
		echo "setup: error: packages missing (${missing[*]}) and not root; run: sudo apt-get install ${missing[*]}" >&2
		return 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	# Another apt user on the machine: wait for dpkg's lock, bounded.
	apt-get -o DPkg::Lock::Timeout=300 update -qq
	apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# vmm_build DIR [meson options...]: configure DIR with these options, then
# rebuild what changed. When the options differ from the last call's they
# are applied with `meson configure` (an option left out keeps its value,
# as meson does); a different $CC wipes DIR, since meson fixes the
# compiler at setup. Nothing changed: straight to the compile.
vmm_build() {
	local dir=$1
	shift
	local stamp="$dir/.vmm_build_options" want="CC=${CC:-} $*" have=""
	[ -f "$stamp" ] && have=$(<"$stamp")
	if [ ! -f "$dir/build.ninja" ]; then
		meson setup "$dir" "$@" >"$dir.setup.log" 2>&1 || {
			cat "$dir.setup.log" >&2
			return 1
		}
	elif [ "$want" != "$have" ]; then
		echo "setup: $dir: options changed ('${have:-unknown}' -> '$want'); reconfiguring"
		if [ -n "$have" ] && [ "${have%% *}" != "CC=${CC:-}" ]; then
			meson setup --wipe "$dir" "$@" >"$dir.setup.log" 2>&1
		elif [ $# -gt 0 ]; then
			meson configure "$dir" "$@" >"$dir.setup.log" 2>&1
		fi || {
			cat "$dir.setup.log" >&2
			return 1
		}
	fi
	printf '%s' "$want" >"$stamp"
	meson compile -C "$dir" >"$dir.compile.log" 2>&1 || {
		cat "$dir.compile.log" >&2
		return 1
	}
}
