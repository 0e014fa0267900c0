#!/usr/bin/env python3
"""docs/claims.md against the code: every test it names is a meson test of
BUILD, every mutant a mutant of table.py, every row names both, and each
row's mutants name one of its tests (so that the row's tests are what
kills them).

  claims_check.py BUILD
"""
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from table import MUTANTS  # noqa: E402

CLAIMS = os.path.join(HERE, "..", "..", "docs", "claims.md")


def rows(path):
    """(promise, tests, mutants) of each table row below the header."""
    with open(path) as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) != 4 or cells[0] in ("promise", "---"):
                continue
            yield cells[0], re.findall(r"`([^`]+)`", cells[2]), re.findall(r"`([^`]+)`", cells[3])


def main():
    build = sys.argv[1]
    tests = {t["name"] for t in json.loads(subprocess.run(
        ["meson", "introspect", "--tests", build], capture_output=True, text=True,
        check=True).stdout)}
    mutants = {m["name"]: m for m in MUTANTS}
    bad, n = [], 0
    for promise, ts, ms in rows(CLAIMS):
        n += 1
        if not ts or not ms:
            bad.append(f"{promise!r}: names no test or no mutant")
        bad += [f"{promise!r}: no meson test {t}" for t in ts if t not in tests]
        for m in ms:
            if m not in mutants:
                bad.append(f"{promise!r}: no mutant {m} in tests/mutants/table.py")
            elif not set(mutants[m]["tests"]) & set(ts):
                bad.append(f"{promise!r}: mutant {m} names none of the row's tests "
                           f"({', '.join(mutants[m]['tests'])})")
    if n == 0:
        bad.append("docs/claims.md: no rows")
    for b in bad:
        print("FAIL: " + b)
    print(f"{'FAIL' if bad else 'ok'}: {n} promises in docs/claims.md, {len(bad)} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
