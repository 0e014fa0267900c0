#!/usr/bin/env python3
"""Types a line into a program's stdin once its stdout shows a marker.

  feed.py --after MARK --line TEXT -- PROGRAM [ARGS...]

PROGRAM's stdin is a pipe; its stdout and stderr pass through unchanged.
When a line of its stdout contains MARK, TEXT and a newline are written to
the pipe, once; the pipe stays open until PROGRAM exits (an EOF is not what
a typist sends). Exits with PROGRAM's status (128 + N when a signal N ended
it). PROGRAM dies with feed.py (PR_SET_PDEATHSIG), so a harness that kills
feed.py at its timeout kills PROGRAM too, here or in a lab boot, where
tests/e2e/vmmlib.py starts programs without a stdin of their own.
"""
import argparse
import ctypes
import os
import signal
import subprocess
import sys

PR_SET_PDEATHSIG = 1


def die_with_parent():
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--after", required=True)
    ap.add_argument("--line", required=True)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if not cmd:
        ap.error("no PROGRAM")
    mark = a.after.encode()
    # What a harness sends feed.py reaches PROGRAM as well.
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         preexec_fn=die_with_parent)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda n, _f: p.send_signal(n))
    sent = False
    out = sys.stdout.buffer
    for line in iter(p.stdout.readline, b""):
        out.write(line)
        out.flush()
        if not sent and mark in line:
            try:
                p.stdin.write(a.line.encode() + b"\n")
                p.stdin.flush()
            except BrokenPipeError:
                pass
            sent = True
    status = p.wait()
    return 128 - status if status < 0 else status


if __name__ == "__main__":
    sys.exit(main())
