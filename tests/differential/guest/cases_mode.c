/* SPDX-License-Identifier: MIT */
/*
 * Issue 9 item 2: decode and address in the mode the CPU is in. Compatibility
 * mode (CS.L=0, CS.D=1) has no REX (0x48 is DEC EAX), applies segment bases
 * and limits, and wraps addresses at 32 bits; 0x67 selects 16-bit
 * addressing there and 32-bit addressing in 64-bit mode; BT* register bit
 * offsets move the operand and wrap with the address size.
 */
#include "diff.h"

#define PAGE_SPLIT  (WIN_PAGE(1) - 2)
#define LINE_SPLIT  (WIN_PAGE(1) + 62)

static void run32(const char *label, const uint8_t *insn, unsigned len, unsigned cpl,
		  unsigned addr_reg, uint64_t addr, uint16_t ds, uint32_t seed)
{
	struct exec_req req = { .mode = MODE_32, .cpl = cpl, .insn = insn, .len = len,
				.ds = ds, .es = ds, .fs = ds };

	run_op(label, &req, addr_reg, addr, seed);
}

static void run64(const char *label, const uint8_t *insn, unsigned len, unsigned cpl,
		  unsigned addr_reg, uint64_t addr, uint32_t seed)
{
	struct exec_req req = { .mode = MODE_64, .cpl = cpl, .insn = insn, .len = len };

	run_op(label, &req, addr_reg, addr, seed);
}

static uint16_t data_sel(unsigned cpl)
{
	return cpl ? SEL_U_DATA_B : SEL_K_DATA_B;
}

/* f0 48 01 03: LOCK DEC EAX + ADD in compatibility mode: #UD. */
static int rex_is_dec(const struct boot_info *bi)
{
	static const uint8_t insn[] = { 0xf0, 0x48, 0x01, 0x03 };
	static const uint8_t nolock[] = { 0x48, 0xf0, 0x01, 0x03 };

	(void)bi;
	seg_set_data(0, 0xffffffff);
	run32("compat cpl0 f0 48 01 03 (lock dec eax)", insn, 4, 0, R_BX, LINE_SPLIT, data_sel(0), 1);
	run32("compat cpl0 48 f0 01 03 (dec eax; lock add)", nolock, 4, 0, R_BX, LINE_SPLIT, data_sel(0), 2);
	run32("compat cpl3 f0 48 01 03 (lock dec eax)", insn, 4, 3, R_BX, LINE_SPLIT, data_sel(3), 3);
	return 0;
}

static int compat_lock_add(const struct boot_info *bi, unsigned cpl)
{
	static const uint8_t add[] = { 0xf0, 0x01, 0x03 };        /* lock add %eax,(%ebx) */
	static const uint8_t addw[] = { 0x66, 0xf0, 0x01, 0x03 }; /* lock add %ax,(%ebx) */
	static const uint8_t incb[] = { 0xf0, 0xfe, 0x03 };       /* lock incb (%ebx) */
	static const uint8_t xadd[] = { 0xf0, 0x0f, 0xc1, 0x03 }; /* lock xadd %eax,(%ebx) */
	static const uint8_t c8b[] = { 0xf0, 0x0f, 0xc7, 0x0e };  /* lock cmpxchg8b (%esi) */
	uint16_t ds = data_sel(cpl);

	(void)bi;
	seg_set_data(0, 0xffffffff);
	run32("compat lock add dword, line split", add, 3, cpl, R_BX, LINE_SPLIT, ds, 4);
	run32("compat lock add dword, page split", add, 3, cpl, R_BX, PAGE_SPLIT, ds, 5);
	run32("compat lock add word, line split", addw, 4, cpl, R_BX, LINE_SPLIT + 1, ds, 6);
	run32("compat lock inc byte", incb, 3, cpl, R_BX, LINE_SPLIT, ds, 7);
	run32("compat lock xadd dword, line split", xadd, 4, cpl, R_BX, LINE_SPLIT, ds, 8);
	run32("compat lock cmpxchg8b, line split", c8b, 4, cpl, R_SI, LINE_SPLIT - 2, ds, 9);
	return 0;
}

static int compat_cpl0(const struct boot_info *bi)
{
	return compat_lock_add(bi, 0);
}

static int compat_cpl3(const struct boot_info *bi)
{
	return compat_lock_add(bi, 3);
}

/* lock addl $1,(%ebx) with DS base 0x300000: the linear address is base + ebx. */
static int ds_base(const struct boot_info *bi, unsigned cpl)
{
	static const uint8_t add1[] = { 0xf0, 0x83, 0x03, 0x01 };       /* lock addl $1,(%ebx) */
	static const uint8_t es_add[] = { 0x26, 0xf0, 0x01, 0x03 };     /* lock add %eax,%es:(%ebx) */
	static const uint8_t fs_add[] = { 0xf0, 0x64, 0x01, 0x03 };     /* lock add %eax,%fs:(%ebx) */
	static const uint8_t ss_add[] = { 0x36, 0xf0, 0x01, 0x03 };     /* lock add %eax,%ss:(%ebx) */
	struct exec_req req = { .mode = MODE_32, .cpl = cpl, .insn = add1, .len = 4 };
	uint32_t base = 0x300000;

	(void)bi;
	seg_set_data(base, 0xffffffff);
	req.ds = req.es = req.fs = data_sel(cpl);
	/* ebx = target - base: the CPU writes the window, not ebx itself. */
	win_fill(LINE_SPLIT - 64, 128, 77);
	run_op("DS base 0x300000, lock addl $1", &req, R_BX, LINE_SPLIT - base, 10);
	print_mem("memory at ebx itself", LINE_SPLIT - base - 4, 16);
	print_mem("memory at base+ebx", LINE_SPLIT - 4, 16);
	req.insn = es_add;
	req.ds = 0;
	run_op("ES base 0x300000 override, lock add", &req, R_BX, PAGE_SPLIT - base, 11);
	req.insn = fs_add;
	run_op("FS base 0x300000 override, lock add", &req, R_BX, PAGE_SPLIT - base, 12);
	req.insn = ss_add;
	req.ds = data_sel(cpl);
	run_op("SS override (flat), lock add", &req, R_BX, LINE_SPLIT, 13);
	seg_set_data(0, 0xffffffff);
	return 0;
}

static int ds_base_cpl0(const struct boot_info *bi)
{
	return ds_base(bi, 0);
}

static int ds_base_cpl3(const struct boot_info *bi)
{
	return ds_base(bi, 3);
}

/* The operand crosses the segment limit: #GP(0), memory untouched. */
static int ds_limit(const struct boot_info *bi)
{
	static const uint8_t add[] = { 0xf0, 0x01, 0x03 };
	struct exec_req req = { .mode = MODE_32, .insn = add, .len = 3 };

	(void)bi;
	seg_set_data(WIN_PAGE(0), 4096 + 63); /* bytes 0 .. 4096+63 */
	req.ds = req.es = req.fs = SEL_K_DATA_B;
	run_op("across the DS limit (line split at the limit)", &req, R_BX, 4096 + 62, 14);
	print_mem("window at the limit", WIN_PAGE(1) + 58, 16);
	run_op("inside the DS limit (page split)", &req, R_BX, 4094, 15);
	print_mem("window at the page split", WIN_PAGE(1) - 6, 16);
	seg_set_data(0, 0xffffffff);
	return 0;
}

/* base + offset wraps at 4 GiB in compatibility mode. */
static int wrap32(const struct boot_info *bi)
{
	static const uint8_t add[] = { 0xf0, 0x01, 0x03 };
	struct exec_req req = { .mode = MODE_32, .insn = add, .len = 3 };
	uint32_t base = 0xd0000000;

	(void)bi;
	seg_set_data(base, 0xffffffff);
	req.ds = req.es = req.fs = SEL_K_DATA_B;
	run_op("DS base 0xd0000000 + ebx wraps to the window", &req, R_BX,
	       (uint32_t)(LINE_SPLIT - base), 16);
	print_mem("window", LINE_SPLIT - 4, 16);
	seg_set_data(0, 0xffffffff);
	return 0;
}

/* 0x67 in compatibility mode: 16-bit addressing, (%bx) ignores ebx[31:16]. */
static int addr16(const struct boot_info *bi)
{
	static const uint8_t add[] = { 0x67, 0xf0, 0x01, 0x07 };  /* lock add %eax,(%bx) */
	static const uint8_t add2[] = { 0xf0, 0x67, 0x01, 0x47, 0x10 }; /* lock add %eax,0x10(%bx) */
	struct exec_req req = { .mode = MODE_32, .insn = add, .len = 4 };
	uint64_t target = LINE_SPLIT;

	(void)bi;
	/* DS base puts bx's 64 KiB at the window; ebx's high half must not count. */
	seg_set_data((uint32_t)(target & ~0xffffull), 0xffffffff);
	req.ds = req.es = req.fs = SEL_K_DATA_B;
	run_op("0x67 in compat: (%bx)", &req, R_BX, 0x12340000 | (target & 0xffff), 17);
	req.insn = add2;
	req.len = 5;
	run_op("0x67 in compat: 0x10(%bx), bx wraps", &req, R_BX,
	       0x56780000 | ((target - 0x10) & 0xffff), 18);
	seg_set_data(0, 0xffffffff);
	return 0;
}

/* 0x67 in 64-bit mode: 32-bit addressing, rdi's high half ignored. */
static int addr32_in_64(const struct boot_info *bi)
{
	static const uint8_t add[] = { 0x67, 0xf0, 0x01, 0x37 };       /* lock add %esi,(%edi) */
	static const uint8_t add2[] = { 0xf0, 0x67, 0x01, 0x77, 0x40 }; /* lock add %esi,0x40(%edi) */

	(void)bi;
	run64("0x67 in 64-bit: (%edi), rdi high half set", add, 4, 0, R_DI,
	      0xffffffff00000000ull | LINE_SPLIT, 19);
	run64("0x67 in 64-bit: 0x40(%edi) wraps at 4 GiB", add2, 5, 0, R_DI,
	      (uint32_t)(LINE_SPLIT - 0x40 + 0x100000000ull) | 0x1200000000ull, 20);
	run64("0x67 in 64-bit at cpl3", add, 4, 3, R_DI, 0xabcd00000000ull | PAGE_SPLIT, 21);
	return 0;
}

/*
 * 67 f0 0f ab: lock bts %esi,(%edi) with 32-bit addressing. The bit offset
 * in esi is signed and moves the dword; the sum wraps at 32 bits.
 */
static int bt_wrap(const struct boot_info *bi)
{
	static const uint8_t bts[] = { 0x67, 0xf0, 0x0f, 0xab, 0x37 };
	static const uint8_t btr_q[] = { 0xf0, 0x48, 0x0f, 0xb3, 0x37 }; /* lock btr %rsi,(%rdi) */
	static const uint8_t btc_w[] = { 0x66, 0xf0, 0x0f, 0xbb, 0x37 }; /* lock btc %si,(%rdi) */
	struct exec_req req = { .mode = MODE_64, .insn = bts, .len = 5 };
	struct exec_result res;
	/* esi = 0x7ffffff0: +0x0ffffffc bytes, bit 16; edi + that wraps to 0x01000ffe. */
	uint64_t target = 0x01000ffeull; /* identity-mapped scratch (WIN_PHYS page 0/1) */

	(void)bi;
	seed_regs(&req.in, 22);
	req.in.r[R_SI] = 0x7ffffff0;
	req.in.r[R_DI] = (uint32_t)(target + 0x100000000ull - 0x0ffffffcull);
	win_fill(WIN_PAGE(0) + 4096 - 64, 128, 22);
	exec_insn(&req, &res);
	print_result("67 f0 0f ab: bts offset wraps at 32 bits", &req, &res);
	print_mem("wrapped target", target - 4, 16);

	/* Negative bit offsets in 64-bit mode: the operand is below rdi. */
	req.insn = btr_q;
	seed_regs(&req.in, 23);
	req.in.r[R_SI] = (uint64_t)-100;   /* qword at rdi-16, bit 28 */
	req.in.r[R_DI] = LINE_SPLIT + 16 - 4;
	exec_insn(&req, &res);
	print_result("lock btr qword, bit offset -100", &req, &res);
	print_mem("memory", LINE_SPLIT - 4, 16);
	req.insn = btc_w;
	seed_regs(&req.in, 24);
	req.in.r[R_SI] = 0x7ff0;          /* word offset +0xffe, bit 0 */
	req.in.r[R_DI] = PAGE_SPLIT - 0xffe + 1;
	exec_insn(&req, &res);
	print_result("lock btc word, bit offset 0x7ff0", &req, &res);
	print_mem("memory", PAGE_SPLIT - 4, 16);
	return 0;
}

/* Segment overrides in 64-bit mode: FS and GS bases apply, the others not. */
static int seg64(const struct boot_info *bi)
{
	static const uint8_t fs_add[] = { 0x64, 0xf0, 0x01, 0x37 };
	static const uint8_t gs_add[] = { 0xf0, 0x65, 0x01, 0x37 };
	static const uint8_t es_add[] = { 0x26, 0xf0, 0x01, 0x37 };
	uint64_t gs = rdmsr(MSR_GS_BASE);

	(void)bi;
	wrmsr(MSR_FS_BASE, WIN_BASE);
	run64("64-bit fs: override, base = window", fs_add, 4, 0, R_DI, PAGE_SPLIT - WIN_BASE, 25);
	run64("64-bit fs: override at cpl3", fs_add, 4, 3, R_DI, LINE_SPLIT - WIN_BASE, 26);
	run64("64-bit gs: override", gs_add, 4, 0, R_DI, LINE_SPLIT - gs, 27);
	run64("64-bit es: override is ignored", es_add, 4, 0, R_DI, LINE_SPLIT, 28);
	wrmsr(MSR_FS_BASE, 0);
	return 0;
}

/* RIP-relative operands (the buffer is in the image, low RAM). */
static uint8_t riprel_area[256] __attribute__((aligned(64)));

static int riprel(const struct boot_info *bi)
{
	extern uint8_t exec_buf64[];
	uint8_t insn[7] = { 0xf0, 0x01, 0x35 }; /* lock add %esi, disp32(%rip) */
	struct exec_req req = { .mode = MODE_64, .insn = insn, .len = 7 };
	struct exec_result res;
	uint64_t target = (uint64_t)riprel_area + 62;
	int32_t disp = (int32_t)(target - ((uint64_t)exec_buf64 + 7));

	(void)bi;
	memcpy(insn + 3, &disp, 4);
	seed_regs(&req.in, 29);
	memset(riprel_area, 0x5a, sizeof(riprel_area));
	exec_insn(&req, &res);
	print_result("rip-relative lock add, line split", &req, &res);
	print_mem("memory", target - 4, 16);
	return 0;
}

static const struct diff_case cases[] = {
	{ "mode-compat-rex-is-dec", rex_is_dec },
	{ "mode-compat-cpl0", compat_cpl0 },
	{ "mode-compat-cpl3", compat_cpl3 },
	{ "mode-compat-ds-base-cpl0", ds_base_cpl0 },
	{ "mode-compat-ds-base-cpl3", ds_base_cpl3 },
	{ "mode-compat-ds-limit", ds_limit },
	{ "mode-compat-wrap-32", wrap32 },
	{ "mode-compat-addr16", addr16 },
	{ "mode-64-addr32", addr32_in_64 },
	{ "mode-bt-offset-wrap", bt_wrap },
	{ "mode-64-segment-overrides", seg64 },
	{ "mode-64-rip-relative", riprel },
};
CASE_TABLE(mode_cases, cases);
