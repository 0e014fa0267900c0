#!/usr/bin/env python3
"""vmm --split-lock=emulate: cost per guest instruction against the raw KVM
single-step round trip, both measured in this one run.

  bench/step.py [--build DIR] [--steps N] [--repeat R]

Per-instruction cost under emulate: vmm runs a guest of a counted loop
(dec ecx; jnz) twice, with 0 and with N iterations; the difference in wall
time over the difference in single-steps (from --stats) is what one more
guest instruction costs, start-up excluded. The raw round trip comes from
stepbench, which does nothing but KVM_RUN under single-step; it also
measures the two ways of re-arming the step before each entry. Target: the
emulate step within 1.2x of the raw one. A report: exits 0 whether or not
the target is met, 1 if something failed to run.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def loop_image(iterations):
    # mov ecx, N; 1: dec ecx; jnz 1b; mov dx, 0xf4; xor eax, eax; out dx, eax; hlt
    return (b"\xb9" + iterations.to_bytes(4, "little") + b"\xff\xc9\x75\xfc" +
            b"\x66\xba\xf4\x00\x31\xc0\xef\xf4")


def load_loop_image(iterations):
    # mov ecx, N; 1: mov eax, [rip - 6] (itself); dec ecx; jnz 1b; then as above.
    # A third of the instructions read memory: each costs emulate's fault
    # forecast (a full decode and a page walk) on top of the step.
    return (b"\xb9" + iterations.to_bytes(4, "little") + b"\x8b\x05\xfa\xff\xff\xff" +
            b"\xff\xc9\x75\xf6" + b"\x66\xba\xf4\x00\x31\xc0\xef\xf4")


def run_vmm(vmm, image, stats):
    t0 = time.monotonic_ns()
    p = subprocess.run([vmm, "-q", "--split-lock=emulate", "--split-lock-watch=all",
                        "--stats=" + stats, image],
                       capture_output=True, text=True)
    t1 = time.monotonic_ns()
    if p.returncode != 0:
        sys.exit(f"step.py: vmm exited {p.returncode}: {p.stderr.strip()}")
    with open(stats) as f:
        steps = json.load(f)["vcpus"][0]["single_steps"]
    return t1 - t0, steps


def raw(stepbench, steps, mode):
    p = subprocess.run([stepbench, str(steps), mode], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"step.py: stepbench failed: {p.stderr.strip()}")
    return float(p.stdout.split()[1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--steps", type=int, default=100000)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    vmm = os.path.join(a.build, "vmm")
    stepbench = os.path.join(a.build, "bench", "stepbench")

    per_step, per_step_load, raw_plain, raw_sync, raw_rearm, raw_setdebug = [], [], [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        small, big = os.path.join(tmp, "small.img"), os.path.join(tmp, "big.img")
        small_load, big_load = os.path.join(tmp, "small-load.img"), os.path.join(tmp, "big-load.img")
        with open(small, "wb") as f:
            f.write(loop_image(1))
        with open(big, "wb") as f:
            f.write(loop_image(a.steps // 2))
        with open(small_load, "wb") as f:
            f.write(load_loop_image(1))
        with open(big_load, "wb") as f:
            f.write(load_loop_image(a.steps // 3))
        stats = os.path.join(tmp, "stats.json")
        # Interleaved, so that a slow spell of the machine hits all of them.
        for _ in range(a.repeat):
            raw_plain.append(raw(stepbench, a.steps, "plain"))
            raw_sync.append(raw(stepbench, a.steps, "sync"))
            raw_rearm.append(raw(stepbench, a.steps, "rearm"))
            raw_setdebug.append(raw(stepbench, a.steps, "setdebug"))
            t_small, s_small = run_vmm(vmm, small, stats)
            t_big, s_big = run_vmm(vmm, big, stats)
            per_step.append((t_big - t_small) / (s_big - s_small))
            t_small, s_small = run_vmm(vmm, small_load, stats)
            t_big, s_big = run_vmm(vmm, big_load, stats)
            per_step_load.append((t_big - t_small) / (s_big - s_small))

    emu = statistics.median(per_step)
    emu_load = statistics.median(per_step_load)
    plain = statistics.median(raw_plain)
    sync = statistics.median(raw_sync)
    rearm = statistics.median(raw_rearm)
    setdebug = statistics.median(raw_setdebug)
    ratio = emu / plain
    print(f"# single-step cost, {a.repeat} runs of {a.steps} steps, medians ({time.strftime('%Y-%m-%d')})")
    print()
    print("| what | us per guest instruction | / raw |")
    print("|---|---:|---:|")
    print(f"| raw KVM single-step round trip (stepbench) | {plain / 1000:.2f} | 1.00 |")
    print(f"| raw, with registers and sregs synced to the run page | {sync / 1000:.2f} | {sync / plain:.2f} |")
    print(f"| raw, synced, TF written back through the run page every step (what emulate does) | {rearm / 1000:.2f} | {rearm / plain:.2f} |")
    print(f"| raw, KVM_SET_GUEST_DEBUG re-issued every step (the alternative) | {setdebug / 1000:.2f} | {setdebug / plain:.2f} |")
    print(f"| vmm --split-lock=emulate, per instruction | {emu / 1000:.2f} | {ratio:.2f} |")
    print(f"| the same, a third of the instructions loads (fault forecast) | {emu_load / 1000:.2f} | {emu_load / plain:.2f} |")
    print()
    print(f"emulate / raw = {ratio:.2f}: target (<= 1.2) {'met' if ratio <= 1.2 else 'missed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
