/* SPDX-License-Identifier: MIT */
/*
 * The split-lock emulator (emulate.c): where a decoded instruction touches
 * memory, and what performing it does, against a reference in plain C.
 *
 * Input: 19 register values (RAX..R15, RIP, RFLAGS, then FS and GS bases),
 * each a selector byte that picks one of a table of edge values (0, -1,
 * INT64_MIN, 2^31, ...) or, from 0x80 on, the next 8 bytes; 16 bytes of
 * operand memory; then the instruction bytes, decoded in each of 64-bit,
 * 32-bit and 16-bit mode. Inputs that decode_insn turns down are skipped
 * (fuzz-decode covers those).
 *
 * Oracles:
 *  - emulate_effective and emulate_linear: the address is disp + base (RIP after the
 *    instruction) + index * scale, moved by the word a register bit offset
 *    selects (floor(offset / bits), computed in 128-bit arithmetic) for
 *    BTS/BTR/BTC, cut to the address size; in 64-bit mode plus the FS/GS
 *    base and refused exactly when its first or last byte is not canonical;
 *    elsewhere, with flat 4 GiB segments whose FS and GS bases are the
 *    input's low halves, plus the base cut to 32 bits and refused exactly
 *    when the last byte passes the limit or the segment is CS (a code
 *    segment, not writable);
 *  - emulate_crosses_line is "first and last byte in different 64-byte lines";
 *  - emulate_execute: RIP moves past the instruction; memory holds the result
 *    the reference computes for every op (ADD..XOR with CF in, NOT, NEG,
 *    INC, DEC, XCHG, XADD, CMPXCHG, CMPXCHG8B/16B, BTS/BTR/BTC), no byte
 *    past the operand changes; only the registers the op writes change,
 *    with x86 partial-register rules (8/16-bit merge, AH..BH, 32-bit
 *    zero-extend, CMPXCHG leaving RAX alone on success); RFLAGS changes
 *    only in CF PF AF ZF SF OF; ZF and SF as the reference says for ops
 *    that set them from the result, CF for ADD, SUB, XADD, the logic ops
 *    (clear), INC/DEC (kept) and the bit ops (the old bit), ZF for the
 *    compare-exchanges; NOT and XCHG change no flag.
 */
#include <inttypes.h>

#include "fuzz.h"

#include "decode.h"
#include "emulate.h"
#include "x86.h"
#include "array_size.h"


static const uint64_t edges[] = {
	0, 1, 2, 0x7f, 0x80, 0xff, 0x7fff, 0x8000, 0xffff, 0x7fffffff, 0x80000000,
	0xffffffff, 0x100000000ull, 0x7fffffffffffffffull, 0x8000000000000000ull,
	0xffffffffffffffffull, 0xffffffffffffff80ull, 0xffffffff80000000ull, 63, 64, 65,
	0xffffffffffffffc0ull, 0x1000, 0xfff, 0xffffffffffffffc1ull, 0x3f, 0x40, 0x41,
};

static uint64_t reg_value(struct fuzz_in *in)
{
	uint8_t sel = fuzz_u8(in);

	if (sel >= 0x80)
		return fuzz_u64(in);
	return edges[sel % ARRAY_SIZE(edges)];
}

static uint64_t mask_of(unsigned size)
{
	return size >= 8 ? ~0ull : (1ull << (8 * size)) - 1;
}

static uint64_t load(const uint8_t *m, unsigned size)
{
	uint64_t v = 0;

	memcpy(&v, m, size > 8 ? 8 : size);	/* little-endian host */
	return v;
}

static void store(uint8_t *m, unsigned size, uint64_t v)
{
	memcpy(m, &v, size > 8 ? 8 : size);
}

static __int128 sext(uint64_t v, unsigned size)
{
	if (size >= 8)
		return (__int128)(int64_t)v;
	v &= mask_of(size);
	if (v >> (8 * size - 1))
		return (__int128)v - ((__int128)1 << (8 * size));
	return (__int128)v;
}

/* The source operand as the instruction sees it. */
static uint64_t src_of(const struct decode_insn *i, const struct kvm_regs *r)
{
	if (i->src == DECODE_SRC_IMM)
		return (uint64_t)i->imm;
	if (i->src_high8)
		return (emulate_reg_get(r, i->src_reg) >> 8) & 0xff;
	return emulate_reg_get(r, i->src_reg);
}

static uint64_t ref_address(const struct decode_insn *i, const struct kvm_regs *r,
			    uint64_t fs, uint64_t gs, bool *ok)
{
	uint64_t ea = (uint64_t)i->disp;
	const __u64 *gprs[16] = {
		&r->rax, &r->rcx, &r->rdx, &r->rbx, &r->rsp, &r->rbp, &r->rsi, &r->rdi,
		&r->r8, &r->r9, &r->r10, &r->r11, &r->r12, &r->r13, &r->r14, &r->r15,
	};

	if (i->base == DECODE_REG_RIP)
		ea += r->rip + i->length;
	else if (i->base >= 0)
		ea += *gprs[i->base];
	if (i->index >= 0)
		ea += *gprs[i->index] * i->scale;
	if ((i->op == DECODE_BTS || i->op == DECODE_BTR || i->op == DECODE_BTC) && i->src == DECODE_SRC_REG) {
		__int128 bit = sext(src_of(i, r), i->size), bits = 8 * (__int128)i->size;
		__int128 word = bit >= 0 ? bit / bits : -((-bit + bits - 1) / bits);

		ea += (uint64_t)(word * i->size);
	}
	ea &= mask_of(i->addr_size);
	if (i->mode != DECODE_MODE_64) {
		uint64_t base = i->seg == DECODE_SEG_FS ? (uint32_t)fs : i->seg == DECODE_SEG_GS ? (uint32_t)gs : 0;

		/* Every op here writes, and code segments are not writable. */
		*ok = ea + i->size - 1 <= 0xffffffffull && i->seg != DECODE_SEG_CS;
		return (base + ea) & 0xffffffffull;
	}
	if (i->seg == DECODE_SEG_FS)
		ea += fs;
	else if (i->seg == DECODE_SEG_GS)
		ea += gs;
	*ok = ((int64_t)(ea << 16) >> 16) == (int64_t)ea &&
	      ((int64_t)((ea + i->size - 1) << 16) >> 16) == (int64_t)(ea + i->size - 1);
	return ea;
}

/* Long mode, paging, CS for `mode`; flat writable data segments. */
static void sregs_for(enum decode_mode mode, uint64_t fs, uint64_t gs, struct kvm_sregs *s)
{
	struct kvm_segment data = { .limit = 0xffffffff, .type = 3, .present = 1, .db = 1, .s = 1 };

	memset(s, 0, sizeof(*s));
	s->cr0 = 0x80000011;
	s->efer = 0x500;
	s->cs = (struct kvm_segment){ .limit = 0xffffffff, .type = 11, .present = 1, .s = 1,
				      .l = mode == DECODE_MODE_64, .db = mode == DECODE_MODE_32 };
	s->ds = s->es = s->ss = s->fs = s->gs = data;
	s->fs.base = mode == DECODE_MODE_64 ? fs : (uint32_t)fs;
	s->gs.base = mode == DECODE_MODE_64 ? gs : (uint32_t)gs;
}

/* x86 register write of `size` bytes. */
static void write_sized(struct kvm_regs *r, int reg, bool high8, unsigned size, uint64_t v)
{
	uint64_t old = emulate_reg_get(r, reg);

	if (high8)
		v = (old & ~0xff00ull) | ((v & 0xff) << 8);
	else if (size == 1)
		v = (old & ~0xffull) | (v & 0xff);
	else if (size == 2)
		v = (old & ~0xffffull) | (v & 0xffff);
	else if (size == 4)
		v &= 0xffffffffull;
	emulate_reg_set(r, reg, v);
}

/*
 * Performs i on the reference: memory, registers, and which flags it can
 * tell (*known bits of *fl).
 */
static void ref_execute(const struct decode_insn *i, struct kvm_regs *r, uint8_t *mem,
			uint64_t *fl, uint64_t *known)
{
	unsigned sz = i->size;
	uint64_t mask = mask_of(sz), m = load(mem, sz) & mask, s = src_of(i, r) & mask;
	uint64_t cf = r->rflags & X86_RFLAGS_CF, res = 0, sign = 1ull << (8 * (sz > 8 ? 8 : sz) - 1);
	bool set_res = true;

	*known = 0;
	switch (i->op) {
	case DECODE_ADD: res = m + s; break;
	case DECODE_ADC: res = m + s + cf; break;
	case DECODE_SUB: res = m - s; break;
	case DECODE_SBB: res = m - s - cf; break;
	case DECODE_AND: res = m & s; break;
	case DECODE_OR: res = m | s; break;
	case DECODE_XOR: res = m ^ s; break;
	case DECODE_NOT: res = ~m; break;
	case DECODE_NEG: res = -m; break;
	case DECODE_INC: res = m + 1; break;
	case DECODE_DEC: res = m - 1; break;
	case DECODE_XCHG:
		res = s;
		write_sized(r, i->src_reg, i->src_high8, sz, m);
		break;
	case DECODE_XADD:
		res = m + s;
		write_sized(r, i->src_reg, i->src_high8, sz, m);
		break;
	case DECODE_CMPXCHG:
		*known = X86_RFLAGS_ZF;
		if ((r->rax & mask) == m) {
			res = s;
			*fl |= X86_RFLAGS_ZF;
		} else {
			res = m;
			*fl &= ~X86_RFLAGS_ZF;
			write_sized(r, 0, false, sz, m);
		}
		break;
	case DECODE_CMPXCHG8B: {
		uint64_t want = (r->rdx << 32) | (uint32_t)r->rax;

		*known = X86_RFLAGS_ZF;
		m = load(mem, 8);
		if (m == want) {
			res = (r->rcx << 32) | (uint32_t)r->rbx;
			*fl |= X86_RFLAGS_ZF;
		} else {
			res = m;
			*fl &= ~X86_RFLAGS_ZF;
			r->rax = (uint32_t)m;
			r->rdx = m >> 32;
		}
		break;
	}
	case DECODE_CMPXCHG16B: {
		uint64_t lo = load(mem, 8), hi = load(mem + 8, 8);

		*known = X86_RFLAGS_ZF;
		set_res = false;
		if (lo == r->rax && hi == r->rdx) {
			store(mem, 8, r->rbx);
			store(mem + 8, 8, r->rcx);
			*fl |= X86_RFLAGS_ZF;
		} else {
			r->rax = lo;
			r->rdx = hi;
			*fl &= ~X86_RFLAGS_ZF;
		}
		break;
	}
	case DECODE_BTS: case DECODE_BTR: case DECODE_BTC: {
		uint64_t bit = 1ull << (s & (8ull * sz - 1));

		*known = X86_RFLAGS_CF;
		*fl = (*fl & ~X86_RFLAGS_CF) | ((m & bit) ? X86_RFLAGS_CF : 0);
		res = i->op == DECODE_BTS ? m | bit : i->op == DECODE_BTR ? m & ~bit : m ^ bit;
		break;
	}
	case DECODE_OP_COUNT:
		set_res = false;
		break;
	}
	if (!set_res)
		return;
	res &= mask;
	store(mem, sz, res);
	/* ZF and SF of the result, for the ops that set them from it. */
	switch (i->op) {
	case DECODE_ADD: case DECODE_ADC: case DECODE_SUB: case DECODE_SBB: case DECODE_AND: case DECODE_OR:
	case DECODE_XOR: case DECODE_NEG: case DECODE_INC: case DECODE_DEC: case DECODE_XADD:
		*known |= X86_RFLAGS_ZF | X86_RFLAGS_SF;
		*fl = (*fl & ~(X86_RFLAGS_ZF | X86_RFLAGS_SF)) | (res == 0 ? X86_RFLAGS_ZF : 0) | (res & sign ? X86_RFLAGS_SF : 0);
		break;
	default:
		break;
	}
	/* Carries: CF of ADD/SUB and friends (INC and DEC keep it). */
	switch (i->op) {
	case DECODE_ADD: case DECODE_XADD:
		*known |= X86_RFLAGS_CF;
		*fl = (*fl & ~X86_RFLAGS_CF) | (res < m ? X86_RFLAGS_CF : 0);
		break;
	case DECODE_SUB:
		*known |= X86_RFLAGS_CF;
		*fl = (*fl & ~X86_RFLAGS_CF) | (s > m ? X86_RFLAGS_CF : 0);
		break;
	case DECODE_AND: case DECODE_OR: case DECODE_XOR:
		*known |= X86_RFLAGS_CF;
		*fl &= ~X86_RFLAGS_CF;
		break;
	case DECODE_INC: case DECODE_DEC: case DECODE_NOT: case DECODE_XCHG:
		*known |= X86_RFLAGS_CF;	/* unchanged */
		break;
	default:
		break;
	}
	if (i->op == DECODE_NOT || i->op == DECODE_XCHG) {
		*known = X86_RFLAGS_ARITH;		/* no flag changes at all */
	}
}


static void one_mode(const struct decode_insn *ip, const struct kvm_regs *rp, uint64_t fs, uint64_t gs,
		     const uint8_t *memory)
{
	struct decode_insn i = *ip;
	struct kvm_regs r = *rp, got, want;
	struct kvm_sregs sregs;
	struct emulate_exception fault;
	uint8_t buf[64] __attribute__((aligned(16))), ref[64];
	struct emulate_access a = { .size = i.size };
	uint64_t fl, known, want_la;
	bool ok, want_ok;

	sregs_for(i.mode, fs, gs, &sregs);
	FUZZ_CHECK(emulate_cpu_mode(&sregs, r.rflags & ~(1ull << 17)) == i.mode, "mode");
	ok = emulate_linear(&i, &sregs, r.rflags & ~(1ull << 17), emulate_effective(&i, &r), i.size, &a.la, &fault);
	want_la = ref_address(&i, &r, fs, gs, &want_ok);
	FUZZ_CHECK(ok == want_ok, "%s: segment check %d, reference %d", decode_op_name(i.op), ok, want_ok);
	FUZZ_CHECK(a.la == want_la, "%s: address 0x%" PRIx64 ", reference 0x%" PRIx64,
		   decode_op_name(i.op), a.la, want_la);
	FUZZ_CHECK(ok || (fault.vector == (i.seg == DECODE_SEG_SS ? 12 : 13) && fault.has_error_code &&
			  fault.error_code == 0), "fault %u", fault.vector);
	FUZZ_CHECK(emulate_crosses_line(a.la, a.size) ==
		   (a.la / EMULATE_CACHE_LINE !=
		    ((unsigned __int128)a.la + a.size - 1) / EMULATE_CACHE_LINE),
		   "emulate_crosses_line(0x%" PRIx64 ", %u)", a.la, a.size);

	memset(buf, 0xee, sizeof(buf));
	memcpy(buf, memory, i.size);
	memcpy(ref, buf, sizeof(ref));
	got = r;
	want = r;
	emulate_execute(&i, &got, buf);
	fl = r.rflags;
	ref_execute(&i, &want, ref, &fl, &known);
	want.rip = (want.rip + i.length) & (i.mode == DECODE_MODE_64 ? ~0ull :
					    i.mode == DECODE_MODE_32 ? 0xffffffffull : 0xffffull);

	FUZZ_CHECK(memcmp(buf, ref, i.size) == 0, "%s (%u bytes): memory differs from the reference",
		   decode_op_name(i.op), i.size);
	FUZZ_CHECK(memcmp(buf + i.size, ref + i.size, sizeof(buf) - i.size) == 0,
		   "%s wrote past its %u-byte operand", decode_op_name(i.op), i.size);
	FUZZ_CHECK(got.rip == want.rip, "RIP 0x%llx, want 0x%llx", got.rip, want.rip);
	FUZZ_CHECK(got.rax == want.rax && got.rcx == want.rcx && got.rdx == want.rdx &&
		   got.rbx == want.rbx && got.rsp == want.rsp && got.rbp == want.rbp &&
		   got.rsi == want.rsi && got.rdi == want.rdi && got.r8 == want.r8 &&
		   got.r9 == want.r9 && got.r10 == want.r10 && got.r11 == want.r11 &&
		   got.r12 == want.r12 && got.r13 == want.r13 && got.r14 == want.r14 &&
		   got.r15 == want.r15,
		   "%s: registers differ (RAX 0x%llx want 0x%llx, RDX 0x%llx want 0x%llx)",
		   decode_op_name(i.op), got.rax, want.rax, got.rdx, want.rdx);
	FUZZ_CHECK((got.rflags & ~X86_RFLAGS_ARITH) == (r.rflags & ~X86_RFLAGS_ARITH), "%s changed RFLAGS 0x%llx -> 0x%llx",
		   decode_op_name(i.op), r.rflags, got.rflags);
	FUZZ_CHECK((got.rflags & known) == (fl & known), "%s: RFLAGS 0x%llx, reference 0x%" PRIx64
		   " in bits 0x%" PRIx64, decode_op_name(i.op), got.rflags, fl, known);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = fuzz_in(data, size);
	struct kvm_regs r;
	uint64_t fs, gs;
	uint8_t memory[16];
	struct decode_insn i;

	memset(&r, 0, sizeof(r));
	r.rax = reg_value(&in); r.rcx = reg_value(&in); r.rdx = reg_value(&in);
	r.rbx = reg_value(&in); r.rsp = reg_value(&in); r.rbp = reg_value(&in);
	r.rsi = reg_value(&in); r.rdi = reg_value(&in); r.r8 = reg_value(&in);
	r.r9 = reg_value(&in); r.r10 = reg_value(&in); r.r11 = reg_value(&in);
	r.r12 = reg_value(&in); r.r13 = reg_value(&in); r.r14 = reg_value(&in);
	r.r15 = reg_value(&in); r.rip = reg_value(&in);
	r.rflags = (reg_value(&in) & 0x3f7fd7ull) | 0x2;	/* defined bits, IF and TF as they come */
	fs = reg_value(&in);
	gs = reg_value(&in);
	memset(memory, 0, sizeof(memory));
	fuzz_bytes(&in, memory, sizeof(memory));
	if (in.n > DECODE_INSN_MAX + 1)
		return 0;
	for (int mode = DECODE_MODE_64; mode <= DECODE_MODE_16; mode++)
		if (decode_insn((enum decode_mode)mode, in.p, in.n, &i) == 0)
			one_mode(&i, &r, fs, gs, memory);
	return 0;
}
