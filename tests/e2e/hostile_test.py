#!/usr/bin/env python3
"""Hostile guests: the self-test image run with "--append hostile=MODE"
(src/guest/hostile.c) misbehaves in one way, and vmm must end the way
docs/testing.md ("Hostile guests") says: the documented exit status and message, nothing
printed twice, its memory bounded, and the host unaffected afterwards (the
process and its threads gone, and a fresh self-test still passing).

  hostile_test.py --vmm build/vmm --guest build/guest.bin CASE [ARGS]

CASE is one of:
  triple-fault CPU        vCPU CPU of 2 loads an empty IDT and runs ud2: 66
  hang-cli                4 vCPUs spin with interrupts off: --timeout 1 gives 71
  msr-storm POLICY        every vCPU hammers the emulated MSRs; --stats agrees
  reserved-bits POLICY    every reserved bit of TEST_CTRL, writes to CORE_CAPABILITIES
  com1-flood              4 vCPUs flood COM1: exact bytes, no mixed lines, bounded RSS
  com1-flood-sigterm      SIGTERM during an endless flood: dies by it at once
  com1-flood-stalled      the same while nobody reads vmm's stdout
  com1-flood-closed       the reader closes vmm's stdout mid-flood: 0, one warning
  unmapped-memory [MEM]   MMIO beyond RAM and unknown ports: all-ones, warnings bounded
  exit-race KIND          4 vCPUs write the exit port at once (good, bad, mixed)
  unknown-mode            hostile=nonsense: the guest bails out with status 1
  split-lock-progress     emulate, --split-lock-watch=all,
                          --split-lock-ratelimit=1: 2 vCPUs split-lock
                          in a loop, a third that never does still finishes;
                          --stats delays are time actually waited, and every
                          split lock the guest counts was detected and emulated
Exits 0 on success, 1 on failure, 77 when /dev/kvm is unusable.
"""
import json
import os
import re
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmmlib import (REGS_LOST, Skip, case_main, kvm_on_svm, quiet_noise, run_vmm,  # noqa: E402
                    scaled, scaled_str, tap_failures, target)  # noqa: E402


def show(r, out_limit=4000):
    out = r.out if len(r.out) <= out_limit else (
        r.out[:out_limit // 2] + f"\n[... {len(r.out)} bytes in all ...]\n" + r.out[-out_limit // 2:])
    print(out + "--- stderr ---\n" + r.err, end="")
    print(f"--- status {r.status}, {r.elapsed:.2f} s, peak RSS {r.hwm_kb} kB")


def expect_status(r, want):
    if r.hung:
        return [f"vmm did not finish; killed (status {r.status})"]
    if r.status != want:
        return [f"exit status {r.status}, expected {want}"]
    return []


def expect_tap(r):
    return tap_failures(r.out)


def error_lines(err):
    return [l for l in err.splitlines() if l.startswith("vmm: error:")]


def left_behind(r):
    """Processes a run left behind: here, children of this script; in the
    lab, processes named vmm that were orphaned to L1's init (the agent
    starts every program as its child)."""
    t = target()
    parent = os.getpid() if t.name == "local" else 1
    kids = []
    for d in t.listdir("/proc") or []:
        if not d.isdigit():
            continue
        st = (t.read(f"/proc/{d}/stat") or b"").decode(errors="replace")
        if not st:
            continue
        name, rest = st.split("(", 1)[1].rsplit(")", 1)
        if int(rest.split()[1]) == parent and (t.name == "local" or name == "vmm"):
            kids.append(int(d))
    return kids


def host_unaffected(ctx, r):
    """After a hostile run: vmm and its threads are gone; a self-test still passes."""
    fails = []
    if target().read(f"/proc/{r.pid}/stat") is not None:
        fails.append(f"vmm pid {r.pid} still exists after it was reaped")
    kids = left_behind(r)
    if kids:
        fails.append(f"processes left behind: {kids}")
    s = run_vmm(ctx.vmm, ["-q", "-c", "2", "--timeout", scaled_str(60), ctx.guest])
    tap_fails, _ = expect_tap(s)
    if expect_status(s, 0) or tap_fails:
        show(s)
        fails.append(f"the self-test after it failed: status {s.status} {tap_fails[:3]}")
    else:
        print(f"host unaffected: vmm gone, no children, a self-test passed in {s.elapsed:.2f} s")
    return fails


def enumerated(ctx, policy):
    if policy == "emulate":
        return True
    if policy == "off":
        return False
    return ctx.hi["can_deliver_ac"]


def policy_supported(ctx, policy):
    """Only on depends on the host: it needs one that can deliver #AC."""
    if policy == "on":
        return ctx.hi["can_deliver_ac"]
    return True


# ------------------------------------------------------------------ cases

def case_triple_fault(ctx, cpu="0"):
    who = int(cpu)
    r = run_vmm(ctx.vmm, ["-q", "-c", "2", "--timeout", scaled_str(60), "-a",
                          f"hostile=triple-fault hostile.cpu={who}", ctx.guest])
    show(r)
    fails = expect_status(r, 80)
    m = re.search(rf"^# cpu {who}: empty IDT, then ud2 at (0x[0-9a-f]+)$", r.out, re.M)
    if not m:
        return fails + ["the guest did not say where its ud2 is"]
    rip = int(m.group(1), 16)
    errs = error_lines(r.err)
    if len(errs) != 1 or not re.match(rf"vmm: error: vCPU {who}: triple fault \(KVM_EXIT_SHUTDOWN\)", errs[0]):
        fails.append(f"want exactly one triple-fault error naming vCPU {who}, got {errs}")
    # KVM on AMD SVM resets the vCPU at a triple fault: vmm must say so, not dump the reset state.
    want = ((rf"^vmm: vCPU {who} {REGS_LOST}",) if kvm_on_svm() else
            (rf"^vmm: vCPU {who} registers:$", rf"^vmm:   RIP 0x{rip:016x} ",
             r"IDT 0x0/0x0$", r"^vmm:   bytes at RIP: 0f 0b"))
    for rx in want:
        if len(re.findall(rx, r.err, re.M)) != 1:
            fails.append(f"stderr does not have /{rx}/ exactly once")
    if len(re.findall(r"^vmm: vCPU \d+ registers", r.err, re.M)) != 1:
        fails.append("more than one register dump")
    return fails + host_unaffected(ctx, r)


def case_hang_cli(ctx):
    cpus = 4
    r = run_vmm(ctx.vmm, ["-q", "-c", str(cpus), "--timeout", "1", "-a", "hostile=hang-cli",
                          ctx.guest], timeout=scaled(30))
    show(r)
    fails = expect_status(r, 85)
    if r.elapsed > scaled(10):
        fails.append(f"--timeout 1 took {r.elapsed:.1f} s to stop the VM")
    errs = error_lines(r.err)
    if errs != ["vmm: error: --timeout of 1 s expired; stopping the VM (a guest spinning or waiting with interrupts off?)"]:
        fails.append(f"want one --timeout error line, got {errs}")
    for i in range(cpus):
        m = re.search(rf"^# cpu {i}: interrupts off, spinning at (0x[0-9a-f]+)$", r.out, re.M)
        if not m:
            fails.append(f"vCPU {i} never reached its loop")
            continue
        if len(re.findall(rf"^vmm: vCPU {i} was at RIP {m.group(1)}$", r.err, re.M)) != 1:
            fails.append(f"stderr does not name vCPU {i}'s RIP {m.group(1)} exactly once")
    return fails + host_unaffected(ctx, r)


def storm_want(n, en):
    """--stats of one vCPU after n rounds (plus its first CORE_CAPABILITIES read)."""
    return {"msr": {"test_ctrl": {"reads": n, "writes": 2 * n},
                    "core_capabilities": {"reads": n + 1, "writes": n}},
            "gp_injected": n if en else 4 * n,
            "x86_rdmsr": 2 * n + 1, "x86_wrmsr": 3 * n}


def check_stats(path, policy, en, wants):
    with open(path) as f:
        st = json.load(f)
    fails = []
    head = {k: st["split_lock"][k] for k in st["split_lock"] if k != "host_profile"}
    # Under emulate each vCPU is stepped only while its guest has bit 29 set
    # (the default): the storms toggle it, starting and stopping the stepping.
    want = {"policy": policy, "enumerated": en, **({"watch": "armed"} if policy == "emulate" else {})}
    if head != want or "host_profile" not in st["split_lock"]:
        fails.append(f"--stats header {st['split_lock']}")
    indices = [v["index"] for v in st["vcpus"]]
    if indices != list(range(len(wants))):
        fails.append(f"--stats has vCPUs {indices}, expected {list(range(len(wants)))}")
    for v, want in zip(st["vcpus"], wants):
        got = {"msr": v["msr"], "gp_injected": v["gp_injected"],
               "x86_rdmsr": v["exits"].get("x86_rdmsr", 0),
               "x86_wrmsr": v["exits"].get("x86_wrmsr", 0)}
        if got != want:
            fails.append(f"vCPU {v['index']} --stats {got}, expected {want}")
        if v["ac_injected"] or v["split_lock_stops"]:
            fails.append(f"vCPU {v['index']} has #AC or split-lock stops: {v}")
    return fails


def run_msr_guest(ctx, policy, cpus, append, en, want_per_vcpu):
    """Runs a hostile MSR guest with --stats; checks status, TAP, sld= and the counts."""
    path = os.path.join(ctx.tmp, "stats.json")
    r = run_vmm(ctx.vmm, ["-q", "-c", str(cpus), "--timeout", scaled_str(100), "--stats=" + path,
                          "--split-lock=" + policy, "-a", append, ctx.guest])
    show(r)
    fails = expect_status(r, 0)
    tap_fails, diags = expect_tap(r)
    fails += tap_fails
    want = "sld=enumerated" if en else "sld=not-enumerated"
    if want not in diags:
        fails.append(f"the guest did not report {want}")
    if os.path.exists(path):
        fails += check_stats(path, policy, en, want_per_vcpu)
    else:
        fails.append("no --stats file")
    return r, fails


def case_msr_storm(ctx, policy):
    if not policy_supported(ctx, policy):
        raise Skip(f"--split-lock={policy} is not available here")
    en = enumerated(ctx, policy)
    # Emulate single-steps every CPL0 instruction: fewer rounds, same checks.
    cpus, iters = (2, 100) if policy == "emulate" else (4, 500)
    r, fails = run_msr_guest(ctx, policy, cpus, f"hostile=msr-storm hostile.iters={iters}",
                             en, [storm_want(iters, en)] * cpus)
    noise = quiet_noise(r.err)
    if noise:
        fails.append(f"stderr is not empty under -q: {noise[:200]}")
    return fails + host_unaffected(ctx, r)


def case_reserved_bits(ctx, policy):
    if not policy_supported(ctx, policy):
        raise Skip(f"--split-lock={policy} is not available here")
    en = enumerated(ctx, policy)
    # 64 single bits, 64 combinations, one 0; 68 CORE_CAPABILITIES values.
    tc_w, tc_r, cc_w, cc_r = 129, 128, 68, 69
    gp = (tc_w - 2 + cc_w) if en else (tc_w + tc_r + cc_w)
    want0 = {"msr": {"test_ctrl": {"reads": tc_r, "writes": tc_w},
                     "core_capabilities": {"reads": cc_r, "writes": cc_w}},
             "gp_injected": gp, "x86_rdmsr": tc_r + cc_r, "x86_wrmsr": tc_w + cc_w}
    idle = {"msr": {"test_ctrl": {"reads": 0, "writes": 0},
                    "core_capabilities": {"reads": 0, "writes": 0}},
            "gp_injected": 0, "x86_rdmsr": 0, "x86_wrmsr": 0}
    r, fails = run_msr_guest(ctx, policy, 2, "hostile=reserved-bits", en, [want0, idle])
    return fails + host_unaffected(ctx, r)


LETTER_LINE = re.compile(r"^([a-z])\1*$")


def flood_check(r, cpus):
    """Every byte a vCPU sent is there exactly once, and no line mixes two vCPUs."""
    fails = []
    sent = {}
    for m in re.finditer(r"^# com1-flood: cpu (\d+) sent (\d+) bytes: (\d+) letters '([a-z])'",
                         r.out, re.M):
        sent[m.group(4)] = int(m.group(3))
    if len(sent) != cpus:
        return [f"the guest reported {len(sent)} of {cpus} vCPUs' totals"]
    got = dict.fromkeys(sent, 0)
    longest = dict.fromkeys(sent, 0)
    mixed = []
    for line in r.out.split("\n"):
        if not line or line.startswith(("#", "TAP version", "ok ", "1..")):
            continue
        if not LETTER_LINE.match(line):
            mixed.append(line)
            continue
        got[line[0]] += len(line)
        longest[line[0]] = max(longest[line[0]], len(line))
    if mixed:
        fails.append(f"{len(mixed)} lines mix vCPUs or carry stray bytes, e.g. {mixed[0][:80]!r}...")
    for letter, n in sent.items():
        if got[letter] != n:
            fails.append(f"'{letter}': the guest sent {n} letters, stdout has {got[letter]}")
    # Odd vCPUs write lines of at most 4000 bytes: a longer one would be two joined.
    for i in range(1, cpus, 2):
        letter = chr(ord("a") + i)
        if longest[letter] > 4000:
            fails.append(f"vCPU {i}'s longest line is {longest[letter]} bytes; it wrote none above 4000")
    print("flood: letters per vCPU " + ", ".join(f"{k}={v}" for k, v in sorted(got.items())) +
          "; longest lines " + ", ".join(f"{k}={v}" for k, v in sorted(longest.items())))
    return fails


def case_com1_flood(ctx):
    cpus, per_cpu = 4, 256 << 10
    args = ["-q", "-c", str(cpus), "--timeout", scaled_str(150), "-a"]
    base = run_vmm(ctx.vmm, args + ["hostile=com1-flood hostile.bytes=16K", ctx.guest],
                   sample_rss=True)
    fails = expect_status(base, 0)
    r = run_vmm(ctx.vmm, args + [f"hostile=com1-flood hostile.bytes={per_cpu}", ctx.guest],
                timeout=scaled(170), sample_rss=True)
    show(r)
    fails += expect_status(r, 0)
    fails += expect_tap(r)[0]
    fails += flood_check(r, cpus)
    total = len(r.out)
    # Guest RAM is left out: the guest's pages, which khugepaged may fold
    # into a 2 MiB page during a long run, are not vmm's memory.
    growth = r.own_peak_kb - base.own_peak_kb
    print(f"flood: {total} bytes of output in {r.elapsed:.1f} s ({total / r.elapsed / 1024:.0f} KiB/s); "
          f"peak RSS outside guest RAM {r.own_peak_kb} kB against {base.own_peak_kb} kB "
          f"for a 16 KiB flood (+{growth} kB; VmHWM {r.hwm_kb} and {base.hwm_kb} kB)")
    if total < 1 << 20:
        fails.append(f"only {total} bytes of output, want a megabyte at least")
    if not base.own_peak_kb or not r.own_peak_kb:
        fails.append("no RSS sample was taken while vmm ran")
    # Holding on to the flood would cost its size (over 1 MiB); vmm needs a
    # 1 KiB line buffer per vCPU, so its peak must stay where a tiny flood's is.
    elif growth > 512:
        fails.append(f"peak RSS outside guest RAM grew by {growth} kB for {total} bytes "
                     "of console output (limit 512 kB)")
    noise = quiet_noise(r.err)
    if noise:
        fails.append(f"stderr is not empty under -q: {noise[:200]}")
    return fails + host_unaffected(ctx, r)


def flood_forever(ctx, read_stdout):
    r = run_vmm(ctx.vmm, ["-c", "2", "-a", "hostile=com1-flood hostile.bytes=0", ctx.guest],
                timeout=scaled(60), sig=signal.SIGTERM, signal_after=scaled(2.0),
                stdout_bytes=None if read_stdout else 0, sample_rss=True,
                # A pipe of one page: full within the first second on any target.
                pipe_size=None if read_stdout else 4096)
    show(r, out_limit=1000)
    fails = expect_status(r, -signal.SIGTERM)
    if not re.search(r"^vmm: stopping the VM on Terminated$", r.err, re.M):
        fails.append("no 'stopping the VM on Terminated' line")
    if len(r.err.splitlines()) != len(set(r.err.splitlines())):
        fails.append("stderr repeats a line")
    # RSS once the flood runs (after 0.5 s) against the last sample before the stop.
    s = [kb for t, kb in r.rss_samples if scaled(0.5) <= t <= scaled(2.0)]
    if len(s) >= 2:
        print(f"flood: RSS {s[0]} kB at 0.5 s, {s[-1]} kB at the stop ({len(r.out)} bytes out)")
        if s[-1] - s[0] > 512:
            fails.append(f"RSS grew from {s[0]} to {s[-1]} kB during the flood")
    else:
        fails.append("too few RSS samples")
    return r, fails


def case_com1_flood_sigterm(ctx):
    r, fails = flood_forever(ctx, read_stdout=True)
    if r.stop_elapsed is None or r.stop_elapsed > scaled(1.0):
        fails.append(f"SIGTERM took {r.stop_elapsed} s to stop vmm (want under {scaled(1.0)} s)")
    if not re.search(r"^aaaa", r.out, re.M) or not re.search(r"^bbbb", r.out, re.M):
        fails.append("both vCPUs' floods should have reached stdout")
    return fails + host_unaffected(ctx, r)


def case_com1_flood_stalled(ctx):
    # Nobody reads stdout: vCPUs block on the full pipe. vmm waits 1 s for
    # the reader once stopping (SERIAL_STOP_WAIT_MS), then drops the rest.
    r, fails = flood_forever(ctx, read_stdout=False)
    if r.stop_elapsed is None or r.stop_elapsed > scaled(3.0):
        fails.append(f"SIGTERM took {r.stop_elapsed} s to stop vmm with a stalled reader "
                     f"(want under {scaled(3.0)} s)")
    if not re.search(r"^vmm: warning: the guest console's reader has not taken any output for 1000 ms while the VM stops; dropping the rest$",
                     r.err, re.M):
        fails.append("no warning that console output was dropped")
    return fails + host_unaffected(ctx, r)


def case_com1_flood_closed(ctx):
    """The reader goes away mid-flood: vmm says so once and runs the guest to its end."""
    r = run_vmm(ctx.vmm, ["-q", "-c", "2", "--timeout", scaled_str(100), "-a",
                          "hostile=com1-flood hostile.bytes=64K", ctx.guest],
                timeout=scaled(100), stdout_bytes=4096)
    show(r)
    if r.hung:
        return ["vmm did not finish after its reader went away"]
    fails = expect_status(r, 0)
    want = "vmm: warning: writing guest console output failed: Broken pipe; dropping the rest"
    if r.err.splitlines() != [want]:
        fails.append(f"stderr should be exactly one line '{want}'")
    return fails + host_unaffected(ctx, r)


def case_unmapped_memory(ctx, mem=None):
    extra = ["-m", mem] if mem else []
    r = run_vmm(ctx.vmm, ["-q", "-c", "2", "--timeout", scaled_str(60), *extra, "-a",
                          "hostile=unmapped-memory", ctx.guest])
    show(r)
    fails = expect_status(r, 0)
    fails += expect_tap(r)[0]
    lines = r.err.splitlines()
    mmio = [l for l in lines if "where there is no RAM or device" in l]
    ports = [l for l in lines if "at unknown port" in l]
    exitp = [l for l in lines if "at the exit port 0xf4 ignored" in l]
    if len(mmio) != 8:
        fails.append(f"{len(mmio)} MMIO warnings; vmm gives at most 8 per VM and the guest made dozens of accesses")
    got = sorted(re.search(r"unknown port (0x[0-9a-f]+)", l).group(1) for l in ports)
    want = sorted(["0x61", "0x70", "0x80", "0xcf8", "0xcfc", "0xffff"])
    if got != want:
        fails.append(f"unknown-port warnings for {got}, want one each for {want}")
    if len(exitp) != 1:
        fails.append(f"{len(exitp)} warnings about the exit port, want 1")
    others = [l for l in lines if l not in mmio + ports + exitp]
    if others:
        fails.append(f"unexpected stderr: {others}")
    return fails + host_unaffected(ctx, r)


def case_exit_race(ctx, kind, rounds=10, cpus=4):
    fails = []
    seen = set()
    r = None
    for k in range(rounds):
        r = run_vmm(ctx.vmm, ["-q", "-c", str(cpus), "--timeout", scaled_str(60), "-a",
                              f"hostile=exit-race hostile.status={kind}", ctx.guest])
        planned = {int(i): int(s) for i, s in
                   re.findall(r"^# cpu (\d+) will write (\d+)$", r.out, re.M)}
        bad = [l for l in r.err.splitlines() if l.strip()]
        why = []
        if sorted(planned) != list(range(cpus)):
            why.append(f"vCPUs that reported their status: {sorted(planned)}")
        if len(r.out.splitlines()) != len(set(r.out.splitlines())):
            why.append("stdout repeats a line")
        if r.status in planned.values() and r.status <= 63:
            if bad:
                why.append(f"status {r.status} with stderr {bad}")
        elif r.status == 86:
            m = [re.match(r"vmm: warning: vCPU (\d+) wrote exit status (\d+) to port 0xf4; guests may use 0-63, so vmm exits with 86$", l)
                 for l in bad]
            if len(bad) != 1 or not m[0] or planned.get(int(m[0].group(1))) != int(m[0].group(2)):
                why.append(f"status 86 needs exactly one line naming a vCPU and the status it wrote, got {bad}")
        else:
            why.append(f"exit status {r.status} is none of the written ones {sorted(planned.values())}")
        seen.add(r.status)
        if why:
            show(r)
            fails += [f"round {k}: {w}" for w in why]
    print(f"exit-race {kind}: {rounds} rounds, statuses seen {sorted(seen)}")
    if kind == "bad" and seen != {86}:
        fails.append(f"bad statuses must all end in 86, saw {sorted(seen)}")
    return fails + host_unaffected(ctx, r)


def case_unknown_mode(ctx):
    r = run_vmm(ctx.vmm, ["-q", "-c", "2", "--timeout", scaled_str(60), "-a", "hostile=nonsense", ctx.guest])
    show(r)
    fails = expect_status(r, 1)
    if not re.search(r"^Bail out! hostile=nonsense: no such mode$", r.out, re.M):
        fails.append("no bail-out line for the unknown mode")
    return fails + host_unaffected(ctx, r)


def case_split_lock_progress(ctx):
    """A vCPU waiting out the ratelimit must not hold up the others."""
    path = os.path.join(ctx.tmp, "stats.json")
    r = run_vmm(ctx.vmm, ["-q", "-c", "3", "--timeout", scaled_str(30), "--split-lock=emulate",
                          "--split-lock-watch=all", "--split-lock-ratelimit=1", "--stats=" + path,
                          "-a", "hostile=split-lock-progress", ctx.guest], timeout=scaled(60))
    show(r)
    fails = expect_status(r, 0)
    tap_fails, diags = expect_tap(r)
    fails += tap_fails
    # At 1 split lock a second, its 30000 iterations (about 1 s
    # unhindered here) must not span more than 6 of them. Held up by
    # the others' ratelimit waits, as before the fix, they spanned 15.
    during = [int(d.split(": ")[1]) for d in diags
              if d.startswith("split locks while vCPU 0 counted: ")]
    if len(during) != 1:
        fails.append(f"vCPU 0 did not say how many split locks its count spanned: {during}")
    elif target().time_scale == 1 and during[0] > 6:
        fails.append(f"vCPU 0, which never split-locks, was held up by the others' "
                     f"ratelimit waits: split locks during its count {during}")
    elif target().time_scale != 1:
        # Under TCG, vCPU 0's stepped count takes minutes, not 1 s: the
        # bound says nothing there (docs/lab.md).
        print(f"not judged on {target().label}: {during[0]} split locks during vCPU 0's count")
    st = None
    if os.path.exists(path):
        with open(path) as f:
            st = json.load(f)
    else:
        fails.append("no --stats file")
    if st:
        indices = [v["index"] for v in st["vcpus"]]
        if indices != [0, 1, 2]:
            fails.append(f"--stats has vCPUs {indices}, want [0, 1, 2]")
        for v in st["vcpus"]:
            waited = v["split_lock_delay_ns"] / 1e9
            print(f"vCPU {v['index']}: {v['split_locks_emulated']} emulated, "
                  f"{v['split_lock_delays']} delays, {waited:.3f} s waited")
            # Measured from outside, r.elapsed includes vmm's start-up and exit.
            if waited > r.elapsed:
                fails.append(f"vCPU {v['index']} reports {waited:.3f} s of ratelimit waits "
                             f"in a run of {r.elapsed:.3f} s")
        lockers = st["vcpus"][1:]
        if sum(v["split_lock_delays"] for v in lockers) < 1:
            fails.append("the ratelimit never delayed the split-locking vCPUs")
        if st["vcpus"][0]["split_locks_detected"]:
            fails.append("vCPU 0 never split-locks, but --stats says it did")
        # The others stop before vCPU 0 ends the VM and it counts what they
        # made, each at CPL0 with TEST_CTRL clear: every one seen and emulated.
        made = [int(d.split("=", 1)[1]) for d in diags if d.startswith("split_locks_made.cpl0=")]
        detected = sum(v["split_locks_detected"] for v in lockers)
        emulated = sum(v["split_locks_emulated"] for v in lockers)
        print(f"split locks: the guest made {made}; --stats: {detected} detected, "
              f"{emulated} emulated")
        if len(made) != 1:
            fails.append("the guest did not say how many split locks its vCPUs made "
                         "(split_locks_made.cpl0=N once)")
        elif detected != made[0] or emulated != made[0]:
            fails.append(f"vCPUs 1.. made {made[0]} split locks; --stats says {detected} "
                         f"detected and {emulated} emulated: want exactly {made[0]} of each")
    return fails + host_unaffected(ctx, r)


CASES = {
    "triple-fault": case_triple_fault,
    "hang-cli": case_hang_cli,
    "msr-storm": case_msr_storm,
    "reserved-bits": case_reserved_bits,
    "com1-flood": case_com1_flood,
    "com1-flood-sigterm": case_com1_flood_sigterm,
    "com1-flood-stalled": case_com1_flood_stalled,
    "com1-flood-closed": case_com1_flood_closed,
    "unmapped-memory": case_unmapped_memory,
    "exit-race": case_exit_race,
    "unknown-mode": case_unknown_mode,
    "split-lock-progress": case_split_lock_progress,
}


if __name__ == "__main__":
    sys.exit(case_main(CASES, __doc__))
