#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""No function in src/ is longer than a screen (docs/design.md, "Source
layout"): from the line that names it to its closing brace, at most LIMIT
lines. Functions are found as the project's style writes them: the body's
braces in column 0.

Usage: functions.py SRCDIR [LIMIT]. Prints each function over the limit,
longest first; exit 1 if any.
"""
import pathlib
import re
import sys


def functions(path):
    """(lines, name) of every function defined in the file at path."""
    lines = path.read_text(errors="replace").split("\n")
    start = None
    for i, line in enumerate(lines):
        if line.startswith("{") and start is None:
            j = i - 1
            while j >= 0 and "(" not in lines[j]:
                j -= 1
            m = re.search(r"(\w+)\s*\(", lines[j]) if j >= 0 else None
            start, name = j, m.group(1) if m else "?"
        elif line.startswith("}") and start is not None:
            yield i - start + 1, name
            start = None


def main():
    src = pathlib.Path(sys.argv[1])
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else 80
    long = sorted(((n, f"{path.relative_to(src.parent)}: {name}")
                   for path in sorted(src.rglob("*.c")) for n, name in functions(path)
                   if n > limit), reverse=True)
    for n, where in long:
        print(f"{where}: {n} lines, over {limit}")
    print(f"functions: {len(long)} over {limit} lines")
    return 1 if long else 0


if __name__ == "__main__":
    sys.exit(main())
