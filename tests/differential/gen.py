#!/usr/bin/env python3
"""Random differential testing: builds random locked and unlocked
instructions (opcode form, operand size, prefixes in random order with LOCK
anywhere among them, REX bits, ModRM/SIB addressing, random registers),
random operand placements (inside a line, across a line, across a page) and
page-table states (not present, read-only with and without CR0.WP,
supervisor at CPL3, XD with and without EFER.NXE, a reserved bit, no RAM
behind), in 64-bit and compatibility mode at CPL0 and CPL3. Records are
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
import os
import random
import re
import struct
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from difftest import oracle_problem  # noqa: E402
from vmmlib import Failure, kvm_usable, report, run_vmm, scaled, scaled_str, skip, target  # noqa: E402

# guest/diff.h
R_AX, R_CX, R_DX, R_BX, R_SP, R_BP, R_SI, R_DI = range(8)
R_FLAGS, R_COUNT = 16, 17
PG_P, PG_W, PG_U, PG_XD, PG_RSVD, PG_NORAM = 1, 2, 4, 8, 0x10, 0x20
PG_NORMAL = PG_P | PG_W | PG_U
GEN_AC, GEN_WP, GEN_NXE, GEN_EQUAL, GEN_TF = 1, 2, 4, 8, 0x10
MODE_NAMES = ["64-bit", "compat", "16-bit", "compat-cs-base"]
RECORD = struct.Struct("<BBBBBBBBiII I 16s 17Q")
assert RECORD.size == 176

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
STATES = [PG_NORMAL] * 6 + [PG_W | PG_U, PG_P | PG_U, PG_P | PG_W, PG_NORMAL | PG_XD,
                            PG_NORMAL | PG_RSVD, PG_NORMAL | PG_NORAM]


class Case:
    pass


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
]


def probe_case(rng, idx):
    c = Case()
    c.idx = idx
    name, insn, modes, cpls = rng.choice(PROBES)
    c.mode, c.cpl = rng.choice(modes), rng.choice(cpls)
    c.form, c.size, c.lock, c.insn = name, 4, False, insn
    c.addr_reg, c.seg, c.target, c.placement = 0xff, 0, 0, "none"
    c.page0 = c.page1 = PG_NORMAL
    c.flags = GEN_TF if name == "popf-tf" or rng.random() < 0.3 else 0
    c.seed, c.ds_base = rng.getrandbits(32), 0
    c.regs = [rng.getrandbits(64) for _ in range(R_COUNT)]
    c.regs[R_FLAGS] = rng.getrandbits(12) & 0x8d5
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


def gen_explore(rng, idx):
    r = rng.random()
    if r < 0.3:
        return probe_case(rng, idx)
    if r < 0.4:
        return lock16_case(rng, idx)
    c = gen_case(rng, idx)
    # Compatibility mode with a CS base: the same encodings; a CS override
    # would then address through that base, so not with one.
    if c.mode == 1 and rng.random() < 0.4 and 0x2e not in c.insn[:4]:
        c.mode = 3
    if rng.random() < 0.2:
        c.flags |= GEN_TF
    return c


def coverage(cases, outputs):
    """What a run covered: modes x CPL, classes, outcomes (ok or the vector),
    events (TF, split-locked, #DB traps seen)."""
    cov = {"mode": {}, "class": {}, "outcome": {}, "event": {}}

    def add(k, v):
        cov[k][v] = cov[k].get(v, 0) + 1
    for c in cases:
        add("mode", f"{MODE_NAMES[c.mode]}/cpl{c.cpl}")
        add("class", c.form if not c.form.startswith(("fault", "pushf", "popf", "int3", "movdr", "lock16"))
            else c.form)
        if c.flags & GEN_TF:
            add("event", "guest-tf")
        if c.lock and c.placement in ("line", "page"):
            add("event", "split-locked")
        elif c.lock:
            add("event", "locked-not-split")
        line = outputs.get(c.idx)
        if line:
            m = re.match(r"^g\d+(?: db(\d+))?: (\S+)", line)
            if m:
                add("outcome", m.group(2))
                if m.group(1) and int(m.group(1)):
                    add("event", "#DB-traps")
    return cov


def show_coverage(cov):
    for k in ("mode", "class", "outcome", "event"):
        print(f"coverage {k}: " + ", ".join(f"{n} {v}" for n, v in sorted(cov[k].items())))


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
    reg_form = rng.random() < 0.04 and not (name == "cmpxchg8b" and c.cpl == 0)
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
    return RECORD.pack(c.mode, c.cpl, len(c.insn), c.addr_reg, c.seg, c.page0, c.page1,
                       c.flags, c.target, c.seed, c.ds_base, 0,
                       c.insn.ljust(16, b"\x90"), *c.regs)


def describe(c):
    states = lambda s: "|".join(n for b, n in ((PG_P, "P"), (PG_W, "W"), (PG_U, "U"), (PG_XD, "XD"),
                                               (PG_RSVD, "RSVD"), (PG_NORAM, "NORAM")) if s & b) or "0"
    flags = ",".join(n for b, n in ((GEN_AC, "AC"), (GEN_WP, "WP"), (GEN_NXE, "NXE"), (GEN_EQUAL, "EQ"))
                     if c.flags & b)
    return (f"g{c.idx}: {MODE_NAMES[c.mode]} cpl{c.cpl} {c.form}.{c.size * 8}"
            f"{' lock' if c.lock else ''} bytes {c.insn.hex(' ')}; operand {c.placement} at "
            f"window+0x1000{c.target:+#x}; page0 {states(c.page0)} page1 {states(c.page1)}"
            f"{'; ' + flags if flags else ''}{'; ds base %#x' % c.ds_base if c.ds_base else ''}")


def write_image(guest, path, cases):
    """A copy of the differential guest with CASES' records appended."""
    with open(guest, "rb") as f:
        data = f.read()
    payload = b"DIFFGEN1" + struct.pack("<II", len(cases), RECORD.size) + b"".join(pack(c) for c in cases)
    with open(path, "wb") as f:
        f.write(data + payload)


def run_batch(a, tmp, cases, policy):
    img = os.path.join(tmp, "gen.bin")
    write_image(a.guest, img, cases)
    return run_vmm(a.vmm, ["--split-lock=" + policy, "--timeout", scaled_str(a.timeout),
                           "--append", "case=gen", img], timeout=scaled(a.timeout + 60))


def record_lines(out):
    return {int(m.group(1)): m.group(0) for m in re.finditer(r"^g(\d+)(?: db\d+)?: .*$", out, re.M)}


def compare_batch(batch, ref, emu):
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
    for i, c in enumerate(batch[:done]):
        if i not in el:
            # emulate ended here: this record diverged, resume after it.
            divergent.append((c, rl[i], f"(emulate ended: status {emu.status}; "
                              + (emu.err.strip().splitlines() or [""])[-1][:200] + ")"))
            compared += 1
            stop = i + 1
            break
        compared += 1
        if el[i] != rl[i]:
            divergent.append((c, rl[i], el[i]))
    if done == len(batch) and stop == len(batch) and emu.status != ref.status:
        divergent.append((batch[-1], f"status {ref.status}", f"status {emu.status}"))
    return divergent, compared, broken, stop, done


def show(seed, count, compared, divergent, broken, launches, limit):
    """Prints the figures and the divergences; returns the exit status."""
    print(f"gen.py --seed {seed} --count {count}: {count} cases run, {compared} compared, "
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
                    help="issue 18's wider space: 16-bit code, compatibility mode with a CS base, "
                         "the guest's TF, PUSHF/POPF, INT3, faulting instructions of several classes")
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
    rng = random.Random(a.seed)
    cases = [(gen_explore if a.explore else gen_case)(rng, i) for i in range(a.count)]
    outputs = {}
    divergent, compared, launches = [], 0, 0
    broken = []
    with tempfile.TemporaryDirectory(prefix="gen-") as tmp:
        pos = 0
        while pos < len(cases):
            batch = cases[pos:pos + a.batch]
            # Records are numbered within the batch by the guest.
            for i, c in enumerate(batch):
                c.local = i
            ref = run_batch(a, tmp, batch, "inherit")
            emu = run_batch(a, tmp, batch, "emulate")
            launches += 2
            d, n, b, stop, done = compare_batch(batch, ref, emu)
            for i, line in record_lines(ref.out).items():
                if i < len(batch):
                    outputs[batch[i].idx] = line
            divergent += d
            compared += n
            broken += [x for x in b if all(x[0].idx != y.idx for y, _ in broken)]
            pos += stop + (1 if stop == done < len(batch) else 0)
    show_coverage(coverage(cases, outputs))
    return show(a.seed, a.count, compared, divergent, broken, launches, a.show)


if __name__ == "__main__":
    sys.exit(main())
