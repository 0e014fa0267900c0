#!/usr/bin/env python3
"""A KVM that fails: each KVM ioctl vmm makes, made to fail by the
LD_PRELOAD shim ioctlfail.c, as a host's KVM may; and the few calls that
set up the VM around them.

  ioctlfail_test.py --vmm build/vmm --guest build/guest.bin \\
      --shim build/tests/e2e/libioctlfail.so CASE

CASE is one of:
  setup     each ioctl that builds the VM fails once (EIO; ENOMEM for
            KVM_CREATE_VM), then each call around them (mmap, eventfd,
            signalfd, pthread_create): vmm ends with status 69 and one
            line naming the call, its error and errno
  retried   an EINTR from any of them is retried, and KVM_GET_SUPPORTED_CPUID's
            E2BIG grows the table: the VM runs as without the shim
  hostinfo  --host-info with /dev/kvm's API version unreadable, or a probe
            guest that cannot run: status 0, the failure named in its line
  dump      a triple fault's register dump cannot read the registers
            (KVM_GET_REGS, KVM_GET_SREGS): status 80, its error line, and
            a warning naming the call instead of the dump
  run DIFFGUEST
            KVM_RUN returns EINTR every other time, under inherit and
            emulate: the guest's status and output are those of a run
            without the shim; an EIO from it stops the VM with status 69
            and one line (on 2 vCPUs, and under emulate)
  emulate DIFFGUEST
            emulate's start-up probes fail (the one it needs: 69; an
            optional one: a warning), then each ioctl it makes while it
            watches a guest: status 69 and one line naming it, no hang
            (a case the guest skips, lacking the CPU feature, is named)
DIFFGUEST is the differential guest (tests/differential), whose cases make
emulate ask KVM for each thing.
Each case checks that the shim made the failure (its "ioctlfail:" line).
Exits 0 on success, 1 on failure, 77 when no KVM is to be had.
"""
import argparse
import errno
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmmlib import case_main, image, quiet_noise, run, scaled, scaled_str  # noqa: E402

EXIT_HOST = 69
EXIT_SHUTDOWN = 80
DIFF_SKIP = 63          # a differential guest's case that cannot run here
SHIM = None

# 64-bit machine code, loaded at 1 MiB: mov dx,0xf4; mov eax,0; out dx,eax.
EXIT_0 = "66baf400" "b800000000" "ef"


def run_failing(ctx, spec, args, timeout=60):
    env = dict(os.environ, LD_PRELOAD=SHIM, VMM_TEST_IOCTLFAIL=spec,
               ASAN_OPTIONS="verify_asan_link_order=0:" + os.environ.get("ASAN_OPTIONS", ""))
    r = run([ctx.vmm, *args], env=env, timeout=scaled(timeout))
    print(r.out[-2000:] + "--- stderr ---\n" + r.err)
    return r


def split_err(r):
    """(the shim's lines, vmm's lines) of stderr, less the host's loss warning."""
    lines = quiet_noise(r.err).splitlines()
    shim = [l for l in lines if l.startswith("ioctlfail: ")]
    return shim, [l for l in lines if not l.startswith("ioctlfail: ")]


def failed_as(call, errno_, rest=""):
    """vmm's one line for a failed call: 'CALL failed: STRERROR (errno N)REST'."""
    return r"%s failed: %s \(errno %d\)%s" % (call, re.escape(os.strerror(errno_)), errno_, rest)


def judged(r, spec, status):
    """(failures, vmm's stderr lines): the shim must have made its failure
    and vmm ended, with this status."""
    if r.hung:
        return [f"{spec}: vmm did not end"], []
    shim, vmm = split_err(r)
    fails = [] if shim else [f"{spec}: the shim made no failure: vmm never made that call"]
    if r.status != status:
        fails.append(f"{spec}: exit status {r.status}, want {status}")
    return fails, vmm


def expect_failure(r, spec, want):
    """Status 69 and one line of vmm's: 'vmm: error: ' and the regex want."""
    fails, vmm = judged(r, spec, EXIT_HOST)
    if not r.hung and (len(vmm) != 1 or not re.match("vmm: error: " + want, vmm[0])):
        fails.append(f"{spec}: stderr {vmm}, want one line matching /vmm: error: {want}/")
    return fails


def expect_clean(r, spec):
    """The failure made, retried, and the VM run to its end as without it."""
    fails, vmm = judged(r, spec, 0)
    if vmm:
        fails.append(f"{spec}: stderr {vmm}, want none")
    return fails


EIO, ENOMEM, ENODATA, EMFILE, EAGAIN = errno.EIO, errno.ENOMEM, errno.ENODATA, errno.EMFILE, errno.EAGAIN
# Split locks at CPL0, and a #GP KVM queues (a differential guest's case).
RUN_CASE = "step-split-lock-after-kvm-gp"

# Each ioctl that builds the VM, failed at its first call (KVM_CREATE_VCPU
# at its second: the VM has 2 vCPUs, the first one made).
SETUP = [("KVM_GET_API_VERSION", 1), ("KVM_CHECK_EXTENSION", 1), ("KVM_GET_SUPPORTED_CPUID", 1),
         ("KVM_GET_VCPU_MMAP_SIZE", 1), ("KVM_CREATE_VM", 1), ("KVM_SET_USER_MEMORY_REGION", 1),
         ("KVM_CREATE_VCPU", 2), ("KVM_SET_CPUID2", 1), ("KVM_GET_SREGS", 1), ("KVM_SET_SREGS", 2),
         ("KVM_SET_REGS", 1), ("KVM_ENABLE_CAP", 1), ("KVM_X86_SET_MSR_FILTER", 1)]


# The calls around them, on 2 vCPUs whose guest loops (so that only the
# failure can end the VM): the first mmap is guest RAM's, the third the
# second vCPU's run page; the second vCPU's thread fails to start while
# the first one runs.
CALLS = [("mmap:1:ENOMEM", failed_as("mmap of guest RAM", ENOMEM, "; try a smaller -m$")),
         ("mmap:3:ENOMEM", failed_as("mmap of the vCPU run page", ENOMEM, "$")),
         ("eventfd:1:EMFILE", failed_as("eventfd", EMFILE, "$")),
         ("signalfd:1:EMFILE", failed_as("signalfd", EMFILE, "$")),
         ("pthread_create:2:EAGAIN", failed_as("starting the thread of vCPU 1", EAGAIN, "$"))]


def case_setup(ctx):
    img = image(ctx.tmp, EXIT_0)
    fails = []
    for name, nth in SETUP:
        err, num = ("ENOMEM", ENOMEM) if name == "KVM_CREATE_VM" else ("EIO", EIO)
        spec = f"{name}:{nth}:{err}"
        r = run_failing(ctx, spec, ["-q", "-c", "2", "--timeout", scaled_str(30), img])
        fails += expect_failure(r, spec, failed_as(name, num))
    loop = image(ctx.tmp, "ebfe", "loop.img")
    for spec, want in CALLS:
        r = run_failing(ctx, spec, ["-q", "-c", "2", "--timeout", scaled_str(30), loop])
        fails += expect_failure(r, spec, want)
    return fails


# Retried by vmm: EINTR from any setup ioctl; E2BIG, the CPUID table too small.
RETRIED = [f"{name}:{nth}:EINTR" for name, nth in SETUP] + ["KVM_GET_SUPPORTED_CPUID:1:E2BIG"]


def case_retried(ctx):
    img = image(ctx.tmp, EXIT_0)
    fails = []
    for spec in RETRIED:
        r = run_failing(ctx, spec, ["-q", "-c", "2", "--timeout", scaled_str(30), img])
        fails += expect_clean(r, spec)
    return fails


# --host-info reports what it could not find out, in the line it belongs to.
HOSTINFO = [
    ("KVM_GET_API_VERSION:1:EIO", r"^KVM: +unavailable: " + failed_as("KVM_GET_API_VERSION", EIO, "$")),
    ("KVM_RUN:1:EIO", r"^CPUID probe: +not run: KVM_RUN: %s \(errno %d\)$" % (re.escape(os.strerror(EIO)), EIO)),
]


def case_hostinfo(ctx):
    fails = []
    for spec, want in HOSTINFO:
        r = run_failing(ctx, spec, ["--host-info"])
        got, vmm = judged(r, spec, 0)
        fails += got
        if not r.hung and not re.search(want, r.out, re.M):
            fails.append(f"{spec}: no line of the report matches /{want}/")
        if vmm:
            fails.append(f"{spec}: stderr {vmm}, want none")
    return fails


def case_dump(ctx):
    img = image(ctx.tmp, "0f0b")        # ud2 without an IDT: a triple fault
    fails = []
    # KVM_GET_SREGS: 1 is the vCPU's set-up; every later call fails, the
    # probes' that end vm_create (vm_kvm.c: they fail silently, leaving their
    # boot_info flags clear) and then the dump's.
    for spec, call in (("KVM_GET_REGS:1:EIO", "KVM_GET_REGS"), ("KVM_GET_SREGS:2+:EIO", "KVM_GET_SREGS")):
        r = run_failing(ctx, spec, ["-q", "--timeout", scaled_str(30), img])
        got, vmm = judged(r, spec, EXIT_SHUTDOWN)
        fails += got
        want = ["vmm: error: vCPU 0: triple fault (KVM_EXIT_SHUTDOWN): an exception the guest "
                "could not handle, often a missing IDT, GDT or stack",
                f"vmm: warning: vCPU 0: no register dump: {call} failed: {os.strerror(EIO)} "
                f"(errno {EIO})"]
        if not r.hung and vmm != want:
            fails.append(f"{spec}: stderr {vmm}, want {want}")
    return fails


def case_run(ctx, diffguest):
    """Spurious EINTRs from KVM_RUN change nothing the guest sees, watched or
    not; an EIO stops the VM, however many vCPUs run."""
    fails = []
    for policy in ("inherit", "emulate"):
        def args(timeout):
            return ["-q", "--split-lock=" + policy, "--timeout", scaled_str(timeout),
                    "--append", "case=" + RUN_CASE, diffguest]
        base = run([ctx.vmm, *args(120)], timeout=scaled(120))
        print(base.out[-2000:] + "--- stderr ---\n" + base.err)
        if base.hung or base.status != 0:
            fails.append(f"{policy}: {RUN_CASE} without the shim: exit status {base.status}, want 0")
            continue
        spec = "KVM_RUN:%2:EINTR"
        r = run_failing(ctx, spec, args(120), timeout=120)
        got, vmm = judged(r, spec, base.status)
        fails += [f"{policy}: {f}" for f in got]
        if r.out != base.out:
            fails.append(f"{policy}: {spec}: the guest's output differs from the run without EINTRs")
        if [l for l in vmm if l.startswith("vmm: error")]:
            fails.append(f"{policy}: {spec}: {vmm}")
        if policy == "emulate" and "split lock" not in r.err:
            fails.append(f"{policy}: {spec}: no split lock detected")
        # Past the probes' runs: vm_create()'s (at most 7: the boot flags'
        # and what KVM runs at CPL0), and under emulate vm_probe()'s too. The
        # EIO ends the VM at once: a short --timeout, so that a vmm that
        # retries it fails in seconds.
        spec, cpus = ("KVM_RUN:10:EIO", ["-c", "2"]) if policy == "inherit" else ("KVM_RUN:40+:EIO", [])
        r = run_failing(ctx, spec, cpus + args(10), timeout=60)
        want = r"vCPU \d: " + failed_as("KVM_RUN", EIO, "$")
        fails += [f"{policy}: {f}" for f in expect_failure(r, spec, want)]
    return fails


# What --split-lock=emulate asks of KVM while it watches a guest (every
# vCPU: --split-lock-watch=all; the differential guest never sets bit 29), a
# differential guest's case that makes it ask, and the rest of vmm's line:
# the first call past those of the start-up probes fails ("N+": every call
# from the Nth).
WATCH = "; --split-lock=emulate cannot go on watching this guest$"
WATCHING = [
    ("KVM_GET_VCPU_EVENTS:1+:EIO", "step-tf-sti-shadow", r"KVM_GET_VCPU_EVENTS", WATCH),
    ("KVM_GET_VCPU_EVENTS:1+:EIO", "step-split-lock-after-kvm-gp", r"KVM_GET_VCPU_EVENTS", WATCH),
    # The #GP of a failed MSR access, taken back where KVM leaves it queued;
    # where it does not (the nested PVM KVM), MOV SS's shadow that ends
    # where the VMM performs SYSCALL behind it: the first of the cases that
    # makes the call.
    ("KVM_SET_VCPU_EVENTS:1+:EIO", ("step-split-lock-after-kvm-gp", "event-mov-ss-shadow-saves-flags"),
     r"KVM_SET_VCPU_EVENTS \((#GP|interrupt shadow)\)", WATCH),
    # Calls 1-11 are the five probes' (each sets, then clears, what it
    # probed; the guest's breakpoints probe sets it again after its MOV to
    # DR7).
    ("KVM_SET_GUEST_DEBUG:12+:EIO", "step-tf-cpl0", r"KVM_SET_GUEST_DEBUG", WATCH),
    ("KVM_GET_DEBUGREGS:1+:EIO", "step-tf-cpl0", r"KVM_GET_DEBUGREGS", WATCH),
    ("KVM_SET_DEBUGREGS:1+:EIO", "step-tf-cpl0", r"KVM_SET_DEBUGREGS", WATCH),
    ("KVM_GET_MSRS:1+:short", "event-syscall-r11-fmask0", r"KVM_GET_MSRS \(MSR 0x[0-9a-f]+\)", WATCH),
    ("KVM_GET_MSRS:1+:EIO", "event-syscall-r11-fmask0", r"KVM_GET_MSRS \(MSR 0x[0-9a-f]+\)", WATCH),
    # A split lock on a page with a protection key: PKRU decides.
    ("KVM_GET_XSAVE:1+:EIO", "fault-pkey-other-key", r"reading PKRU with KVM_GET_XSAVE", "$"),
]


# The start-up probes of --split-lock=emulate: single-stepping at CPL0 is
# needed (its KVM_SET_GUEST_DEBUG is the first); a failed probe of an
# optional feature (CPL3 stepping: the second KVM_RUN) is a warning.
PROBES = [
    ("KVM_SET_GUEST_DEBUG:1:EIO", EXIT_HOST, "error: --split-lock=emulate needs KVM single-stepping, "
     "and on this host it could not be probed: KVM_SET_GUEST_DEBUG: " + os.strerror(EIO)),
    ("KVM_RUN:2:EIO", 0, "warning: split-lock emulation: probing single-stepping at CPL3 failed "
     "(KVM_RUN: " + os.strerror(EIO) + f" (errno {EIO})); going on without stepping CPL3 code"),
]


def case_emulate(ctx, diffguest):
    fails = []
    for spec, status, line in PROBES:
        r = run_failing(ctx, spec, ["-q", "--split-lock=emulate", "--timeout", scaled_str(60),
                                    "--append", "case=" + RUN_CASE, diffguest], timeout=120)
        got, vmm = judged(r, spec, status)
        fails += got
        if r.hung:
            continue
        if not vmm or not vmm[0].startswith("vmm: " + line) or \
                any(l.startswith("vmm: error") for l in vmm[1:]):
            fails.append(f"{spec}: stderr {vmm}, want 'vmm: {line}' first, and no other error")
    for spec, cases, call, rest in WATCHING:
        num = ENODATA if spec.endswith("short") else EIO
        for case in (cases,) if isinstance(cases, str) else cases:
            r = run_failing(ctx, spec, ["-q", "--split-lock=emulate", "--split-lock-watch=all",
                                        "--timeout", scaled_str(60),
                                        "--append", "case=" + case, diffguest], timeout=120)
            if isinstance(cases, str) or split_err(r)[0] or case == cases[-1]:
                break
            print(f"{case}: vmm made no {spec.split(':')[0]} here; the next case")
        if r.status == DIFF_SKIP and not split_err(r)[0]:
            print(f"{case}: not run: the guest skipped it ({r.out.strip().splitlines()[-1:]})")
            continue
        want = r"vCPU 0: " + failed_as(call, num, rest)
        fails += [f"{case}: {f}" for f in expect_failure(r, spec, want)]
    return fails


def main():
    global SHIM
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--shim", required=True)
    a, rest = ap.parse_known_args()
    SHIM = os.path.abspath(a.shim)
    return case_main({"setup": case_setup, "retried": case_retried, "hostinfo": case_hostinfo,
                      "dump": case_dump, "run": case_run, "emulate": case_emulate}, __doc__, rest)


if __name__ == "__main__":
    sys.exit(main())
