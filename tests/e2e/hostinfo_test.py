#!/usr/bin/env python3
"""vmm --host-info --json: the fields a script relies on, with sane values.

  hostinfo_test.py --vmm build/vmm

Exits 0 on success, 1 on failure, 77 when /dev/kvm is unusable (the KVM
part of the answer then only says why).
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmmtest import kvm_usable  # noqa: E402

SKIP = 77


def main():
    vmm = sys.argv[sys.argv.index("--vmm") + 1]
    why = kvm_usable()
    if why:
        print(f"SKIP: {why}")
        return SKIP
    p = subprocess.run([vmm, "--host-info", "--json"], capture_output=True, text=True,
                       timeout=60)
    print(p.stdout + "--- stderr ---\n" + p.stderr)
    if p.returncode != 0:
        print(f"FAIL: exit status {p.returncode}")
        return 1
    d = json.loads(p.stdout)
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
    for f in fails:
        print("FAIL: " + f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
