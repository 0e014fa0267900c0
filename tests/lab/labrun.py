#!/usr/bin/env python3
"""Runs one command on the lab's stock KVM, as if here: for ./run.sh on a
machine without /dev/kvm.

  labrun.py [--build DIR] PROGRAM [ARGS...]

Boots one lab (tests/lab/server.py), runs PROGRAM there through the agent
(the same paths: the host's / is shared), streams its stdout and stderr
here, stops the lab, and exits with PROGRAM's status; 125 if the lab could
not be had (the reason is printed), 77 if it cannot be had on this machine
at all (no QEMU, no kernel package).
"""
import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
import remote  # noqa: E402
import server  # noqa: E402
from vmmlib import lab_state  # noqa: E402


def relay(chunks, shown, f):
    """Writes the chunks past the first `shown` to f; returns how many are
    now shown. The agent's reader thread appends to chunks meanwhile: count
    what was written, not len(chunks), or a chunk appended in between is
    lost (a self-test line, once, in ./run.sh)."""
    new = chunks[shown:]
    for c in new:
        f.write(c)
    f.flush()
    return shown + len(new)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(server.lab.REPO, "build"))
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    if not a.cmd:
        ap.error("no program given")
    # A kill before the lab is up (a timeout, the user) still stops it: finally below.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    with tempfile.TemporaryDirectory(prefix="labrun-") as tmp:
        state = os.path.join(tmp, "state.json")
        log = open(os.path.join(tmp, "server.log"), "w+")
        t0 = time.monotonic()
        srv = subprocess.Popen([sys.executable, os.path.join(HERE, "server.py"), "start",
                                "--build", a.build, "--state", state, "--boots", "1",
                                "--timeout", "3600"], stdout=log, stderr=subprocess.STDOUT)
        try:
            rc = subprocess.run([sys.executable, os.path.join(HERE, "server.py"), "wait",
                                 "--state", state, "--timeout", "900"]).returncode
            if rc != 0:
                log.seek(0)
                sys.stderr.write(log.read())
                return server.lab.UNAVAILABLE if rc == server.lab.UNAVAILABLE else server.lab.LAB_ERROR
            st = lab_state(state)
            boot = next((b for b in (st or {}).get("boots", []) if b.get("state") == "ready"), None)
            if boot is None:
                print(f"lab: the server said ready but its state file has no ready boot: {st}",
                      file=sys.stderr)
                return server.lab.LAB_ERROR
            print(f"lab: stock KVM ({boot['probes']['kernel']}) ready after "
                  f"{time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)
            p = remote.RemoteProcess(tuple(boot["addr"]), a.cmd, root=boot["root"],
                                     cwd=os.getcwd())
            signal.signal(signal.SIGINT, lambda *_: p.send_signal(signal.SIGINT))
            signal.signal(signal.SIGTERM, lambda *_: p.send_signal(signal.SIGTERM))
            shown = {"out": 0, "err": 0}
            streams = {"out": sys.stdout.buffer, "err": sys.stderr.buffer}
            while True:
                done = p.wait(0.1) is not None
                for k, f in streams.items():
                    shown[k] = relay(p.chunks[k], shown[k], f)
                if done:
                    return p.returncode if p.returncode >= 0 else 128 - p.returncode
        except remote.AgentError as e:
            print(f"lab: {e}", file=sys.stderr)
            return server.lab.LAB_ERROR
        finally:
            srv.send_signal(signal.SIGTERM)
            try:
                srv.wait(90)
            except subprocess.TimeoutExpired:
                srv.kill()


if __name__ == "__main__":
    sys.exit(main())
