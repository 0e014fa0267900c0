#!/usr/bin/env python3
"""Adds up meson's test logs into one closing line. Each argument is a build
dir (its meson-logs/testlog.json) or a log file (e.g. build/meson-logs/lab.json
of `meson test --logbase lab`)."""
import json
import os
import sys

counts = {"passed": 0, "failed": 0, "skipped": 0}
for d in sys.argv[1:]:
    path = d if d.endswith(".json") else os.path.join(d, "meson-logs", "testlog.json")
    if not os.path.exists(path):
        print(f"summary: {path} is missing", file=sys.stderr)
        counts["failed"] += 1
        continue
    with open(path) as f:
        for line in f:
            r = json.loads(line)["result"]
            if r in ("OK", "EXPECTEDFAIL"):
                counts["passed"] += 1
            elif r == "SKIP":
                counts["skipped"] += 1
            else:
                counts["failed"] += 1
print(f"tests: {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
sys.exit(1 if counts["failed"] or not counts["passed"] else 0)
