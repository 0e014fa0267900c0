/* SPDX-License-Identifier: MIT */
/*
 * The PVH boot's table readers (firmware/acpi.c), on the host: the RAM
 * range from an hvm_start_info memory map, the RSDP scan, the MADT through
 * the RSDT or XSDT, and its processor count.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "acpi.h"

/* A window of guest-physical memory: [base, base + sizeof(bytes)). */
struct fake_mem {
	uint64_t base;
	uint8_t bytes[0x20000];
};

static struct fake_mem mem;

static const uint8_t *fake_phys(uint64_t pa, size_t len, void *ctx)
{
	struct fake_mem *m = ctx;

	if (pa < m->base || pa - m->base > sizeof(m->bytes) ||
	    len > sizeof(m->bytes) - (pa - m->base))
		return NULL;
	return m->bytes + (pa - m->base);
}

static uint8_t *at(uint64_t pa)
{
	return mem.bytes + (pa - mem.base);
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static void fix_checksum(uint8_t *p, size_t len, size_t field)
{
	uint8_t sum = 0;

	p[field] = 0;
	for (size_t i = 0; i < len; i++)
		sum += p[i];
	p[field] = (uint8_t)-sum;
}

static void put_rsdp(uint64_t pa, unsigned revision, uint32_t rsdt, uint64_t xsdt)
{
	uint8_t *p = at(pa);

	memcpy(p, "RSD PTR ", 8);
	p[15] = (uint8_t)revision;
	put32(p + 16, rsdt);
	put32(p + 20, 36);
	put64(p + 24, xsdt);
	fix_checksum(p, 20, 8);
	fix_checksum(p, 36, 32);
}

static void put_sdt(uint64_t pa, const char *sig, uint32_t len)
{
	uint8_t *p = at(pa);

	memcpy(p, sig, 4);
	put32(p + 4, len);
	fix_checksum(p, len, 9);
}

/* A MADT with n bytes of entries at pa; returns its length. */
static uint32_t put_madt(uint64_t pa, const uint8_t *entries, uint32_t n)
{
	memcpy(at(pa) + 44, entries, n);
	put_sdt(pa, "APIC", 44 + n);
	return 44 + n;
}

static const uint8_t madt_entries[] = {
	0, 8, 0, 0, 1, 0, 0, 0,               /* local APIC 0, enabled */
	1, 12, 0, 0, 0, 0, 0xc0, 0xfe, 0, 0, 0, 0, /* I/O APIC: not a CPU */
	0, 8, 1, 1, 1, 0, 0, 0,               /* local APIC 1, enabled */
	0, 8, 2, 2, 2, 0, 0, 0,               /* local APIC 2, online-capable only */
	9, 16, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, /* x2APIC 256, enabled */
	9, 16, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, /* x2APIC 257, disabled */
};

static int reset(void **state)
{
	(void)state;
	memset(&mem, 0, sizeof(mem));
	mem.base = 0xe0000;
	return 0;
}

static void ram_end_qemu_map(void **state)
{
	/* QEMU pc's memory map through pvh.bin, -m 128M. */
	const struct hvm_memmap_table_entry map[] = {
		{ 0, 0x9fc00, 1, 0 }, { 0x9fc00, 0x400, 2, 0 }, { 0xf0000, 0x10000, 2, 0 },
		{ 0x100000, 0x7ee0000, 1, 0 }, { 0x7fe0000, 0x20000, 2, 0 },
		{ 0xfeffc000, 0x4000, 2, 0 }, { 0xfffc0000, 0x40000, 2, 0 },
	};

	(void)state;
	assert_int_equal(pvh_ram_end(map, 7, 0x100000), 0x7fe0000);
	assert_int_equal(pvh_ram_end(map, 7, 0x9fbff), 0x9fc00);
	/* Reserved, a hole, one past the end, no entries at all. */
	assert_int_equal(pvh_ram_end(map, 7, 0xf0000), 0);
	assert_int_equal(pvh_ram_end(map, 7, 0xa0000), 0);
	assert_int_equal(pvh_ram_end(map, 7, 0x7fe0000), 0);
	assert_int_equal(pvh_ram_end(map, 0, 0x100000), 0);
}

static void ram_end_no_wrap(void **state)
{
	const struct hvm_memmap_table_entry map[] = {
		{ 0xfffffffffffff000ull, 0x2000, 1, 0 }, /* wraps: must not match 0x100000 */
		{ 0, 0x4000000, 1, 0 },
	};

	(void)state;
	assert_int_equal(pvh_ram_end(map, 2, 0x100000), 0x4000000);
}

static void rsdp_scan_finds_valid_only(void **state)
{
	(void)state;
	put_rsdp(0xf5a30, 0, 0, 0);
	assert_int_equal(acpi_rsdp_scan(0xe0000, 0x100000, fake_phys, &mem), 0xf5a30);
	/* Off the 16-byte grid: not found. */
	memmove(at(0xf5a38), at(0xf5a30), 36);
	memset(at(0xf5a30), 0, 8);
	assert_int_equal(acpi_rsdp_scan(0xe0000, 0x100000, fake_phys, &mem), 0);
	/* On the grid with a broken checksum: not found either. */
	put_rsdp(0xf5a40, 0, 0, 0);
	at(0xf5a40)[16] ^= 1;
	assert_int_equal(acpi_rsdp_scan(0xe0000, 0x100000, fake_phys, &mem), 0);
}

static void madt_through_rsdt(void **state)
{
	const uint8_t *madt;

	(void)state;
	put_madt(0xe2000, madt_entries, sizeof(madt_entries));
	put_sdt(0xe1800, "FACP", 36);
	put32(at(0xe1000) + 36, 0xe1800);
	put32(at(0xe1000) + 40, 0xe2000);
	put_sdt(0xe1000, "RSDT", 44);
	put_rsdp(0xf0000, 0, 0xe1000, 0);
	madt = acpi_find_madt(0xf0000, fake_phys, &mem);
	assert_ptr_equal(madt, at(0xe2000));
	assert_int_equal(acpi_madt_cpus(madt), 3);
}

static void madt_through_xsdt(void **state)
{
	(void)state;
	put_madt(0xe3000, madt_entries, 8);
	put64(at(0xe1000) + 36, 0xe3000);
	put_sdt(0xe1000, "XSDT", 44);
	/* The RSDT's pointer is wrong on purpose: revision 2 must use the XSDT. */
	put_rsdp(0xf0000, 2, 0xdead0000, 0xe1000);
	assert_ptr_equal(acpi_find_madt(0xf0000, fake_phys, &mem), at(0xe3000));
	assert_int_equal(acpi_madt_cpus(at(0xe3000)), 1);
}

static void madt_rejected(void **state)
{
	(void)state;
	put_madt(0xe2000, madt_entries, sizeof(madt_entries));
	put32(at(0xe1000) + 36, 0xe2000);
	put_sdt(0xe1000, "RSDT", 40);
	put_rsdp(0xf0000, 0, 0xe1000, 0);
	assert_non_null(acpi_find_madt(0xf0000, fake_phys, &mem));
	/* A broken checksum, then a table beyond readable memory. */
	at(0xe2000)[50] ^= 0xff;
	assert_null(acpi_find_madt(0xf0000, fake_phys, &mem));
	put32(at(0xe1000) + 36, 0x7000000);
	put_sdt(0xe1000, "RSDT", 40);
	assert_null(acpi_find_madt(0xf0000, fake_phys, &mem));
	/* No RSDP where one is claimed. */
	assert_null(acpi_find_madt(0xf1000, fake_phys, &mem));
}

static void madt_truncated_entry(void **state)
{
	uint8_t entries[sizeof(madt_entries)];

	(void)state;
	memcpy(entries, madt_entries, sizeof(entries));
	entries[8 + 1] = 200; /* the I/O APIC claims to run past the table */
	put_madt(0xe2000, entries, sizeof(entries));
	assert_int_equal(acpi_madt_cpus(at(0xe2000)), 1);
	entries[8 + 1] = 0;   /* a zero length must not loop for ever */
	put_madt(0xe2000, entries, sizeof(entries));
	assert_int_equal(acpi_madt_cpus(at(0xe2000)), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ram_end_qemu_map),
		cmocka_unit_test(ram_end_no_wrap),
		cmocka_unit_test_setup(rsdp_scan_finds_valid_only, reset),
		cmocka_unit_test_setup(madt_through_rsdt, reset),
		cmocka_unit_test_setup(madt_through_xsdt, reset),
		cmocka_unit_test_setup(madt_rejected, reset),
		cmocka_unit_test_setup(madt_truncated_entry, reset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
