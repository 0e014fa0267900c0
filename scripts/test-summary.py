#!/usr/bin/env python3
"""Adds up meson's test logs into test.sh's closing line:

  tests: N passed, N failed, N skipped; VM boots: N on this machine's KVM, N on the lab's stock KVM

  test-summary.py --boots BOOTLOG LABEL=LOG [LABEL=LOG ...]

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


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--boots", required=True)
    ap.add_argument("logs", nargs="+", metavar="LABEL=LOG")
    a = ap.parse_args()
    bad = False
    tests = {}   # name -> {label: (verdict, reason)}
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
    print(f"tests: {total[PASS]} passed, {total[FAIL]} failed, {total[SKIP]} skipped; "
          f"VM boots: {boots['local']} on this machine's KVM, {boots['lab']} on the lab's stock KVM")
    if not boots["local"] and not boots["lab"]:
        if os.environ.get("VMM_TEST_ALLOW_NO_KVM") == "1":
            print("summary: no VM was booted (VMM_TEST_ALLOW_NO_KVM=1: accepted)")
        else:
            print("summary: FAIL: no VM was booted, so nothing of vmm's KVM half was tested: "
                  "this machine has no usable /dev/kvm and the lab did not run (see above); "
                  "set VMM_TEST_ALLOW_NO_KVM=1 only where VMs cannot run at all")
            bad = True
    return 1 if bad or total[FAIL] or not total[PASS] else 0


if __name__ == "__main__":
    sys.exit(main())
