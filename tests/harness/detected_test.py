#!/usr/bin/env python3
"""gen.py's check_detected, on made-up batches: emulate's count of split
locks must match what the programs executed, and where a probe measured
that this KVM cannot step CPL3, the split locks of records above CPL0 may
go unseen only as far as --stats counts runs unchecked. No VM runs here."""
import os
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "differential"))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import gen  # noqa: E402
from verdicts import report  # noqa: E402


def lock_mix(idx, cpl, splits):
    """A lock-mix record at CPL cpl whose program made `splits` split locks."""
    c = gen.Case()
    c.idx, c.mode, c.cpl, c.form = idx, 0, cpl, "lock-mix"
    c.insn = b"\xf0\x01\x03" * max(splits, 1)
    c.events = ("locked-split x%d" % splits,) if splits else ()
    return c


def emulate(batch, detected, unchecked):
    out = "\n".join(f"g{i}: ok cr2=0 op=0 h=0 d=0 at=+0" for i in range(len(batch)))
    return types.SimpleNamespace(out=out, status=0, detected=detected, unchecked=unchecked)


def main():
    bad = []

    def expect(name, batch, detected, unchecked, outer_unstepped, ok):
        problem = gen.check_detected(batch, emulate(batch, detected, unchecked), outer_unstepped)
        if (problem is None) != ok:
            bad.append(f"{name}: {'passed' if problem is None else problem}, expected the other")

    both = [lock_mix(0, 0, 2), lock_mix(1, 3, 3)]
    expect("all five seen", both, 5, 0, False, True)
    expect("one too few", both, 4, 0, False, False)
    expect("one too many", both, 6, 0, False, False)
    # CPL3 not stepped: its three may go unseen, each counted unchecked.
    expect("CPL3's three unseen, counted", both, 2, 3, True, True)
    expect("CPL3's three unseen, one counted", both, 2, 1, True, False)
    expect("CPL3's unseen where CPL3 is stepped", both, 2, 3, False, False)
    # Never those of CPL0: unchecked runs there excuse nothing.
    expect("a CPL0 one unseen", both, 1, 9, True, False)
    return report(bad, "detected_test")


if __name__ == "__main__":
    sys.exit(main())
