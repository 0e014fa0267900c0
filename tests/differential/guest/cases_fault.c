/* SPDX-License-Identifier: MIT */
/*
 * Issue 9 item 1: a split lock whose operand (or instruction) faults must
 * give the guest the CPU's fault (vector, error code, CR2, memory), never
 * stop the VM or be emulated as if the page were fine.
 */
#include "diff.h"

static const uint8_t lock_add[] = { 0xf0, 0x01, 0x37 };        /* lock add %esi,(%rdi) */
static const uint8_t lock_addq[] = { 0xf0, 0x48, 0x01, 0x37 }; /* lock add %rsi,(%rdi) */
static const uint8_t lock_cmpxchg[] = { 0xf0, 0x0f, 0xb1, 0x37 }; /* lock cmpxchg %esi,(%rdi) */
static const uint8_t xchg[] = { 0x87, 0x37 };                  /* xchg %esi,(%rdi) */
static const uint8_t lock_incw[] = { 0x66, 0xf0, 0xff, 0x07 }; /* lock incw (%rdi) */

#define PAGE_SPLIT  (WIN_PAGE(1) - 2)    /* 4 bytes across pages 0 and 1 */
#define LINE_SPLIT  (WIN_PAGE(1) + 62)   /* 4 bytes across a line in page 1 */
#define LINE_SPLIT0 (WIN_PAGE(0) + 126)  /* 4 bytes across a line in page 0 */

static void op(const char *label, const uint8_t *insn, unsigned len, unsigned cpl,
	       uint64_t addr, uint32_t seed)
{
	struct exec_req req = { .mode = MODE_64, .cpl = cpl, .insn = insn, .len = len };

	run_op(label, &req, R_DI, addr, seed);
}

static void set_wp(bool on)
{
	write_cr0(on ? read_cr0() | X86_CR0_WP : read_cr0() & ~X86_CR0_WP);
}

static void set_efer_nxe(bool on)
{
	uint64_t e = rdmsr(MSR_EFER);

	wrmsr(MSR_EFER, on ? e | X86_EFER_NXE : e & ~X86_EFER_NXE);
}

static int notpresent_second(const struct boot_info *bi)
{
	(void)bi;
	win_set(1, PG_W | PG_U);
	op("page split, second page not present", lock_add, 3, 0, PAGE_SPLIT, 1);
	op("page split, qword", lock_addq, 4, 0, WIN_PAGE(1) - 4, 2);
	op("line split in the absent page", lock_add, 3, 0, LINE_SPLIT, 3);
	return 0;
}

static int notpresent_first(const struct boot_info *bi)
{
	(void)bi;
	win_set(0, PG_W | PG_U);
	op("page split, first page not present", lock_add, 3, 0, PAGE_SPLIT, 4);
	op("line split in the absent page", lock_add, 3, 0, LINE_SPLIT0, 5);
	return 0;
}

static int notpresent_cpl3(const struct boot_info *bi)
{
	(void)bi;
	win_set(1, PG_W | PG_U);
	op("cpl3 page split, second page not present", lock_add, 3, 3, PAGE_SPLIT, 6);
	win_set(1, PG_NORMAL);
	win_set(0, PG_W | PG_U);
	op("cpl3 page split, first page not present", lock_add, 3, 3, PAGE_SPLIT, 7);
	return 0;
}

static int readonly_wp(const struct boot_info *bi)
{
	(void)bi;
	set_wp(true);
	win_set(1, PG_P | PG_U);
	op("CR0.WP=1, second page read-only", lock_add, 3, 0, PAGE_SPLIT, 8);
	op("CR0.WP=1, line split in a read-only page", lock_add, 3, 0, LINE_SPLIT, 9);
	op("CR0.WP=1, cmpxchg on a read-only page", lock_cmpxchg, 4, 0, LINE_SPLIT, 10);
	op("CR0.WP=1, xchg on a read-only page", xchg, 2, 0, LINE_SPLIT, 11);
	set_wp(false);
	return 0;
}

static int readonly_nowp(const struct boot_info *bi)
{
	(void)bi;
	set_wp(false);
	win_set(1, PG_P | PG_U);
	op("CR0.WP=0, second page read-only", lock_add, 3, 0, PAGE_SPLIT, 12);
	op("CR0.WP=0, line split in a read-only page", lock_add, 3, 0, LINE_SPLIT, 13);
	return 0;
}

static int readonly_cpl3(const struct boot_info *bi)
{
	(void)bi;
	win_set(1, PG_P | PG_U);
	op("cpl3, second page read-only", lock_add, 3, 3, PAGE_SPLIT, 14);
	op("cpl3, line split in a read-only page", lock_add, 3, 3, LINE_SPLIT, 15);
	return 0;
}

static int smap(const struct boot_info *bi, bool ac)
{
	struct exec_req req = { .mode = MODE_64, .insn = lock_add, .len = 3, .ac = ac };

	(void)bi;
	if (!cpu_has_smap())
		return diff_skip("the CPU has no SMAP (CPUID.(7,0):EBX[20])");
	/* Supervisor-only identity map: the runtime's own accesses stay legal. */
	identity_user(false);
	win_set(0, PG_P | PG_W);
	win_set(1, PG_NORMAL);
	write_cr4(read_cr4() | X86_CR4_SMAP);
	run_op(ac ? "SMAP, RFLAGS.AC=1, split into a user page" :
		    "SMAP, RFLAGS.AC=0, split into a user page", &req, R_DI, PAGE_SPLIT, 16);
	run_op(ac ? "SMAP, RFLAGS.AC=1, line split in a user page" :
		    "SMAP, RFLAGS.AC=0, line split in a user page", &req, R_DI, LINE_SPLIT, 17);
	write_cr4(read_cr4() & ~X86_CR4_SMAP);
	identity_user(true);
	return 0;
}

static int smap_noac(const struct boot_info *bi)
{
	return smap(bi, false);
}

static int smap_ac(const struct boot_info *bi)
{
	return smap(bi, true);
}

static int supervisor_cpl3(const struct boot_info *bi)
{
	(void)bi;
	win_set(1, PG_P | PG_W);
	op("cpl3, second page supervisor", lock_add, 3, 3, PAGE_SPLIT, 18);
	op("cpl3, line split in a supervisor page", lock_add, 3, 3, LINE_SPLIT, 19);
	op("cpl0, second page supervisor", lock_add, 3, 0, PAGE_SPLIT, 20);
	return 0;
}

static int pkeys(const struct boot_info *bi, uint32_t pkru, const char *what)
{
	char label[80];

	(void)bi;
	if (!cpu_has_pku())
		return diff_skip("the CPU has no protection keys (CPUID.(7,0):ECX[3])");
	write_cr4(read_cr4() | X86_CR4_PKE);
	wrpkru(pkru);
	win_set(1, PG_NORMAL | PG_PKEY(1));
	snprintf(label, sizeof(label), "%s, cpl0 page split", what);
	op(label, lock_add, 3, 0, PAGE_SPLIT, 21);
	snprintf(label, sizeof(label), "%s, cpl0 line split", what);
	op(label, lock_add, 3, 0, LINE_SPLIT, 22);
	snprintf(label, sizeof(label), "%s, cpl3 page split", what);
	op(label, lock_add, 3, 3, PAGE_SPLIT, 23);
	wrpkru(0);
	write_cr4(read_cr4() & ~X86_CR4_PKE);
	return 0;
}

static int pkey_wd(const struct boot_info *bi)
{
	return pkeys(bi, 2u << 2, "PKRU write-disable for key 1");
}

static int pkey_ad(const struct boot_info *bi)
{
	return pkeys(bi, 1u << 2, "PKRU access-disable for key 1");
}

static int pkey_other(const struct boot_info *bi)
{
	return pkeys(bi, 3u << 4, "PKRU disables key 2 only");
}

static int reserved_bit(const struct boot_info *bi)
{
	(void)bi;
	win_set(1, PG_NORMAL | PG_RSVD);
	op("PTE bit 51 set, page split", lock_add, 3, 0, PAGE_SPLIT, 24);
	op("PTE bit 51 set, line split", lock_add, 3, 0, LINE_SPLIT, 25);
	op("PTE bit 51 set, cpl3 page split", lock_add, 3, 3, PAGE_SPLIT, 26);
	return 0;
}

static int reserved_xd(const struct boot_info *bi)
{
	(void)bi;
	set_efer_nxe(false);
	win_set(1, PG_NORMAL | PG_XD);
	op("XD set with EFER.NXE=0, page split", lock_add, 3, 0, PAGE_SPLIT, 27);
	op("XD set with EFER.NXE=0, line split", lock_add, 3, 0, LINE_SPLIT, 28);
	return 0;
}

static int noncanonical(const struct boot_info *bi)
{
	(void)bi;
	op("non-canonical, line split", lock_add, 3, 0, 0x0000800000000000ull + 62, 29);
	op("canonical into non-canonical", lock_add, 3, 0, 0x00007ffffffffffeull, 30);
	op("high half, non-canonical", lock_add, 3, 0, 0xffff7ffffffffffeull, 31);
	op("cpl3 non-canonical, line split", lock_add, 3, 3, 0x0000800000000000ull + 62, 32);
	return 0;
}

static int unmapped_linear(const struct boot_info *bi)
{
	(void)bi;
	/* Linear 2 GiB: no PDPT entry for it (RAM is far below). */
	op("no paging entry at all", lock_add, 3, 0, 0x80000000ull + 62, 33);
	return 0;
}

static int noram(const struct boot_info *bi)
{
	(void)bi;
	win_set(1, PG_NORMAL | PG_NORAM);
	op("page split into guest-physical space without RAM", lock_add, 3, 0, PAGE_SPLIT, 34);
	op("line split without RAM", lock_add, 3, 0, LINE_SPLIT, 35);
	op("line split without RAM, word inc", lock_incw, 4, 0, LINE_SPLIT + 1, 36);
	return 0;
}

static int end_of_ram(const struct boot_info *bi)
{
	(void)bi;
	win_set(0, PG_NORMAL | PG_LASTRAM);
	win_set(1, PG_NORMAL | PG_NORAM);
	/* Only the last 8 bytes of RAM: below them is vCPU 0's live stack. */
	op("split across the end of RAM", lock_add, 3, 0, PAGE_SPLIT, 37);
	op("split across the end of RAM, xchg", xchg, 2, 0, PAGE_SPLIT - 2, 38);
	return 0;
}

static int nx_fetch(const struct boot_info *bi)
{
	struct exec_req req = { .mode = MODE_64, .insn = lock_add, .len = 3 };

	(void)bi;
	if (!cpu_has_nx())
		return diff_skip("the CPU has no NX (CPUID.80000001:EDX[20])");
	set_efer_nxe(true);
	win_set(4, PG_NORMAL | PG_XD);
	req.code_va = WIN_PAGE(4);
	run_op("split lock fetched from an XD page", &req, R_DI, LINE_SPLIT, 39);
	win_set(4, PG_NORMAL);
	win_set(5, PG_NORMAL | PG_XD);
	req.code_va = WIN_PAGE(5) - 2;
	run_op("split lock whose bytes run into an XD page", &req, R_DI, LINE_SPLIT, 40);
	win_set(5, PG_NORMAL);
	win_set(1, PG_NORMAL | PG_XD);
	req.code_va = 0;
	run_op("operand in an XD page (data: allowed)", &req, R_DI, PAGE_SPLIT, 41);
	set_efer_nxe(false);
	return 0;
}

static int fetch_notpresent(const struct boot_info *bi)
{
	struct exec_req req = { .mode = MODE_64, .insn = lock_add, .len = 3 };

	(void)bi;
	win_set(5, PG_W | PG_U);
	req.code_va = WIN_PAGE(5) - 2;
	run_op("split lock whose bytes run into a not-present page", &req, R_DI, LINE_SPLIT, 42);
	return 0;
}

static int accessed_dirty(const struct boot_info *bi)
{
	uint64_t *pte0 = win_pte(0), *pte1 = win_pte(1);

	(void)bi;
	win_set(0, PG_NORMAL);
	win_set(1, PG_NORMAL);
	op("split lock on fresh PTEs", lock_add, 3, 0, PAGE_SPLIT, 43);
	printf("A/D after: page 0 A=%lu D=%lu, page 1 A=%lu D=%lu\n",
	       *pte0 >> 5 & 1, *pte0 >> 6 & 1, *pte1 >> 5 & 1, *pte1 >> 6 & 1);
	win_set(0, PG_NORMAL);
	win_set(1, PG_P | PG_U);
	set_wp(true);
	op("split lock faulting on the second page", lock_add, 3, 0, PAGE_SPLIT, 44);
	printf("A/D after: page 0 A=%lu D=%lu, page 1 A=%lu D=%lu\n",
	       *pte0 >> 5 & 1, *pte0 >> 6 & 1, *pte1 >> 5 & 1, *pte1 >> 6 & 1);
	set_wp(false);
	return 0;
}

static int la57(const struct boot_info *bi)
{
	(void)bi;
	if (!(read_cr4() & X86_CR4_LA57))
		return diff_skip("CR4.LA57 can only be set outside long mode, and vmm starts the guest in long mode with 4-level paging (CPU %s it)",
				 cpu_has_la57() ? "supports" : "does not support");
	op("split lock with 5-level paging", lock_add, 3, 0, PAGE_SPLIT, 45);
	return 0;
}

static const struct diff_case cases[] = {
	{ "fault-notpresent-second-page", notpresent_second },
	{ "fault-notpresent-first-page", notpresent_first },
	{ "fault-notpresent-cpl3", notpresent_cpl3 },
	{ "fault-readonly-wp", readonly_wp },
	{ "fault-readonly-nowp", readonly_nowp },
	{ "fault-readonly-cpl3", readonly_cpl3 },
	{ "fault-smap-ac0", smap_noac },
	{ "fault-smap-ac1", smap_ac },
	{ "fault-supervisor-page-cpl3", supervisor_cpl3 },
	{ "fault-pkey-write-disable", pkey_wd },
	{ "fault-pkey-access-disable", pkey_ad },
	{ "fault-pkey-other-key", pkey_other },
	{ "fault-reserved-bit", reserved_bit },
	{ "fault-reserved-xd-without-nxe", reserved_xd },
	{ "fault-noncanonical", noncanonical },
	{ "fault-unmapped-linear", unmapped_linear },
	{ "fault-no-ram-behind", noram },
	{ "fault-end-of-ram", end_of_ram },
	{ "fault-nx-fetch", nx_fetch },
	{ "fault-fetch-notpresent", fetch_notpresent },
	{ "fault-accessed-dirty", accessed_dirty },
	{ "fault-la57", la57 },
};
CASE_TABLE(fault_cases, cases);
