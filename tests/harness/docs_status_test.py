#!/usr/bin/env python3
"""The exit-status tables of docs/port-abi.md and the man page
(docs/vmm.1.scd) list exactly vmm's own statuses of include/vmm_status.h,
so that neither can keep a number the code no longer uses."""
import os
import re
import sys

from verdicts import report

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def read(path):
    with open(os.path.join(ROOT, path)) as f:
        return f.read()


def main():
    code = {int(n) for name, n in re.findall(r"^#define (VMM_EXIT_\w+)\s+(\d+)", read("include/vmm_status.h"), re.M)
            if not name.endswith(("_FIRST", "_LAST", "_BASE"))}
    docs = {
        "docs/port-abi.md": {int(n) for n in re.findall(r"^\| (\d+) \|", read("docs/port-abi.md"), re.M)
                             if int(n) >= 64},
        "docs/vmm.1.scd": {int(n) for n in re.findall(r"^\|\s+(\d+)$", read("docs/vmm.1.scd"), re.M)
                           if int(n) >= 64},
    }
    fails = []
    if len(code) < 10:
        fails.append(f"include/vmm_status.h: only {sorted(code)} read; the pattern no longer fits")
    for path, got in docs.items():
        if got != code:
            fails.append(f"{path} lists {sorted(got - code)} that vmm_status.h lacks and lacks "
                         f"{sorted(code - got)}")
    return report(fails, "docs_status_test")


if __name__ == "__main__":
    sys.exit(main())
