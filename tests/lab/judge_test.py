#!/usr/bin/env python3
"""The lab suite's judges (lab_test.py) on made-up lab output, no QEMU: what
suite.sh prints is parsed into cases, and each verdict follows from the
guest's TAP, host-info and the probes. Run by `meson test --suite unit`."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lab_test  # noqa: E402

HI = {"mode": "none", "can_deliver_ac": False,
      "kvm": {"available": True, "caps": {"user_space_msr": 1, "msr_filter": 1, "vcpu_events": 1},
              "probe": {"cpuid_7_edx30_reaches_guest": True, "singlestep_cpl0": True,
                        "singlestep_cpl3": True, "error": None}}}
AC_LINE = "misaligned load at CPL3 with AC=1 raises #AC (vector -1, error 0x0)"


def selftest_out(enumerated, extra=()):
    lines = ["TAP version 13", "ok 1 - boots", f"not ok 2 - {AC_LINE}", *extra,
             "# cpuid.7.0.edx[30]=1",
             "# core_capabilities=" + ("0x20" if enumerated else "0x0"),
             "# sld=" + ("enumerated" if enumerated else "not-enumerated"),
             f"1..{2 + len(extra)}"]
    return "\n".join(lines) + "\n"


def framed(ac_result, vm_rc, vm_out, vm_err, stats=None, policy="off"):
    stats = stats or {"vcpus": [{"split_locks_detected": 0, "single_steps": 0,
                                 "split_locks_emulated": 0}]}
    return "".join([
        "@@CASE host-info 1.0\n@@RC hi 0 1.1\n@@PART hi.stdout\n", json.dumps(HI), "\n\n",
        "@@PART hi.stderr\n\n@@END host-info 1.2\n",
        "@@CASE probe-ac 1.3\n@@RC ac 0 1.4\n@@PART ac.stdout\n", ac_result, "\n\n",
        "@@END probe-ac 1.5\n",
        f"@@CASE selftest-{policy}-1cpu 2.0\n@@RC vm {vm_rc} 3.0 2.0\n@@PART vm.stdout\n", vm_out,
        "\n@@PART vm.stderr\n", vm_err, "\n@@PART vm.stats\n", json.dumps(stats), "\n\n",
        f"@@END selftest-{policy}-1cpu 3.1\n"])


def verdict(text, name):
    r = {"attempts": [{"output": text, "cases_done": list(lab_test.parse_output(text))}]}
    r["cases"] = lab_test.cases_of(r)
    return lab_test.judge(r, name)


def main():
    checks = []
    off_err = "vmm: split-lock detection: off, not enumerated to the guest (as asked)\n"
    no_ac = "ac_flag=1 result=none value=0x5040302"
    has_ac = "ac_flag=1 result=sigbus si_code=1"
    # TCG lacks #AC: the legacy #AC check is left out, the rest passes.
    fails, _ = verdict(framed(no_ac, 1, selftest_out(False), off_err), "selftest-off-1cpu")
    checks.append(("legacy #AC not counted where the probe found none", fails == []))
    # A CPU with #AC: the same failing line is a failure.
    fails, _ = verdict(framed(has_ac, 1, selftest_out(False), off_err), "selftest-off-1cpu")
    checks.append(("legacy #AC counted where the probe saw SIGBUS", any("not ok 2" in f for f in fails)))
    # Any other failing line fails, whatever the probe says.
    fails, _ = verdict(framed(no_ac, 1, selftest_out(False, ["not ok 3 - something else"]), off_err),
                       "selftest-off-1cpu")
    checks.append(("another not ok fails", any("not ok 3" in f for f in fails)))
    # A skip that host-info contradicts fails.
    skip = "ok 3 - CPL3 split lock # SKIP this host's KVM cannot single-step CPL3"
    fails, _ = verdict(framed(no_ac, 1, selftest_out(False, [skip]), off_err), "selftest-off-1cpu")
    checks.append(("a skip contradicting host-info fails", any("single-steps CPL3" in f for f in fails)))
    # Truncated TAP (no plan) fails.
    fails, _ = verdict(framed(no_ac, 71, "TAP version 13\nok 1 - boots\n", off_err), "selftest-off-1cpu")
    checks.append(("incomplete TAP fails", any("TAP incomplete" in f for f in fails)))
    # The probe's verdicts.
    _, skip_reason = verdict(framed(no_ac, 0, "", ""), "probe-ac")
    checks.append(("probe-ac skips with the measured reason", skip_reason and "no SIGBUS" in skip_reason))
    fails, skip_reason = verdict(framed(has_ac, 0, "", ""), "probe-ac")
    checks.append(("probe-ac passes where #AC arrives", fails == [] and skip_reason is None))
    # emulate with no split lock detected fails even if TAP were clean.
    em_err = "vmm: split-lock detection: emulate, enumerated to the guest: ...\n"
    fails, _ = verdict(framed(no_ac, 1, selftest_out(True), em_err, policy="emulate"),
                       "selftest-emulate-1cpu")
    checks.append(("emulate with 0 split locks detected fails", any("0 split locks" in f for f in fails)))
    # on, refused as it must be where the CPU cannot deliver #AC.
    on_err = "vmm: error: --split-lock=on cannot be honoured: no split_lock_detect\n"
    fails, _ = verdict(framed(no_ac, 78, "", on_err, policy="on"), "selftest-on-1cpu")
    checks.append(("on refused with exit 78 passes", fails == []))
    fails, _ = verdict(framed(no_ac, 0, selftest_out(True), "", policy="on"), "selftest-on-1cpu")
    checks.append(("on running where it must be refused fails", fails != []))

    # Differential cases: agreement passes; a divergence fails, or skips only
    # where a feature the case --needs is measured missing in this boot.
    def diff(name, ref, emu, hwbp, icebp="sigtrap"):
        hi = json.loads(json.dumps(HI))
        hi["kvm"]["probe"].update(hw_breakpoint=hwbp, guest_data_breakpoint_cpl0=hwbp)
        runs = "".join(f"@@RC {p} {st} 5.0 4.0\n@@PART {p}.stdout\n{out}\n@@PART {p}.stderr\n\n"
                       f"@@PART {p}.stats\n\n" for p, (st, out) in
                       (("inherit", ref), ("emulate", emu)))
        text = ("@@CASE host-info 1.0\n@@RC hi 0 1.1\n@@PART hi.stdout\n" + json.dumps(hi) +
                "\n\n@@END host-info 1.2\n@@CASE probe-icebp 1.3\n@@RC icebp 0 1.4\n"
                f"@@PART icebp.stdout\nicebp={icebp}\n\n@@END probe-icebp 1.5\n"
                f"@@CASE diff-{name} 4.0\n{runs}@@END diff-{name} 6.0\n")
        return verdict(text, "diff-" + name)
    same, other = (0, "#BP at 0x1000\nok\n"), (0, "#BP at 0x1001\nok\n")
    checks.append(("diff: agreement passes", diff("step-int3-cpl3", same, same, False) == ([], None)))
    fails, why = diff("step-tf-cpl0", same, other, False)
    checks.append(("diff: a divergence without --needs fails", fails and why is None))
    fails, why = diff("step-int3-cpl3", same, other, True)
    checks.append(("diff: a divergence fails where the needed probe says present", fails != []))
    fails, why = diff("step-int3-cpl3", same, other, False)
    checks.append(("diff: a divergence skips where hw_breakpoint is measured missing",
                   fails == [] and "hw_breakpoint false" in (why or "")))
    fails, why = diff("step-icebp-cpl3", same, other, True, icebp="sigill")
    checks.append(("diff: ICEBP measured #UD skips", fails == [] and "#UD" in (why or "")))
    fails, why = diff("step-hlt-all-halted", (84, ""), (84, ""), True)
    checks.append(("diff: the case's --status from meson.build is used", fails == []))
    _, why = verdict("@@CASE probe-icebp 1.3\n@@RC icebp 0 1.4\n@@PART icebp.stdout\n"
                     "icebp=sigill\n\n@@END probe-icebp 1.5\n", "probe-icebp")
    checks.append(("probe-icebp skips on SIGILL", "SIGILL" in (why or "")))

    names = list(lab_test.CASES)
    parts = lab_test.shards(names, 2)
    rest = [x for p in parts for x in p if x not in lab_test.PROBES]
    loads = [sum(lab_test.cost(x) for x in p if x not in lab_test.PROBES) for p in parts]
    checks.append(("shards: every case once, the probes first in each boot, in the suite's order",
                   len(parts) == 2 and sorted(rest) == sorted(x for x in names if x not in lab_test.PROBES)
                   and all(p[:len(lab_test.PROBES)] == lab_test.PROBES for p in parts)
                   and all(p == [x for x in names if x in p] for p in parts)))
    checks.append(("shards: balanced by cost", max(loads) - min(loads) <= 30))
    checks.append(("shards: one boot has them all", lab_test.shards(names, 1)[0] == names))

    bad = [name for name, ok in checks if not ok]
    for name, ok in checks:
        print(f"{'ok' if ok else 'FAIL'}: {name}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
