#!/usr/bin/env python3
"""Figures the docs keep by hand, held to the code: the exit-status tables
of docs/port-abi.md and the man page (docs/vmm.1.scd) list exactly vmm's
own statuses of include/vmm_status.h; tests/README.md has a row for every
module of src/vmm/, with its count of mutants in tests/mutants/table.py;
the design and the testing document stay short enough to read (500 and
400 lines at most); design.md's table of a stepped vCPU's phases names
every member of the three enums a phase is made of, and nothing else."""
import collections
import glob
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
    return report(fails + module_rows() + doc_sizes() + phase_table(), "docs_status_test")


def enum_members(path, enum):
    body = re.search(r"^enum %s \{(.*?)^\};" % enum, read(path), re.M | re.S)
    names = re.findall(r"^\s*([A-Z][A-Z0-9_]+)\b", body.group(1), re.M) if body else []
    return {n for n in names if not n.endswith("_COUNT")}


def phase_section():
    design = read("docs/design.md")
    section = design[design.find("#### Phases of a stepped vCPU"):]
    return section[:section.find("#### Delivery, forecasts and after a step")]


def phase_table():
    section = phase_section()
    named = set(re.findall(r"`((?:STEP_PHASE|STEP_DEBUG|STEP_ON|VCPU_COMPLETION)_[A-Z0-9_]+)`",
                           section))
    code = (enum_members("src/vmm/step.h", "step_phase") | enum_members("src/vmm/step.h", "step_debug") |
            enum_members("src/vmm/step.h", "step_event") |
            enum_members("src/vmm/vcpu.h", "vcpu_completion"))
    fails = []
    if len(code) < 16:
        fails.append(f"the enums of a phase read as {sorted(code)}: the pattern no longer fits")
    if named != code:
        fails.append(f"docs/design.md's phase table names {sorted(named - code)} that the code "
                     f"lacks and lacks {sorted(code - named)}")
    return fails + transitions(section)


def transitions(section):
    """design.md's matrix of step_phase_next(), cell by cell against step.c's table."""
    code = {}
    table = re.search(r"phase_next\[STEP_PHASE_COUNT\]\[STEP_EVENT_COUNT\] = \{(.*?)^\};",
                      read("src/vmm/step.c"), re.M | re.S)
    for row in re.finditer(r"\[(STEP_PHASE_\w+)\] = \{(.*?)\}", table.group(1) if table else "", re.S):
        for on, to in re.findall(r"\[(STEP_ON_\w+)\] = STEP_PHASE_(\w+)", row.group(2)):
            code[(row.group(1), on)] = to
    head = re.search(r"^\| from \\ on \|(.*)\|$", section, re.M)
    ons = re.findall(r"`(STEP_ON_\w+)`", head.group(1)) if head else []
    doc = {}
    for row in re.finditer(r"^\| `(STEP_PHASE_\w+)` \|(.*)\|$", section, re.M):
        for on, to in zip(ons, [c.strip() for c in row.group(2).split("|")]):
            doc[(row.group(1), on)] = to
    if len(code) < 16:
        return [f"step.c's phase_next table read as {len(code)} cells: the pattern no longer fits"]
    return [f"docs/design.md says {p} on {on} goes to {doc.get((p, on))}, step.c says {to}"
            for (p, on), to in sorted(code.items()) if doc.get((p, on)) != to] + \
           [f"docs/design.md has {p} on {on}, which step.c's table lacks"
            for (p, on) in sorted(set(doc) - set(code))]


def doc_sizes():
    limits = {"docs/design.md": 500, "docs/testing.md": 400}
    return [f"{path} has {n} lines, more than {limit}: a newcomer reads it whole"
            for path, limit in limits.items() if (n := read(path).count("\n")) > limit]


def module_rows():
    sys.path.insert(0, os.path.join(ROOT, "tests", "mutants"))
    from table import MUTANTS
    count = collections.Counter(os.path.basename(p) for m in MUTANTS for p in {e[0] for e in m["edits"]})
    rows = {m.group(1): int(m.group(2)) for m in
            re.finditer(r"^\| `([a-z_]+\.c)` \|.*\| (\d+) \|$", read("tests/README.md"), re.M)}
    fails = []
    for path in sorted(glob.glob(os.path.join(ROOT, "src", "vmm", "*.c"))):
        name = os.path.basename(path)
        if name not in rows:
            fails.append(f"tests/README.md has no row for src/vmm/{name}")
        elif rows[name] != count[name]:
            fails.append(f"tests/README.md gives src/vmm/{name} {rows[name]} mutants, "
                         f"tests/mutants/table.py has {count[name]}")
    return fails


if __name__ == "__main__":
    sys.exit(main())
