/* SPDX-License-Identifier: MIT */
/*
 * "case=gen": runs the records tests/differential/gen.py appended to the
 * image (random instructions, registers, placements, page states), one
 * line each. Layout of the payload, little-endian, right after the linked
 * image (__image_end):
 *
 *   header: "DIFFGEN1", u32 count, u32 record size
 *   record: see struct gen_record
 */
#include "diff.h"

struct gen_record {
	uint8_t mode;        /* 0: 64-bit, 1: compatibility, 2: 16-bit code (CS base),
				3: compatibility with a CS base */
	uint8_t cpl;         /* 0 or 3 */
	uint8_t len;         /* instruction bytes */
	uint8_t addr_reg;    /* register that gets target - segment base added; 0xff none */
	uint8_t seg;         /* segment override in effect: 0, 0x64 or 0x65 */
	uint8_t page0, page1;/* PG_* of window pages 0 and 1 (low byte) */
	uint8_t flags;       /* GEN_* */
	int32_t target;      /* operand's linear address - WIN_PAGE(1) */
	uint32_t seed;       /* fill of the operand's lines */
	uint32_t ds_base;    /* compatibility mode: base of DS/ES/FS */
	uint32_t reserved;
	uint8_t insn[16];
	uint64_t regs[R_COUNT];
};

#define GEN_AC      0x01  /* RFLAGS.AC (checked at CPL3) */
#define GEN_WP      0x02  /* CR0.WP */
#define GEN_NXE     0x04  /* EFER.NXE */
#define GEN_EQUAL   0x08  /* accumulator(s) = the operand: compare-exchange succeeds */
#define GEN_TF      0x10  /* the guest's own TF from the instruction on: #DB traps counted */

_Static_assert(sizeof(struct gen_record) == 176, "gen.py's RECORD layout");

extern char __image_start[], __image_end[];

static int gen(const struct boot_info *bi)
{
	const uint8_t *payload = (const uint8_t *)__image_end;
	uint64_t have = bi->image_size - (uint64_t)(__image_end - __image_start);
	uint32_t count, rsize;
	uint64_t efer = rdmsr(MSR_EFER);

	if (bi->image_size < (uint64_t)(__image_end - __image_start) + 16 ||
	    memcmp(payload, "DIFFGEN1", 8)) {
		printf("Bail out! no generator payload after the image (tests/differential/gen.py makes it)\n");
		return GUEST_STATUS_FAIL;
	}
	memcpy(&count, payload + 8, 4);
	memcpy(&rsize, payload + 12, 4);
	if (rsize != sizeof(struct gen_record) || 16 + (uint64_t)count * rsize > have) {
		printf("Bail out! payload of %u records of %u bytes does not fit %lu bytes\n",
		       count, rsize, have);
		return GUEST_STATUS_FAIL;
	}
	for (uint32_t i = 0; i < count; i++) {
		struct gen_record r;
		struct exec_req req = { 0 };
		struct exec_result res;
		uint64_t target, base = 0;
		char label[24];

		memcpy(&r, payload + 16 + (uint64_t)i * rsize, sizeof(r));
		target = WIN_PAGE(1) + (int64_t)r.target;
		win_set(0, r.page0);
		win_set(1, r.page1);
		write_cr0(r.flags & GEN_WP ? read_cr0() | X86_CR0_WP : read_cr0() & ~X86_CR0_WP);
		wrmsr(MSR_EFER, r.flags & GEN_NXE ? efer | X86_EFER_NXE : efer & ~X86_EFER_NXE);
		static const enum exec_mode modes[4] = { MODE_64, MODE_32, MODE_16, MODE_32B };

		req.mode = modes[r.mode & 3];
		req.tf = r.flags & GEN_TF;
		dbg_reset();
		dbg_tf_limit = 1000;
		req.cpl = r.cpl ? 3 : 0;
		req.insn = r.insn;
		req.len = r.len > 15 ? 15 : r.len;
		req.ac = r.flags & GEN_AC;
		memcpy(req.in.r, r.regs, sizeof(req.in.r));
		if (req.mode != MODE_64) {
			seg_set_data(r.ds_base, 0xffffffff);
			req.ds = req.es = req.fs = req.cpl ? SEL_U_DATA_B : SEL_K_DATA_B;
			base = r.ds_base;
		} else if (r.seg == 0x65) {
			base = rdmsr(MSR_GS_BASE);
		} else {
			wrmsr(MSR_FS_BASE, 0);
		}
		if (r.addr_reg < R_COUNT)
			req.in.r[r.addr_reg] += target - base;
		win_fill((target & ~63ull) - 64, 256, r.seed);
		if (r.flags & GEN_EQUAL) {
			uint8_t m[8];

			win_read(target, m, 8);
			memcpy(&req.in.r[R_AX], m, 8);
			req.in.r[R_DX] = 0;
			memcpy(&req.in.r[R_DX], m + 4, 4);
		}
		exec_insn(&req, &res);
		write_dr(7, 0x400);
		if (req.tf)
			snprintf(label, sizeof(label), "g%u db%u", i, dbg_count);
		else
			snprintf(label, sizeof(label), "g%u", i);
		dbg_reset();
		print_compact(label, &req, &res, target, 8);
	}
	win_set(0, PG_NORMAL);
	win_set(1, PG_NORMAL);
	wrmsr(MSR_EFER, efer);
	printf("gen: %u records\n", count);
	return 0;
}

static const struct diff_case cases[] = {
	{ "gen", gen },
};
CASE_TABLE(gen_cases, cases);
