#!/usr/bin/env python3
"""scripts/test-summary.py on made-up meson logs: a test counted once
across runs, skips listed with their reasons, the boots per KVM in the
closing line, a run that booted no VM failing unless allowed, and every
failure (tests, mutants not killed, failed phases) counted in "failed"."""
import json
import os
import subprocess
import sys
import tempfile

from verdicts import report

SUMMARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                       "test-summary.py")


def log(path, rows):
    with open(path, "w") as f:
        for name, result, out in rows:
            f.write(json.dumps({"name": "vmm:e2e / " + name, "result": result, "stdout": out}) + "\n")


def mutants(path, verdicts):
    with open(path, "w") as f:
        json.dump({"mutants": [{"name": n, "verdict": v, "tests": ""} for n, v in verdicts]}, f)
    return ["--mutants", path]


def phases(path, rows):
    with open(path, "w") as f:
        f.write("".join(f"{n}\t{s}\t{rc}\n" for n, s, rc in rows))
    return ["--phases", path]


def summary(tmp, boots, logs, env=None, extra=()):
    bl = os.path.join(tmp, "boots.log")
    with open(bl, "w") as f:
        f.write("".join(b + "\n" for b in boots))
    r = subprocess.run([sys.executable, SUMMARY, "--boots", bl, *extra] + logs,
                       capture_output=True, text=True, env=dict(os.environ, **(env or {})))
    return r.returncode, r.stdout.strip().splitlines()[-1], r.stdout + r.stderr


def main():
    fails = []
    with tempfile.TemporaryDirectory() as tmp:
        here, lab = os.path.join(tmp, "here.json"), os.path.join(tmp, "lab.json")
        log(here, [("a", "SKIP", "SKIP: /dev/kvm is not usable here"), ("b", "OK", ""),
                   ("c", "SKIP", "SKIP: no kvm")])
        log(lab, [("a", "OK", ""), ("b", "OK", ""), ("c", "SKIP", "SKIP: lab lacks ICEBP")])
        rc, last, out = summary(tmp, ["lab", "lab", "lab"], [f"gcc={here}", f"gcc-lab={lab}"])
        want = ("tests: 2 passed, 0 failed, 1 skipped; "
                "VM boots: 0 on this machine's KVM, 3 on the lab's stock KVM")
        if rc != 0 or last != want:
            fails.append(f"counted once: exit {rc}, {last!r}, want {want!r}")
        if "summary: SKIP c: lab lacks ICEBP | no kvm" not in out:
            fails.append(f"the skip of c and its reasons are not listed:\n{out}")
        rc, last, out = summary(tmp, [], [f"gcc={here}"])
        if rc == 0 or "no VM was booted" not in out:
            fails.append(f"no boots passed: exit {rc}\n{out}")
        rc, last, out = summary(tmp, [], [f"gcc={here}"], {"VMM_TEST_ALLOW_NO_KVM": "1"})
        if rc != 0:
            fails.append(f"no boots with VMM_TEST_ALLOW_NO_KVM=1 failed: exit {rc}\n{out}")
        log(lab, [("a", "FAIL", ""), ("b", "OK", "")])
        rc, last, out = summary(tmp, ["local"], [f"gcc={here}", f"gcc-lab={lab}"])
        if rc == 0 or not last.startswith("tests: 1 passed, 1 failed (1 test), 1 skipped; VM boots: 1 on"):
            fails.append(f"a failure in one run: exit {rc}, {last!r}")
        # Every failure of the run is counted in "failed": mutants not killed
        # (the lab's verdict over this machine's UNJUDGED) and failed phases,
        # but a suite's phase that failed for its failed test only once.
        log(lab, [("a", "OK", ""), ("b", "OK", "")])
        m = mutants(os.path.join(tmp, "m.json"), [("m1", "killed"), ("m2", "UNJUDGED"),
                                                   ("m3", "SURVIVED"), ("m4", "ERROR")])
        m += mutants(os.path.join(tmp, "m-lab.json"), [("m2", "killed")])
        rc, last, out = summary(tmp, ["local"], [f"gcc={here}", f"gcc-lab={lab}"], extra=m)
        want = ("tests: 2 passed, 2 failed (2 mutants not killed), 1 skipped; "
                "mutants: 2 of 4 killed; VM boots: 1 on")
        if rc == 0 or not last.startswith(want) or "MUTANT NOT KILLED m3: SURVIVED" not in out:
            fails.append(f"mutants not killed: exit {rc}, {last!r}, want {want!r}...\n{out}")
        log(lab, [("a", "FAIL", ""), ("b", "OK", "")])
        p = phases(os.path.join(tmp, "p.tsv"), [("gcc", 200, 0), ("gcc-lab", 300, 1),
                                                ("lab stop", 60, 1), ("lab up", 1, 77)])
        rc, last, out = summary(tmp, ["local"], [f"gcc={here}", f"gcc-lab={lab}"], extra=p)
        want = "tests: 1 passed, 2 failed (1 test; 1 phase (lab stop)), 1 skipped; VM boots"
        if rc == 0 or not last.startswith(want):
            fails.append(f"failed phases: exit {rc}, {last!r}, want {want!r}...")
        if "lab stop               1:00   FAILED (1)" not in out or "9:21" not in out:
            fails.append(f"the phase table lacks a row or the total:\n{out}")
        log(lab, [("a", "OK", ""), ("b", "OK", "")])
        p = phases(os.path.join(tmp, "p.tsv"), [("lab stop", 60, 1)])
        rc, last, out = summary(tmp, ["local"], [f"gcc={here}", f"gcc-lab={lab}"], extra=p)
        if rc == 0:
            fails.append(f"a failed phase alone passed: {last!r}")
        rc, last, out = summary(tmp, ["local"], [f"gcc={here}", f"asan={tmp}/missing.json"])
        if rc == 0:
            fails.append("a missing log passed")
    return report(fails, "summary_test")


if __name__ == "__main__":
    sys.exit(main())
