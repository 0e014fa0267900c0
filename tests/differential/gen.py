#!/usr/bin/env python3
"""Random differential testing: builds random locked and unlocked
instructions (opcode form, operand size, prefixes in random order with LOCK
anywhere among them, REX bits, ModRM/SIB addressing, random registers),
random operand placements (inside a line, across a line, across a page) and
page-table states (not present, read-only with and without CR0.WP,
supervisor at CPL3, XD with and without EFER.NXE, a reserved bit, no RAM
behind), in 64-bit and compatibility mode at CPL0 and CPL3 (--explore: also
16-bit code, CPL1 and CPL2, and outside IA-32e mode: 32-bit code with each
paging, 16-bit code with PAE paging, real mode, virtual-8086 mode). Records are
appended to a copy of the differential guest ("case=gen", guest/cases_gen.c
has the layout), a batch per VM, run under --split-lock=inherit and
--split-lock=emulate, and compared line by line.

  gen.py --vmm build/vmm --guest build/tests/differential/diffguest.bin \\
         [--seed N] [--count N] [--batch N] [--show N]

A batch whose emulate run ends early (e.g. stops the VM) is resumed after
the record it died on, so every record is compared. Prints the figures
("N cases run, N compared, N divergences") and each divergence with its
record decoded; exits 0 with no divergence, 1 otherwise, 77 without
/dev/kvm.
"""
import argparse
import json
import os
import random
import re
import struct
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from difftest import oracle_problem  # noqa: E402
from vmmlib import (Failure, kvm_usable, lacks, report, run_vmm, scaled, scaled_str, skip,  # noqa: E402
                    target, vm_statuses)

# guest/diff.h
R_AX, R_CX, R_DX, R_BX, R_SP, R_BP, R_SI, R_DI = range(8)
R_FLAGS, R_COUNT = 16, 17
PG_P, PG_W, PG_U, PG_XD, PG_RSVD, PG_NORAM = 1, 2, 4, 8, 0x10, 0x20
PG_PTNORAM = 0x80       # 32-bit paging only: the window's page table where no RAM is
PG_NORMAL = PG_P | PG_W | PG_U
GEN_AC, GEN_WP, GEN_NXE, GEN_EQUAL, GEN_TF, GEN_LOG, GEN_IOPL3 = 1, 2, 4, 8, 0x10, 0x20, 0x40
MODE_NAMES = ["64-bit", "compat", "16-bit", "compat-cs-base", "pm32", "pm32-paging32", "pm32-pae",
              "pm16-pae", "real", "vm86"]
# The CPLs each mode runs at (outside IA-32e mode, 4-9: guest/exec_legacy.c).
MODE_CPLS = [(0, 1, 2, 3)] * 8 + [(0,), (3,)]
# The executor's 64-bit, 32-bit and 16-bit code selectors by CPL (guest/exec.c's code_sel).
CS64 = (0x08, 0x89, 0x9a, 0x23)
CS32 = (0x38, 0x101, 0x10a, 0x43)
CS16 = (0x58, 0x111, 0x11a, 0x63)
RECORD = struct.Struct("<BBBBBBBBiII BBBB 32s Q 17Q")
assert RECORD.size == 200
ENV_NONE, ENV_SYSCALL, ENV_GATE, ENV_DR, ENV_CALLGATE, ENV_SYSENTER, ENV_SELF, ENV_REAL_PE, ENV_LM_OFF = \
    range(9)
# Real mode (guest/exec_legacy.S): the program's segment and IP, and the
# 16-bit protected-mode code segment with the same base (diff.h SEL_K_CODE16R).
REAL_SEG, RX_PROG, CS16_REAL = 0x7000, 0x1800, 0x78
TF, IF, DF, AC = 0x100, 0x200, 0x400, 0x40000

# (name, opcode bytes, 8-bit last opcode byte or None, ModRM.reg digit or None
#  (None: register operand), immediate: 0 / 'b' / 'z', lockable, sizes)
FORMS = [
    ("add", b"\x01", 0x00, None, 0, True), ("or", b"\x09", 0x08, None, 0, True),
    ("adc", b"\x11", 0x10, None, 0, True), ("sbb", b"\x19", 0x18, None, 0, True),
    ("and", b"\x21", 0x20, None, 0, True), ("sub", b"\x29", 0x28, None, 0, True),
    ("xor", b"\x31", 0x30, None, 0, True),
    ("grp1", b"\x81", 0x80, "any8", "z", True), ("grp1s", b"\x83", None, "any8", "b", True),
    ("not", b"\xf7", 0xf6, 2, 0, True), ("neg", b"\xf7", 0xf6, 3, 0, True),
    ("inc", b"\xff", 0xfe, 0, 0, True), ("dec", b"\xff", 0xfe, 1, 0, True),
    ("xchg", b"\x87", 0x86, None, 0, True), ("xadd", b"\x0f\xc1", 0xc0, None, 0, True),
    ("cmpxchg", b"\x0f\xb1", 0xb0, None, 0, True),
    ("cmpxchg8b", b"\x0f\xc7", None, 1, 0, True),
    ("bts", b"\x0f\xab", None, None, 0, True), ("btr", b"\x0f\xb3", None, None, 0, True),
    ("btc", b"\x0f\xbb", None, None, 0, True), ("bt", b"\x0f\xa3", None, None, 0, False),
    ("btx-imm", b"\x0f\xba", None, "bt", "b", True),
    # not lockable: LOCK makes them #UD; without it they are plain accesses
    ("mov-store", b"\x89", 0x88, None, 0, False), ("mov-load", b"\x8b", 0x8a, None, 0, False),
    ("cmp", b"\x39", 0x38, None, 0, False), ("test", b"\x85", 0x84, None, 0, False),
    ("add-load", b"\x03", 0x02, None, 0, False),
]
SEGS = [0x2e, 0x36, 0x3e, 0x26, 0x64, 0x65]
# Forms that only read their operand (GRP1 counts as writing: its CMP is one digit of eight).
READ_ONLY_FORMS = ("bt", "mov-load", "cmp", "test", "add-load")
STATES = [PG_NORMAL] * 6 + [PG_W | PG_U, PG_P | PG_U, PG_P | PG_W, PG_NORMAL | PG_XD,
                            PG_NORMAL | PG_RSVD, PG_NORMAL | PG_NORAM]


class Case:
    # Issue 18's environments (guest/cases_gen.c ENV_*): none by default.
    env, env_arg, env_reg, aux = ENV_NONE, 0, 0xff, 0
    far_tss = False     # a far CALL to TSS B (legacyize), the task gate's environment
    needs = ()          # host features the record relies on (vmmlib.lacks words)
    events = ()         # what the record exercises, for the coverage report
    disarmed = ()       # needs the host lacked: the record was run without them


# --explore (issue 18): instructions where the CPU saves or reacts to RFLAGS
# or raises an event, by mode (0 64-bit, 1 compat, 2 16-bit code, 3 compat
# with a CS base) and CPL: (class, bytes, modes, cpls).
PROBES = [
    ("pushf", b"\x9c\x58", (0, 1, 2, 3), (0, 3)),
    ("pushf-osz", b"\x66\x9c\x66\x58", (0, 1, 2, 3), (0, 3)),
    ("popf-tf", b"\x9c\x48\x81\x0c\x24\x00\x01\x00\x00\x9d\x90\x90", (0,), (0, 3)),
    ("popf-tf", b"\x9c\x81\x0c\x24\x00\x01\x00\x00\x9d\x90\x90", (1, 3), (0, 3)),
    ("popf-tf", b"\x9c\x67\x81\x0c\x24\x00\x01\x9d\x90\x90", (2,), (0, 3)),
    ("fault-ud2", b"\x0f\x0b", (0, 1, 2, 3), (0, 3)),
    ("fault-hlt-cpl3", b"\xf4", (0, 1, 2, 3), (3,)),
    ("fault-cli-cpl3", b"\xfa", (0, 1, 2, 3), (3,)),
    ("fault-in-cpl3", b"\xec", (0, 1, 3), (3,)),
    ("movdr", b"\x0f\x21\xf8", (0, 1, 3), (0, 3)),
    ("fault-syscall-sce0", b"\x0f\x05", (0,), (0, 3)),
    ("fault-sysret-cpl3", b"\x48\x0f\x07", (0,), (3,)),
    ("int3", b"\xcc\x90", (0, 1, 3), (0, 3)),
    # INT1: a #DB trap through the IDT on the CPU (TCG raises #UD).
    ("icebp", b"\xf1\x90", (0, 1, 2, 3), (0, 3)),
    # #GP(0) at CPL3 (Intel); #UD in long mode (AMD).
    ("fault-sysexit-cpl3", b"\x0f\x35", (0, 1, 2, 3), (3,)),
]
# MOV SS holds the step trap for one more instruction, which then runs in
# its step: probe_case puts "mov %ss, %ecx; mov %ecx, %ss" before the PUSHF
# or POPF of some pushf and popf-tf records (class movss-pushf,
# movss-popf-tf), chosen by the record's own seed so that a seed deals the
# same records as before. Half of those load SS from memory instead (event
# movss-from-memory): SS stored to the record's operand through EBX and
# loaded back from it (32-bit addresses in 16-bit code too), a MOV SS whose
# length only a decoder knows. Some records of the classes in MOVSS_FAULTS
# get the same MOV SS in front of their faulting instruction or INT3
# (form movss-<class>, its class still the instruction's; event
# fault-behind-movss): the VMM performs that pair itself where the
# guest's TF is clear, or the fault is a #UD, and steps it otherwise.
MOVSS = b"\x8c\xd1\x8e\xd1"
MOVSS_FAULTS = ("fault-ud2", "fault-hlt-cpl3", "fault-cli-cpl3", "fault-syscall-sce0", "int3")
MOVSS_MEM = {16: b"\x8c\xd1\x67\x89\x0b\x67\x8e\x13", 32: b"\x8c\xd1\x89\x0b\x8e\x13"}



def probe_case(rng, idx, name=None):
    c = Case()
    c.idx = idx
    # Without a name: the base of another generator's record, which keeps none of the probe.
    probe = name is not None
    name, insn, modes, cpls = rng.choice([p for p in PROBES if name in (None, p[0])])
    c.mode, c.cpl = rng.choice(modes), rng.choice(cpls)
    c.form, c.size, c.lock, c.insn = name, 4, False, insn
    c.addr_reg, c.seg, c.target, c.placement = 0xff, 0, 0, "none"
    c.page0 = c.page1 = PG_NORMAL
    c.flags = GEN_TF if name == "popf-tf" or rng.random() < 0.3 else 0
    c.seed, c.ds_base = rng.getrandbits(32), 0
    c.regs = [rng.getrandbits(64) for _ in range(R_COUNT)]
    c.regs[R_FLAGS] = rng.getrandbits(12) & 0x8d5
    if name == "icebp":
        c.needs = ("icebp",)
    pick = random.Random(c.seed ^ 0x55)
    if probe and name in ("pushf", "popf-tf") + MOVSS_FAULTS and pick.random() < 0.4:
        mov, c.form = MOVSS, "movss-" + name
        if pick.random() < 0.5:
            mov = MOVSS_MEM[16 if c.mode == 2 else 32]
            c.addr_reg, c.placement, c.target = R_BX, "inline", pick.randrange(0, 4000) & ~1
            c.regs[R_BX] = 0
            c.events = list(c.events) + ["movss-from-memory"]
        c.insn = insn.replace(b"\x9c", mov + b"\x9c") if name == "pushf" else \
            insn.replace(b"\x9d", mov + b"\x9d") if name == "popf-tf" else mov + insn
        if name in MOVSS_FAULTS:
            c.events = list(c.events) + ["fault-behind-movss"]
    return c


def lock16_case(rng, idx):
    """lock add %eax,(%ebx) / lock xadd from 16-bit code (0x66 0x67), split or not."""
    c = probe_case(rng, idx)
    c.form, c.mode = "lock16", 2
    c.insn = rng.choice([b"\x66\x67\xf0\x01\x03", b"\x66\x67\xf0\x0f\xc1\x03",
                         b"\x67\xf0\x01\x03"])
    c.lock, c.addr_reg = True, R_BX
    c.regs[R_BX] = 0
    c.placement = rng.choice(["line", "page", "inline"])
    c.target = {"line": 64 * rng.randrange(1, 60) - 2, "page": -2,
                "inline": rng.randrange(0, 4000) & ~3}[c.placement]
    c.flags &= GEN_TF
    return c


def base_case(rng, idx, form, modes, cpls):
    """A program record (no memory operand unless set later) in one of MODES at one of CPLS."""
    c = probe_case(rng, idx)
    c.form = form
    c.mode, c.cpl = rng.choice(modes), rng.choice(cpls)
    c.flags = GEN_TF if rng.random() < 0.5 else 0
    c.events = []
    return c


# Frame values the handlers see, the TF of the frame they return with, and
# FMASK: bits chosen among these (guest/gen.S).
FMASK_BITS = [TF, IF, DF, AC, 0x1, 0x4, 0x10, 0x40, 0x80, 0x800]


def syscall_case(rng, idx):
    """SYSCALL into gen_sc_entry and back: SYSRETQ to CPL3, or IRETQ to a CPL0
    caller (SYSRET always lands at CPL3); FMASK random with TF/IF/AC among
    its bits, R11's TF/AC/DF possibly flipped before the return."""
    c = base_case(rng, idx, "syscall", (0,), (0, 3))
    c.form = "syscall-sysretq" if c.cpl == 3 else "syscall-iretq"
    c.env, c.env_arg = ENV_SYSCALL, 0 if c.cpl == 3 else 1
    fmask = 0
    for bit in FMASK_BITS:
        if rng.random() < 0.35:
            fmask |= bit
    xor = 0
    for bit in (TF, AC, DF):
        if rng.random() < 0.25:
            xor |= bit
    c.aux = xor << 32 | fmask
    pre = b""
    if rng.random() < 0.3:
        pre = b"\x9c\x81\x0c\x24\x00\x00\x04\x00\x9d"       # pushf; orl $AC,(%rsp); popf
    c.insn = pre + b"\x0f\x05" + b"\x90" * rng.randrange(1, 3)
    c.events = ["cpl3->cpl0->cpl3" if c.cpl == 3 else "cpl0->cpl0"]
    c.events += [f"fmask-{n}" for b, n in ((TF, "tf"), (IF, "if"), (AC, "ac")) if fmask & b]
    c.events += [f"sysret-flips-{n}" for b, n in ((TF, "tf"), (AC, "ac"), (DF, "df")) if xor & b]
    if c.flags & GEN_TF and not fmask & TF:
        c.events.append("tf-through-handler")
    return c


def trip_event(c):
    """The event of a record whose gate takes it from CPL1-3 to CPL0 and
    back: an IDT gate whose DPL is at least the CPL (INT n, INT3, INTO),
    a call gate whose DPL is at least the CPL and the selector's RPL."""
    if c.cpl == 0:
        return []
    if c.env == ENV_GATE:
        enters = (c.aux >> 5 & 3) >= c.cpl
    elif c.env == ENV_CALLGATE:
        enters = (c.aux & 3) >= max(c.cpl, c.aux >> 4 & 3)
    else:
        enters = False
    return [f"cpl{c.cpl}->cpl0->cpl{c.cpl}"] if enters else []


# INT n vectors whose gate the record may borrow: none that the program
# itself could raise as an exception (#UD, #GP, #PF... would enter the
# borrowed gate with an error code or loop), not #DB.
INTN_VECTORS = [0, 4, 5, 17, 0x20, 0x41, 0x80, 0xfe, 0xff]


def gate_case(rng, idx):
    """INT n / INT3 / INTO through an IDT gate of DPL 0 or 3 (interrupt or
    trap gate) into gen_gate_stub, back with IRETQ; the stub may set or clear
    TF in its frame (IRET loading TF)."""
    kind = rng.choice(["int-n", "int-n", "int-n", "int3", "int3-cd03", "into", "into"])
    modes = (1, 2, 3) if kind == "into" and rng.random() < 0.85 else (0, 1, 2, 3)
    c = base_case(rng, idx, kind, modes, (0, 3))
    vec = {"int-n": rng.choice(INTN_VECTORS), "int3": 3, "int3-cd03": 3, "into": 4}[kind]
    insn = {"int-n": bytes([0xcd, vec]), "int3": b"\xcc", "int3-cd03": b"\xcd\x03",
            "into": b"\xce"}[kind]
    if kind == "into" and rng.random() < 0.7:
        c.regs[R_FLAGS] |= 0x800                        # OF: INTO raises #OF
    dpl = rng.choice([0, 3, 3])
    gtype = (0x8e if rng.random() < 0.6 else 0x8f) | dpl << 5
    tfop = rng.choice([0, 0, 1, 2])
    c.env, c.env_arg, c.aux = ENV_GATE, vec, tfop << 8 | gtype
    c.insn = insn + b"\x90" * rng.randrange(1, 4)
    c.events = [f"gate-dpl{dpl}", "trap-gate" if gtype & 1 else "interrupt-gate"] + trip_event(c)
    if tfop == 1:
        c.events.append("iretq-frame-sets-tf")
        c.form = "iretq-tf-frame"
    elif tfop == 2:
        c.events.append("iretq-frame-clears-tf")
    return c


def popf_clear_case(rng, idx):
    """POPF clearing the guest's TF (set from the start)."""
    c = base_case(rng, idx, "popf-tf-clear", (0, 1, 2, 3), (0, 3))
    c.flags |= GEN_TF
    c.insn = {0: b"\x9c\x48\x81\x24\x24\xff\xfe\xff\xff\x9d\x90\x90",
              1: b"\x9c\x81\x24\x24\xff\xfe\xff\xff\x9d\x90\x90",
              2: b"\x9c\x67\x81\x24\x24\xff\xfe\x9d\x90\x90",
              3: b"\x9c\x81\x24\x24\xff\xfe\xff\xff\x9d\x90\x90"}[c.mode]
    return c


GPRS = [R_AX, R_CX, R_DX, R_BX, R_BP, R_SI, R_DI]


def movdr_case(rng, idx):
    """MOV to DR0-3 and DR7 at CPL0 with an execute breakpoint on the next
    instruction (or one after it, or none: no enable bit), DR7.GD sometimes
    (the next MOV DR then raises #DB), a reserved DR7 bit sometimes (#GP);
    then MOV from them."""
    c = base_case(rng, idx, "movdr-bp", (0, 1, 2, 3), (0,))
    n = rng.randrange(4)
    ra, rb, rc, rd = rng.sample(GPRS, 4)
    to_drn = b"\x0f\x23" + bytes([0xc0 | n << 3 | ra])
    to_dr7 = b"\x0f\x23" + bytes([0xf8 | rb])
    from_drn = b"\x0f\x21" + bytes([0xc0 | n << 3 | rc])
    from_dr7 = b"\x0f\x21" + bytes([0xf8 | rd])
    prog = to_drn + to_dr7
    where = rng.choice(["next", "next", "after", "none"])
    nxt = len(prog)
    prog += b"\x90" + from_drn + from_dr7 + b"\x90"
    target = nxt if where == "next" else nxt + 1 if where == "after" else nxt
    dr7 = 0x400 | (0 if where == "none" else (rng.choice([1, 2, 3]) << (2 * n)))
    gd = rng.random() < 0.25
    if gd:
        dr7 |= 0x2000
    if c.mode == 0 and rng.random() < 0.08:
        dr7 |= 1 << rng.randrange(32, 64)               # reserved: MOV to DR7 #GP
        c.events.append("dr7-reserved-bit")
    c.regs[rb] = dr7
    c.regs[ra] = 0
    c.env, c.env_reg, c.aux = ENV_DR, ra, target
    c.insn = prog
    c.dr = (n, where, gd)
    needs = []
    if where != "none":
        needs.append("hw_breakpoint")
        c.events.append(f"dr{n}-exec-bp-{where}")
    if gd:
        needs.append("dr7_gd")
        c.events.append("dr7-gd")
        c.form = "movdr-gd"
    c.needs = needs
    return c


def disarm(c, lacking):
    """Runs C without what the host lacks: an execute breakpoint moved to data
    that is never executed, DR7.GD left clear, INT 1 for ICEBP (vmmlib.lacks
    names why)."""
    if "icebp" in lacking and c.insn[0] == 0xf1:
        c.insn = b"\xcd\x01" + c.insn[1:]
        c.disarmed = tuple(c.disarmed) + ("icebp",)
    if c.env != ENV_DR:
        return
    n, where, gd = c.dr
    if "hw_breakpoint" in lacking and where != "none":
        c.aux = 0xff
        c.disarmed = tuple(c.disarmed) + ("hw_breakpoint",)
    if "dr7_gd" in lacking and gd:
        # The DR7 value is in the register MOV to DR7 names.
        reg = c.insn[5] & 7
        c.regs[reg] &= ~0x2000
        c.disarmed = tuple(c.disarmed) + ("dr7_gd",)


def callgate_case(rng, idx):
    """A far call through a 64-bit call gate (DPL 0 or 3, selector RPL 0 or
    3) to CPL0 64-bit code, back with LRETQ: from CPL3 a privilege change,
    from compatibility and 16-bit code a mode change; TF is not cleared by
    the gate."""
    c = base_case(rng, idx, "callgate", (0, 1, 2, 3), (0, 3))
    dpl = rng.choice([0, 3, 3, 3])
    rpl = rng.choice([0, 3, 3])
    c.env, c.env_reg, c.aux = ENV_CALLGATE, R_BX, rpl << 4 | dpl
    c.regs[R_BX] = 0
    call = b"\x66\x67\xff\x1b" if c.mode == 2 else b"\xff\x1b"   # lcall *(%rbx) m16:32
    c.insn = call + b"\x90" * rng.randrange(1, 3)
    c.events = [f"callgate-dpl{dpl}-rpl{rpl}"] + trip_event(c)
    if c.mode:
        c.events.append("callgate-mode-change")
    return c


# The target's CPU vendor (main() reads it): SYSENTER and SYSEXIT are Intel's
# in long mode; AMD raises #UD for them there (APM vol. 3, SYSENTER).
AMD_LIKE = False
SYSENTER_CLASSES = {False: ("sysenter-sysexit", "sysenter-iretq", "sysenter-cs0"),
                    True: ("sysenter-ud",)}


def sysenter_case(rng, idx, kind):
    """SYSENTER from 64-bit or compatibility mode into gen_se_entry, which
    returns with SYSEXIT (CPL3 caller) or IRETQ (CPL0 caller); SYSENTER_CS 0
    (#GP(0)). TF is not cleared by SYSENTER: the guest's own single-step
    goes on in the handler. On AMD, the #UD from 64-bit code at CPL3 only:
    KVM intercepts that #UD to emulate SYSENTER, cannot in long mode, and
    stops the VM (KVM_EXIT_INTERNAL_ERROR) when the guest is at CPL0; and
    QEMU's TCG runs it in compatibility mode, into a CS with both L and D
    set that the next VMRUN refuses."""
    if AMD_LIKE:
        kind = "sysenter-ud"
    cpls = {"sysenter-iretq": (0,), "sysenter-sysexit": (3,), "sysenter-ud": (3,)}.get(kind, (0, 3))
    c = base_case(rng, idx, kind, (0,) if AMD_LIKE else (0, 1), cpls)
    save = b"\x48\x89\xe1" if c.mode == 0 else b"\x89\xe1"      # mov %rsp, %rcx
    cs0 = kind == "sysenter-cs0"
    c.env, c.env_arg = ENV_SYSENTER, (0 if c.cpl == 3 else 1) | (2 if cs0 else 0)
    c.insn = save + b"\x0f\x34" + b"\x90" * rng.randrange(1, 3)
    c.aux = len(save) + 2
    if AMD_LIKE:
        c.events = ["sysenter-ud-long-mode"]
    elif cs0:
        c.events = ["sysenter-cs-null"]
    else:
        c.events = ["cpl3->cpl0->cpl3" if c.cpl == 3 else "cpl0->cpl0"]
    if c.flags & GEN_TF:
        c.events.append("tf-through-handler")
    return c


# Locked (and one plain) operations on disp8(%rbx): opcode bytes, operand size.
MIX_OPS = [(b"\xf0\x01\x43", 4), (b"\xf0\x0f\xc1\x4b", 4), (b"\xf0\x09\x53", 4),
           (b"\xf0\xff\x43", 4), (b"\xf0\x0f\xb1\x4b", 4), (b"\x66\xf0\x01\x43", 2),
           (b"\xf0\x0f\xba\x6b", 4), (b"\x89\x43", 4), (b"\xf0\x48\x01\x43", 8)]


def mix_op(rng, ops, target):
    """One of OPS (MIX_OPS entries) at a displacement from the base, half of
    them across the boundary 8 bytes above it: its encoding, whether it
    has LOCK, and whether its operand crosses a line (the window is page
    aligned, TARGET the base's offset from a page)."""
    op, size = rng.choice(ops)
    d = 8 - rng.randrange(1, size) if rng.random() < 0.5 else rng.randrange(-8, 16)
    enc = op + struct.pack("<b", d) + (bytes([rng.randrange(256)]) if op.endswith(b"\x6b") else b"")
    return enc, mix_locked(op), (target + d) % 64 + size > 64


def lock_mix_case(rng, idx):
    """Two to four locked operations at displacements from one base, some
    split across a line or page and some not, in one program."""
    c = base_case(rng, idx, "lock-mix", (0, 1, 2, 3), (0, 3))
    c.lock, c.addr_reg = True, R_BX
    c.regs[R_BX] = 0
    c.placement = rng.choice(["line", "page"])
    c.target = 64 * rng.randrange(1, 60) - 8 if c.placement == "line" else -8
    if rng.random() < 0.25:
        c.page0, c.page1 = rng.choice(STATES), rng.choice(STATES)
    if c.cpl == 3 and rng.random() < 0.2:
        c.flags |= GEN_AC
    prog, split, whole = b"", 0, 0
    c.mix = []                                          # the operations, one by one
    for _ in range(rng.randrange(2, 5)):
        enc, locked, crosses = mix_op(rng, [o for o in MIX_OPS if c.mode == 0 or o[1] != 8],
                                      c.target)
        if c.mode == 2:
            # 16-bit code: addr32 for (%ebx); a 32-bit operand needs 0x66 and a 16-bit one none.
            enc = b"\x67" + (enc[1:] if enc[0] == 0x66 else b"\x66" + enc)
        if len(prog) + len(enc) > 30:
            break
        prog += enc
        c.mix.append(enc)
        if locked:
            if crosses:
                split += 1
            else:
                whole += 1
    c.insn = prog + b"\x90"
    c.events = [f"locked-split x{split}" if split else "no-split-in-program"]
    if split and whole:
        c.events.append("split-and-not-in-one-program")
    return c


# mode-switch's parts: (name, bytes in either mode). POPF sets or clears TF
# through bit 0 of the flags' second byte (orb/andb at 1(%esp)).
SWITCH_PARTS = [("pushf", b"\x9c\x58"), ("tf-on", b"\x9c\x80\x4c\x24\x01\x01\x9d"),
                ("tf-off", b"\x9c\x80\x64\x24\x01\xfe\x9d"), ("int3", b"\xcc"), ("none", b"")]


def switch_part(name, enc):
    """A part of a mode-switch program in each code size: (name, 32-bit,
    64-bit, 16-bit encoding). A locked operation addresses through EBX
    (0x67 in 64-bit and 16-bit code); the 16-bit encoding swaps the
    operand size (0x66), and POPF's TF byte at 1(%esp) needs 0x67 there.
    None where a size has no encoding (REX.W outside 64-bit code)."""
    if name == "locked":
        wide = enc[:2] == b"\xf0\x48"
        return (name, None if wide else enc, b"\x67" + enc,
                None if wide else b"\x67" + (enc[1:] if enc[0] == 0x66 else b"\x66" + enc))
    return name, enc, enc, enc.replace(b"\x80", b"\x67\x80")


def named_part(name):
    """switch_part() of SWITCH_PARTS' entry NAME."""
    return switch_part(name, dict(SWITCH_PARTS)[name])


def pinned_switch_parts():
    """The pinned mode-switch records' parts: PUSHF, a LOCK ADD split
    across the window's page boundary (8 bytes below it, through EBX), a
    LOCK OR that is not split."""
    return (named_part("pushf"), switch_part("locked", b"\xf0\x01\x43\x06"),
            switch_part("locked", b"\xf0\x09\x53\x08"))


def push_sel(sel):
    """PUSH of a selector: imm8 is sign-extended, so those above 0x7f take imm32."""
    return b"\x6a" + bytes([sel]) if sel < 0x80 else b"\x68" + struct.pack("<I", sel)


def switch_program(parts, cpl, mode=1):
    """mode-switch's program: part A in compatibility mode, a far return to
    the 64-bit code segment of CPL, part B, a far return to the 32-bit one,
    part Z; the targets from RSI (the program's address). In pm16-pae
    (mode 7) switch16_program's instead."""
    if mode == 7:
        return switch16_program(parts, cpl)
    a, b, z = (p64 if i == 1 else p32 for i, (_, p32, p64, _) in enumerate(parts))
    p64, p32 = push_sel(CS64[cpl]), push_sel(CS32[cpl])
    k = len(a) + 3 + len(p64) + 2               # lea; push $cs64; push %eax; lret
    k2 = k + len(b) + 4 + len(p32) + 3          # lea (0x67); push $cs32; push %rax; lretq
    return (a + b"\x8d\x46" + bytes([k]) + p64 + b"\x50\xcb" +
            b + b"\x67\x8d\x46" + bytes([k2]) + p32 + b"\x50\x48\xcb" + z)


def switch16_program(parts, cpl):
    """The same outside IA-32e mode, in 16-bit protected mode (pm16-pae,
    the program at offset 0 of its CS.D=0 segment, whose base is RSI):
    part A in 16-bit code, a 32-bit far return to the flat 32-bit code
    segment of CPL at RSI + its offset, part B in 32-bit code, a far JMP
    (ptr16:16) back to the 16-bit segment at the offset of part Z."""
    a, b, z = (p32 if i == 1 else p16 for i, (_, p32, _, p16) in enumerate(parts))
    p32 = b"\x66" + push_sel(CS32[cpl])
    k = len(a) + 5 + len(p32) + 4              # lea (0x66 0x67); pushl $cs32; pushl %eax; lretl
    k2 = k + len(b) + 6                         # ljmpw $cs16, $k2
    return (a + b"\x66\x67\x8d\x46" + bytes([k]) + p32 + b"\x66\x50\x66\xcb" +
            b + b"\x66\xea" + struct.pack("<HH", k2, CS16[cpl]) + z)


def switch_real_program(parts):
    """The same from real mode (at CS:IP REAL_SEG:RX_PROG): part A, MOV
    EDI to CR0 (PE set: ENV_REAL_PE) and a far JMP to 16-bit protected
    mode on a segment of the same base, part B, MOV EBP to CR0 (PE clear)
    and a far JMP back to real mode, part Z; 16-bit code throughout."""
    a, b, z = (p16 for _, _, _, p16 in parts)
    k = len(a) + 8                              # mov %edi, %cr0; ljmp $CS16_REAL, $k
    k2 = k + len(b) + 8                         # mov %ebp, %cr0; ljmp $REAL_SEG, $k2
    return (a + b"\x0f\x22\xc7\xea" + struct.pack("<HH", RX_PROG + k, CS16_REAL) +
            b + b"\x0f\x22\xc5\xea" + struct.pack("<HH", RX_PROG + k2, REAL_SEG) + z)


def switch_lm_off_program(parts, lidt=False):
    """The same leaving IA-32e mode (compatibility mode at CPL0, the
    program and stack identity-mapped): part A, MOV EBP to CR0 (PG clear:
    32-bit protected mode without paging, EFER.LMA clear), ESI added to
    EBX (the window where its RAM is: ENV_LM_OFF), part B, ESI taken off
    again, MOV EDI to CR0 (PG set with EFER.LME: compatibility mode
    again), part Z; 32-bit code throughout. The IDT has a #DB gate in both
    formats (ENV_LM_OFF) but a #BP gate in IA-32e mode's only. So with
    LIDT, part B is framed by LIDT (%EDX) and LIDT 8(%EDX), which load
    legacy_exec's IDT and IA-32e mode's again (ENV_LM_OFF's env_arg 1
    points EDX at their images): INT3 may come in part B then."""
    a, b, z = (p32 for _, p32, _, _ in parts)
    if lidt:
        b = b"\x0f\x01\x1a" + b + b"\x0f\x01\x5a\x08"
    return a + b"\x0f\x22\xc5\x01\xf3" + b + b"\x29\xf3\x0f\x22\xc7" + z


def mode_switch_case(rng, idx):
    """Compatibility mode to 64-bit mode and back inside one program: a far
    return to the 64-bit code segment of the CPL and one back to the
    32-bit one, the targets computed from RSI (ENV_SELF: the program's own
    address). Each of the three parts is PUSHF, POPF setting or clearing
    TF, INT3, a locked operation on the window (split or not), or nothing.
    The 64-bit part addresses through EBX (0x67): the upper halves of
    registers are not defined across the switch. Its pages stay present
    and writable: a fault there would come back through the compatibility
    mode fixup. legacyize moves some to 16-bit protected mode
    (legacy_switch)."""
    c = base_case(rng, idx, "mode-switch", (1,), (0, 3))
    c.addr_reg, c.regs[R_BX] = R_BX, 0
    c.env, c.env_reg, c.aux, c.regs[R_SI] = ENV_SELF, R_SI, 0, 0
    c.placement = rng.choice(["line", "page"])
    c.target = 64 * rng.randrange(1, 60) - 8 if c.placement == "line" else -8

    def part(wide):
        if rng.random() < 0.4:
            enc, locked, crosses = mix_op(rng, [o for o in MIX_OPS if o[1] != 8 or wide], c.target)
            if locked:
                c.lock = True
                c.events.append("locked-split" if crosses else "locked-not-split")
            return switch_part("locked", enc)
        return switch_part(*rng.choice(SWITCH_PARTS))

    while True:
        c.lock, c.events = False, []
        c.parts = (part(False), part(True), part(False))
        na, nb, nz = (p[0] for p in c.parts)
        prog = switch_program(c.parts, c.cpl)
        if len(prog) <= 32:
            break
    c.insn = prog
    c.events.append(f"compat-64-compat: {na}/{nb}/{nz}")
    if "tf-on" in (na, nb) or c.flags & GEN_TF:
        c.events.append("switch-with-tf")
    return c


# Divergences --explore finds that are not the VMM's but the oracle's (QEMU
# TCG's; each entry says what differs; --only N --log shows a record's
# events: docs/testing.md, "The generator"). --avoid-known (the fixed-seed
# batch) runs each record that could show one without what triggers it,
# and says how many it changed. The VMM's own divergences are fixed, each
# with a PINNED record: none is listed here.
KNOWN_BUGS = {
    "tcg-syscall-arith-flags":
        "oracle: SYSCALL with TF left set by FMASK: TCG's #DB frames in the handler have "
        "the arithmetic flags cleared (RFLAGS & ~FMASK keeps them: emulate has them)",
    "tcg-cmpxchg-then-locked-op":
        "oracle (most likely): LOCK CMPXCHG split across a page, then LOCK BTS, in one program "
        "at CPL3: registers/memory differ, and TCG's result without TF differs from its own "
        "with TF (one instruction per block), which is emulate's",
    "tcg-cs-override-write":
        "oracle: a write through CS in compatibility mode completes on TCG where the SDM "
        "says #GP(0) (--host-info's cs_write_gp probe; seed 18 record 245 of the 52-card "
        "deck, 2e 66 89 0c 7b: ok on the CPU, #GP(0) under emulate, which delivers the "
        "certain fault itself)",
    "tcg-locked-op-then-lock-bt-imm":
        "oracle: LOCK BTS/BTR/BTC $imm8 after another locked operation in one program (no "
        "CMPXCHG needed): memory differs, and TCG with TF (one instruction per block) gives "
        "emulate's result (seed 12 record 348 of 319aae9's deck: h=cad04229 without TF, "
        "1c5a9049 with it and under emulate)",
    "tcg-nested-busy-tr-abort":
        "oracle: QEMU aborts (\"invalid tss type\", the lab boot with it) delivering an event "
        "from CPL1-3 outside IA-32e mode once TR's cached type is busy, which VMRUN loads "
        "from the VMCB after the VMM's KVM_SET_SREGS (KVM reports TR busy, as the CPU holds "
        "it). A lock-mix program with the guest's TF: the VMM delivers the trap of one "
        "operation, the CPU the #PF of the next (seed 56 record 92 of adb3ef4's deck, "
        "pm32-pae at CPL3: 89 43 0c, then f0 0f c1 4b 06 across a page the CPL3 write faults on); "
        "or a fault behind MOV SS with the guest's TF, the pair stepped, the CPU delivering "
        "its fault (seed 92 record 248 of 2026-12-06's deck, pm32-pae at CPL1: 8c d1 8e d1 f4)",
}
# What QEMU prints where it aborts on one of KNOWN_BUGS (the lab's boot dies).
ORACLE_ABORTS = {"tcg-nested-busy-tr-abort": "invalid tss type"}


def mix_locked(op):
    """A lock-mix operation has LOCK (after its 0x66/0x67 prefixes)."""
    return op.lstrip(b"\x66\x67").startswith(b"\xf0")


def avoid_known(c):
    """Changes C so that no KNOWN_BUGS divergence can show; returns the bugs avoided."""
    hit = []
    if c.env == ENV_SYSCALL and c.flags & GEN_TF and not c.aux & TF:
        c.aux |= TF
        hit.append("tcg-syscall-arith-flags")
    if c.form == "lock-mix" and any(b"\x0f\xb1" in op for op in c.mix[:-1]):
        # Without the LOCK CMPXCHG that other operations follow.
        c.mix = [op for op in c.mix[:-1] if b"\x0f\xb1" not in op] + c.mix[-1:]
        c.insn = b"".join(c.mix) + b"\x90"
        hit.append("tcg-cmpxchg-then-locked-op")
    if getattr(c, "cs_write", False):
        # Through SS instead, flat too: the same address, writable.
        c.insn = c.insn[:c.prefix_len].replace(b"\x2e", b"\x36", 1) + c.insn[c.prefix_len:]
        c.cs_write = False
        hit.append("tcg-cs-override-write")
    if c.form == "lock-mix" and c.flags & GEN_TF and c.cpl and c.mode in (4, 5, 6, 7, 9) and \
            (c.page0, c.page1) != (PG_NORMAL, PG_NORMAL):
        # Without the guest's TF: no event the VMM delivers before a #PF the CPU does.
        c.flags &= ~GEN_TF
        hit.append("tcg-nested-busy-tr-abort")
    if "fault-behind-movss" in c.events and c.flags & GEN_TF and c.cpl and \
            c.mode in (4, 5, 6, 7, 9) and c.form not in ("movss-fault-ud2", "movss-fault-syscall-sce0"):
        # Without it the VMM performs the pair: the event is its delivery, not the CPU's
        # (a #UD it delivers with the guest's TF too).
        c.flags &= ~GEN_TF
        hit.append("tcg-nested-busy-tr-abort")
    if c.form == "lock-mix":
        # Without the LOCK BT $imm8 that comes after a locked operation.
        keep, locked = [], False
        for op in c.mix:
            if locked and mix_locked(op) and b"\x0f\xba" in op:
                continue
            keep.append(op)
            locked = locked or mix_locked(op)
        if len(keep) < len(c.mix):
            c.mix = keep
            c.insn = b"".join(keep) + b"\x90"
            hit.append("tcg-locked-op-then-lock-bt-imm")
    c.avoided = hit
    return hit


# Classes --explore must cover (a fixed-seed batch checks each appeared).
EXPLORE_CLASSES = ["pushf", "pushf-osz", "popf-tf", "popf-tf-clear", "fault-ud2", "fault-hlt-cpl3",
                   "fault-cli-cpl3", "fault-in-cpl3", "movdr", "fault-syscall-sce0",
                   "fault-sysret-cpl3", "int3", "lock16", "syscall-sysretq", "syscall-iretq",
                   "int-n", "int3-cd03", "into", "iretq-tf-frame", "movdr-bp", "movdr-gd",
                   "callgate", "lock-mix", "icebp", "fault-sysexit-cpl3", "sysenter-sysexit",
                   "sysenter-iretq", "sysenter-cs0", "sysenter-ud", "mode-switch", "movss-pushf",
                   "movss-popf-tf", "gen"]


# --explore deals its records from a shuffled deck of generators (how many
# cards each has: its weight), so that every class turns up within each
# deck's worth of records (55) and consecutive records change class, mode
# and CPL at random.
DECK = ([(lambda rng, idx, n=n: probe_case(rng, idx, n)) for n in dict.fromkeys(p[0] for p in PROBES)]
        + [lock16_case] * 2 + [syscall_case] * 4 + [gate_case] * 8 + [popf_clear_case]
        + [movdr_case] * 4 + [callgate_case] * 3 + [lock_mix_case] * 4 + [mode_switch_case] * 3 + [
            lambda rng, idx, k=k: sysenter_case(rng, idx, k)
            for k in ("sysenter-sysexit", "sysenter-sysexit", "sysenter-iretq", "sysenter-cs0")]
        + [None] * 9)


def pinned_pae_pf_handler_tf(idx):
    """LOCK XOR across a line of a page that is not present, in PAE paging
    at CPL0, with the guest's TF. The #PF handler runs unwatched up to the
    MOV to CR0 that takes the executor back to long mode, which KVM
    emulates in the lab: its step exit is no trap of the guest's, owes it
    no #DB and leaves its TF clear (docs/design.md, "Stepping that
    survives the guest")."""
    c = Case()
    c.idx, c.mode, c.cpl = idx, 6, 0
    c.form, c.size, c.lock = "xor", 2, True
    c.insn = bytes.fromhex("3ef0663186fcfdffff")    # lock xor %ax, %ds:-0x204(%esi)
    c.addr_reg, c.seg, c.placement, c.target = R_SI, 0, "line", 64 * 5 - 1
    c.page0, c.page1 = PG_NORMAL, PG_W | PG_U
    c.flags, c.seed, c.ds_base = GEN_TF, 0x5eed0235, 0
    c.regs = [0] * R_COUNT
    c.regs[R_SI] = 0x204
    c.events = ["outside-ia32e", "pinned"]
    return c


def pinned_movdr7_reserved_tf(idx):
    """MOV to DR7 with a reserved bit (40) in 64-bit code at CPL0 with the
    guest's TF: #GP(0), a certain fault the VMM delivers (its frame has
    the guest's TF, no trap owed), and no breakpoint armed."""
    c = Case()
    c.idx, c.mode, c.cpl = idx, 0, 0
    c.form, c.size, c.lock = "movdr-bp", 4, False
    # mov %rax,%dr0; mov %rbx,%dr7; nop; mov %dr0,%rcx; mov %dr7,%rdx; nop
    c.insn = bytes.fromhex("0f23c0 0f23fb 90 0f21c1 0f21fa 90")
    c.addr_reg, c.seg, c.placement, c.target = 0xff, 0, "none", 0
    c.page0 = c.page1 = PG_NORMAL
    c.flags, c.seed, c.ds_base = GEN_TF, 0x5eed0d07, 0
    c.regs = [0] * R_COUNT
    c.regs[R_BX] = 0x400 | 1 | 1 << 40
    c.env, c.env_reg, c.aux = ENV_DR, R_AX, 6     # DR0: the NOP behind MOV DR7
    c.events = ["dr7-reserved-bit", "pinned"]
    return c


def pinned_split_lock_dr0_beside_tf(idx):
    """MOV to DR0 and DR7 arming an instruction breakpoint on the NOP after
    the LOCK XOR, then that LOCK XOR split across a cache line, in 64-bit
    code at CPL0 with the guest's TF. A CPU that reports an enabled
    instruction breakpoint beside the step trap (QEMU's TCG) gives the
    LOCK XOR's trap B0 and BS; so must the #DB emulate makes for the split
    lock it completes (docs/design.md, "Host quirks"). The #DB handler sets
    RF, so the NOP then runs. Needs a host whose breakpoints fire."""
    c = Case()
    c.idx, c.mode, c.cpl = idx, 0, 0
    c.form, c.size, c.lock = "xor", 4, True
    # mov %rax,%dr0; mov %rbx,%dr7; lock xor %eax,-0x204(%rsi); nop; nop
    c.insn = bytes.fromhex("0f23c0 0f23fb f03186fcfdffff 90 90")
    c.addr_reg, c.seg, c.placement, c.target = R_SI, 0, "line", 64 * 5 - 2
    c.page0 = c.page1 = PG_NORMAL
    c.flags, c.seed, c.ds_base = GEN_TF, 0x5eed0d08, 0
    c.regs = [0] * R_COUNT
    c.regs[R_BX] = 0x401                            # L0, execute
    c.regs[R_SI] = 0x204
    c.env, c.env_reg, c.aux = ENV_DR, R_AX, 13     # DR0: the NOP behind the LOCK XOR
    c.dr, c.needs = (0, "next", False), ["hw_breakpoint"]
    c.events = ["locked-split", "dr0-exec-bp-next", "pinned"]
    return c


def pinned_vm86(idx, form, insn, iopl3):
    """A virtual-8086 mode record with the guest's TF, normal pages, registers 0."""
    c = Case()
    c.idx, c.mode, c.cpl = idx, 9, 3
    c.form, c.size, c.lock = form, 4, b"\xf0" in insn
    c.insn = insn
    c.addr_reg, c.seg, c.placement, c.target = 0xff, 0, "none", 0
    c.page0 = c.page1 = PG_NORMAL
    c.flags, c.seed, c.ds_base = GEN_TF | (GEN_IOPL3 if iopl3 else 0), 0x5eed0086, 0
    c.regs = [0] * R_COUNT
    c.events = ["outside-ia32e", f"vm86-iopl{3 if iopl3 else 0}", "pinned"]
    return c


def pinned_vm86_intn_iopl0_tf(idx):
    """Seed 9 record 226 of the deck with vm86: INT 1 (ICEBP as the lab runs
    it) in virtual-8086 mode at IOPL 0 with the guest's TF: #GP(0) and no
    #DB. With 00b8037's vmm the CPU's #GP ran its handler with the VMM's
    TF, whose step there became a #DB for the guest."""
    return pinned_vm86(idx, "icebp", b"\xcd\x01\x90", False)


def pinned_vm86_hlt_after_db(idx):
    """Seed 5 record 143 of the same deck: LOCK ADD in virtual-8086 mode
    with the guest's TF, whose #DB the VMM delivers, then the executor's
    HLT: #GP(0). With b34158f's vmm the CPU raised that #GP, and the lab's
    QEMU aborted ("invalid tss type": the TR cache the VMM had written
    back holds the busy type); now the VMM delivers it, a certain fault."""
    c = pinned_vm86(idx, "lock16", b"\x67\xf0\x01\x03", True)
    c.addr_reg, c.placement, c.target = R_BX, "inline", 0x64
    return c


# LCALL *(%esp) to TSS B, its m16:32 or m16:16 pointer pushed before and
# dropped after by LEA (flags untouched): 32-bit code, 16-bit code.
FAR_CALL_TSS_INDIRECT = {False: b"\x68\xb0\x00\x00\x00\x6a\x00\xff\x1c\x24\x8d\x64\x24\x08\x90",
                         True: b"\x68\xb0\x00\x6a\x00\x67\xff\x1c\x24\x67\x8d\x64\x24\x04\x90"}


def far_jmp(call):
    """far_tss's far CALL to TSS B as a far JMP: no back link, no NT;
    lg_x_task returns with a far JMP to TSS A."""
    if call[0] == 0x9a:
        return b"\xea" + call[1:]
    return call.replace(b"\xff\x1c\x24", b"\xff\x2c\x24")


def pinned_gate(idx, mode, cpl, kind, insn, vec, gtype, iopl3=False, tfop=0, tf=True):
    """A gate record (gate_case's environment) built by hand, with the
    guest's TF (unless tf is False), normal pages and registers 0."""
    c = Case()
    c.idx, c.mode, c.cpl = idx, mode, cpl
    c.form, c.size, c.lock = kind, 4, False
    c.insn = insn
    c.addr_reg, c.seg, c.placement, c.target = 0xff, 0, "none", 0
    c.page0 = c.page1 = PG_NORMAL
    c.flags = (GEN_TF if tf else 0) | (GEN_IOPL3 if iopl3 else 0)
    c.seed, c.ds_base = 0x5eed0a7e, 0
    c.regs = [0] * R_COUNT
    c.env, c.env_arg, c.aux = ENV_GATE, vec, tfop << 8 | gtype
    c.events = ["outside-ia32e", "gate-outside-ia32e", "pinned"] + trip_event(c)
    if mode == 9:
        c.events.append(f"vm86-iopl{3 if iopl3 else 0}")
    return c


def pinned_legacy_intn_dpl0_gate(idx):
    """Seed 1 record 96 of the deck with legacy gates: INT $0x11 at CPL2 in
    32-bit protected mode through a DPL0 gate, with the guest's TF:
    #GP(0x8a) and no #DB. With 8680978's vmm the INT was stepped, the
    CPU's #GP ran its handler with the VMM's TF, and the step there became
    a #DB for the guest."""
    return pinned_gate(idx, 4, 2, "int-n", b"\xcd\x11\x90\x90\x90", 0x11, 0x8e)


def pinned_vm86_into_dpl0_gate(idx):
    """Seed 1 record 290, the same in virtual-8086 mode: INTO (OF set) at
    IOPL 3 through a DPL0 trap gate: #GP(0x22)."""
    c = pinned_gate(idx, 9, 3, "into", b"\xce\x90", 4, 0x8f, iopl3=True)
    c.regs[R_FLAGS] |= 0x800
    return c


def pinned_vm86_intn_gate_sets_tf(idx):
    """INT $0x41 from virtual-8086 mode at IOPL 3 through a DPL3 interrupt
    gate to CPL0 (SS0:ESP0; GS, FS, DS, ES pushed), whose handler sets TF
    in the frame and returns with IRETD: single steps in virtual-8086 mode
    from there, as on the CPU."""
    return pinned_gate(idx, 9, 3, "iretq-tf-frame", b"\xcd\x41\x90\x90", 0x41, 0xee,
                       iopl3=True, tfop=1)


def pinned_pm16_gate16_sets_tf(idx):
    """INT $0x41 in 16-bit protected mode at CPL0 with the guest's TF,
    through a 16-bit interrupt gate (a frame of 2-byte slots), whose
    handler sets TF in the frame and returns with a 16-bit IRET."""
    c = pinned_gate(idx, 7, 0, "iretq-tf-frame", b"\xcd\x41\x90\x90", 0x41, 0x86, tfop=1)
    c.events.append("gate-16-bit")
    return c


def pinned_task_gate_sets_tf(idx):
    """Seed 2 record 255 of the deck with task gates: INT $4 at CPL0 in
    32-bit protected mode through a task gate, without the guest's TF;
    task B sets TF in TSS A's saved EFLAGS and returns with IRET. With
    2740d07's vmm the INT was stepped: TSS A saved the VMM's TF, and the
    guest's single steps after the return were taken for the VMM's."""
    c = pinned_gate(idx, 4, 0, "iretq-tf-frame", b"\xcd\x04\x90", 4, 0x85, tfop=1, tf=False)
    c.events.append("task-gate")
    return c


def pinned_vm86_task_gate(idx):
    """Seed 3 record 188: INT $0x80 from virtual-8086 mode at IOPL 3
    through a DPL3 task gate (TSS A saves EFLAGS with VM set and the
    virtual-8086 segments; the IRET back returns there)."""
    c = pinned_gate(idx, 9, 3, "int-n", b"\xcd\x80\x90\x90", 0x80, 0xe5, iopl3=True, tf=False)
    c.events.append("task-gate")
    return c


def pinned_far_call_tss_tf(idx):
    """A far CALL to TSS B at CPL0 in 32-bit protected mode with the
    guest's TF: the task switch saves TF set in TSS A's EFLAGS, task B
    runs with its own (clear) and returns by IRET, the trap follows
    there. The VMM steps it: a step exit follows in task B, where
    task_switched() puts the guest's TF in TSS A's image."""
    c = pinned_gate(idx, 4, 0, "int-n", b"\x9a\x00\x00\x00\x00\xb0\x00\x90", 0x41, 0x85)
    c.far_tss = True
    c.events += ["task-gate", "far-call-to-tss"]
    return c


def pinned_far_call_tss_indirect(idx):
    """A far CALL to TSS B in 16-bit protected mode with PAE paging,
    through a m16:16 pointer on the stack (LCALL *(%esp), FF /3), without
    the guest's TF: TSS A's saved EFLAGS must not show the VMM's."""
    c = pinned_gate(idx, 7, 0, "int-n", FAR_CALL_TSS_INDIRECT[True], 0x41, 0x85, tf=False)
    c.far_tss = True
    c.events += ["task-gate", "far-call-to-tss", "far-call-indirect"]
    return c


def pinned_far_jmp_tss_clears_tf(idx):
    """A far JMP to TSS B at CPL0 in 32-bit protected mode with PAE paging
    and the guest's TF: task B clears TF in TSS A's image and JMPs back,
    so the single steps end there as on the CPU; the VMM takes the
    guest's TF from the image each switch loads (task_switched())."""
    c = pinned_gate(idx, 6, 0, "iretq-tf-frame", b"\xea\x00\x00\x00\x00\xb0\x00\x90\x90",
                    0x41, 0x85, tfop=2)
    c.far_tss = True
    c.events += ["task-gate", "far-call-to-tss", "far-jmp-to-tss"]
    return c


def pinned_real_pm16_split_lock(idx):
    """A mode-switch program in real mode: PUSHF, into 16-bit protected
    mode (MOV to CR0, far JMP) for a LOCK ADD split across the window's
    page boundary, back to real mode for a LOCK OR that is not split.
    emulate must detect the split lock between the two switches."""
    c = pinned_gate(idx, 8, 0, "mode-switch", b"", 0, 0, tf=False)
    c.env, c.env_arg, c.env_reg, c.aux = ENV_REAL_PE, 0, 0xff, 0
    c.addr_reg, c.placement, c.target, c.lock = R_BX, "page", -8, True
    c.parts = pinned_switch_parts()
    c.insn = switch_real_program(c.parts)
    c.events = ["outside-ia32e", "pinned", "locked-split", "locked-not-split",
                "real-pm16-real: pushf/locked/locked"]
    return c


def pinned_ljmp_unbacked_pm32_tf(idx):
    """JMP far through a pointer where there is no RAM (MMIO, no device),
    in 32-bit protected mode with 32-bit paging at CPL0 and the guest's
    TF: KVM's emulator reads all-ones, selector 0xffff, past the GDT:
    #GP(0xfffc). Its handler runs unwatched up to the MOV to CR0 that KVM
    emulates; the VMM reads the pointer as the guest does (all-ones past
    RAM), so that step exit is not the JMP completing (docs/stepping.md,
    "Afterwards")."""
    return pinned_paging32_esi(idx, "ffaefcfdffff90", "line", -0x100,      # ljmp *-0x204(%esi)
                               PG_NORMAL | PG_NORAM, PG_NORMAL)


def pinned_lm_off_split_lock(idx):
    """A mode-switch program that leaves IA-32e mode: PUSHF in
    compatibility mode, CR0.PG cleared for a LOCK ADD split across the
    window's page boundary in 32-bit protected mode without paging, PG set
    again for a LOCK OR that is not split, then INT3 (the 64-bit IDT's).
    emulate must detect the split lock where paging is off."""
    c = pinned_gate(idx, 1, 0, "mode-switch", b"", 0, 0, tf=False)
    c.env, c.env_arg, c.env_reg, c.aux = ENV_LM_OFF, 0, 0xff, 0
    c.regs[R_BP] = c.regs[R_SI] = c.regs[R_DI] = 0
    c.addr_reg, c.placement, c.target, c.lock = R_BX, "page", -8, True
    c.parts = pinned_switch_parts()
    c.insn = switch_lm_off_program(c.parts) + b"\xcc"
    c.events = ["leaves-ia32e", "pinned", "locked-split", "locked-not-split",
                "compat-pm32-compat: pushf/locked/locked"]
    return c


def pinned_lm_off_tf(idx):
    """The same with the guest's TF from part A to part Z: POPF sets it in
    compatibility mode, the MOV to CR0 that clears PG traps through the
    IDT's 32-bit #DB gate (ENV_LM_OFF), PUSHF and a LOCK ADD split across
    the window's page boundary trap there too, the MOV that sets PG again
    through the 64-bit one, and POPF clears it. emulate must deliver each
    trap with the guest's EFLAGS and detect the split lock between them."""
    c = pinned_lm_off_split_lock(idx)
    pushf, split, _ = pinned_switch_parts()
    c.parts = (named_part("tf-on"), ("pushf-locked", pushf[1] + split[1], None, None),
               named_part("tf-off"))
    c.insn = switch_lm_off_program(c.parts)
    c.events = ["leaves-ia32e", "leaves-ia32e-with-tf", "switch-with-tf", "pinned",
                "locked-split", "compat-pm32-compat: tf-on/pushf-locked/tf-off"]
    return c


def pinned_lm_off_int3_lidt(idx):
    """A program that leaves IA-32e mode and loads legacy_exec's IDT
    there (ENV_LM_OFF, env_arg 1): PUSHF in compatibility mode, INT3
    through that IDT's #BP gate and a LOCK ADD split across the window's
    page boundary with paging off, IA-32e mode's IDT loaded again and PG
    set, a LOCK OR that is not split. emulate must read the IDT LIDT
    loaded, and detect the split lock after it."""
    c = pinned_lm_off_split_lock(idx)
    pushf, split, whole = pinned_switch_parts()
    c.env_arg, c.regs[R_DX] = 1, 0
    c.parts = (pushf, ("int3-locked", b"\xcc" + split[1], None, None), whole)
    c.insn = switch_lm_off_program(c.parts, lidt=True)
    c.events = ["leaves-ia32e", "lidt-outside-ia32e", "int3-outside-ia32e", "pinned",
                "locked-split", "locked-not-split", "compat-pm32-compat: pushf/int3-locked/locked"]
    return c


def pinned_lm_off_int3_tf(idx):
    """The same with the guest's TF from part A to part Z and INT3 alone in
    part B: each LIDT traps through the IDT it loads, the first through
    legacy_exec's, the second through IA-32e mode's (its 8-byte #DB gate),
    and INT3's frame in between holds the guest's TF. emulate must deliver
    each event through the IDT the guest loaded last, with the guest's
    EFLAGS."""
    c = pinned_lm_off_int3_lidt(idx)
    c.parts = (named_part("tf-on"), named_part("int3"), named_part("tf-off"))
    c.insn = switch_lm_off_program(c.parts, lidt=True)
    c.lock = False
    c.events = ["leaves-ia32e", "leaves-ia32e-with-tf", "lidt-outside-ia32e",
                "int3-outside-ia32e", "switch-with-tf", "pinned",
                "compat-pm32-compat: tf-on/int3/tf-off"]
    return c


def pinned_legacy_ud_tf(idx, insn):
    """A 32-bit protected mode record at CPL0 with the guest's TF whose
    program faults at once: normal pages, registers 0."""
    c = Case()
    c.idx, c.mode, c.cpl = idx, 4, 0
    c.form, c.size, c.lock = "gen", 4, b"\xf0" in insn
    c.insn = insn
    c.addr_reg, c.seg, c.placement, c.target = 0xff, 0, "none", 0
    c.page0 = c.page1 = PG_NORMAL
    c.flags, c.seed, c.ds_base = GEN_TF, 0x5eed0384, 0
    c.regs = [0] * R_COUNT
    c.events = ["outside-ia32e", "pinned"]
    return c


def pinned_real_movss_ud2(idx):
    """MOV SS, then UD2, in real mode with the guest's TF clear: the pair
    the VMM performs outside protected mode. Stepped (before 06fe8ac), the
    handler ran unwatched on the lab, counted (vmm --stats: 1 unchecked
    run), though its frame agreed: KVM queues the #UD itself, without
    the VMM's TF."""
    c = pinned_legacy_ud_tf(idx, MOVSS + b"\x0f\x0b")
    c.mode, c.form, c.flags = 8, "movss-fault-ud2", 0
    c.events.append("fault-behind-movss")
    return c


def pinned_vm86_movss_hlt(idx):
    """The same in virtual-8086 mode: MOV SS, then HLT (#GP(0) through the IDT)."""
    c = pinned_vm86(idx, "movss-fault-hlt-cpl3", MOVSS + b"\xf4", False)
    c.flags = 0
    c.events.append("fault-behind-movss")
    return c


def pinned_vm86_iret_iopl0(idx):
    """IRET in virtual-8086 mode at IOPL 0, the guest's TF clear: #GP(0) at
    the IRET, whatever its frame (SDM vol. 3 20.2.7), its frame's TF clear.
    A certain fault the VMM delivers itself (docs/design.md, "Events the
    VMM delivers"): the record holds that delivery."""
    c = pinned_vm86(idx, "fault-cli-cpl3", b"\xcf\x90", False)
    c.flags = 0
    return c


def pinned_lock_cmp_pm32_tf(idx):
    """LOCK CMP with XACQUIRE in 32-bit protected mode at CPL0 with the
    guest's TF: #UD on the CPU, a certain fault (a LOCK the instruction
    does not take) that the VMM delivers itself, its frame holding the
    guest's TF (docs/stepping.md, "Events the VMM delivers"). Left to KVM,
    its handler would run unwatched up to the MOV to CR0 back to long
    mode, whose step exit is no trap of the instruction's."""
    c = pinned_legacy_ud_tf(idx, bytes.fromhex("66f0f281ba44f5ffff193f"))
    c.illegal_lock = True
    return c


def pinned_undecodable_pm32_tf(idx):
    """The same with 0F 04, which the decoder rejects and KVM injects #UD
    for: its handler runs unwatched (counted) up to the MOV to CR0, and
    that step exit owes the guest nothing (docs/stepping.md, "Afterwards")."""
    return pinned_legacy_ud_tf(idx, b"\x0f\x04")


def pinned_far_jmp_rpl3_pm32_tf(idx):
    """JMP far to the 32-bit code segment with RPL 3 at CPL0 (0x3b), in
    32-bit protected mode with the guest's TF: #GP(0x38), which the VMM
    does not foresee. Its handler runs unwatched up to the MOV to CR0
    that KVM emulates, and that step exit, neither at the pointer's offset
    nor at a call gate's, owes the guest no trap (step_branch_missed()).
    Before, a #DB at each instruction after it, then a triple fault."""
    return pinned_legacy_ud_tf(idx, bytes.fromhex("ea000000003b009090"))


def pinned_far_jmp_ldt_pm32_tf(idx):
    """The same to 0x3f, a selector in an LDT where there is none:
    #GP(0x3c), a certain fault the VMM delivers itself."""
    return pinned_legacy_ud_tf(idx, bytes.fromhex("ea000000003f009090"))


def pinned_far_jmp_indirect_pm32_tf(idx):
    """JMP far through a pointer at 0 whose selector is null, in 32-bit
    protected mode with the guest's TF: #GP(0) after the operand's read.
    The VMM reads the pointer as the CPU does: the step, ending neither at
    its offset nor at a call gate's, faulted (indirect_target())."""
    return pinned_legacy_ud_tf(idx, bytes.fromhex("ff2d0000000090"))


def pinned_paging32_esi(idx, hexbytes, placement, target, page0, page1):
    """pinned_legacy_ud_tf's record with 32-bit paging, its program's
    operand at -0x204(%esi), window+0x1000+TARGET, the pages as given."""
    c = pinned_legacy_ud_tf(idx, bytes.fromhex(hexbytes))
    c.mode = 5
    c.addr_reg, c.placement, c.target = R_SI, placement, target
    c.page0, c.page1 = page0, page1
    c.regs[R_SI] = 0x204
    return c


def pinned_jmp_unreadable_pm32_tf(idx):
    """JMP through a pointer that runs into a page not present, in 32-bit
    protected mode with 32-bit paging at CPL0 and the guest's TF: #PF on
    the pointer's read. Its handler runs unwatched up to the MOV to CR0
    that KVM emulates; that step exit is not the JMP completing, whose
    target nothing can read (indirect_target()), so no trap is owed."""
    return pinned_paging32_esi(idx, "ffa6fcfdffff90", "page", -2,            # jmp *-0x204(%esi)
                               PG_NORMAL, PG_W | PG_U)


def pinned_jmp_pt_noram_pm32_tf(idx):
    """The same JMP with its pointer's page table where no RAM is (the
    PDE of the window's 4 MiB points past RAM): KVM's walker finds no
    memory slot there and raises #PF on the pointer's read, whose handler
    runs up to the MOV to CR0 that KVM emulates, as above."""
    return pinned_paging32_esi(idx, "ffa6fcfdffff90", "line", -0x100,       # jmp *-0x204(%esi)
                               PG_NORMAL | PG_PTNORAM, PG_NORMAL)


def pinned_mmio_pf_guest_tf(idx):
    """MOV to memory in 64-bit code at CPL0 with the guest's TF, its first
    page no RAM (MMIO), its second not present. KVM emulates it and
    queues the #PF; the frame must hold TF, so that the guest's own
    single-stepping goes on after the handler's IRETQ (docs/stepping.md,
    "An MSR access KVM fails by itself")."""
    c = Case()
    c.idx, c.mode, c.cpl = idx, 0, 0
    c.form, c.size, c.lock = "mov-store", 8, False
    c.insn = bytes.fromhex("364d890f")      # mov %r9, %ss:(%r15)
    c.addr_reg, c.seg, c.placement, c.target = 15, 0, "page", -7         # R15
    c.page0, c.page1 = PG_NORMAL | PG_NORAM, PG_W | PG_U
    c.flags, c.seed, c.ds_base = GEN_TF | GEN_WP, 0x5eed0283, 0
    c.regs = [0] * R_COUNT
    c.regs[9] = 0x1000000000000000                                    # R9
    c.events = ["pinned"]
    return c


# Records built by hand that --pinned runs after the seed's, whatever the
# deck deals: ones that once showed a divergence of the VMM's, and ones the
# documentation names as covered by the fixed batch.
PINNED = [pinned_pae_pf_handler_tf, pinned_movdr7_reserved_tf, pinned_vm86_intn_iopl0_tf,
          pinned_vm86_hlt_after_db, pinned_legacy_intn_dpl0_gate, pinned_vm86_into_dpl0_gate,
          pinned_vm86_intn_gate_sets_tf, pinned_pm16_gate16_sets_tf, pinned_task_gate_sets_tf,
          pinned_vm86_task_gate, pinned_far_call_tss_tf, pinned_far_call_tss_indirect,
          pinned_far_jmp_tss_clears_tf, pinned_real_pm16_split_lock, pinned_lock_cmp_pm32_tf,
          pinned_undecodable_pm32_tf, pinned_far_jmp_rpl3_pm32_tf, pinned_far_jmp_ldt_pm32_tf,
          pinned_far_jmp_indirect_pm32_tf, pinned_mmio_pf_guest_tf, pinned_jmp_unreadable_pm32_tf,
          pinned_lm_off_split_lock, pinned_ljmp_unbacked_pm32_tf, pinned_lm_off_tf,
          pinned_jmp_pt_noram_pm32_tf, pinned_split_lock_dr0_beside_tf, pinned_lm_off_int3_lidt,
          pinned_lm_off_int3_tf, pinned_real_movss_ud2, pinned_vm86_movss_hlt,
          pinned_vm86_iret_iopl0]


def legacyize(c):
    """Moves some of the records that can run outside IA-32e mode there:
    32-bit encodings (compatibility mode's) to 32-bit code, 16-bit code's
    to 16-bit code with PAE paging, to virtual-8086 mode (CPL3 whatever
    the record's CPL was, IOPL 3 or 0 at random) or, at CPL0 and without
    a gate, to real mode; flat data segments (in real mode their 4 GiB
    limits kept from protected mode; in virtual-8086 mode based where the
    window is seen again). Environments: debug registers at CPL0, and
    INT n / INT3 / INTO gates (32-bit, to CPL0: from CPL1-3 and from
    virtual-8086 mode through TSS A's stack, back with IRETD; a quarter
    of them task gates, whose task returns with IRET, and at CPL0 half
    of those a far CALL or JMP to that task's TSS instead, direct or
    through a pointer on the stack; for 16-bit code at
    CPL0 most of the others 16-bit, back with a 16-bit IRET).
    The choice comes from the record's own seed, so that the other records
    of a seed stay what they were. Without paging the operand is at the
    window's RAM and every page is normal; 32-bit paging has no XD and no
    bit 51 to set."""
    r = random.Random(c.seed ^ 0x1e6ac7)
    if c.form == "mode-switch":
        return legacy_switch(c, r)
    movable = c.mode in (1, 2, 3) or c.form.endswith("fault-syscall-sce0")
    # Gates (32-bit, 16-bit or task gates), but vector 32: the executor's way back.
    gate = c.env == ENV_GATE and c.env_arg != 0x20
    env_ok = c.env == ENV_NONE or (c.env == ENV_DR and c.cpl == 0) or gate
    # Half of the gate records move, so that IA-32e mode keeps the other half.
    if not movable or not env_ok or c.ds_base or r.random() >= (0.5 if gate else 0.7):
        return c
    if c.mode == 2:
        # Virtual-8086 mode without an environment but a gate, real mode
        # at CPL0 without one (its IVT has no gates).
        c.mode = r.choice([7] + ([9] if c.env in (ENV_NONE, ENV_GATE) else []) +
                          ([8] if c.cpl == 0 and not gate else []))
        if c.mode == 9:
            c.cpl = 3
            iopl3 = r.random() < 0.5
            c.flags |= GEN_IOPL3 if iopl3 else 0
            c.events = list(c.events) + [f"vm86-iopl{3 if iopl3 else 0}"]
    else:
        c.mode = 4 + c.idx % 3
    if gate and r.random() < 0.25:
        # A task gate: the task switch saves the program's state in TSS A.
        c.aux = c.aux & ~0x1f | 0x05
        c.events = list(c.events) + ["task-gate"]
        if c.mode != 9 and c.cpl == 0 and r.random() < 0.5:
            # Or a far CALL to TSS B itself (DPL0: from CPL0), the gate unused.
            c.insn = b"\x9a" + bytes(2 if c.mode == 7 else 4) + b"\xb0\x00\x90"
            c.far_tss = True
            c.events.append("far-call-to-tss")
            if r.random() < 0.5:
                # Half of them indirect (FF /3): the far pointer pushed, then popped by LEA.
                c.insn = FAR_CALL_TSS_INDIRECT[c.mode == 7]
                c.events.append("far-call-indirect")
            if r.random() < 0.4:
                # A far JMP instead (9A to EA, FF /3 to FF /5): task B JMPs back to TSS A.
                c.insn = far_jmp(c.insn)
                c.events.append("far-jmp-to-tss")
    elif gate and c.mode == 7 and c.cpl == 0 and r.random() < 0.75:
        # A 16-bit gate (its frame of 2-byte slots), from CPL0: its 16-bit
        # IRET would keep no more than SP of the stack it returns to.
        c.aux &= ~0x08
        c.events = list(c.events) + ["gate-16-bit"]
    if c.mode in (4, 8):
        c.page0 = c.page1 = PG_NORMAL
    elif c.mode == 5:
        c.page0, c.page1 = c.page0 & ~(PG_XD | PG_RSVD), c.page1 & ~(PG_XD | PG_RSVD)
        if c.addr_reg != 0xff and r.random() < 0.3:
            # The window's page table where no RAM is: KVM emulates every
            # access there, and its walker raises #PF.
            c.page0 |= PG_PTNORAM
            c.events = list(c.events) + ["page-table-outside-ram"]
    c.events = list(c.events) + ["outside-ia32e"] + (["gate-outside-ia32e"] if gate else [])
    return c


def legacy_switch(c, r):
    """Moves 40% of the mode-switch records that have a 16-bit and a 32-bit
    encoding of each part out of IA-32e mode (of the others, 70% of those
    at CPL0 leave it inside the program instead: switch_lm_off_program,
    with LIDT around part B where it has INT3 and in 30% of the rest,
    ENV_LM_OFF's env_arg 1): to pm16-pae, 16-bit to 32-bit protected
    mode and back inside the program (switch16_program), at the record's
    CPL; or, half of those at CPL0 whose 16-bit protected mode part
    raises no event (no INT3, TF clear: real mode's IVT is still the IDT
    there), to real mode, real to 16-bit protected mode and back
    (switch_real_program)."""
    if any(p[1] is None for p in c.parts):
        return c
    names = [p[0] for p in c.parts]
    quiet = not c.flags & GEN_TF and not {"int3", "tf-on"} & set(names[:2])
    if r.random() >= 0.4:
        # Or, at CPL0, out of IA-32e mode and back; INT3 between the two
        # switches needs legacy_exec's IDT loaded there (the IDT has IA-32e
        # mode's #BP gate only).
        if c.cpl == 0 and r.random() < 0.7:
            lidt = names[1] == "int3" or r.random() < 0.3
            if len(switch_lm_off_program(c.parts, lidt)) > 32:
                if names[1] == "int3" or len(switch_lm_off_program(c.parts)) > 32:
                    return c
                lidt = False
            c.env, c.env_arg, c.env_reg, c.regs[R_SI] = ENV_LM_OFF, int(lidt), 0xff, 0
            c.regs[R_BP] = c.regs[R_DI] = 0
            c.insn = switch_lm_off_program(c.parts, lidt)
            c.events = [e.replace("compat-64-compat", "compat-pm32-compat") for e in c.events]
            c.events.append("leaves-ia32e")
            if lidt:
                c.regs[R_DX] = 0
                c.events.append("lidt-outside-ia32e")
            if names[1] == "int3":
                c.events.append("int3-outside-ia32e")
            tf = names[0] == "tf-on" or (bool(c.flags & GEN_TF) and names[0] != "tf-off")
            if tf or names[1] == "tf-on":
                c.events.append("leaves-ia32e-with-tf")     # traps outside IA-32e mode
        return c
    if c.cpl == 0 and quiet and r.random() < 0.5 and len(switch_real_program(c.parts)) <= 32:
        c.mode, c.env, c.env_reg = 8, ENV_REAL_PE, 0xff
        c.insn = switch_real_program(c.parts)
        kind = "real-pm16-real"
        c.page0 = c.page1 = PG_NORMAL
    elif len(switch16_program(c.parts, c.cpl)) <= 32:
        c.mode = 7
        c.insn = switch16_program(c.parts, c.cpl)
        kind = "pm16-32-pm16"
    else:
        return c
    c.events = [e.replace("compat-64-compat", kind) for e in c.events] + ["outside-ia32e"]
    return c


def ringize(c):
    """Moves some of the records that can run at CPL1 or CPL2 there (a
    quarter in IA-32e mode, half outside it, where records are fewer; not
    real or virtual-8086 mode; no 16-bit gate, whose 16-bit IRET would
    lose the upper half of ESP; no far CALL to TSS B, whose DPL is 0; no
    SYSCALL or SYSENTER, whose handlers
    return to CPL3 or CPL0 only; no MOV DR, which faults there):
    supervisor accesses with RFLAGS.AC ignored, IOPL-sensitive
    instructions faulting, gates and call gates from an intermediate ring.
    The choice comes from the record's own seed, as legacyize's does."""
    r = random.Random(c.seed ^ 0x7219c1)
    share = 0.5 if 4 <= c.mode <= 7 else 0.25
    gate16 = c.mode >= 4 and c.env == ENV_GATE and c.aux & 0x1f in (0x06, 0x07)
    if c.mode in (8, 9) or c.env not in (ENV_NONE, ENV_GATE, ENV_CALLGATE, ENV_SELF) or \
            gate16 or c.far_tss or r.random() >= share:
        return c
    cpl = r.choice((1, 2))
    if c.form == "mode-switch":
        prog = switch_program(c.parts, cpl, c.mode)
        if len(prog) > 32:
            return c
        c.insn = prog
    old = trip_event(c)
    c.events = [e for e in c.events if e not in old]
    c.cpl = cpl
    c.events += trip_event(c)
    return c


def gen_explore(rng, idx):
    deck = getattr(rng, "deck", None)
    if not deck:
        deck = rng.deck = list(DECK)
        rng.shuffle(deck)
    make = deck.pop()
    if make is not None:
        return ringize(legacyize(make(rng, idx)))
    c = gen_case(rng, idx)
    # Compatibility mode with a CS base: the same encodings; a CS override
    # would then address through that base, so not with one.
    if c.mode == 1 and rng.random() < 0.4 and 0x2e not in c.insn[:4]:
        c.mode = 3
    if rng.random() < 0.2:
        c.flags |= GEN_TF
    return ringize(legacyize(c))


def klass(c):
    """The coverage class: the form of --explore's records, 'gen' for gen_case's."""
    if c.form.startswith("movss-") and c.form[6:] in MOVSS_FAULTS:
        return c.form[6:]
    return c.form if c.form in EXPLORE_CLASSES else "gen"


# A record's line: its number, the #DB/#BP events it logged, its outcome (ok or the vector).
OUTCOME = re.compile(r"^g\d+(?: db(\d+))?: (\S+)")


def coverage(cases, outputs):
    """What a run covered: classes, modes x CPL, mode/CPL switches between
    consecutive records, outcomes (ok or the vector), events (TF, locks,
    gates, CPL changes, breakpoints, #DB traps seen)."""
    cov = {"class": {}, "mode": {}, "switch": {}, "outcome": {}, "event": {}}

    def add(k, v):
        cov[k][v] = cov[k].get(v, 0) + 1
    prev = None
    for c in cases:
        mc = f"{MODE_NAMES[c.mode]}/cpl{c.cpl}"
        add("mode", mc)
        add("class", klass(c))
        # Records of one VM run back to back: their mode and CPL switch there.
        if prev is not None and getattr(c, "local", 1) != 0:
            add("switch", "changed" if prev != mc else "same")
            if prev != mc:
                cov.setdefault("transitions", set()).add((prev, mc))
        prev = mc
        if c.flags & GEN_TF:
            add("event", "guest-tf")
        # lock-mix and mode-switch name each operation's placement in their events.
        several = klass(c) in ("lock-mix", "mode-switch")
        if c.lock and c.placement in ("line", "page") and not several:
            add("event", "split-locked")
        elif c.lock and not several:
            add("event", "locked-not-split")
        for e in c.events:
            add("event", e)
        for d in c.disarmed:
            add("event", f"disarmed: host lacks {d}")
        for k in getattr(c, "avoided", ()):
            add("event", f"avoided: {k}")
        line = outputs.get(c.idx)
        if line:
            m = OUTCOME.match(line)
            if m:
                add("outcome", m.group(2))
                if m.group(1) and int(m.group(1)):
                    add("event", "#DB/#BP-seen")
            f = re.search(r" f=(\w+):", line)
            if f and int(f.group(1), 16):
                add("event", "handler-entered")
    return cov


def show_coverage(cov):
    for k in ("class", "mode", "switch", "outcome", "event"):
        print(f"coverage {k}: " + ", ".join(f"{n} {v}" for n, v in sorted(cov[k].items())))
    t = cov.get("transitions", set())
    n = sum(len(cpls) for cpls in MODE_CPLS)
    print(f"coverage transitions: {len(t)} of {n * (n - 1)} "
          "ordered mode/CPL pairs seen between consecutive records")


def outside_ia32e(c):
    """Whether record C runs outside IA-32e mode, or leaves it."""
    return c.mode >= 4 or c.env == ENV_LM_OFF


def in_ia32e(cases):
    """The records of CASES that stay in IA-32e mode, and their classes:
    what a host that cannot leave it runs, and the classes
    missing_coverage() then asks for."""
    kept = [c for c in cases if not outside_ia32e(c)]
    return kept, {klass(c) for c in kept}


def missing_coverage(cov, classes=None, modes=None, ia32e_only=None):
    """What a full --explore run must have covered and did not. CLASSES
    and MODES (MODE_NAMES index, CPL): where probes measured that the host
    cannot run some records (outside IA-32e mode, at CPL1 and CPL2 ...),
    the classes and modes/CPLs of those it ran; the rest, and the switches
    outside IA-32e mode, are not asked for."""
    other_vendor = SYSENTER_CLASSES[not AMD_LIKE]
    if ia32e_only is None:
        ia32e_only = classes is not None
    miss = [f"class {k}" for k in EXPLORE_CLASSES
            if k not in cov["class"] and k not in other_vendor and (classes is None or k in classes)]
    miss += [f"mode {m}/cpl{p}" for i, (m, mcpls) in enumerate(zip(MODE_NAMES, MODE_CPLS))
             for p in mcpls if (modes is None or (i, p) in modes) and f"{m}/cpl{p}" not in cov["mode"]
             and not (ia32e_only and i >= 4)]
    if not cov["switch"].get("changed"):
        miss.append("a mode/CPL switch between consecutive records")
    if "movss-from-memory" not in cov["event"]:
        miss.append("MOV SS from memory before PUSHF or POPF")
    if "fault-behind-movss" not in cov["event"]:
        miss.append("a fault or INT3 behind MOV SS")
    # mode-switch's programs of each kind: compatibility to 64-bit mode, 16-bit to
    # 32-bit code, real to 16-bit protected mode.
    for kind in ("compat-64-compat",) + (() if ia32e_only else
                                         ("pm16-32-pm16", "real-pm16-real", "compat-pm32-compat")):
        if not any(e.startswith(kind + ":") for e in cov["event"]):
            miss.append(f"a {kind} switch inside a program")
    if ia32e_only:
        return miss
    if "leaves-ia32e-with-tf" not in cov["event"]:
        miss.append("the guest's TF across a switch out of IA-32e mode")
    if "int3-outside-ia32e" not in cov["event"]:
        miss.append("INT3 between switches out of IA-32e mode and back")
    return miss


def gen_case(rng, idx):
    c = Case()
    c.idx = idx
    c.mode = 1 if rng.random() < 0.3 else 0
    c.cpl = 3 if rng.random() < 0.3 else 0
    name, opc, opc8, digit, imm, lockable = rng.choice(FORMS)
    c.form = name
    sizes = [4] if name == "cmpxchg8b" else [1, 2, 4, 8] if opc8 is not None else [2, 4, 8]
    if c.mode == 1:
        sizes = [s for s in sizes if s != 8] or [4]
    if name == "cmpxchg8b":
        sizes = [8]
    size = rng.choice(sizes)
    c.size = size
    if digit == "any8":
        digit = rng.randrange(8)
    elif digit == "bt":
        digit = rng.choice([4, 5, 6, 7])
    lock = rng.random() < (0.85 if lockable else 0.15)
    # mod=11: LOCK is #UD, no memory. Not CMPXCHG8B at CPL0: on the
    # project's hosts KVM's CPL0 emulator fails on it (exit 82, both policies).
    # Not LOCK BTS/BTR/BTC with a register: QEMU's TCG (the lab) aborts
    # translating it ("tcg fatal error", the whole lab boot dies; seed 12
    # record 10 of --explore, 26 f0 66 0f bb c0).
    reg_form = rng.random() < 0.04 and not (name == "cmpxchg8b" and c.cpl == 0) and \
        not (lock and name in ("bts", "btr", "btc", "btx-imm"))
    prefixes = []
    seg = 0
    flat_override = False
    if rng.random() < 0.3:
        s = rng.choice(SEGS if c.mode == 0 else [x for x in SEGS if x != 0x65])
        prefixes.append(s)
        if s in (0x64, 0x65) and c.mode == 0:
            seg = s
        # CS and SS keep base 0 in compatibility mode: no DS base, no 16-bit
        # offsets (which would land in the VMM's page tables below 64 KiB).
        flat_override = c.mode == 1 and s in (0x2e, 0x36)
    addr16 = c.mode == 1 and not flat_override and rng.random() < 0.2
    addr32 = c.mode == 0 and rng.random() < 0.15
    if size == 2:
        prefixes.append(0x66)
    if addr16 or addr32:
        prefixes.append(0x67)
    if rng.random() < 0.08:
        prefixes.append(rng.choice([0xf2, 0xf3]))
    rng.shuffle(prefixes)
    if lock:
        prefixes.insert(rng.randrange(len(prefixes) + 1), 0xf0)
    c.lock = lock

    regs = [rng.getrandbits(64) for _ in range(R_COUNT)]
    regs[R_FLAGS] = rng.getrandbits(12) & 0x8d5
    usable = [r for r in range(16 if c.mode == 0 else 8) if r != R_SP]
    reg = rng.choice(usable) if digit is None else digit
    rex = 0
    if c.mode == 0:
        if size == 8 and name != "cmpxchg8b":
            rex |= 0x48
        if digit is None and reg >= 8:
            rex |= 0x44
    c.addr_reg = 0xff
    disp = b""
    if reg_form:
        rm = rng.choice(usable)
        if rm >= 8:
            rex |= 0x41
        modrm = 0xc0 | (reg & 7) << 3 | (rm & 7)
        sib = b""
    elif addr16:
        rm = rng.choice([4, 5, 7])                 # (%si) (%di) (%bx)
        areg = {4: R_SI, 5: R_DI, 7: R_BX}[rm]
        mod = rng.choice([0, 1, 2])
        d = rng.randrange(-128, 128) if mod == 1 else rng.randrange(0, 65536) if mod == 2 else 0
        disp = struct.pack("<b", d) if mod == 1 else struct.pack("<H", d) if mod == 2 else b""
        modrm = mod << 6 | (reg & 7) << 3 | rm
        sib = b""
        # Low 16 bits: -disp; the high half is noise that 16-bit addressing ignores.
        regs[areg] = (rng.getrandbits(48) << 16) | (-d & 0xffff)
        c.addr_reg = areg
    else:
        base = rng.choice([r for r in usable if r not in (R_BP, 13)])
        mod = rng.choice([0, 1, 2])
        d = rng.randrange(-128, 128) if mod == 1 else rng.randrange(-2**31, 2**31) if mod == 2 else 0
        if mod == 2 and rng.random() < 0.7:
            d = rng.randrange(-4096, 4096)
        disp = struct.pack("<b", d) if mod == 1 else struct.pack("<i", d) if mod == 2 else b""
        use_sib = base in (R_SP, 12) or rng.random() < 0.3
        off = -d
        if use_sib:
            index = rng.choice([r for r in usable if r != base and r != 4])
            scale = rng.randrange(4)
            ival = rng.randrange(-64, 64)
            regs[index] = ival & (2**64 - 1)
            off -= ival << scale
            sib = bytes([scale << 6 | (index & 7) << 3 | (base & 7)])
            if index >= 8:
                rex |= 0x42
            rm = 4
        else:
            sib = b""
            rm = base
        if base >= 8:
            rex |= 0x41
        modrm = mod << 6 | (reg & 7) << 3 | (rm & 7)
        regs[base] = off & (2**64 - 1)
        c.addr_reg = base
    if c.mode == 0 and rex == 0 and rng.random() < 0.1:
        rex = 0x40                                 # an empty REX: sil/dil for byte operands
    if c.mode == 0 and rng.random() < 0.05 and rex:
        rex |= 0x40 | rng.choice([0, 8])           # stray REX.W
    body = bytearray(opc)
    if size == 1:
        body[-1] = opc8
    insn = bytes(prefixes) + (bytes([rex]) if rex else b"") + bytes(body) + bytes([modrm]) + sib + disp
    if imm == "b":
        insn += bytes([rng.getrandbits(8)])
    elif imm == "z":
        insn += rng.getrandbits(8 * min(size, 4)).to_bytes(min(size, 4), "little")
    c.insn = insn[:15]
    # LOCK on MOV, CMP, TEST, ADD to a register, BT, group 1's CMP (/7), BT $imm8
    # (/4), or on any form with a register destination: #UD, which the VMM
    # delivers itself (a certain fault); TCG completes some (the lock_ud quirk).
    digit7 = (modrm >> 3) & 7
    c.illegal_lock = lock and (not lockable or reg_form or (name in ("grp1", "grp1s") and digit7 == 7)
                               or (name == "btx-imm" and digit7 == 4))
    c.prefix_len = len(prefixes)
    # A write through CS in compatibility mode: #GP(0) (KNOWN_BUGS: TCG's is not).
    c.cs_write = c.mode == 1 and 0x2e in prefixes and name not in READ_ONLY_FORMS
    # A register bit offset for BT* that reaches a nearby word, sometimes negative.
    if name in ("bts", "btr", "btc", "bt") and not reg_form and reg != c.addr_reg:
        regs[reg] = rng.randrange(-300, 300) & (2**64 - 1)
    placement = rng.choice(["line", "page", "inline", "line", "page"])
    step = max(size, 1)
    if placement == "line":
        c.target = 64 * rng.randrange(1, 60) - rng.randrange(1, step) if step > 1 else 64 * rng.randrange(1, 60) - 1
    elif placement == "page":
        c.target = -rng.randrange(1, step) if step > 1 else -1
    else:
        c.target = rng.randrange(0, 4000)
    c.placement = placement
    c.page0, c.page1 = rng.choice(STATES), rng.choice(STATES)
    c.flags = 0
    if c.cpl == 3 and rng.random() < 0.2:
        c.flags |= GEN_AC
    if rng.random() < 0.5:
        c.flags |= GEN_WP
    if rng.random() < 0.5:
        c.flags |= GEN_NXE
    if name.startswith("cmpxchg") and rng.random() < 0.5:
        c.flags |= GEN_EQUAL
    c.seed = rng.getrandbits(32)
    c.ds_base = 0
    target_linear = 0xc0001000 + c.target
    if c.mode == 1:
        if addr16:
            c.ds_base = (target_linear - 0x8000) & ~0xf
        elif not flat_override and rng.random() < 0.3:
            c.ds_base = rng.getrandbits(32) & ~0xfff
    c.seg = seg
    c.regs = regs
    return c


def pack(c):
    assert len(c.insn) <= 32
    return RECORD.pack(c.mode, c.cpl, len(c.insn), c.addr_reg, c.seg, c.page0, c.page1,
                       c.flags, c.target, c.seed, c.ds_base, c.env, c.env_arg, c.env_reg, 0,
                       c.insn.ljust(32, b"\x90"), c.aux, *c.regs)


def describe(c):
    states = lambda s: "|".join(n for b, n in ((PG_P, "P"), (PG_W, "W"), (PG_U, "U"), (PG_XD, "XD"),
                                               (PG_RSVD, "RSVD"), (PG_NORAM, "NORAM"),
                                               (PG_PTNORAM, "PTNORAM")) if s & b) or "0"
    flags = ",".join(n for b, n in ((GEN_AC, "AC"), (GEN_WP, "WP"), (GEN_NXE, "NXE"), (GEN_EQUAL, "EQ"),
                                    (GEN_TF, "TF"), (GEN_IOPL3, "IOPL3")) if c.flags & b)
    env = ""
    if c.env == ENV_SYSCALL:
        env = (f"; syscall: FMASK {c.aux & 0xffffffff:#x}, R11 ^= {c.aux >> 32:#x}, back with "
               f"{'IRETQ' if c.env_arg else 'SYSRETQ'}")
    elif c.env == ENV_GATE:
        env = (f"; IDT gate {c.env_arg:#x} type {c.aux & 0xff:#x}"
               f"{['', ', stub sets TF in its frame', ', stub clears TF in its frame'][c.aux >> 8 & 3]}")
    elif c.env == ENV_DR:
        env = (f"; reg {c.env_reg} += program+{c.aux:#x}" if c.aux != 0xff else
               f"; reg {c.env_reg} += gen_farptr (data)")
    elif c.env == ENV_CALLGATE:
        env = f"; call gate DPL {c.aux & 3}, selector RPL {c.aux >> 4 & 3}, reg {c.env_reg} = far pointer"
    elif c.env == ENV_SELF:
        env = f"; reg {c.env_reg} += program"
    elif c.env == ENV_LM_OFF:
        env = "; EBP = CR0 & ~PG, EDI = CR0, ESI = window RAM - window"
    elif c.env == ENV_REAL_PE:
        env = "; EBP = CR0, EDI = CR0 | PE"
    elif c.env == ENV_SYSENTER:
        env = (f"; SYSENTER_CS {'0' if c.env_arg & 2 else 'set'}, back with "
               f"{'IRETQ' if c.env_arg & 1 else 'SYSEXIT'} to program+{c.aux:#x}")
    if c.env or klass(c) != "gen":
        env += f"; flags in {c.regs[R_FLAGS] & 0x8d5:#x}"
        if c.disarmed:
            env += f"; disarmed (host lacks {', '.join(c.disarmed)})"
        if c.env == ENV_DR:
            env += "; regs " + " ".join(f"r{r}={c.regs[r]:#x}" for r in GPRS)
    return (f"g{c.idx}: {MODE_NAMES[c.mode]} cpl{c.cpl} {c.form}.{c.size * 8}"
            f"{' lock' if c.lock else ''} bytes {c.insn.hex(' ')}; operand {c.placement} at "
            f"window+0x1000{c.target:+#x}; page0 {states(c.page0)} page1 {states(c.page1)}"
            f"{'; ' + flags if flags else ''}{'; ds base %#x' % c.ds_base if c.ds_base else ''}{env}")


def write_image(guest, path, cases):
    """A copy of the differential guest with CASES' records appended."""
    with open(guest, "rb") as f:
        data = f.read()
    payload = b"DIFFGEN1" + struct.pack("<II", len(cases), RECORD.size) + b"".join(pack(c) for c in cases)
    with open(path, "wb") as f:
        f.write(data + payload)


def run_batch(a, tmp, cases, policy):
    """One VM for CASES; .detected: the split locks vmm --stats counts in
    it (None where it wrote none)."""
    img, stats = os.path.join(tmp, "gen.bin"), os.path.join(tmp, f"stats-{policy}.json")
    write_image(a.guest, img, cases)
    if os.path.exists(stats):
        os.unlink(stats)
    try:
        # Every record is stepped, TEST_CTRL bit 29 set or not.
        watch = ["--split-lock-watch=all"] if policy == "emulate" else []
        r = run_vmm(a.vmm, ["--split-lock=" + policy, *watch, "--timeout", scaled_str(a.timeout),
                            f"--stats={stats}", "--append", "case=gen", img],
                    timeout=scaled(a.timeout + 60))
    except Failure as e:
        # The lab's boot died under the batch: say which records ran, and
        # whether it is the oracle's abort KNOWN_BUGS names (the lab's
        # server notes QEMU's last words a moment after the connection goes).
        known = []
        for _ in range(20):
            said = str(e) + getattr(target(), "trouble", str)()
            known = [k for k, sign in ORACLE_ABORTS.items() if sign in said]
            if known or not hasattr(target(), "trouble"):
                break
            time.sleep(1)
        raise Failure(f"records {cases[0].idx}..{cases[-1].idx} under --split-lock={policy}: "
                      f"{str(e).splitlines()[0]}" +
                      (f" (QEMU: {ORACLE_ABORTS[known[0]]!r}, KNOWN_BUGS {known[0]})" if known else ""))
    r.detected = r.unchecked = None
    try:
        with open(stats) as f:
            vcpus = json.load(f)["vcpus"]
        r.detected = sum(v["split_locks_detected"] for v in vcpus)
        r.unchecked = sum(v["unchecked_runs"] for v in vcpus)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return r


def expected_splits(c, line):
    """How many split locks record C executed, as (at least, at most), from
    its emulate output LINE: exact for a lock-mix or mode-switch program
    that ran to its end unchanged (each operation's placement is known);
    otherwise from 0 to one per LOCK prefix or XCHG opcode byte (XCHG with
    memory is locked without one)."""
    most = sum(b in (0xf0, 0x86, 0x87) for b in c.insn)
    m = OUTCOME.match(line or "")
    ok = m and m.group(2) == "ok"
    if ok and c.form in ("lock-mix", "mode-switch") and not getattr(c, "avoided", ()):
        n = 0
        for e in c.events:
            m = re.match(r"^locked-split(?: x(\d+))?$", e)
            n += int(m.group(1) or 1) if m else 0
        return n, n
    return 0, most


def check_detected(batch, emu, outer_unstepped=False):
    """A batch that ran whole under emulate: vmm's count of split locks
    detected against expected_splits. OUTER_UNSTEPPED: this KVM cannot
    single-step code outside CPL0 (a probe measured it), so the split locks
    of records above CPL0 may go unseen, as many as --stats counts runs
    unchecked. Returns a problem or None."""
    lines = record_lines(emu.out)
    if emu.status != 0 or len(lines) != len(batch) or emu.detected is None:
        return None
    lo = hi = outer = 0
    for i, c in enumerate(batch):
        a, b = expected_splits(c, lines.get(i))
        lo, hi = lo + a, hi + b
        outer += a if outer_unstepped and c.cpl else 0
    unseen = min(outer, emu.unchecked or 0)
    if lo - unseen <= emu.detected <= hi:
        return None
    return (f"emulate detected {emu.detected} split locks in records {batch[0].idx}.."
            f"{batch[-1].idx}; their programs executed at least {lo} and at most {hi} "
            f"({emu.unchecked} runs unchecked"
            + (f"; {outer} of them above CPL0, which this KVM cannot step" if outer else "")
            + ")")


def record_lines(out):
    return {int(m.group(1)): m.group(0) for m in re.finditer(r"^g(\d+)(?: db\d+)?: .*$", out, re.M)}


GATE_FAULT = re.compile(r"^(g\d+(?: db\d+)?: #(?:GP|NP) )([0-9a-f]+)( .*)$")
AT = re.compile(r" at=\+([0-9a-f]+)")
LOCK_UD_LINE = re.compile(r"^g\d+(?: db\d+)?: #UD 0 cr2=0 .* at=\+0(?: |$)")


def oracle_quirks(ref_line, emu_line, quirks, insn=b"\xcd\x00", lock_ud=False):
    """ref_line with what the oracle's CPU is measured to get wrong (this
    boot's probes, QUIRKS) replaced by the architecture's answer where
    emulate gave exactly that; anything else stays a divergence. INSN:
    the record's program (the length of the INT at the fault). LOCK_UD:
    the program's first instruction has a LOCK it does not take."""
    if "lock_ud" in quirks and lock_ud:
        # QEMU's TCG completes some of them (a LOCK MOV stores); the SDM
        # raises #UD at the instruction, before it touches anything.
        if LOCK_UD_LINE.match(emu_line) and not LOCK_UD_LINE.match(ref_line):
            return emu_line
    if "intn_error_code" in quirks:
        # QEMU's TCG pushes vector * 16 + 2 where the SDM says vector * 8 + 2,
        # and at times the RIP past INT n (CD ib) or INT3 (CC), where the #GP
        # is a fault at the INT itself (docs/design.md, "Host quirks").
        r, e = GATE_FAULT.match(ref_line), GATE_FAULT.match(emu_line)
        if r and e and r.group(1) == e.group(1):
            arch, got = int(e.group(2), 16), int(r.group(2), 16)
            rest = r.group(3)
            at_r, at_e = AT.search(rest), AT.search(e.group(3))
            at = int(at_e.group(1), 16) if at_e else len(insn)
            past = {0xcd: 2, 0xcc: 1, 0xce: 1, 0xf1: 1}.get(insn[at] if at < len(insn) else None)
            if arch & 7 == 2 and past and at_r and int(at_r.group(1), 16) == at + past:
                rest = rest[:at_r.start()] + at_e.group(0) + rest[at_r.end():]
            if arch & 7 == 2 and got in (arch, (arch >> 3) * 16 + 2) and rest == e.group(3):
                return emu_line
    return ref_line


def compare_batch(batch, ref, emu, quirks=()):
    """Compares one batch's inherit run (the oracle) and emulate run, each
    with .status .out .err; returns (divergences, records compared, broken
    records, where to resume, records the oracle got through).
    """
    divergent, compared, broken = [], 0, []
    rl, el = record_lines(ref.out), record_lines(emu.out)
    # Records the oracle got through; one it could not is a generator bug.
    done = len(batch)
    if ref.status != 0 or len(rl) != len(batch):
        done = min(max(rl) + 1 if rl else 0, len(batch) - 1)
        if all(b.idx != batch[done].idx for b, _ in broken):
            broken.append((batch[done], ref))
    stop = done
    ended = False
    for i, c in enumerate(batch[:done]):
        if i not in el:
            # emulate ended here: this record diverged, resume after it.
            divergent.append((c, rl[i], f"(emulate ended: status {emu.status}; "
                              + (emu.err.strip().splitlines() or [""])[-1][:200] + ")"))
            compared += 1
            stop = i + 1
            ended = True
            break
        compared += 1
        if el[i] != oracle_quirks(rl[i], el[i], quirks, c.insn, getattr(c, "illegal_lock", False)):
            divergent.append((c, rl[i], el[i]))
    if done == len(batch) and stop == len(batch) and not ended and emu.status != ref.status:
        divergent.append((batch[-1], f"status {ref.status}", f"status {emu.status}"))
    return divergent, compared, broken, stop, done


def show(what, run, compared, divergent, broken, launches, limit):
    """Prints the figures and the divergences; returns the exit status."""
    print(f"gen.py {what}: {run} cases run, {compared} compared, "
          f"{len(divergent)} divergences, {len(broken)} cases the inherit run could not finish, "
          f"{launches} VM launches")
    for c, r, e in divergent[:limit]:
        print(describe(c).replace(f"g{c.idx}:", f"case {c.idx}:"))
        print(f"  inherit: {r[r.index(':') + 1:].strip()}")
        print(f"  emulate: {e[e.index(':') + 1:].strip() if e.startswith('g') else e}")
    if len(divergent) > limit:
        print(f"... {len(divergent) - limit} more")
    for c, ref in broken:
        print(f"BROKEN (inherit status {ref.status}): {describe(c)}")
        print("\n".join(ref.out.splitlines()[-8:]))
    return 1 if divergent or broken else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vmm", required=True)
    ap.add_argument("--guest", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=300)
    ap.add_argument("--slow-count", type=int,
                    help="records on a target slower than this machine's KVM (the lab)")
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--show", type=int, default=20, help="divergences to print in full")
    ap.add_argument("--explore", action="store_true",
                    help="issue 18's wider space: every mode (64-bit, compat, 16-bit code, compat "
                         "with a CS base), 32-bit protected mode (no paging, 32-bit paging, PAE), "
                         "16-bit code in protected mode with PAE paging, at CPL0 to CPL3, "
                         "real mode and virtual-8086 mode, switching between records, the guest's TF, "
                         "PUSHF/POPF setting and clearing TF, SYSCALL/SYSRETQ, INT n/INT3/INTO "
                         "through DPL0/3 gates and IRETQ (TF set in its frame), MOV DR0-3/DR7 with "
                         "execute breakpoints and DR7.GD, far calls through a call gate, SYSENTER/"
                         "SYSEXIT (Intel; AMD: their #UD in long mode), ICEBP, split and non-split "
                         "locks in one program, far returns from compatibility mode to 64-bit mode and "
                         "back inside one program, faulting instructions of several classes")
    ap.add_argument("--require-coverage", action="store_true",
                    help="with --explore: fail unless every class and every mode/CPL appeared")
    ap.add_argument("--log", action="store_true",
                    help="the guest prints each record's #DB/#BP events (vector, RIP from the "
                         "program's start, DR6, CPL, TF) after its line")
    ap.add_argument("--avoid-known", action="store_true",
                    help="run records that could show a known divergence of the oracle's "
                         "(KNOWN_BUGS) without its trigger (FMASK keeping TF, a LOCK CMPXCHG "
                         "before other locked operations)")
    ap.add_argument("--pinned", action="store_true",
                    help="after the seed's records, the PINNED ones (built by hand: a divergence "
                         "a seed once dealt, records the documentation names)")
    ap.add_argument("--only", help="run only these records of the seed (comma-separated indexes), "
                                   "in this order: to minimise a divergence")
    a = ap.parse_args()
    try:
        why = kvm_usable() or oracle_problem(a.vmm)
    except Failure as e:
        return report([str(e)])
    if why:
        return skip(why)
    if a.slow_count is not None and target().time_scale > 1:
        print(f"{target().label}: the first {a.slow_count} of the seed's {a.count} records")
        a.count = a.slow_count
    global AMD_LIKE
    cpuinfo = (target().read("/proc/cpuinfo") or b"").decode(errors="replace")
    AMD_LIKE = bool(re.search(r"^vendor_id\s*:\s*(AuthenticAMD|HygonGenuine)$", cpuinfo, re.M))
    if a.explore:
        print(f"SYSENTER records: {', '.join(SYSENTER_CLASSES[AMD_LIKE])} (the target's CPU is "
              f"{'AMD' if AMD_LIKE else 'not AMD'}: /proc/cpuinfo)")
    rng = random.Random(a.seed)
    cases = [(gen_explore if a.explore else gen_case)(rng, i) for i in range(a.count)]
    if a.pinned:
        cases += [make(a.count + i) for i, make in enumerate(PINNED)]
    # What the host lacks (a probe of the lab's boot, or this machine's
    # vmm --host-info, measured it): the records that need it run without
    # it, and the coverage says so.
    lacking = {n: lacks(n, a.vmm) for n in ("hw_breakpoint", "dr7_gd", "icebp")}
    quirks = {n for n in ("intn_error_code", "lock_ud") if lacks(n, a.vmm)}
    for n in quirks:
        print(f"the oracle's answers compared with the architecture's where they differ so: "
              f"{lacks(n, a.vmm)}")
    for n, why in lacking.items():
        if why and any(n in c.needs for c in cases):
            print(f"records needing {n} run without it: {why}")
    for c in cases:
        if any(lacking[n] for n in c.needs):
            disarm(c, {n for n in c.needs if lacking[n]})
    if a.avoid_known:
        n = sum(bool(avoid_known(c)) for c in cases)
        print(f"--avoid-known: {n} of {len(cases)} records run without what triggers "
              f"a known divergence of the oracle's ({', '.join(KNOWN_BUGS)})")
    if a.only:
        cases = [cases[int(i)] for i in a.only.split(",")]
    # A host whose KVM stops a guest that leaves IA-32e mode (a probe
    # measured it) runs the records that stay there; the coverage asks for
    # nothing else.
    ia32e_only = lacks("leave_long_mode", a.vmm)
    kept = None
    if ia32e_only:
        n = len(cases)
        cases, kept = in_ia32e(cases)
        print(f"{n - len(cases)} records outside IA-32e mode left out: {ia32e_only}")
    # Nor what else a probe measured this KVM cannot run: CPL1 and CPL2;
    # SYSCALL from CPL3 (its #UD with SCE clear, SYSRETQ back with TF); MOV
    # SS at CPL0 with the guest's TF (its trap comes right after MOV SS).
    for need, out in (("cpl1", lambda c: c.cpl in (1, 2)),
                      ("syscall_sysret", lambda c: c.cpl == 3 and
                       klass(c) in ("syscall-sysretq", "fault-syscall-sce0")),
                      ("movss_trap", lambda c: c.cpl == 0 and c.form.startswith("movss-") and
                       c.flags & GEN_TF)):
        why = lacks(need, a.vmm)
        if why:
            n = len(cases)
            cases = [c for c in cases if not out(c)]
            kept = {klass(c) for c in cases}
            print(f"{n - len(cases)} records left out: {why}")
    if a.log:
        for c in cases:
            c.flags |= GEN_LOG
    outputs = {}
    divergent, compared, launches = [], 0, 0
    broken = []
    # Where the VMM cannot step CPL3 (a probe measured it), code there runs unchecked, counted.
    outer_unstepped = bool(lacks("singlestep_cpl3", a.vmm))
    detected = miscounted = 0
    with tempfile.TemporaryDirectory(prefix="gen-") as tmp:
        pos = 0
        while pos < len(cases):
            batch = cases[pos:pos + a.batch]
            # Records are numbered within the batch by the guest.
            for i, c in enumerate(batch):
                c.local = i
            try:
                ref = run_batch(a, tmp, batch, "inherit")
                emu = run_batch(a, tmp, batch, "emulate")
            except Failure as e:
                return report([str(e)])
            launches += 2
            if a.log:
                for name, r in (("inherit", ref), ("emulate", emu)):
                    print(f"--- {name} (status {r.status}) ---")
                    print("\n".join(x for x in r.out.splitlines() if x.startswith(("g", "  ev"))))
                    if r.status:
                        print(r.err.rstrip())
            d, n, b, stop, done = compare_batch(batch, ref, emu, quirks)
            problem = check_detected(batch, emu, outer_unstepped)
            if problem:
                print(f"FAIL: {problem}")
                miscounted += 1
            if emu.detected is not None:
                detected += emu.detected
            for i, line in record_lines(ref.out).items():
                if i < len(batch):
                    outputs[batch[i].idx] = line
            divergent += d
            compared += n
            broken += [x for x in b if all(x[0].idx != y.idx for y, _ in broken)]
            pos += stop + (1 if stop == done < len(batch) else 0)
    # A KVM whose instruction emulator stops guests at CPL0 (a probe of
    # this boot measured it): a record whose inherit run it stopped, KVM's
    # internal error, has no oracle here; said, and asked no coverage of.
    emulator_stops = lacks("cpl0_events", a.vmm)
    if emulator_stops:
        internal = vm_statuses()["VMM_EXIT_INTERNAL"]
        stopped = [c for c, r in broken if r.status == internal]
        broken = [(c, r) for c, r in broken if r.status != internal]
        for c in stopped:
            print(f"NOT RUNNABLE HERE: {describe(c)}: its inherit run stopped with KVM's "
                  f"internal error")
        if stopped:
            print(f"{len(stopped)} records the oracle could not run: {emulator_stops}")
            cases = [c for c in cases if c not in stopped]
            kept = {klass(c) for c in cases}
    cov = coverage(cases, outputs)
    show_coverage(cov)
    what = f"--seed {a.seed} --count {a.count}" + (" --pinned" if a.pinned else "")
    status = show(what, len(cases), compared, divergent, broken, launches, a.show)
    print(f"split locks detected under emulate: {detected}"
          + (f"; {miscounted} batches with a count their programs cannot explain" if miscounted else ""))
    if miscounted:
        status = 1
    if a.require_coverage:
        miss = missing_coverage(cov, kept, None if kept is None else {(c.mode, c.cpl) for c in cases},
                                bool(ia32e_only))
        if miss:
            print("FAIL: --require-coverage: not covered: " + ", ".join(miss))
            status = 1
        else:
            print(f"every one of the {len(EXPLORE_CLASSES)} classes and "
                  f"{sum(len(cpls) for cpls in MODE_CPLS)} modes/CPLs covered" if kept is None else
                  f"every class ({len(kept)}) and mode/CPL this host can run covered; the rest "
                  "cannot run here")
    return status


if __name__ == "__main__":
    sys.exit(main())
