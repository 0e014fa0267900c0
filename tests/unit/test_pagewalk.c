/* SPDX-License-Identifier: MIT */
/*
 * The guest page-table walker on hand-built tables of every page size: each
 * #PF error code bit, reserved bits, keys, five levels.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "pagewalk.h"
#include "x86.h"

#define P  0x1ull
#define RW 0x2ull
#define US 0x4ull
#define A  0x20ull
#define D  0x40ull
#define PS 0x80ull

#define RAM (8ull << 20)
static uint8_t *ram;
static struct guest_mem mem;

static void set(uint64_t table, unsigned idx, uint64_t val)
{
	memcpy(ram + table + idx * 8, &val, 8);
}

static uint64_t get(uint64_t table, unsigned idx)
{
	uint64_t v;

	memcpy(&v, ram + table + idx * 8, 8);
	return v;
}

/*
 * PML4 0x1000 -> PDPT 0x2000:
 *   entry 0 -> PD 0x3000: 2 MiB page at 0 (user rw); entry 1 -> PT 0x4000
 *   (4 KiB pages: 0 -> 0x600000 user rw, 1 -> 0x601000 supervisor
 *   read-only, 2 not present)
 *   entry 1: a 1 GiB page at 0 (user rw), for la 0x40000000+
 *   entry 2 -> PD at 0x7ff000 + ... beyond RAM is tested separately
 */
static int setup(void **state)
{
	(void)state;
	ram = calloc(1, RAM);
	mem = (struct guest_mem){ ram, RAM };
	set(0x1000, 0, 0x2000 | P | RW | US);
	set(0x2000, 0, 0x3000 | P | RW | US);
	set(0x2000, 1, 0x0 | P | RW | US | PS);
	set(0x2000, 2, 0x9000000 | P | RW | US);       /* a PD outside RAM */
	set(0x3000, 0, 0x0 | P | RW | US | PS);
	set(0x3000, 1, 0x4000 | P | RW | US);
	set(0x4000, 0, 0x600000 | P | RW | US);
	set(0x4000, 1, 0x601000 | P);
	return ram ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	free(ram);
	return 0;
}

static struct paging pg(unsigned cpl, bool wp)
{
	return (struct paging){ .enabled = true, .long_mode = true, .wp = wp,
				.cr3 = 0x1000, .cpl = cpl };
}

static uint32_t ec;	/* the last walk's #PF error code */

static enum walk_result wk(const struct paging *p, uint64_t la, unsigned access,
			   uint64_t *gpa, uint64_t *left)
{
	struct walk w;
	enum walk_result r = pagewalk(&mem, p, la, access, &w);

	*gpa = w.gpa;
	*left = w.page_left;
	ec = w.error_code;
	return r;
}

static void page_sizes(void **state)
{
	struct paging p = pg(0, true);
	uint64_t gpa, left;

	(void)state;
	assert_int_equal(wk(&p, 0x123456, 0, &gpa, &left), WALK_OK);
	assert_int_equal(gpa, 0x123456);
	assert_int_equal(left, 0x200000 - 0x123456);
	assert_int_equal(wk(&p, 0x200ff8, 0, &gpa, &left), WALK_OK);
	assert_int_equal(gpa, 0x600ff8);
	assert_int_equal(left, 8);
	assert_int_equal(wk(&p, 0x40000010, 0, &gpa, &left), WALK_OK);
	assert_int_equal(gpa, 0x10);
	assert_int_equal(left, (1ull << 30) - 0x10);
	/* A page beyond RAM translates: what is there is for the caller (MMIO). */
	assert_int_equal(wk(&p, 0x40000000ull + RAM, 0, &gpa, &left), WALK_OK);
	assert_int_equal(gpa, RAM);
}

static void faults(void **state)
{
	struct paging p = pg(0, true), user = pg(3, true), nowp = pg(0, false);
	uint64_t gpa, left;

	(void)state;
	assert_int_equal(wk(&p, 0x202000, 0, &gpa, &left), WALK_FAULT);
	assert_int_equal(ec, 0);
	assert_int_equal(wk(&p, 0x202000, WALK_WRITE, &gpa, &left), WALK_FAULT);
	assert_int_equal(ec, X86_PF_W);
	assert_int_equal(wk(&user, 0x202000, WALK_WRITE, &gpa, &left), WALK_FAULT);
	assert_int_equal(ec, X86_PF_W | X86_PF_U);
	assert_int_equal(wk(&p, 0x1000000000ull, 0, &gpa, &left), WALK_FAULT);
	assert_int_equal(ec, 0);
	/* Bits 63:47 must copy bit 47; otherwise no walk happens at all. */
	assert_int_equal(wk(&p, 0x0000800000000000ull, 0, &gpa, &left), WALK_NONCANONICAL);
	assert_int_equal(wk(&p, 0xf000000000100000ull, 0, &gpa, &left), WALK_NONCANONICAL);
	/* Supervisor read-only page: reads fine, writes need CR0.WP clear. */
	assert_int_equal(wk(&p, 0x201000, 0, &gpa, &left), WALK_OK);
	assert_int_equal(wk(&p, 0x201000, WALK_WRITE, &gpa, &left), WALK_FAULT);
	assert_int_equal(ec, X86_PF_P | X86_PF_W);
	assert_int_equal(wk(&nowp, 0x201000, WALK_WRITE, &gpa, &left), WALK_OK);
	/* CPL3: supervisor pages are out of bounds, read-only is read-only even without WP. */
	assert_int_equal(wk(&user, 0x201000, 0, &gpa, &left), WALK_FAULT);
	assert_int_equal(ec, X86_PF_P | X86_PF_U);
	user.wp = false;
	set(0x4000, 3, 0x603000 | P | US);
	assert_int_equal(wk(&user, 0x203000, WALK_WRITE, &gpa, &left), WALK_FAULT);
	assert_int_equal(ec, X86_PF_P | X86_PF_W | X86_PF_U);
	assert_int_equal(wk(&user, 0x200000, WALK_WRITE, &gpa, &left), WALK_OK);
	/* A table outside RAM. */
	assert_int_equal(wk(&p, 0x80000000ull, 0, &gpa, &left), WALK_OUTSIDE_RAM);
}

static void reserved_bits(void **state)
{
	struct paging p = pg(0, true);
	uint64_t gpa, left;

	(void)state;
	p.maxphyaddr = 40;
	/* An address bit at MAXPHYADDR in the PTE. */
	set(0x4000, 0, 0x600000 | (1ull << 40) | P | RW | US);
	assert_int_equal(wk(&p, 0x200000, WALK_WRITE, &gpa, &left), WALK_FAULT);
	assert_int_equal(ec, X86_PF_P | X86_PF_W | X86_PF_RSVD);
	p.maxphyaddr = 46;
	assert_int_equal(wk(&p, 0x200000, WALK_WRITE, &gpa, &left), WALK_OK);
	assert_int_equal(gpa, 0x600000 | (1ull << 40));
	/* XD is reserved without EFER.NXE. */
	set(0x4000, 0, 0x600000 | (1ull << 63) | P | RW | US);
	assert_int_equal(wk(&p, 0x200000, 0, &gpa, &left), WALK_FAULT);
	assert_int_equal(ec, X86_PF_P | X86_PF_RSVD);
	p.nxe = true;
	assert_int_equal(wk(&p, 0x200000, WALK_WRITE, &gpa, &left), WALK_OK);
	/* PS in a PML4E; bits 20:13 of a 2 MiB page; bits 29:13 of a 1 GiB page. */
	set(0x1000, 0, 0x2000 | P | RW | US | PS);
	assert_int_equal(wk(&p, 0x200000, 0, &gpa, &left), WALK_FAULT);
	assert_int_equal(ec, X86_PF_P | X86_PF_RSVD);
	set(0x1000, 0, 0x2000 | P | RW | US);
	set(0x3000, 0, 0x0 | (1ull << 13) | P | RW | US | PS);
	assert_int_equal(wk(&p, 0x1000, 0, &gpa, &left), WALK_FAULT);
	assert_int_equal(ec, X86_PF_P | X86_PF_RSVD);
	set(0x2000, 1, 0x0 | (1ull << 21) | P | RW | US | PS);
	assert_int_equal(wk(&p, 0x40000000, 0, &gpa, &left), WALK_FAULT);
	/* A not-present entry has no reserved bits. */
	set(0x4000, 2, 0xffffffffffff0000ull);
	assert_int_equal(wk(&p, 0x202000, 0, &gpa, &left), WALK_FAULT);
	assert_int_equal(ec, 0);
}

static void execute_and_supervisor_rules(void **state)
{
	struct paging p = pg(0, true), user = pg(3, true);
	uint64_t gpa, left;

	(void)state;
	p.nxe = user.nxe = true;
	set(0x4000, 0, 0x600000 | (1ull << 63) | P | RW | US);
	assert_int_equal(wk(&p, 0x200000, WALK_FETCH, &gpa, &left), WALK_FAULT);
	assert_int_equal(ec, X86_PF_P | X86_PF_I);
	assert_int_equal(wk(&user, 0x200000, WALK_FETCH, &gpa, &left), WALK_FAULT);
	assert_int_equal(ec, X86_PF_P | X86_PF_U | X86_PF_I);
	assert_int_equal(wk(&p, 0x200000, WALK_WRITE, &gpa, &left), WALK_OK);
	/* I/D is reported only where NXE or SMEP give fetches rules. */
	set(0x4000, 2, 0);
	assert_int_equal(wk(&p, 0x202000, WALK_FETCH, &gpa, &left), WALK_FAULT);
	assert_int_equal(ec, X86_PF_I);
	p.nxe = false;
	assert_int_equal(wk(&p, 0x202000, WALK_FETCH, &gpa, &left), WALK_FAULT);
	assert_int_equal(ec, 0);
	/* SMEP: no supervisor fetch from a user page. */
	set(0x4000, 0, 0x600000 | P | RW | US);
	assert_int_equal(wk(&p, 0x200000, WALK_FETCH, &gpa, &left), WALK_OK);
	p.smep = true;
	assert_int_equal(wk(&p, 0x200000, WALK_FETCH, &gpa, &left), WALK_FAULT);
	assert_int_equal(ec, X86_PF_P | X86_PF_I);
	/* SMAP: no supervisor data access to a user page unless RFLAGS.AC. */
	p.smap = true;
	assert_int_equal(wk(&p, 0x200000, WALK_WRITE, &gpa, &left), WALK_FAULT);
	assert_int_equal(ec, X86_PF_P | X86_PF_W);
	p.ac = true;
	assert_int_equal(wk(&p, 0x200000, WALK_WRITE, &gpa, &left), WALK_OK);
	assert_int_equal(wk(&p, 0x201000, WALK_WRITE, &gpa, &left), WALK_FAULT);
}

static void protection_keys(void **state)
{
	struct paging p = pg(0, true), user = pg(3, true);
	uint64_t gpa, left;

	(void)state;
	/* Key 5 on the user page at 0x200000. */
	set(0x4000, 0, 0x600000 | (5ull << 59) | P | RW | US);
	user.pke = p.pke = true;
	user.pkru = p.pkru = 2u << 10;			/* WD for key 5 */
	assert_int_equal(wk(&user, 0x200000, 0, &gpa, &left), WALK_OK);
	assert_int_equal(wk(&user, 0x200000, WALK_WRITE, &gpa, &left), WALK_FAULT);
	assert_int_equal(ec, X86_PF_P | X86_PF_W | X86_PF_U | X86_PF_PK);
	/* A supervisor write heeds WD only with CR0.WP. */
	assert_int_equal(wk(&p, 0x200000, WALK_WRITE, &gpa, &left), WALK_FAULT);
	assert_int_equal(ec, X86_PF_P | X86_PF_W | X86_PF_PK);
	p.wp = false;
	assert_int_equal(wk(&p, 0x200000, WALK_WRITE, &gpa, &left), WALK_OK);
	user.pkru = 1u << 10;				/* AD for key 5 */
	assert_int_equal(wk(&user, 0x200000, 0, &gpa, &left), WALK_FAULT);
	assert_int_equal(ec, X86_PF_P | X86_PF_U | X86_PF_PK);
	/* Fetches, other keys, supervisor pages and CR4.PKE clear: no keys. */
	assert_int_equal(wk(&user, 0x200000, WALK_FETCH, &gpa, &left), WALK_OK);
	user.pkru = 3u << 8;
	assert_int_equal(wk(&user, 0x200000, WALK_WRITE, &gpa, &left), WALK_OK);
	p.pkru = ~0u;
	assert_int_equal(wk(&p, 0x201000, 0, &gpa, &left), WALK_OK);
	user.pkru = ~0u;
	user.pke = false;
	assert_int_equal(wk(&user, 0x200000, WALK_WRITE, &gpa, &left), WALK_OK);
}

static void five_levels(void **state)
{
	struct paging p = pg(0, true);
	uint64_t gpa, left;

	(void)state;
	/* PML5 at 0x5000: entry 1 -> the PML4 at 0x1000, for la 1 << 48. */
	set(0x5000, 1, 0x1000 | P | RW | US);
	p.la57 = true;
	p.cr3 = 0x5000;
	assert_int_equal(wk(&p, (1ull << 48) | 0x200ff8, 0, &gpa, &left), WALK_OK);
	assert_int_equal(gpa, 0x600ff8);
	/* Canonical at 57 bits, not at 48. */
	assert_int_equal(wk(&p, 0x0100000000000000ull, 0, &gpa, &left), WALK_NONCANONICAL);
	assert_true(pagewalk_canonical(0xff00000000000000ull, true));
	assert_false(pagewalk_canonical(1ull << 48, false));
	assert_int_equal(wk(&p, 0x200000, 0, &gpa, &left), WALK_FAULT);
}

static void accessed_and_dirty(void **state)
{
	struct paging p = pg(0, true);
	struct walk w;

	(void)state;
	/* Walking alone leaves the tables alone. */
	assert_int_equal(pagewalk(&mem, &p, 0x200010, WALK_WRITE, &w), WALK_OK);
	assert_false(get(0x1000, 0) & A);
	assert_false(get(0x4000, 0) & (A | D));
	pagewalk_set_ad(&mem, &w, false);
	assert_true(get(0x1000, 0) & A);
	assert_true(get(0x2000, 0) & A);
	assert_true(get(0x3000, 1) & A);
	assert_true(get(0x4000, 0) & A);
	assert_false(get(0x4000, 0) & D);
	pagewalk_set_ad(&mem, &w, true);
	assert_true(get(0x4000, 0) & D);
	assert_false(get(0x3000, 1) & D);	/* only the leaf is dirty */
	/* A walk that faults records no entry past the fault. */
	assert_int_equal(pagewalk(&mem, &p, 0x202000, WALK_WRITE, &w), WALK_FAULT);
	assert_int_equal(w.nents, 4);
}

static void no_paging_and_reads(void **state)
{
	struct paging off = { .enabled = false };
	struct paging p = pg(0, true);
	uint64_t gpa, left;
	uint8_t buf[16];

	(void)state;
	assert_int_equal(wk(&off, 0x5000, WALK_WRITE, &gpa, &left), WALK_OK);
	assert_int_equal(gpa, 0x5000);
	assert_int_equal(wk(&off, 0x100005000ull, 0, &gpa, &left), WALK_OK);
	assert_int_equal(gpa, 0x5000);		/* linear addresses are 32 bits */
	/* A read across 4 KiB pages that map to different frames. */
	p = pg(0, true);
	memset(ram + 0x600ff8, 0xaa, 8);
	memset(ram + 0x601000, 0xbb, 8);
	assert_int_equal(pagewalk_read(&mem, &p, 0x200ff8, buf, 16), 16);
	assert_int_equal(buf[7], 0xaa);
	assert_int_equal(buf[8], 0xbb);
	/* Stops at a page that is not present, and at one that is not executable. */
	assert_int_equal(pagewalk_read(&mem, &p, 0x201ffc, buf, 16), 4);
	p.nxe = true;
	set(0x4000, 1, 0x601000 | P | (1ull << 63));
	assert_int_equal(pagewalk_read(&mem, &p, 0x200ff8, buf, 16), 8);
	assert_int_equal(pagewalk_read(&mem, &off, RAM - 4, buf, 16), 4);
	/* Filled: past RAM reads the fill; a walk that faults still stops, and says so. */
	{
		enum walk_result why;

		memset(ram + RAM - 4, 0x11, 4);
		assert_int_equal(pagewalk_read_filled(&mem, &off, RAM - 4, 0, buf, 16, 0xff, &why), 16);
		assert_int_equal(why, WALK_OK);
		assert_int_equal(buf[3], 0x11);
		assert_int_equal(buf[4], 0xff);
		assert_int_equal(buf[15], 0xff);
		assert_int_equal(pagewalk_read_filled(&mem, &off, RAM + 0x1000, 0, buf, 4, 0xee, &why), 4);
		assert_int_equal(buf[0], 0xee);
		/* A fill of 0 is a fill too; only pagewalk_read() stops at RAM's end. */
		assert_int_equal(pagewalk_read_filled(&mem, &off, RAM - 4, 0, buf, 16, 0, &why), 16);
		assert_int_equal(buf[3], 0x11);
		assert_int_equal(buf[4], 0);
		assert_int_equal(pagewalk_read_filled(&mem, &p, 0x200ff8, WALK_FETCH, buf, 16, 0xff, &why), 8);
		assert_int_equal(why, WALK_FAULT);
		assert_int_equal(buf[7], 0xaa);
	}
}

static void set32(uint64_t table, unsigned idx, uint32_t val)
{
	memcpy(ram + table + idx * 4, &val, 4);
}

/* 32-bit paging (issue 18): 4-byte entries, 4 MiB pages with CR4.PSE. */
static void paging32(void **state)
{
	struct paging p = { .enabled = true, .cr3 = 0x10000, .wp = true };
	uint64_t gpa, left;
	struct walk w;
	uint32_t e;

	(void)state;
	set32(0x10000, 0, 0x11000 | P | RW | US);
	set32(0x11000, 5, 0x123000 | P | US);		/* read-only 4 KiB page */
	set32(0x10000, 1, 0x400000 | P | RW | PS);	/* 4 MiB page, supervisor */
	assert_int_equal(wk(&p, 0x5ff8, 0, &gpa, &left), WALK_OK);
	assert_int_equal(gpa, 0x123ff8);
	assert_int_equal(left, 8);
	assert_int_equal(wk(&p, 0x5ff8, WALK_WRITE, &gpa, &left), WALK_FAULT);
	assert_int_equal(ec, X86_PF_P | X86_PF_W);
	assert_int_equal(wk(&p, 0x6000, 0, &gpa, &left), WALK_FAULT);	/* PTE 6 not present */
	assert_int_equal(ec, 0);
	/* Without CR4.PSE, PS is ignored: the PDE points at a page table. */
	assert_int_equal(wk(&p, 0x412345, 0, &gpa, &left), WALK_FAULT);
	p.pse = true;
	assert_int_equal(wk(&p, 0x412345, WALK_WRITE, &gpa, &left), WALK_OK);
	assert_int_equal(gpa, 0x412345);
	assert_int_equal(left, 0x400000 - 0x12345);
	p.cpl = 3;
	assert_int_equal(wk(&p, 0x412345, 0, &gpa, &left), WALK_FAULT);
	assert_int_equal(ec, X86_PF_P | X86_PF_U);
	p.cpl = 0;
	/*
	 * PSE-36: a 4 MiB PDE's bits 20:13 are physical bits 39:32, up to
	 * MAXPHYADDR; above it, and bit 21 always, are reserved (SDM vol. 3
	 * 4.3, table 4-4).
	 */
	p.maxphyaddr = 36;
	set32(0x10000, 2, 0x800000 | P | RW | PS | (0x5u << 13));
	assert_int_equal(wk(&p, 0x812345, 0, &gpa, &left), WALK_OK);
	assert_int_equal(gpa, 0x500812345ull);
	set32(0x10000, 2, 0x800000 | P | RW | PS | (0x10u << 13));	/* bit 36 */
	assert_int_equal(wk(&p, 0x812345, 0, &gpa, &left), WALK_FAULT);
	assert_int_equal(ec, X86_PF_P | X86_PF_RSVD);
	set32(0x10000, 2, 0x800000 | P | RW | PS | (1u << 21));
	assert_int_equal(wk(&p, 0x812345, WALK_WRITE, &gpa, &left), WALK_FAULT);
	assert_int_equal(ec, X86_PF_P | X86_PF_W | X86_PF_RSVD);
	/* Linear addresses are 32 bits; A and D set in 4-byte entries only. */
	assert_int_equal(pagewalk(&mem, &p, 0x100412345ull, WALK_WRITE, &w), WALK_OK);
	memset(ram + 0x10008, 0x77, 4);
	pagewalk_set_ad(&mem, &w, true);
	memcpy(&e, ram + 0x10004, 4);
	assert_int_equal(e, 0x400000 | P | RW | PS | A | D);
	assert_int_equal(get(0x10008, 0) & 0xffffffff, 0x77777777);
}

/* PAE paging (issue 18): a PDPTE, then 8-byte PDEs and PTEs. */
static void paging_pae(void **state)
{
	struct paging p = { .enabled = true, .pae = true, .nxe = true, .cr3 = 0x10020 };
	uint64_t gpa, left;

	(void)state;
	set(0x10020, 3, 0x12000 | P);			/* 3-4 GiB */
	set(0x12000, 0, 0x13000 | P | RW | US);
	set(0x13000, 1, 0x456000 | P | RW | US | (1ull << 63));
	set(0x12000, 1, 0x600000 | P | RW | PS);		/* 2 MiB page */
	assert_int_equal(wk(&p, 0xc0001234, WALK_WRITE, &gpa, &left), WALK_OK);
	assert_int_equal(gpa, 0x456234);
	assert_int_equal(wk(&p, 0xc0001234, WALK_FETCH, &gpa, &left), WALK_FAULT);
	assert_int_equal(ec, X86_PF_P | X86_PF_I);
	assert_int_equal(wk(&p, 0xc0300010, 0, &gpa, &left), WALK_OK);
	assert_int_equal(gpa, 0x700010);
	assert_int_equal(left, 0x100000 - 0x10);
	assert_int_equal(wk(&p, 0x40000000, 0, &gpa, &left), WALK_FAULT);	/* PDPTE 1 */
	assert_int_equal(ec, 0);
	/*
	 * Reserved bits of a PDPTE are checked when the CPU loads it (#GP at
	 * MOV CR3), not at the walk: set in memory since (R/W, A as the lab's
	 * CPU sets it, XD, bits past MAXPHYADDR), they change nothing.
	 */
	set(0x12000, 0, 0x200000 | P | RW | PS);
	set(0x10020, 0, 0x12000 | P | RW | A | (1ull << 63) | (1ull << 51));
	p.maxphyaddr = 40;
	assert_int_equal(wk(&p, 0x1000, WALK_WRITE, &gpa, &left), WALK_OK);
	assert_int_equal(gpa, 0x201000);
	assert_int_equal(get(0x10020, 0), 0x12000 | P | RW | A | (1ull << 63) | (1ull << 51));
	/* PDPTEs in RAM's last 32 bytes: the last one, 3, ends RAM and is read. */
	p.cr3 = RAM - 32;
	set(RAM - 32, 3, 0x12000 | P);
	assert_int_equal(wk(&p, 0xc0000000u, 0, &gpa, &left), WALK_OK);
	assert_int_equal(gpa, 0x200000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(page_sizes, setup, teardown),
		cmocka_unit_test_setup_teardown(faults, setup, teardown),
		cmocka_unit_test_setup_teardown(reserved_bits, setup, teardown),
		cmocka_unit_test_setup_teardown(execute_and_supervisor_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(protection_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(five_levels, setup, teardown),
		cmocka_unit_test_setup_teardown(accessed_and_dirty, setup, teardown),
		cmocka_unit_test_setup_teardown(no_paging_and_reads, setup, teardown),
		cmocka_unit_test_setup_teardown(paging32, setup, teardown),
		cmocka_unit_test_setup_teardown(paging_pae, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
