#!/usr/bin/env python3
"""bench/step.py's measurement, run on stock KVM inside the lab
(tests/lab/README.md): the raw KVM single-step round trip (stepbench) and
vmm --split-lock=emulate's cost per guest instruction, in one boot.

  bench/lab_step.py [--build DIR] [--steps N] [--repeat R] [--host]

--host also runs bench/step.py on this machine first, for the figures side
by side. Inside the lab time comes from /proc/uptime (busybox has no finer
clock), so the emulate runs are sized to take seconds. A report: exits 0
whether or not the target is met, 1 if something failed to run, 77 if the
lab cannot be had.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "lab"))
import lab  # noqa: E402
from step import loop_image  # noqa: E402

INSIDE = r"""
up() { cut -d' ' -f1 /proc/uptime; }
steps=$(cat /extra/steps)
r=0
while [ $r -lt $(cat /extra/repeat) ]; do
	r=$((r + 1))
	lab-step "round $r"
	echo "raw $(stepbench $steps)"
	echo "sync $(stepbench $steps sync)"
	for img in small big; do
		t0=$(up)
		vmm -q --split-lock=emulate --split-lock-watch=all --stats=/tmp/s.json /extra/$img.img || echo "vmm $img failed: $?"
		t1=$(up)
		echo "emulate $img $t0 $t1 $(grep -o '"single_steps":[0-9]*' /tmp/s.json)"
	done
done
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(os.path.dirname(HERE), "build"))
    ap.add_argument("--steps", type=int, default=100000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--host", action="store_true", help="also run bench/step.py here first")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    if not os.path.exists(os.path.join(build, "bench", "stepbench")):
        sys.exit(f"lab_step.py: {build}/bench/stepbench is missing: meson compile -C {a.build}")
    if a.host:
        r = subprocess.run([sys.executable, os.path.join(HERE, "step.py"), "--build", build,
                            "--steps", str(a.steps), "--repeat", str(a.repeat)])
        if r.returncode != 0:
            return 1
        print()
    with tempfile.TemporaryDirectory() as extra:
        for name, iters in (("small", 1), ("big", a.steps // 2)):
            with open(os.path.join(extra, name + ".img"), "wb") as f:
                f.write(loop_image(iters))
        for name, val in (("steps", a.steps), ("repeat", a.repeat)):
            with open(os.path.join(extra, name), "w") as f:
                f.write(f"{val}\n")
        script = os.path.join(extra, "bench.sh")
        with open(script, "w") as f:
            f.write(INSIDE)
        try:
            lab.ensure_packages()
            res = lab.boot(build, extra, script, timeout=600)
        except lab.Unavailable as e:
            print(f"SKIP: {e}", file=sys.stderr)
            return 77
    if res.hang or res.error or res.status != 0:
        print(lab.describe_hang(res) if res.hang else f"lab failed: {res.error or res.status}",
              file=sys.stderr)
        return 1
    text = res.output.decode(errors="replace")
    raw = [float(x) for x in re.findall(r"^raw raw_step_ns ([\d.]+)", text, re.M)]
    sync = [float(x) for x in re.findall(r"^sync raw_step_ns ([\d.]+)", text, re.M)]
    runs = re.findall(r"^emulate (small|big) ([\d.]+) ([\d.]+) \"single_steps\":(\d+)", text, re.M)
    per_step = []
    for (_, s0, s1, ss), (_, b0, b1, bs) in zip(runs[0::2], runs[1::2]):
        per_step.append((float(b1) - float(b0) - (float(s1) - float(s0))) * 1e9 / (int(bs) - int(ss)))
    if not raw or not per_step or "failed" in text:
        print(text, file=sys.stderr)
        print("lab_step.py: the lab's output lacks the measurements", file=sys.stderr)
        return 1
    plain, syncd, emu = statistics.median(raw), statistics.median(sync), statistics.median(per_step)
    cfg = lab.qemu_config()
    print(f"# single-step cost on stock KVM in the lab (-cpu {cfg['cpu']} -smp {cfg['smp']}, "
          f"kernel {res.kernel or '?'}), {a.repeat} runs of {a.steps} "
          f"steps, medians ({time.strftime('%Y-%m-%d')})")
    print()
    print("| what | us per guest instruction | / raw |")
    print("|---|---:|---:|")
    print(f"| raw KVM single-step round trip (stepbench) | {plain / 1000:.2f} | 1.00 |")
    print(f"| raw, with registers and sregs synced to the run page | {syncd / 1000:.2f} | {syncd / plain:.2f} |")
    print(f"| vmm --split-lock=emulate, per instruction | {emu / 1000:.2f} | {emu / plain:.2f} |")
    print()
    print(f"emulate / raw = {emu / plain:.2f}: target (<= 1.2) {'met' if emu / plain <= 1.2 else 'missed'}")
    print(f"(each figure: median of {len(per_step)}; emulate from /proc/uptime, 10 ms resolution, "
          f"over runs of {min(float(b1) - float(b0) for _, b0, b1, _ in runs[1::2]):.2f} s or more)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
