#!/bin/bash
# Builds Debian 12's QEMU (its source package, from the Debian archive) with
# the nested guest's hardware breakpoints armed, for the lab
# (docs/lab.md, "Hardware breakpoints"), and prints the binary's path:
#
#   VMM_LAB_QEMU=$(tests/lab/qemu-hwbp.sh) meson test -C build --setup lab ...
#
# QEMU 7.2 loads DR7 from the VMCB at VMRUN (and the host's at #VMEXIT)
# without cpu_x86_update_dr7(), so TCG inserts none of the nested guest's
# breakpoints: KVM_GUESTDBG_USE_HW_BP and the guest's own DR0-3 never fire
# there. The patch makes both loads go through cpu_x86_update_dr7().
# It also makes the instruction-breakpoint checks of bpt_helper.c compare
# DR0-3 with CS.base + EIP, the linear address TCG inserted them at: with
# EIP alone, a breakpoint hit where CS.base is not 0 (real mode) finds no
# match and is handed to the gdbstub, which is not there (SIGSEGV).
#
# Needs root (apt-get) the first time; the result is cached in
# $VMM_LAB_CACHE (default ~/.cache/vmm-lab) and reused (docs/lab.md has the time
# it takes). Messages go to stderr, the path alone to stdout.
set -euo pipefail

log() { echo "qemu-hwbp: $*" >&2; }
die() { log "error: $*"; exit 1; }

cache=${VMM_LAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vmm-lab}
version=$(dpkg-query -W -f='${source:Version}' qemu-system-x86 2>/dev/null) ||
	die "qemu-system-x86 is not installed (the lab installs it: tests/lab/lab.sh fetch)"
# -r2: the patch changed (CS.base); a binary built with the old one is not used.
out=$cache/qemu-hwbp-${version//[:+~]/_}-r2
bin=$out/qemu-system-x86_64
if [ -x "$bin" ]; then
	echo "$bin"
	exit 0
fi

deps=(libglib2.0-dev libpixman-1-dev libfdt-dev libcap-ng-dev libattr1-dev libslirp-dev meson ninja-build
      pkg-config python3 gcc dpkg-dev)
missing=()
for p in "${deps[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	[ "$(id -u)" = 0 ] || die "missing ${missing[*]}: run as root, or apt-get install them"
	log "installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
		--no-install-recommends "${missing[@]}" >&2 || die "apt-get install ${missing[*]} failed"
fi

mkdir -p "$cache"
work=$(mktemp -d "$cache/qemu-hwbp-build.XXXXXX")
trap 'rm -rf "$work"' EXIT

# deb-src for the archive the system uses, in a private apt state: the
# system's sources stay as they are.
mkdir -p "$work/apt/lists/partial" "$work/apt/parts" "$work/apt/cache/archives/partial"
codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
	"$codename $codename-updates" \
	> "$work/apt/parts/src.sources"
printf '\nTypes: deb-src\nURIs: http://deb.debian.org/debian-security\nSuites: %s-security\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
	"$codename" >> "$work/apt/parts/src.sources"
aptopts=(-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$work/apt/parts"
	 -o Dir::State::Lists="$work/apt/lists" -o Dir::Cache="$work/apt/cache"
	 -o APT::Sandbox::User=root)
log "fetching the source of qemu $version from the Debian archive"
apt-get "${aptopts[@]}" update -qq >&2 || die "apt-get update (deb-src) failed"
(cd "$work" && apt-get "${aptopts[@]}" source -qq --download-only "qemu=$version" >&2) ||
	die "apt-get source qemu=$version failed"
(cd "$work" && dpkg-source -x --no-check ./*.dsc src >&2) || die "unpacking the source failed"

helper=$work/src/target/i386/tcg/sysemu/svm_helper.c
[ -f "$helper" ] || die "$helper is missing: another QEMU layout; see docs/lab.md"
python3 - "$helper" <<'EOF' || die "the VMRUN/#VMEXIT DR7 loads were not found in $helper"
import re, sys
p = sys.argv[1]
s = open(p).read()
pat = re.compile(r"env->dr\[7\] = (x86_ldq_phys\(cs,\s*env->(vm_vmcb|vm_hsave) \+ offsetof\(struct vmcb, save\.dr7\)\));")
s, n = pat.subn(r"cpu_x86_update_dr7(env, \1);", s)
if n != 2:
    sys.exit(1)
open(p, "w").write(s)
EOF
python3 - "$work/src/target/i386/tcg/sysemu/bpt_helper.c" <<'EOF' ||
import sys
p = sys.argv[1]
s = open(p).read()
for a in ("if (env->dr[reg] == env->eip) {", "cpu_breakpoint_test(cs, env->eip, BP_CPU)"):
    if s.count(a) != 1:
        sys.exit(1)
    s = s.replace(a, a.replace("env->eip", "env->segs[R_CS].base + env->eip"))
open(p, "w").write(s)
EOF
	die "the instruction-breakpoint checks were not found in bpt_helper.c"

log "configuring and building qemu-system-x86_64 (minutes: docs/lab.md has the figure)"
mkdir -p "$work/src/b"
(cd "$work/src/b" && ../configure --target-list=x86_64-softmmu --disable-docs --disable-werror \
	--disable-xen --disable-gtk --disable-sdl --disable-vnc --disable-opengl --disable-curses \
	--enable-slirp --disable-libusb --disable-usb-redir --disable-spice --disable-tools \
	--disable-guest-agent --disable-capstone --disable-vhost-user --disable-linux-io-uring \
	--disable-curl --disable-gnutls --disable-nettle --disable-gcrypt --disable-libssh \
	--disable-rbd --disable-glusterfs --disable-virglrenderer --disable-bpf --disable-kvm \
	--enable-fdt=system --enable-virtfs >&2) || die "configure failed"
ninja -C "$work/src/b" qemu-system-x86_64 >&2 || die "the build failed"
mkdir -p "$out"
cp "$work/src/b/qemu-system-x86_64" "$bin.tmp" && mv "$bin.tmp" "$bin"
log "built $bin"
echo "$bin"
