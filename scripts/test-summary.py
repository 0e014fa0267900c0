#!/usr/bin/env python3
"""Adds up meson's test logs, the mutants' verdicts and test.sh's phases
into its closing lines: a table of each phase's time, then

  tests: N passed, N failed (...), N skipped; mutants: N of N killed; VM boots: N on this machine's KVM, N on the lab's stock KVM

  test-summary.py --boots BOOTLOG [--phases TSV] [--mutants JSON ...] LABEL=LOG [LABEL=LOG ...]

"failed" counts every failure of the run: failed tests, mutants that were
not killed (survived, unjudged, in error, or whose edit or build failed),
and phases that failed (a lab that did not come up or end cleanly, a
build) without a failed test to show for it. A mutant's verdict is the
last --mutants file's that names it (the lab judges what this machine's
KVM did not kill). TSV: a line per phase, "name<TAB>seconds<TAB>status";
status 0 passed, 77 skipped (allowed), anything else failed.

Each LOG is a meson testlog (JSON lines), LABEL says which build and KVM
ran it (e.g. gcc, gcc-lab, clang, asan). A test is counted once however
many runs ran it: failed if it failed in any, passed if it passed in any,
skipped if every run skipped it; a line per run gives that run's counts.
Every test skipped everywhere is listed with its reason. BOOTLOG holds a
line per VM a test booted, naming the KVM (tests/e2e/vmmlib.py).

Exits 1 on a failure, a missing log, or a run that booted no VM at all
(it tested nothing of the product: said why), unless VMM_TEST_ALLOW_NO_KVM=1
for the last.
"""
import argparse
import json
import os
import re
import sys

PASS, FAIL, SKIP = "passed", "failed", "skipped"


def verdict(result):
    if result in ("OK", "EXPECTEDFAIL"):
        return PASS
    if result == "SKIP":
        return SKIP
    return FAIL


def skip_reason(stdout):
    m = re.findall(r"^SKIP:? (.*)$", stdout or "", re.M)
    return m[-1].strip() if m else "(no reason printed)"


def plural(n, word):
    return f"{n} {word}" + ("" if n == 1 else "s")


def mutant_verdicts(paths):
    """(killed, not killed): mutant names, each by its last verdict."""
    last = {}
    for p in paths:
        if not os.path.exists(p):
            continue
        with open(p) as f:
            for m in json.load(f)["mutants"]:
                last[m["name"]] = m["verdict"]
    killed = [n for n, v in last.items() if v == "killed"]
    others = [f"{n}: {v}" for n, v in sorted(last.items()) if v != "killed"]
    for o in others:
        print(f"summary: MUTANT NOT KILLED {o}")
    return killed, others


def phase_table(path):
    """Prints the phases' times; returns the names of those that failed."""
    if not path or not os.path.exists(path):
        return []
    rows = [ln.rstrip("\n").split("\t") for ln in open(path) if ln.strip()]
    print("phase                  time   status")
    failed = []
    for name, secs, rc in rows:
        word = {"0": "ok", "77": "skipped"}.get(rc, f"FAILED ({rc})")
        if word.startswith("FAILED"):
            failed.append(name)
        print(f"{name:<20} {int(secs) // 60:3d}:{int(secs) % 60:02d}   {word}")
    total = sum(int(r[1]) for r in rows)
    print(f"{'all phases':<20} {total // 60:3d}:{total % 60:02d}")
    return failed


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--boots", required=True)
    ap.add_argument("--phases")
    ap.add_argument("--mutants", action="append", default=[])
    ap.add_argument("logs", nargs="+", metavar="LABEL=LOG")
    a = ap.parse_args()
    bad = False
    tests = {}   # name -> {label: (verdict, reason)}
    per_label = {}
    for item in a.logs:
        label, path = item.split("=", 1)
        if not os.path.exists(path):
            print(f"summary: {label}: {path} is missing: that run did not happen", file=sys.stderr)
            bad = True
            continue
        counts = {PASS: 0, FAIL: 0, SKIP: 0}
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                v = verdict(r["result"])
                counts[v] += 1
                name = r["name"].split(" / ", 1)[-1]
                tests.setdefault(name, {})[label] = (v, skip_reason(r.get("stdout")) if v == SKIP else "")
        per_label[label] = counts
        print(f"summary: {label}: {counts[PASS]} passed, {counts[FAIL]} failed, {counts[SKIP]} skipped")
    total = {PASS: 0, FAIL: 0, SKIP: 0}
    for name, runs in sorted(tests.items()):
        vs = {v for v, _ in runs.values()}
        v = FAIL if FAIL in vs else PASS if PASS in vs else SKIP
        total[v] += 1
        if v == SKIP:
            reasons = sorted({r for _, r in runs.values()})
            print(f"summary: SKIP {name}: {' | '.join(reasons)}")
        if v == FAIL:
            print(f"summary: FAIL {name} (in {', '.join(l for l, (x, _) in runs.items() if x == FAIL)})")
    boots = {"local": 0, "lab": 0}
    if os.path.exists(a.boots):
        with open(a.boots) as f:
            for line in f:
                if line.strip() in boots:
                    boots[line.strip()] += 1
    killed, not_killed = mutant_verdicts(a.mutants)
    # A phase whose failure a failed test already counts is not counted
    # again: a suite's phase has its log's label. (test.sh fails a mutants
    # phase only where it wrote no verdicts.)
    explained = {label for label, c in per_label.items() if c[FAIL]}
    phase_fails = [p for p in phase_table(a.phases) if p not in explained]
    failed = total[FAIL] + len(not_killed) + len(phase_fails)
    parts = [plural(total[FAIL], "test"), plural(len(not_killed), "mutant") + " not killed",
             plural(len(phase_fails), "phase") + f" ({', '.join(phase_fails)})"]
    parts = [p for p, n in zip(parts, (total[FAIL], not_killed, phase_fails)) if n]
    mutants = (f"mutants: {len(killed)} of {len(killed) + len(not_killed)} killed; "
               if killed or not_killed else "")
    print(f"tests: {total[PASS]} passed, {failed} failed"
          + (f" ({'; '.join(parts)})" if parts else "") + f", {total[SKIP]} skipped; {mutants}"
          f"VM boots: {boots['local']} on this machine's KVM, {boots['lab']} on the lab's stock KVM")
    if not boots["local"] and not boots["lab"]:
        if os.environ.get("VMM_TEST_ALLOW_NO_KVM") == "1":
            print("summary: no VM was booted (VMM_TEST_ALLOW_NO_KVM=1: accepted)")
        else:
            print("summary: FAIL: no VM was booted, so nothing of vmm's KVM half was tested: "
                  "this machine has no usable /dev/kvm and the lab did not run (see above); "
                  "set VMM_TEST_ALLOW_NO_KVM=1 only where VMs cannot run at all")
            bad = True
    return 1 if bad or failed or not total[PASS] else 0


if __name__ == "__main__":
    sys.exit(main())
