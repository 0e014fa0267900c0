#!/usr/bin/env python3
"""The stock-KVM lab: a Debian kernel booted under QEMU's emulator (TCG) with
an AMD CPU model that has SVM, so that mainline kvm_amd gives a /dev/kvm
unlike this machine's own (tests/lab/README.md, docs/lab.md).

  lab.py fetch                      download and unpack the kernel (cached)
  lab.py symbols                    save L1's kallsyms, to name RIPs in a hang
  lab.py run [OPTIONS] DIR SCRIPT   boot, run SCRIPT with busybox sh in /extra
                                    (a copy of DIR), print its output, exit
                                    with its status

Exit status of run: the script's own, or
  77   the lab cannot be had here (no QEMU, no kernel package), with the reason
  124  the lab hung: L1 froze (no heartbeat) or the script ran past --timeout;
       the last step reached is printed
  125  the lab itself failed (boot, insmod, no /dev/kvm inside)
"""
import argparse
import fcntl
import glob
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from debian import (Lock, Unavailable, apt_depends, apt_has, cache_dir,  # noqa: F401
                    fetch_kernel, installed, kernel_package)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

UNAVAILABLE, HANG, LAB_ERROR = 77, 124, 125

# What the lab needs on the host; xz-utils and zstd unpack compressed modules.
PACKAGES = {"qemu-system-x86": "qemu-system-x86_64", "busybox-static": None,
            "cpio": "cpio", "xz-utils": "xz", "zstd": "zstd"}
# The module that gives /dev/kvm under an AMD CPU model; its depends= fields
# pull in the rest (the package ships no modules.dep).
KVM_MODULE = "kvm-amd"


class LabError(Exception):
    pass


def log(msg):
    print("lab: " + msg, file=sys.stderr, flush=True)


def ensure_packages():
    missing = [p for p in PACKAGES if not installed(p)]
    if not missing:
        return
    if os.geteuid() != 0:
        raise Unavailable(f"packages missing ({' '.join(missing)}) and not root: "
                          f"sudo apt-get install {' '.join(missing)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    # One install at a time however many boots start (their own lock), and
    # dpkg's lock waited for, bounded, when another apt user holds it.
    with Lock("apt.lock", "package install"):
        missing = [p for p in PACKAGES if not installed(p)]
        if not missing:
            return
        log("installing " + " ".join(missing))
        for cmd in (["apt-get", "-o", "DPkg::Lock::Timeout=300", "update", "-qq"],
                    ["apt-get", "-o", "DPkg::Lock::Timeout=300", "install", "-y", "-qq",
                     "--no-install-recommends"] + missing):
            r = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if r.returncode != 0 and "install" in cmd:
                raise Unavailable(f"apt-get install {' '.join(missing)} failed: "
                                  + (r.stderr.strip().splitlines() or ["?"])[-1])


def kernel_files(kroot):
    """(vmlinuz, {module name: path}) of an unpacked kernel package."""
    vmlinuz = sorted(glob.glob(os.path.join(kroot, "boot", "vmlinuz-*")))
    if not vmlinuz:
        raise LabError(f"no boot/vmlinuz-* in {kroot}")
    mods = {}
    for p in glob.glob(os.path.join(kroot, "lib", "modules", "*", "kernel", "**", "*.ko*"),
                       recursive=True):
        name = re.sub(r"\.ko(\.xz|\.zst|\.gz)?$", "", os.path.basename(p)).replace("_", "-")
        mods[name] = p
    return vmlinuz[-1], mods


def module_bytes(path):
    if path.endswith(".xz"):
        return subprocess.run(["xz", "-dc", path], check=True, capture_output=True).stdout
    if path.endswith(".zst"):
        return subprocess.run(["zstd", "-dc", path], check=True, capture_output=True).stdout
    if path.endswith(".gz"):
        return subprocess.run(["gzip", "-dc", path], check=True, capture_output=True).stdout
    with open(path, "rb") as f:
        return f.read()


def module_order(mods, want):
    """Modules to insmod, dependencies first, from their .modinfo depends=;
    want is a module's name or a list of them."""
    order, blobs = [], {}

    def visit(name, chain):
        if name in order:
            return
        if name not in mods:
            raise LabError(f"module {name} (needed by {' <- '.join(chain) or 'the lab'}) "
                           "is not in the kernel package")
        blob = module_bytes(mods[name])
        m = re.search(rb"(?:^|\0)depends=([^\0]*)", blob)
        for dep in (m.group(1).decode().split(",") if m and m.group(1) else []):
            visit(dep.replace("_", "-"), chain + [name])
        order.append(name)
        blobs[name] = blob

    for w in [want] if isinstance(want, str) else want:
        visit(w, [])
    return order, blobs


def ldd_paths(path):
    """The libraries (and the loader) a dynamic ELF file needs; [] if static."""
    r = subprocess.run(["ldd", path], capture_output=True, text=True)
    if r.returncode != 0:
        return []
    return re.findall(r"(?:=> )?(/\S+) \(0x", r.stdout)


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def put(root, dest, src=None, data=None, mode=0o755):
    p = os.path.join(root, dest.lstrip("/"))
    os.makedirs(os.path.dirname(p), exist_ok=True)
    if data is None:
        shutil.copyfile(src, p)  # follows symlinks: the file under the name ldd gave
    else:
        with open(p, "wb") as f:
            f.write(data)
    os.chmod(p, mode)


def build_initramfs(out, build, extra_dir, script, mods_order, mod_blobs):
    """An uncompressed newc cpio (TCG decompresses slowly) with busybox, the
    modules, vmm and its libraries, the build's guest.bin, DIR and SCRIPT."""
    root = tempfile.mkdtemp(prefix="lab-root-", dir=os.path.dirname(out))
    try:
        busybox = shutil.which("busybox", path="/bin:/usr/bin") or "/bin/busybox"
        if ldd_paths(busybox):
            raise LabError(f"{busybox} is not static (install busybox-static)")
        put(root, "/bin/busybox", busybox)
        put(root, "/init", os.path.join(HERE, "init.sh"))
        put(root, "/lab/bin/lab-step", os.path.join(HERE, "lab-step"))
        put(root, "/lab/script.sh", script, mode=0o644)
        for name in mods_order:
            put(root, f"/lab/modules/{name}.ko", data=mod_blobs[name], mode=0o644)
        put(root, "/lab/modules.order", data=("\n".join(mods_order) + "\n").encode(), mode=0o644)
        elves = []
        vmm = os.path.join(build, "vmm")
        if not os.path.exists(vmm):
            raise LabError(f"{vmm} is missing: build first (meson compile -C {build})")
        put(root, "/bin/vmm", vmm)
        elves.append(vmm)
        for rel, dest in (("guest.bin", "/lab/guest.bin"), ("bench/stepbench", "/lab/bin/stepbench"),
                          ("tests/lab/lab-agent", "/lab/bin/labagent")):
            src = os.path.join(build, rel)
            if os.path.exists(src):
                put(root, dest, src, mode=0o755 if "bin/" in dest else 0o644)
                if is_elf(src) and "bin/" in dest:
                    elves.append(src)
        os.makedirs(os.path.join(root, "extra"), exist_ok=True)
        if extra_dir:
            for dirpath, _, files in os.walk(extra_dir):
                for fn in files:
                    src = os.path.join(dirpath, fn)
                    rel = os.path.relpath(src, extra_dir)
                    put(root, "/extra/" + rel, src, mode=os.stat(src).st_mode & 0o777)
                    if is_elf(src):
                        elves.append(src)
        for e in elves:
            for lib in ldd_paths(e):
                put(root, lib, lib)
        with open(out, "wb") as f:
            find = subprocess.Popen(["find", ".", "-print0"], cwd=root, stdout=subprocess.PIPE)
            subprocess.run(["cpio", "--null", "-o", "-H", "newc", "--owner=0:0", "--quiet"],
                           cwd=root, stdin=find.stdout, stdout=f, check=True)
            find.wait()
    finally:
        shutil.rmtree(root, ignore_errors=True)


class Result:
    def __init__(self):
        self.status = None         # the script's exit status, if it got that far
        self.hang = None           # "freeze" or "timeout"
        self.error = None          # a lab failure (no boot, insmod, ...)
        self.steps = []            # (step, L1 uptime) in order
        self.console = []          # console lines that were not control lines
        self.output = b""          # the script's output
        self.evidence = ""         # monitor dump and console tail on a hang
        self.times = {}            # INIT, MODULES, BEGIN, EXIT: host seconds since launch
        self.wall = 0.0
        self.kernel = None         # L1's uname -r
        self.panic = False         # L1's kernel panicked (QEMU exits: -no-reboot)
        self.crash = None          # the signal QEMU itself died of (a fault of the emulator's)

    def last_step(self):
        return self.steps[-1][0] if self.steps else "(none: " + (
            "script started" if "BEGIN" in self.times else
            "modules loaded" if "MODULES" in self.times else
            "init started" if "INIT" in self.times else "kernel did not reach /init") + ")"


def qemu_config():
    qemu = os.environ.get("VMM_LAB_QEMU", "")
    # A QEMU built apart (tests/lab/qemu-hwbp.sh) finds the installed
    # package's firmware only when told where.
    firmware = ["-L", "/usr/share/seabios", "-L", "/usr/share/qemu", "-L", "/usr/lib/ipxe/qemu"] if qemu else []
    return {
        "qemu": qemu or "qemu-system-x86_64",
        "smp": os.environ.get("VMM_LAB_SMP", "2"),
        "cpu": os.environ.get("VMM_LAB_CPU", "max"),
        # One host thread for every vCPU: QEMU 7.2's multi-threaded TCG
        # freezes L1 when KVM patches the kernel's text (docs/lab.md).
        "accel": os.environ.get("VMM_LAB_ACCEL", "tcg,thread=single"),
        "mem": os.environ.get("VMM_LAB_MEM", "2G"),
        "append": os.environ.get("VMM_LAB_APPEND", ""),
        "qemu_args": firmware + os.environ.get("VMM_LAB_QEMU_ARGS", "").split(),
    }


def monitor_query(path, commands, seconds):
    """Sends commands to QEMU's monitor socket; returns what it answered
    within seconds, and the OSError that cut it short (or None)."""
    out = b""
    try:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(3)
        s.connect(path)
        s.sendall(commands)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                d = s.recv(65536)
            except socket.timeout:
                break
            if not d:
                break
            out += d
        s.close()
    except OSError as e:
        return out, e
    return out, None


def monitor_dump(path, symbols=None):
    """What QEMU's monitor says about the vCPUs of a hung L1."""
    out, err = monitor_query(path, b"info cpus\ninfo registers -a\n", 3)
    if err:
        out += f"(monitor: {err})".encode()
    text = out.decode(errors="replace").replace("\r", "")
    # The instructions each vCPU is at, as the guest's memory holds them now.
    rips = sorted(set(re.findall(r"RIP=([0-9a-f]{16})", text)))
    if rips:
        more, _ = monitor_query(path, b"".join(b"x/3i 0x%s\n" % r.encode() for r in rips), 2)
        text += "\n" + "\n".join(
            ln for ln in more.decode(errors="replace").replace("\r", "").splitlines()
            if re.match(r"0x[0-9a-f]+:", ln))
    if symbols:
        # The lab boots with nokaslr, so that System.map names L1's RIPs.
        text = re.sub(r"RIP=([0-9a-f]{16})", lambda m: f"RIP={m.group(1)} <{symbols(int(m.group(1), 16))}>", text)
        text = re.sub(r"^0x([0-9a-f]{16}):", lambda m: f"0x{m.group(1)} <{symbols(int(m.group(1), 16))}>:", text, flags=re.M)
    # Keep what tells where each vCPU was: RIP, CS, CR0/CR3/CR4, EFER, halted.
    keep = [ln for ln in text.splitlines()
            if re.search(r"CPU#|RIP=|^CS |CR0=|EFER=|HLT=|thread_id|^\* ?CPU|^  CPU|^0x[0-9a-f]+( <[^>]*>)?:", ln)]
    return "\n".join(keep) if keep else text[-3000:]


def system_map(kroot):
    """A function that names the kernel symbol an address falls in."""
    maps = glob.glob(os.path.join(kroot, "boot", "System.map-*"))
    if not maps:
        return None
    syms = []
    with open(maps[0]) as f:
        for ln in f:
            a, t, name = ln.split()[:3]
            if t in "tTwW":
                syms.append((int(a, 16), name))
    if len(syms) < 100:
        # Debian ships a stub ("The real System.map is in the -dbg package").
        kallsyms = os.path.join(cache_dir(), "kallsyms-" + os.path.basename(maps[0])[11:])
        if not os.path.exists(kallsyms):
            return None
        with open(kallsyms) as f:
            syms = [(int(a, 16), n) for a, t, n, *_ in (ln.split() for ln in f) if t in "tTwW"]
    syms.sort()
    import bisect
    keys = [a for a, _ in syms]

    def name(addr):
        i = bisect.bisect_right(keys, addr) - 1
        if i < 0 or addr - keys[i] > 0x100000:
            return "not L1 kernel text: L2 or user"
        return f"{syms[i][1]}+{addr - keys[i]:#x}"
    return name


# QEMU process groups of the boots under way (several threads may boot at
# once, each in its own slot): killed by kill_running() on the way out.
RUNNING = set()


def kill_running():
    for pid in list(RUNNING):
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass


def boot(build, extra_dir, script, timeout=600, stall=30, boot_stall=120,
         stdout=None, kroot=None, slot=0, modules=(KVM_MODULE,), qemu_extra=(),
         on_console=None, stop=None):
    """Boots the lab once. Streams the script's output to stdout (a binary
    file, or None to only collect it) and returns a Result. `slot`: boots
    in different slots may run at once (one QEMU per slot and machine).
    on_console(line) sees each console line; setting the Event stop ends
    the boot at once (res.error says so)."""
    res = Result()
    cfg = qemu_config()
    kroot = kroot or fetch_kernel()
    vmlinuz, mods = kernel_files(kroot)
    order, blobs = module_order(mods, list(modules))
    with Lock("qemu.lock" if slot == 0 else f"qemu.lock.{slot}", f"one QEMU in slot {slot}"):
        run = tempfile.mkdtemp(prefix="vmm-lab-")
        try:
            initrd = os.path.join(run, "initrd.cpio")
            build_initramfs(initrd, build, extra_dir, script, order, blobs)
            for n in ("con", "out"):
                for d in ("in", "out"):
                    os.mkfifo(os.path.join(run, f"{n}.{d}"))
            mon = os.path.join(run, "mon.sock")
            append = f"console=ttyS0 loglevel=5 panic=-1 nokaslr {cfg['append']}".strip()
            cmd = ["timeout", "-s", "KILL", str(int(timeout + boot_stall + 30)),
                   cfg["qemu"], "-accel", cfg["accel"], "-cpu", cfg["cpu"],
                   "-smp", cfg["smp"], "-m", cfg["mem"], "-kernel", vmlinuz,
                   "-initrd", initrd, "-append", append, "-display", "none",
                   "-nodefaults", "-no-reboot",
                   "-chardev", f"pipe,id=con,path={run}/con",
                   "-chardev", f"pipe,id=out,path={run}/out",
                   "-serial", "chardev:con", "-serial", "chardev:out",
                   "-monitor", f"unix:{mon},server=on,wait=off"] + list(qemu_extra) + cfg["qemu_args"]
            errf = open(os.path.join(run, "qemu.stderr"), "w+")
            t0 = time.monotonic()
            qemu = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=errf, stderr=errf,
                                    start_new_session=True)
            RUNNING.add(qemu.pid)
            # O_RDWR keeps the FIFOs open, so that no EOF is seen before QEMU opens them.
            fds = {os.open(os.path.join(run, f"{n}.out"), os.O_RDWR | os.O_NONBLOCK): n
                   for n in ("con", "out")}
            conbuf = b""
            last = t0
            try:
                while True:
                    now = time.monotonic()
                    if qemu.poll() is not None:
                        break
                    limit = stall if "INIT" in res.times else boot_stall
                    if now - last > limit:
                        res.hang = "freeze"
                        break
                    if now - t0 > timeout:
                        res.hang = "timeout"
                        break
                    if stop is not None and stop.is_set():
                        res.error = "stopped by the host"
                        os.killpg(qemu.pid, signal.SIGKILL)
                        break
                    r, _, _ = select.select(list(fds), [], [], 1.0)
                    for fd in r:
                        try:
                            d = os.read(fd, 65536)
                        except BlockingIOError:
                            continue
                        if not d:
                            continue
                        if fds[fd] == "out":
                            res.output += d
                            if stdout:
                                stdout.write(d)
                                stdout.flush()
                            continue
                        conbuf += d
                        *lines, conbuf = conbuf.split(b"\n")
                        for ln in lines:
                            # Only lines from L1's userspace (the heartbeat and
                            # the other control lines) show that L1 still
                            # schedules; its kernel may go on printing soft
                            # lockups after userspace stopped.
                            if ln.startswith(b"@@LAB "):
                                last = time.monotonic()
                            handle_console(res, ln.decode(errors="replace").rstrip("\r"),
                                           time.monotonic() - t0)
                            if on_console:
                                on_console(ln.decode(errors="replace").rstrip("\r"))
                if res.hang:
                    # Two looks a second apart: a vCPU whose RIP has not moved
                    # is stuck on one instruction, one that moved is spinning.
                    names = system_map(kroot)
                    res.evidence = monitor_dump(mon, names)
                    time.sleep(1)
                    res.evidence += "\n1 s later:\n" + monitor_dump(mon, names)
                    os.killpg(qemu.pid, signal.SIGKILL)
                qemu.wait()
                # Drain what QEMU wrote before it exited.
                for fd, n in fds.items():
                    while True:
                        try:
                            d = os.read(fd, 65536)
                        except BlockingIOError:
                            break
                        if not d:
                            break
                        if n == "out":
                            res.output += d
                            if stdout:
                                stdout.write(d)
                                stdout.flush()
                        else:
                            conbuf += d
                for ln in conbuf.split(b"\n"):
                    if ln:
                        handle_console(res, ln.decode(errors="replace").rstrip("\r"),
                                       time.monotonic() - t0)
            finally:
                for fd in fds:
                    os.close(fd)
                if qemu.poll() is None:
                    os.killpg(qemu.pid, signal.SIGKILL)
                    qemu.wait()
                RUNNING.discard(qemu.pid)
            res.wall = time.monotonic() - t0
            errf.seek(0)
            qerr = errf.read().strip()
            errf.close()
            # Signals the lab never sends: QEMU crashed on its own.
            if qemu.returncode in (-signal.SIGSEGV, -signal.SIGABRT, -signal.SIGBUS,
                                   -signal.SIGILL, -signal.SIGFPE):
                res.crash = signal.Signals(-qemu.returncode).name
            if res.hang is None and res.status is None and res.error is None:
                panic = [ln for ln in res.console if "Kernel panic" in ln]
                res.panic = bool(panic)
                res.error = (f"QEMU exited {qemu.returncode} before the script finished"
                             + (f": {qerr.splitlines()[-1]}" if qerr else "")
                             + (f"; L1 {panic[0].split('] ', 1)[-1]}" if panic else ""))
            if qerr and (res.error or res.hang):
                res.evidence += "\nqemu stderr:\n" + qerr[-2000:]
        finally:
            shutil.rmtree(run, ignore_errors=True)
    return res


def handle_console(res, line, t):
    m = re.match(r"@@LAB (\w+) ?(.*)", line)
    if not m:
        if line.strip() and not line.endswith("reboot: Power down"):
            res.console.append(line)
            if os.environ.get("VMM_LAB_VERBOSE"):
                print("lab console: " + line, file=sys.stderr, flush=True)
        return
    what, rest = m.groups()
    if what == "TICK":
        return
    if what == "STEP":
        res.steps.append((rest.rsplit(" ", 1)[0], t))
        return
    if what in ("INIT", "MODULES", "BEGIN"):
        res.times[what] = t
        if what == "INIT":
            res.kernel = rest.split()[1] if len(rest.split()) > 1 else None
            log(f"L1 up after {t:.1f} s: kernel {res.kernel}")
        return
    if what == "EXIT":
        res.times[what] = t
        res.status = int(rest.split()[0])
        return
    if what == "ERROR":
        res.error = rest


def describe_hang(res, cfg=None):
    cfg = cfg or qemu_config()
    kind = ("L1 FROZE: no heartbeat from the lab's kernel" if res.hang == "freeze"
            else "TIMEOUT: L1 alive but the script ran past --timeout")
    tail = "\n".join("  " + ln for ln in res.console[-60:]) or "  (none)"
    return (f"{kind} after {res.wall:.0f} s; last step reached: {res.last_step()}\n"
            f"config: -cpu {cfg['cpu']} -smp {cfg['smp']} -accel {cfg['accel']}\n"
            f"console tail:\n{tail}\n"
            f"QEMU's view of the vCPUs:\n{res.evidence}")


def cmd_run(a):
    try:
        ensure_packages()
        build = os.path.abspath(a.build)
        extra = os.path.abspath(a.dir) if a.dir else None
        if extra and not os.path.isdir(extra):
            log(f"{a.dir} is not a directory")
            return 2
        if not os.path.isfile(a.script):
            log(f"{a.script}: no such file")
            return 2
        attempts = a.retries + 1
        for i in range(attempts):
            res = boot(build, extra, a.script, timeout=a.timeout, stall=a.stall,
                       stdout=sys.stdout.buffer)
            if (res.hang == "freeze" or res.panic) and i + 1 < attempts:
                log(describe_hang(res) if res.hang else
                    f"error: {res.error}\nconsole tail:\n" + "\n".join(res.console[-30:]))
                log(f"retrying after the {'freeze' if res.hang else 'panic'} ({i + 2} of {attempts})")
                continue
            break
    except Unavailable as e:
        log(f"SKIP: {e}")
        return UNAVAILABLE
    except LabError as e:
        log(f"error: {e}")
        return LAB_ERROR
    if res.hang:
        log(describe_hang(res))
        return HANG
    if res.error:
        log(f"error: {res.error}\nconsole tail:\n" + "\n".join(res.console[-30:]))
        return LAB_ERROR
    log(f"script exited {res.status}; boot to /init {res.times.get('INIT', 0):.1f} s, "
        f"script {res.times['EXIT'] - res.times['BEGIN']:.1f} s, total {res.wall:.1f} s")
    return res.status


def cmd_fetch(a):
    try:
        ensure_packages()
        k = fetch_kernel()
    except Unavailable as e:
        log(f"SKIP: {e}")
        return UNAVAILABLE
    vmlinuz, mods = kernel_files(k)
    order, _ = module_order(mods, KVM_MODULE)
    print(f"kernel: {vmlinuz}\nmodules: {' '.join(order)}")
    return 0


def cmd_symbols(a):
    """Boots once to save L1's /proc/kallsyms (nokaslr) into the cache, so
    that a hang's evidence names the L1 kernel functions the vCPUs were in."""
    kroot = fetch_kernel()
    ver = os.path.basename(kernel_files(kroot)[0])[len("vmlinuz-"):]
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "ks.sh")
        with open(script, "w") as f:
            f.write("grep ' [tTwW] ' /proc/kallsyms | grep -v '\\['\n")
        res = boot(os.path.abspath(a.build), None, script, kroot=kroot)
    if res.status != 0:
        log("could not read /proc/kallsyms in the lab")
        return LAB_ERROR
    path = os.path.join(cache_dir(), "kallsyms-" + ver)
    with open(path, "wb") as f:
        f.write(res.output)
    print(path)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("fetch")
    sy = sub.add_parser("symbols")
    sy.add_argument("--build", default=os.path.join(REPO, "build"))
    r = sub.add_parser("run")
    r.add_argument("--build", default=os.path.join(REPO, "build"),
                   help="build dir with vmm and guest.bin (default: build/)")
    r.add_argument("--timeout", type=float, default=600,
                   help="seconds for the whole boot (default 600)")
    r.add_argument("--stall", type=float, default=30,
                   help="seconds without a heartbeat that count as a freeze (default 30)")
    r.add_argument("--retries", type=int, default=0,
                   help="boot again up to N times after a freeze (default 0)")
    r.add_argument("dir")
    r.add_argument("script")
    a = ap.parse_args()
    # meson test's timeout sends SIGTERM: unwind, so that QEMU (in a session
    # of its own) is killed on the way out and not left to its KILL timer.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    return {"fetch": cmd_fetch, "run": cmd_run, "symbols": cmd_symbols}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
