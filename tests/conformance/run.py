#!/usr/bin/env python3
"""The guest self-test as a conformance suite: boot it under every available
configuration, collect its TAP, and tabulate what each one gave the guest.

  run.py [--build DIR] [--only NAME,...] [--lab] [--json FILE] [--write FILE]
  run.py [--build DIR] --check-tcg

Configurations (--list shows them): vmm under each --split-lock policy with
build/guest.bin; QEMU with build/guest.elf through the PVH entry, under TCG
(default machine, microvm, -cpu max) and under this host's KVM; and, with
--lab, vmm and QEMU+KVM on stock KVM inside tests/lab (kvm_amd under TCG).

--write FILE writes docs/conformance.md: one row per check, one column per
configuration, each cell the guest's own verdict. The file is generated;
never edit it by hand.

--check-tcg (the meson test, suite 'conformance') runs the QEMU TCG
configurations only and holds every TAP line and key=value diagnostic of
each against tests/conformance/tcg-expected.txt (the expected verdict, the
detail or skip reason, and why, for a CPU without split-lock detection):
a line with no row, a row not printed, another verdict, detail or skip
reason fails it, naming the line. checker_test.py (suite 'unit') tests the
comparison on doctored copies of tcg-sample.tap, a real TCG run.

QEMU's exit status: the guest's 32-bit OUT of V to port 0xf4 makes
`-device isa-debug-exit,iobase=0xf4,iosize=4` exit with (V << 1) | 1; the
status is V = rc >> 1. QEMU's own failures exit with 1 as well (= V 0), so
a run counts only when its TAP is complete (plan and every line).

Exits 0 on success, 1 when a check fails, 77 when nothing could run
(--check-tcg without qemu-system-x86_64 or without build/guest.elf).
"""
import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
from vmmlib import kvm_usable, parse_tap, run, skip  # noqa: E402

QEMU = "qemu-system-x86_64"
EXPECTED = os.path.join(HERE, "tcg-expected.txt")
QEMU_FW_FILES = ["bios-256k.bin", "bios-microvm.bin", "pvh.bin", "linuxboot_dma.bin",
                 "kvmvapic.bin"]
QEMU_COMMON = ["-m", "128M", "-smp", "2", "-device", "isa-debug-exit,iobase=0xf4,iosize=4",
               "-serial", "stdio", "-display", "none", "-monitor", "none", "-no-reboot",
               "-nodefaults"]
RUN_TIMEOUT = 90

# (id, what the row checks). Ids are the prefixes of the TAP descriptions in
# src/guest/test_splitlock.c; the two marked in PATTERNS come from other
# test groups, matched by description.
ROWS = [
    ("msr.absent_gp", "RDMSR/WRMSR of an MSR that does not exist (0x12345678) raise #GP"),
    ("cpuid", "CPUID.(7,0):EDX[30] enumerates IA32_CORE_CAPABILITIES"),
    ("core_caps.read", "IA32_CORE_CAPABILITIES (0xcf) reads, or #GP where EDX[30] is 0"),
    ("core_caps.value", "IA32_CORE_CAPABILITIES has no bit but 5 (split-lock detection)"),
    ("core_caps.write_gp", "writing IA32_CORE_CAPABILITIES raises #GP"),
    ("test_ctrl.exists", "TEST_CTRL (0x33) exists exactly when enumerated (#GP otherwise)"),
    ("test_ctrl.reset", "TEST_CTRL is 0 at reset"),
    ("test_ctrl.set", "TEST_CTRL bit 29 can be set"),
    ("test_ctrl.clear", "TEST_CTRL bit 29 can be cleared"),
    ("test_ctrl.reserved_gp", "each reserved TEST_CTRL bit raises #GP"),
    ("test_ctrl.per_cpu", "TEST_CTRL is per CPU"),
    ("split_lock.ac", "bit 29 set: split locks at CPL0 raise #AC(0), memory unchanged"),
    ("split_lock.ac_cpl3", "bit 29 set: a split lock at CPL3 raises #AC"),
    ("split_lock.ac_rip", "split-lock #AC reports the RIP of the locked instruction"),
    ("split_lock.ac_rf", "the split-lock #AC frame has RF set, as every fault's"),
    ("split_lock.clear", "bit 29 clear: split locks complete as if aligned (CPL0)"),
    ("split_lock.clear_cpl3", "bit 29 clear: a split lock at CPL3 completes"),
    ("split_lock.in_line", "locked operations inside one cache line: no #AC"),
    ("split_lock.unlocked", "unlocked access across a cache line: no #AC"),
    ("legacy_ac.cpl3", "legacy alignment check: misaligned load at CPL3, CR0.AM and RFLAGS.AC set, raises #AC"),
    ("percpu.cpuid", "CPUID.(7,0):EDX[30] is the same on every vCPU"),
    ("percpu.core_caps", "IA32_CORE_CAPABILITIES reads the same on every vCPU"),
    ("percpu.set", "each AP sets its own TEST_CTRL bit 29"),
    ("percpu.isolated", "an AP's TEST_CTRL is seen by no other vCPU"),
    ("percpu.reserved_gp", "reserved TEST_CTRL bits raise #GP on each AP"),
    ("percpu.ac_ap_asked", "bit 29 on the APs only: their split locks raise #AC, vCPU 0's completes"),
    ("percpu.clear", "each AP clears its own bit 29, vCPU 0's stays set"),
    ("percpu.ac_bsp_asked", "bit 29 on vCPU 0 only: its split lock raises #AC, the APs' complete"),
]
PATTERNS = {
    "msr.absent_gp": re.compile(r"^(rd|wr)msr_safe of nonexistent MSR"),
    "legacy_ac.cpl3": re.compile(r"^misaligned load at CPL3 with AC=1 raises #AC"),
}
DIAGS = [("cpuid.7.0.edx[30]", "CPUID.(7,0):EDX[30] as the guest read it"),
         ("core_capabilities", "IA32_CORE_CAPABILITIES as the guest read it"),
         ("sld", "the guest's conclusion")]


# ------------------------------------------------------------------ configurations

def qemu_cmd(qemu, accel, cpu=None, machine=None, fw=None, elf="build/guest.elf"):
    cmd = [qemu]
    if fw:
        cmd += ["-L", fw]
    cmd += ["-accel", accel]
    if machine:
        cmd += ["-M", machine]
    if cpu:
        cmd += ["-cpu", cpu]
    return cmd + QEMU_COMMON + ["-kernel", elf]


def local_configs(build):
    vmm = os.path.join(build, "vmm")
    bin_ = os.path.join(build, "guest.bin")
    elf = os.path.join(build, "guest.elf")
    confs = []
    for pol in ["inherit", "off", "emulate", "on"]:
        confs.append(dict(name=f"vmm-{pol}", kind="vmm", where="host",
                          title=f"vmm {pol}",
                          cmd=[vmm, "-c", "2", "--timeout", "60", f"--split-lock={pol}", bin_]))
    for name, title, machine, cpu in [("tcg-pc", "QEMU TCG pc", None, None),
                                      ("tcg-microvm", "QEMU TCG microvm", "microvm", None),
                                      ("tcg-max", "QEMU TCG pc -cpu max", None, "max")]:
        confs.append(dict(name=name, kind="qemu", where="host", title=title, tcg=True,
                          cmd=qemu_cmd(QEMU, "tcg", cpu, machine, elf=elf)))
    for name, title, cpu in [("kvm-host", "QEMU KVM -cpu host", "host"),
                             ("kvm-host-sld", "QEMU KVM -cpu host,-arch-capabilities,+core-capability,+split-lock-detect",
                              "host,-arch-capabilities,+core-capability,+split-lock-detect"),
                             ("kvm-host-noarchcap", "QEMU KVM -cpu host,-arch-capabilities",
                              "host,-arch-capabilities")]:
        confs.append(dict(name=name, kind="qemu", where="host", title=title, needs_kvm=True,
                          cmd=qemu_cmd(QEMU, "kvm", cpu, elf=elf)))
    return confs


def lab_configs():
    """Commands as the lab's busybox sh runs them, in /extra. emulate comes
    last: it is the run that most often froze the lab (stock-kvm-lab.md)."""
    def vmm(pol):
        return dict(name=f"lab-vmm-{pol}", kind="vmm", where="lab", title=f"vmm {pol}",
                    cmd=["vmm", "-c", "2", "--timeout", "100", f"--split-lock={pol}",
                         "/lab/guest.bin"])
    confs = [vmm(pol) for pol in ["inherit", "off", "on"]]
    for name, title, machine, cpu in [
            ("lab-kvm-host", "QEMU KVM -cpu host", None, "host"),
            ("lab-kvm-host-microvm", "QEMU KVM microvm -cpu host", "microvm", "host"),
            ("lab-kvm-host-sld", "QEMU KVM microvm -cpu host,+core-capability,+split-lock-detect", "microvm",
             "host,+core-capability,+split-lock-detect")]:
        confs.append(dict(name=name, kind="qemu", where="lab", title=title,
                          cmd=qemu_cmd("./" + QEMU, "kvm", cpu, machine, fw="./fw",
                                       elf="./guest.elf")))
    return confs + [vmm("emulate")]


# ------------------------------------------------------------------ running

def guest_status(conf, rc):
    """The guest's exit status from the process's, or None."""
    if rc is None:
        return None
    if conf["kind"] == "qemu":
        return rc >> 1 if rc & 1 else None
    return rc if 0 <= rc <= 63 else None


def finish(conf, rc, out, err, note=None):
    r = dict(conf)
    warn = [ln.strip() for ln in err.splitlines() if "warning:" in ln]
    if warn and conf["kind"] == "qemu":
        note = "; ".join(filter(None, [note, warn[0][:160]]))
    r.update(rc=rc, out=out, err=err, note=note)
    r["status"] = guest_status(conf, rc)
    return r


def run_local(conf):
    why = conf.get("needs_kvm") and kvm_usable()
    if why:
        return finish(conf, None, "", "", why)
    exe = conf["cmd"][0]
    if not (shutil.which(exe) or os.access(exe, os.X_OK)):
        return finish(conf, None, "", "", f"{exe} not found")
    print("$ " + " ".join(conf["cmd"]), file=sys.stderr, flush=True)
    r = run(conf["cmd"], timeout=RUN_TIMEOUT, quiet=True)
    if r.hung:
        return finish(conf, None, r.out, r.err, f"killed after {RUN_TIMEOUT} s")
    return finish(conf, r.status, r.out, r.err)


def lab_script(confs):
    lines = ["echo \"@@KERNEL $(uname -r)\""]
    for c in confs:
        cmd = " ".join(c["cmd"])
        lines += [f"lab-step {c['name']}",
                  f"echo '@@CONF {c['name']}'",
                  f"timeout -s KILL {RUN_TIMEOUT} {cmd} >/tmp/out 2>/tmp/err </dev/null",
                  "rc=$?", "cat /tmp/out", f"echo '@@STDERR {c['name']}'", "cat /tmp/err",
                  f"echo \"@@END {c['name']} $rc\""]
    return "\n".join(lines) + "\n"


def run_lab(build, confs, lab_timeout):
    """One lab boot runs every configuration; returns (results, kernel)."""
    lab = os.path.join(REPO, "tests", "lab", "lab.sh")
    if not os.path.exists(lab):
        return [finish(c, None, "", "", "tests/lab is not in this tree") for c in confs], None
    qemu = shutil.which(QEMU)
    if not qemu:
        return [finish(c, None, "", "", f"{QEMU} not found") for c in confs], None
    with tempfile.TemporaryDirectory(prefix="conformance-") as tmp:
        extra = os.path.join(tmp, "extra")
        os.makedirs(os.path.join(extra, "fw"))
        shutil.copy(qemu, extra)
        shutil.copy(os.path.join(build, "guest.elf"), extra)
        for f in QEMU_FW_FILES:
            for d in ["/usr/share/qemu", "/usr/share/seabios", "/usr/lib/ipxe/qemu"]:
                src = os.path.realpath(os.path.join(d, f))
                if os.path.exists(src):
                    shutil.copy(src, os.path.join(extra, "fw", f))
                    break
        script = os.path.join(tmp, "script.sh")
        with open(script, "w") as f:
            f.write(lab_script(confs))
        cmd = [lab, "run", "--build", build, "--timeout", str(lab_timeout), extra, script]
        print("$ " + " ".join(cmd), file=sys.stderr, flush=True)
        p = subprocess.run(cmd, capture_output=True, timeout=lab_timeout + 300)
    out = p.stdout.decode(errors="replace").replace("\r", "")
    err = p.stderr.decode(errors="replace")
    sys.stderr.write(err[-3000:])
    kernel = None
    m = re.search(r"^@@KERNEL (\S+)", out, re.M)
    if m:
        kernel = m.group(1)
    results = []
    for c in confs:
        m = re.search(rf"^@@CONF {re.escape(c['name'])}\n(.*?)^@@STDERR {re.escape(c['name'])}\n"
                      rf"(.*?)^@@END {re.escape(c['name'])} (\d+)$", out, re.M | re.S)
        if m:
            rc = int(m.group(3))
            note = f"killed after {RUN_TIMEOUT} s" if rc == 137 else None
            results.append(finish(c, rc, m.group(1), m.group(2), note))
        elif f"@@CONF {c['name']}\n" in out:
            results.append(finish(c, None, out.split(f"@@CONF {c['name']}\n", 1)[1], "",
                                  f"the lab stopped during this run (lab.sh exit {p.returncode})"))
        else:
            tail = [ln for ln in err.splitlines() if ln.startswith("lab:")][-1:]
            results.append(finish(c, None, "", "",
                                  f"not reached: lab.sh exit {p.returncode} "
                                  + (tail[0] if tail else "")))
    return results, kernel


# ------------------------------------------------------------------ TAP to verdicts

def line_id(desc):
    for rid, pat in PATTERNS.items():
        if pat.search(desc):
            return rid
    m = re.match(r"^([a-z_0-9]+(?:\.[a-z_0-9]+)?): ", desc)
    return m.group(1) if m else None


def detail(desc):
    """The last parenthesised part of a description: what the guest saw."""
    m = re.search(r"\(([^()]*)\)\s*$", desc)
    return m.group(1) if m else ""


def verdicts(r):
    """{row id: (verdict, text)} with verdict pass/fail/skip, or None if no TAP."""
    plan, results, diag_lines = parse_tap(r["out"])
    lines = [ln for ln in results if ln.num]    # a "Bail out!" is no test line here
    diags = dict(m.groups() for m in (re.match(r"^([a-z_0-9.\[\]]+)=(\S+)$", d)
                                      for d in diag_lines) if m)
    r["plan"], r["ntap"], r["diags"] = plan, len(lines), diags
    r["complete"] = plan is not None and plan == len(lines) and plan > 0
    r["failed"] = sum(1 for ln in lines if not ln.ok)
    rows = {}
    for rid, _ in ROWS:
        mine = [ln for ln in lines if line_id(ln.desc) == rid]
        if not mine:
            continue
        skips = [ln for ln in mine if ln.directive.upper().startswith("SKIP")]
        fails = [ln for ln in mine if not ln.ok]
        if fails:
            text = detail(fails[0].desc)
            if len(mine) > 1:
                text = f"{len(fails)} of {len(mine)} failed" + (f"; first: {text}" if text else "")
            rows[rid] = ("fail", text)
        elif len(skips) == len(mine):
            rows[rid] = ("skip", re.sub(r"^SKIP\s*", "", skips[0].directive, flags=re.I))
        else:
            text = detail(mine[0].desc) if len(mine) == 1 else f"{len(mine)} of {len(mine)}"
            rows[rid] = ("pass", text)
    return rows


def short_outcome(r):
    if r["rc"] is None and not r["out"]:
        return "not run: " + r["note"]
    if r["complete"]:
        return f"guest status {r['status']}"
    if r["kind"] == "vmm" and r["rc"] == 78:
        return "refused by vmm (exit 78)"
    return "**did not finish**"


def display_cmd(r):
    build = r.get("build", "")
    return " ".join(c.replace(build + "/", "build/") if build else c for c in r["cmd"])


def outcome(r):
    """One line on how the run went."""
    if r["rc"] is None:
        return r["note"]
    if r["complete"]:
        st = r["status"]
        return (f"TAP complete, {r['ntap']} tests, {r['failed']} failed; guest status {st}"
                + (f" (exit {r['rc']})" if r["kind"] == "qemu" else "")
                + (f"; {r['note']}" if r["note"] else ""))
    msg = first_error(r)
    how = f"killed by signal {-r['rc']}" if r["rc"] < 0 else f"exit {r['rc']}"
    return (f"no complete TAP ({how})" + (f": {msg}" if msg else "")
            + (f"; {r['note']}" if r["note"] else ""))


def first_error(r):
    for ln in (r["err"] + "\n" + r["out"]).splitlines():
        if re.search(r"error|Assertion|Bail out|failed|refus|triple fault|shut", ln, re.I):
            return ln.strip()[:200]
    return ""


# ------------------------------------------------------------------ the TCG check

KV_DIAG = re.compile(r"^[a-z_0-9.\[\]]+=\S+$")
VERDICTS = ("pass", "fail", "skip", "diag")


class Row:
    """One row of tcg-expected.txt (see its header)."""

    def __init__(self, where, verdict, desc, detail, why):
        self.where, self.verdict, self.desc, self.detail, self.why = where, verdict, desc, detail, why
        self.regex = ellipsis_regex(desc)
        if desc.endswith(" (…)"):
            # A skipped check prints no detail: the same row without it.
            self.regex = re.compile(ellipsis_regex(desc[:-4]).pattern + r"(?: \(.+?\))?", re.S)
        self.detail_regex = None if detail == "-" else ellipsis_regex(detail)

    def __str__(self):
        return f"{self.where} ({self.verdict} | {self.desc} | {self.detail})"


def ellipsis_regex(pattern):
    """A pattern where "…" stands for any text, as a regular expression."""
    return re.compile(".+?".join(re.escape(part) for part in pattern.split("…")), re.S)


def load_expected(path=EXPECTED):
    """(rows, errors): the table, and what is wrong with it (a failure each)."""
    rows, errors = [], []
    name = os.path.relpath(path, REPO)
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            where = f"{name}:{n}"
            parts = [x.strip() for x in re.split(r" \|(?: |$)", line, maxsplit=3)]
            if len(parts) != 4:
                errors.append(f"{where}: want 'verdict | description | detail | why', got {line!r}")
                continue
            verdict, desc, detail, why = parts
            if why.startswith("as above"):
                # The previous row's reason, spelled out where it is shown.
                why = (rows[-1].why if rows else "") + why[len("as above"):]
            if verdict not in VERDICTS:
                errors.append(f"{where}: verdict {verdict!r} is not one of {', '.join(VERDICTS)}")
            elif verdict in ("fail", "skip") and not why:
                errors.append(f"{where}: a {verdict} row must say why it is the answer here")
            elif verdict == "skip" and detail == "-":
                errors.append(f"{where}: a skip row must give the skip reason")
            elif not desc:
                errors.append(f"{where}: no description")
            else:
                rows.append(Row(where, verdict, desc, detail, why))
    if not rows and not errors:
        errors.append(f"{name}: no rows")
    return rows, errors


def tap_text(t):
    if t.num == 0:
        return t.desc
    return (f"{'ok' if t.ok else 'not ok'} {t.num} - {t.desc}"
            + (f" # {t.directive}" if t.directive else ""))


def compare_tap(name, text, rows):
    """Every TAP line and key=value diagnostic of text against the table's
    rows, both ways. Returns a list of failures, each naming the line or row."""
    _, results, diags = parse_tap(text)
    fails = []
    tests = [r for r in rows if r.verdict != "diag"]
    matched = {id(r): [] for r in rows}
    for t in results:
        line = tap_text(t)
        mine = [r for r in tests if r.regex.fullmatch(t.desc)] if t.num else []
        if not mine:
            fails.append(f"{name}: TAP line with no row in the table: {line!r}")
            continue
        if len(mine) > 1:
            fails.append(f"{name}: TAP line matches {len(mine)} rows "
                         f"({', '.join(r.where for r in mine)}): {line!r}")
            continue
        row = mine[0]
        matched[id(row)].append(line)
        directive = t.directive.upper()
        verdict = ("skip" if directive.startswith("SKIP") else
                   "todo" if directive.startswith("TODO") else "pass" if t.ok else "fail")
        why = f": {row.why}" if row.why else ""
        if verdict != row.verdict:
            fails.append(f"{name}: {line!r} is {verdict}, {row.where} says {row.verdict}{why}")
        elif verdict == "skip":
            reason = re.sub(r"^SKIP\s*", "", t.directive, flags=re.I)
            if not row.detail_regex.fullmatch(reason):
                fails.append(f"{name}: {line!r} skips for {reason!r}, {row.where} says "
                             f"{row.detail!r}{why}")
        elif row.detail_regex and not row.detail_regex.search(t.desc):
            fails.append(f"{name}: {line!r} lacks {row.detail!r} ({row.where}){why}")
    for d in diags:
        if not KV_DIAG.match(d):
            continue        # headings and prose; key=value diagnostics are the guest's findings
        mine = [r for r in rows if r.verdict == "diag" and r.regex.fullmatch(d)]
        if len(mine) != 1:
            fails.append(f"{name}: diagnostic '# {d}' matches {len(mine)} diag rows of the table, "
                         "want 1")
        else:
            matched[id(mine[0])].append("# " + d)
    for r in rows:
        got = matched[id(r)]
        if not got:
            fails.append(f"{name}: the guest did not print {r}")
        elif len(got) > 1:
            fails.append(f"{name}: the guest printed {r} {len(got)} times: {got}")
    return fails


def check_tcg(results, rows):
    """Verdicts under TCG against the table (compare_tap) and the
    architecture of a CPU without split-lock detection. Returns a list of
    failures."""
    fails = []
    for r in results:
        v = r["rows"]
        name = r["name"]
        if not r["complete"]:
            fails.append(f"{name}: {outcome(r)}")
            continue
        if r["status"] != (1 if r["failed"] else 0):
            fails.append(f"{name}: guest status {r['status']} with {r['failed']} failed tests")
        fails += compare_tap(name, r["out"], rows)

        def want(rid, verdicts, why):
            got = v.get(rid, ("missing", ""))
            if got[0] not in verdicts:
                fails.append(f"{name}: {rid} is {got[0]} ({got[1]}), want {'/'.join(verdicts)}: {why}")
        if r["diags"].get("cpuid.7.0.edx[30]") != "0" or r["diags"].get("sld") != "not-enumerated":
            fails.append(f"{name}: the guest saw {r['diags']}, want EDX[30]=0 and sld=not-enumerated")
        want("cpuid", ["skip"], "QEMU's TCG does not enumerate IA32_CORE_CAPABILITIES")
        for rid in ["test_ctrl.reset", "test_ctrl.set", "test_ctrl.clear",
                    "test_ctrl.reserved_gp", "test_ctrl.per_cpu", "split_lock.ac",
                    "split_lock.ac_cpl3", "split_lock.ac_rip", "split_lock.ac_rf",
                    "percpu.core_caps", "percpu.set", "percpu.isolated", "percpu.reserved_gp",
                    "percpu.ac_ap_asked", "percpu.clear", "percpu.ac_bsp_asked"]:
            want(rid, ["skip"], "nothing enumerates split-lock detection")
        for rid in ["split_lock.clear", "split_lock.clear_cpl3", "split_lock.in_line",
                    "split_lock.unlocked", "core_caps.read", "percpu.cpuid"]:
            want(rid, ["pass"], "a CPU without split-lock detection just executes them")
        # MSRs that are not enumerated must behave like any MSR that does not
        # exist on the same CPU: #GP, as the SDM says, where that CPU raises it.
        absent = v.get("msr.absent_gp", ("missing", ""))[0]
        if absent not in ("pass", "fail"):
            fails.append(f"{name}: no verdict on a nonexistent MSR")
        for rid in ["core_caps.write_gp", "test_ctrl.exists"]:
            want(rid, [absent], "TEST_CTRL and a written IA32_CORE_CAPABILITIES behave like any "
                 "absent MSR on this CPU")
        if v.get("core_caps.read", ("", ""))[1] == "vector 13":
            want("core_caps.value", ["skip"], "the MSR is absent")
        else:
            want("core_caps.value", ["pass"], "the MSR read 0")
    return fails


# ------------------------------------------------------------------ the document

DOC = os.path.join(REPO, "docs", "conformance.md")


def doc_stale(results):
    """docs/conformance.md against this run: each configuration run here must
    have the outcome the document gives it (its figures cannot go stale)."""
    try:
        with open(DOC) as f:
            doc = f.read()
    except OSError as e:
        return [f"{DOC}: {e}"]
    fails = []
    for r in results:
        m = re.search(r"^\| [HL]\d+ \| " + re.escape(r["title"]) + r" \(this machine\) \|.*\| ([^|]*) \|$",
                      doc, re.M)
        if not m:
            fails.append(f"docs/conformance.md has no row for {r['title']}")
        elif m.group(1).strip() != outcome(r):
            fails.append(f"docs/conformance.md is stale: {r['title']}: it says "
                         f"'{m.group(1).strip()}', this run gives '{outcome(r)}'; regenerate it: "
                         "tests/conformance/run.py --build build --lab --write docs/conformance.md")
    return fails


def md(s):
    return s.replace("|", "\\|").replace("\n", " ")


def cell(r, rid):
    if not r.get("complete") and rid not in r["rows"]:
        return "—"
    v = r["rows"].get(rid)
    if not v:
        return "—"
    verdict, text = v
    word = {"pass": "pass", "fail": "**fail**", "skip": "skip"}[verdict]
    return md(f"{word} ({text})" if text else word)


def versions(results, lab_kernel):
    def cmd(*a):
        try:
            return subprocess.run(a, capture_output=True, text=True, cwd=REPO,
                                  timeout=20).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return ""
    q = cmd(QEMU, "--version").splitlines()
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "qemu": q[0] if q else "not installed",
        "host kernel": cmd("uname", "-r"),
        "lab kernel": lab_kernel or "lab not run",
        "project": "vmm " + (re.search(r"version:\s*'([^']+)'",
                                       open(os.path.join(REPO, "meson.build")).read()).group(1))
        + ", git " + (cmd("git", "describe", "--always", "--dirty") or "unknown"),
    }


def write_doc(path, results, lab_kernel):
    ver = versions(results, lab_kernel)
    cols = [r for r in results]
    keys = [f"{'H' if r['where'] == 'host' else 'L'}{i + 1}" for i, r in enumerate(cols)]
    out = ["<!-- Generated by tests/conformance/run.py --write; do not edit by hand. -->",
           "# Conformance: what each VMM gives a guest for split-lock detection", "",
           "The self-test guest (src/guest/) run unchanged under each configuration below,",
           "through vmm's long-mode entry (build/guest.bin) or the PVH entry",
           "(build/guest.elf, QEMU `-kernel`). Each cell is the guest's own verdict on",
           "the row's check: pass, **fail**, or skip with the guest's reason; in",
           "parentheses what the guest saw. — means the check never ran there.", "",
           f"- Date: {ver['date']}",
           f"- QEMU: {ver['qemu']} (the same binary on the host and, copied, in the lab)",
           f"- Kernel: host {ver['host kernel']} (the machines' own nested KVM, see "
           f"docs/design.md, \"Host and KVM\"); lab {ver['lab kernel']} (stock kvm_amd, "
           "nested under QEMU TCG: tests/lab/README.md)",
           f"- Project: {ver['project']}", "",
           "Reproduce: `tests/conformance/run.py --build build --lab --write docs/conformance.md`",
           "(`--only NAME,...` for a subset; `--list` names them).", "",
           "H columns ran on this machine, L columns in the lab (stock KVM).", "",
           "| check | " + " | ".join(f"{k}: {md(r['title'])}" for k, r in zip(keys, cols)) + " |",
           "|---|" + "---|" * len(keys)]
    out.append("| the run | " + " | ".join(md(short_outcome(r)) for r in cols) + " |")
    for rid, what in ROWS:
        out.append(f"| `{rid}`: {md(what)} | " + " | ".join(cell(r, rid) for r in cols) + " |")
    for key, what in DIAGS:
        out.append(f"| {md(what)} (`{key}`) | " + " | ".join(
            md(r.get("diags", {}).get(key, "—")) for r in cols) + " |")
    out += ["", "## Checks that fail somewhere", "",
            "Each check some configuration fails, with every verdict it got among the runs "
            "that finished:", ""]
    ran = [(k, r) for k, r in zip(keys, cols) if r.get("complete")]
    for rid, what in ROWS:
        seen = {}
        for k, r in ran:
            seen.setdefault(r["rows"].get(rid, ("—", ""))[0], []).append(k)
        if "fail" in seen:
            out.append(f"- `{rid}`: " + "; ".join(f"{v} in {', '.join(ks)}"
                                                 for v, ks in sorted(seen.items())))
    if not any(ln.startswith("- `") for ln in out[-len(ROWS):]):
        out.append("None.")
    out += ["", "## Configurations", "",
            "| key | configuration | command | outcome |", "|---|---|---|---|"]
    for k, r in zip(keys, cols):
        where = "this machine" if r["where"] == "host" else "lab"
        out.append(f"| {k} | {md(r['title'])} ({where}) | `{md(display_cmd(r))}` | "
                   f"{md(outcome(r))} |")
    out += ["", "QEMU's exit status is (V << 1) | 1 for the guest's status V "
            "(`isa-debug-exit`); run.py maps it back and counts a run only when its TAP is "
            "complete, since QEMU's own errors exit with 1 too.", ""]
    with open(path, "w") as f:
        f.write("\n".join(out))


# ------------------------------------------------------------------ main

def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--only", help="comma-separated configuration names")
    ap.add_argument("--lab", action="store_true", help="also run the lab configurations")
    ap.add_argument("--lab-timeout", type=float, default=600)
    ap.add_argument("--json", help="write every run (output included) to this file")
    ap.add_argument("--write", help="write the table (docs/conformance.md)")
    ap.add_argument("--check-tcg", action="store_true")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    build = os.path.abspath(a.build)

    local = local_configs(build)
    lab = lab_configs() if a.lab else []
    if a.check_tcg:
        local, lab = [c for c in local if c.get("tcg")], []
    if a.only:
        names = set(a.only.split(","))
        unknown = names - {c["name"] for c in local_configs(build) + lab_configs()}
        if unknown:
            ap.error(f"unknown configuration(s): {', '.join(sorted(unknown))}")
        local = [c for c in local if c["name"] in names]
        lab = [c for c in lab_configs() if c["name"] in names]
    if a.list:
        for c in local_configs(build) + lab_configs():
            print(f"{c['name']:24} {c['where']:5} {' '.join(c['cmd'])}")
        return 0
    if a.check_tcg:
        if not shutil.which(QEMU):
            return skip(f"{QEMU} is not installed (scripts/setup.sh installs qemu-system-x86)")
        if not os.path.exists(os.path.join(build, "guest.elf")):
            return skip(f"no {build}/guest.elf (built with -Dguest=false?)")

    for c in local:
        c["build"] = build
    results = [run_local(c) for c in local]
    lab_kernel = None
    if lab:
        lab_results, lab_kernel = run_lab(build, lab, a.lab_timeout)
        results += lab_results
    for r in results:
        r["rows"] = verdicts(r)
        print(f"{r['name']:24} {outcome(r)}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    if a.write:
        write_doc(a.write, results, lab_kernel)
        print(f"wrote {a.write}")
    if a.check_tcg:
        for r in results:
            print(f"--- {r['name']}: {' '.join(r['cmd'])}\n{r['out']}{r['err']}")
        rows, table_errors = load_expected()
        fails = table_errors + check_tcg(results, rows) + doc_stale(results)
        for f in fails:
            print("FAIL: " + f)
        if not fails:
            gp = {r["name"]: {"pass": "yes", "fail": "no"}.get(r["rows"]["msr.absent_gp"][0])
                  for r in results}
            print(f"ok: every TAP line agrees with {os.path.relpath(EXPECTED, REPO)} "
                  f"({len(rows)} rows) and with a CPU without split-lock detection; "
                  f"does a nonexistent MSR raise #GP there: {gp}")
        return 1 if fails else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
