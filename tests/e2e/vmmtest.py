#!/usr/bin/env python3
"""Runs vmm once and checks what it did: exit status, stderr, the guest's TAP.

  vmmtest.py --vmm build/vmm [checks...] -- [vmm arguments...]

"@IMAGE@" in the vmm arguments stands for an image the harness makes in a
temporary directory (--image-hex, --image-kind), "@STATS@" for a path in
it that --stats-json then reads. With --unprivileged the
harness runs a copy of vmm as nobody, so that root's bypass of file
permissions does not hide the unreadable-image error; with --nofile N vmm
runs out of descriptors after N (a failure half-way through set-up).

Exits 0 when every check holds, 1 when one fails (saying which), and 77
(meson's skip) when a check needs /dev/kvm and this machine has none usable.
"""
import argparse
import json
import os
import re
import shutil
import signal
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmmlib import kvm_usable, report, run, scaled, scaled_str, skip, tap_failures  # noqa: E402


def make_image(tmp, a):
    path = os.path.join(tmp, "guest.img")
    if a.image_hex is not None:
        with open(path, "wb") as f:
            f.write(bytes.fromhex(a.image_hex))
    elif a.image_kind == "empty":
        open(path, "wb").close()
    elif a.image_kind == "dir":
        os.mkdir(path)
    elif a.image_kind == "unreadable":
        with open(path, "wb") as f:
            f.write(b"\xf4")
        os.chmod(path, 0)
    elif a.image_kind == "fifo":
        os.mkfifo(path)
    elif a.image_kind == "sparse-5M":
        with open(path, "wb") as f:
            f.truncate(5 << 20)
    return path


def check_stats(a, path):
    if a.no_stats_file:
        return ["the --stats file was created"] if os.path.exists(path) else []
    if not a.stats_json:
        return []
    try:
        with open(path) as f:
            st = json.load(f)
    except (OSError, ValueError) as e:
        return [f"--stats file: {e}"]
    print("--- stats ---\n" + json.dumps(st))
    # Killed by signal N (status -N, as Python gives it): --stats holds 128 + N.
    want = a.status if a.status >= 0 else 128 - a.status
    if st.get("status") != want:
        return [f"--stats says status {st.get('status')}, expected {want}"]
    fails = []
    for cond in a.stats_sum:
        key, op, n = re.fullmatch(r"(\w+)(=|<=|>=)(\d+)", cond).groups()
        got = sum(v.get(key, 0) for v in st.get("vcpus", []))
        if not {"=": got == int(n), "<=": got <= int(n), ">=": got >= int(n)}[op]:
            fails.append(f"--stats: {key} over the vCPUs is {got}, want {op} {n}")
    return fails


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vmm", required=True)
    ap.add_argument("--status", type=int, default=0,
                    help="expected exit status; -N: killed by signal N")
    ap.add_argument("--stderr", action="append", default=[],
                    help="regex that stderr must match (repeatable)")
    ap.add_argument("--stdout", action="append", default=[],
                    help="regex that stdout must match (repeatable)")
    ap.add_argument("--no-stdout", action="store_true",
                    help="the guest must not have printed anything")
    ap.add_argument("--tap", action="store_true",
                    help="stdout is the guest's TAP: a plan, every test ok")
    ap.add_argument("--diag", action="append", default=[],
                    help="regex a TAP diagnostic line must match (repeatable)")
    ap.add_argument("--kvm", action="store_true", help="needs /dev/kvm")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--image-hex", help="@IMAGE@ holds these bytes (machine code)")
    ap.add_argument("--image-kind", choices=["empty", "dir", "unreadable", "fifo", "sparse-5M"],
                    help="@IMAGE@ is a bad image of this kind")
    ap.add_argument("--unprivileged", action="store_true",
                    help="run a copy of vmm as nobody when root")
    ap.add_argument("--signal", help="send this signal (e.g. TERM) after --signal-after s")
    ap.add_argument("--signal-after", type=float, default=0.5)
    ap.add_argument("--nofile", type=int,
                    help="start vmm with at most this many descriptors (RLIMIT_NOFILE)")
    ap.add_argument("--close-fd", type=int, action="append", default=[],
                    help="start vmm with this descriptor (0-2) closed (repeatable)")
    ap.add_argument("--stats-json", action="store_true",
                    help="@STATS@ must hold --stats JSON whose status is --status")
    ap.add_argument("--stats-sum", action="append", default=[], metavar="KEY=N",
                    help="with --stats-json: KEY summed over the vCPUs is N "
                         "(or KEY<=N, KEY>=N; repeatable)")
    ap.add_argument("--no-stderr", action="append", default=[],
                    help="regex that stderr must not match (repeatable)")
    ap.add_argument("--no-stats-file", action="store_true",
                    help="@STATS@ must not have been created")
    ap.add_argument("--stats-fifo", action="store_true",
                    help="@STATS@ is a FIFO that nobody reads")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    args = a.args[1:] if a.args[:1] == ["--"] else a.args

    why = a.kvm and kvm_usable()
    if why:
        return skip(why)

    with tempfile.TemporaryDirectory(prefix="vmmtest-") as tmp:
        os.chmod(tmp, 0o755)
        image = make_image(tmp, a)
        stats = os.path.join(tmp, "stats.json")
        if a.stats_fifo:
            os.mkfifo(stats)
        args = [x.replace("@IMAGE@", image).replace("@STATS@", stats) for x in args]
        # vmm's own --timeout bounds the guest: stretched with the harness's on a slower target.
        args = [scaled_str(float(x)) if i and args[i - 1] in ("--timeout", "-t") else x
                for i, x in enumerate(args)]
        cmd = [a.vmm] + args
        if a.unprivileged and os.geteuid() == 0:
            setpriv = shutil.which("setpriv")
            if not setpriv:
                return skip("setpriv (util-linux) is missing, cannot drop root")
            copy = os.path.join(tmp, "vmm")
            shutil.copy(a.vmm, copy)
            os.chmod(copy, 0o755)
            cmd = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                   copy] + args
        p = run(cmd, timeout=scaled(a.timeout), close_fds=a.close_fd, signal_after=scaled(a.signal_after),
                sig=getattr(signal, "SIG" + a.signal) if a.signal else None,
                rlimits={"NOFILE": (a.nofile, a.nofile)} if a.nofile else None)
        failures = check_stats(a, stats) if not p.hung else []
    sys.stdout.write(p.out)
    sys.stdout.write("--- stderr ---\n" + p.err)
    if p.hung:
        return report([f"vmm did not finish within {scaled(a.timeout)} s"])

    if p.status != a.status:
        failures.append(f"exit status {p.status}, expected {a.status}")
    for rx in a.stderr:
        if not re.search(rx, p.err, re.M):
            failures.append(f"stderr does not match /{rx}/")
    for rx in a.no_stderr:
        if re.search(rx, p.err, re.M):
            failures.append(f"stderr matches /{rx}/")
    for rx in a.stdout:
        if not re.search(rx, p.out, re.M):
            failures.append(f"stdout does not match /{rx}/")
    if a.no_stdout and p.out:
        failures.append("the guest printed something, expected nothing")
    if a.tap:
        tap_fails, diags = tap_failures(p.out)
        failures += tap_fails
        for rx in a.diag:
            if not any(re.search(rx, d) for d in diags):
                failures.append(f"no TAP diagnostic matches /{rx}/")
    return report(failures)


if __name__ == "__main__":
    sys.exit(main())
