#!/usr/bin/env python3
"""Kernel images: each bad one gets its one line and status, each good one
boots (kernels.py builds them).

  image_test.py --vmm build/vmm [--guest build/guest.elf] CASE

Bad images fail before /dev/kvm is opened, so those cases run anywhere.
`boot-*` cases need a usable KVM: tiny multiboot, PVH and bzImage kernels
print their command line and exit 0 through port 0xf4 when the boot
parameters are right. `pvh-guest-elf` boots the self-test through its PVH
note where the KVM lets a guest enable long mode itself (the lab);
`pvh-guest-elf-refused` checks the one-line refusal (69) where it does not
(this project's KVM). `linux-refused-here` checks the one-line refusal of a
Linux kernel where the KVM cannot run a kernel at CPL0.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernels as k  # noqa: E402
from vmmlib import (Skip, case_main, host_info, kvm_usable, run_vmm, scaled,  # noqa: E402
                    scaled_str, tap_failures, target)

IMAGE_BOOTS = "vmm boots flat images \\(guest.bin\\), Linux bzImages, PVH ELF kernels and multiboot"
GOOD_VMLINUX = k.linux_vmlinux()


def bz(**kw):
    return k.bzimage(k.compress(GOOD_VMLINUX, "gzip"), **kw)


def pvh64(segs, **kw):
    return k.elf(64, segs, k.KERNEL_ADDR, notes=k.pvh_note(k.KERNEL_ADDR), **kw)


CODE = k.PVH_CODE
# name: (image bytes, extra vmm args, status, stderr regex)
BAD = {
    "bzimage-truncated": (bz(truncate=0x240), [], 65, r"\(Linux bzImage\): its Linux setup header is truncated \(576 bytes\)"),
    "bzimage-old-protocol": (bz(version=0x0204), [], 65, r"boot protocol 2\.04; vmm boots protocol 2\.12 and later"),
    "bzimage-32bit": (bz(xloadflags=0), [], 65, r"a 32-bit Linux kernel \(no XLF_KERNEL_64\)"),
    "bzimage-payload-past-end": (bz(payload_length=0x7fffffff), [], 65, r"its payload \(0x7fffffff bytes at 0x400\) lies past the end of the file"),
    "bzimage-bzip2": (k.bzimage(k.compress(b"", "bzip2")), [], 65, r"its payload is bzip2-compressed; vmm unpacks gzip, xz and zstd"),
    "bzimage-corrupt-gzip": (k.bzimage(k.compress(GOOD_VMLINUX, "gzip")[:100]), [], 65, r"its gzip data is corrupt or truncated"),
    "bzimage-segment-outside-ram": (k.bzimage(k.compress(k.linux_vmlinux([(0x10000000, CODE, 0x1000)]), "gzip")),
                                    [], 65, r"its unpacked vmlinux: segment 0 at 0x10000000 \(0x1000 bytes\) lies outside RAM \(64M\)"),
    "bzimage-cmdline-too-long": (bz(cmdline_size=16), ["-a", "x" * 17], 64, r"--append: text is 17 bytes, this kernel takes at most 16"),
    "elf-no-pvh-note": (k.elf(64, [(k.KERNEL_ADDR, CODE, 0x100)], k.KERNEL_ADDR), [], 65,
                        r"is an ELF executable without a PVH note \(Xen note 18\) or a multiboot header; " + IMAGE_BOOTS),
    "elf-arm": (k.elf(32, [(k.KERNEL_ADDR, CODE, 0x100)], k.KERNEL_ADDR, machine=40), [], 65, r"an ELF executable for machine 40, not x86"),
    "elf-truncated-header": (k.pvh_elf32()[:40], [], 65, r"\(ELF\): its ELF header is truncated \(40 bytes\)"),
    "elf-truncated-phdrs": (pvh64([(k.KERNEL_ADDR, CODE, 0x100)], phnum=200), [], 65,
                            r"its program header table \(200 entries of 56 bytes at 0x40\) is truncated"),
    "elf-below-1m": (pvh64([(0x8000, CODE, 0x100)]), [], 65, r"segment 0 at 0x8000 overlaps the VMM's area below 0x100000"),
    "elf-outside-ram": (pvh64([(0x3ff00000, CODE, 0x200000)]), [], 65, r"segment 0 at 0x3ff00000 \(0x200000 bytes\) lies outside RAM"),
    "elf-overlap": (pvh64([(k.KERNEL_ADDR, CODE, 0x2000), (k.KERNEL_ADDR + 0x1000, CODE, 0x100)]), [], 65,
                    r"segments 0 and 1 overlap \(at 0x100000 and 0x101000\)"),
    "elf-filesz-over-memsz": (pvh64([(k.KERNEL_ADDR, CODE, 4)]), [], 65, r"segment 0: p_filesz 0x[0-9a-f]+ is larger than p_memsz 0x4"),
    "multiboot-video": (k.multiboot(flags=0x00010006), [], 65, r"requires a video mode \(bit 2\) among flags 0x4"),
    "multiboot-past-end": (k.multiboot(addrs=(k.KERNEL_ADDR, k.KERNEL_ADDR, k.KERNEL_ADDR + 0x10000, 0, k.KERNEL_ADDR + 32)),
                           [], 65, r"its multiboot load range \(0x10000 bytes from file offset 0x0\) lies past the end of the file"),
    "multiboot-outside-ram": (k.multiboot(addrs=(0x7f000000, 0x7f000000, 0, 0, 0x7f000020)), [], 65,
                              r"its multiboot load range 0x7f000000-0x[0-9a-f]+ lies outside RAM"),
    "multiboot-no-addresses": (k.multiboot(flags=0x2), [], 65, r"gives no load addresses \(flag 16\) and it is not an ELF file"),
    "initrd-does-not-fit": (k.multiboot(), ["-m", "4M", "--initrd", "@INITRD@"], 65,
                            r"the initrd \(3670016 bytes\) does not fit between the kernel's end \(0x[0-9a-f]+\) and 0x400000; give more with -m"),
    "initrd-flat": (bytes.fromhex("f4"), ["--initrd", "@INITRD@"], 64, r"--initrd: guest image '[^']*' is a flat image, which takes no initrd"),
    "flat-cmdline-too-long": (bytes.fromhex("f4"), ["-a", "x" * 128], 64, r"--append: text is 128 bytes, a flat image's boot_info takes at most 127"),
    "foreign-gzip": (k.compress(b"hello", "gzip"), [], 65, r"is gzip-compressed data \(unpack it first: a vmlinux ELF or a bzImage boots\); " + IMAGE_BOOTS),
    "foreign-xz": (k.compress(b"hello", "xz"), [], 65, r"is xz-compressed data"),
    "foreign-script": (b"#!/bin/sh\necho hi\n", [], 65, r"is a script; " + IMAGE_BOOTS),
    "foreign-cpio": (b"070701" + b"0" * 100, [], 65, r"is a cpio archive \(an initramfs\? give it with --initrd\)"),
    "foreign-pe": (b"MZ" + b"\0" * 100, [], 65, r"is a PE/COFF executable"),
}


def write(ctx, name, data):
    path = os.path.join(ctx.tmp, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def bad_case(name):
    def case(ctx):
        data, extra, status, msg = BAD[name]
        image = write(ctx, "kernel.img", data)
        initrd = write(ctx, "initrd.img", b"\x5a" * (3584 << 10))
        args = ["-q", "--timeout", "10"] + [initrd if a == "@INITRD@" else a for a in extra] + [image]
        r = run_vmm(ctx.vmm, args, timeout=30)
        fails = []
        if r.status != status:
            fails.append(f"exit status {r.status}, wanted {status}")
        lines = r.err.strip().splitlines()
        if len(lines) != 1 or not re.search(r"^vmm: error: .*" + msg, lines[0]):
            fails.append(f"stderr is not the one line /{msg}/: {r.err!r}")
        if r.out:
            fails.append(f"the guest printed {r.out!r}")
        return fails
    return case


def needs_kvm():
    why = kvm_usable()
    if why:
        raise Skip(why)


def boot_case(build, cmdline):
    def case(ctx):
        needs_kvm()
        data = build()
        if data is None:
            raise Skip("no zstd program to build the image")
        r = run_vmm(ctx.vmm, ["-q", "--timeout", scaled_str(30), "-a", cmdline, write(ctx, "kernel.img", data)],
                    timeout=scaled(60))
        fails = []
        # The PC machine's port 0xf4 is QEMU's isa-debug-exit: code 0 ends vmm with 1.
        if r.status != 1:
            fails.append(f"exit status {r.status}, wanted 1, code 0 through port 0xf4 (19: the guest "
                         f"found its boot parameters wrong): {r.err!r}")
        if r.out != cmdline + "\n":
            fails.append(f"the guest printed {r.out!r}, wanted its command line {cmdline!r}")
        return fails
    return case


def case_kernel_two_cpus(ctx):
    """-c 2 with a kernel: vCPU 0 boots it, vCPU 1 waits in its local APIC
    for an INIT/SIPI this kernel never sends, and never runs."""
    needs_kvm()
    r = run_vmm(ctx.vmm, ["-q", "-c", "2", "--timeout", scaled_str(30), "-a", "two",
                          write(ctx, "kernel.img", k.multiboot())], timeout=scaled(60))
    fails = [] if r.status == 1 else [f"exit status {r.status}, wanted 1 (code 0, port 0xf4): {r.err!r}"]
    return fails + ([] if r.out == "two\n" else [f"the guest printed {r.out!r}, wanted 'two'"])


def guest_elf_probes(ctx):
    """The target's probes, for the self-test's guest.elf."""
    needs_kvm()
    if not ctx.guest:
        raise Skip("no --guest (build/guest.elf)")
    return host_info(ctx.vmm)["kvm"]["probe"]


def case_pvh_guest_elf_refused(ctx):
    """Where the KVM stops a guest that enables long mode: one line, 69."""
    if guest_elf_probes(ctx).get("leave_long_mode") is not False:
        raise Skip("this KVM lets a guest enable long mode itself: image-pvh-guest-elf boots it")
    r = run_vmm(ctx.vmm, ["-q", "--timeout", scaled_str(60), ctx.guest], timeout=scaled(120))
    want = (r"\Avmm: error: guest image '[^']*' is a 64-bit PVH kernel, entered in 32-bit mode to enable "
            r"long mode itself, and this host's KVM stops a guest that does .*\n\Z")
    fails = [] if r.status == 69 else [f"exit status {r.status}, wanted 69 (this KVM: leave_long_mode false)"]
    return fails + ([] if re.search(want, r.err) else [f"stderr is not the one refusal: {r.err!r}"])


def case_pvh_guest_elf(ctx):
    """The self-test through its PVH note: a passing TAP run."""
    probes = guest_elf_probes(ctx)
    if probes.get("leave_long_mode") is False:
        raise Skip("vmm --host-info: leave_long_mode false: this KVM stops a guest that enables long "
                   "mode itself, as guest.elf's PVH entry does (image-pvh-guest-elf-refused)")
    r = run_vmm(ctx.vmm, ["-q", "--timeout", scaled_str(60), ctx.guest], timeout=scaled(120))
    fails, _ = tap_failures(r.out)
    # A kernel gets the PC machine, whose port 0xf4 is QEMU's isa-debug-exit:
    # the self-test's status s ends vmm with s * 2 + 1.
    status_ok = r.status == 1
    # Under PVH the firmware knows no boot flags, so the self-test cannot skip
    # the legacy #AC check on a CPU without one (the lab's TCG; design.md's
    # quirk table): that one failure, and the status it gives, are the CPU's.
    if probes.get("alignment_check") is False:
        cpu = [f for f in fails if "misaligned load at CPL3 with AC=1 raises #AC" in f]
        fails = [f for f in fails if f not in cpu]
        status_ok = status_ok or (cpu and r.status == 3)
    return fails + ([] if status_ok else [f"exit status {r.status}: {r.err!r}"])


def case_linux_refused_here(ctx):
    """A Linux kernel (its vmlinux's Xen note says so) on a KVM that cannot run
    POPCNT, FWAIT or CLAC at CPL0: one line, 69. Forced with --host-quirks on
    any KVM; without it, refused where the probe says so and booted where not."""
    needs_kvm()
    vmlinux = k.elf(64, [(k.LINUX_ADDR, k.LINUX_CODE, 0x200000)], k.LINUX_ADDR,
                    notes=k.note("Xen", 6, b"linux\0") + k.pvh_note(k.LINUX_ADDR))
    image = write(ctx, "linux.img", k.bzimage(k.compress(vmlinux, "gzip")))
    want = (r"\Avmm: error: guest image '[^']*' is a Linux kernel, and this host's KVM cannot run a "
            r"kernel at CPL0: it stops the VM at POPCNT, FWAIT or CLAC there .*\n\Z")
    fails = []
    can = host_info(ctx.vmm)["kvm"]["probe"].get("kernel_insns_cpl0")
    for quirks in (["--host-quirks=no-kernel-insns-cpl0"], []):
        r = run_vmm(ctx.vmm, ["-q", "--timeout", scaled_str(30), "-a", "linux"] + quirks + [image],
                    timeout=scaled(60))
        if quirks or can is False:
            if r.status != 69 or not re.search(want, r.err):
                fails.append(f"{quirks}: exit status {r.status}, wanted 69 and the one line: {r.err!r}")
        elif r.status != 0 or r.out != "linux\n":
            fails.append(f"this KVM runs a kernel at CPL0, yet status {r.status}, {r.out!r}: {r.err!r}")
    return fails


CASES = {name: bad_case(name) for name in BAD}
CASES.update({
    "boot-multiboot-aout": boot_case(k.multiboot, "multiboot a.out"),
    "boot-multiboot-elf32": boot_case(k.multiboot_elf32, "multiboot elf32"),
    "boot-pvh-elf32": boot_case(k.pvh_elf32, "pvh elf32"),
    "boot-bzimage-gzip": boot_case(lambda: k.bzimage(k.compress(GOOD_VMLINUX, "gzip")), "bz gzip"),
    "boot-bzimage-xz": boot_case(lambda: k.bzimage(k.compress(GOOD_VMLINUX, "xz")), "bz xz"),
    "boot-bzimage-zstd": boot_case(lambda: (lambda z: z and k.bzimage(z))(k.compress(GOOD_VMLINUX, "zstd")), "bz zstd"),
    "pvh-guest-elf": case_pvh_guest_elf,
    "pvh-guest-elf-refused": case_pvh_guest_elf_refused,
    "kernel-two-cpus": case_kernel_two_cpus,
    "linux-refused-here": case_linux_refused_here,
})

if __name__ == "__main__":
    sys.exit(case_main(CASES, __doc__, needs_kvm=False))
