#!/usr/bin/env python3
"""tests/linux/linux_test.py's judges, on made-up guest output and --stats:
what they must pass and what they must fail. No VM runs here."""
import contextlib
import io
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "linux"))
import linux_test as lt  # noqa: E402

GOOD = ("VMMTEST INIT uptime=2.3 kernel=6.1.0\nVMMTEST CPUS online=2 list=0-1\n"
        'SPLITLOCK cpus=2 ops=1000 done=2000 value=2000 ok=1 sigbus=0 vendor=AuthenticAMD '
        'hypervisor=1 cpuid_7_edx30=0 cpu_flag=0 kernel_lines=0 kernel_traps=0 kernel=""\n'
        f"VMMTEST READY\n{lt.TYPED}\nVMMTEST ECHO <{lt.TYPED}>\n")


def host(step3=False, cpuid=False):
    return {"can_deliver_ac": False,
            "kvm": {"probe": {"singlestep_cpl3": step3, "cpuid_7_edx30_reaches_guest": cpuid}}}


def sl(text):
    return lt.parse_fields(text.split("SPLITLOCK ", 1)[1].splitlines()[0])


def stats_fails(policy, watch, hi, detected=0, steps=0, unchecked=0, err="", armed=False):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"vcpus": [{"index": i, "split_locks_detected": detected // 2,
                              "single_steps": steps // 2, "unchecked_runs": unchecked // 2}
                             for i in range(2)]}, f)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            return lt.stats_failures(policy, watch, hi, f.name, err, armed=armed)
    finally:
        os.unlink(f.name)


def main():
    bad = []

    def expect(name, fails, ok):
        if bool(fails) == ok:
            bad.append(f"{name}: {'failed' if ok else 'passed'}: {fails}")

    expect("console: a good boot", lt.console_failures(GOOD), True)
    expect("console: no /init", lt.console_failures(GOOD.replace("VMMTEST INIT", "x")), False)
    expect("console: 1 CPU", lt.console_failures(GOOD.replace("online=2", "online=1")), False)
    expect("console: the tty's echo alone",
           lt.console_failures(GOOD.replace(f"VMMTEST ECHO <{lt.TYPED}>", "VMMTEST ECHO <>")), False)
    hi = host()
    expect("program: all done, not enumerated", lt.program_failures("inherit", hi, False, sl(GOOD)), True)
    expect("program: emulate enumerates, AMD does not arm",
           lt.program_failures("emulate", hi, True, sl(GOOD)), True)
    for field, value in (("done=2000", "done=1999"), ("value=2000", "value=1999"),
                         ("ok=1", "ok=0"), ("sigbus=0", "sigbus=1"), ("cpu_flag=0", "cpu_flag=1"),
                         ("kernel_lines=0", "kernel_lines=1"), ("cpus=2", "cpus=1")):
        expect(f"program: {value}", lt.program_failures("off", hi, False,
                                                        sl(GOOD.replace(field, value))), False)
    expect("program: CPUID reaches the guest, emulate, bit clear",
           lt.program_failures("emulate", host(cpuid=True), True, sl(GOOD)), False)
    expect("program: CPUID reaches the guest, off, bit clear",
           lt.program_failures("off", host(cpuid=True), False, sl(GOOD)), True)
    expect("stats: inherit, nothing", stats_fails("inherit", None, hi), True)
    expect("stats: off, detected", stats_fails("off", None, hi, detected=2), False)
    expect("stats: emulate unarmed, no steps", stats_fails("emulate", None, hi), True)
    expect("stats: emulate unarmed, stepped", stats_fails("emulate", None, hi, steps=10), False)
    expect("stats: emulate, Linux armed #AC, stepped",
           stats_fails("emulate", None, hi, steps=10, armed=True), True)
    expect("stats: watch all, no CPL3 step, unchecked",
           stats_fails("emulate", "all", hi, steps=10, unchecked=4), True)
    expect("stats: watch all, no CPL3 step, nothing unchecked",
           stats_fails("emulate", "all", hi, steps=10), False)
    lab = host(step3=True)
    expect("stats: watch all, CPL3 stepped, all seen",
           stats_fails("emulate", "all", lab, detected=2000, err="vmm: split lock at RIP 0x1"), True)
    expect("stats: watch all, CPL3 stepped, some unseen",
           stats_fails("emulate", "all", lab, detected=1000, err="vmm: split lock at RIP 0x1"),
           False)
    expect("stats: watch all, CPL3 stepped, no warning",
           stats_fails("emulate", "all", lab, detected=2000), False)
    with contextlib.redirect_stdout(io.StringIO()):
        cpus = [lt.guest_cpus({"kvm": {"probe": {"enter_long_mode": v}}}) for v in (True, None, False)]
    if cpus != [lt.CPUS, lt.CPUS, 1]:
        bad.append(f"guest_cpus: {cpus} for enter_long_mode true, unprobed, false; want "
                   f"{[lt.CPUS, lt.CPUS, 1]}")
    expect("console: 1 CPU where 1 was asked for",
           lt.console_failures(GOOD.replace("online=2", "online=1"), 1), True)
    for b in bad:
        print("FAIL: " + b)
    print(f"{'FAIL' if bad else 'ok'}: linux_test.py's judges")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
