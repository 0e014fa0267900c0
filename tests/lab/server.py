#!/usr/bin/env python3
"""The lab as a KVM host for the test suites: boots that stay up for many
test cases, each running the lab agent (labagent.c), which starts programs
for tests/e2e/vmmlib.py's launcher. docs/lab.md has the design.

  server.py start --state FILE [--build DIR] [--boots N] [--timeout S]
      boots N labs (default: one per host CPU, two at most), runs the probes
      in each, keeps FILE up to date, and serves until stopped or until S
      seconds have passed (default 3600). Exits 0 when every boot served
      and stopped cleanly; 1 after an oops, panic or BUG in L1, a boot that
      failed or a second freeze or QEMU crash (the console is printed); 77
      when the lab cannot be had here.
  server.py wait --state FILE [--timeout S]
      waits until every boot is ready (exit 0) or the server failed (1)
  server.py stop --state FILE
      stops the server and waits for it; exits with its status

Inside a boot, the host's / is mounted read-only at /host (9p) and the
host's temporary directory read-write over it; programs run chrooted in
/host with L1's own /proc, /sys and /dev (its /dev/kvm): the same binary,
libraries and paths as on the host, on the lab's stock KVM.
"""
import argparse
import json
import os
import re
import signal
import socket
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
import lab  # noqa: E402
import remote  # noqa: E402
from vmmlib import lab_state  # noqa: E402

AGENT_PORT = 7000
ROOT = "/host"
# Modules past kvm-amd: the agent's network card and the 9p shares.
MODULES = (lab.KVM_MODULE, "virtio-pci", "virtio-net", "9pnet-virtio", "9p")
# What ends a boot as a failure, never retried (issue: the lab never hides a failure).
KERNEL_FAILURE = re.compile(r"\b(BUG:|Oops|Kernel panic|general protection fault|"
                            r"kernel BUG at|Unable to handle kernel)")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SERVE_SCRIPT = r"""
lab-step network
ifconfig lo 127.0.0.1 up && ifconfig eth0 10.0.2.15 netmask 255.255.255.0 up || exit 90
lab-step shares
mkdir -p {root}
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=none,msize=262144 hostroot {root} || exit 91
mount -t 9p -o trans=virtio,version=9p2000.L,cache=none,msize=262144 hosttmp {root}{tmp} || exit 92
mount -t proc proc {root}/proc && mount -t sysfs sys {root}/sys && mount -t devtmpfs dev {root}/dev || exit 93
lab-step agent
exec /lab/bin/labagent {port}
"""


class Boot:
    """One lab boot in its thread; its state is what the state file shows."""

    def __init__(self, server, idx):
        self.server, self.idx = server, idx
        self.info = {"id": idx, "state": "starting", "generation": 0}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def set(self, **kw):
        self.info.update(kw)
        self.server.save()

    def on_output(self, data):
        self.out += data
        if b"labagent: listening" in self.out and self.info["state"] == "booting":
            self.info["state"] = "agent"
            threading.Thread(target=self.probe, daemon=True).start()

    def on_console(self, line):
        if KERNEL_FAILURE.search(line) and not self.info.get("kernel_failure"):
            lab.log(f"boot {self.idx}: L1 kernel failure: {line}")
            self.set(kernel_failure=line, state="failed",
                     error=f"L1's kernel failed: {line.strip()}")

    def probe(self):
        """The probes of this boot, through the agent, before any test."""
        addr = ("127.0.0.1", self.info["port"])
        generation = self.info["generation"]
        deadline = time.monotonic() + 60
        while not remote.ping(addr):
            if time.monotonic() > deadline or self.stop.is_set():
                self.probe_failed(generation, "the agent in L1 does not answer on "
                                  f"127.0.0.1:{self.info['port']}")
                return
            time.sleep(0.5)
        try:
            probes = run_probes(addr, self.server.build)
        except OSError as e:
            self.probe_failed(generation, f"the probes failed: {e}")
            return
        self.set(state="ready", probes=probes, addr=list(addr), root=ROOT,
                 ready_after=round(time.monotonic() - self.t0, 1))
        lab.log(f"boot {self.idx} ready after {self.info['ready_after']} s on port "
                f"{self.info['port']}")

    def probe_failed(self, generation, error):
        # A QEMU that died under the probes is the boot thread's to judge
        # (it may boot again): it notices within a second or two.
        time.sleep(3)
        if self.info["state"] == "agent" and self.info["generation"] == generation:
            self.set(state="failed", error=error)

    def run(self):
        # A second boot only after the known QEMU freeze or a crash of QEMU
        # itself (docs/lab.md); shards.py reruns the tests it broke off.
        for generation in (0, 1):
            self.out = b""
            self.t0 = time.monotonic()
            port = free_port()
            self.set(state="booting", generation=generation, port=port, addr=None, probes=None)
            script = os.path.join(self.server.run_dir, f"serve{self.idx}.sh")
            with open(script, "w") as f:
                f.write(SERVE_SCRIPT.format(root=ROOT, tmp=self.server.tmp, port=AGENT_PORT))
            qemu_extra = [
                "-netdev", f"user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-10.0.2.15:{AGENT_PORT}",
                "-device", "virtio-net-pci,netdev=n0",
                "-fsdev", "local,id=r,path=/,security_model=none,readonly=on,multidevs=remap",
                "-device", "virtio-9p-pci,fsdev=r,mount_tag=hostroot",
                "-fsdev", f"local,id=t,path={self.server.tmp},security_model=none,multidevs=remap",
                "-device", "virtio-9p-pci,fsdev=t,mount_tag=hosttmp"]
            sink = _Sink(self.on_output)
            try:
                res = lab.boot(self.server.build, None, script, timeout=self.server.deadline_left(),
                               stall=60, stdout=sink, slot=self.idx, modules=MODULES,
                               qemu_extra=qemu_extra, on_console=self.on_console, stop=self.stop)
            except lab.Unavailable as e:
                self.set(state="unavailable", error=str(e))
                return
            except lab.LabError as e:
                self.set(state="failed", error=str(e))
                return
            if self.info.get("kernel_failure"):
                self.set(state="failed", console=res.console[-80:])
                return
            if self.stop.is_set():
                self.set(state="stopped", wall=round(res.wall, 1))
                return
            if res.hang == "freeze" and generation == 0:
                lab.log(f"boot {self.idx} froze: {lab.describe_hang(res)}\nbooting again")
                self.set(state="frozen", evidence=lab.describe_hang(res))
                continue
            if res.crash and generation == 0:
                evidence = (f"QEMU died of {res.crash}: {res.error}\n" + res.evidence
                            + "\nconsole tail:\n" + "\n".join(res.console[-30:]))
                lab.log(f"boot {self.idx}: {evidence}\nbooting again")
                self.set(state="crashed", evidence=evidence)
                continue
            if res.hang:
                self.set(state="failed", error=f"L1 {res.hang}", evidence=lab.describe_hang(res))
            elif res.status == 0 and self.info["state"] == "stopping":
                self.set(state="stopped", wall=round(res.wall, 1))
            else:
                self.set(state="failed", error=res.error or f"the agent exited {res.status}: "
                         + res.output.decode(errors="replace")[-500:],
                         console=res.console[-80:])
            return


class _Sink:
    def __init__(self, fn):
        self.write, self.flush = fn, lambda: None


def run_probes(addr, build):
    """What the judges need to know of this boot's KVM and CPU, measured in it:
    vmm --host-info, the legacy #AC and ICEBP probes, /proc/cpuinfo."""
    def run(cmd, timeout=120):
        p = remote.RemoteProcess(addr, cmd, root=ROOT)
        st = p.wait(timeout)
        if st is None:
            p.kill()
            raise OSError(f"{' '.join(cmd)} did not finish within {timeout} s")
        return {"status": st, "out": b"".join(p.chunks["out"]).decode(errors="replace"),
                "err": b"".join(p.chunks["err"]).decode(errors="replace")}
    probes = {"host-info": run([os.path.join(build, "vmm"), "--host-info", "--json"])}
    for name in ("acprobe", "icebpprobe"):
        path = os.path.join(build, "tests", "lab", "lab-" + name)
        if os.path.exists(path):
            probes[name] = run([path])
    cpuinfo = remote.read_file(addr, "/proc/cpuinfo") or b""
    flags = re.search(rb"^flags\s*:(.*)$", cpuinfo, re.M)
    model = re.search(rb"^model name\s*:(.*)$", cpuinfo, re.M)
    probes["cpuinfo"] = {"flags": flags.group(1).decode().split() if flags else [],
                         "model": model.group(1).decode().strip() if model else "?"}
    uname = remote.RemoteProcess(addr, ["/bin/uname", "-r"], root=ROOT)
    uname.wait(30)
    probes["kernel"] = b"".join(uname.chunks["out"]).decode().strip()
    return probes


class Server:
    def __init__(self, a):
        self.build = os.path.abspath(a.build)
        self.state = os.path.abspath(a.state)
        self.tmp = os.path.realpath(tempfile.gettempdir())
        self.deadline = time.monotonic() + a.timeout
        self.lock = threading.Lock()
        self.run_dir = tempfile.mkdtemp(prefix="vmm-lab-serve-")
        self.boots = [Boot(self, i) for i in range(a.boots)]
        self.status = "starting"
        self.save()  # a state file left by an earlier server is never read as this one's

    def deadline_left(self):
        return max(10, self.deadline - time.monotonic())

    def save(self):
        with self.lock:
            states = {b.info["state"] for b in self.boots}
            if self.status in ("starting", "ready"):
                if states <= {"ready"}:
                    self.status = "ready"
                elif "unavailable" in states:
                    self.status = "unavailable"
                elif states & {"failed"}:
                    self.status = "failed"
            doc = {"pid": os.getpid(), "status": self.status, "tmp": self.tmp,
                   "build": self.build, "boots": [b.info for b in self.boots]}
            tmp = self.state + ".tmp"
            with open(tmp, "w") as f:
                json.dump(doc, f, indent=1)
            os.replace(tmp, self.state)

    def shutdown(self):
        for b in self.boots:
            if b.info["state"] == "ready" and b.info.get("addr"):
                b.info["state"] = "stopping"
                try:
                    remote.quit_agent(tuple(b.info["addr"]))
                except OSError:
                    b.stop.set()
            else:
                b.stop.set()
        for b in self.boots:
            b.thread.join(30)
            if b.thread.is_alive():
                b.stop.set()
                b.thread.join(30)

    def serve(self):
        try:
            lab.ensure_packages()
            lab.fetch_kernel()
        except lab.Unavailable as e:
            self.status = "unavailable"
            self.save()
            lab.log(f"the lab cannot be had here: {e}")
            return lab.UNAVAILABLE
        self.save()
        stopping = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stopping.set())
        signal.signal(signal.SIGINT, lambda *_: stopping.set())
        for b in self.boots:
            b.thread.start()
        while not stopping.is_set() and time.monotonic() < self.deadline:
            if all(not b.thread.is_alive() for b in self.boots):
                break
            stopping.wait(1)
        if time.monotonic() >= self.deadline:
            lab.log("the server's --timeout ran out: stopping every boot")
        self.status = "stopping"
        self.save()
        self.shutdown()
        lab.kill_running()
        bad = [b for b in self.boots if b.info["state"] not in ("stopped",)]
        self.status = "failed" if bad else "stopped"
        self.save()
        for b in bad:
            lab.log(f"boot {b.idx} ended {b.info['state']}: {b.info.get('error', '')}")
            if b.info.get("evidence"):
                lab.log(b.info["evidence"])
            if b.info.get("console"):
                lab.log("L1's console:\n" + "\n".join(b.info["console"]))
        for b in self.boots:
            if b.info.get("generation"):
                lab.log(f"boot {b.idx} froze or crashed once and was booted again: "
                        f"{b.info.get('evidence', '')}")
        return 1 if bad else 0


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def cmd_wait(a):
    end = time.monotonic() + a.timeout
    while time.monotonic() < end:
        st = lab_state(a.state)
        if st and st["status"] == "unavailable":
            print("lab: cannot be had here (see the server's log)", file=sys.stderr)
            return lab.UNAVAILABLE
        if st and not alive(st["pid"]) and st["status"] != "stopped":
            print(f"lab: the server (pid {st['pid']}) is gone; state {st['status']}",
                  file=sys.stderr)
            return 1
        if st and st["status"] == "ready":
            return 0
        if st and st["status"] in ("failed", "unavailable", "stopped"):
            for b in st["boots"]:
                if b["state"] != "ready":
                    print(f"lab: boot {b['id']}: {b['state']}: {b.get('error', '')}", file=sys.stderr)
            return lab.UNAVAILABLE if st["status"] == "unavailable" else 1
        time.sleep(1)
    print(f"lab: not ready after {a.timeout} s", file=sys.stderr)
    return 1


def cmd_stop(a):
    st = lab_state(a.state)
    if not st:
        return 0
    try:
        os.kill(st["pid"], signal.SIGTERM)
    except ProcessLookupError:
        return 0
    while alive(st["pid"]):
        time.sleep(0.5)
    st = lab_state(a.state)
    return 0 if st and st["status"] == "stopped" else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("start")
    s.add_argument("--build", default=os.path.join(lab.REPO, "build"))
    s.add_argument("--state", required=True)
    s.add_argument("--boots", type=int, default=max(1, min(2, os.cpu_count() or 1)))
    s.add_argument("--timeout", type=float, default=3600)
    w = sub.add_parser("wait")
    w.add_argument("--state", required=True)
    w.add_argument("--timeout", type=float, default=600)
    t = sub.add_parser("stop")
    t.add_argument("--state", required=True)
    a = ap.parse_args()
    if a.cmd == "start":
        return Server(a).serve()
    return {"wait": cmd_wait, "stop": cmd_stop}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
