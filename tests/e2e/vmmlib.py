"""What every script that runs vmm on this host shares: the /dev/kvm check
and skip (77), one launcher, the TAP parser, vmm --host-info, and one
case-runner main().

  r = run([vmm, "-q", image], timeout=60, sig=signal.SIGTERM, signal_after=1)
  r.status, r.out, r.err, r.elapsed, r.hung

The launcher bounds every run from outside: past its timeout the process is
killed, the run is marked hung and says so. start() is the same launcher
without the wait, for VMs that must run at once; its wait() gives the Run.
"""
import argparse
import functools
import json
import os
import re
import subprocess
import tempfile
import threading
import time

SKIP = 77


# ------------------------------------------------------------------ skipping

def kvm_usable():
    """None if /dev/kvm can be opened read-write, else why not."""
    try:
        fd = os.open("/dev/kvm", os.O_RDWR)
    except OSError as e:
        return f"/dev/kvm is not usable here ({e.strerror})"
    os.close(fd)
    return None


def skip(reason):
    """Says why and returns meson's skip status."""
    print(f"SKIP: {reason}")
    return SKIP


class Skip(Exception):
    """Raised by a case that cannot run here; case_main() turns it into 77."""


class Failure(Exception):
    """Raised where a case cannot go on; case_main() reports it as a failure."""


# ------------------------------------------------------------------ the launcher

class Run:
    """One finished process: status, output, timings and peak RSS."""
    cmd = ()
    pid = status = None
    out = err = ""
    elapsed = 0.0
    stop_elapsed = None     # from the signal to the exit
    hwm_kb = 0              # VmHWM, the peak RSS, at the last look before the exit
    rss_samples = ()        # (seconds, VmRSS kB) while it ran
    hung = False            # killed at the timeout


def proc_kb(pid, field):
    """VmRSS or VmHWM of a running process, in kB. (wait4's ru_maxrss is no
    use here: it still counts the forked Python from before the exec.)"""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


class Process:
    """A started process whose stdout and stderr are drained by threads, so
    that any number can run at once without filling a pipe.

    stdout_bytes: None reads all of stdout; 0 never reads it (a stalled
    reader: what the pipe holds is taken after the exit); N reads N bytes,
    then closes the pipe (a reader that goes away)."""

    def __init__(self, cmd, env=None, close_fds=(), stdout_bytes=None, quiet=False):
        self.cmd = list(cmd)
        if not quiet:
            print("$ " + " ".join(self.cmd) + "".join(f" {fd}>&-" for fd in close_fds),
                  flush=True)

        def close_in_child():
            # After Popen's dup2s: the child starts with these descriptors closed.
            for fd in close_fds:
                os.close(fd)

        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env,
                                     preexec_fn=close_in_child if close_fds else None)
        self.pid = self.proc.pid
        self.stdout_bytes = stdout_bytes
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

    def wait(self, timeout=120, sig=None, signal_after=1.0, sample_rss=False):
        """Sends sig signal_after seconds after the start, watches memory,
        kills the process timeout seconds after the start; returns the Run."""
        r = Run()
        r.cmd, r.pid = self.cmd, self.pid
        samples = []
        sent = None
        deadline = self.t0 + timeout
        status = None
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
            # Zombies keep /proc/PID/status but have no memory left: look first.
            hwm = proc_kb(self.pid, "VmHWM")
            if hwm:
                r.hwm_kb = hwm
            if sample_rss:
                kb = proc_kb(self.pid, "VmRSS")
                if kb:
                    samples.append((now - self.t0, kb))
            pid, wstatus = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                status = os.waitstatus_to_exitcode(wstatus)
                break
            time.sleep(0.02)
        end = time.monotonic()
        self.proc.returncode = status
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
        return r


def start(cmd, env=None, close_fds=(), stdout_bytes=None, quiet=False):
    """Starts cmd without waiting (see Process); .wait() gives its Run."""
    return Process(cmd, env, close_fds, stdout_bytes, quiet)


def run(cmd, timeout=120, sig=None, signal_after=1.0, env=None, close_fds=(),
        stdout_bytes=None, sample_rss=False, quiet=False):
    """Runs cmd to its end (or kills it at timeout); returns the Run."""
    return start(cmd, env, close_fds, stdout_bytes, quiet).wait(timeout, sig, signal_after,
                                                              sample_rss)


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


def tap_failures(text):
    """What keeps text from being a complete, passing TAP run; and its diags."""
    plan, results, diags = parse_tap(text)
    fails = []
    if plan is None:
        fails.append("no TAP plan line")
    elif plan != len(results) or plan == 0:
        fails.append(f"TAP plan says {plan} tests, {len(results)} reported")
    fails += [f"TAP test {r.num} failed: {r.desc}" for r in results if not r.ok]
    return fails, diags


# ------------------------------------------------------------------ the host

def host_info(vmm):
    """vmm --host-info --json, parsed; Failure if vmm cannot say."""
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


def case_main(cases, doc=None, argv=None):
    """  SCRIPT --vmm V [--guest G] CASE [PARAMS...]

    Runs cases[CASE](ctx, *PARAMS), which returns a list of failures or
    raises Skip or Failure. Exits 0 when the list is empty, 1 with a FAIL
    line each, 77 without a usable /dev/kvm or on Skip. With one case, CASE
    may be left out."""
    ap = argparse.ArgumentParser(description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vmm", required=True)
    ap.add_argument("--guest")
    ap.add_argument("case", choices=list(cases), nargs="?" if len(cases) == 1 else None,
                    default=next(iter(cases)))
    ap.add_argument("params", nargs="*")
    a = ap.parse_args(argv)
    why = kvm_usable()
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

