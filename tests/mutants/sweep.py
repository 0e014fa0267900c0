#!/usr/bin/env python3
"""Random operator mutants of one source file against the unit suite: where
the unit tests are thin. table.py's mutants are chosen by hand and run
against every suite (run.py); these are drawn at random and run against
the unit tests alone, so a survivor is a place to look, not a verdict (the
VM suites may kill it, or it may change nothing).

  sweep.py [--count N] [--seed S] [--dir DIR] FILE...

FILE is a path in the source tree (src/vmm/stepping.c). The tracked tree
is copied to DIR (default: a temporary directory) and built there once
(gcc, -Dguest=false); the working tree is never touched. Each mutant flips
one operator on one line (&& and ||, < and <=, > and >=, == and !=, drops
a !), rebuilds, runs `meson test --suite unit`, and is reverted. Prints a
line a mutant, KILLED, SURVIVED or BUILD (the compiler refused it), and
`sweep: N killed, N survived, N did not build`. Exits 0 (a report), 1 if
the unmutated copy fails to build or its unit tests fail.
"""
import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FLIPS = ((r" && ", " || "), (r" \|\| ", " && "), (r" < ", " <= "), (r" > ", " >= "),
         (r" <= ", " < "), (r" >= ", " > "), (r" == ", " != "), (r" != ", " == "),
         (r"if \(!", "if ("))


def candidates(lines):
    """(line index, start, end, replacement) for each flip outside comments
    and preprocessor lines."""
    out = []
    for i, line in enumerate(lines):
        if line.strip().startswith(("/*", "*", "//", "#")):
            continue
        for pat, rep in FLIPS:
            out += [(i, m.start(), m.end(), rep) for m in re.finditer(pat, line)]
    return out


def quiet(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def unit_ok(build):
    if quiet(["ninja", "-C", build]).returncode:
        return None
    return quiet(["meson", "test", "-C", build, "--no-rebuild", "--suite", "unit"]).returncode == 0


def sweep(src, build, path, count, rng, tally):
    full = os.path.join(src, path)
    with open(full) as f:
        text = f.read()
    lines = text.split("\n")
    cands = candidates(lines)
    rng.shuffle(cands)
    try:
        for i, a, b, rep in cands[:count]:
            old = lines[i]
            mutated = list(lines)
            mutated[i] = old[:a] + rep + old[b:]
            with open(full, "w") as f:
                f.write("\n".join(mutated))
            ok = unit_ok(build)
            verdict = "BUILD" if ok is None else "SURVIVED" if ok else "KILLED"
            tally[verdict] += 1
            print(f"{verdict} {path}:{i + 1}: {old.strip()}  ->  {mutated[i].strip()}", flush=True)
    finally:
        with open(full, "w") as f:
            f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=40, help="mutants per file (default 40)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dir", help="where the copy and its build go (kept)")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    for p in a.files:
        if not os.path.isfile(os.path.join(ROOT, p)):
            ap.error(f"{p}: no such file in the source tree ({ROOT})")
    work = a.dir or tempfile.mkdtemp(prefix="vmm-sweep-")
    src, build = os.path.join(work, "src"), os.path.join(work, "build")
    tracked = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], stdout=subprocess.PIPE,
                             check=True).stdout.decode().split("\0")
    for p in filter(None, tracked):
        dst = os.path.join(src, p)
        with open(os.path.join(ROOT, p), "rb") as f:
            data = f.read()
        if os.path.isfile(dst):
            with open(dst, "rb") as f:
                if f.read() == data:
                    continue
        # Written anew (mtime now), so that a kept --dir build sees the change.
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy(os.path.join(ROOT, p), dst)
    if not os.path.isdir(build):
        r = quiet(["meson", "setup", build, src, "-Dguest=false", "-Dwerror=true"])
        if r.returncode:
            print(r.stdout[-3000:] + "\nsweep: meson setup failed", file=sys.stderr)
            return 1
    if not unit_ok(build):
        print(f"sweep: the unmutated copy does not pass its unit tests ({build})", file=sys.stderr)
        return 1
    tally = {"KILLED": 0, "SURVIVED": 0, "BUILD": 0}
    rng = random.Random(a.seed)
    for p in a.files:
        sweep(src, build, p, a.count, rng, tally)
    if a.dir:
        quiet(["ninja", "-C", build])  # the kept build matches its sources again
    print(f"sweep: {tally['KILLED']} killed, {tally['SURVIVED']} survived, "
          f"{tally['BUILD']} did not build (seed {a.seed}, {work})")
    if not a.dir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
