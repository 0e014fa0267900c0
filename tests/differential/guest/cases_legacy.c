/* SPDX-License-Identifier: MIT */
/*
 * Issue 18: every mode the CPU runs is run under emulate, never stopped,
 * and a split lock in each is detected: 32-bit protected mode without
 * paging, with 32-bit paging and with PAE paging, 16-bit protected mode,
 * real mode (legacy.S), the guest's TF in each with its #DB handlers
 * reached through 32-bit gates, 16-bit gates, the IVT, from CPL3 to CPL0
 * and at CPL3 itself (on a 32-bit TSS's stack and a 16-bit one's), virtual-8086 mode, long mode with 5-level paging at linear addresses
 * above 2^48 (code, stack and operand there), a task switch, CPL3 with PAE
 * paging entered by SYSEXIT and left by SYSENTER, and compatibility mode
 * with a CS base (PUSHF there must push the guest's TF).
 */
#include "diff.h"

extern uint32_t lg_split, lg_flags[16], lg_se_flags, lg_idt32[8], lg_dblog[16 * 4], lg_ndb;
void lg_payload_tf(void);
void lg_db32(void);
void lg_db32u(void);
void lg_bp32(void);
extern char lg_db16[], lg_bp16[], lg_pm16_tf[], lg_vm86[];
void lg_vm86_out(void);
extern char lg_real_db[], lg_real_tf[];
extern uint8_t lg_task_stack[];
void lg_task_b(void);
extern char lg_blob[], lg_blob_end[];

static const char *const kinds[] = {
	"32-bit protected mode, no paging", "32-bit protected mode, 32-bit paging",
	"32-bit protected mode, PAE paging", "16-bit protected mode, no paging", "real mode",
	"long mode, 5-level paging, above 2^48",
	"32-bit protected mode, another task",
	"32-bit protected mode, PAE paging, CPL3 by SYSEXIT, back by SYSENTER",
	"32-bit protected mode, the guest's TF",
	"real mode, the guest's TF",
	"32-bit protected mode, PAE paging, CPL3, the guest's TF",
	"16-bit protected mode, the guest's TF, 16-bit gates",
	"32-bit protected mode, PAE paging, CPL3, the guest's TF, handlers at CPL3",
	"virtual-8086 mode, the guest's TF",
	"",	/* 14: the generator's executor (exec_legacy.c) */
	"32-bit protected mode, PAE paging, CPL3, the guest's TF, a 16-bit TSS",
};

#define MSR_SYSENTER_CS  0x174
#define MSR_SYSENTER_ESP 0x175
#define MSR_SYSENTER_EIP 0x176

static uint32_t get32(const uint8_t *tss, unsigned off)
{
	uint32_t v;

	memcpy(&v, tss + off, 4);
	return v;
}

static int legacy(uint32_t kind)
{
	volatile uint32_t *real_split = (volatile uint32_t *)(uint64_t)(LEGACY_REAL_BASE + 0x23e);
	volatile uint16_t *real_flags = (volatile uint16_t *)(uint64_t)(LEGACY_REAL_BASE + 0x250);
	uint32_t before, after;
	uint64_t se[3];
	bool seg16;

	for (unsigned i = 0; i < 3; i++)
		se[i] = rdmsr(MSR_SYSENTER_CS + i);
	legacy_tables();
	memcpy((void *)(uint64_t)LEGACY_REAL_BASE, lg_blob, (size_t)(lg_blob_end - lg_blob));
	*real_split = 0;
	*real_flags = 0;
	/* Kind 9's data in the real-mode part: its flag, IDTR image, IVT, #DB log. */
	{
		uint8_t *rb = (uint8_t *)(uint64_t)LEGACY_REAL_BASE;
		uint16_t on = kind == 9, limit = 7, ip = (uint16_t)(lg_real_db - lg_blob),
			 seg = LEGACY_REAL_BASE >> 4;
		uint32_t base = LEGACY_REAL_BASE + 0x278;

		memcpy(rb + 0x26e, &on, 2);
		memcpy(rb + 0x270, &limit, 2);
		memcpy(rb + 0x272, &base, 4);
		memset(rb + 0x278, 0, 4);
		memcpy(rb + 0x27c, &ip, 2);
		memcpy(rb + 0x27e, &seg, 2);
		memset(rb + 0x280, 0, 0x42);
		memset(rb + 0x2d0, 0, 2);
	}
	lg_split = 40;
	memset(lg_flags, 0, sizeof(lg_flags));
	before = lg_split;
	if (kind == 6 || kind == 10 || kind == 12 || kind == 13) {
		/* TSS A cleared; task B's image, the payload at CPL0 (kind 6 switches to it). */
		legacy_tss_a_clear();
		legacy_task_b_image((uint32_t)(uint64_t)lg_task_b, (uint32_t)(uint64_t)lg_task_stack);
	}
	if (kind == 15) {
		/*
		 * A 16-bit TSS: SP0 at 2, SS0 at 4. SP0 is 16 bits, so the
		 * handlers' stack is below 64 KiB: 0xf00-0xff0, under the boot
		 * GDT, unused (docs/boot-protocol.md); SS0 flat, as lg_log32
		 * needs.
		 */
		uint16_t sp0 = 0xff0, ss0 = SEL_KERNEL_DS;

		memset(lg_tss_b, 0, 104);
		memcpy(lg_tss_b + 2, &sp0, 2);
		memcpy(lg_tss_b + 4, &ss0, 2);
		seg_set_tss16_b();
	}
	lg_se_flags = 0;
	lg_ndb = 0;
	/*
	 * Interrupt gates at vectors 1 and 3 (SDM vol. 3 6.11), INT3's at DPL3
	 * so that INT3 from CPL3 reaches it: 32-bit ones into SEL_K_CODE32;
	 * kind 11's 16-bit ones into the 16-bit part; kind 12's into a
	 * conforming segment and a DPL3 one, where the handlers stay at CPL3.
	 */
	memset(lg_idt32, 0, sizeof(lg_idt32));
	if (kind == 11) {
		legacy_gate(&lg_idt32[2], SEL_K_CODE16R, (uint32_t)(lg_db16 - lg_blob), 0x86);
		legacy_gate(&lg_idt32[6], SEL_K_CODE16R, (uint32_t)(lg_bp16 - lg_blob), 0xe6);
	} else if (kind == 12) {
		legacy_gate(&lg_idt32[2], SEL_K_CODE32C, (uint32_t)(uint64_t)lg_db32u, 0x8e);
		legacy_gate(&lg_idt32[6], SEL_U_CODE32, (uint32_t)(uint64_t)lg_bp32, 0xee);
	} else {
		legacy_gate(&lg_idt32[2], SEL_K_CODE32, (uint32_t)(uint64_t)lg_db32, 0x8e);
		legacy_gate(&lg_idt32[6], SEL_K_CODE32, (uint32_t)(uint64_t)lg_bp32, 0xee);
	}
	/* Kind 13's way out of virtual-8086 mode: INT $2, a DPL3 gate. */
	legacy_gate(&lg_idt32[4], SEL_K_CODE32, (uint32_t)(uint64_t)lg_vm86_out, 0xee);
	legacy_run(kind);
	for (unsigned i = 0; i < 3; i++)
		wrmsr(MSR_SYSENTER_CS + i, se[i]);
	if (kind == 10 || kind == 12 || kind == 13 || kind == 15)
		gdt_tss_reset();
	if (kind == 6) {
		gdt_tss_reset();
		/* What each task switch saved: IF, TF, DF and bit 1 of EFLAGS; B's EIP. */
		printf("%s: saved eflags A %x, B %x; B stopped at lg_task_b+%u\n", kinds[kind],
		       get32(lg_tss_a, 0x24) & 0x702u, get32(lg_tss_b, 0x24) & 0x702u,
		       get32(lg_tss_b, 0x20) - (uint32_t)(uint64_t)lg_task_b);
	}
	/* Real and virtual-8086 mode keep their data in the 16-bit part. */
	seg16 = kind == 4 || kind == 9 || kind == 13;
	after = seg16 ? *real_split : lg_split;
	printf("%s: back in long mode; split dword %u -> %u\n", kinds[kind], seg16 ? 0 : before,
	       after);
	/* IF, TF, DF and bit 1 of what PUSHF pushed there. */
	printf("%s: pushf %x\n", kinds[kind], (seg16 ? *real_flags : lg_flags[kind]) & 0x702u);
	if (kind == 9 || kind == 13) {
		const uint8_t *rb = (const uint8_t *)(uint64_t)LEGACY_REAL_BASE;
		uint16_t tf_flags;

		memcpy(&tf_flags, rb + 0x2d0, 2);
		printf("%s: pushf with tf %x\n", kinds[kind], tf_flags & 0x702u);
	}
	if (kind == 9) {
		const uint8_t *rb = (const uint8_t *)(uint64_t)LEGACY_REAL_BASE;
		uint16_t n, e[2];

		memcpy(&n, rb + 0x280, 2);
		printf("%s: %u #DB\n", kinds[kind], n);
		for (uint16_t i = 0; i < n && i < 16; i++) {
			memcpy(e, rb + 0x282 + 4 * i, 4);
			/* IP from the TF part; IF, TF, DF and bit 1 */
			printf("  #DB at +%d flags %x\n", (int)e[0] - (int)(lg_real_tf - lg_blob),
			       e[1] & 0x702u);
		}
	}
	if (kind == 8 || kind == 10 || kind == 11 || kind == 12 || kind == 13 || kind == 15) {
		/* Kind 11's and 13's IPs are offsets in the 16-bit part. */
		uint32_t from = kind == 11 ? (uint32_t)(lg_pm16_tf - lg_blob)
			      : kind == 13 ? (uint32_t)(lg_vm86 - lg_blob)
					   : (uint32_t)(uint64_t)lg_payload_tf;

		printf("%s: %u #DB\n", kinds[kind], lg_ndb);
		for (uint32_t i = 0; i < lg_ndb && i < 16; i++) {
			const uint32_t *e = &lg_dblog[i * 4];

			/* EIP from the payload; VM, RF, TF, IF, DF, bit 1; BS, BD, B0-3 */
			printf("  #DB at +%d eflags %x dr6 %x cs %x\n", (int)(e[0] - from),
			       e[1] & 0x30702u, e[2] & 0x600fu, e[3] & 0xffffu);
		}
	}
	if (kind == 7 || kind == 10 || kind == 12 || kind == 15) {
		printf("%s: pushf at cpl0 after sysenter %x\n", kinds[kind], lg_se_flags & 0x702u);
		printf("# split locks at CPL0: 1\n");
		printf("# split locks at CPL1-3: 2\n");
	} else if (kind == 13) {
		printf("# split locks at CPL0: 0\n");	/* virtual-8086 mode is CPL3 */
		printf("# split locks at CPL1-3: 2\n");
	} else {
		/* Real mode is reached through 16-bit protected mode, which makes its two too. */
		printf("# split locks at CPL0: %u\n",
		       kind == 4 ? 4 : kind == 9 ? 5 : kind == 11 ? 3 : 2);
	}
	/* Every mode is stepped, every switch between them too, every #DB handler. */
	nothing_unchecked();
	return 0;
}

static int pm32(const struct boot_info *bi)
{
	(void)bi;
	return legacy(0);
}

static int pm32_paging32(const struct boot_info *bi)
{
	(void)bi;
	return legacy(1);
}

static int pm32_pae(const struct boot_info *bi)
{
	(void)bi;
	return legacy(2);
}

static int pm16(const struct boot_info *bi)
{
	(void)bi;
	return legacy(3);
}

static int real(const struct boot_info *bi)
{
	(void)bi;
	return legacy(4);
}

static int la57(const struct boot_info *bi)
{
	(void)bi;
	if (!cpu_has_la57())
		return diff_skip("the CPU has no 5-level paging (CPUID.(7,0):ECX[16])");
	return legacy(5);
}

/*
 * Compatibility mode with CS base = exec_page16 (MODE_32B), at CPL0 and
 * CPL3, and 16-bit code with the same base: PUSHF pushes the guest's TF
 * (clear), the split lock there is detected.
 */
static int cs_base_pushf(const struct boot_info *bi)
{
	static const uint8_t pushf_pop[] = { 0x9c, 0x58 };            /* pushf; pop %eax */
	static const uint8_t pushfw_pop[] = { 0x66, 0x9c, 0x66, 0x58 }; /* pushfw; pop %ax */
	static const uint8_t add[] = { 0xf0, 0x01, 0x03 };            /* lock add %eax,(%ebx) */
	static const uint8_t add16[] = { 0x66, 0x67, 0xf0, 0x01, 0x03 }; /* the same from 16-bit code */
	struct exec_req req = { .mode = MODE_32B };

	(void)bi;
	seg_set_data(0, 0xffffffff);
	for (unsigned cpl = 0; cpl <= 3; cpl += 3) {
		req.cpl = cpl;
		req.ds = req.es = req.fs = cpl ? SEL_U_DATA_B : SEL_K_DATA_B;
		req.mode = MODE_32B;
		req.insn = pushf_pop;
		req.len = sizeof(pushf_pop);
		run_op(cpl ? "cs base, cpl3: pushfl; popl %eax" : "cs base, cpl0: pushfl; popl %eax",
		       &req, R_COUNT, 0, 40 + cpl);
		req.insn = pushfw_pop;
		req.len = sizeof(pushfw_pop);
		run_op(cpl ? "cs base, cpl3: pushfw; popw %ax" : "cs base, cpl0: pushfw; popw %ax",
		       &req, R_COUNT, 0, 41 + cpl);
		/* Split locks at CPL0 only: CPL3 is stepped on some KVMs, not others. */
		req.insn = add;
		req.len = sizeof(add);
		if (!cpl)
			run_op("cs base, cpl0: lock add, line split", &req, R_BX, WIN_PAGE(1) + 62, 42);
		req.mode = MODE_16;
		req.insn = pushf_pop;
		req.len = sizeof(pushf_pop);
		run_op(cpl ? "16-bit cs base, cpl3: pushf; pop %ax" : "16-bit cs base, cpl0: pushf; pop %ax",
		       &req, R_COUNT, 0, 43 + cpl);
		req.insn = add16;
		req.len = sizeof(add16);
		if (!cpl)
			run_op("16-bit cs base, cpl0: lock add, line split", &req, R_BX, WIN_PAGE(1) + 62, 44);
	}
	printf("# split locks at CPL0: 2\n");
	return 0;
}

static int pm32_task(const struct boot_info *bi)
{
	(void)bi;
	return legacy(6);
}

static int pm32_sysexit_sysenter(const struct boot_info *bi)
{
	(void)bi;
	return legacy(7);
}

static int pm32_guest_tf(const struct boot_info *bi)
{
	(void)bi;
	return legacy(8);
}

static int real_guest_tf(const struct boot_info *bi)
{
	(void)bi;
	return legacy(9);
}

static int pm32_cpl3_guest_tf(const struct boot_info *bi)
{
	(void)bi;
	return legacy(10);
}

static int pm16_guest_tf(const struct boot_info *bi)
{
	(void)bi;
	return legacy(11);
}

static int pm32_cpl3_guest_tf_cpl3_handlers(const struct boot_info *bi)
{
	(void)bi;
	return legacy(12);
}

static int vm86_guest_tf(const struct boot_info *bi)
{
	(void)bi;
	return legacy(13);
}

static int pm32_cpl3_guest_tf_tss16(const struct boot_info *bi)
{
	(void)bi;
	return legacy(15);
}

static const struct diff_case cases[] = {
	{ "mode-legacy-pm32-nopaging", pm32 },
	{ "mode-legacy-pm32-paging32", pm32_paging32 },
	{ "mode-legacy-pm32-pae", pm32_pae },
	{ "mode-legacy-pm16", pm16 },
	{ "mode-legacy-real", real },
	{ "mode-la57-split-lock-pushf-above-2-48", la57 },
	{ "mode-legacy-pm32-task-switch", pm32_task },
	{ "mode-legacy-pm32-pae-cpl3-sysexit-sysenter", pm32_sysexit_sysenter },
	{ "mode-legacy-pm32-guest-tf", pm32_guest_tf },
	{ "mode-legacy-real-guest-tf", real_guest_tf },
	{ "mode-legacy-pm32-pae-cpl3-guest-tf", pm32_cpl3_guest_tf },
	{ "mode-legacy-pm16-guest-tf-16-bit-gates", pm16_guest_tf },
	{ "mode-legacy-pm32-pae-cpl3-guest-tf-handlers-at-cpl3", pm32_cpl3_guest_tf_cpl3_handlers },
	{ "mode-legacy-vm86-guest-tf", vm86_guest_tf },
	{ "mode-legacy-pm32-pae-cpl3-guest-tf-16-bit-tss", pm32_cpl3_guest_tf_tss16 },
	{ "mode-compat-cs-base-pushf", cs_base_pushf },
};
CASE_TABLE(legacy_cases, cases);
