#!/usr/bin/env python3
"""The README's example session is what vmm prints: its figures (the TAP
plan, the policy line, the exit status) cannot go stale.

  docs_test.py --vmm build/vmm readme-session SOURCE_ROOT GUEST_BIN

The session is README.md's fenced block whose first line runs
`./build/vmm`. Each `$ ./build/vmm ARGS` line is run (build/guest.bin and
./build/vmm standing for this build's); the lines after it must appear,
in order, in what it printed (stderr, then stdout), where a line "..."
stands for any number of lines and "(...)" inside a line for any text.
`$ echo $?` must be followed by its exit status. Exits 0, 1 with the
lines that differ, 77 without a KVM.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmmlib import Failure, case_main, run, scaled  # noqa: E402


def session(readme):
    """The example block's lines, without its fences."""
    with open(readme) as f:
        blocks = re.findall(r"^```[a-z]*\n(.*?)^```$", f.read(), re.M | re.S)
    for b in blocks:
        if b.startswith("$ ./build/vmm"):
            return b.rstrip("\n").split("\n")
    raise Failure(f"{readme}: no fenced block starts with '$ ./build/vmm'")


def line_re(want):
    return re.compile("^" + ".*".join(re.escape(p) for p in want.split("(...)")) + "$")


def unmatched(want, got):
    """The lines of want that do not appear, in order, in got."""
    missing, i, skip = [], 0, False
    for w in want:
        if w == "...":
            skip = True
            continue
        pat = line_re(w)
        j = i
        while j < len(got) and not pat.match(got[j]) and skip:
            j += 1
        if j < len(got) and pat.match(got[j]):
            i, skip = j + 1, False
        else:
            missing.append(f"{w!r} (next line printed: {got[i] if i < len(got) else 'none'!r})")
    if i < len(got) and not skip:
        missing.append(f"printed beyond the example: {got[i]!r}")
    return missing


def readme_session(ctx, root, guest):
    lines = session(os.path.join(root, "README.md"))
    fails, status = [], None
    for k, line in enumerate(lines):
        if not line.startswith("$ "):
            continue
        block = []
        for ln in lines[k + 1:]:
            if ln.startswith("$ "):
                break
            block.append(ln)
        cmd = line[2:].split()
        if cmd[0] == "./build/vmm":
            args = [guest if a == "build/guest.bin" else a for a in cmd[1:]]
            r = run([ctx.vmm, *args], timeout=scaled(120))
            print(f"$ {' '.join(args)}\n{r.err}{r.out}")
            status = r.status
            fails += [f"{line}: {m}" for m in unmatched(block, (r.err + r.out).splitlines())]
        elif line == "$ echo $?":
            if block != [str(status)]:
                fails.append(f"README says the status is {block}, vmm exited {status}")
        else:
            fails.append(f"README's session runs {line!r}, which this test does not know")
    return fails


if __name__ == "__main__":
    sys.exit(case_main({"readme-session": readme_session}, __doc__))
