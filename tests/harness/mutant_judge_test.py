#!/usr/bin/env python3
"""tests/mutants/run.py's verdicts on made-up test results: a mutant is
killed only by a test that judged it and failed (exit 1 or past its
timeout), its tests stop at the first kill, a test whose environment went
away (exit 99, a harness traceback) is an error that kills nothing, and a
mutant whose every test skipped is UNJUDGED."""
import os
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "mutants"))
import run  # noqa: E402
from verdicts import report  # noqa: E402


class FakeTests:
    where = "a made-up KVM"

    def __init__(self, verdicts):
        self.verdicts, self.ran = verdicts, []

    def run(self, name, vmm, boot=None):
        self.ran.append(name)
        return self.verdicts[name], 0, 0.0, ""


class FakeBuilder:
    def __init__(self, unit=()):
        self.unit_results = {"m": list(unit)}


def judge(verdicts, unit=()):
    fd, binary = tempfile.mkstemp()
    os.close(fd)
    tests = FakeTests(verdicts)
    m = {"name": "m", "what": "a defect", "tests": list(verdicts)}
    row = run.judge(m, binary, None, tests, FakeBuilder(unit), None, False, threading.Lock())
    return row[2], tests.ran


def harness_verdicts(tmp):
    """Tests.run: exit 99 and a traceback judge nothing; 1 fails; 77 skips."""
    t = object.__new__(run.Tests)
    t.build, t.real_vmm, t.lab, t.where = tmp, os.path.join(tmp, "vmm"), None, "here"
    out = {}
    for name, code in (("env", "import sys; sys.exit(99)"), ("fail", "import sys; sys.exit(1)"),
                       ("crash", "raise RuntimeError('harness bug')"),
                       ("skip", "import sys; sys.exit(77)")):
        t.by_name = {name: {"cmd": [sys.executable, "-c", code, "--vmm", t.real_vmm],
                            "workdir": tmp, "timeout": 30}}
        out[name] = t.run(name, "/bin/true")[0]
    return out


def main():
    fails = []
    cases = [
        ({"a": "fail", "b": "pass"}, (), "killed", ["a"]),
        ({"a": "pass", "b": "timeout"}, (), "killed", ["a", "b"]),
        ({"a": "error", "b": "error"}, (), "ERROR", ["a", "b"]),
        ({"a": "pass", "b": "error"}, (), "ERROR", ["a", "b"]),
        ({"a": "skip", "b": "skip"}, (), "UNJUDGED", ["a", "b"]),
        ({"a": "pass", "b": "skip"}, (), "SURVIVED", ["a", "b"]),
        ({"a": "pass"}, [("stepping", "fail")], "killed", []),
    ]
    for verdicts, unit, want, ran in cases:
        got, did = judge(verdicts, unit)
        if (got, did) != (want, ran):
            fails.append(f"{verdicts} (unit {list(unit)}): {got}, ran {did}; want {want}, ran {ran}")
    with tempfile.TemporaryDirectory() as tmp:
        got = harness_verdicts(tmp)
    want = {"env": "error", "fail": "fail", "crash": "error", "skip": "skip"}
    if got != want:
        fails.append(f"Tests.run verdicts {got}, want {want}")
    return report(fails, "mutant_judge_test")


if __name__ == "__main__":
    sys.exit(main())
