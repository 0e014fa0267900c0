#!/usr/bin/env python3
"""Writes the hand-made seed inputs into corpus/NAME/seed-*.

Seeds are named, not hashed: run.sh keeps every file whose name is not a
40-hex-digit libFuzzer hash when it minimises a corpus, so these (and any
regression input given a name) stay. Each harness's input format is in the
comment at the top of its fuzz_NAME.c; this file is the worked example.
Usage: tests/fuzz/seeds.py [corpus dir]   (default: next to this file)
"""
import argparse
import os
import struct
import sys

_ap = argparse.ArgumentParser(description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
_ap.add_argument("corpus", nargs="?",
                 default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus"))
OUT = _ap.parse_args().corpus


def u8(v): return struct.pack("<B", v & 0xff)
def u16(v): return struct.pack("<H", v & 0xffff)
def u32(v): return struct.pack("<I", v & 0xffffffff)
def u64(v): return struct.pack("<Q", v & 0xffffffffffffffff)


def write(harness, name, data):
    d = os.path.join(OUT, harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


# ------------------------------------------------------------------ cli
# errlen byte, then arguments separated by newlines (or NULs)
def cli(name, args, errlen=0x80):
    write("cli", name, u8(errlen) + "\n".join(args).encode())

cli("run-basic", ["-c", "2", "-m", "64M", "guest.bin"])
cli("run-long", ["--cpus=4", "--memory=1G", "--timeout=0.5", "--split-lock=on", "-q", "guest.bin"])
cli("run-clustered", ["-qc4", "-m4096K", "-t", "10", "img"])
cli("run-stats-append", ["--stats=/tmp/s.json", "--append=console=ttyS0 split_lock_detect=fatal", "img"])
cli("run-stats-bare", ["--stats", "--split-lock=off", "img"])
cli("err-split-lock-space", ["--stats", "--split-lock", "off", "img"])
cli("err-stats-space", ["--stats", "out.json", "img"])
cli("err-host-info-vm-option", ["--host-info", "-c", "2", "--stats"])
cli("run-emulate", ["--split-lock=emulate", "--split-lock-ratelimit=100", "img"])
cli("run-watch-hypervisor", ["--split-lock=emulate", "--split-lock-watch=all", "--hypervisor-bit=off", "img"])
cli("err-watch-without-emulate", ["--split-lock-watch=armed", "--hypervisor-bit=auto", "img"])
cli("host-info-json", ["--host-info", "--json"])
cli("help", ["--help"])
cli("version", ["-V"])
cli("err-cpus-zero", ["--cpus=0", "img"], errlen=5)
cli("err-memory-small", ["-m", "3M", "img"])
cli("err-memory-units", ["--memory=4GiB", "img"])
cli("err-memory-huge", ["-m", "18446744073709551615G", "img"])
cli("err-json-alone", ["--json", "img"])
cli("err-dashdash", ["--", "-q", "img"])
cli("err-empty-stats", ["--stats=", "img"])
cli("err-unknown", ["-x"])
cli("err-timeout-hex", ["-t", "0x10", "img"])
cli("err-timeout-week", ["--timeout=604801", "img"])
cli("err-needs-value", ["--cpus"])
cli("err-two-images", ["a.bin", "b.bin"])
cli("err-append-long", ["-a", "x" * 200, "img"])
cli("err-host-info-image", ["--host-info", "img"])
write("cli", "nul-separated", u8(40) + b"-m\x002G\x00--split-lock=inherit\x00img")

# ------------------------------------------------------------------ hostinfo
# flags, 9 capability bytes, cpuinfo NUL cmdline NUL mitigate NUL kvm_error NUL probe_error
INTEL_FLAGS = ("fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi "
               "mmx fxsr sse sse2 ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc art arch_perfmon "
               "pebs bts rep_good nopl xtopology nonstop_tsc cpuid aperfmperf tsc_known_freq pni pclmulqdq "
               "dtes64 monitor ds_cpl vmx smx est tm2 ssse3 sdbg fma cx16 xtpr pdcm pcid dca sse4_1 sse4_2 "
               "x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand lahf_lm abm 3dnowprefetch "
               "cpuid_fault epb cat_l3 cat_l2 cdp_l3 invpcid_single intel_ppin cdp_l2 ssbd mba ibrs ibpb "
               "stibp ibrs_enhanced tpr_shadow flexpriority ept vpid ept_ad fsgsbase tsc_adjust bmi1 hle "
               "avx2 smep bmi2 erms invpcid rtm cqm rdt_a avx512f avx512dq rdseed adx smap avx512ifma "
               "clflushopt clwb intel_pt avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves "
               "split_lock_detect avx_vnni avx512_bf16 wbnoinvd dtherm ida arat pln pts hfi avx512vbmi umip "
               "pku ospke waitpkg avx512_vbmi2 gfni vaes vpclmulqdq avx512_vnni avx512_bitalg tme "
               "avx512_vpopcntdq la57 rdpid bus_lock_detect cldemote movdiri movdir64b enqcmd fsrm md_clear "
               "serialize tsxldtrk pconfig arch_lbr ibt amx_bf16 avx512_fp16 amx_tile amx_int8 flush_l1d "
               "arch_capabilities")
AMD_FLAGS = ("fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse "
             "sse2 ht syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology "
             "nonstop_tsc cpuid extd_apicid tsc_known_freq pni pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 "
             "x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand hypervisor lahf_lm cmp_legacy "
             "cr8_legacy abm sse4a misalignsse 3dnowprefetch osvw topoext vmmcall fsgsbase tsc_adjust bmi1 "
             "avx2 smep bmi2 erms invpcid avx512f avx512dq adx smap avx512ifma clflushopt clwb avx512cd "
             "sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves avx_vnni avx512_bf16 clzero xsaveerptr "
             "arat avx512vbmi umip avx512_vbmi2 gfni vaes vpclmulqdq avx512_vnni avx512_bitalg "
             "avx512_vpopcntdq rdpid fsrm avx512_vp2intersect")


def cpu_block(n, vendor, model, flags):
    return (f"processor\t: {n}\nvendor_id\t: {vendor}\ncpu family\t: 6\nmodel\t\t: 143\n"
            f"model name\t: {model}\nstepping\t: 8\ncpu MHz\t\t: 2000.000\ncache size\t: 107520 KB\n"
            f"fpu\t\t: yes\ncpuid level\t: 31\nwp\t\t: yes\nflags\t\t: {flags}\n"
            "vmx flags\t: vnmi preemption_timer posted_intr invvpid ept_x_only ept_ad\n"
            "bugs\t\t: spectre_v1 spectre_v2 spec_store_bypass swapgs eibrs_pbrsb\n"
            "bogomips\t: 4000.00\nclflush size\t: 64\naddress sizes\t: 46 bits physical, 57 bits virtual\n"
            "power management:\n\n")


DEBIAN_CMDLINE = "BOOT_IMAGE=/boot/vmlinuz-6.1.0-18-amd64 root=UUID=0b1f6c2e-4d1a-4c55-9a57-2f4b8d1e7a10 ro quiet"


def hostinfo(name, cpuinfo, cmdline, mitigate="1\n", flags=0x08 | 0x10, caps=(1, 1, 1, 1, 1, 0, 1, 2, 127),
             kvm_error="", probe_error=""):
    data = u8(flags) + bytes(c & 0xff for c in caps)
    for part in (cpuinfo, cmdline, mitigate, kvm_error, probe_error):
        data += (part.encode() if isinstance(part, str) else part) + b"\0"
    write("hostinfo", name, data)

intel = cpu_block(0, "GenuineIntel", "Intel(R) Xeon(R) Platinum 8480+", INTEL_FLAGS)
amd = cpu_block(0, "AuthenticAMD", "AMD EPYC", AMD_FLAGS)
hostinfo("intel-fatal", intel + intel.replace(": 0\n", ": 1\n", 1), DEBIAN_CMDLINE + " split_lock_detect=fatal\n")
hostinfo("intel-default-warn", intel, DEBIAN_CMDLINE + "\n", mitigate="0\n")
hostinfo("intel-off", intel, DEBIAN_CMDLINE + " split_lock_detect=off")
hostinfo("intel-ratelimit", intel, DEBIAN_CMDLINE + " split_lock_detect=ratelimit:10\n", flags=0x08 | 0x20)
hostinfo("intel-ratelimit-bare", intel, "split_lock_detect=ratelimit:")
hostinfo("intel-ratelimit-junk", intel, "split_lock_detect=ratelimit:1000x quiet")
hostinfo("intel-ratelimit-zero", intel, "split_lock_detect=ratelimit:0")
hostinfo("intel-ratelimit-neg", intel, "split_lock_detect=ratelimit:-5")
hostinfo("intel-ratelimit-long", intel, "split_lock_detect=ratelimit:00000000000000000000000001")
hostinfo("intel-last-wins", intel, "split_lock_detect=fatal split_lock_detect=warn\tsplit_lock_detect=off")
hostinfo("intel-malformed", intel, "split_lock_detect=fatalx", mitigate="2")
hostinfo("intel-quoted", intel, 'dyndbg="file x.c +p split_lock_detect=fatal" ro')
hostinfo("intel-value-utf8", intel, "split_lock_detect=f\xe9tal\x7f", kvm_error="")
write("hostinfo", "bad-utf8", u8(0x00) + bytes(9) + intel.encode() + b"\0" +
      b"split_lock_detect=\xff\xfe\xc0\xafab\xed\xa0\x80\xf4\x90\x80\x80" + b"\0" + b"1\0" +
      b"open /dev/kvm: No such file or directory \"\\\x01\x1f\xe2\x82\0" + b"probe: \xf0\x9f\x98\x80 \xc3\0")
hostinfo("amd-host", amd, DEBIAN_CMDLINE + "\n", flags=0x08 | 0x04, caps=(1, 1, 1, 1, 1, 0, 1, 2, 255))
hostinfo("amd-no-kvm", amd, DEBIAN_CMDLINE, flags=0x00, kvm_error="/dev/kvm: Permission denied",
         probe_error="not run: no KVM")
hostinfo("unreadable", "", "", flags=0x07 | 0x08, caps=(-1, -1, 0, 0, 0, 0, 0, 0, 0))
hostinfo("vmx-flags-only", "processor\t: 0\nvmx flags\t: split_lock_detect bus_lock_detect\n"
         "bugs\t\t: split_lock_detect\nflags:\n", "split_lock_detect=fatal")
hostinfo("flags-at-end", "processor\t: 0\nflags\t\t: fpu bus_lock_detect split_lock_detect",
         "split_lock_detect=warn", mitigate="1")

# ------------------------------------------------------------------ loader
# u64 size, u64 ram_size, u32 cpus (loader_check_size); u16 ram/32, u8 cpus-1|kind<<6; image
TINY_GUEST = bytes.fromhex("66baf400b82a000000ef")      # mov dx,0xf4; mov eax,42; out dx,eax


def loader(name, image, ram32=0xffff, b=0, c=(4096, 64 << 20, 1)):
    write("loader", name, u64(c[0]) + u64(c[1]) + u32(c[2]) + u16(ram32) + u8(b) + image)

loader("tiny-guest", TINY_GUEST)
loader("hlt", b"\xf4", b=3, c=(1, 4 << 20, 256))
loader("fills-room", b"\x90" * 2048, ram32=(0x100000 + 0x10000 + 2048) // 32, c=(3 << 20, 4 << 20, 16))
loader("too-big", b"\xeb\xfe" * 64, ram32=0x8000, c=(1 << 40, 1 << 30, 1 << 20))
loader("empty", b"", c=(0, 0, 0))
loader("directory", TINY_GUEST, b=0x40)
loader("chardev", TINY_GUEST, b=0x80)
loader("missing", TINY_GUEST, b=0xc0, c=(2**64 - 1, 2**64 - 1, 2**32 - 1))

# ------------------------------------------------------------------ boot
# u64 raw RAM (4M + (raw % kib) KiB), u8 cpus-1, u64 image size, u8 flags, cmdline NUL, u64 addresses
KIB = lambda size: (size - (4 << 20)) // 1024


def boot(name, ram, cpus, image, flags, cmdline, addrs):
    write("boot", name, u64(KIB(ram)) + u8(cpus - 1) + u64(image) + u8(flags) + cmdline + b"\0" +
          b"".join(u64(a) for a in addrs))

boot("64m-1cpu", 64 << 20, 1, 4096, 0x03, b"console=ttyS0", [0x100000, 0x3ffffff, 0x4000000, 0x200001])
boot("4g-256cpu", 4 << 30, 256, 1 << 20, 0x02, b"", [0xfffff000, 0x1_0000_0000, 0x8000_0000])
boot("4097k-odd", (4 << 20) + 1024, 2, 1, 0x00, b"x" * 200, [0x400000, 0x3fffff, 0x401000])
boot("3g-plus-6m", (3 << 30) + (6 << 20), 4, 12345, 0x01, b"split_lock_detect=fatal", [0xc05fffff, 0xc0600000])
boot("no-cmdline", 128 << 20, 8, 0, 0x04, b"", [0xffff800000000000, 0x00007fffffffffff, 0x8000000000])

# ------------------------------------------------------------------ msr
# records: u8 op (0 read, 1 write, 2 reset, 3 decide; bit 2 enumerated; bits 3-4 index kind; bit 5 value
# limited to bit 29), u32 index, u64 value
def msr(name, recs):
    write("msr", name, b"".join(u8(op) + u32(idx) + u64(val) for op, idx, val in recs))

B29 = 1 << 29
msr("enumerated", [(0x05, 0, B29), (0x04, 0, 0), (0x07, 0, 0), (0x0c, 0, 0), (0x0d, 0, B29), (0x05, 0, B29 | 1),
                   (0x06, 0, 0), (0x04, 0, 0)])
msr("not-enumerated", [(0x01, 0, B29), (0x01, 0, 0), (0x00, 0, 0), (0x08, 0, 0), (0x09, 0, 0), (0x03, 0, 0)])
msr("other-indices", [(0x14, 0x10, 0), (0x15, 0xc0000080, 1), (0x1c, 0x80, B29), (0x1d, 0x13, 0)])
msr("toggle", [(0x05, 0, B29), (0x00, 0, 0), (0x04, 0, 0), (0x25, 0, 0xffffffff), (0x03, 0, 0), (0x07, 0, 0)])

# ------------------------------------------------------------------ splitlock
# u8 set-up, kvm_vcpu_events (64 bytes), records: u8 kind, u32 raw, u64 value, u8 fake; an exception
# record goes on with u8 CPU state, u64 every GPR, u8 n, n instruction bytes written at RIP
# (kind bit 6 clear: RIP = 0x100000 + value % 1 MiB; bit 7 clear: GPRs % 2 MiB).
EVENTS = 64
FAIL = {"get_regs": 1, "get_sregs": 2, "get_events": 3, "set_events": 4, "set_sregs": 5, "set_regs": 6,
        "get_pkru": 7}


def msr_rec(kind, raw=0, value=0):
    return u8(kind) + u32(raw) + u64(value) + u8(0)


def ac_rec(cpu=0, rip=0x1234, insn="", gpr=0, sigbus=False, fail=None, vector=None, cpu_state=0,
           pkru=0, raw_rip=False, raw_gpr=False):
    kind = 0x02 | (cpu << 2) | (0x20 if vector is not None else 0) | (0x40 if raw_rip else 0) | \
        (0x80 if raw_gpr else 0)
    code = bytes.fromhex(insn)
    return (u8(kind) + u32(vector if vector is not None else pkru) + u64(rip) +
            u8((1 if sigbus else 0) | (FAIL[fail] << 1 if fail else 0)) +
            u8(cpu_state) + u64(gpr) + u8(len(code)) + code)


def sl(name, setup, recs, events=bytes(EVENTS)):
    write("splitlock", name, u8(setup) + events + b"".join(recs))

XADD = "f00fc107"           # lock xadd [rdi], eax
SPLIT = 0x1ffe              # + 0x100000 for RIP: the operand is at GPR value
CPL3, AM, AC, PKE, NOWP, SMAP, RO, COMPAT = 1, 2, 4, 8, 16, 32, 64, 128
sl("arm-and-inject", 0x05, [msr_rec(0x81, 0, B29), ac_rec(rip=0x1234, insn=XADD, gpr=0x10003e, sigbus=True),
                            msr_rec(0x20), msr_rec(0x00)],
   events=bytes([1, 0x80, 1, 0]) + bytes([0xff] * (EVENTS - 4)))
sl("emulate-xadd", 0x04, [ac_rec(rip=0x1234, insn=XADD, gpr=0x10803e, sigbus=True),
                          ac_rec(rip=0x1234, insn="f0480fb10e", gpr=0x10803c)])
sl("uninvited-stop", 0x04, [ac_rec(rip=0x1234, insn="909090"), ac_rec(cpu=1, rip=0x2000, insn=XADD, gpr=0x10803e)])
sl("not-enumerated", 0x03, [msr_rec(0x01, 0, B29), msr_rec(0x00), msr_rec(0x24), msr_rec(0x09)])
sl("other-vector", 0x05, [ac_rec(vector=13, rip=0x100000), ac_rec(vector=6, sigbus=True)])
sl("inject-fails", 0x05, [msr_rec(0x81, 0, B29), ac_rec(insn=XADD, fail="set_events"),
                          ac_rec(insn=XADD, fail="get_events")])
sl("registers-fail", 0x05, [ac_rec(insn=XADD, gpr=0x10803e, fail="get_regs"), ac_rec(insn=XADD, fail="get_sregs")])
sl("set-regs-fails", 0x04, [ac_rec(insn=XADD, gpr=0x10803e, fail="set_regs"), ac_rec(insn=XADD, gpr=0x10803e)])
sl("page-fault-at-ram-end", 0x04, [ac_rec(insn=XADD, gpr=0x1ffffe), ac_rec(insn=XADD, gpr=0x1ffffe, fail="set_sregs"),
                                   ac_rec(insn=XADD, gpr=0x10803e, cpu_state=RO)])
sl("keys-and-smap", 0x04, [ac_rec(insn=XADD, gpr=0x10803e, cpu_state=PKE, pkru=2),
                           ac_rec(insn=XADD, gpr=0x10803e, cpu_state=PKE, fail="get_pkru"),
                           ac_rec(insn=XADD, gpr=0x10803e, cpu_state=SMAP)])
sl("legacy-and-compat", 0x05, [ac_rec(insn=XADD, gpr=0x10803e, cpu_state=CPL3 | AM | AC),
                               ac_rec(cpu=1, insn="f0834500" + "01", gpr=0x10803e, cpu_state=COMPAT)])
sl("non-canonical-rip", 0x04, [ac_rec(rip=0x800000000000, raw_rip=True, insn=XADD),
                               ac_rec(rip=0x1ffe, insn=XADD, gpr=0xffff800000000000, raw_gpr=True)])
sl("unexpected-exits", 0x06, [msr_rec(0x40, 0x10), msr_rec(0x10, 1), msr_rec(0x51, 0x33, 5), msr_rec(0x74, 0xcf)])

# ------------------------------------------------------------------ pc
# u8 vCPUs - 1, then records: u8 op (0 OUT, 1 IN, 2 input; bits 2-3 size),
# u8 port index (fuzz_pc.c's ports[]; above: a u16 port follows), data
def pc_out(port, data, size=0): return u8(size << 2) + u8(port) + data
def pc_in(port, size=0): return u8(1 | size << 2) + u8(port)
def pc_input(data): return u8(2) + u8(len(data)) + data

write("pc", "linux-probe", u8(1) + b"".join([
    pc_out(1, b"\0"), pc_in(1), pc_out(1, b"\x0f"), pc_in(1), pc_out(4, b"\x1a"), pc_in(6),
    pc_out(4, b"\0"), pc_out(2, b"\x07"), pc_in(2), pc_out(3, b"\x83"), pc_out(0, b"\x01"),
    pc_out(3, b"\x03"), pc_out(1, b"\x03"), pc_input(b"root\r"), pc_in(2), pc_in(5), pc_in(0),
    pc_out(0, b"ok\n"[:1]), pc_in(2)]))
write("pc", "tables-and-ports", u8(3) + b"".join([
    pc_out(10, b"\x05\x00", 1), pc_in(11), pc_in(11), pc_out(8, b"\x8b"), pc_in(9),
    pc_out(12, u32(0x80000000), 2), pc_in(12, 2), pc_in(13, 2), pc_out(18, b"\x02"),
    pc_out(200, u16(0x1234) + b"\x55"), pc_out(19, b"\x34")]))
write("pc", "input-flood", u8(0) + pc_out(2, b"\x01") + pc_out(1, b"\x01") +
      b"".join(pc_input(bytes(range(i, i + 200))) for i in range(0, 40)) +
      b"".join(pc_in(0) for _ in range(300)))

# ------------------------------------------------------------------ ioport
# u8 set-up, records: u8 cpu|IN<<2, u8 port (0-7 COM1+n, 8-11 exit, else u16 port follows),
# u8 size (bits 0-1) | (count-1)<<2, data for OUT
def io(cpu=0, inp=False, port=0, size=1, data=b"", count=None, raw_port=None):
    sizes = {1: 0, 2: 1, 4: 2}
    if count is None:
        count = max(1, len(data) // size)
    rec = u8(cpu | (4 if inp else 0)) + u8(port)
    if raw_port is not None:
        rec += u16(raw_port)
    return rec + u8(sizes[size] | ((count - 1) << 2)) + (b"" if inp else data)


def ioport(name, setup, recs):
    write("ioport", name, u8(setup) + b"".join(recs))

ioport("hello-exit", 0, [io(data=b"hello\n"), io(inp=True, port=5), io(port=8, size=4, data=u32(0))])
ioport("two-cpus-interleaved", 1, [io(cpu=0, data=b"ok 1 - "), io(cpu=1, data=b"cpu 1\r\n"),
                                   io(cpu=0, data=b"boot\x00\n"), io(cpu=1, data=b"unterminated")])
ioport("long-line", 0, [io(data=bytes([0x41 + i % 26 for i in range(64)])) for _ in range(17)])
ioport("open-piece", 1, [io(cpu=0, data=bytes([0x61 + i % 26 for i in range(64)])) for _ in range(17)] +
       [io(cpu=1, data=b"x\n"), io(cpu=0, data=b"tail")])
ioport("words", 0, [io(size=2, data=b"h\x01i\x02\n\x03"), io(size=4, data=b"x\xff\xff\xff\n\0\0\0")])
ioport("unknown-ports", 0, [io(port=200, raw_port=0x80, data=b"\x01"), io(inp=True, port=200, raw_port=0x80),
                            io(inp=True, port=201, raw_port=0x61, size=2), io(port=9, size=1, data=b"\x07"),
                            io(inp=True, port=9, size=4)])
ioport("bad-status", 0, [io(port=8, size=4, data=u32(99)), io(port=8, size=4, data=u32(0))])
ioport("com1-registers", 0, [io(port=1, data=b"\x00"), io(port=3, data=b"\x80"), io(inp=True, port=0, count=4),
                             io(inp=True, port=6)])

# ------------------------------------------------------------------ decode / emulate
INSNS = {
    "lock-xadd": "f00fc107",             # lock xadd [rdi], eax
    "lock-cmpxchg-q": "f0480fb10e",      # lock cmpxchg [rsi], rcx
    "lock-cmpxchg8b": "f00fc70f",        # lock cmpxchg8b [rdi]
    "lock-cmpxchg16b": "f0480fc70f",     # lock cmpxchg16b [rdi]
    "xchg": "8707",                      # xchg [rdi], eax (locked without a prefix)
    "xchg-ah": "8627",                   # xchg [rdi], ah
    "lock-add-imm": "f0830001",          # lock add dword [rax], 1
    "lock-xor-byte": "f08030ff",         # lock xor byte [rax], 0xff
    "lock-bts-reg16": "66f00fab07",      # lock bts [rdi], ax
    "lock-btr-reg64": "f0480fb307",      # lock btr [rdi], rax
    "lock-btc-imm": "f00fba3f05",        # lock btc dword [rdi], 5
    "lock-inc-rip": "f0ff0500100000",    # lock inc dword [rip+0x1000]
    "lock-add-fs": "64f0488304250000000001",  # lock add qword fs:[0], 1
    "lock-add-addr32": "67f00118",       # lock add [eax], ebx
    "lock-neg": "f0f71f",                # lock neg dword [rdi]
    "lock-not-byte": "f0f617",           # lock not byte [rdi]
    "lock-dec-sib": "f048ff0c8b",        # lock dec qword [rbx+rcx*4]
    "lock-sbb": "f0481907",              # lock sbb [rdi], rax
    "lock-adc-gs": "65f01107",           # lock adc gs:[rdi], eax
    "lock-or-word": "66f00907",          # lock or [rdi], ax
    "lock-and-disp32": "f0218778563412",  # lock and [rdi+0x12345678], eax
    "lock-sub-r12": "f04d2924",          # lock sub [r12], r12
    "nop": "90",
    "lock-add-reg-reg": "f001c0",        # invalid: LOCK without memory
    "prefix-soup": "2e3e66f0480fc107",
}
for name, hexs in INSNS.items():
    write("decode", name, bytes.fromhex(hexs))

EDGE_SEL = {0: 0, -1: 15, 1 << 63: 14, (1 << 63) - 1: 13, 0x80000000: 10}


def reg(v):
    v &= 0xffffffffffffffff
    return b"\x80" + u64(v)


def emulate(name, insn, regs, mem=bytes(range(16)), rflags=0x202, fs=0, gs=0):
    names = ["rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
             "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip"]
    data = b"".join(reg(regs.get(n, 0)) for n in names) + reg(rflags) + reg(fs) + reg(gs)
    write("emulate", name, data + mem + bytes.fromhex(insn))

ADDR = 0x10003c      # 4 bytes before a cache line boundary
for name, hexs in INSNS.items():
    if name in ("nop", "lock-add-reg-reg"):
        continue
    emulate(name, hexs, {"rax": 0x0706050403020100, "rcx": 0x1111111122222222, "rdx": 0x0f0e0d0c0b0a0908,
                         "rbx": 0x3333333344444444, "rsi": ADDR, "rdi": ADDR, "r12": ADDR, "rip": 0x100000})
emulate("cmpxchg-equal", INSNS["lock-cmpxchg-q"], {"rax": 0x0706050403020100, "rcx": 0xdeadbeef, "rsi": ADDR})
emulate("cmpxchg8b-equal", INSNS["lock-cmpxchg8b"], {"rax": 0x03020100, "rdx": 0x07060504, "rbx": 1, "rcx": 2,
                                                     "rdi": ADDR})
emulate("cmpxchg16b-equal", INSNS["lock-cmpxchg16b"], {"rax": 0x0706050403020100, "rdx": 0x0f0e0d0c0b0a0908,
                                                       "rbx": 5, "rcx": 6, "rdi": ADDR})
emulate("bts-negative", INSNS["lock-btr-reg64"], {"rax": -1000, "rdi": ADDR})
emulate("bts-neg16", INSNS["lock-bts-reg16"], {"rax": 0x8000, "rdi": ADDR})
emulate("adc-carry", INSNS["lock-adc-gs"], {"rax": 0xffffffff, "rdi": 0x3c}, rflags=0x203, gs=0x7fff0000)

# ------------------------------------------------------------------ classify
# u8 CPU state, u64 every register's base, then the instruction bytes
CLASSIFY = {
    "hlt": (0x01, "f4"), "sti": (0x21, "fb"), "int3": (0, "cc"), "int-n": (0, "cd80"),
    "into": (0, "ce"), "icebp": (0, "f1"), "pushf-66": (0x0c, "669c"), "popfq-rexw": (0, "66489d"),
    "iretq": (0, "48cf"), "syscall": (0, "0f05"), "sysretq": (0x01, "480f07"),
    "sysenter-amd": (0x40, "0f34"), "sysexit-rexw": (0x01, "480f35"), "pop-ss": (0, "17"),
    "mov-ss-ax": (0x01, "8ed0"), "mov-ss-mem": (0, "8e10"), "mov-dr7-gd": (0x02, "0f23f8"),
    "mov-dr7-rex": (0, "410f23f8"), "ltr": (0, "0f00d8"), "xbegin": (0, "c7f800000000"),
    "xbegin-16": (0, "66c7f80000"), "jcc32": (0, "0f8400000000"), "jmp-rax": (0, "ffe0"),
    "call-r9": (0, "41ffd1"), "ret": (0, "c3"), "call-far": (0x01, "9a000000000800"),
    "jmp-far-16": (0x01, "66ea00000800"), "ljmp-reg": (0, "ffe8"), "rep-movs": (0, "f3a4"),
    "rep-ret": (0, "f3c3"), "lock-hlt": (0, "f0f4"), "ud2": (0, "0f0b"),
    "ud1": (0, "0fb904250000000000000000000000"), "xsetbv": (0, "0f01d1"), "vmrun": (0, "0f01d8"),
    "vmxon": (0, "f30fc730"), "invept": (0, "660f380800"), "mov-cr5": (0, "0f22e8"),
    "lock-mov-cr0": (0, "f00f22c0"), "cpuid": (0, "0fa2"), "endbr64": (0, "f30f1efa"),
    "push-r8": (0, "4150"), "push-imm32": (0, "6800100000"), "clac": (0, "0f01ca"),
    "vm86-popf": (0x1c | 0x20, "9d"), "vm86-int": (0x0c, "cd21"), "push-es": (0, "06"),
}
for name, (state, hexs) in CLASSIFY.items():
    write("classify", name, u8(state) + u64(0x0000800000000000) + bytes.fromhex(hexs))

# ------------------------------------------------------------------ pagewalk
# u8 pages-1, u8 mode (PG, LMA, WP, CPL<<3, short), u8 CR3 page, u8 CR3 junk, u8 n, entries
# (u8 page, u16 slot, u8 flags, u8 target, u8 junk), queries (u64 la with bit 0 set = as is, u8 write|len<<1)
P, RW, US, A, D, PS = 1, 2, 4, 0x20, 0x40, 0x80


def pw(name, pages, mode, cr3, entries, queries, cr3_junk=0):
    data = u8(pages - 1) + u8(mode) + u8(cr3) + u8(cr3_junk) + u8(len(entries))
    data += b"".join(u8(pg) + u16(slot) + u8(fl) + u8(tgt) + u8(j) for pg, slot, fl, tgt, j in entries)
    data += b"".join(u64(la | 1) + u8(q) for la, q in queries)
    write("pagewalk", name, data)

TABLES = [(0, 0, P | RW | US, 1, 0), (1, 0, P | RW | US, 2, 0), (2, 0, P | RW | US, 3, 0),
          (3, 0, P | RW | US, 4, 0), (3, 1, P | RW | US, 5, 0), (3, 2, P | US, 6, 0), (3, 3, P | RW, 7, 0),
          (2, 1, P | RW | US | PS, 0, 0), (1, 1, P | RW | US | PS, 0, 0), (3, 4, RW, 6, 0)]
READS = [(0x0ff8, 1 | 16 << 1), (0x1ffc, 0 | 8 << 1), (0x2000, 1), (0x3010, 1 | 4 << 1), (0x4000, 2),
         (0x200008, 1 | 8 << 1), (0x40000000, 1), (0x5000, 0), (0x8000000000, 0), (0xffff800000000000, 0)]
pw("identity-cpl0-wp", 8, 0x07, 0, TABLES, READS)
pw("user-cpl3", 8, 0x03 | 3 << 3, 0, TABLES, READS)
pw("no-wp", 8, 0x03, 0, TABLES, READS)
pw("no-paging", 4, 0x00, 0, [], [(0x3ff9, 2 << 1), (0x1_0000_0ff9, 1), (0x5000, 0)])
pw("not-long-mode", 4, 0x01, 0, TABLES[:3], [(0x1, 0)])
pw("short-ram", 4, 0x27, 3, [(3, 511, P | RW | US, 2, 0), (2, 0, P | RW | US | PS, 0, 3)],
   [(0xff8000000000 | 0x3ff9, 8 << 1)], cr3_junk=0x98)
pw("tables-outside", 2, 0x07, 0, [(0, 0, P | RW | US, 50, 0), (0, 1, P | RW | US, 1, 1)],
   [(0x1, 0), (0x8000000001, 0)])

# ------------------------------------------------------------------ delivery
# u8 a (LMA, PE, PG, VM, CPL<<4, PAE, guest TF), u8 b (soft, fault, error code, RF, IVT, WP, LA57,
# CET), u8 vector, u32 err, u64 RIP, u64 RSP, u32 RFLAGS, u8 pages-1, u8 MAXPHYADDR-32, u32 CR3,
# IDTR/GDTR/TR bases, u16 their limits, u8 TR type, CS and SS (u16 sel, u32 base, u32 limit,
# u8 D/B L expand-down unusable), u16 ES DS FS GS, u16 IVT image, u32 IVT flags, RAM bytes
def dseg(sel, base=0, limit=0xffffffff, db=1, l=0):
    return u16(sel) + u32(base) + u32(limit) + u8(db | l << 1)


def gdesc(base, limit, typ, dpl, l=0, db=1):
    g = limit > 0xfffff
    if g:
        limit >>= 12
    return ((limit & 0xffff) | (base & 0xffffff) << 16 | typ << 40 | 1 << 44 | dpl << 45 | 1 << 47 |
            ((limit >> 16) & 0xf) << 48 | l << 53 | db << 54 | g << 55 | (base >> 24) << 56)


def dl(name, a, b, vector, rip, rsp, rflags, ram, cs, ss, idt=(0x100, 0xfff), tr=(0xa00, 0x67, 11),
       err=0, ivt=(0, 0), pages=4):
    data = u8(a) + u8(b) + u8(vector) + u32(err) + u64(rip) + u64(rsp) + u32(rflags)
    data += u8(pages - 1) + u8(8) + u32(0) + u32(idt[0]) + u32(0x800) + u32(tr[0])
    data += u16(idt[1]) + u16(0xff) + u16(tr[1]) + u8(tr[2]) + cs + ss
    data += u16(0x11) + u16(0x22) + u16(0x33) + u16(0x44) + u16(ivt[0]) + u32(ivt[1])
    write("delivery", name, data + bytes(ram))


def dram(gates, tss):
    ram = bytearray(0xb00)
    descs = {0x08: gdesc(0, 0xffffffff, 0xa, 0, l=1, db=0), 0x10: gdesc(0, 0xffffffff, 2, 0),
             0x18: gdesc(0, 0xffffffff, 0xa, 0), 0x28: gdesc(0, 0xffffffff, 0xa, 3, l=1, db=0),
             0x30: gdesc(0, 0xffffffff, 2, 3), 0x38: gdesc(0, 0xffffffff, 0xa, 3)}
    for sel, d in descs.items():
        ram[0x800 + sel:0x808 + sel] = u64(d)
    for at, raw in gates:
        ram[at:at + len(raw)] = raw
    for at, raw in tss:
        ram[0xa00 + at:0xa00 + at + len(raw)] = raw
    return ram


def gate64(handler, sel, access, ist=0):
    return u16(handler) + u16(sel) + u8(ist) + u8(access) + u16(handler >> 16) + u32(handler >> 32) + u32(0)


def gate32(handler, sel, access):
    return u16(handler) + u16(sel) + u8(0) + u8(access) + u16(handler >> 16)


LONG_RAM = dram([(0x100 + 6 * 16, gate64(0x5000, 0x08, 0x8e)), (0x100 + 0x80 * 16, gate64(0x5000, 0x08, 0xee)),
                 (0x100 + 3 * 16, gate64(0x5000, 0x08, 0x8f, ist=1))],
                [(4, u64(0x3000)), (0x24, u64(0x3800))])
dl("long-ud-cpl0", 0x03, 0x02, 6, 0x1234, 0x2000, 0x202, LONG_RAM, dseg(0x08, db=0, l=1), dseg(0x10))
dl("long-int80-cpl3", 0x33, 0x01, 0x80, 0x1236, 0x2000, 0x202, LONG_RAM, dseg(0x2b, db=0, l=1), dseg(0x33))
dl("long-int3-ist", 0x83, 0x01, 3, 0x1235, 0x2008, 0x302, LONG_RAM, dseg(0x08, db=0, l=1), dseg(0x10))
dl("long-gp-not-present", 0x33, 0x01, 0x81, 0x1236, 0x2000, 0x202, LONG_RAM, dseg(0x2b, db=0, l=1), dseg(0x33))
PROT_RAM = dram([(0x100 + 13 * 8, gate32(0x6000, 0x18, 0x8e)), (0x100 + 0x80 * 8, gate32(0x6000, 0x18, 0xee)),
                 (0x100 + 0x21 * 8, gate32(0x6000, 0x18, 0x8f))],
                [(4, u32(0x3000)), (8, u16(0x10))])
dl("prot32-gp-cpl0", 0x02, 0x06, 13, 0x1234, 0x2000, 0x202, PROT_RAM, dseg(0x18), dseg(0x10), err=0x18)
dl("prot32-int80-cpl3", 0x32, 0x01, 0x80, 0x1236, 0x2000, 0x202, PROT_RAM, dseg(0x3b), dseg(0x33))
dl("vm86-gp", 0x3a, 0x06, 13, 0x1234, 0x1000, 0x3202, PROT_RAM, dseg(0x50, 0x500, 0xffff, 0),
   dseg(0x70, 0x700, 0xffff, 0))
dl("vm86-int21-dpl0", 0x3a, 0x01, 0x21, 0x1236, 0x1000, 0x3202, PROT_RAM, dseg(0x50, 0x500, 0xffff, 0),
   dseg(0x70, 0x700, 0xffff, 0))
REAL_RAM = bytearray(0xb00)
REAL_RAM[0x40:0x44] = u16(0x50) + u16(0x100)
REAL_RAM[0x84:0x88] = u16(0x60) + u16(0x200)
dl("real-int10", 0x80, 0x01, 0x10, 0x1236, 0x800, 0x40202, REAL_RAM, dseg(0x50, 0x500, 0xffff, 0),
   dseg(0, 0, 0xffff, 0), idt=(0, 0x3ff))
dl("vme-ivt-int21", 0x3a, 0x11, 0x21, 0x1236, 0x1000, 0x3202, REAL_RAM, dseg(0x50, 0x500, 0xffff, 0),
   dseg(0x70, 0x700, 0xffff, 0), ivt=(0x3202, 0x23002))


# ------------------------------------------------------------------ kernel images
# tests/e2e/kernels.py builds the images: the files themselves (image),
# with a RAM size byte (elf), with RAM, --append and --initrd sizes (kernel).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import kernels as K  # noqa: E402

_VMLINUX = K.linux_vmlinux()
KIMAGES = {
    "multiboot-aout": K.multiboot(),
    "multiboot-elf32": K.multiboot_elf32(),
    "multiboot-video": K.multiboot(flags=0x00010006),
    "multiboot-past-end": K.multiboot(addrs=(K.KERNEL_ADDR, K.KERNEL_ADDR, K.KERNEL_ADDR + 0x10000, 0,
                                             K.KERNEL_ADDR + 32)),
    "pvh-elf32": K.pvh_elf32(),
    "pvh-elf64-linux": K.elf(64, [(K.LINUX_ADDR, K.LINUX_CODE, 0x1000)], K.LINUX_ADDR,
                             notes=K.pvh_note(K.KERNEL_ADDR) + K.note("Xen", 6, b"linux\0")),
    "pvh-elf64-sections": K.elf(64, [(K.KERNEL_ADDR, K.PVH_CODE, 0x100)], K.KERNEL_ADDR,
                                notes=K.pvh_note(K.KERNEL_ADDR), note_as="shdr"),
    "pvh-overlap": K.elf(64, [(K.KERNEL_ADDR, K.PVH_CODE, 0x2000), (K.KERNEL_ADDR + 0x1000, b"x", 1)],
                         K.KERNEL_ADDR, notes=K.pvh_note(K.KERNEL_ADDR)),
    "elf-no-note": K.elf(64, [(K.KERNEL_ADDR, K.PVH_CODE, 0x100)], K.KERNEL_ADDR),
    "bzimage-gzip": K.bzimage(K.compress(_VMLINUX, "gzip")),
    "bzimage-xz": K.bzimage(K.compress(_VMLINUX, "xz")),
    "bzimage-old": K.bzimage(K.compress(_VMLINUX, "gzip"), version=0x0204),
    "bzimage-cmdline-4": K.bzimage(K.compress(_VMLINUX, "gzip"), cmdline_size=4),
    "gzip-data": K.compress(b"hello", "gzip"),
    "script": b"#!/bin/sh\n",
}
for _name, _img in KIMAGES.items():
    write("image", _name, _img)
    write("elf", _name, u8(15) + _img)
    write("kernel", _name, u8(60) + u16(12) + u16(4) + _img)
write("kernel", "multiboot-initrd-too-big", u8(0) + u16(0) + u16(0xffff) + K.multiboot())
write("kernel", "pvh-cmdline-long", u8(0) + u16(3000) + u16(0) + KIMAGES["pvh-elf64-linux"])
