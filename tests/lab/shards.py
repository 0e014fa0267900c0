#!/usr/bin/env python3
"""Runs meson test suites on the lab's boots: one meson per ready boot, all
at once, each pinned to its boot (VMM_TEST_LAB_BOOT) and running its share
of the tests one at a time, so that each boot's QEMU (one host thread) is
busy and none is shared. meson's is_parallel=false (a test that needs the
machine to itself) would otherwise run every such test one after another
on one boot while the other idles.

  shards.py --build DIR --state FILE --logbase NAME [--setup S] [--suite X ...]

The shares are balanced by each test's duration in DIR's last log of the
same NAME where there is one, else by a rough cost (emulate and matrix
cases are the slow ones). Writes DIR/meson-logs/NAME.json (all shares'
results together) and exits 1 if any share failed.
"""
import argparse
import json
import os
import subprocess
import sys
import threading

SLOW = ("emulate", "matrix", "concurrent", "ratelimit", "flood", "gen-seed", "many-vms",
        "64-vcpus", "split-lock-progress", "msr-storm", "first-in-handler")


def cost(name, last):
    if name in last:
        return last[name]
    return 60 if any(w in name for w in SLOW) else 5


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--state", required=True)
    ap.add_argument("--logbase", required=True)
    ap.add_argument("--setup")
    ap.add_argument("--suite", action="append", default=[])
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
    results = {}

    def run(b):
        env = dict(os.environ, VMM_TEST_LAB=a.state, VMM_TEST_LAB_BOOT=str(b))
        log = f"{a.logbase}-boot{b}"
        cmd = (["meson", "test", "-C", a.build, "--no-rebuild", "--print-errorlogs", "--num-processes", "1",
                "--logbase", log] + setup + shares[b])
        results[b] = subprocess.run(cmd, env=env).returncode
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
            try:
                # meson names a setup's log LOGBASE-SETUP.json
                name = f"{a.logbase}-boot{b}" + (f"-{a.setup}" if a.setup else "")
                with open(os.path.join(logdir, name + ".json")) as f:
                    out.write(f.read())
            except OSError:
                print(f"shards: boot {b}: no log", file=sys.stderr)
                results[b] = 1
    return 1 if any(results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
