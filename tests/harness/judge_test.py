#!/usr/bin/env python3
"""difftest.py's judge, on made-up runs: what it must pass and what it must
fail (split-lock counts, unseen ones against unchecked runs, and the
case's own count of unchecked runs). No VM runs here."""
import contextlib
import io
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "differential"))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import difftest  # noqa: E402
import vmmlib  # noqa: E402
from verdicts import report  # noqa: E402


class Run:
    def __init__(self, out, status=0):
        self.out, self.err, self.status, self.hung, self.elapsed = out, "", status, False, 0.1


def stats(detected, unchecked, reasons=None):
    return {"vcpus": [{"index": 0, "split_locks_detected": detected, "unchecked_runs": unchecked,
                       "unchecked": {"escaped": unchecked} if reasons is None else reasons}]}


def judge(out, st, outer_stepped=True):
    with contextlib.redirect_stdout(io.StringIO()):
        fails, _ = difftest.judge(Run(out), Run(out), st, 0, outer_stepped)
    return fails


def main():
    bad = []

    def expect(name, fails, ok):
        if bool(fails) == ok:
            bad.append(f"{name}: {'failed' if fails else 'passed'}: {fails}")

    made = "# split locks at CPL0: 4\n"
    expect("all detected", judge(made, stats(4, 0)), True)
    expect("one unseen, none counted", judge(made, stats(3, 0)), False)
    handlers = made + "# in exception handlers: 2\n"
    expect("two unseen in handlers, two counted", judge(handlers, stats(2, 2)), True)
    expect("two unseen in handlers, one counted", judge(handlers, stats(2, 1)), False)
    exact = made + "# unchecked runs: 0\n"
    expect("no unchecked run, none counted", judge(exact, stats(4, 0)), True)
    expect("no unchecked run, one counted", judge(exact, stats(4, 1)), False)
    three = made + "# unchecked runs: 3\n"
    expect("three expected, three counted", judge(three, stats(4, 3)), True)
    expect("three expected, two counted", judge(three, stats(4, 2)), False)
    expect("three expected, four counted", judge(three, stats(4, 4)), False)
    expect("where CPL3 is not stepped, more may be counted",
           judge(three, stats(4, 5), outer_stepped=False), True)
    expect("where CPL3 is not stepped, fewer may not",
           judge(three, stats(4, 2), outer_stepped=False), False)
    expect("no --stats", judge(made, "the emulate run left no valid --stats JSON"), False)
    expect("reasons add up", judge(made, stats(4, 3, {"escaped": 1, "shadowed": 2})), True)
    expect("reasons do not add up", judge(made, stats(4, 3, {"escaped": 1, "shadowed": 1})), False)
    bare = "# unchecked runs: 0\n"
    expect("no split locks, none expected unchecked, one counted", judge(bare, stats(0, 1)), False)
    expect("no split locks, none expected unchecked, none counted", judge(bare, stats(0, 0)), True)
    expect("no --stats where a count is expected", judge(bare, "no JSON"), False)

    # On this machine's KVM a --needs word is judged by the vmm under test's
    # own --host-info (a fake here): a case broken by what it lacks skips.
    broken = ["the inherit run ended with status 80, the case expects 0: the case itself is "
              "broken on this host"]
    with tempfile.TemporaryDirectory() as tmp:
        for lme in ("false", "true"):
            fake = os.path.join(tmp, f"vmm-{lme}")
            with open(fake, "w") as f:
                f.write("#!/bin/sh\necho '{\"kvm\":{\"probe\":{\"leave_long_mode\":%s}}}'\n" % lme)
            os.chmod(fake, 0o755)
            with contextlib.redirect_stdout(io.StringIO()):
                fails, why = difftest.excuse(broken, ["leave_long_mode"], fake)
            if (lme == "false") != (why is not None and not fails):
                bad.append(f"leave_long_mode {lme}: excused {why!r}, failures {fails}")
            if why is not None and broken[0] not in why:
                bad.append(f"an excused divergence's SKIP does not say what diverged: {why!r}")
            with contextlib.redirect_stdout(io.StringIO()):
                fails, why = difftest.excuse(broken + ["exit status differs: inherit status 0, "
                                                      "emulate status -11"], ["leave_long_mode"], fake)
            if not fails:
                bad.append(f"leave_long_mode {lme}: a crash was excused")
    # The first differing line is named, so that a one-line report says it.
    for a, b, want in (("x\ny\n", "x\nz\n", " at line 2: inherit 'y', emulate 'z'"),
                       ("x\n", "x\ny\n", " at line 2: inherit (nothing), emulate 'y'"),
                       ("x\n", "x\n", "")):
        got = difftest.first_difference(a, b)
        if got != want:
            bad.append(f"first_difference({a!r}, {b!r}) = {got!r}, want {want!r}")
    # Every --needs word is one vmm --host-info measures (the lab's ICEBP
    # probe aside), with what it means said on a machine's own KVM.
    root = os.path.join(HERE, "..", "..")
    with open(os.path.join(root, "tests", "differential", "meson.build")) as f:
        needs = set(re.findall(r"'--needs',\s*'(\w+)'", f.read()))
    with open(os.path.join(root, "src", "vmm", "hostinfo.c")) as f:
        probed = set(re.findall(r'\{ "(\w+)", hi->', f.read()))
    if not needs or len(probed) < 10:
        bad.append(f"read {len(needs)} --needs words and {len(probed)} probes: the patterns are stale")
    for n in sorted(needs - {"icebp"}):
        if n not in probed or n not in vmmlib.LOCAL_LACKS:
            bad.append(f"--needs {n}: {'not in LOCAL_LACKS' if n in probed else 'no probe'}")
    return report(bad, f"judge_test, {len(bad)} wrong verdicts")


if __name__ == "__main__":
    sys.exit(main())
