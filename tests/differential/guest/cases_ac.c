/* SPDX-License-Identifier: MIT */
/*
 * Issue 9 item 3: at CPL3 with CR0.AM and RFLAGS.AC, a misaligned access
 * (split locks included) raises legacy #AC(0) before anything else, under
 * every TEST_CTRL setting; at CPL0, or with AC clear, nothing is checked.
 */
#include "diff.h"

#define PAGE_SPLIT  (WIN_PAGE(1) - 2)
#define LINE_SPLIT  (WIN_PAGE(1) + 62)

static void ac_op(const char *label, const uint8_t *insn, unsigned len, unsigned cpl,
		  bool ac, enum exec_mode mode, unsigned reg, uint64_t addr, uint32_t seed)
{
	struct exec_req req = { .mode = mode, .cpl = cpl, .insn = insn, .len = len, .ac = ac,
				.ds = cpl ? SEL_U_DATA_B : SEL_K_DATA_B };

	req.es = req.fs = req.ds;
	run_op(label, &req, reg, addr, seed);
}

static const uint8_t lock_add[] = { 0xf0, 0x01, 0x37 };
static const uint8_t lock_add_ebx[] = { 0xf0, 0x01, 0x03 };
static const uint8_t xchg[] = { 0x87, 0x37 };
static const uint8_t mov_load[] = { 0x8b, 0x07 };               /* mov (%rdi),%eax */
static const uint8_t lock_cmpxchg8b[] = { 0xf0, 0x0f, 0xc7, 0x0f }; /* lock cmpxchg8b (%rdi) */
static const uint8_t lock_incw[] = { 0x66, 0xf0, 0xff, 0x07 };

static int cpl3_split(const struct boot_info *bi)
{
	(void)bi;
	ac_op("cpl3 AC=1 lock add, line split", lock_add, 3, 3, true, MODE_64, R_DI, LINE_SPLIT, 1);
	ac_op("cpl3 AC=1 lock add, page split", lock_add, 3, 3, true, MODE_64, R_DI, PAGE_SPLIT, 2);
	ac_op("cpl3 AC=1 xchg, line split", xchg, 2, 3, true, MODE_64, R_DI, LINE_SPLIT, 3);
	ac_op("cpl3 AC=1 lock cmpxchg8b, line split", lock_cmpxchg8b, 4, 3, true, MODE_64, R_DI,
	      LINE_SPLIT - 2, 4);
	ac_op("cpl3 AC=1 lock inc word, odd address", lock_incw, 4, 3, true, MODE_64, R_DI,
	      LINE_SPLIT + 3, 5);
	return 0;
}

static int cpl3_misaligned(const struct boot_info *bi)
{
	(void)bi;
	ac_op("cpl3 AC=1 misaligned load, no split", mov_load, 2, 3, true, MODE_64, R_DI,
	      LINE_SPLIT - 8 + 1, 6);
	ac_op("cpl3 AC=1 misaligned lock add, no split", lock_add, 3, 3, true, MODE_64, R_DI,
	      LINE_SPLIT - 8 + 2, 7);
	ac_op("cpl3 AC=1 aligned lock add", lock_add, 3, 3, true, MODE_64, R_DI, LINE_SPLIT + 2, 8);
	return 0;
}

/*
 * The same with the guest's TF: the #AC KVM intercepts and injects back
 * keeps TF in its frame, so single-stepping goes on after the handler.
 */
static void ac_op_tf(const char *label, const uint8_t *insn, unsigned len, uint64_t addr,
		     uint32_t seed)
{
	struct exec_req req = { .mode = MODE_64, .cpl = 3, .insn = insn, .len = len, .ac = true,
				.tf = true, .ds = SEL_U_DATA_B };

	req.es = req.fs = req.ds;
	dbg_reset();
	dbg_tf_limit = 1000;
	run_op(label, &req, R_DI, addr, seed);
	dbg_print(label, 0);
	dbg_reset();
}

static int cpl3_misaligned_tf(const struct boot_info *bi)
{
	(void)bi;
	ac_op_tf("cpl3 AC=1 TF misaligned load", mov_load, 2, LINE_SPLIT - 8 + 1, 6);
	ac_op_tf("cpl3 AC=1 TF misaligned lock add", lock_add, 3, LINE_SPLIT - 8 + 2, 7);
	ac_op_tf("cpl3 AC=1 TF split lock add", lock_add, 3, LINE_SPLIT, 8);
	ac_op_tf("cpl3 AC=1 TF aligned lock add", lock_add, 3, LINE_SPLIT + 2, 9);
	return 0;
}

static int no_ac(const struct boot_info *bi)
{
	(void)bi;
	ac_op("cpl3 AC=0 lock add, line split", lock_add, 3, 3, false, MODE_64, R_DI, LINE_SPLIT, 9);
	ac_op("cpl0 AC=1 lock add, line split", lock_add, 3, 0, true, MODE_64, R_DI, LINE_SPLIT, 10);
	ac_op("cpl0 AC=1 lock add, page split", lock_add, 3, 0, true, MODE_64, R_DI, PAGE_SPLIT, 11);
	return 0;
}

static int compat(const struct boot_info *bi)
{
	(void)bi;
	seg_set_data(0, 0xffffffff);
	ac_op("compat cpl3 AC=1 lock add, line split", lock_add_ebx, 3, 3, true, MODE_32, R_BX,
	      LINE_SPLIT, 12);
	ac_op("compat cpl0 AC=1 lock add, line split", lock_add_ebx, 3, 0, true, MODE_32, R_BX,
	      LINE_SPLIT, 13);
	return 0;
}

/* Which comes first, #AC or the page fault? The CPU decides. */
static int vs_pf(const struct boot_info *bi)
{
	(void)bi;
	win_set(1, PG_W | PG_U);
	ac_op("cpl3 AC=1 split into a not-present page", lock_add, 3, 3, true, MODE_64, R_DI,
	      PAGE_SPLIT, 14);
	win_set(1, PG_P | PG_U);
	ac_op("cpl3 AC=1 split into a read-only page", lock_add, 3, 3, true, MODE_64, R_DI,
	      PAGE_SPLIT, 15);
	win_set(1, PG_P | PG_W);
	ac_op("cpl3 AC=1 split into a supervisor page", lock_add, 3, 3, true, MODE_64, R_DI,
	      PAGE_SPLIT, 16);
	return 0;
}

static int noncanonical(const struct boot_info *bi)
{
	(void)bi;
	ac_op("cpl3 AC=1 non-canonical split", lock_add, 3, 3, true, MODE_64, R_DI,
	      0x0000800000000000ull + 62, 17);
	return 0;
}

static const struct diff_case cases[] = {
	{ "ac-cpl3-split-lock", cpl3_split },
	{ "ac-cpl3-misaligned", cpl3_misaligned },
	{ "ac-cpl3-misaligned-guest-tf", cpl3_misaligned_tf },
	{ "ac-not-armed", no_ac },
	{ "ac-compat", compat },
	{ "ac-vs-page-fault", vs_pf },
	{ "ac-vs-noncanonical", noncanonical },
};
CASE_TABLE(ac_cases, cases);
