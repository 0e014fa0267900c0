#!/usr/bin/env python3
"""Linux's boot time under each split-lock policy against inherit, in one run.

  bench/linux.py [--build DIR] [--repeat R] [--cpus N] [--watch-all]

Boots Debian's kernel (tests/linux/linuxguest.py: cached kernel, fresh
initramfs) with `vmm -c N -m 256M --split-lock=P --initrd I --append
'console=ttyS0 quiet panic=-1 vmm.test' VMLINUZ` under inherit, off, emulate,
on where this host can deliver #AC (`vmm --host-info --json`), and with --watch-all
emulate with --split-lock-watch=all too. The policies take turns, R rounds,
so that a slow spell of the machine hits all of them. Measured from the
launch of vmm to the guest's "VMMTEST INIT" line on its console (/init
started: the kernel's boot), and to vmm's exit after the guest powers off.
Prints a Markdown table: medians, min, and each policy's median over
inherit's. Target (issue 49): emulate <= 1.2x inherit.

A report: exits 0 whether or not the target is met, 1 when a boot failed
(its output is shown), 77 when the kernel, busybox or a KVM cannot be had.
"""
import argparse
import json
import os
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "linux"))
import linuxguest  # noqa: E402

BOOT_TIMEOUT = 600
APPEND = "console=ttyS0 quiet panic=-1 vmm.test"     # as tests/linux/linux_test.py


def boot(vmm, args, kernel, initrd):
    """One boot: (seconds to /init, seconds to exit), or exits 1 with its output."""
    cmd = [vmm, "-q"] + args + ["--initrd", initrd, "--append", APPEND, kernel]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, start_new_session=True)
    out, t_init, buf = b"", None, b""
    try:
        while True:
            left = t0 + BOOT_TIMEOUT - time.monotonic()
            if left <= 0:
                raise TimeoutError
            r, _, _ = select.select([p.stdout], [], [], min(left, 1.0))
            if not r:
                continue
            d = os.read(p.stdout.fileno(), 65536)
            if not d:
                break
            out += d
            buf += d
            if t_init is None and b"VMMTEST INIT" in buf:
                t_init = time.monotonic() - t0
            if b"VMMTEST READY" in buf:
                p.stdin.write(b"bench\n")
                p.stdin.flush()
                buf = b""
            buf = buf[-64:]
        status = p.wait(timeout=max(1, t0 + BOOT_TIMEOUT - time.monotonic()))
    except (TimeoutError, subprocess.TimeoutExpired):
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        sys.exit(f"linux.py: {' '.join(cmd)}: no exit within {BOOT_TIMEOUT} s; killed\n"
                 + out.decode(errors="replace")[-3000:])
    t_exit = time.monotonic() - t0
    if t_init is None:
        sys.exit(f"linux.py: {' '.join(cmd)}: exit {status} without reaching /init\n"
                 + out.decode(errors="replace")[-3000:])
    return t_init, t_exit


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cpus", type=int,
                    help="vCPUs (default 2; 1 where this KVM cannot run Linux's start of "
                         "its other CPUs: --host-info's enter_long_mode false)")
    ap.add_argument("--watch-all", action="store_true",
                    help="also emulate with --split-lock-watch=all (every instruction "
                         "stepped: slow)")
    a = ap.parse_args()
    vmm = os.path.join(a.build, "vmm")
    try:
        hi = json.loads(subprocess.run([vmm, "--host-info", "--json"], capture_output=True,
                                       text=True, check=True).stdout)
    except (OSError, ValueError, subprocess.CalledProcessError) as e:
        print(f"linux.py: vmm --host-info --json: {e}", file=sys.stderr)
        return 1
    if not hi["kvm"]["available"]:
        print(f"linux.py: no usable KVM here: {hi['kvm']['error']}", file=sys.stderr)
        return 77
    if a.cpus is None:
        a.cpus = 1 if hi["kvm"]["probe"].get("enter_long_mode") is False else 2
    runs = {"inherit": ["--split-lock=inherit"], "off": ["--split-lock=off"],
            "emulate": ["--split-lock=emulate"]}
    if hi["can_deliver_ac"]:
        runs["on"] = ["--split-lock=on"]
    if a.watch_all:
        runs["emulate, watch all"] = ["--split-lock=emulate", "--split-lock-watch=all"]
    times = {k: [] for k in runs}
    with tempfile.TemporaryDirectory(prefix="bench-linux-") as tmp:
        try:
            kernel = linuxguest.vmlinuz()
            initrd = linuxguest.initramfs(a.build, os.path.join(tmp, "initrd.cpio.gz"))
        except linuxguest.Unavailable as e:
            print(f"linux.py: cannot be had here: {e}", file=sys.stderr)
            return 77
        except (OSError, ValueError) as e:
            print(f"linux.py: {e}", file=sys.stderr)
            return 1
        for _ in range(a.repeat):
            for name, args in runs.items():
                times[name].append(boot(vmm, ["-c", str(a.cpus), "-m", "256M"] + args, kernel,
                                        initrd))
    base_init = statistics.median(t for t, _ in times["inherit"])
    base_exit = statistics.median(e for _, e in times["inherit"])
    print(f"# Linux boot under each policy, {a.repeat} rounds, -c {a.cpus}, "
          f"{os.path.basename(kernel)} ({time.strftime('%Y-%m-%d')})")
    print()
    print("| policy | to /init, s (median) | min | / inherit | to exit, s (median) | / inherit |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, ts in times.items():
        mi = statistics.median(t for t, _ in ts)
        me = statistics.median(e for _, e in ts)
        print(f"| {name} | {mi:.2f} | {min(t for t, _ in ts):.2f} | {mi / base_init:.2f} | "
              f"{me:.2f} | {me / base_exit:.2f} |")
    ratio = statistics.median(t for t, _ in times["emulate"]) / base_init
    print()
    print(f"emulate / inherit = {ratio:.2f} to /init: target (<= 1.2) "
          f"{'met' if ratio <= 1.2 else 'missed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
