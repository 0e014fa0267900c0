#!/usr/bin/env python3
"""vmm --host-info --json: the fields a script relies on, with sane values.

  hostinfo_test.py --vmm build/vmm

Exits 0 on success, 1 on failure, 77 when /dev/kvm is unusable (the KVM
part of the answer then only says why).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmmlib import case_main, run  # noqa: E402


def case_json(ctx):
    r = run([ctx.vmm, "--host-info", "--json"], timeout=60)
    print(r.out + "--- stderr ---\n" + r.err)
    if r.hung or r.status != 0:
        return [f"exit status {r.status}"]
    d = json.loads(r.out)
    fails = []
    if d["mode"] not in ("none", "off", "warn", "fatal", "ratelimit"):
        fails.append(f"mode {d['mode']!r}")
    if d["can_deliver_ac"] != (d["mode"] == "fatal"):
        fails.append(f"can_deliver_ac {d['can_deliver_ac']} with mode {d['mode']}")
    need = {"user_space_msr", "msr_filter", "vcpu_events"}
    if not set(d["kvm"]["caps"]) >= need:
        fails.append(f"caps {d['kvm']['caps']} lack some of {sorted(need)}")
    if d["kvm"]["probe"]["singlestep_cpl0"] not in (True, False):
        fails.append(f"singlestep_cpl0 {d['kvm']['probe']['singlestep_cpl0']!r}")
    return fails


if __name__ == "__main__":
    sys.exit(case_main({"json": case_json}, __doc__))
