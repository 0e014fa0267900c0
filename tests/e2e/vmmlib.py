"""What every script that runs vmm shares: where vmm runs (this machine's
KVM or a lab boot's stock KVM), one launcher, the TAP parser, vmm
--host-info, and one case-runner main().

  r = run([vmm, "-q", image], timeout=60, sig=signal.SIGTERM, signal_after=1)
  r.status, r.out, r.err, r.elapsed, r.hung

The launcher bounds every run from outside: past its timeout the process is
killed, the run is marked hung and says so. start() is the same launcher
without the wait, for VMs that must run at once; its wait() gives the Run.

Where: with VMM_TEST_LAB=STATE (the state file of tests/lab/server.py) every
program runs in a lab boot through its agent, with the same paths, output,
status, signals, rlimits and /proc (target().read, .listdir); otherwise
here. Without a usable KVM here a case skips (77); a lab that is not up
when it was asked for is a failure. Each VM run is counted in
VMM_TEST_BOOT_LOG, if set, for test.sh's closing line.
"""
import argparse
import fcntl
import functools
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time

import remote

SKIP = 77
# meson's ERROR: the environment broke (the lab stopped, its agent gone),
# so nothing was judged. Never a failure of vmm: it kills no mutant.
ENV_ERROR = 99
HERE = os.path.dirname(os.path.abspath(__file__))


# ------------------------------------------------------------------ where vmm runs

def kvm_usable():
    """None if the target's KVM can be used, else why not (a skip). A lab
    that was asked for but is not up ends the case as a failure here."""
    return target().why_not()


def skip(reason):
    """Says why and returns meson's skip status."""
    print(f"SKIP: {reason}")
    return SKIP


class Skip(Exception):
    """Raised by a case that cannot run here; case_main() turns it into 77."""


class Failure(Exception):
    """Raised where a case cannot go on; case_main() reports it as a failure."""


class LabGone(Exception):
    """The lab a case runs in stopped or broke off: an error of the run,
    not a verdict on vmm. Escapes every case's own handling, to exit 99."""


def _env_error_hook(kind, value, tb):
    """Every script imports this module: a lab that went away ends any of
    them with meson's ERROR status, whatever it was doing."""
    if issubclass(kind, (LabGone, remote.AgentError)):
        sys.stdout.flush()
        print(f"ERROR: the lab went away, nothing was judged: {value}", flush=True)
        os._exit(ENV_ERROR)
    sys.__excepthook__(kind, value, tb)


sys.excepthook = _env_error_hook


class LocalTarget:
    """This machine: its /dev/kvm, its /proc."""
    name, label = "local", "this machine's KVM"
    probes = {}
    time_scale = 1.0

    def why_not(self):
        try:
            fd = os.open("/dev/kvm", os.O_RDWR)
        except OSError as e:
            return (f"/dev/kvm is not usable here ({e.strerror}); ./test.sh runs this "
                    "case on the lab's stock KVM instead (docs/lab.md)")
        os.close(fd)
        return None

    def read(self, path):
        try:
            with open(path, "rb") as f:
                return f.read()
        except OSError:
            return None

    def listdir(self, path):
        try:
            return os.listdir(path)
        except OSError:
            return None


def lab_state(path):
    """The lab's state file (tests/lab/server.py), or None."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


# The states of a lab boot on its way back up after a freeze or a QEMU crash.
LAB_COMING_BACK = ("crashed", "frozen", "booting", "agent")


def settled_lab_boot(path, boot_id, timeout):
    """Lab boot boot_id's entry in the state file ({} if none) once it is
    no longer on its way back up, or when timeout seconds have passed."""
    deadline = time.monotonic() + timeout
    while True:
        st = lab_state(path) or {"boots": []}
        b = next((x for x in st["boots"] if str(x["id"]) == str(boot_id)), {})
        if b.get("state") not in LAB_COMING_BACK or time.monotonic() >= deadline:
            return b
        time.sleep(1)


class LabTarget:
    """A boot of tests/lab/server.py: programs run there through its agent,
    chrooted in the host's / (the same paths), on the lab's stock KVM.
    A case holds one boot for its whole life, so that its runs and the
    probes that judge them share a KVM."""
    name, label = "lab", "the lab's stock KVM"
    # L1's CPU is emulated (TCG): a guest runs several times slower there,
    # a single-step about 0.5 ms (docs/lab.md).
    time_scale = float(os.environ.get("VMM_TEST_LAB_TIME_SCALE", "4"))

    def __init__(self, state_path):
        self.state_path = state_path
        st = self.state()
        if st is None:
            raise LabGone(f"VMM_TEST_LAB={state_path}: no lab state there "
                          "(start one with tests/lab/server.py start)")
        pin = os.environ.get("VMM_TEST_LAB_BOOT")  # tests/lab/shards.py gives each meson its boot
        # A pinned boot on its way back up after a freeze or a QEMU crash
        # (tests/lab/server.py) is waited for, a few minutes at most.
        if pin is not None:
            settled_lab_boot(state_path, pin, 300)
            st = self.state() or st
        ready = [b for b in st["boots"] if b["state"] == "ready"]
        if pin is not None:
            ready = [b for b in ready if str(b["id"]) == pin]
        self.boot = None
        self.lease = None
        # The first free boot, so that cases run at once go to different
        # QEMUs (one host thread each); all busy: share one.
        for b in ready:
            f = open(f"{state_path}.boot{b['id']}.lease", "w")
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                f.close()
                continue
            self.boot, self.lease = b, f
            break
        if self.boot is None and ready:
            self.boot = ready[os.getpid() % len(ready)]
        self.status = st["status"]

    def state(self):
        return lab_state(self.state_path)

    @property
    def addr(self):
        return tuple(self.boot["addr"])

    @property
    def probes(self):
        return self.boot["probes"] if self.boot else {}

    def why_not(self):
        if self.boot is None:
            st = self.state() or {"status": "gone", "boots": []}
            raise LabGone(f"the lab asked for (VMM_TEST_LAB) is {st['status']}: "
                          + "; ".join(f"boot {b['id']} {b['state']} {b.get('error', '')}"
                                      for b in st["boots"]))
        return None

    def trouble(self):
        """What became of this case's boot, for a run the lab broke off."""
        st = self.state() or {"boots": []}
        b = next((b for b in st["boots"] if b["id"] == self.boot["id"]), {})
        return (f"lab boot {b.get('id')} is {b.get('state')}: {b.get('error', '')}\n"
                + b.get("evidence", ""))

    def spawn(self, cmd, env, close_fds, stdout_bytes, rlimits, pipe_size):
        # The lab has its own PATH and HOME: what crosses over is the
        # variables the caller changed and those meant for vmm and the
        # sanitizers (as meson's test env sets them).
        env = os.environ if env is None else env
        delta = {k: v for k, v in env.items()
                 if (os.environ.get(k) != v or k.startswith(("VMM_", "ASAN_", "UBSAN_", "LSAN_")))
                 and not k.startswith(("VMM_TEST_LAB", "VMM_TEST_BOOT_LOG"))}
        return remote.RemoteProcess(self.addr, cmd, env=delta, close_fds=close_fds,
                                    stdout_bytes=stdout_bytes, root=self.boot["root"],
                                    cwd=os.getcwd(), rlimits=rlimits, pipe_size=pipe_size)

    def read(self, path):
        return remote.read_file(self.addr, path)

    def listdir(self, path):
        return remote.list_dir(self.addr, path)


@functools.lru_cache(maxsize=None)
def target():
    """Where this process runs its programs (see the module's text)."""
    state = os.environ.get("VMM_TEST_LAB")
    return LabTarget(state) if state else LocalTarget()


def kvm_on_svm():
    """True if the target's KVM runs on AMD SVM (the CPU it runs on has the
    svm flag: the lab's does), where KVM resets a vCPU after a triple fault."""
    t = target()
    if t.name == "lab":
        return "svm" in t.probes.get("cpuinfo", {}).get("flags", [])
    m = re.search(rb"^flags\s*:(.*)$", t.read("/proc/cpuinfo") or b"", re.M)
    return bool(m) and b"svm" in m.group(1).split()


# What vmm prints for a register dump that KVM took away (dump.c).
REGS_LOST = r"registers: lost: KVM reset the vCPU to its INIT state"


# What -q keeps on a host that costs detection: one warning, at start, that
# names the loss (vm_kvm.c). Anything else on stderr under -q is noise.
HOST_LOSS_WARNING = re.compile(r"^vmm: warning: split-lock emulation: this KVM cannot .*$", re.M)


def quiet_noise(err):
    """stderr of a -q run without the host's loss-of-detection warning."""
    return HOST_LOSS_WARNING.sub("", err).strip()


def scaled(seconds):
    """A bound of seconds on this machine's KVM, stretched for the target's
    speed; for timeouts and for the latencies that tests bound."""
    return seconds * target().time_scale


def scaled_str(seconds):
    """scaled() for a command line, as vmm --timeout takes it: whole
    seconds where it is that long, else the fraction (0.5 stays 0.5 on
    this machine's KVM, where rounding made it 0, which vmm refuses)."""
    t = scaled(seconds)
    return str(int(round(t))) if t >= 1 else f"{t:g}"


def vm_statuses():
    """{name: number} of include/vmm_status.h: what tells a run that booted a VM."""
    out = {}
    with open(os.path.join(HERE, "..", "..", "include", "vmm_status.h")) as f:
        for name, num in re.findall(r"^#define\s+(\w+)\s+(\d+)", f.read(), re.M):
            out[name] = int(num)
    return out


# Statuses only a VM that ran can end with, by name (their numbers are the ABI's).
RAN = ("VMM_EXIT_SHUTDOWN", "VMM_EXIT_FAIL_ENTRY", "VMM_EXIT_INTERNAL", "VMM_EXIT_UNHANDLED",
       "VMM_EXIT_HALTED", "VMM_EXIT_TIMEOUT", "VMM_EXIT_BAD_STATUS", "VMM_EXIT_SPLIT_LOCK")


def booted(r):
    """Did this run of vmm boot a VM? The guest printed (vmm's stdout is the
    guest's COM1), or vmm ended with a status that only a running VM gives."""
    argv = [os.path.basename(x) for x in r.cmd]
    if not any(x.startswith("vmm") for x in argv) or \
            any(x in ("--help", "--version", "--host-info", "-h") for x in r.cmd):
        return False
    st = vm_statuses()
    if r.out:
        return True
    if r.status is None:
        return False
    if 0 <= r.status <= st["GUEST_STATUS_MAX"] and r.status != st.get("VMM_EXIT_USAGE"):
        return True
    return r.status in {st[n] for n in RAN if n in st}


def count_boot(r):
    log = os.environ.get("VMM_TEST_BOOT_LOG")
    if log and booted(r):
        with open(log, "a") as f:
            f.write(f"{target().name}\n")


# ------------------------------------------------------------------ the launcher

class Run:
    """One finished process: status, output, timings and peak RSS."""
    cmd = ()
    pid = status = None
    out = err = ""
    elapsed = 0.0
    stop_elapsed = None     # from the signal to the exit
    hwm_kb = 0              # VmHWM, the peak RSS, at the last look before the exit
    rss_samples = ()        # (seconds, RSS kB outside guest RAM) while it ran
    own_peak_kb = 0         # the largest of those samples
    hung = False            # killed at the timeout


def proc_kb(pid, field):
    """VmRSS or VmHWM of a running process, in kB, where it runs. (wait4's
    ru_maxrss is no use here: it still counts the forked Python from before
    the exec.)"""
    text = target().read(f"/proc/{pid}/status")
    m = re.search(rf"^{field}:\s+(\d+)", (text or b"").decode(), re.M)
    return int(m.group(1)) if m else None


def own_rss_kb(pid, ram_kb=64 << 10):
    """RSS of a running process outside its guest RAM (the one anonymous
    mapping of ram_kb), in kB, or None. Guest RAM is the guest's to fill,
    and khugepaged may fold it into a 2 MiB page at any time: VmRSS and
    VmHWM jump by 2 MiB then, whatever vmm itself holds."""
    text = target().read(f"/proc/{pid}/smaps")
    if not text:
        return None
    total, found, skip, size, path = 0, False, False, None, None
    for line in text.decode(errors="replace").splitlines():
        f = line.split()
        if f and re.fullmatch(r"[0-9a-f]+-[0-9a-f]+", f[0]):
            path = " ".join(f[5:])
        elif f[:1] == ["Size:"]:
            size = int(f[1])
            skip = not found and not path and size == ram_kb
            found = found or skip
        elif f[:1] == ["Rss:"] and not skip:
            total += int(f[1])
    return total if found else None


class Process:
    """A started process whose stdout and stderr are drained by threads, so
    that any number can run at once without filling a pipe; on the target
    (here, or a lab boot).

    stdout_bytes: None reads all of stdout; 0 never reads it (a stalled
    reader: what the pipe holds is taken after the exit); N reads N bytes,
    then closes the pipe (a reader that goes away). rlimits: {"NOFILE":
    (soft, hard), ...} for the process. pipe_size: what stdout's pipe holds
    (F_SETPIPE_SZ), so that a stalled reader stalls the writer as soon on a
    slow target as on a fast one."""

    def __init__(self, cmd, env=None, close_fds=(), stdout_bytes=None, quiet=False,
                 rlimits=None, pipe_size=None):
        self.cmd = list(cmd)
        self.target = target()
        if not quiet:
            print("$ " + " ".join(self.cmd) + "".join(f" {fd}>&-" for fd in close_fds)
                  + "".join(f" (RLIMIT_{k} {v[0]})" for k, v in (rlimits or {}).items())
                  + ("" if self.target.name == "local" else f"  [lab boot {self.target.boot['id']}]"),
                  flush=True)
        self.stdout_bytes = stdout_bytes
        self.t0 = time.monotonic()
        if self.target.name != "local":
            self.proc = self.target.spawn(self.cmd, env, close_fds, stdout_bytes, rlimits,
                                          pipe_size)
            self.pid = self.proc.pid
            self.chunks = self.proc.chunks
            self.threads = []
            return

        def in_child():
            # After Popen's dup2s: the child starts with these descriptors closed.
            for fd in close_fds:
                os.close(fd)
            for k, v in (rlimits or {}).items():
                resource.setrlimit(getattr(resource, "RLIMIT_" + k), v)

        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env,
                                     preexec_fn=in_child if close_fds or rlimits else None)
        self.pid = self.proc.pid
        if pipe_size:
            fcntl.fcntl(self.proc.stdout.fileno(), fcntl.F_SETPIPE_SZ, pipe_size)
        self.chunks = {"out": [], "err": []}
        self.threads = [self._reader(self.proc.stderr, "err", None)]
        if stdout_bytes != 0:
            self.threads.append(self._reader(self.proc.stdout, "out", stdout_bytes))

    def _reader(self, stream, key, limit):
        def read():
            if limit is not None:
                self.chunks[key].append(stream.read(limit))
                stream.close()
                return
            for block in iter(lambda: stream.read(65536), b""):
                self.chunks[key].append(block)
        t = threading.Thread(target=read, daemon=True)
        t.start()
        return t

    def poll(self):
        return self.proc.poll()

    def send_signal(self, sig):
        self.proc.send_signal(sig)

    def _reaped(self):
        """The exit status once the process is gone, else None."""
        if self.target.name != "local":
            try:
                return self.proc.poll()
            except remote.AgentError as e:
                raise LabGone(f"{e}\n{self.target.trouble()}")
        pid, wstatus = os.waitpid(self.pid, os.WNOHANG)
        return os.waitstatus_to_exitcode(wstatus) if pid else None

    def wait(self, timeout=120, sig=None, signal_after=1.0, sample_rss=False):
        """Sends sig signal_after seconds after the start, watches memory,
        kills the process timeout seconds after the start; returns the Run."""
        r = Run()
        r.cmd, r.pid = self.cmd, self.pid
        samples = []
        sent = None
        deadline = self.t0 + timeout
        status = None
        # Here /proc costs nothing; in the lab each look is a request to the agent.
        look_every = 0 if self.target.name == "local" else 0.5
        looked = 0.0
        while status is None:
            now = time.monotonic()
            if sig is not None and sent is None and now - self.t0 >= signal_after:
                self.proc.send_signal(sig)
                sent = now
            if now >= deadline and not r.hung:
                r.hung = True
                print(f"HANG: {os.path.basename(self.cmd[0])} did not finish within "
                      f"{timeout} s; killed", flush=True)
                self.proc.kill()
            if now - looked >= look_every:
                looked = now
                # Zombies keep /proc/PID/status but have no memory left: look first.
                hwm = proc_kb(self.pid, "VmHWM")
                if hwm:
                    r.hwm_kb = hwm
                if sample_rss:
                    kb = own_rss_kb(self.pid)
                    if kb:
                        samples.append((now - self.t0, kb))
                        r.own_peak_kb = max(r.own_peak_kb, kb)
            status = self._reaped()
            if status is None:
                time.sleep(0.02)
        end = time.monotonic()
        self.proc.returncode = status
        if self.target.name == "local":
            if self.stdout_bytes == 0:
                # What the pipe still holds; the writer is gone, so this ends.
                self.chunks["out"].append(self.proc.stdout.read())
            for t in self.threads:
                t.join(timeout=10)
            self.proc.stdout.close()
            self.proc.stderr.close()
        r.status = status
        r.elapsed = end - self.t0
        r.stop_elapsed = end - sent if sent is not None else None
        r.rss_samples = samples
        r.out = b"".join(self.chunks["out"]).decode(errors="replace")
        r.err = b"".join(self.chunks["err"]).decode(errors="replace")
        count_boot(r)
        return r


def start(cmd, env=None, close_fds=(), stdout_bytes=None, quiet=False, rlimits=None,
          pipe_size=None):
    """Starts cmd without waiting (see Process); .wait() gives its Run."""
    return Process(cmd, env, close_fds, stdout_bytes, quiet, rlimits, pipe_size)


def run(cmd, timeout=120, sig=None, signal_after=1.0, env=None, close_fds=(),
        stdout_bytes=None, sample_rss=False, quiet=False, rlimits=None, pipe_size=None):
    """Runs cmd to its end (or kills it at timeout); returns the Run."""
    return start(cmd, env, close_fds, stdout_bytes, quiet, rlimits, pipe_size).wait(
        timeout, sig, signal_after, sample_rss)


def image(tmp, hexcode, name="guest.img"):
    """A guest image of the machine code in hexcode, written in tmp; its path."""
    path = os.path.join(tmp, name)
    with open(path, "wb") as f:
        f.write(bytes.fromhex(hexcode))
    return path


def run_vmm(vmm, args, **kw):
    """run() for vmm and its arguments."""
    return run([vmm] + list(args), **kw)


# ------------------------------------------------------------------ TAP

TAP_LINE = re.compile(r"^(not ok|ok)\s+(\d+)\s*(?:-\s*)?(.*?)(?:\s#\s*((?i:SKIP|TODO)\b.*))?$")


class TapResult(tuple):
    """(ok, number, description, directive); a "Bail out!" is a failed
    result numbered 0. A description may hold '#' ("raises #AC"): only
    " # SKIP ..." and " # TODO ..." are directives."""
    __slots__ = ()

    def __new__(cls, ok, num, desc, directive):
        return super().__new__(cls, (ok, num, desc, directive))

    ok = property(lambda self: self[0])
    num = property(lambda self: self[1])
    desc = property(lambda self: self[2])
    directive = property(lambda self: self[3])
    skip = property(lambda self: self[3][:4].upper() == "SKIP")


def parse_tap(text):
    """Returns (plan, results, diags): plan None without a plan line,
    results TapResults, diags the text of every '#' line."""
    plan, results, diags = None, [], []
    for line in text.splitlines():
        m = re.match(r"^1\.\.(\d+)", line)
        if m:
            plan = int(m.group(1))
            continue
        m = TAP_LINE.match(line)
        if m:
            results.append(TapResult(m.group(1) == "ok", int(m.group(2)), m.group(3).strip(),
                                     (m.group(4) or "").strip()))
            continue
        if line.startswith("#"):
            diags.append(line[1:].strip())
        if line.startswith("Bail out!"):
            results.append(TapResult(False, 0, line, ""))
    return plan, results, diags


# The self-test's checks of the legacy alignment check (CR0.AM, RFLAGS.AC=1,
# CPL3, a misaligned access), recognised by what they say, not by number.
LEGACY_AC = re.compile(r"\bAC=1\b.*\braises #AC\b")


def skip_disagrees(r):
    """For a skipped legacy #AC check: why vmm's own probe (which made the
    guest skip) is wrong, as the lab's acprobe of the same boot measured
    it, or None. Elsewhere nothing independent measured it."""
    ac = target().probes.get("acprobe", {}).get("out", "")
    if r.skip and LEGACY_AC.search(r.desc) and re.search(r"ac_flag=1 result=sigbus", ac):
        return (f"TAP test {r.num} ({r.desc}) skipped, but this CPU raises the legacy #AC "
                f"(lab-acprobe in this boot: {ac.strip()})")
    return None


def local_probes(vmm):
    """This machine's `vmm --host-info --json` probes ({} if vmm cannot say)."""
    try:
        return host_info(vmm)["kvm"]["probe"]
    except (Failure, KeyError, TypeError):
        return {}


def lacks(need, vmm=None):
    """Why the target lacks NEED (a --needs word of tests/differential/
    meson.build), as a probe in the same boot (the lab's) or of VMM on this
    machine measured it, or None (present, or not measured: then nothing is
    excused)."""
    if target().name == "local":
        if vmm is None or local_probes(vmm).get(need) is not False:
            return None
        return f"vmm --host-info on this machine: {need} false" + LOCAL_LACKS.get(need, "")
    probes = target().probes
    if need == "icebp":
        got = re.search(r"^icebp=(\w+)$", probes.get("icebpprobe", {}).get("out", ""), re.M)
        if got and got.group(1) != "sigtrap":
            return (f"the CPU raises {'#UD' if got.group(1) == 'sigill' else 'nothing'} for "
                    "ICEBP at CPL3, not #DB (lab-icebpprobe in this boot): the oracle is no real CPU")
        return None
    try:
        probe = json.loads(probes["host-info"]["out"])["kvm"]["probe"]
    except (KeyError, ValueError, TypeError):
        return None
    if probe.get(need) is not False:
        return None
    return {"hw_breakpoint": "vmm --host-info in this boot: hw_breakpoint false "
                             "(KVM_GUESTDBG_USE_HW_BP does not stop the guest: TCG arms no "
                             "breakpoint for a nested guest), so emulate cannot watch the "
                             "handlers of injected events and INT n (docs/design.md)",
            "guest_data_breakpoint_cpl0": "vmm --host-info in this boot: "
                             "guest_data_breakpoint_cpl0 false (the guest's own data "
                             "breakpoints do not fire while KVM single-steps it here)",
            "cs_write_gp": "vmm --host-info in this boot: cs_write_gp false (a write "
                           "through CS in compatibility mode completes where the SDM raises "
                           "#GP(0): QEMU's TCG checks no segment types), so the oracle is no "
                           "real CPU there",
            "intn_error_code": "vmm --host-info in this boot: intn_error_code false (INT n "
                               "through an IDT entry it cannot use raises #GP(vector * 16 + 2) "
                               "where the SDM says vector * 8 + 2: QEMU's TCG)",
            "lock_ud": "vmm --host-info in this boot: lock_ud false (a LOCK MOV to "
                       "memory completes where the SDM raises #UD: QEMU's TCG), so the "
                       "oracle is no real CPU there",
            "dr7_gd": "vmm --host-info in this boot: dr7_gd false (the CPU raises no #DB "
                      "for MOV DR with DR7.GD set: QEMU's TCG ignores GD), so the oracle "
                      "is no real CPU there",
            }.get(need, f"vmm --host-info in this boot: {need} false")


# What a probe measured missing means on a machine's own KVM.
LOCAL_LACKS = {
    "leave_long_mode": " (this KVM stops a guest that clears CR0.PG and EFER.LME and sets them "
                       "again, or that turns on paging outside IA-32e mode), so nothing runs "
                       "outside IA-32e mode here",
    "hw_breakpoint": " (KVM_GUESTDBG_USE_HW_BP does not stop the guest here)",
    "guest_data_breakpoint_cpl0": " (the guest's own data breakpoints do not fire while KVM "
                                  "single-steps it here)",
    "dr7_gd": " (this CPU ignores DR7.GD: a MOV DR with GD set raises no #DB here)",
    "cs_write_gp": " (this CPU writes through CS in compatibility mode instead of raising #GP)",
    "cpl0_events": " (this KVM stops the VM with its internal error at INT3 or #UD at CPL0 with "
                   "TF set, or at INT3 behind MOV SS: its instruction emulator runs the guest "
                   "there and cannot deliver them in 64-bit mode), so the case's oracle run "
                   "cannot run here",
    "movss_trap": " (the guest's single-step trap comes right after MOV SS here, where the "
                  "architecture holds it over the next instruction), so the case's oracle run "
                  "is no CPU there",
    "syscall_sysret": " (from CPL3 here, SYSCALL with EFER.SCE clear raises no #UD at itself, "
                      "or with TF set its handler's SYSRETQ does not come back), so the case's "
                      "oracle run is no CPU there",
    "split_fault": " (a locked access that faults on its second page writes its first here: "
                   "this KVM's instruction emulator runs CPL0 code), so the case's oracle run "
                   "is no CPU there",
    "singlestep_cpl3": " (this KVM cannot single-step CPL3 code: CPL0 code that follows a CPL3 "
                       "excursion without an exit in between runs unchecked, counted)",
    "cpl1": " (this KVM stops the VM with its internal error where a guest runs at CPL1: it "
            "knows CPL0 and CPL3 only), so the case's oracle run cannot run here",
}


def tap_failures(text):
    """What keeps text from being a complete, passing TAP run; and its diags.
    What the target's CPU cannot do the guest skips, told by vmm's probe:
    a skip that an independent probe contradicts is a failure too."""
    plan, results, diags = parse_tap(text)
    fails = []
    if plan is None:
        fails.append("no TAP plan line")
    elif plan != len(results) or plan == 0:
        fails.append(f"TAP plan says {plan} tests, {len(results)} reported")
    for r in results:
        if not r.ok:
            fails.append(f"TAP test {r.num} failed: {r.desc}")
        elif skip_disagrees(r):
            fails.append(skip_disagrees(r))
    return fails, diags


# ------------------------------------------------------------------ the host

@functools.lru_cache(maxsize=None)
def host_info(vmm):
    """vmm --host-info --json, parsed (run once per vmm and process: the
    difftest's oracle check, its CPL3-stepping check and lacks() share
    it); Failure if vmm cannot say. Read it, never change it."""
    r = run([vmm, "--host-info", "--json"], timeout=60, quiet=True)
    if r.hung or r.status != 0:
        raise Failure(f"vmm --host-info --json: exit status {r.status}: {r.err.strip()}")
    try:
        return json.loads(r.out)
    except ValueError as e:
        raise Failure(f"vmm --host-info --json is not JSON ({e}): {r.out[:200]!r}")


# ------------------------------------------------------------------ the case runner

class Ctx:
    """What a case gets: vmm, the guest image (or None), a temporary
    directory, and the host's --host-info (asked for on first use)."""

    def __init__(self, vmm, guest, tmp):
        self.vmm, self.guest, self.tmp = vmm, guest, tmp

    @functools.cached_property
    def hi(self):
        hi = host_info(self.vmm)
        print("host: mode %s, can deliver #AC: %s" % (hi["mode"], hi["can_deliver_ac"]))
        return hi


def report(fails):
    """Prints each failure; returns the exit status."""
    for f in fails:
        print("FAIL: " + f)
    return 1 if fails else 0


def case_main(cases, doc=None, argv=None, needs_kvm=True):
    """  SCRIPT --vmm V [--guest G] CASE [PARAMS...]

    Runs cases[CASE](ctx, *PARAMS), which returns a list of failures or
    raises Skip or Failure. Exits 0 when the list is empty, 1 with a FAIL
    line each, 77 on Skip or, if needs_kvm, without a usable KVM. With one
    case, CASE may be left out."""
    ap = argparse.ArgumentParser(description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vmm", required=True)
    ap.add_argument("--guest")
    ap.add_argument("case", choices=list(cases), nargs="?" if len(cases) == 1 else None,
                    default=next(iter(cases)))
    ap.add_argument("params", nargs="*")
    a = ap.parse_args(argv)
    why = needs_kvm and kvm_usable()
    if why:
        return skip(why)
    with tempfile.TemporaryDirectory(prefix="vmmtest-") as tmp:
        os.chmod(tmp, 0o755)
        try:
            fails = cases[a.case](Ctx(a.vmm, a.guest, tmp), *a.params)
        except Skip as e:
            return skip(e)
        except Failure as e:
            fails = [str(e)]
    return report(fails)

