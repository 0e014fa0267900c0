#!/usr/bin/env python3
"""Runs vmm once and checks what it did: exit status, stderr, the guest's TAP.

  vmmtest.py --vmm build/vmm [checks...] -- [vmm arguments...]

"@IMAGE@" in the vmm arguments stands for an image the harness makes in a
temporary directory (--image-hex, --image-kind), "@STATS@" for a path in
it that --stats-json then reads. With --unprivileged the
harness runs a copy of vmm as nobody, so that root's bypass of file
permissions does not hide the unreadable-image error.

Exits 0 when every check holds, 1 when one fails (saying which), and 77
(meson's skip) when a check needs /dev/kvm and this machine has none usable.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77


def kvm_usable():
    try:
        fd = os.open("/dev/kvm", os.O_RDWR)
    except OSError as e:
        return f"/dev/kvm is not usable here ({e.strerror})"
    os.close(fd)
    return None


def parse_tap(text):
    """Returns (plan, results, diags); results are (ok, number, desc, directive)."""
    plan, results, diags = None, [], []
    for line in text.splitlines():
        m = re.match(r"^1\.\.(\d+)", line)
        if m:
            plan = int(m.group(1))
            continue
        m = re.match(r"^(not ok|ok)\s+(\d+)\s*(?:-\s*)?([^#]*)(?:#\s*(.*))?$", line)
        if m:
            results.append((m.group(1) == "ok", int(m.group(2)),
                            m.group(3).strip(), (m.group(4) or "").strip()))
            continue
        if line.startswith("#"):
            diags.append(line[1:].strip())
        if line.startswith("Bail out!"):
            results.append((False, 0, line, ""))
    return plan, results, diags


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
    elif a.image_kind == "sparse-5M":
        with open(path, "wb") as f:
            f.truncate(5 << 20)
    return path


def run(cmd, a):
    print("$ " + " ".join(cmd) + "".join(f" {fd}>&-" for fd in a.close_fd))

    def close_fds():
        # After Popen's dup2s: the child starts with these descriptors closed.
        for fd in a.close_fd:
            os.close(fd)

    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, errors="replace",
                            preexec_fn=close_fds if a.close_fd else None)
    try:
        if a.signal:
            time.sleep(a.signal_after)
            proc.send_signal(getattr(signal, "SIG" + a.signal))
        out, err = proc.communicate(timeout=a.timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        print(f"FAIL: vmm did not finish within {a.timeout} s")
        return None
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


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
    if st.get("status") != a.status:
        return [f"--stats says status {st.get('status')}, expected {a.status}"]
    return []


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vmm", required=True)
    ap.add_argument("--status", type=int, default=0, help="expected exit status")
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
    ap.add_argument("--image-kind", choices=["empty", "dir", "unreadable", "sparse-5M"],
                    help="@IMAGE@ is a bad image of this kind")
    ap.add_argument("--unprivileged", action="store_true",
                    help="run a copy of vmm as nobody when root")
    ap.add_argument("--signal", help="send this signal (e.g. TERM) after --signal-after s")
    ap.add_argument("--signal-after", type=float, default=0.5)
    ap.add_argument("--close-fd", type=int, action="append", default=[],
                    help="start vmm with this descriptor (0-2) closed (repeatable)")
    ap.add_argument("--stats-json", action="store_true",
                    help="@STATS@ must hold --stats JSON whose status is --status")
    ap.add_argument("--no-stats-file", action="store_true",
                    help="@STATS@ must not have been created")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    args = a.args[1:] if a.args[:1] == ["--"] else a.args

    if a.kvm:
        why = kvm_usable()
        if why:
            print(f"SKIP: {why}")
            return SKIP

    with tempfile.TemporaryDirectory(prefix="vmmtest-") as tmp:
        os.chmod(tmp, 0o755)
        image = make_image(tmp, a)
        stats = os.path.join(tmp, "stats.json")
        args = [x.replace("@IMAGE@", image).replace("@STATS@", stats) for x in args]
        cmd = [a.vmm] + args
        if a.unprivileged and os.geteuid() == 0:
            setpriv = shutil.which("setpriv")
            if not setpriv:
                print("SKIP: setpriv (util-linux) is missing, cannot drop root")
                return SKIP
            copy = os.path.join(tmp, "vmm")
            shutil.copy(a.vmm, copy)
            os.chmod(copy, 0o755)
            cmd = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                   copy] + args
        p = run(cmd, a)
        failures = check_stats(a, stats) if p else []
    if p is None:
        return 1
    sys.stdout.write(p.stdout)
    sys.stdout.write("--- stderr ---\n" + p.stderr)

    if p.returncode != a.status:
        failures.append(f"exit status {p.returncode}, expected {a.status}")
    for rx in a.stderr:
        if not re.search(rx, p.stderr, re.M):
            failures.append(f"stderr does not match /{rx}/")
    for rx in a.stdout:
        if not re.search(rx, p.stdout, re.M):
            failures.append(f"stdout does not match /{rx}/")
    if a.no_stdout and p.stdout:
        failures.append("the guest printed something, expected nothing")
    if a.tap:
        plan, results, diags = parse_tap(p.stdout)
        if plan is None:
            failures.append("no TAP plan line")
        elif plan != len(results) or plan == 0:
            failures.append(f"TAP plan says {plan} tests, {len(results)} reported")
        for ok, num, desc, directive in results:
            if not ok:
                failures.append(f"TAP test {num} failed: {desc}")
        for rx in a.diag:
            if not any(re.search(rx, d) for d in diags):
                failures.append(f"no TAP diagnostic matches /{rx}/")
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
