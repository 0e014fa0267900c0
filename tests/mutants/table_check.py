#!/usr/bin/env python3
"""Checks, in seconds, that every mutant of table.py still applies: each
edit's text stands exactly once in its file. A stale edit otherwise shows
only at the end of ./test.sh, when run.py builds the mutants (BROKEN), and
a changed line leaves its defect untested."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from table import MUTANTS  # noqa: E402


def main():
    root = os.path.join(HERE, "..", "..")
    bad = []
    for m in MUTANTS:
        for path, old, _ in m["edits"]:
            with open(os.path.join(root, path)) as f:
                n = f.read().count(old)
            if n != 1:
                first = old.strip().splitlines()[0] if old.strip() else repr(old)
                bad.append(f"mutant {m['name']}: {path} holds its text {n} times, not once "
                           f"(starting {first!r}): bring the edit in tests/mutants/table.py "
                           "up to date with the code")
    for b in bad:
        print("FAIL: " + b)
    print(f"{'FAIL' if bad else 'ok'}: {len(MUTANTS)} mutants, {len(bad)} stale edits")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
