#!/usr/bin/env python3
"""Split-lock policy end to end: the guest's view must match the policy given
and what `vmm --host-info --json` says this host can do.

  policy_test.py --vmm build/vmm --guest build/guest.bin CASE [ARGS]

CASE is one of:
  policy POLICY CPUS   one VM; its guest diagnostics agree with the policy
  concurrent           VMs with different policies at once, each its own answer
  stats                --stats=FILE counts the guest's MSR accesses exactly
  ratelimit N          emulate with --split-lock-ratelimit=N: the guest's split
                       locks are all emulated, and beyond N a second delayed
  hypervisor           CPUID.1:ECX[31] as a guest reads it, under inherit, off
                       and emulate and each --hypervisor-bit: auto sets it
                       unless detection is enumerated; where this KVM answers
                       leaf 1 from the host, a warning says what the guest sees

Every VM under --split-lock=emulate runs with --stats and
--split-lock-watch=all, and its
split_locks_detected must equal the number of split locks the guest says it
made (split_locks_made.cpl0= and .cpl3=), not merely come close.
Exits 0 on success, 1 on failure, 77 when /dev/kvm is unusable.
"""
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmmlib import (HOST_LOSS_WARNING, Skip, case_main, parse_tap, run_vmm, scaled,  # noqa: E402
                    scaled_str, start, tap_failures, target)

EXIT_POLICY = 78
REFUSAL = r"^vmm: error: --split-lock=on cannot be honoured: .*split_lock_detect=fatal"


def expectation(policy, hi):
    """(starts, enumerated) as docs/design.md's policy table says."""
    deliver = hi["can_deliver_ac"]
    if policy == "emulate":
        return True, True
    if policy == "off":
        return True, False
    if policy == "on":
        return deliver, deliver
    return True, deliver


def refusal_failures(policy, status, out, err, refusal=REFUSAL):
    """A VM that vmm must refuse to start under policy: 78 and one line."""
    fails = []
    if status != EXIT_POLICY:
        fails.append(f"{policy}: exit {status}, expected {EXIT_POLICY} (refused)")
    if not re.search(refusal, err, re.M):
        fails.append(f"{policy}: no one-line refusal on stderr")
    if out:
        fails.append(f"{policy}: the guest ran although vmm refused")
    return fails


def guest_view_failures(policy, hi, enumerated, err, diags):
    """vmm's policy line, and what the guest saw of split-lock detection
    (its sld=, core_capabilities= and CPUID diagnostics) against the policy
    and the host's --host-info probe."""
    fails = []
    word = "enumerated to the guest" if enumerated else "not enumerated"
    if not re.search(rf"^vmm: split-lock detection: {policy}, {word}", err, re.M):
        fails.append(f"{policy}: stderr lacks the policy line '{policy}, {word}'")
    want_sld = "sld=enumerated" if enumerated else "sld=not-enumerated"
    want_caps = "core_capabilities=0x20" if enumerated else "core_capabilities=0x0"
    for want in (want_sld, want_caps):
        if want not in diags:
            fails.append(f"{policy}: guest did not report '{want}' (saw {[d for d in diags if '=' in d]})")
    probe = hi["kvm"]["probe"]["cpuid_7_edx30_reaches_guest"]
    cpuid_diag = [d for d in diags if d.startswith("cpuid.7.0.edx[30]=")]
    if probe is not None and cpuid_diag != [f"cpuid.7.0.edx[30]={int(probe)}"]:
        fails.append(f"{policy}: guest saw {cpuid_diag}, host-info probe says {probe}")
    return fails + nested_failures(policy, hi, err, diags)


def nested_failures(policy, hi, err, diags):
    """SVM/VMX: what KVM offers reaches the guest, except under emulate,
    which cannot watch a nested guest and hides it, saying so on stderr."""
    offered = hi["kvm"].get("nested")
    if offered is None:
        return [f"{policy}: vmm --host-info --json has no kvm.nested"]
    want = "none" if policy == "emulate" else offered
    seen = [d for d in diags if d.startswith("nested=")]
    fails = []
    if seen != [f"nested={want}"]:
        fails.append(f"{policy}: guest reported {seen}, want ['nested={want}'] "
                     f"(KVM offers {offered})")
    said = re.search(r"^vmm: --split-lock=emulate hides (SVM|VMX) from the guest", err, re.M)
    hides = policy == "emulate" and offered != "none"
    if bool(said) != hides or (said and said.group(1) != offered.upper()):
        fails.append(f"{policy}: stderr {'lacks' if hides else 'has'} the line that emulate "
                     f"hides {offered.upper()}")
    return fails


def split_lock_count_failures(policy, hi, diags, st):
    """--stats against the split locks the guest made: under emulate every
    one is seen (detected), each then emulated or delivered as #AC; CPL3 ones
    go unseen only where this host's KVM cannot single-step CPL3 (the probe
    singlestep_cpl3 false; vmm then sets BOOT_FLAG_SPLIT_LOCK_CPL0_ONLY), and
    then --stats must own up to unchecked runs. Other policies check nothing
    in software: 0 detected."""
    vcpus = st["vcpus"]
    detected = sum(v["split_locks_detected"] for v in vcpus)
    handled = sum(v["split_locks_emulated"] + v["ac_injected"] for v in vcpus)
    unchecked = sum(v["unchecked_runs"] for v in vcpus)
    if policy != "emulate":
        return [] if detected == 0 else [
            f"{policy}: --stats counts {detected} split locks detected in software, want 0"]
    made = {}
    for d in diags:
        m = re.match(r"^split_locks_made\.(cpl[03])=(\d+)$", d)
        if m:
            made.setdefault(m.group(1), []).append(int(m.group(2)))
    if sorted(made) != ["cpl0", "cpl3"] or any(len(x) != 1 for x in made.values()):
        return [f"{policy}: the guest did not say how many split locks it made "
                f"(split_locks_made.cpl0= and .cpl3= once each; got {made})"]
    cpl0, cpl3 = made["cpl0"][0], made["cpl3"][0]
    step3 = hi["kvm"]["probe"]["singlestep_cpl3"]
    print(f"split locks: the guest made {cpl0} at CPL0 and {cpl3} at CPL3; --stats: "
          f"{detected} detected, {handled} emulated or #AC, {unchecked} unchecked runs; "
          f"singlestep_cpl3 {step3}")
    if step3 is None:
        return [f"{policy}: vmm --host-info did not probe singlestep_cpl3: cannot tell "
                "which split locks emulate must see"]
    want = cpl0 + (cpl3 if step3 else 0)
    fails = []
    if detected != want:
        fails.append(f"{policy}: --stats split_locks_detected is {detected}, but the guest made "
                     f"{cpl0} at CPL0 and {cpl3} at CPL3"
                     + ("" if step3 else " (CPL3 unseen here: no single-step at CPL3)")
                     + f": want exactly {want}")
    if handled != detected:
        fails.append(f"{policy}: {detected} split locks detected but {handled} emulated or "
                     "delivered as #AC: each must be one or the other")
    if not step3 and unchecked < cpl3:
        fails.append(f"{policy}: {cpl3} split locks at CPL3 went unseen (no single-step at "
                     f"CPL3) but --stats counts only {unchecked} unchecked runs")
    return fails


def start_vm(ctx, policy, cpus, extra=()):
    """Under emulate, with --stats (to a file of its own) unless extra has it,
    and --split-lock-watch=all: check() holds the split locks it saw against
    every one the guest made, TEST_CTRL bit 29 set or not."""
    extra = list(extra)
    if policy == "emulate":
        extra.append("--split-lock-watch=all")
    stats = next((x.split("=", 1)[1] for x in extra if x.startswith("--stats=")), None)
    if stats is None and policy == "emulate":
        fd, stats = tempfile.mkstemp(prefix="stats-", suffix=".json", dir=ctx.tmp)
        os.close(fd)
        extra.append("--stats=" + stats)
    vm = start([ctx.vmm, "--split-lock=" + policy, "-c", str(cpus), "--timeout", scaled_str(120),
                *extra, ctx.guest])
    vm.stats_path = stats
    return vm


def load_stats(vm, policy):
    """vm's --stats JSON, or a failure (str) if missing or malformed."""
    try:
        with open(vm.stats_path) as f:
            st = json.load(f)
        for v in st["vcpus"]:
            for k in ("split_locks_detected", "split_locks_emulated", "ac_injected",
                      "unchecked_runs"):
                if not isinstance(v[k], int):
                    raise TypeError(f"vCPU {v.get('index')} {k} is {v[k]!r}")
        return st
    except (OSError, ValueError, KeyError, TypeError) as e:
        return f"{policy}: no valid --stats JSON in {vm.stats_path} ({type(e).__name__}: {e})"


def check(vm, policy, hi):
    """Returns a list of failures for one VM, waiting for its end."""
    r = vm.run = vm.wait(timeout=scaled(240))
    starts, enumerated = expectation(policy, hi)
    print(r.out + "--- stderr ---\n" + r.err)
    if r.hung:
        return [f"{policy}: vmm did not finish within {scaled(240)} s; killed"]
    if not starts:
        return refusal_failures(policy, r.status, r.out, r.err)
    fails = []
    if r.status != 0:
        fails.append(f"{policy}: exit {r.status}, expected 0")
    tap_fails, diags = tap_failures(r.out)
    fails += [f"{policy}: {f}" for f in tap_fails]
    if vm.stats_path:
        st = vm.stats = load_stats(vm, policy)
        if isinstance(st, str):
            fails.append(st)
        else:
            fails += split_lock_count_failures(policy, hi, diags, st)
    return fails + guest_view_failures(policy, hi, enumerated, r.err, diags) + \
        loss_warning_failures(policy, hi, r.err)


def loss_warning_failures(policy, hi, err):
    """Under emulate on a KVM that cannot single-step CPL3 the loss of
    detection there is a warning (which -q keeps), and only then."""
    step3 = hi["kvm"]["probe"]["singlestep_cpl3"]
    want = policy == "emulate" and step3 is False
    got = bool(HOST_LOSS_WARNING.search(err))
    if want != got:
        return [f"{policy}: the CPL3 loss warning is {'missing' if want else 'there'} "
                f"(singlestep_cpl3 {step3}); it must be a 'vmm: warning:' line exactly "
                "where emulate cannot step CPL3"]
    return []


def case_policy(ctx, policy, cpus):
    hi = ctx.hi
    return check(start_vm(ctx, policy, int(cpus)), policy, hi)


def case_concurrent(ctx):
    policies = ["inherit", "off", "on", "emulate", "inherit"]
    hi = ctx.hi
    vms = [start_vm(ctx, p, 2) for p in policies]
    fails = []
    for vm, p in zip(vms, policies):
        fails += check(vm, p, hi)
    return fails


def case_stats(ctx):
    hi = ctx.hi
    path = os.path.join(ctx.tmp, "stats.json")
    vm = start_vm(ctx, "off", 2, ["--stats=" + path])
    fails = check(vm, "off", hi)
    st = vm.stats
    if isinstance(st, str):
        return fails
    print(json.dumps(st, indent=1))
    v0, v1 = st["vcpus"]
    # The status vmm exited with (check() judged it: 0, or a failure the CPU explains).
    head = {k: v for k, v in st["split_lock"].items() if k != "host_profile"}
    if st["status"] != vm.run.status or head != {"policy": "off", "enumerated": False} or \
            "host_profile" not in st["split_lock"]:
        fails.append(f"stats header wrong: {st['status']} {st['split_lock']}")
    # What the self-test does on vCPU 0 when not enumerated: one read and
    # two writes of each MSR; every write and the TEST_CTRL read fault.
    want = {"test_ctrl": {"reads": 1, "writes": 2},
            "core_capabilities": {"reads": 1, "writes": 2}}
    if v0["msr"] != want:
        fails.append(f"vCPU 0 MSR counts {v0['msr']}, expected {want}")
    if v0["gp_injected"] != 5 or v0["ac_injected"] != 0 or v0["split_lock_stops"] != 0:
        fails.append(f"vCPU 0 injected #GP {v0['gp_injected']} (want 5), #AC {v0['ac_injected']}")
    if v0["exits"].get("x86_rdmsr") != 2 or v0["exits"].get("x86_wrmsr") != 4:
        fails.append(f"vCPU 0 MSR exits {v0['exits']}")
    if v1["gp_injected"] != 0 or v1["exits"].get("x86_rdmsr"):
        fails.append(f"vCPU 1 counted MSR work it did not do: {v1}")
    if "io" not in v0["exits"] or v1["index"] != 1:
        fails.append("per-vCPU exit counts missing")
    return fails


def case_ratelimit(ctx, rate):
    hi = ctx.hi
    path = os.path.join(ctx.tmp, "stats.json")
    # The guest makes its split locks about time_scale times slower on a
    # slower target: a limit it still runs into there.
    rate = str(max(1, round(int(rate) / target().time_scale)))
    vm = start_vm(ctx, "emulate", 1, ["--split-lock-ratelimit=" + rate, "--stats=" + path])
    # check() holds split_locks_detected against the guest's own count, exactly.
    fails = check(vm, "emulate", hi)
    if isinstance(vm.stats, str):
        return fails
    v0 = vm.stats["vcpus"][0]
    print(json.dumps(v0))
    if v0["split_lock_delays"] < 1 or v0["split_lock_delay_ns"] <= 0:
        fails.append(f"--split-lock-ratelimit={rate} never delayed a vCPU: {v0}")
    if v0["single_steps"] < 1000:
        fails.append(f"only {v0['single_steps']} single-steps under emulate")
    return fails


# mov eax,1; cpuid; mov eax,ecx; shr eax,31; add eax,40; mov dx,0xf4;
# out dx,eax; hlt: the guest exits 40 + CPUID.1:ECX[31].
HYPERVISOR_IMAGE = "b8010000000fa289c8c1e81f83c02866baf400eff4"
HYPERVISOR_WARNING = (r"^vmm: warning: CPUID\.1:ECX\[31\] \(hypervisor\) is (set|clear) in the guest's "
                      r"CPUID table \(--hypervisor-bit=\w+\), but this KVM answers leaf 1 from the host: "
                      r"the guest sees it (set|clear)$")


def host_hypervisor():
    with open("/proc/cpuinfo") as f:
        return bool(re.search(r"^flags\s*:.*\bhypervisor\b", f.read(), re.M))


def case_hypervisor(ctx):
    hi = ctx.hi
    reaches = hi["kvm"]["probe"]["cpuid_1_ecx31_reaches_guest"]
    if reaches is None:
        raise Skip("vmm --host-info could not probe whether CPUID leaf 1 reaches a guest")
    image = os.path.join(ctx.tmp, "hypervisor.img")
    with open(image, "wb") as f:
        f.write(bytes.fromhex(HYPERVISOR_IMAGE))
    host, fails = host_hypervisor(), []
    for policy in ("inherit", "off", "emulate"):
        for mode in ("auto", "on", "off"):
            table = {"on": True, "off": False}.get(mode, not expectation(policy, hi)[1])
            want = table if reaches else host
            r = run_vmm(ctx.vmm, ["-q", "--split-lock=" + policy, "--hypervisor-bit=" + mode,
                                  "--timeout", scaled_str(20), image], timeout=scaled(60))
            warned = re.search(HYPERVISOR_WARNING, r.err, re.M)
            print(f"{policy} --hypervisor-bit={mode}: status {r.status}, want {40 + want}"
                  f"{', warned' if warned else ''}")
            if r.status != 40 + want:
                fails.append(f"{policy}, {mode}: the guest saw CPUID.1:ECX[31] = {r.status - 40}, "
                             f"want {int(want)} (table {int(table)}, host {int(host)}, reaches {reaches})")
            if bool(warned) != (not reaches and table != host):
                fails.append(f"{policy}, {mode}: the warning that the guest sees the host's bit is "
                             f"{'there' if warned else 'missing'}: {r.err.strip()!r}")
    return fails


CASES = {"policy": case_policy, "hypervisor": case_hypervisor, "concurrent": case_concurrent,
         "stats": case_stats, "ratelimit": case_ratelimit}

if __name__ == "__main__":
    sys.exit(case_main(CASES, __doc__))
