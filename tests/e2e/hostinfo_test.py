#!/usr/bin/env python3
"""vmm --host-info [--json]: what a person or a script reads of this host,
with or without a KVM (without one, that output is what the user sees).

  hostinfo_test.py --vmm build/vmm json|text|profile

"profile": what --split-lock=emulate stepped by (--stats's
split_lock.host_profile) is what --host-info's probes found, and each
--host-quirks name forces its entry the quirky way and no other; under
inherit the entries of what KVM runs at CPL0 are probed too, the stepping
ones not (false).

On the lab's stock KVM the answer must also show what makes the lab worth
having: CPUID.(7,0):EDX[30] reaches guests and single-steps work at CPL0
and CPL3. Exits 0 on success, 1 on failure.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmmlib import Failure, Skip, case_main, image, run, scaled, target  # noqa: E402

CAPS = ("user_space_msr", "msr_filter", "exception_payload", "vcpu_events", "set_guest_debug",
        "bus_lock_exit", "immediate_exit", "nr_vcpus", "max_vcpus")


def kvm_here():
    return target().why_not() is None


def case_json(ctx):
    r = run([ctx.vmm, "--host-info", "--json"], timeout=scaled(60))
    print(r.out + "--- stderr ---\n" + r.err)
    if r.hung or r.status != 0:
        return [f"exit status {r.status}"]
    d = json.loads(r.out)
    fails = []
    if d["mode"] not in ("none", "off", "warn", "fatal", "ratelimit"):
        fails.append(f"mode {d['mode']!r}")
    if d["can_deliver_ac"] != (d["mode"] == "fatal"):
        fails.append(f"can_deliver_ac {d['can_deliver_ac']} with mode {d['mode']}")
    kvm, probe = d["kvm"], d["kvm"]["probe"]
    if set(kvm["caps"]) != set(CAPS):
        fails.append(f"caps {sorted(kvm['caps'])}, expected {sorted(CAPS)}")
    if not kvm_here():
        # What a user without /dev/kvm reads: why, and nothing made up.
        if kvm["available"] is not False or not kvm["error"]:
            fails.append(f"no KVM here, but available {kvm['available']}, error {kvm['error']!r}")
        if any(v is not None for v in kvm["caps"].values()):
            fails.append(f"no KVM here, but caps {kvm['caps']}")
        if any(v is not None for k, v in probe.items() if k != "error") or not probe["error"]:
            fails.append(f"no KVM here, but probe {probe}")
        return fails
    if kvm["available"] is not True:
        fails.append(f"KVM usable here, host-info says available {kvm['available']}: {kvm['error']}")
    need = {"user_space_msr", "msr_filter", "vcpu_events"}
    if not all(kvm["caps"][c] for c in need):
        fails.append(f"caps {kvm['caps']} lack some of {sorted(need)}")
    if probe["singlestep_cpl0"] not in (True, False):
        fails.append(f"singlestep_cpl0 {probe['singlestep_cpl0']!r}")
    if target().name == "lab":
        # Stock KVM honours both; the project's machines' KVM does not.
        if probe["cpuid_7_edx30_reaches_guest"] is not True:
            fails.append("stock KVM passes KVM_SET_CPUID2's CPUID.(7,0):EDX[30] on, the probe "
                         f"says {probe['cpuid_7_edx30_reaches_guest']} ({probe['error']})")
        if probe["singlestep_cpl0"] is not True or probe["singlestep_cpl3"] is not True:
            fails.append(f"stock KVM single-steps at CPL0 and CPL3, the probe says CPL0 "
                         f"{probe['singlestep_cpl0']}, CPL3 {probe['singlestep_cpl3']}")
        # Differential cases outside IA-32e mode are left out where it says no.
        for p in ("cmpxchg16b_cpl0", "soft_int_cpl0", "xsave_cpl0", "kernel_insns_cpl0"):
            if probe[p] is not True:
                fails.append(f"stock KVM runs what {p} probes at CPL0, the probe says "
                             f"{probe[p]} ({probe['error']})")
        if probe["leave_long_mode"] is not True:
            fails.append("stock KVM lets a guest leave IA-32e mode and come back, the probe "
                         f"says {probe['leave_long_mode']} ({probe['error']})")
    return fails


def case_text(ctx):
    r = run([ctx.vmm, "--host-info"], timeout=scaled(60))
    print(r.out + "--- stderr ---\n" + r.err)
    if r.hung or r.status != 0:
        return [f"exit status {r.status}"]
    want = [r"^effective mode: +(none|off|warn|fatal|ratelimit)", r"^split-lock #AC delivery: +(yes|no)"]
    want += ([r"KVM_CAP_X86_USER_SPACE_MSR"] if kvm_here() else
             [r"^KVM: +unavailable: .*/dev/kvm", r"without a KVM here: .*lab"])
    return [f"stdout does not match /{rx}/" for rx in want if not re.search(rx, r.out, re.M)]


# 64-bit machine code, loaded at 1 MiB: out 0xf4 with eax = 0 (exit 0).
EXIT_0 = "66baf400" "31c0" "ef"
QUIRKS = {"no-cpl3-step": ("step_cpl3", False), "no-hw-breakpoints": ("step_hwbp", False),
          "no-guest-data-breakpoints": ("guest_databp", False),
          "no-exec-breakpoint-beside-step": ("exec_bp_beside_step", False),
          "iret-step-lost": ("iret_step_lost", True),
          "no-cmpxchg16b-cpl0": ("cmpxchg16b_cpl0", False),
          "no-soft-int-cpl0": ("soft_int_cpl0", False),
          "no-xsave-cpl0": ("xsave_cpl0", False),
          "no-kernel-insns-cpl0": ("kernel_insns_cpl0", False)}
CPL0 = {"cmpxchg16b_cpl0": "cmpxchg16b_cpl0", "soft_int_cpl0": "soft_int_cpl0",
        "xsave_cpl0": "xsave_cpl0", "kernel_insns_cpl0": "kernel_insns_cpl0"}


def stepped_by(ctx, quirks, policy="emulate"):
    stats = os.path.join(ctx.tmp, "stats.json")
    args = [ctx.vmm, "-q", "--split-lock=" + policy, "--stats=" + stats, "--timeout", "30"]
    r = run(args + (["--host-quirks=" + quirks] if quirks else []) + [image(ctx.tmp, EXIT_0)],
            timeout=scaled(60))
    print(f"--- --host-quirks={quirks}: status {r.status}\n{r.err}", end="")
    if r.status == 69:
        raise Skip(f"vmm --split-lock=emulate does not run here: {r.err.strip()}")
    if r.status != 0:
        raise Failure(f"--host-quirks={quirks}: exit status {r.status}")
    with open(stats) as f:
        return json.load(f)["split_lock"]["host_profile"]


def case_profile(ctx):
    probe = ctx.hi["kvm"]["probe"]
    probed = {"step_cpl3": probe["singlestep_cpl3"] is True,
              "step_hwbp": probe["hw_breakpoint"] is True,
              "guest_databp": probe["guest_data_breakpoint_cpl0"] is True,
              "exec_bp_beside_step": probe["exec_bp_beside_step"] is True,
              "iret_step_lost": probe["iret_step"] is False}
    cpl0 = {entry: probe[key] is True for entry, key in CPL0.items()}
    fails = []
    got = stepped_by(ctx, "", "inherit")
    want = dict({k: False for k in probed}, **cpl0)
    if got != want:
        fails.append(f"under inherit: ran by {got}, the probes say {want}")
    got = stepped_by(ctx, "no-xsave-cpl0", "inherit")
    if got != dict(want, xsave_cpl0=False):
        fails.append(f"under inherit, --host-quirks=no-xsave-cpl0: ran by {got}")
    probed.update(cpl0)
    got = stepped_by(ctx, "")
    if got != probed:
        fails.append(f"without quirks: stepped by {got}, the probes say {probed}")
    for name, (entry, quirky) in QUIRKS.items():
        want = dict(probed, **{entry: quirky})
        got = stepped_by(ctx, name)
        if got != want:
            fails.append(f"--host-quirks={name}: stepped by {got}, expected {want}")
    return fails


if __name__ == "__main__":
    sys.exit(case_main({"json": case_json, "text": case_text, "profile": case_profile}, __doc__,
                       needs_kvm=False))
