#!/usr/bin/env python3
"""run.py --check-tcg's comparison (compare_tap, load_expected) on canned TAP:
tcg-sample.tap, the guest's TAP from a real run of the tcg-pc configuration,
must agree with tcg-expected.txt, and every doctored copy of it (one more
skip or failure, another skip reason, a line gone or added, a changed
diagnostic) must fail, with a message that names the line. No QEMU needed.

When the guest changes, refresh tcg-sample.tap from a run
(run.py --check-tcg prints each configuration's TAP) with the table.
"""
import os
import re
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402

SAMPLE = os.path.join(HERE, "tcg-sample.tap")


def doctor(text, pattern, new):
    """text with the one line matching pattern replaced by new (None: removed)."""
    lines = text.split("\n")
    hits = [i for i, ln in enumerate(lines) if re.search(pattern, ln)]
    assert len(hits) == 1, f"{pattern!r} matches {len(hits)} lines of the sample"
    if new is None:
        del lines[hits[0]]
    else:
        lines[hits[0]] = new
    return "\n".join(lines)


def main():
    rows, errors = run.load_expected()
    with open(SAMPLE) as f:
        sample = f.read()
    fails = []

    def expect(what, fails_got, *needles):
        """fails_got must be non-empty and some failure must hold each needle."""
        print(f"--- {what}")
        for f in fails_got:
            print("  " + f)
        if not fails_got:
            fails.append(f"{what}: the checker passed it")
        for n in needles:
            if not any(n in f for f in fails_got):
                fails.append(f"{what}: no failure names {n!r}")

    print(f"table: {len(rows)} rows; errors: {errors}")
    if errors:
        fails += errors
    clean = run.compare_tap("sample", sample, rows)
    if clean:
        fails += ["the unchanged sample fails: " + f for f in clean]

    cases = [
        ("a pass that becomes a skip",
         r"^ok 41 - split_lock\.unlocked",
         "ok 41 - split_lock.unlocked: unlocked access across a cache line completes without #AC (vector -1) # SKIP no time",
         ["ok 41 - split_lock.unlocked", "is skip", "says pass"]),
        ("a pass that becomes a skip, its detail gone",
         r"^ok 68 - split_lock\.clear_cpl3",
         "ok 68 - split_lock.clear_cpl3: a split lock at CPL3 with TEST_CTRL bit 29 clear completes # SKIP provoked",
         ["'ok 68 - split_lock.clear_cpl3: a split lock at CPL3 with TEST_CTRL bit 29 clear completes # SKIP provoked' is skip"]),
        ("a pass that becomes a failure",
         r"^ok 54 - split_lock\.clear: split lock inc dword",
         "not ok 54 - split_lock.clear: split lock inc dword across a line and across a page, TEST_CTRL bit 29 clear: same memory, registers and flags as aligned (vectors 17, -1)",
         ["not ok 54 - split_lock.clear: split lock inc dword", "is fail", "says pass"]),
        ("a failure that becomes a pass",
         r"^not ok 13 - ",
         "ok 13 - rdmsr_safe of nonexistent MSR 0x12345678 raises #GP(0) (vector 13, error 0x0)",
         ["ok 13 - rdmsr_safe of nonexistent MSR", "is pass", "says fail"]),
        ("a pass with another detail",
         r"^ok 29 - core_caps\.read",
         "ok 29 - core_caps.read: IA32_CORE_CAPABILITIES reads without a fault, or raises #GP where EDX[30] is 0 (vector 13)",
         ["ok 29 - core_caps.read", "lacks 'vector -1'"]),
        ("a skip for another reason",
         r"^ok 35 - test_ctrl\.reset",
         "ok 35 - test_ctrl.reset: TEST_CTRL is 0 at reset # SKIP needs 2 vCPUs",
         ["ok 35 - test_ctrl.reset", "skips for 'needs 2 vCPUs'", "TEST_CTRL is not enumerated"]),
        ("a line the guest no longer prints",
         r"^ok 68 - split_lock\.clear_cpl3", None,
         ["did not print", "split_lock.clear_cpl3"]),
        ("a line the table does not have",
         r"^ok 69 - split_lock\.ac_rip",
         "ok 69 - split_lock.ac_rip: split-lock #AC reports the RIP of the instruction # SKIP split-lock detection is not enumerated\n"
         "ok 70 - split_lock.bus_lock: a new check # SKIP not yet",
         ["no row in the table: 'ok 70 - split_lock.bus_lock: a new check # SKIP not yet'"]),
        ("a line printed twice",
         r"^ok 42 - split_lock\.clear: split lock add word",
         "ok 42 - split_lock.clear: split lock add word across a line and across a page, TEST_CTRL bit 29 clear: same memory, registers and flags as aligned (vectors -1, -1)\n"
         "ok 43 - split_lock.clear: split lock add word across a line and across a page, TEST_CTRL bit 29 clear: same memory, registers and flags as aligned (vectors -1, -1)",
         ["2 times", "split lock add word"]),
        ("a bail-out",
         r"^ok 69 - split_lock\.ac_rip",
         "Bail out! vCPU 1 never answered",
         ["no row in the table: 'Bail out! vCPU 1 never answered'", "split_lock.ac_rip"]),
        ("another count of split locks",
         r"^# split_locks_made\.cpl0=", "# split_locks_made.cpl0=47",
         ["'# split_locks_made.cpl0=47'", "split_locks_made.cpl0=48"]),
        ("nested virtualization hidden",
         r"^# nested=", "# nested=none",
         ["'# nested=none'", "nested=svm"]),
        ("another conclusion of the guest",
         r"^# sld=", "# sld=enumerated",
         ["'# sld=enumerated'", "sld=not-enumerated"]),
    ]
    for what, pattern, new, needles in cases:
        try:
            expect(what, run.compare_tap("sample", doctor(sample, pattern, new), rows), *needles)
        except Exception:
            fails.append(f"{what}: {traceback.format_exc()}")

    # The table itself: a skip or a failure must say why, rows need 4 fields.
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as t:
        t.write("pass | ok line | - |\nskip | a skip | some reason |\nfail | a failure | x |  \n"
                "maybe | a row | - | why\npass | three fields | -\n")
        t.flush()
        _, errs = run.load_expected(t.name)
        expect("a table with bad rows", errs, ":2: a skip row must say why",
               ":3: a fail row must say why", ":4: verdict 'maybe'", ":5: want 'verdict |")

    for f in fails:
        print("FAIL: " + f)
    if not fails:
        print(f"ok: the sample agrees with the table; {len(cases) + 1} doctored copies fail")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
