#!/usr/bin/env python3
"""Runs the benchmarks and prints the report; bench/run.sh builds first and
calls this. bench/README.md says what the numbers mean.

Exit status: 0 when everything ran (whether or not the target was met),
1 when something did not (vmm failed, output unparsable).
"""

import argparse
import datetime
import os
import re
import statistics
import subprocess
import sys
import time

TARGET = 1.10  # emulated MSR round trip / OUT round trip, from the issue

# Guest op names (src/guest/bench.c) and how the table shows them.
ROWS = [
    ("baseline_loop", "baseline loop (NOP in the op's slot)"),
    ("out_unused_port", "OUT to unused port"),
    ("rdmsr_emulated", "RDMSR emulated in the VMM"),
    ("rdmsr_test_ctrl", "RDMSR TEST_CTRL"),
    ("rdmsr_kernel", "RDMSR handled in KVM"),
    ("rdmsr_kernel_gp", "RDMSR #GP raised in KVM"),
]

LINE = re.compile(r"^# bench (\S+) (.*)$")
FIELD = re.compile(r"(\w+)=(\S+)")


class BenchError(Exception):
    pass


def fail(msg):
    raise BenchError(msg)


def tsc_mhz_from_kernel():
    """The host kernel's TSC frequency and where it came from, or (None, why)."""
    # Not upstream, but some kernels have it, and it is exact when present.
    try:
        with open("/sys/devices/system/cpu/cpu0/tsc_freq_khz") as f:
            return int(f.read()) / 1000.0, "/sys/devices/system/cpu/cpu0/tsc_freq_khz"
    except (OSError, ValueError):
        pass
    try:
        out = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    # The refined value, when the kernel calibrated one, beats the first guess.
    for pattern, what in ((r"tsc: Refined TSC clocksource calibration: ([\d.]+) MHz", "refined"),
                          (r"tsc: Detected ([\d.]+) MHz processor", "detected")):
        found = re.findall(pattern, out)
        if found:
            return float(found[-1]), f'kernel log, "tsc: {what}"'
    try:
        with open("/proc/cpuinfo") as f:
            cpuinfo = f.read()
    except OSError:
        return None, "no dmesg, no /proc/cpuinfo"
    mhz = re.search(r"^cpu MHz\s*:\s*([\d.]+)", cpuinfo, re.M)
    if mhz and re.search(r"^flags\s*:.*\bconstant_tsc\b", cpuinfo, re.M):
        # With constant_tsc the TSC ticks at the nominal rate, which is what
        # "cpu MHz" shows on a guest without frequency scaling.
        return float(mhz.group(1)), '/proc/cpuinfo "cpu MHz" (constant_tsc)'
    return None, "no kernel TSC frequency and no constant_tsc"


def time_selftest(vmm, guest, runs):
    """Wall time of `vmm guest.bin`, exec to exit, in ms per run."""
    times = []
    for i in range(runs):
        t0 = time.monotonic_ns()
        p = subprocess.run([vmm, "-q", "-t", "60", guest], stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        t1 = time.monotonic_ns()
        if p.returncode != 0:
            fail(f"self-test run {i + 1} exited {p.returncode}:\n{p.stderr}")
        times.append((t1 - t0) / 1e6)
    return times


def run_bench(vmm, guest, append):
    """One bench run; returns (lines, {tsc mark: host monotonic ns when its line arrived})."""
    cmd = [vmm, "-q", "-t", "600", "-a", append, guest]
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, bufsize=1)
    lines, arrivals = [], {}
    for line in p.stdout:
        now = time.monotonic_ns()
        line = line.rstrip("\n")
        lines.append(line)
        m = re.match(r"# bench tsc mark=(\w+) tsc=(\d+)", line)
        if m:
            arrivals[m.group(1)] = (now, int(m.group(2)))
    stderr = p.stderr.read()
    status = p.wait()
    if status != 0:
        fail(f"{' '.join(cmd)} exited {status}\n" + "\n".join(lines) + "\n" + stderr)
    bad = [l for l in lines if l.startswith("not ok")]
    if bad:
        fail("guest sanity checks failed:\n" + "\n".join(bad))
    return lines, arrivals


def parse(lines):
    """{op: {round: fields}} with round an int, or "all"."""
    ops = {}
    for line in lines:
        m = LINE.match(line)
        if not m or m.group(1) in ("config", "probe", "tsc"):
            continue
        fields = dict(FIELD.findall(m.group(2)))
        if "round" not in fields:
            continue
        try:
            fields["cycles"] = int(fields["cycles"])
            fields["iterations"] = int(fields["iterations"])
        except (KeyError, ValueError):
            fail(f"unparsable bench line: {line}")
        rnd = fields["round"]
        ops.setdefault(m.group(1), {})["all" if rnd == "all" else int(rnd)] = fields
    for needed in ("baseline_loop", "out_unused_port", "rdmsr_emulated", "rdmsr_kernel"):
        if needed not in ops:
            fail(f"the guest reported no {needed} measurement")
    return ops


def per_iter(fields):
    return fields["cycles"] / fields["iterations"]


def net_by_round(ops, name):
    """{round: cycles per iteration minus that round's baseline}."""
    base = ops["baseline_loop"]
    return {r: per_iter(f) - per_iter(base[r])
            for r, f in ops[name].items() if r != "all"}


def ratio_stats(ops, num, den):
    """Per-round ratios num/den (both baseline-subtracted): (median, p25, p75)."""
    a, b = net_by_round(ops, num), net_by_round(ops, den)
    ratios = [a[r] / b[r] for r in a if r in b and b[r] > 0]
    if not ratios:
        return None
    if len(ratios) < 2:
        return ratios[0], ratios[0], ratios[0]
    q1, _, q3 = statistics.quantiles(ratios, n=4, method="inclusive")
    return statistics.median(ratios), q1, q3


def fmt_ratio(stats):
    if stats is None:
        return "-", "-"
    med, lo, hi = stats
    return f"{med:.3f}", f"{lo:.3f} - {hi:.3f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--vmm", required=True)
    ap.add_argument("--guest", required=True)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--iters", type=int)
    ap.add_argument("--gp-iters", type=int)
    ap.add_argument("--rounds", type=int)
    args = ap.parse_args()
    for name in ("runs", "iters", "gp_iters", "rounds"):
        v = getattr(args, name)
        if v is not None and v < 1:
            fail(f"--{name.replace('_', '-')} must be at least 1")

    append = "bench"
    if args.iters:
        append += f" bench.iters={args.iters}"
    if args.gp_iters:
        append += f" bench.gp_iters={args.gp_iters}"
    if args.rounds:
        append += f" bench.rounds={args.rounds}"

    selftest = time_selftest(args.vmm, args.guest, args.runs)
    lines, arrivals = run_bench(args.vmm, args.guest, append)
    ops = parse(lines)
    config = next((dict(FIELD.findall(l)) for l in lines if l.startswith("# bench config")), {})

    mhz, source = tsc_mhz_from_kernel()
    # The guest's TSC against the host's clock over the timed part of the run:
    # it catches a guest TSC that KVM scales away from the host's.
    measured = None
    if "start" in arrivals and "end" in arrivals:
        (h0, g0), (h1, g1) = arrivals["start"], arrivals["end"]
        if h1 - h0 > 200_000_000:  # shorter, and pipe latency matters
            measured = (g1 - g0) / ((h1 - h0) / 1e3)
    if measured and (mhz is None or abs(measured - mhz) / mhz > 0.05):
        note = f"kernel value unusable ({source})" if mhz is None else \
            f"kernel says {mhz:.1f} MHz ({source}), more than 5% off"
        mhz, source = measured, f"measured in this run; {note}"
    check = f", in-run check {measured:.1f} MHz" if measured else ""

    out = ops["out_unused_port"]
    print(f"## vmm bench, {datetime.date.today().isoformat()}, {os.uname().nodename}")
    print()
    print(f"- self-test start-to-exit (`vmm -q {args.guest}`, {args.runs} runs): "
          f"min {min(selftest):.1f} ms, median {statistics.median(selftest):.1f} ms, "
          f"max {max(selftest):.1f} ms")
    print(f"- exit round trips, one run of `vmm -a \"{append}\"`: "
          f"{config.get('rounds', '?')} rounds x {config.get('iterations', '?')} iterations "
          f"({config.get('gp_iterations', '?')} for the #GP loops), vCPU 0, RDTSC")
    if mhz:
        print(f"- TSC {mhz:.1f} MHz, from {source}{check}")
    else:
        print(f"- TSC frequency unknown ({source}): no microseconds")
    print("- cycles: median over rounds; net = minus the same round's baseline loop;"
          " ratios: median (and 25th - 75th percentile) of per-round net / net OUT")
    print()
    print("| op | MSR / port | path | cycles/iter | net cycles | net us | / OUT | p25 - p75 |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for name, label in ROWS:
        if name not in ops:
            continue
        rounds = {r: f for r, f in ops[name].items() if r != "all"}
        raw = statistics.median(per_iter(f) for f in rounds.values())
        net = statistics.median(net_by_round(ops, name).values())
        first = next(iter(rounds.values()))
        where = first.get("msr") or first.get("port") or "-"
        path = first.get("path", "-").replace("_gp", " + #GP")
        us = f"{net / mhz:.2f}" if mhz else "-"
        med, rng = ("-", "-") if name == "baseline_loop" else \
            fmt_ratio(ratio_stats(ops, name, "out_unused_port"))
        print(f"| {label} | {where} | {path} | {raw:.0f} | {net:.0f} | {us} | {med} | {rng} |")
    print()

    emu = ratio_stats(ops, "rdmsr_emulated", "out_unused_port")
    kern = ratio_stats(ops, "rdmsr_kernel", "out_unused_port")
    gp = ratio_stats(ops, "rdmsr_test_ctrl", "out_unused_port") if "rdmsr_test_ctrl" in ops else None
    if emu is None:
        fail(f"net OUT cost was not positive in any round ({out}); nothing to compare with")
    verdict = "target met" if emu[0] <= TARGET else "target missed"
    print(f"emulated MSR / OUT = {emu[0]:.3f} (target <= {TARGET:.2f}): {verdict}")
    if kern:
        print(f"in-kernel MSR / OUT = {kern[0]:.3f}")
    if gp:
        path = "#GP path" if ops["rdmsr_test_ctrl"][1].get("path") == "userspace_gp" else "reads"
        print(f"TEST_CTRL ({path}) / OUT = {gp[0]:.3f}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as e:
        print(f"bench: error: {e}", file=sys.stderr)
        sys.exit(1)
