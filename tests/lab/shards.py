#!/usr/bin/env python3
"""Runs meson test suites on the lab's boots: one meson per ready boot, all
at once, each pinned to its boot (VMM_TEST_LAB_BOOT) and running its share
of the tests one at a time, so that each boot's QEMU (one host thread) is
busy and none is shared. meson's is_parallel=false (a test that needs the
machine to itself) would otherwise run every such test one after another
on one boot while the other idles.

  shards.py --build DIR --state FILE --logbase NAME [--setup S] [--suite X ...]
            [--judge-after LOG]

With --judge-after LOG (meson's JSON log of the same suites on this
machine's KVM), only what that KVM could not judge runs: the tests it
skipped, the tests of CPL3 code where it cannot single-step CPL3 (vmm
--host-info), and the self-test under each policy, so that every run
still boots the product on a stock KVM (lab_picks()). Of the Linux boots
(suite linux) only LAB_LINUX's run there, judged or not.

The shares are balanced by each test's duration in DIR's last log of the
same NAME where there is one, else by a rough cost (emulate and matrix
cases are the slow ones). Writes DIR/meson-logs/NAME.json (all shares'
results together) and exits 1 if any share failed.

A boot whose QEMU froze or crashed is booted once more by server.py; the
tests of its share that failed are then run again there, once, and their
second results stand (the first are in NAME-bootN.json). Only a freeze or
crash lets a test run twice.
"""
import argparse
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))
from vmmlib import settled_lab_boot  # noqa: E402

SLOW = ("linux-", "emulate", "matrix", "concurrent", "ratelimit", "flood", "gen-seed", "many-vms",
        "64-vcpus", "split-lock-progress", "msr-storm", "first-in-handler")


# meson's results that fail a run
BAD = ("FAIL", "TIMEOUT", "ERROR", "UNEXPECTEDPASS")


def cost(name, last):
    if name in last:
        return last[name]
    return 60 if any(w in name for w in SLOW) else 5


# The self-test under every policy, on 1 and 2 vCPUs: a stock KVM boots the
# product in every run, whatever this machine's KVM judged.
STOCK_SMOKE = ("selftest-", "policy-")
# Debian's kernel in the lab: none yet. By hand it boots there to its
# power-off on one vCPU (docs/lab.md), but the suite's boots, with their
# typed line, hang there; a suite that cannot pass does not run.
LAB_LINUX = ()


def lab_linux(tests):
    """tests without the Linux boots the lab does not run."""
    return [t for t in tests if not t.startswith("linux-") or t in LAB_LINUX]


def lab_picks(build, log, tests):
    """The tests of `tests` that this machine's KVM did not judge in `log`."""
    skipped = set()
    with open(log) as f:
        for ln in f:
            r = json.loads(ln)
            if r["result"] == "SKIP":
                skipped.add(r["name"].split(" / ", 1)[1])
    info = subprocess.run([os.path.join(build, "vmm"), "--host-info", "--json"],
                          capture_output=True, text=True)
    try:
        cpl3 = json.loads(info.stdout)["kvm"]["probe"]["singlestep_cpl3"]
    except (ValueError, KeyError, TypeError):
        cpl3 = None
    return [t for t in tests
            if t in skipped or t.startswith(STOCK_SMOKE) or t in LAB_LINUX
            or (not cpl3 and "cpl3" in t)]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--state", required=True)
    ap.add_argument("--logbase", required=True)
    ap.add_argument("--setup")
    ap.add_argument("--suite", action="append", default=[])
    ap.add_argument("--judge-after", metavar="LOG",
                    help="only what this machine's KVM could not judge in LOG")
    a = ap.parse_args()
    setup = ["--setup", a.setup] if a.setup else []
    with open(a.state) as f:
        boots = [b["id"] for b in json.load(f)["boots"] if b["state"] == "ready"]
    if not boots:
        print("shards: no lab boot is ready", file=sys.stderr)
        return 1
    listed = subprocess.run(["meson", "test", "-C", a.build, "--no-rebuild", "--list"] + setup
                            + [x for s in a.suite for x in ("--suite", s)],
                            capture_output=True, text=True, check=True).stdout
    tests = [ln.split(" / ", 1)[1].strip() for ln in listed.splitlines() if " / " in ln]
    tests = lab_linux(tests)
    if a.judge_after:
        tests = lab_picks(a.build, a.judge_after, tests)
    logdir = os.path.join(a.build, "meson-logs")
    last = {}
    try:
        with open(os.path.join(logdir, a.logbase + ".json")) as f:
            for ln in f:
                r = json.loads(ln)
                last[r["name"].split(" / ", 1)[1]] = r["duration"]
    except (OSError, ValueError, KeyError, IndexError):
        pass
    shares = {b: [] for b in boots}
    load = {b: 0.0 for b in boots}
    for t in sorted(tests, key=lambda t: -cost(t, last)):
        b = min(boots, key=lambda x: load[x])
        shares[b].append(t)
        load[b] += cost(t, last)
    results, logs = {}, {}

    def meson(b, names, log):
        env = dict(os.environ, VMM_TEST_LAB=a.state, VMM_TEST_LAB_BOOT=str(b))
        cmd = (["meson", "test", "-C", a.build, "--no-rebuild", "--print-errorlogs", "--num-processes", "1",
                "--logbase", log] + setup + names)
        rc = subprocess.run(cmd, env=env).returncode
        # meson names a setup's log LOGBASE-SETUP.json
        path = os.path.join(logdir, log + (f"-{a.setup}" if a.setup else "") + ".json")
        try:
            with open(path) as f:
                return rc, [json.loads(ln) for ln in f if ln.strip()]
        except (OSError, ValueError):
            print(f"shards: boot {b}: no log at {path}", file=sys.stderr)
            return 1, []

    def run(b):
        gen0 = settled_lab_boot(a.state, b, 0).get("generation", 0)
        rc, recs = meson(b, shares[b], f"{a.logbase}-boot{b}")
        failed = [r["name"].split(" / ", 1)[1] for r in recs if r["result"] in BAD]
        if failed:
            time.sleep(5)   # the server notices a dead QEMU within a second or two
        # The server boots a crashed or frozen boot again within minutes.
        info = settled_lab_boot(a.state, b, 600) if failed else {}
        if failed and info.get("generation", 0) != gen0:
            # The boot's QEMU froze or crashed and the server booted it again:
            # the tests it broke off run once more there. A crash the guest
            # causes comes back and fails them again.
            print(f"shards: boot {b} was booted again during its share "
                  f"({info.get('evidence', '').splitlines()[0] if info.get('evidence') else '?'}); "
                  f"now {info.get('state')}; rerunning {len(failed)} failed tests: {' '.join(failed)}",
                  flush=True)
            if info.get("state") == "ready":
                _, again = meson(b, failed, f"{a.logbase}-boot{b}-rerun")
                redone = {r["name"]: r for r in again}
                recs = [redone.get(r["name"], r) for r in recs]
                rc = int(any(r["result"] in BAD for r in recs))
        results[b], logs[b] = rc, recs

    print(f"shards: {len(tests)} tests on boots {boots}: "
          + ", ".join(f"boot {b} {len(shares[b])} tests (~{load[b]:.0f} s)" for b in boots),
          flush=True)
    threads = [threading.Thread(target=run, args=(b,)) for b in boots]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with open(os.path.join(logdir, a.logbase + ".json"), "w") as out:
        for b in boots:
            for r in logs.get(b, []):
                out.write(json.dumps(r) + "\n")
            if not logs.get(b):
                results[b] = 1
    return 1 if any(results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
