#!/usr/bin/env python3
"""gen.py's oracle_quirks, on made-up record lines: the one answer a probe
measured the oracle's CPU to get wrong is taken as the architecture's,
and nothing else is. No VM runs here."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "differential"))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import gen  # noqa: E402
from verdicts import report  # noqa: E402

TAIL = " cr2=0 op=2f8c h=1a00376e d=fba6370 at=+0 f=0:fe798dc7"
Q = {"intn_error_code"}


def same(ref, emu, quirks=Q, insn=b"\xcd\x01\x90", lock_ud=False):
    return gen.oracle_quirks(ref, emu, quirks, insn, lock_ud) == emu


def main():
    bad = []

    def expect(name, got, want):
        if got != want:
            bad.append(f"{name}: {'equal' if got else 'different'}, expected the other")

    # INT3 through a DPL0 gate at CPL3: TCG 3*16+2, the SDM 3*8+2.
    expect("TCG's INT3 #GP", same("g0 db22: #GP 32" + TAIL, "g0 db22: #GP 1a" + TAIL), True)
    expect("TCG's #NP", same("g3: #NP 202" + TAIL, "g3: #NP 102" + TAIL), True)
    expect("no probe said so", same("g0: #GP 32" + TAIL, "g0: #GP 1a" + TAIL, set()), False)
    expect("emulate wrong too", same("g0: #GP 32" + TAIL, "g0: #GP 1b" + TAIL), False)
    expect("another vector", same("g0: #GP 32" + TAIL, "g0: #GP 22" + TAIL), False)
    expect("hash differs", same("g0: #GP 32" + TAIL, "g0: #GP 1a" + TAIL.replace("h=1a", "h=1b")),
           False)
    expect("#DB count differs", same("g0 db22: #GP 32" + TAIL, "g0 db2: #GP 1a" + TAIL), False)
    expect("not a gate fault", same("g0: #PF 32" + TAIL, "g0: #PF 1a" + TAIL), False)
    # TCG's frame RIP past INT n (CD ib, 2 bytes), with or without its error code.
    past = TAIL.replace("at=+0", "at=+2")
    expect("TCG's RIP past INT 1", same("g1 db22: #GP 12" + past, "g1 db22: #GP a" + TAIL), True)
    expect("TCG's RIP past INT 0", same("g0: #GP 2" + past, "g0: #GP 2" + TAIL), True)
    expect("RIP 1 past", same("g0: #GP 2" + TAIL.replace("at=+0", "at=+1"), "g0: #GP 2" + TAIL),
           False)
    expect("RIP past, no IDT error code", same("g0: #GP 0" + past, "g0: #GP 0" + TAIL), False)
    expect("RIP past, no probe", same("g0: #GP 2" + past, "g0: #GP 2" + TAIL, set()), False)
    # Past INT3 (CC, 1 byte): seed 30 record 203, a DPL0 trap gate at CPL3.
    past1 = TAIL.replace("at=+0", "at=+1")
    expect("TCG's RIP past INT3", same("g0: #GP 32" + past1, "g0: #GP 1a" + TAIL, insn=b"\xcc\x90"),
           True)
    expect("RIP 2 past INT3", same("g0: #GP 32" + past, "g0: #GP 1a" + TAIL, insn=b"\xcc\x90"),
           False)
    expect("RIP 1 past, no INT there", same("g0: #GP 2" + past1, "g0: #GP 2" + TAIL, insn=b"\x90"),
           False)
    # A LOCK the instruction does not take (seed 1 record 47, lock mov): TCG
    # stores, the SDM raises #UD at it. Only for such a record, only #UD at +0.
    lq, ud = {"lock_ud"}, "g0: #UD 0 cr2=0 op=4e8add1b8f1b326e h=5f03f2bf at=+0"
    ok = "g0: ok op=4e8add1b8f1b1d22 h=6455d7ea"
    expect("TCG's LOCK MOV", same(ok, ud, lq, lock_ud=True), True)
    expect("TCG's LOCK MOV with TF", same("g0 db1: ok op=1 h=2 d=3",
                                          "g0 db0: #UD 0 cr2=0 op=1 h=4 at=+0 f=0:1", lq,
                                          lock_ud=True), True)
    expect("LOCK MOV, no probe", same(ok, ud, set(), lock_ud=True), False)
    expect("lockable", same(ok, ud, lq), False)
    expect("#UD elsewhere", same(ok, ud.replace("at=+0", "at=+3"), lq, lock_ud=True), False)
    expect("#GP instead", same(ok, ud.replace("#UD 0", "#GP 0"), lq, lock_ud=True), False)
    expect("both #UD, hashes differ", same(ud, ud.replace("h=5f", "h=6f"), lq, lock_ud=True), False)
    return report(bad, "oracle_quirks")


if __name__ == "__main__":
    sys.exit(main())
