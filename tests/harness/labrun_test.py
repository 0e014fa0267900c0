#!/usr/bin/env python3
"""labrun.py's relay() of the lab's output: a chunk that the agent's reader
thread appends while relay() copies must be written on the next call, not
skipped. The race is made certain here with a list that grows as it is
sliced. No lab runs here."""
import io
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lab"))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import labrun  # noqa: E402


class Growing(list):
    """Appends the next of `later` each time it is sliced, as the reader
    thread would right after relay() took its copy."""

    def __init__(self, items, later):
        super().__init__(items)
        self.later = list(later)

    def __getitem__(self, i):
        got = super().__getitem__(i)
        if isinstance(i, slice) and self.later:
            self.append(self.later.pop(0))
        return got


def main():
    chunks = Growing([b"ok 1\n"], [b"ok 2\n", b"ok 3\n"])
    out = io.BytesIO()
    shown = 0
    for _ in range(4):
        shown = labrun.relay(chunks, shown, out)
    want = b"ok 1\nok 2\nok 3\n"
    if out.getvalue() != want or shown != 3:
        print(f"FAIL: relayed {out.getvalue()!r} (shown {shown}), want {want!r} (shown 3)")
        return 1
    print("ok: labrun_test, a chunk appended during a relay is written on the next")
    return 0


if __name__ == "__main__":
    sys.exit(main())
