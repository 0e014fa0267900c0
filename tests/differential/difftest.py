#!/usr/bin/env python3
"""Differential test: one case of the differential guest, run under
--split-lock=inherit (what the CPU does unwatched: the oracle) and under
--split-lock=emulate. The exit status and the console output must be the
same; on a difference it prints a unified diff (inherit first).

  difftest.py --vmm build/vmm --guest diffguest.bin --case NAME [--status N] [--cpus N]
  difftest.py --vmm build/vmm --guest diffguest.bin --list-check NAME...

--status is what the inherit run must end with (0: the case ran to its
end); a case that skips (status 63, "SKIP: reason") skips here too (77).
A case that prints "# split locks at CPL0: N" also has the emulate run's
--stats hold N split locks detected; one that also prints "# in exception
handlers: K" allows up to K of them unseen (on stock KVM userspace cannot
always watch a handler the CPU enters on its own: docs/design.md), but
only if --stats counts at least as many unchecked runs as split locks went
unseen (a run that hid two split locks must count two): never a pretence.
"# split locks at CPL1-3: M" adds M to N where vmm steps code outside CPL0
(vmm --host-info's singlestep_cpl3, without --host-quirks=no-cpl3-step), and
elsewhere allows M more unseen, on the same terms. "# unchecked runs: U"
is the test side's count of what emulate cannot watch in the case: --stats
must count exactly U where vmm steps code outside CPL0, at least U
elsewhere (nothing unchecked without being counted, nothing counted
without being unchecked).
--list-check checks that the guest's cases are exactly NAME... (so that
meson runs every one).

Exits 0 when both runs agree, 1 when they differ, 77 without /dev/kvm.
"""
import argparse
import difflib
import itertools
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from vmmlib import Failure, host_info, kvm_usable, lacks, report, run_vmm, scaled, scaled_str, skip  # noqa: E402

GUEST_SKIP = 63


def steps_outside_cpl0(a):
    """Whether --split-lock=emulate steps CPL1-3 code here (else it runs
    unchecked, counted): the probe, unless --host-quirks turned it off."""
    if "no-cpl3-step" in a.host_quirks.split(","):
        return False
    return host_info(a.vmm)["kvm"]["probe"].get("singlestep_cpl3") is True


def oracle_problem(vmm):
    """Why --split-lock=inherit is not the CPU unwatched here (a skip), or
    None. A vmm without --split-lock=emulate is broken: Failure."""
    hi = host_info(vmm)
    if "emulate" not in run_vmm(vmm, ["--help"], timeout=scaled(30)).out:
        raise Failure("vmm --help names no --split-lock=emulate: the product has it")
    if hi["mode"] == "fatal":
        return ("the host traps split locks (split_lock_detect=fatal), so under inherit "
                "vmm completes them itself: inherit is not the unwatched CPU here")
    return None


def run_policy(a, policy, append, stats=None, cpus=None):
    args = ["--split-lock=" + policy, "-c", str(cpus or a.cpus),
            "--timeout", scaled_str(a.timeout), "--append", append]
    # The cases never set TEST_CTRL bit 29 to be stepped: every vCPU is.
    if policy == "emulate":
        args.append("--split-lock-watch=all")
    if a.host_quirks:
        args.append("--host-quirks=" + a.host_quirks)
    if stats:
        args.append("--stats=" + stats)
    return run_vmm(a.vmm, args + [a.guest], timeout=scaled(a.timeout + 60))


def describe(r):
    return f"status {r.status}" + (" (killed: it did not finish)" if r.hung else "")


def show_stderr(policy, r, limit=3000):
    err = r.err if len(r.err) <= limit else r.err[:limit] + f"\n[... {len(r.err)} bytes]\n"
    print(f"--- {policy} stderr ---\n{err}", end="" if err.endswith("\n") else "\n")


def compare(a, append, expect_status, outer_stepped=True):
    """Runs both policies; returns (failures, skip reason)."""
    with tempfile.TemporaryDirectory(prefix="difftest-") as tmp:
        stats_path = os.path.join(tmp, "stats.json")
        ref = run_policy(a, "inherit", append)
        emu = run_policy(a, "emulate", append, stats=stats_path)
        try:
            with open(stats_path) as f:
                stats = json.load(f)
            stats["vcpus"][0]["split_locks_detected"]
        except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
            stats = f"the emulate run left no valid --stats JSON ({type(e).__name__}: {e})"
    return judge(ref, emu, stats, expect_status, outer_stepped)


def judge(ref, emu, stats, expect_status, outer_stepped=True):
    """The comparison of an inherit run (the oracle) and an emulate run, each
    with .status .out .err .hung .elapsed, and the emulate run's --stats (or
    None); outer_stepped: emulate steps CPL1-3 code here. Returns (failures,
    skip reason)."""
    fails = []
    print(f"--- inherit: {describe(ref)}, {ref.elapsed:.2f} s; emulate: {describe(emu)}, {emu.elapsed:.2f} s")
    print("--- inherit stdout (the oracle) ---")
    print(ref.out, end="" if ref.out.endswith("\n") else "\n")
    guest_skip = re.search(r"^SKIP: (.*)$", ref.out, re.M)
    if ref.status == GUEST_SKIP and guest_skip:
        if emu.status == ref.status and emu.out == ref.out:
            return [], guest_skip.group(1)
    elif ref.status != expect_status or ref.hung:
        fails.append(f"the inherit run ended with {describe(ref)}, the case expects {expect_status}: "
                     "the case itself is broken on this host")
        show_stderr("inherit", ref)
    if emu.status != ref.status or emu.hung:
        fails.append(f"exit status differs: inherit {describe(ref)}, emulate {describe(emu)}")
    if emu.out != ref.out:
        diff = difflib.unified_diff(ref.out.splitlines(), emu.out.splitlines(),
                                    "inherit", "emulate", lineterm="", n=2)
        print("--- the guest saw a difference (unified diff, inherit -> emulate) ---")
        print("\n".join(diff))
        fails.append("console output differs" + first_difference(ref.out, emu.out))
    m = re.search(r"^# split locks at CPL0: (\d+)$", ref.out, re.M)
    if isinstance(stats, str):
        fails.append(stats)
    elif m:
        want = int(m.group(1))
        got = sum(v["split_locks_detected"] for v in stats["vcpus"])
        unchecked = sum(v["unchecked_runs"] for v in stats["vcpus"])
        h = re.search(r"^# in exception handlers: (\d+)$", ref.out, re.M)
        may_miss = int(h.group(1)) if h else 0
        outer = re.search(r"^# split locks at CPL1-3: (\d+)$", ref.out, re.M)
        if outer:
            want += int(outer.group(1))
            if not outer_stepped:
                may_miss += int(outer.group(1))
        print(f"--- emulate --stats: {got} split locks detected, the guest made {want}"
              + (f" ({may_miss} in exception handlers)" if h else "")
              + f"; {unchecked} unchecked runs")
        if got > want or got < want - may_miss:
            fails.append(f"emulate detected {got} split locks, the guest made {want} at CPL0"
                         + (f", {may_miss} of them in exception handlers" if h else ""))
        elif want - got > unchecked:
            fails.append(f"{want - got} split locks went unseen but --stats counts only "
                         f"{unchecked} unchecked runs")
    if not isinstance(stats, str):
        for v in stats["vcpus"]:
            if sum(v["unchecked"].values()) != v["unchecked_runs"]:
                fails.append(f"vCPU {v['index']}: --stats counts {v['unchecked_runs']} unchecked "
                             f"runs, but its reasons add up to {v['unchecked']}")
    u = re.search(r"^# unchecked runs: (\d+)$", ref.out, re.M)
    if u and not isinstance(stats, str):
        unchecked = sum(v["unchecked_runs"] for v in stats["vcpus"])
        if unchecked != int(u.group(1)) if outer_stepped else unchecked < int(u.group(1)):
            fails.append(f"--stats counts {unchecked} unchecked runs, the case expects "
                         f"{'' if outer_stepped else 'at least '}{u.group(1)}")
    elif u and stats not in fails:
        fails.append(stats)
    if fails:
        show_stderr("emulate", emu)
    return fails, None


def first_difference(a, b):
    """Where two outputs first part, for a one-line report that outlives the
    log (an excused divergence is only a SKIP line in CI's summary)."""
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(itertools.zip_longest(la, lb), 1):
        if x != y:
            return (f" at line {i}: inherit {'(nothing)' if x is None else repr(x.strip())}, "
                    f"emulate {'(nothing)' if y is None else repr(y.strip())}")
    return ""


def excuse(fails, needs, vmm):
    """A divergence where a --needs feature was measured missing in the
    boot that ran the case (on this machine's KVM: by VMM's --host-info)
    is that feature's, not vmm's: (fails, skip reason). A hang, a crash
    or a sanitizer report is never excused."""
    why = [m for m in (lacks(n, vmm) for n in needs) if m]
    never = [f for f in fails if re.search(r"killed|did not finish|Sanitizer|status -\d+", f)]
    if not fails or not why or never:
        return fails, None
    for f in fails:
        print("diverged (not counted, see the SKIP): " + f)
    return [], "diverged (" + "; ".join(fails) + ") where " + "; ".join(why)


def list_check(a):
    r = run_policy(a, "inherit", "case=list", cpus=1)
    names = [l.strip() for l in r.out.splitlines()[1:] if l.strip()]
    fails = []
    if r.status != 0:
        fails.append(f"case=list ended with status {r.status}")
    missing = sorted(set(names) - set(a.list_check))
    extra = sorted(set(a.list_check) - set(names))
    if missing:
        fails.append("cases the guest has but meson does not run: " + " ".join(missing))
    if extra:
        fails.append("cases meson runs but the guest does not have: " + " ".join(extra))
    if len(names) != len(set(names)):
        fails.append("the guest lists a case twice")
    print(f"{len(names)} cases in the guest, {len(a.list_check)} in meson")
    return fails


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vmm", required=True)
    ap.add_argument("--guest", required=True)
    ap.add_argument("--case")
    ap.add_argument("--status", type=int, default=0,
                    help="status the inherit run must end with")
    ap.add_argument("--cpus", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=60,
                    help="vmm --timeout of each run")
    ap.add_argument("--list-check", nargs="+")
    ap.add_argument("--host-quirks", default="",
                    help="vmm --host-quirks of every run: a quirky KVM's path on this one")
    ap.add_argument("--needs", action="append", default=[],
                    help="what the case needs of the CPU and KVM: where the boot's probe "
                         "measured it missing, a divergence skips (meson.build)")
    a = ap.parse_args()

    try:
        why = kvm_usable() or oracle_problem(a.vmm)
    except Failure as e:
        return report([str(e)])
    if why:
        return skip(why)
    if not os.path.exists(a.guest):
        print(f"FAIL: no differential guest at {a.guest}")
        return 1
    if a.list_check:
        fails = list_check(a)
    else:
        missing = [n for n in a.needs if lacks(n, a.vmm)]
        if missing and a.timeout > 10:
            # Without it the emulate run may spin to its --timeout; only a
            # divergence can be excused then, so 10 s show it as well as 60.
            print(f"--- {', '.join(missing)} measured missing here: --timeout 10, not {a.timeout:g}")
            a.timeout = 10
        fails, why = compare(a, "case=" + a.case, a.status, steps_outside_cpl0(a))
        if why is None:
            fails, why = excuse(fails, a.needs, a.vmm)
        if why is not None:
            return skip(why)
    return report(fails)


if __name__ == "__main__":
    sys.exit(main())
