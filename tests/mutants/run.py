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

Verdict: killed once a named test judged the mutant and failed it (exit
1, or past its timeout, which meson counts as a failure); the named tests
after it are not run. A skip (77) kills nothing, and neither does an error
of the environment (exit 99: the lab went away; or a harness traceback):
a mutant with no kill and such an error is an ERROR of the run, not a
survivor. A mutant whose every named test skipped (a KVM that cannot run
them) is UNJUDGED. ./test.sh hands every mutant this machine's KVM did not
kill to the lab (--not-killed-in), whose stock KVM judges what this one
cannot (leaving IA-32e mode, CPL3 stepping, nested SVM). With a lab of
several boots, one mutant runs per boot at once; here, one per core (two
at most).
--baseline first runs every named test with the real BUILD/vmm, all of
which must pass; without it, that is left to the main suite (./test.sh
runs them just before). --json FILE writes the verdicts for
scripts/test-summary.py.

Exits 0 when every mutant was killed, 1 when one survived or errored, an
edit no longer applies, a build failed or the baseline failed; 77 when no
KVM is to be had. Ends with `mutants: N killed, N survived, N errors`.
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
ENV_ERROR = 99  # tests/e2e/vmmlib.py: the lab went away, nothing judged
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
        self.where = "the lab's stock KVM" if lab else "this machine's KVM"
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

    def run(self, name, vmm, boot=None):
        """(verdict, status, seconds, output): verdict 'fail', 'pass', 'skip',
        'timeout' or 'error' (nothing judged). boot: the lab boot to pin."""
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
        if boot is not None:
            env["VMM_TEST_LAB_BOOT"] = str(boot)
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
            verdict = {0: "pass", 1: "fail", SKIP: "skip", ENV_ERROR: "error"}.get(
                p.returncode, "fail")
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
    ap.add_argument("--json", help="write the verdicts here (scripts/test-summary.py reads them)")
    ap.add_argument("--not-killed-in", metavar="JSON",
                    help="only the mutants an earlier --json did not kill (none: exit 0)")
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
    if a.not_killed_in:
        with open(a.not_killed_in) as f:
            left = {r["name"] for r in json.load(f)["mutants"] if r["verdict"] != "killed"}
        mutants = [m for m in mutants if m["name"] in left]
        if not mutants:
            log(f"mutants: every mutant of {a.not_killed_in} was killed")
            return 0
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

    # Built in a thread while earlier mutants' tests run (those mostly wait
    # for the lab); judged by one worker per lab boot, each stopping at the
    # None the builder puts for it after the last mutant.
    built = queue.Queue()
    boots = lab_boots(lab)

    def build_all():
        for m in mutants:
            try:
                binary, why = builder.build(m)
            except Exception as e:  # a worker waits for every mutant: never leave one out
                binary, why = None, f"the build raised {e!r}"
            built.put((m, binary, why))
        for _ in boots:
            built.put(None)
    threading.Thread(target=build_all, daemon=True).start()

    rows = {}
    lock = threading.Lock()

    def work(boot):
        for m, binary, why in iter(built.get, None):
            rows[m["name"]] = judge(m, binary, why, tests, builder, boot, a.verbose, lock)

    workers = [threading.Thread(target=work, args=(b,)) for b in boots]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    ordered = [rows[m["name"]] for m in mutants]
    return finish(ordered, a.json, t_start, where)


def lab_boots(lab):
    """The boots to pin one worker each to: the lab's ready ones; here, one
    unpinned worker per core (two at most); [None] for a lab whose state
    names none."""
    if not lab:
        return [None] * min(2, os.cpu_count() or 1)
    try:
        with open(lab) as f:
            st = json.load(f)
    except (OSError, ValueError):
        return [None]
    ids = [b["id"] for b in st.get("boots", []) if b.get("state") == "ready"]
    return ids or [None]


def judge(m, binary, why, tests, builder, boot, verbose, lock):
    """One mutant's row: (name, results, verdict). Its tests run in order
    until one kills it."""
    def say(msg):
        with lock:
            log(msg)
    if why:
        say(f"mutant {m['name']}: BROKEN: {why}")
        return (m["name"], "-", "EDIT/BUILD FAILED")
    results = [(f"unit:{n}", v) for n, v in builder.unit_results.get(m["name"], [])]
    for n, v in results:
        say(f"mutant {m['name']}: {n}: {v} (in the mutant's own build)")
    for n in m["tests"]:
        if any(v in ("fail", "timeout") for _, v in results):
            break
        verdict, st, secs, out = tests.run(n, binary, boot)
        results.append((n, verdict))
        lines = [f"mutant {m['name']}: {n}: {verdict} (exit {st}, {secs:.1f} s"
                 + (f", lab boot {boot})" if boot is not None else ")")]
        if verbose or verdict == "error":
            lines.append(out.rstrip())
        else:
            lines += [f"    {line[:200]}" for line in first_fail_lines(out)]
        say("\n".join(lines))
    os.unlink(binary)
    verdicts = {v for _, v in results}
    verdict = ("killed" if verdicts & {"fail", "timeout"} else
               "ERROR" if "error" in verdicts else
               "SURVIVED" if "pass" in verdicts else "UNJUDGED")
    if verdict == "SURVIVED":
        say(f"mutant {m['name']} SURVIVED ({m['what']}): no named test failed; "
            "a test that catches it is missing")
    elif verdict == "UNJUDGED":
        say(f"mutant {m['name']}: UNJUDGED: every named test skipped on {tests.where}; "
            "a KVM that runs them must judge it")
    elif verdict == "ERROR":
        say(f"mutant {m['name']}: ERROR: a test's environment broke (above), and no "
            "test judged it: the run is in error, the mutant unjudged")
    return (m["name"], ", ".join(f"{n}:{v}" for n, v in results), verdict)


def finish(rows, json_path, t_start, where):
    """The table, the closing line and --json; the exit status."""
    w = max(len(r[0]) for r in rows)
    log("")
    log(f"{'mutant':<{w}}  verdict            tests")
    for name, res, verdict in rows:
        log(f"{name:<{w}}  {verdict:<17}  {res}")
    count = {k: [r[0] for r in rows if r[2] == k]
             for k in ("killed", "SURVIVED", "UNJUDGED", "ERROR")}
    broken = [r[0] for r in rows if r[2] not in count]
    secs = time.monotonic() - t_start
    log(f"mutants: {len(count['killed'])} killed, {len(count['SURVIVED'])} survived"
        + (f" ({', '.join(count['SURVIVED'])})" if count["SURVIVED"] else "")
        + f", {len(count['ERROR'])} errors" + (f" ({', '.join(count['ERROR'])})" if count["ERROR"] else "")
        + (f", {len(count['UNJUDGED'])} unjudged ({', '.join(count['UNJUDGED'])})"
           if count["UNJUDGED"] else "")
        + (f", {len(broken)} whose edit or build failed ({', '.join(broken)})" if broken else "")
        + f"; {secs:.0f} s on {where}")
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"seconds": round(secs), "where": where,
                       "mutants": [{"name": n, "verdict": v, "tests": r} for n, r, v in rows]}, f)
    return 0 if len(count["killed"]) == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
