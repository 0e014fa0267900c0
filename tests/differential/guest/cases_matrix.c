/* SPDX-License-Identifier: MIT */
/*
 * The matrix: every lockable instruction form x operand size x prefixes
 * (LOCK position, REX, 0x66, 0x67, segment overrides) x CPU mode and CPL x
 * operand placement x page state. Each case walks one slice of it and prints
 * one line per combination: the result, the registers it wrote, the flags,
 * the operand's bytes and a hash of its two cache lines.
 */
#include "diff.h"

enum imm { NO_IMM, IMM8, IMMZ };

struct form {
	const char *name;
	uint8_t opc[2], nopc;     /* opcode for 16/32/64-bit operands */
	int opc8;                 /* last opcode byte for 8-bit operands; -1: none */
	int ext;                  /* ModRM.reg digit, or -1 for a register operand */
	enum imm imm;
	bool lock_implied;        /* XCHG locks without a prefix */
	bool only64;              /* CMPXCHG8B: one 8-byte size, no 0x66/REX.W */
	bool cmp;                 /* compare-exchange: run equal and unequal */
};

static const struct form forms[] = {
	{ "add", { 0x01 }, 1, 0x00, -1, NO_IMM, false, false, false },
	{ "adc", { 0x11 }, 1, 0x10, -1, NO_IMM, false, false, false },
	{ "and", { 0x21 }, 1, 0x20, -1, NO_IMM, false, false, false },
	{ "or", { 0x09 }, 1, 0x08, -1, NO_IMM, false, false, false },
	{ "sbb", { 0x19 }, 1, 0x18, -1, NO_IMM, false, false, false },
	{ "sub", { 0x29 }, 1, 0x28, -1, NO_IMM, false, false, false },
	{ "xor", { 0x31 }, 1, 0x30, -1, NO_IMM, false, false, false },
	{ "add-imm", { 0x81 }, 1, 0x80, 0, IMMZ, false, false, false },
	{ "or-imm8", { 0x83 }, 1, -1, 1, IMM8, false, false, false },
	{ "adc-imm", { 0x81 }, 1, 0x80, 2, IMMZ, false, false, false },
	{ "sbb-imm8", { 0x83 }, 1, -1, 3, IMM8, false, false, false },
	{ "and-imm", { 0x81 }, 1, 0x80, 4, IMMZ, false, false, false },
	{ "sub-imm8", { 0x83 }, 1, -1, 5, IMM8, false, false, false },
	{ "xor-imm", { 0x81 }, 1, 0x80, 6, IMMZ, false, false, false },
	{ "not", { 0xf7 }, 1, 0xf6, 2, NO_IMM, false, false, false },
	{ "neg", { 0xf7 }, 1, 0xf6, 3, NO_IMM, false, false, false },
	{ "inc", { 0xff }, 1, 0xfe, 0, NO_IMM, false, false, false },
	{ "dec", { 0xff }, 1, 0xfe, 1, NO_IMM, false, false, false },
	{ "xchg", { 0x87 }, 1, 0x86, -1, NO_IMM, true, false, false },
	{ "xadd", { 0x0f, 0xc1 }, 2, 0xc0, -1, NO_IMM, false, false, false },
	{ "cmpxchg", { 0x0f, 0xb1 }, 2, 0xb0, -1, NO_IMM, false, false, true },
	{ "cmpxchg8b", { 0x0f, 0xc7 }, 2, -1, 1, NO_IMM, false, true, true },
	{ "bts", { 0x0f, 0xab }, 2, -1, -1, NO_IMM, false, false, false },
	{ "btr", { 0x0f, 0xb3 }, 2, -1, -1, NO_IMM, false, false, false },
	{ "btc", { 0x0f, 0xbb }, 2, -1, -1, NO_IMM, false, false, false },
	{ "bts-imm", { 0x0f, 0xba }, 2, -1, 5, IMM8, false, false, false },
	{ "btr-imm", { 0x0f, 0xba }, 2, -1, 6, IMM8, false, false, false },
	{ "btc-imm", { 0x0f, 0xba }, 2, -1, 7, IMM8, false, false, false },
};

static const unsigned sizes[] = { 1, 2, 4, 8 };

/* Where LOCK goes among the other prefixes. */
enum lock_pos { LOCK_FIRST, LOCK_LAST, LOCK_NONE };

struct combo {
	const struct form *f;
	unsigned size;
	enum exec_mode mode;
	unsigned cpl;
	bool ext_regs;            /* r9 base, r10 source (REX.B, REX.R) */
	const uint8_t *extra;     /* other legacy prefixes, in order */
	unsigned nextra;
	enum lock_pos lock;
	bool equal;               /* compare-exchange: accumulator = memory */
};

static bool valid(const struct form *f, unsigned size, enum exec_mode mode, bool ext_regs)
{
	if (f->only64)
		return size == 8;
	if (size == 1 && f->opc8 < 0)
		return false;
	if (size == 8 && mode != MODE_64)
		return false;
	if (ext_regs && mode != MODE_64)
		return false;
	return true;
}

/* Encodes c into b; returns the length. *addr_reg gets the base register. */
static unsigned encode(const struct combo *c, uint8_t *b, unsigned *addr_reg)
{
	const struct form *f = c->f;
	unsigned n = 0, rex = 0;
	uint8_t reg = c->ext_regs ? 10 : 6, base = c->ext_regs ? 9 : 7;

	if (c->lock == LOCK_FIRST)
		b[n++] = 0xf0;
	if (c->size == 2)
		b[n++] = 0x66;
	for (unsigned i = 0; i < c->nextra; i++)
		b[n++] = c->extra[i];
	if (c->lock == LOCK_LAST)
		b[n++] = 0xf0;
	if (c->size == 8 && !f->only64)
		rex |= 0x48;
	if (c->ext_regs)
		rex |= 0x40 | (f->ext < 0 ? 0x4 : 0) | 0x1;
	if (rex)
		b[n++] = (uint8_t)rex;
	for (unsigned i = 0; i < f->nopc; i++)
		b[n++] = f->opc[i];
	if (c->size == 1)
		b[n - 1] = (uint8_t)f->opc8;
	b[n++] = (uint8_t)(((f->ext < 0 ? reg : (unsigned)f->ext) & 7) << 3 | (base & 7));
	if (f->imm == IMM8)
		b[n++] = f->ext >= 5 && f->nopc == 2 ? 0x25 : 0x81; /* BT* bit 37: beyond a dword */
	else if (f->imm == IMMZ)
		for (unsigned i = 0; i < (c->size == 1 ? 1u : c->size == 2 ? 2u : 4u); i++)
			b[n++] = (uint8_t)(0x5a + 0x11 * i);
	*addr_reg = base;
	return n;
}

static void label_of(const struct combo *c, char *buf, size_t size)
{
	size_t n = 0;

	(void)size;
	if (c->lock == LOCK_FIRST)
		n = put_str(buf, n, "lock ");
	for (unsigned i = 0; i < c->nextra; i++) {
		n = put_hex(buf, n, c->extra[i]);
		buf[n++] = ' ';
	}
	if (c->lock == LOCK_LAST)
		n = put_str(buf, n, "lock ");
	n = put_str(buf, n, c->f->name);
	buf[n++] = '.';
	n = put_str(buf, n, c->size == 1 ? "8" : c->size == 2 ? "16" : c->size == 4 ? "32" : "64");
	if (c->ext_regs)
		n = put_str(buf, n, " r9/r10");
	if (c->f->cmp)
		n = put_str(buf, n, c->equal ? " eq" : " ne");
	buf[n] = 0;
}

/* The linear address a segment override adds in this mode. */
static uint64_t seg_base(const struct combo *c)
{
	for (unsigned i = 0; i < c->nextra; i++) {
		if (c->mode == MODE_64 && c->extra[i] == 0x65)
			return rdmsr(MSR_GS_BASE);
	}
	return 0;
}

static void run_combo(const struct combo *c, uint64_t addr, uint32_t seed)
{
	struct exec_req req = { .mode = c->mode, .cpl = c->cpl };
	struct exec_result res;
	uint8_t insn[15], mem[8];
	unsigned reg, len;
	char label[64];

	len = encode(c, insn, &reg);
	req.insn = insn;
	req.len = len;
	req.ds = req.es = req.fs = c->cpl ? SEL_U_DATA_B : SEL_K_DATA_B;
	seed_regs(&req.in, seed);
	req.in.r[reg] = addr - seg_base(c);
	req.in.r[c->ext_regs ? R_10 : R_SI] &= 0x3f; /* BT* offsets stay near */
	win_fill((addr & ~63ull) - 64, 256, seed);
	if (c->f->cmp && c->equal) {
		win_read(addr, mem, 8);
		memcpy(&req.in.r[R_AX], mem, 8);
		memcpy(&req.in.r[R_DX], mem + 4, 4);
	}
	exec_insn(&req, &res);
	label_of(c, label, sizeof(label));
	print_compact(label, &req, &res, addr, c->size);
}

enum place { IN_LINE, LINE_SPLIT, PAGE_SPLIT };

static uint64_t place_addr(enum place p, unsigned size)
{
	unsigned half = size > 1 ? size / 2 : 0;

	switch (p) {
	case IN_LINE:
		return WIN_PAGE(1) + 128 + 16 + (size > 1 ? 1 : 0);
	case LINE_SPLIT:
		return WIN_PAGE(1) + 128 - half - (size == 1);
	case PAGE_SPLIT:
	default:
		return WIN_PAGE(1) - half - (size == 1);
	}
}

/* Every form at every size, LOCK first, no other prefix. */
static void sweep(enum exec_mode mode, unsigned cpl, enum place p, bool ext_regs)
{
	uint32_t seed = 1000;

	if (mode != MODE_64)
		seg_set_data(0, 0xffffffff);
	for (size_t i = 0; i < ARRAY_SIZE(forms); i++) {
		for (size_t s = 0; s < ARRAY_SIZE(sizes); s++) {
			struct combo c = { .f = &forms[i], .size = sizes[s], .mode = mode,
					   .cpl = cpl, .ext_regs = ext_regs, .lock = LOCK_FIRST };

			if (!valid(c.f, c.size, mode, ext_regs))
				continue;
			run_combo(&c, place_addr(p, c.size), seed++);
			if (c.f->cmp) {
				c.equal = true;
				run_combo(&c, place_addr(p, c.size), seed++);
			}
		}
	}
}

#define SWEEP(fn, mode, cpl, place, ext)                     \
	static int fn(const struct boot_info *bi)            \
	{                                                    \
		(void)bi;                                    \
		sweep(mode, cpl, place, ext);                \
		return 0;                                    \
	}

SWEEP(m64_cpl0_inline, MODE_64, 0, IN_LINE, false)
SWEEP(m64_cpl0_line, MODE_64, 0, LINE_SPLIT, false)
SWEEP(m64_cpl0_page, MODE_64, 0, PAGE_SPLIT, false)
SWEEP(m64_cpl0_rex, MODE_64, 0, LINE_SPLIT, true)
SWEEP(m64_cpl3_line, MODE_64, 3, LINE_SPLIT, false)
SWEEP(m64_cpl3_page, MODE_64, 3, PAGE_SPLIT, false)
SWEEP(m32_cpl0_inline, MODE_32, 0, IN_LINE, false)
SWEEP(m32_cpl0_line, MODE_32, 0, LINE_SPLIT, false)
SWEEP(m32_cpl0_page, MODE_32, 0, PAGE_SPLIT, false)
SWEEP(m32_cpl3_line, MODE_32, 3, LINE_SPLIT, false)

/*
 * LOCK first, last, or missing, among 0x66 and other prefixes: segment
 * overrides (CS/DS/ES/SS ignored in 64-bit mode, FS base 0 here, GS = the
 * runtime's base), 0x67, and REP prefixes (XACQUIRE/XRELEASE hints).
 */
static const uint8_t pfx_sets[][3] = {
	{ 0x2e }, { 0x3e }, { 0x26 }, { 0x36 }, { 0x64 }, { 0x65 }, { 0x67 },
	{ 0xf2 }, { 0xf3 }, { 0x26, 0x67 }, { 0x65, 0xf3, 0x67 },
};
static const uint8_t pfx_len[] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 3 };

static bool has_byte(const uint8_t *p, unsigned n, uint8_t b)
{
	for (unsigned i = 0; i < n; i++)
		if (p[i] == b)
			return true;
	return false;
}

static void prefixes(enum exec_mode mode, unsigned cpl)
{
	static const char *const pick[] = { "add", "xadd", "cmpxchg", "btc", "inc", "xchg" };
	uint32_t seed = 2000;

	if (mode == MODE_64)
		wrmsr(MSR_FS_BASE, 0);
	else
		seg_set_data(0, 0xffffffff);
	for (size_t k = 0; k < ARRAY_SIZE(pick); k++) {
		const struct form *f = NULL;

		for (size_t i = 0; i < ARRAY_SIZE(forms); i++)
			if (!strcmp(forms[i].name, pick[k]))
				f = &forms[i];
		for (size_t p = 0; p < ARRAY_SIZE(pfx_sets); p++) {
			for (int lock = LOCK_FIRST; lock <= LOCK_NONE; lock++) {
				struct combo c = { .f = f, .size = k % 2 ? 2 : 4, .mode = mode,
						   .cpl = cpl, .extra = pfx_sets[p],
						   .nextra = pfx_len[p], .lock = lock };

				/* 0x67 in compatibility mode: (%di), 16-bit addressing. */
				if (mode != MODE_64 && has_byte(c.extra, c.nextra, 0x67))
					continue;
				if (mode != MODE_64 && has_byte(c.extra, c.nextra, 0x65))
					continue;
				/*
				 * A plain write through CS there is #GP(0), which
				 * QEMU's TCG omits: mode-compat-cs-override-write
				 * has those, judged where a probe says the CPU checks.
				 */
				if (mode != MODE_64 && lock == LOCK_NONE && has_byte(c.extra, c.nextra, 0x2e)) {
					seed++;
					continue;
				}
				run_combo(&c, place_addr(LINE_SPLIT, c.size), seed++);
			}
		}
	}
}

static int prefixes_64_cpl0(const struct boot_info *bi)
{
	(void)bi;
	prefixes(MODE_64, 0);
	return 0;
}

static int prefixes_32_cpl0(const struct boot_info *bi)
{
	(void)bi;
	prefixes(MODE_32, 0);
	return 0;
}

/*
 * Writes through a CS override in compatibility mode: code segments are
 * not writable there (SDM vol. 3 3.4.5.1), #GP(0) whether locked or not,
 * split or not.
 */
static int compat_cs_write(const struct boot_info *bi)
{
	static const uint8_t cs[] = { 0x2e };
	static const enum place places[] = { IN_LINE, LINE_SPLIT };
	uint32_t seed = 2500;

	(void)bi;
	seg_set_data(0, 0xffffffff);
	for (size_t i = 0; i < ARRAY_SIZE(forms); i++) {
		if (strcmp(forms[i].name, "add") && strcmp(forms[i].name, "inc"))
			continue;
		for (size_t p = 0; p < ARRAY_SIZE(places); p++)
			for (int lock = LOCK_FIRST; lock <= LOCK_NONE; lock++) {
				struct combo c = { .f = &forms[i], .size = 4, .mode = MODE_32,
						   .cpl = 0, .extra = cs, .nextra = 1, .lock = lock };

				run_combo(&c, place_addr(places[p], c.size), seed++);
			}
	}
	return 0;
}

/* A subset of forms against each page state of the operand's second page. */
static void page_states(unsigned cpl)
{
	static const struct { unsigned state; const char *name; } states[] = {
		{ PG_NORMAL, "present" },
		{ PG_W | PG_U, "not-present" },
		{ PG_P | PG_U, "read-only" },
		{ PG_P | PG_W, "supervisor" },
		{ PG_NORMAL | PG_XD, "xd-without-nxe" },
		{ PG_NORMAL | PG_RSVD, "reserved-bit" },
		{ PG_NORMAL | PG_NORAM, "no-ram" },
	};
	static const char *const pick[] = { "add", "not", "xchg", "xadd", "cmpxchg", "cmpxchg8b", "bts" };
	uint32_t seed = 3000;

	write_cr0(read_cr0() | X86_CR0_WP);
	for (size_t s = 0; s < ARRAY_SIZE(states); s++) {
		printf("page 1: %s\n", states[s].name);
		win_set(1, states[s].state);
		for (size_t k = 0; k < ARRAY_SIZE(pick); k++) {
			for (size_t i = 0; i < ARRAY_SIZE(forms); i++) {
				struct combo c = { .f = &forms[i], .size = forms[i].only64 ? 8 : 4,
						   .mode = MODE_64, .cpl = cpl, .lock = LOCK_FIRST };

				if (strcmp(forms[i].name, pick[k]))
					continue;
				run_combo(&c, place_addr(PAGE_SPLIT, c.size), seed++);
				run_combo(&c, place_addr(LINE_SPLIT, c.size), seed++);
			}
		}
	}
	win_set(1, PG_NORMAL);
	write_cr0(read_cr0() & ~X86_CR0_WP);
}

static int pages_cpl0(const struct boot_info *bi)
{
	(void)bi;
	page_states(0);
	return 0;
}

static int pages_cpl3(const struct boot_info *bi)
{
	(void)bi;
	page_states(3);
	return 0;
}

static const struct diff_case cases[] = {
	{ "matrix-64-cpl0-inline", m64_cpl0_inline },
	{ "matrix-64-cpl0-line-split", m64_cpl0_line },
	{ "matrix-64-cpl0-page-split", m64_cpl0_page },
	{ "matrix-64-cpl0-rex-regs", m64_cpl0_rex },
	{ "matrix-64-cpl3-line-split", m64_cpl3_line },
	{ "matrix-64-cpl3-page-split", m64_cpl3_page },
	{ "matrix-compat-cpl0-inline", m32_cpl0_inline },
	{ "matrix-compat-cpl0-line-split", m32_cpl0_line },
	{ "matrix-compat-cpl0-page-split", m32_cpl0_page },
	{ "matrix-compat-cpl3-line-split", m32_cpl3_line },
	{ "matrix-prefixes-64-cpl0", prefixes_64_cpl0 },
	{ "matrix-prefixes-compat-cpl0", prefixes_32_cpl0 },
	{ "mode-compat-cs-override-write", compat_cs_write },
	{ "matrix-page-states-cpl0", pages_cpl0 },
	{ "matrix-page-states-cpl3", pages_cpl3 },
};
CASE_TABLE(matrix_cases, cases);
