#!/usr/bin/env python3
"""The run-time sandbox, seen from outside a running vmm.

  sandbox_test.py --vmm build/vmm CASE

CASE is one of:
  status     every thread of a running VM has no capabilities, no_new_privs
             and a seccomp filter (/proc/PID/task/*/status); SIGTERM still
             stops it
  forbidden SHIM
             the LD_PRELOAD shim forbidden.c makes a refused call from a
             vCPU thread: it ends vmm with status 70 (EX_SOFTWARE: a bug in
             vmm) and one line naming it
  paths      stop paths that make run-time system calls (register dump,
             MMIO and port warnings, --stats to stderr and to a file) pass
             through the filter without a refusal

Exits 0 on success, 1 on failure, 77 when /dev/kvm is unusable.
"""
import json
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmmlib import REGS_LOST, case_main, image, kvm_on_svm, run, scaled, scaled_str, start, target  # noqa: E402

EXIT_SOFTWARE = 70

# 64-bit machine code, loaded at 1 MiB (see tests/e2e/meson.build).
LOOP = "ebfe"                                    # jmp .
UD2 = "0f0b"                                     # triple fault, no IDT
MMIO = ("c7042500005000" "01000000"              # mov dword [0x500000], 1
        "8b042500005000"                         # mov eax, [0x500000]
        "e480"                                   # in al, 0x80
        "66baf400" "b805000000" "ef"             # out 0xf4, 5
        "f4")                                    # hlt
NONE = "0" * 16
REFUSAL = re.compile(r"^vmm: error: seccomp: forbidden system call \d+ \(socket\); "
                     r"this is a bug in vmm, please report it$", re.M)


def task_status(pid):
    """{tid: {field: value}} for every thread of pid, where it runs; {} once it is gone."""
    tasks = {}
    t = target()
    for tid in t.listdir(f"/proc/{pid}/task") or []:
        text = t.read(f"/proc/{pid}/task/{tid}/status")
        if text is not None:
            tasks[tid] = dict(line.split(":\t", 1)
                              for line in text.decode(errors="replace").splitlines() if ":\t" in line)
    return tasks


def case_status(ctx):
    cpus = 2
    vm = start([ctx.vmm, "-q", "-c", str(cpus), "--timeout", scaled_str(60), image(ctx.tmp, LOOP)])
    fails = []
    # The sandbox goes in after setup: wait until the main thread and every
    # vCPU thread exist and all are filtered. KVM may add a worker of its
    # own to the process (kvm-nx-lpage-recovery); it is checked the same.
    deadline = time.monotonic() + 20
    tasks = {}
    while time.monotonic() < deadline and vm.poll() is None:
        tasks = task_status(vm.pid)
        ours = [t for t in tasks.values() if t.get("Name") == "vmm"]
        if len(ours) == 1 + cpus and all(t.get("Seccomp") == "2" for t in tasks.values()):
            break
        time.sleep(0.05)
    else:
        fails.append(f"not {1 + cpus} filtered vmm threads within 20 s")
    for tid, t in sorted(tasks.items()):
        print(f"task {tid} ({t.get('Name')}): " + ", ".join(
            f"{k} {t.get(k)}" for k in ("CapEff", "CapPrm", "CapInh", "CapBnd", "CapAmb",
                                         "NoNewPrivs", "Seccomp", "Seccomp_filters")))
        want = {"CapEff": NONE, "CapPrm": NONE, "CapInh": NONE, "CapAmb": NONE,
                "NoNewPrivs": "1", "Seccomp": "2"}
        # Only a process holding CAP_SETPCAP (root here) can empty the bounding set.
        if os.geteuid() == 0:
            want["CapBnd"] = NONE
        for k, v in want.items():
            if t.get(k) != v:
                fails.append(f"task {tid}: {k} is {t.get(k)}, expected {v}")
        if int(t.get("Seccomp_filters", "0")) < 1:
            fails.append(f"task {tid}: Seccomp_filters {t.get('Seccomp_filters')}")
    vm.send_signal(signal.SIGTERM)
    r = vm.wait(timeout=time.monotonic() - vm.t0 + 30)
    print("--- stderr ---\n" + r.err)
    if r.status != -signal.SIGTERM:
        fails.append(f"SIGTERM: exit status {r.status}, expected death by SIGTERM")
    if "stopping the VM on Terminated" not in r.err or "seccomp" in r.err:
        fails.append("SIGTERM: stderr is not the usual stop line")
    return fails


def case_forbidden(ctx, shim):
    env = dict(os.environ, LD_PRELOAD=os.path.abspath(shim),
               ASAN_OPTIONS="verify_asan_link_order=0:" + os.environ.get("ASAN_OPTIONS", ""))
    r = run([ctx.vmm, "-q", "-c", "2", "--timeout", scaled_str(60), image(ctx.tmp, LOOP)], env=env,
            timeout=scaled(60))
    print("--- stderr ---\n" + r.err)
    fails = []
    if r.status != EXIT_SOFTWARE:
        fails.append(f"exit status {r.status}, expected {EXIT_SOFTWARE}")
    if not REFUSAL.search(r.err):
        fails.append(f"stderr does not match /{REFUSAL.pattern}/")
    if "was allowed" in r.err:
        fails.append("the forbidden call was allowed")
    return fails


def run_checked(cmd, status, want_err, fails):
    r = run(cmd, timeout=scaled(60))
    print(r.out + "--- stderr ---\n" + r.err)
    if r.status != status:
        fails.append(f"{cmd[-1]}: exit status {r.status}, expected {status}")
    if "seccomp" in r.err:
        fails.append(f"{cmd[-1]}: a system call was refused")
    for rx in want_err:
        if not re.search(rx, r.err, re.M):
            fails.append(f"{cmd[-1]}: stderr does not match /{rx}/")


def case_paths(ctx):
    fails = []
    # KVM_GET_REGS, KVM_GET_SREGS; --stats to stderr.
    run_checked([ctx.vmm, "-q", "--stats", image(ctx.tmp, UD2)], 80,
                [r"triple fault", REGS_LOST if kvm_on_svm() else r"bytes at RIP: 0f 0b",
                 r'^\{"status":80'], fails)
    # RAM is 5 MiB, the page tables map 6: 0x500000 is an MMIO address.
    stats = os.path.join(ctx.tmp, "stats.json")
    run_checked([ctx.vmm, "-q", "-m", "5M", "--stats=" + stats,
                 image(ctx.tmp, MMIO, "mmio.img")], 5,
                [r"write of 4 byte\(s\) at guest-physical 0x500000",
                 r"read of 4 byte\(s\) at guest-physical 0x500000",
                 r"unknown port 0x80"], fails)
    try:
        with open(stats) as f:
            st = json.load(f)
        if st["status"] != 5 or st["vcpus"][0]["exits"].get("mmio") != 2:
            fails.append(f"--stats file: {st}")
    except (OSError, ValueError, KeyError) as e:
        fails.append(f"--stats file: {e}")
    return fails


if __name__ == "__main__":
    sys.exit(case_main({"status": case_status, "forbidden": case_forbidden,
                        "paths": case_paths}, __doc__))
