#!/usr/bin/env python3
"""Debian's kernel booted by vmm, under a split-lock policy.

  linux_test.py --vmm build/vmm --build BUILD boot POLICY [WATCH]

One boot: `vmm -c 2 -m 256M --split-lock=POLICY [--split-lock-watch=WATCH]
--initrd I --append 'console=ttyS0 quiet panic=-1 vmm.test' VMLINUZ`, with the
kernel of tests/lab/debian.py (cached) and the initramfs of linuxguest.py
(busybox, init.sh, splitlock.c), a line typed on stdin once /init asks
(feed.py), bounded from outside; -c 1 where this KVM cannot run Linux's
start of its other CPUs (vmm --host-info: enter_long_mode false; the lab
can). It checks that:
  - Linux reaches /init ("VMMTEST INIT") and brings every vCPU online;
  - the split-lock program's line is what the policy implies: every locked
    add done and the counter right; no SIGBUS and no kernel split-lock line
    where Linux does not set detection up (a CPU not from Intel, or the
    CPUID hypervisor bit set: arch/x86/kernel/cpu/bus_lock.c);
    CPUID.(7,0):EDX[30] as vmm --host-info's probe says the guest sees it;
  - --stats: nothing detected in software but under emulate with
    --split-lock-watch=all, where every CPL3 split lock is detected if this
    KVM can single-step CPL3, else the runs it cannot watch are counted;
    under emulate without it, no single-step at all (Linux never arms #AC);
  - the typed line comes back from the guest's shell ("VMMTEST ECHO <...>");
  - power-off ends vmm with its documented status.
Under `on` on a host that cannot deliver #AC, vmm must refuse (78); where
the KVM cannot run a kernel at CPL0 (vmm --host-info), it must refuse Linux
in one line (69).
Exits 0, 1 with a FAIL line each, 77 without a usable KVM.
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
from vmmlib import (Failure, case_main, run, scaled, scaled_str, target,  # noqa: E402
                    vm_statuses)
from policy_test import expectation, refusal_failures  # noqa: E402
import linuxguest  # noqa: E402

CPUS = 2                        # 1 where this KVM cannot run the guest's start of its APs
# Debian's 6.1 with this initramfs needs more than vmm's default 64M (it
# dies before its console under QEMU with 64M; 128M boots).
MEMORY = "256M"
# quiet: the kernel's log stays in its buffer (splitlock reads it there),
# not on the 16550, where each byte costs exits (a second on this
# machine's KVM, half a minute in the lab).
APPEND = "console=ttyS0 quiet panic=-1 vmm.test"
# In the lab (QEMU's TCG under L1's KVM) a nested guest that halts is not
# woken by its timer: Linux's clock stops at its first idle HLT (vmm's and
# QEMU's as L1's VMM alike). idle=poll keeps it from halting (docs/lab.md).
LAB_APPEND = " idle=poll"
OPS = 1000                      # init.sh runs splitlock 1000: per CPU
TYPED = "typed into vmm's stdin 42"
# Linux's boot to the power-off: seconds on this machine's KVM, stretched
# by scaled() in the lab.
BOOT_SECONDS = 300


def poweroff_status():
    """The status vmm ends with when the guest powers off (include/vmm_status.h)."""
    return vm_statuses().get("VMM_EXIT_POWEROFF", 0)


def kernel_blocked(hi):
    """Where vmm --host-info says this KVM cannot run a kernel at CPL0 (the
    nested PVM KVM: docs/design.md's quirk table), vmm refuses Linux."""
    probe = hi["kvm"]["probe"]
    return probe.get("kernel_insns_cpl0") is False or probe.get("xsave_cpl0") is False


def refused_failures(r):
    want = (r"^vmm: error: guest image '[^']*' is a Linux kernel, and this host's KVM cannot run "
            r"a kernel at CPL0: it stops the VM at .* there \(vmm --host-info\); boot it on a stock KVM$")
    fails = [] if r.status == 69 else [f"exit status {r.status}, want 69: this KVM cannot run a "
                                       "kernel at CPL0 (vmm --host-info), vmm must refuse Linux"]
    return fails + ([] if re.search(want, r.err, re.M) else [f"stderr lacks the refusal: {r.err!r}"])


def guest_files(ctx, build):
    """(vmlinuz, initramfs): Debian's kernel (cached) and a fresh initramfs."""
    try:
        kernel = linuxguest.vmlinuz()
    except linuxguest.Unavailable as e:
        # Never a skip: a run without the kernel has not tested Linux.
        raise Failure(f"Debian's kernel cannot be had here: {e}")
    initrd = os.path.join(ctx.tmp, "initrd.cpio.gz")
    try:
        linuxguest.initramfs(build, initrd)
    except (OSError, ValueError, linuxguest.Unavailable) as e:
        raise Failure(f"cannot build the initramfs: {e}")
    return kernel, initrd


def parse_fields(line):
    """{key: value} of a "SPLITLOCK k=v ... kernel="..."" line."""
    return dict((k, v.strip('"')) for k, v in re.findall(r'(\w+)=("[^"]*"|\S+)', line))


def guest_cpus(hi):
    """CPUS, or 1 where vmm --host-info says this KVM stops a guest that
    enters long mode itself, as Linux's AP trampoline does (the lab's can)."""
    if hi["kvm"]["probe"].get("enter_long_mode") is False:
        print("this KVM stops a guest that enters long mode itself (vmm --host-info: "
              "enter_long_mode false): Linux cannot start its other CPUs here; 1 vCPU")
        return 1
    if target().name == "lab":
        # Measured: with 2 vCPUs Linux brings both up, then both spin idle
        # and its boot goes no further within 120 s (docs/lab.md).
        print("the lab's nested TCG stalls Linux on 2 vCPUs after their start; 1 vCPU")
        return 1
    return CPUS


def program_failures(policy, hi, enumerated, sl, cpus=CPUS):
    """The split-lock program's report against what the policy implies."""
    fails = []
    want = {"cpus": cpus, "ops": OPS, "ok": 1}
    for k, v in want.items():
        if sl.get(k) != str(v):
            fails.append(f"splitlock: {k}={sl.get(k)}, want {v}")
    linux_arms = sl.get("vendor") == "GenuineIntel" and sl.get("hypervisor") == "0" and enumerated
    if not linux_arms:
        # Linux never sets detection up: every split lock completes.
        for k, v in {"done": cpus * OPS, "value": cpus * OPS, "sigbus": 0, "cpu_flag": 0,
                     "kernel_lines": 0}.items():
            if sl.get(k) != str(v):
                fails.append(f"splitlock: {k}={sl.get(k)}, want {v}: Linux does not set "
                             f"split-lock detection up here (vendor {sl.get('vendor')}, "
                             f"hypervisor bit {sl.get('hypervisor')}, {policy} "
                             f"{'enumerates' if enumerated else 'does not enumerate'})")
    elif sl.get("cpu_flag") == "1" and sl.get("kernel_lines") == "0":
        fails.append("splitlock: split_lock_detect in /proc/cpuinfo but no "
                     "'x86/split lock detection:' line in the kernel's log")
    probe = hi["kvm"]["probe"].get("cpuid_7_edx30_reaches_guest")
    if probe and sl.get("cpuid_7_edx30") != str(int(enumerated)):
        fails.append(f"splitlock: CPUID.(7,0):EDX[30]={sl.get('cpuid_7_edx30')} at CPL3, "
                     f"want {int(enumerated)} ({policy}; the host-info probe says the "
                     "VMM's CPUID reaches the guest)")
    return fails


def stats_failures(policy, watch, hi, stats_path, err, cpus=CPUS, armed=False):
    try:
        with open(stats_path) as f:
            vcpus = json.load(f)["vcpus"]
    except (OSError, ValueError, KeyError) as e:
        return [f"no valid --stats JSON ({type(e).__name__}: {e})"]
    total = {k: sum(v[k] for v in vcpus)
             for k in ("split_locks_detected", "single_steps", "unchecked_runs")}
    print(f"--stats over {len(vcpus)} vCPUs: {total}")
    if len(vcpus) != cpus:
        return [f"--stats has {len(vcpus)} vCPUs, want {cpus}"]
    if policy != "emulate":
        return [] if total["split_locks_detected"] == 0 else [
            f"{policy}: {total['split_locks_detected']} split locks detected in software, want 0"]
    if watch != "all":
        if armed:
            return []     # Linux set TEST_CTRL bit 29: its vCPUs are watched
        # TEST_CTRL bit 29 never set: nothing to watch, native speed.
        return [f"emulate: {total[k]} {k} although Linux never asked for #AC, want 0"
                for k in ("single_steps", "split_locks_detected") if total[k]]
    if hi["kvm"]["probe"]["singlestep_cpl3"]:
        fails = []
        if total["split_locks_detected"] < cpus * OPS:
            fails.append(f"emulate, watch all: {total['split_locks_detected']} split locks "
                         f"detected, but the program made {cpus * OPS} at CPL3")
        if not re.search(r"split lock at RIP", err):
            fails.append("emulate, watch all: no split-lock warning on stderr")
        return fails
    return [] if total["unchecked_runs"] > 0 else [
        "emulate, watch all: this KVM cannot single-step CPL3, yet --stats counts no "
        "unchecked runs"]


def console_failures(out, cpus=CPUS):
    fails = []
    if not re.search(r"^VMMTEST INIT ", out, re.M):
        return ["Linux did not reach /init (no 'VMMTEST INIT' line)"]
    m = re.search(r"^VMMTEST CPUS online=(\d+)", out, re.M)
    if not m or int(m.group(1)) != cpus:
        fails.append(f"CPUs online: {m.group(1) if m else 'no VMMTEST CPUS line'}, want {cpus}")
    echo = re.search(r"^VMMTEST ECHO <(.*)>\r?$", out, re.M)
    if not echo or echo.group(1) != TYPED:
        fails.append(f"the line typed on stdin did not come back: "
                     f"{echo.group(0) if echo else 'no VMMTEST ECHO line'}")
    return fails


def case_boot(ctx, policy, watch=None, build=None):
    hi = ctx.hi
    starts, enumerated = expectation(policy, hi)
    kernel, initrd = guest_files(ctx, build)
    cpus = guest_cpus(hi)
    stats = os.path.join(ctx.tmp, "stats.json")
    vmm = [ctx.vmm, "-c", str(cpus), "-m", MEMORY, "--split-lock=" + policy, "--stats=" + stats,
           "--timeout", scaled_str(BOOT_SECONDS)]
    vmm += ["--split-lock-watch=" + watch] if watch else []
    append = APPEND + (LAB_APPEND if target().name == "lab" else "")
    vmm += ["--initrd", initrd, "--append", append, kernel]
    r = run([sys.executable, os.path.join(HERE, "feed.py"), "--after", "VMMTEST READY",
             "--line", TYPED, "--"] + vmm, timeout=scaled(BOOT_SECONDS + 60))
    print(r.out + "--- stderr ---\n" + r.err)
    if r.hung:
        return [f"vmm did not end within {scaled(BOOT_SECONDS + 60)} s; killed"]
    if not starts:
        return refusal_failures(policy, r.status, r.out, r.err)
    if kernel_blocked(hi):
        return refused_failures(r)
    fails = console_failures(r.out, cpus)
    want = poweroff_status()
    if r.status != want:
        fails.append(f"exit status {r.status}, want {want} (the guest powered off)")
    lines = re.findall(r"^SPLITLOCK .*$", r.out, re.M)
    sl = parse_fields(lines[0]) if len(lines) == 1 else {}
    if len(lines) != 1:
        fails.append(f"{len(lines)} SPLITLOCK lines from the guest, want 1")
    else:
        fails += program_failures(policy, hi, enumerated, sl, cpus)
    word = "enumerated to the guest" if enumerated else "not enumerated"
    if not re.search(rf"^vmm: split-lock detection: {policy}, {word}", r.err, re.M):
        fails.append(f"stderr lacks vmm's policy line '{policy}, {word}'")
    return fails + stats_failures(policy, watch, hi, stats, r.err, cpus,
                                  armed=sl.get("cpu_flag") == "1")


def main():
    argv = sys.argv[1:]
    build = None
    if "--build" in argv:
        i = argv.index("--build")
        build = argv[i + 1]
        del argv[i:i + 2]
    if build is None:
        print("linux_test.py: --build BUILD is required", file=sys.stderr)
        return 2
    return case_main({"boot": lambda ctx, policy, watch=None: case_boot(ctx, policy, watch, build)},
                     __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
