#!/usr/bin/env python3
"""Mutants must die: vmm rebuilt with each deliberate defect of table.py,
and the meson tests named for it run with that vmm; at least one must fail.

  run.py --build build [--only NAME ...] [--baseline] [--keep-going]

The source tree is copied once into BUILD/mutants/src and configured once
(BUILD/mutants/build, -Dguest=false); per mutant its edits are applied,
`meson compile vmm` rebuilds one file and links, the binary is copied to
BUILD/mutants/vmm-NAME-PID (a name no earlier run used) and the edits are
reverted. Each named test runs as `meson introspect --tests BUILD` gives it
(command, env, working directory, timeout), its vmm argument replaced by
the mutant's. With VMM_TEST_LAB=STATE the tests run vmm in the lab (the
meson 'lab' setup's environment and timeout multiplier); without it on
this machine's /dev/kvm. A mutant's "unit" tests (a defect a VM shows
only by chance, such as a race) run in the mutant's own build, before its
edits are reverted.

Verdict: killed if a named test exits 1 (or runs past its timeout, which
meson counts as a failure); 77 (skip) kills nothing. --baseline first runs
every named test with the real BUILD/vmm, all of which must pass; without
it, that is left to the main suite (./test.sh runs them just before).

Exits 0 when every mutant was killed, 1 when one survived, an edit no longer
applies, a build failed or the baseline failed; 77 when no KVM is to be had.
Ends with `mutants: N killed, N survived`.
"""
import argparse
import json
import os
import queue
import re
import filecmp
import shutil
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from table import MUTANTS  # noqa: E402

SKIP = 77
# The meson 'lab' setup (tests/lab/meson.build): what it adds on the lab.
LAB_SETUP = {"timeout_multiplier": 4, "env": {"VMM_TEST_LAB_TIME_SCALE": "4"}}
# Top-level entries of the source tree that the copy leaves out.
NOT_COPIED = {".git", "subprojects/packagecache"}


def log(msg):
    print(msg, flush=True)


def sh(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


# ------------------------------------------------------------------ building

def copy_if_changed(src, dst):
    """copytree's copy: a file whose text is the copy's already is left as
    it is; another is copied with the time of the copy. Copying the tree's
    own time instead (copy2) can set a source back behind the object a
    mutant's edit built from it, and ninja would link that mutant into
    every later build."""
    try:
        if filecmp.cmp(src, dst, shallow=False):
            return dst
    except OSError:
        pass
    return shutil.copy(src, dst)


class Builder:
    """The copy of the source tree and its build directory."""

    def __init__(self, build):
        self.root = os.path.join(os.path.abspath(build), "mutants")
        self.src = os.path.join(self.root, "src")
        self.bdir = os.path.join(self.root, "build")
        self.unit_results = {}

    def prepare(self):
        """Copies the tree (unchanged files keep their times, so that ninja
        rebuilds only what changed: copy_if_changed) and configures it once."""
        os.makedirs(self.root, exist_ok=True)

        def ignore(d, names):
            rel = os.path.relpath(d, SRC)
            return [n for n in names
                    if (rel == "." and (n.startswith("build") or n in NOT_COPIED))
                    or n == "__pycache__"]
        shutil.copytree(SRC, self.src, ignore=ignore, dirs_exist_ok=True, copy_function=copy_if_changed,
                        symlinks=True)
        if not os.path.exists(os.path.join(self.bdir, "build.ninja")):
            r = sh(["meson", "setup", self.bdir, self.src, "-Dguest=false"])
            if r.returncode:
                return f"meson setup of the mutants' tree failed:\n{r.stdout}"
        r = sh(["meson", "compile", "-C", self.bdir, "vmm"])
        if r.returncode:
            return f"the unmutated copy does not build:\n{r.stdout}"
        return None

    def run_unit(self, name):
        """One unit test of the mutant's build: 'fail', 'pass' or 'skip'."""
        r = sh(["meson", "test", "-C", self.bdir, "--no-rebuild", "--suite", "unit", name])
        text = r.stdout
        if re.search(r"^Fail:\s+[1-9]", text, re.M):
            return "fail"
        return "pass" if re.search(r"^Ok:\s+1\b", text, re.M) else "skip"

    def build(self, m):
        """Builds one mutant; returns (binary, None) or (None, why). The
        verdicts of its unit tests ("unit" in the table) land in
        unit_results."""
        originals = {}
        try:
            for path, old, new in m["edits"]:
                full = os.path.join(self.src, path)
                text = originals.get(path)
                if text is None:
                    with open(full) as f:
                        text = originals[path] = f.read()
                with open(full) as f:
                    cur = f.read()
                n = cur.count(old)
                if n != 1:
                    return None, (f"edit does not apply: {path} holds the text to replace "
                                  f"{n} times, not once (tests/mutants/table.py, mutant "
                                  f"{m['name']}: bring its edit up to date with the code):\n"
                                  + "".join(f"    | {line}\n" for line in old.splitlines()))
                with open(full, "w") as f:
                    f.write(cur.replace(old, new))
            unit = m.get("unit", [])
            r = sh(["meson", "compile", "-C", self.bdir, "vmm"] + [f"test_{n}" for n in unit])
            if r.returncode:
                return None, f"the mutant does not build:\n{r.stdout[-3000:]}"
            # Unit tests run here, in the mutant's own build, before the edit is undone.
            self.unit_results[m["name"]] = [(n, self.run_unit(n)) for n in unit]
            out = os.path.join(self.root, f"vmm-{m['name']}-{os.getpid()}")
            shutil.copy2(os.path.join(self.bdir, "vmm"), out)
            return out, None
        finally:
            for path, text in originals.items():
                with open(os.path.join(self.src, path), "w") as f:
                    f.write(text)


# ------------------------------------------------------------------ running tests

class Tests:
    def __init__(self, build, lab):
        self.build = os.path.abspath(build)
        self.real_vmm = os.path.join(self.build, "vmm")
        self.lab = lab
        r = subprocess.run(["meson", "introspect", "--tests", self.build],
                           stdout=subprocess.PIPE, text=True, check=True)
        self.by_name = {t["name"]: t for t in json.loads(r.stdout)}

    def missing(self, names):
        return [n for n in names if n not in self.by_name]

    def _is_vmm(self, arg, workdir):
        if arg == self.real_vmm:
            return True
        return not os.path.isabs(arg) and \
            os.path.normpath(os.path.join(workdir, arg)) == self.real_vmm

    def run(self, name, vmm):
        """(verdict, status, seconds, output): verdict 'fail', 'pass', 'skip'
        or 'timeout'."""
        t = self.by_name[name]
        workdir = t.get("workdir") or self.build
        cmd = [vmm if (i and t["cmd"][i - 1] == "--vmm") or self._is_vmm(a, workdir) else a
               for i, a in enumerate(t["cmd"])]
        if vmm != self.real_vmm and cmd == t["cmd"]:
            return "error", None, 0.0, f"no vmm argument found in {t['cmd']}"
        env = dict(os.environ)
        env.update(t.get("env") or {})
        # Mutant runs are not the suite's boots.
        env.pop("VMM_TEST_BOOT_LOG", None)
        timeout = t.get("timeout") or 30
        if self.lab:
            env.update(LAB_SETUP["env"])
            timeout *= LAB_SETUP["timeout_multiplier"]
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             start_new_session=True)
        try:
            out, _ = p.communicate(timeout=timeout)
            verdict = {0: "pass", 1: "fail", SKIP: "skip"}.get(p.returncode, "fail")
            # A harness that crashed judged nothing: that kills no mutant.
            if verdict == "fail" and b"Traceback (most recent call last)" in out:
                verdict = "error"
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
            verdict = "timeout"
        return verdict, p.returncode, time.monotonic() - t0, out.decode(errors="replace")


def first_fail_lines(out, n=3):
    lines = [x for x in out.splitlines() if x.startswith(("FAIL", "HANG", "SKIP"))]
    return lines[:n]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="the build directory whose tests are run")
    ap.add_argument("--only", action="append", help="only this mutant (repeatable)")
    ap.add_argument("--baseline", action="store_true",
                    help="first run every named test with the real vmm: all must pass")
    ap.add_argument("--verbose", action="store_true", help="print each test's output")
    a = ap.parse_args()
    t_start = time.monotonic()

    lab = os.environ.get("VMM_TEST_LAB")
    where = "the lab's stock KVM" if lab else "this machine's KVM"
    if not lab and not os.access("/dev/kvm", os.R_OK | os.W_OK):
        log("mutants: SKIP: no /dev/kvm here and no lab (VMM_TEST_LAB): the tests that "
            "kill mutants boot VMs")
        return SKIP

    unknown = sorted(set(a.only or ()) - {m["name"] for m in MUTANTS})
    if unknown:
        log(f"mutants: FAIL: --only names no mutant of tests/mutants/table.py: {', '.join(unknown)}")
        return 2
    mutants = [m for m in MUTANTS if not a.only or m["name"] in a.only]
    tests = Tests(a.build, lab)
    problems = []
    for m in mutants:
        gone = tests.missing(m["tests"])
        if gone:
            problems.append(f"{m['name']}: no such meson test: {', '.join(gone)}")
    if problems:
        for p in problems:
            log("mutants: FAIL: " + p)
        return 1

    log(f"== mutants: {len(mutants)} mutants of vmm, their tests on {where}")
    if a.baseline:
        names = sorted({n for m in mutants for n in m["tests"]})
        bad = []
        for n in names:
            verdict, st, secs, out = tests.run(n, tests.real_vmm)
            log(f"baseline: {n}: {verdict} ({secs:.1f} s)")
            if verdict != "pass":
                bad.append(n)
                sys.stdout.write(out)
        if bad:
            log(f"mutants: FAIL: the real vmm does not pass {', '.join(bad)}: no mutant can be judged")
            return 1

    builder = Builder(a.build)
    why = builder.prepare()
    if why:
        log("mutants: FAIL: " + why)
        return 1

    # Built in a thread while the previous mutant's tests run (those mostly
    # wait for the lab).
    built = queue.Queue()

    def build_all():
        for m in mutants:
            t0 = time.monotonic()
            binary, why = builder.build(m)
            built.put((m, binary, why, time.monotonic() - t0))
    threading.Thread(target=build_all, daemon=True).start()

    rows = []
    for _ in mutants:
        m, binary, why, build_secs = built.get()
        if why:
            log(f"mutant {m['name']}: BROKEN: {why}")
            rows.append((m["name"], "-", "EDIT/BUILD FAILED"))
            continue
        results = [(f"unit:{n}", v) for n, v in builder.unit_results.get(m["name"], [])]
        for n, v in results:
            log(f"mutant {m['name']}: {n}: {v} (in the mutant's own build)")
        for n in m["tests"]:
            verdict, st, secs, out = tests.run(n, binary)
            results.append((n, verdict))
            log(f"mutant {m['name']}: {n}: {verdict} (exit {st}, {secs:.1f} s)")
            if a.verbose or verdict in ("error",):
                sys.stdout.write(out)
            else:
                for line in first_fail_lines(out):
                    log(f"    {line[:200]}")
        os.unlink(binary)
        killed = any(v in ("fail", "timeout") for _, v in results)
        rows.append((m["name"], ", ".join(f"{n}:{v}" for n, v in results),
                     "killed" if killed else "SURVIVED"))
        if not killed:
            log(f"mutant {m['name']} SURVIVED ({m['what']}): no named test failed; "
                "a test that catches it is missing")

    w = max(len(r[0]) for r in rows)
    log("")
    log(f"{'mutant':<{w}}  verdict            tests")
    for name, res, verdict in rows:
        log(f"{name:<{w}}  {verdict:<17}  {res}")
    nkilled = sum(r[2] == "killed" for r in rows)
    survived = [r[0] for r in rows if r[2] == "SURVIVED"]
    broken = [r[0] for r in rows if r[2] not in ("killed", "SURVIVED")]
    log(f"mutants: {nkilled} killed, {len(survived)} survived"
        + (f" ({', '.join(survived)})" if survived else "")
        + (f", {len(broken)} whose edit or build failed ({', '.join(broken)})" if broken else "")
        + f"; {time.monotonic() - t_start:.0f} s on {where}")
    return 0 if nkilled == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
