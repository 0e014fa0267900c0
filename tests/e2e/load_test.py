#!/usr/bin/env python3
"""Load: many VMs at once, and one VM with many vCPUs, on a small host.

  load_test.py --vmm build/vmm --guest build/guest.bin CASE

CASE is one of:
  many-vms   16 VMs at once, 2 vCPUs each, policies mixed across inherit,
             off and on: each passes its self-test and reports its own
             policy (the guest's sld= diagnostic against --host-info), or,
             for `on` where this host cannot deliver split-lock #AC, is
             refused with status 78 and one line
  64-vcpus   one VM with 64 vCPUs passes the self-test; every AP checks in
Prints how long each took. Exits 0 on success, 1 on failure, 77 when
/dev/kvm is unusable.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from policy_test import check, start_vm  # noqa: E402
from vmmlib import case_main  # noqa: E402

VMS = 16
POLICIES = ["inherit", "off", "on"]


def case_many_vms(ctx):
    hi = ctx.hi
    policies = [POLICIES[i % len(POLICIES)] for i in range(VMS)]
    t0 = time.monotonic()
    vms = [start_vm(ctx, p, 2) for p in policies]
    fails = []
    for i, (vm, p) in enumerate(zip(vms, policies)):
        print(f"=== VM {i}: --split-lock={p}")
        fails += [f"VM {i}: {f}" for f in check(vm, p, hi)]
    elapsed = time.monotonic() - t0
    ran = sum(1 for p in policies if p != "on" or hi["can_deliver_ac"])
    print(f"{VMS} VMs of 2 vCPUs ({ran} ran the self-test, {VMS - ran} refused) "
          f"finished in {elapsed:.1f} s")
    return fails


def case_64_vcpus(ctx):
    hi = ctx.hi
    cpus = 64
    t0 = time.monotonic()
    vm = start_vm(ctx, "inherit", cpus, ["-m", "128M"])
    # The self-test's SMP group checks that all 63 APs checked in, each once.
    fails = check(vm, "inherit", hi)
    elapsed = time.monotonic() - t0
    print(f"one VM with {cpus} vCPUs finished in {elapsed:.1f} s")
    return fails


if __name__ == "__main__":
    sys.exit(case_main({"many-vms": case_many_vms, "64-vcpus": case_64_vcpus}, __doc__))
