/* SPDX-License-Identifier: MIT */
/* The guest page-table walker on hand-built tables of every page size. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "pagewalk.h"

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

static void page_sizes(void **state)
{
	struct paging p = pg(0, true);
	uint64_t gpa, left;

	(void)state;
	assert_int_equal(pagewalk(&mem, &p, 0x123456, false, &gpa, &left), WALK_OK);
	assert_int_equal(gpa, 0x123456);
	assert_int_equal(left, 0x200000 - 0x123456);
	assert_int_equal(pagewalk(&mem, &p, 0x200ff8, false, &gpa, &left), WALK_OK);
	assert_int_equal(gpa, 0x600ff8);
	assert_int_equal(left, 8);
	assert_int_equal(pagewalk(&mem, &p, 0x40000010, false, &gpa, &left), WALK_OK);
	assert_int_equal(gpa, 0x10);
	assert_int_equal(left, (1ull << 30) - 0x10);
}

static void faults(void **state)
{
	struct paging p = pg(0, true), user = pg(3, true), nowp = pg(0, false);
	uint64_t gpa, left;

	(void)state;
	assert_int_equal(pagewalk(&mem, &p, 0x202000, false, &gpa, &left), WALK_NOT_PRESENT);
	assert_int_equal(pagewalk(&mem, &p, 0x1000000000ull, false, &gpa, &left), WALK_NOT_PRESENT);
	/* Bits 63:47 must copy bit 47; otherwise no walk happens at all. */
	assert_int_equal(pagewalk(&mem, &p, 0x0000800000000000ull, false, &gpa, &left), WALK_NONCANONICAL);
	assert_int_equal(pagewalk(&mem, &p, 0xf000000000100000ull, false, &gpa, &left), WALK_NONCANONICAL);
	/* Supervisor read-only page: reads fine, writes need CR0.WP clear. */
	assert_int_equal(pagewalk(&mem, &p, 0x201000, false, &gpa, &left), WALK_OK);
	assert_int_equal(pagewalk(&mem, &p, 0x201000, true, &gpa, &left), WALK_PROTECTION);
	assert_int_equal(pagewalk(&mem, &nowp, 0x201000, true, &gpa, &left), WALK_OK);
	assert_int_equal(pagewalk(&mem, &user, 0x201000, false, &gpa, &left), WALK_PROTECTION);
	assert_int_equal(pagewalk(&mem, &user, 0x200000, true, &gpa, &left), WALK_OK);
	/* A table outside RAM, and a mapping of memory that is not there. */
	assert_int_equal(pagewalk(&mem, &p, 0x80000000ull, false, &gpa, &left), WALK_OUTSIDE_RAM);
	assert_int_equal(pagewalk(&mem, &p, 0x40000000ull + RAM, false, &gpa, &left), WALK_OUTSIDE_RAM);
}

static void accessed_and_dirty(void **state)
{
	struct paging p = pg(0, true);
	uint64_t gpa, left;

	(void)state;
	assert_int_equal(pagewalk(&mem, &p, 0x200010, false, &gpa, &left), WALK_OK);
	assert_true(get(0x1000, 0) & A);
	assert_true(get(0x2000, 0) & A);
	assert_true(get(0x3000, 1) & A);
	assert_true(get(0x4000, 0) & A);
	assert_false(get(0x4000, 0) & D);
	assert_int_equal(pagewalk(&mem, &p, 0x200010, true, &gpa, &left), WALK_OK);
	assert_true(get(0x4000, 0) & D);
	assert_false(get(0x3000, 1) & D);	/* only the leaf is dirty */
}

static void no_paging_and_reads(void **state)
{
	struct paging off = { .enabled = false };
	struct paging p = pg(0, true);
	uint64_t gpa, left;
	uint8_t buf[16];

	(void)state;
	assert_int_equal(pagewalk(&mem, &off, 0x5000, true, &gpa, &left), WALK_OK);
	assert_int_equal(gpa, 0x5000);
	assert_int_equal(pagewalk(&mem, &off, RAM, false, &gpa, &left), WALK_OUTSIDE_RAM);
	p.long_mode = false;
	assert_int_equal(pagewalk(&mem, &p, 0, false, &gpa, &left), WALK_UNSUPPORTED);
	/* A read across 4 KiB pages that map to different frames. */
	p = pg(0, true);
	memset(ram + 0x600ff8, 0xaa, 8);
	memset(ram + 0x601000, 0xbb, 8);
	assert_int_equal(pagewalk_read(&mem, &p, 0x200ff8, buf, 16), 16);
	assert_int_equal(buf[7], 0xaa);
	assert_int_equal(buf[8], 0xbb);
	/* Stops at a page that is not present. */
	assert_int_equal(pagewalk_read(&mem, &p, 0x201ffc, buf, 16), 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(page_sizes, setup, teardown),
		cmocka_unit_test_setup_teardown(faults, setup, teardown),
		cmocka_unit_test_setup_teardown(accessed_and_dirty, setup, teardown),
		cmocka_unit_test_setup_teardown(no_paging_and_reads, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
