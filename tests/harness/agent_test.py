#!/usr/bin/env python3
"""The lab agent (tests/lab/labagent.c) and its host half (tests/e2e/
remote.py), run here on loopback: what vmmlib's launcher relies on in the
lab (output, status, signals, rlimits, stalled and closed readers, closed
descriptors, /proc reads, a program that cannot start, no orphans).

  agent_test.py AGENT
"""
import os
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import remote  # noqa: E402


def out(p):
    return b"".join(p.chunks["out"])


def main():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    agent = subprocess.Popen([sys.argv[1], str(port)], stdout=subprocess.PIPE)
    agent.stdout.readline()  # "listening"
    a = ("127.0.0.1", port)
    fails = []

    def check(what, ok):
        print(("ok: " if ok else "FAIL: ") + what)
        if not ok:
            fails.append(what)
    try:
        check("ping", remote.ping(a))
        p = remote.RemoteProcess(a, ["sh", "-c", "echo hi; echo err >&2; echo $FOO; exit 3"],
                                 env={"FOO": "bar"})
        check("status, stdout, stderr, env", p.wait(10) == 3 and out(p) == b"hi\nbar\n"
              and b"".join(p.chunks["err"]) == b"err\n")
        p = remote.RemoteProcess(a, ["sleep", "30"])
        time.sleep(0.3)
        p.send_signal(signal.SIGTERM)
        check("a signal ends it", p.wait(10) == -signal.SIGTERM)
        p = remote.RemoteProcess(a, ["sh", "-c", "ulimit -n"], rlimits={"NOFILE": (17, 17)})
        check("rlimit", p.wait(10) == 0 and out(p) == b"17\n")
        p = remote.RemoteProcess(a, ["sh", "-c", "head -c 200000 /dev/zero; echo done >&2"],
                                 stdout_bytes=0)
        time.sleep(1)
        check("a stalled reader blocks the writer", p.poll() is None)
        p.kill()
        p.wait(10)
        p = remote.RemoteProcess(a, ["sh", "-c", "head -c 5000 /dev/zero; echo done >&2"],
                                 stdout_bytes=0, pipe_size=4096)
        time.sleep(1)
        check("a pipe of one page stalls a writer of 5000 bytes", p.poll() is None
              and not p.chunks["err"])
        p.kill()
        p.wait(10)
        p = remote.RemoteProcess(a, ["sh", "-c", "head -c 200000 /dev/zero 2>/dev/null; echo $? >&2"],
                                 stdout_bytes=100)
        check("a reader that goes after 100 bytes: EPIPE for the writer",
              p.wait(10) == 0 and len(out(p)) == 100 and b"".join(p.chunks["err"]).strip() != b"0")
        p = remote.RemoteProcess(a, ["sh", "-c", "for f in 0 1 2 3 4 5 6 7 8 9; do "
                                     "[ -e /proc/$$/fd/$f ] && echo $f; done; true"], close_fds=(2,))
        fds = out(p) if p.wait(10) == 0 else b""
        check(f"only 0 and 1 open, 2 closed as asked: {fds!r}", fds.split() == [b"0", b"1"])
        try:
            remote.RemoteProcess(a, ["/nonexistent/program"])
            check("a program that cannot start raises", False)
        except OSError as e:
            check("a program that cannot start raises ENOENT", e.errno == 2)
        p = remote.RemoteProcess(a, ["sleep", "30"])
        st = remote.read_file(a, f"/proc/{p.pid}/status") or b""
        tasks = remote.list_dir(a, f"/proc/{p.pid}/task") or []
        check("read_file and list_dir of /proc", b"State:" in st and str(p.pid) in tasks)
        pid = p.pid
        p.sock.shutdown(socket.SHUT_RDWR)  # the host goes away: the program must not outlive it
        time.sleep(0.5)
        check("the program dies with its connection", not os.path.exists(f"/proc/{pid}/cmdline")
              or b"sleep" not in open(f"/proc/{pid}/cmdline", "rb").read())
    finally:
        agent.kill()
        agent.wait()
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
