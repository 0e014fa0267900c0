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
Exits 0 on success, 1 on failure, 77 when /dev/kvm is unusable.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmmtest import kvm_usable, parse_tap  # noqa: E402

SKIP = 77
EXIT_POLICY = 74


def host_info(vmm):
    out = subprocess.run([vmm, "--host-info", "--json"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


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


def start(vmm, guest, policy, cpus, hi, extra=()):
    cmd = [vmm, "--split-lock=" + policy, "-c", str(cpus), "--timeout", "120",
           *extra, guest]
    print("$ " + " ".join(cmd))
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, errors="replace")


def check(proc, policy, hi):
    """Returns a list of failures for one finished VM."""
    out, err = proc.communicate(timeout=240)
    starts, enumerated = expectation(policy, hi)
    print(out + "--- stderr ---\n" + err)
    fails = []
    if not starts:
        if proc.returncode != EXIT_POLICY:
            fails.append(f"{policy}: exit {proc.returncode}, expected {EXIT_POLICY} (refused)")
        if not re.search(r"^vmm: error: --split-lock=on cannot be honoured: .*split_lock_detect=fatal", err, re.M):
            fails.append(f"{policy}: no one-line refusal on stderr")
        if out:
            fails.append(f"{policy}: the guest ran although vmm refused")
        return fails
    if proc.returncode != 0:
        fails.append(f"{policy}: exit {proc.returncode}, expected 0")
    word = "enumerated to the guest" if enumerated else "not enumerated"
    if not re.search(rf"^vmm: split-lock detection: {policy}, {word}", err, re.M):
        fails.append(f"{policy}: stderr lacks the policy line '{policy}, {word}'")
    plan, results, diags = parse_tap(out)
    if plan is None or plan != len(results) or not all(r[0] for r in results):
        fails.append(f"{policy}: guest TAP incomplete or failing")
    want_sld = "sld=enumerated" if enumerated else "sld=not-enumerated"
    want_caps = "core_capabilities=0x20" if enumerated else "core_capabilities=0x0"
    for want in (want_sld, want_caps):
        if want not in diags:
            fails.append(f"{policy}: guest did not report '{want}' (saw {[d for d in diags if '=' in d]})")
    probe = hi["kvm"]["probe"]["cpuid_7_edx30_reaches_guest"]
    cpuid_diag = [d for d in diags if d.startswith("cpuid.7.0.edx[30]=")]
    if probe is not None and cpuid_diag != [f"cpuid.7.0.edx[30]={int(probe)}"]:
        fails.append(f"{policy}: guest saw {cpuid_diag}, host-info probe says {probe}")
    return fails


def case_policy(vmm, guest, hi, policy, cpus):
    return check(start(vmm, guest, policy, int(cpus), hi), policy, hi)


def case_concurrent(vmm, guest, hi):
    policies = ["inherit", "off", "on", "emulate", "inherit"]
    procs = [start(vmm, guest, p, 2, hi) for p in policies]
    fails = []
    for proc, p in zip(procs, policies):
        fails += check(proc, p, hi)
    return fails


def case_stats(vmm, guest, hi):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "stats.json")
        proc = start(vmm, guest, "off", 2, hi, ["--stats=" + path])
        fails = check(proc, "off", hi)
        with open(path) as f:
            st = json.load(f)
    print(json.dumps(st, indent=1))
    v0, v1 = st["vcpus"]
    if st["status"] != 0 or st["split_lock"] != {"policy": "off", "enumerated": False}:
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


def case_ratelimit(vmm, guest, hi, rate):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "stats.json")
        proc = start(vmm, guest, "emulate", 1, hi,
                     ["--split-lock-ratelimit=" + rate, "--stats=" + path])
        fails = check(proc, "emulate", hi)
        with open(path) as f:
            st = json.load(f)
    v0 = st["vcpus"][0]
    print(json.dumps(v0))
    # The self-test's unasked split locks: one across a line and one across
    # a page for each op that can split, on vCPU 0 at CPL0.
    if v0["split_locks_emulated"] < 40:
        fails.append(f"only {v0['split_locks_emulated']} split locks emulated")
    if v0["split_lock_delays"] < 1 or v0["split_lock_delay_ns"] <= 0:
        fails.append(f"--split-lock-ratelimit={rate} never delayed a vCPU: {v0}")
    if v0["split_locks_detected"] < v0["split_locks_emulated"] + v0["ac_injected"] - 1:
        fails.append("emulate's software check did not see every split lock")
    if v0["single_steps"] < 1000:
        fails.append(f"only {v0['single_steps']} single-steps under emulate")
    return fails


def run_case(cases, argv):
    """--vmm V --guest G CASE [PARAMS]: runs cases[CASE](vmm, guest, hi, *PARAMS)."""
    vmm = argv[argv.index("--vmm") + 1]
    guest = argv[argv.index("--guest") + 1]
    rest = [a for a in argv if a not in ("--vmm", vmm, "--guest", guest)]
    why = kvm_usable()
    if why:
        print(f"SKIP: {why}")
        return SKIP
    hi = host_info(vmm)
    print("host: mode %s, can deliver #AC: %s" % (hi["mode"], hi["can_deliver_ac"]))
    fails = cases[rest[0]](vmm, guest, hi, *rest[1:])
    for f in fails:
        print("FAIL: " + f)
    return 1 if fails else 0


def main():
    return run_case({"policy": case_policy, "concurrent": case_concurrent,
                     "stats": case_stats, "ratelimit": case_ratelimit}, sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
