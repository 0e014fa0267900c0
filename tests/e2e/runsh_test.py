#!/usr/bin/env python3
"""README's first command, run as a new user runs it: ./run.sh from the
source tree, on this machine's KVM or, without one, on the lab's stock KVM
that run.sh boots by itself (tests/lab/labrun.py).

  runsh_test.py --source DIR --build DIR

Three runs: `./run.sh` (the self-test guest: a complete TAP run with no
failure, exit status 0; what the host's CPU cannot do is a skip), `./run.sh --host-info` (arguments
reach vmm, and no guest image is added) and `./run.sh -q -c 1 IMAGE` (the
user's own image runs instead of the self-test). After each, no process
of the lab run.sh booted is left. Exits 0 on success, 1 on failure, 77
when the lab cannot be had here and there is no KVM either.
"""
import argparse
import os
import re
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lab"))
from lab import UNAVAILABLE as LAB_UNAVAILABLE  # noqa: E402  (labrun.py's status then)
from vmmlib import image, kvm_usable, parse_tap, report, run, skip  # noqa: E402

# run.sh boots the lab once (kernel package cached by then) and runs vmm.
TIMEOUT = 600


def leftovers():
    """Processes of a lab that labrun.py booted (its state lives in a
    labrun-* temporary directory, named on the server's command line)."""
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "/labrun-" in cmd and int(pid) != os.getpid():
            left.append(f"{pid}: {cmd[:120]}")
    return left


def run_sh(source, args, lab):
    """Runs ./run.sh ARGS; returns the Run and the failures of what every
    run must show."""
    r = run([os.path.join(source, "run.sh")] + args, timeout=TIMEOUT)
    print(r.out[-3000:] + "--- stderr ---\n" + r.err[-3000:])
    fails = []
    if r.hung:
        fails.append(f"./run.sh {' '.join(args)} did not end within {TIMEOUT} s")
    said = "no usable /dev/kvm here" in r.err
    if said != lab:
        fails.append(f"./run.sh {'did not say' if lab else 'said'} it has no usable /dev/kvm")
    if lab and r.status != LAB_UNAVAILABLE and not re.search(
            r"^lab: stock KVM \(.+\) ready after \d+ s$", r.err, re.M):
        fails.append("the lab's readiness line is missing")
    if "Traceback" in r.err:
        fails.append("a Python traceback on stderr")
    # Not silent for the minute a first build takes.
    if not re.search(r"^run\.sh: building \./build ", r.err, re.M):
        fails.append("./run.sh did not say that it builds")
    # The server stops its boot within a minute of labrun's stop.
    end = time.monotonic() + 90
    while leftovers() and time.monotonic() < end:
        time.sleep(1)
    fails += [f"left running after ./run.sh {' '.join(args)}: {p}" for p in leftovers()]
    return r, fails


def self_test(source, lab):
    r, fails = run_sh(source, [], lab)
    if lab and r.status == LAB_UNAVAILABLE:
        return r, fails
    plan, results, _ = parse_tap(r.out)
    if not plan or plan != len(results):
        fails.append(f"the self-test's TAP is not complete: plan {plan}, {len(results)} results")
    # A newcomer's first run ends green: what the host's CPU cannot do (the
    # lab's TCG raises no legacy #AC) vmm probes, and the guest skips it.
    fails += [f"self-test check {x.num} failed: {x.desc}" for x in results if not x.ok]
    if r.status != 0:
        fails.append(f"exit status {r.status}, expected 0")
    return r, fails


def host_info(source, lab):
    r, fails = run_sh(source, ["--host-info"], lab)
    if lab and r.status == LAB_UNAVAILABLE:
        return r, fails
    if r.status != 0:
        fails.append(f"./run.sh --host-info: exit status {r.status}")
    if not re.search(r"^KVM:", r.out, re.M) or "leaving long mode" not in r.out:
        fails.append("./run.sh --host-info printed no KVM report")
    return r, fails


def own_image(source, lab):
    """`./run.sh -q IMAGE`: the user's own image runs, and build/guest.bin
    is not added behind it (vmm would refuse a second image with 64)."""
    with tempfile.TemporaryDirectory(prefix="runsh-") as tmp:
        path = image(tmp, "66baf400b8" + "07000000" + "eff4")  # out 7 to port 0xf4; hlt
        os.chmod(tmp, 0o755)
        r, fails = run_sh(source, ["-q", "-c", "1", path], lab)
    if lab and r.status == LAB_UNAVAILABLE:
        return r, fails
    if r.status != 7:
        fails.append(f"./run.sh -q -c 1 IMAGE: exit status {r.status}, expected the image's 7")
    return r, fails


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", required=True)
    ap.add_argument("--build", required=True)
    a = ap.parse_args()
    # run.sh runs here, as a user runs it, whatever lab the other tests use.
    os.environ.pop("VMM_TEST_LAB", None)
    if os.path.realpath(a.build) != os.path.realpath(os.path.join(a.source, "build")):
        # run.sh builds and runs ./build; another build directory is not what it runs.
        return skip(f"run.sh uses {a.source}/build, not this build directory ({a.build})")
    lab = kvm_usable() is not None
    fails = []
    unavailable = 0
    for case in (self_test, host_info, own_image):
        r, f = case(a.source, lab)
        fails += f
        unavailable += lab and r.status == LAB_UNAVAILABLE
    if unavailable == 3 and not fails:
        return skip("no usable /dev/kvm, and the lab cannot be had here (above)")
    if unavailable:
        fails.append("the lab could be had for one run.sh and not the other")
    return report(fails)


if __name__ == "__main__":
    sys.exit(main())
