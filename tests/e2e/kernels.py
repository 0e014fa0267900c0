"""Builders of tiny kernel images for the loader's tests (image_test.py)
and fuzz seeds (tests/fuzz/seeds.py): ELF32/ELF64 with PT_LOAD segments and
notes, bzImages around a compressed vmlinux ELF, multiboot (v1) kernels.
The guest code of each prints its command line on COM1 and writes 0 to
port 0xf4 when the boot parameters are right (9 when not); the PC machine makes
those vmm statuses 1 and 19 (isa-debug-exit)."""
import gzip
import lzma
import shutil
import struct
import subprocess

KERNEL_ADDR = 0x100000
LINUX_ADDR = 0x1000000

# 32-bit, EBX = multiboot info: print [ebx+16] (cmdline), check EAX's magic.
MB_CODE = bytes.fromhex(
    "89c7" "8b7310" "66baf803" "ac84c07403eeebf8" "b00aee"
    "31c0" "81ff02b0ad2b" "7405" "b809000000" "66baf400" "ef" "f4")
# 32-bit, EBX = hvm_start_info: print [ebx+24] (cmdline_paddr), check its magic.
PVH_CODE = bytes.fromhex(
    "8b7318" "66baf803" "ac84c07403eeebf8" "b00aee"
    "31c0" "813b78c56e33" "7405" "b809000000" "66baf400" "ef" "f4")
# 64-bit, RSI = zero page: print [rsi+0x228] (cmd_line_ptr), check 3 e820 entries.
LINUX_CODE = bytes.fromhex(
    "8bbe28020000" "66baf803" "8a0784c07406ee48ffc7ebf4" "b00aee"
    "31c0" "80bee801000003" "7405" "b809000000" "66baf400" "ef" "f4")


def note(name, ntype, desc):
    n = name.encode() + b"\0"
    pad = lambda b: b + b"\0" * (-len(b) % 4)
    return struct.pack("<III", len(n), len(desc), ntype) + pad(n) + pad(desc)


def elf(bits, segs, entry, notes=b"", machine=None, etype=2, note_as="phdr", phnum=None):
    """segs: [(paddr, data, memsz)]; notes: bytes of note records."""
    is64 = bits == 64
    machine = machine if machine is not None else (62 if is64 else 3)
    ehsize, phent, shent = (64, 56, 64) if is64 else (52, 32, 40)
    nph = len(segs) + (1 if notes and note_as == "phdr" else 0)
    data_off = ehsize + nph * phent
    body, phdrs, off = b"", [], data_off
    for paddr, data, memsz in segs:
        phdrs.append((1, off, paddr, len(data), memsz))
        body += data
        off += len(data)
    note_off = off
    body += notes
    off += len(notes)
    if notes and note_as == "phdr":
        phdrs.append((4, note_off, 0, len(notes), len(notes)))
    shoff, shnum = 0, 0
    shdrs = b""
    if notes and note_as == "shdr":
        shoff, shnum = off, 2
        if is64:
            shdrs = b"\0" * shent + struct.pack("<IIQQQQIIQQ", 0, 7, 2, 0, note_off, len(notes), 0, 0, 4, 0)
        else:
            shdrs = b"\0" * shent + struct.pack("<IIIIIIIIII", 0, 7, 2, 0, note_off, len(notes), 0, 0, 4, 0)
    ident = b"\x7fELF" + bytes([2 if is64 else 1, 1, 1]) + b"\0" * 9
    if is64:
        hdr = ident + struct.pack("<HHIQQQIHHHHHH", etype, machine, 1, entry, ehsize, shoff, 0,
                                  ehsize, phent, phnum if phnum is not None else nph, shent, shnum, 0)
        ph = b"".join(struct.pack("<IIQQQQQQ", t, 7, o, p, p, fs, ms, 0x1000) for t, o, p, fs, ms in phdrs)
    else:
        hdr = ident + struct.pack("<HHIIIIIHHHHHH", etype, machine, 1, entry, ehsize, shoff, 0,
                                  ehsize, phent, phnum if phnum is not None else nph, shent, shnum, 0)
        ph = b"".join(struct.pack("<IIIIIIII", t, o, p, p, fs, ms, 7, 0x1000) for t, o, p, fs, ms in phdrs)
    return hdr + ph + body + shdrs


def pvh_note(entry, size=8):
    return note("Xen", 18, struct.pack("<Q" if size == 8 else "<I", entry))


def pvh_elf32():
    """An ELF32 PVH kernel that stays in 32-bit mode."""
    return elf(32, [(KERNEL_ADDR, PVH_CODE, len(PVH_CODE))], KERNEL_ADDR,
               notes=pvh_note(KERNEL_ADDR, 4))


def linux_vmlinux(segs=None, entry=LINUX_ADDR):
    return elf(64, segs or [(LINUX_ADDR, LINUX_CODE, 0x200000)], entry)


def compress(data, fmt):
    if fmt == "gzip":
        return gzip.compress(data, mtime=0)
    if fmt == "xz":
        return lzma.compress(data, check=lzma.CHECK_CRC32)
    if fmt == "zstd":
        if not shutil.which("zstd"):
            return None
        return subprocess.run(["zstd", "-q", "-c"], input=data, capture_output=True, check=True).stdout
    if fmt == "bzip2":
        return b"BZh91AY&SY" + b"\0" * 32
    raise ValueError(fmt)


def bzimage(payload, version=0x020f, xloadflags=1, cmdline_size=2047, setup_sects=1,
            payload_length=None, truncate=None):
    """A bzImage whose payload (compressed vmlinux + Linux's 4-byte size) follows the setup."""
    setup = bytearray((setup_sects + 1) * 512)
    setup[0x1f1] = setup_sects
    struct.pack_into("<H", setup, 0x1fe, 0xaa55)
    setup[0x200:0x202] = b"\xeb\x66"          # jmp to 0x268: the header's end
    setup[0x202:0x206] = b"HdrS"
    struct.pack_into("<H", setup, 0x206, version)
    setup[0x211] = 1                           # LOADED_HIGH
    struct.pack_into("<I", setup, 0x22c, 0x7fffffff)
    struct.pack_into("<H", setup, 0x236, xloadflags)
    struct.pack_into("<I", setup, 0x238, cmdline_size)
    payload = payload + struct.pack("<I", 0)
    struct.pack_into("<I", setup, 0x248, 0)
    struct.pack_into("<I", setup, 0x24c, payload_length if payload_length is not None else len(payload))
    img = bytes(setup) + payload
    return img[:truncate] if truncate is not None else img


def multiboot(flags=0x00010002, code=MB_CODE, addrs=None, extra_header=b""):
    """A multiboot kernel; with flag 16 its a.out kludge loads the whole file at 1 MiB."""
    magic = 0x1badb002
    hdr = struct.pack("<III", magic, flags, (-(magic + flags)) & 0xffffffff)
    if flags & 0x10000:
        header_addr, load_addr, load_end, bss_end, entry = addrs or (
            KERNEL_ADDR, KERNEL_ADDR, 0, 0, KERNEL_ADDR + 32)
        hdr += struct.pack("<IIIII", header_addr, load_addr, load_end, bss_end, entry)
    return hdr + extra_header + code


def multiboot_elf32():
    """An ELF32 multiboot kernel: the header in its first segment."""
    magic, flags = 0x1badb002, 0x2
    hdr = struct.pack("<III", magic, flags, (-(magic + flags)) & 0xffffffff)
    seg = hdr + b"\0" * 4 + MB_CODE
    return elf(32, [(KERNEL_ADDR, seg, len(seg))], KERNEL_ADDR + 16)
