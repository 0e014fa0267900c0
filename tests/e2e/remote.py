"""The host half of the lab agent's protocol (tests/lab/labagent.c,
docs/lab.md): start a program in a lab boot and see it as a local one.

  p = RemoteProcess(("127.0.0.1", port), ["vmm", ...], root="/host")
  p.pid, p.poll(), p.send_signal(sig), p.returncode; p.chunks["out"/"err"]
  read_file(addr, "/proc/PID/status")
"""
import os
import socket
import struct
import threading


class AgentError(OSError):
    """The agent could not be reached or broke off: the lab is gone."""


def _send(sock, kind, payload=b""):
    sock.sendall(kind + struct.pack("<I", len(payload)) + payload)


def _recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        d = sock.recv(n - len(buf))
        if not d:
            raise AgentError("the lab agent closed the connection")
        buf += d
    return buf


def _recv(sock):
    hdr = _recv_exact(sock, 5)
    n = struct.unpack("<I", hdr[1:])[0]
    return hdr[:1], _recv_exact(sock, n) if n else b""


def _connect(addr, timeout=30):
    try:
        return socket.create_connection(addr, timeout=timeout)
    except OSError as e:
        raise AgentError(f"cannot reach the lab agent at {addr[0]}:{addr[1]}: {e.strerror or e}")


def read_file(addr, path):
    """The contents of a file in the lab (e.g. /proc/PID/status), or None."""
    with _connect(addr) as s:
        _send(s, b"R", path.encode())
        kind, data = _recv(s)
    return data if kind == b"D" else None


def list_dir(addr, path):
    """The names in a directory in the lab, or None."""
    with _connect(addr) as s:
        _send(s, b"R", path.encode())
        kind, data = _recv(s)
    return [n.decode() for n in data.split(b"\0") if n] if kind == b"L" else None


def quit_agent(addr):
    with _connect(addr) as s:
        _send(s, b"Q")


def ping(addr, timeout=5):
    """True if the agent answers (it refuses an unknown request at once)."""
    try:
        with socket.create_connection(addr, timeout=timeout) as s:
            s.settimeout(timeout)
            _send(s, b"?")
            return _recv(s)[0] == b"F"
    except OSError:
        return False


RLIMITS = ("NOFILE", "AS", "NPROC", "CORE", "MEMLOCK", "STACK")


class RemoteProcess:
    """A program the agent started; its output lands in chunks as it comes.

    stdout_bytes as in vmmlib.Process: None all, 0 none until the exit (a
    stalled reader), N then close. env: variables to set over the lab's."""

    def __init__(self, addr, cmd, env=None, close_fds=(), stdout_bytes=None, root=None,
                 cwd=None, rlimits=None, pipe_size=None):
        items = [b"arg=" + os.fsencode(a) for a in cmd]
        items += [b"env=" + os.fsencode(f"{k}={v}") for k, v in (env or {}).items()]
        items += [b"close=%d" % fd for fd in close_fds]
        for name, (soft, hard) in (rlimits or {}).items():
            assert name in RLIMITS, name
            items.append(f"rlimit={name}:{soft}:{hard}".encode())
        if pipe_size:
            items.append(b"pipe=%d" % pipe_size)
        if root:
            items.append(b"root=" + os.fsencode(root))
        if cwd:
            items.append(b"cwd=" + os.fsencode(cwd))
        items.append(b"stdout=" + (b"all" if stdout_bytes is None else
                                   b"none" if stdout_bytes == 0 else b"%d" % stdout_bytes))
        self.sock = _connect(addr)
        self.sock.settimeout(None)
        self.chunks = {"out": [], "err": []}
        self.returncode = None
        self.wstatus = None
        self.error = None
        self.lock = threading.Lock()
        _send(self.sock, b"X", b"\0".join(items) + b"\0")
        kind, data = _recv(self.sock)
        if kind == b"F":
            self.sock.close()
            err = int(data) if data.isdigit() else 0
            raise OSError(err, f"in the lab: {os.strerror(err) if err else data.decode()}: {cmd[0]}")
        if kind != b"P":
            raise AgentError(f"unexpected answer from the lab agent: {kind!r}")
        self.pid = int(data)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        try:
            while True:
                kind, data = _recv(self.sock)
                if kind == b"O":
                    self.chunks["out"].append(data)
                elif kind == b"E":
                    self.chunks["err"].append(data)
                elif kind == b"W":
                    self.wstatus = int(data)
                    self.returncode = os.waitstatus_to_exitcode(self.wstatus)
                    break
        except (OSError, ValueError) as e:
            self.error = AgentError(f"the lab broke off while {os.path.basename(str(self.pid))} ran: {e}")
        finally:
            self.done.set()
            self.sock.close()

    def poll(self):
        if not self.done.is_set():
            return None
        if self.error:
            raise self.error
        return self.returncode

    def send_signal(self, sig):
        if self.done.is_set():
            return
        with self.lock:
            try:
                _send(self.sock, b"K", b"%d" % int(sig))
            except OSError:
                pass

    def kill(self):
        self.send_signal(9)

    def wait(self, timeout=None):
        self.done.wait(timeout)
        return self.poll()
