/* SPDX-License-Identifier: MIT */
/*
 * The PC machine's ACPI tables, MP table and SMBIOS, parsed back: checksums, the
 * guest firmware's own MADT reader (firmware/acpi.c), and the fields Linux
 * reads for CPUs, interrupt routing, power-off and reset.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "../../firmware/acpi.h"
#include "acpi.h"
#include "mptable.h"
#include "smbios.h"

#define BASE 0xe0000u
#define MP_BASE 0xf0000u

static uint8_t mem[0x20000];	/* 0xe0000-0xfffff */

static const uint8_t *phys(uint64_t paddr, size_t len, void *ctx)
{
	(void)ctx;
	if (paddr < BASE || paddr - BASE > sizeof(mem) || len > sizeof(mem) - (paddr - BASE))
		return NULL;
	return mem + (paddr - BASE);
}

static uint32_t le32(const uint8_t *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return le32(p) | (uint64_t)le32(p + 4) << 32;
}

static uint8_t sum(const uint8_t *p, size_t n)
{
	uint8_t s = 0;

	while (n--)
		s = (uint8_t)(s + *p++);
	return s;
}

static size_t build(unsigned cpus)
{
	size_t n;

	memset(mem, 0xcc, sizeof(mem));
	n = acpi_build(mem, sizeof(mem), BASE, cpus);
	assert_int_equal(n, acpi_size(cpus));
	return n;
}

/* An XSDT entry with this signature, checksum checked. */
static const uint8_t *xsdt_table(const char *sig)
{
	const uint8_t *xsdt = phys(le64(mem + 24), 36, NULL);

	assert_non_null(xsdt);
	assert_memory_equal(xsdt, "XSDT", 4);
	assert_int_equal(sum(xsdt, le32(xsdt + 4)), 0);
	for (uint32_t off = 36; off + 8 <= le32(xsdt + 4); off += 8) {
		const uint8_t *t = phys(le64(xsdt + off), 36, NULL);

		if (t && !memcmp(t, sig, 4)) {
			assert_int_equal(sum(t, le32(t + 4)), 0);
			return t;
		}
	}
	fail_msg("no %s in the XSDT", sig);
	return NULL;
}

static void rsdp_found_where_linux_scans(void **state)
{
	(void)state;
	build(1);
	assert_int_equal(acpi_rsdp_scan(0xe0000, 0x100000, phys, NULL), BASE);
	assert_int_equal(sum(mem, 20), 0);
	assert_int_equal(sum(mem, 36), 0);
	assert_int_equal(mem[15], 2);
}

/* firmware/acpi.c counts the CPUs as the self-test will. */
static void madt_lists_every_cpu(void **state)
{
	static const unsigned counts[] = { 1, 2, 8, 254, 255, 256 };

	(void)state;
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		const uint8_t *madt;

		build(counts[i]);
		madt = acpi_find_madt(BASE, phys, NULL);
		assert_non_null(madt);
		assert_int_equal(acpi_madt_cpus(madt), counts[i]);
		assert_ptr_equal(madt, xsdt_table("APIC"));
	}
}

/* Walks the MADT: APIC IDs in order, the I/O APIC, IRQ 0 on GSI 2. */
static void madt_routing(void **state)
{
	const uint8_t *madt;
	unsigned cpus = 0, ioapics = 0, overrides = 0;

	(void)state;
	build(3);
	madt = xsdt_table("APIC");
	assert_int_equal(le32(madt + 36), ACPI_LAPIC_ADDR);
	for (uint32_t off = 44; off < le32(madt + 4); off += madt[off + 1]) {
		const uint8_t *e = madt + off;

		assert_true(e[1] >= 2);
		if (e[0] == 0) {
			assert_int_equal(e[3], cpus);
			cpus++;
		} else if (e[0] == 1) {
			assert_int_equal(e[2], ACPI_IOAPIC_ID);
			assert_int_equal(le32(e + 4), 0xfec00000u);
			assert_int_equal(le32(e + 8), 0);
			ioapics++;
		} else if (e[0] == 2) {
			assert_int_equal(e[3], 0);
			assert_int_equal(le32(e + 4), 2);
			overrides++;
		}
	}
	assert_int_equal(cpus, 3);
	assert_int_equal(ioapics, 1);
	assert_int_equal(overrides, 1);
}

/* Hardware-reduced, with the sleep and reset registers as our I/O ports. */
static void fadt_registers(void **state)
{
	const uint8_t *f, *dsdt;

	(void)state;
	build(1);
	f = xsdt_table("FACP");
	assert_int_equal(le32(f + 4), 276);
	assert_true(le32(f + 112) & (1u << 20));	/* HW_REDUCED_ACPI */
	assert_true(le32(f + 112) & (1u << 10));	/* RESET_REG_SUP */
	assert_int_equal(f[116], 1);			/* system I/O */
	assert_int_equal(le64(f + 120), ACPI_RESET_PORT);
	assert_int_equal(f[128], ACPI_RESET_VALUE);
	assert_int_equal(f[244], 1);
	assert_int_equal(f[245], 8);
	assert_int_equal(le64(f + 248), ACPI_SLEEP_CONTROL_PORT);
	assert_int_equal(le64(f + 260), ACPI_SLEEP_STATUS_PORT);
	dsdt = phys(le64(f + 140), 36, NULL);
	assert_non_null(dsdt);
	assert_int_equal(le32(f + 40), le64(f + 140));
	assert_memory_equal(dsdt, "DSDT", 4);
	assert_int_equal(sum(dsdt, le32(dsdt + 4)), 0);
}

/* The DSDT's _S5: a 4-element package whose SLP_TYPa is 5. */
static void dsdt_s5_package(void **state)
{
	static const uint8_t s5[] = { 0x08, '_', 'S', '5', '_', 0x12 };
	const uint8_t *f, *d, *p = NULL;
	uint32_t len;

	(void)state;
	build(1);
	f = xsdt_table("FACP");
	d = phys(le64(f + 140), 36, NULL);
	len = le32(d + 4);
	for (uint32_t i = 36; i + sizeof(s5) <= len; i++)
		if (!memcmp(d + i, s5, sizeof(s5)))
			p = d + i + sizeof(s5);
	assert_non_null(p);
	/* PkgLength covers itself to the end of the table. */
	assert_int_equal(p[0], (d + len) - p);
	assert_int_equal(p[1], 4);
	assert_int_equal(p[2], 0x0a);
	assert_int_equal(p[3], ACPI_SLEEP_TYPE_S5);
	assert_int_equal(ACPI_SLEEP_TYPE((ACPI_SLEEP_TYPE_S5 << 2) | ACPI_SLEEP_ENABLE), 5);
}

static void too_small_builds_nothing(void **state)
{
	(void)state;
	assert_int_equal(acpi_build(mem, acpi_size(4) - 1, BASE, 4), 0);
	assert_int_equal(mptable_build(mem, mptable_size(4) - 1, MP_BASE, 4), 0);
	assert_int_equal(mptable_build(mem, sizeof(mem), MP_BASE, MPTABLE_MAX_CPUS + 1), 0);
}

static const uint8_t *build_mp(unsigned cpus)
{
	uint8_t *mpf = mem + (MP_BASE - BASE);

	memset(mem, 0xcc, sizeof(mem));
	assert_int_equal(mptable_build(mpf, 0x10000, MP_BASE, cpus), mptable_size(cpus));
	assert_memory_equal(mpf, "_MP_", 4);
	assert_int_equal(mpf[8], 1);
	assert_int_equal(mpf[9], 4);
	assert_int_equal(sum(mpf, 16), 0);
	assert_int_equal(mpf[11], 0);	/* a table, not a default configuration */
	return phys(le32(mpf + 4), 44, NULL);
}

/* The configuration table: N processors, vCPU 0 the BSP, ISA, I/O APIC, IRQs. */
static void mptable_entries(void **state)
{
	static const unsigned len[] = { 20, 8, 8, 8, 8 };
	unsigned count[5] = { 0 }, n, cpus = 4;
	const uint8_t *c, *e;

	(void)state;
	c = build_mp(cpus);
	assert_non_null(c);
	assert_memory_equal(c, "PCMP", 4);
	assert_int_equal(c[6], 4);
	assert_int_equal(sum(c, c[4] | c[5] << 8), 0);
	assert_int_equal(le32(c + 36), ACPI_LAPIC_ADDR);
	n = c[34] | c[35] << 8;
	e = c + 44;
	for (unsigned i = 0; i < n; i++) {
		assert_true(e[0] <= 4);
		count[e[0]]++;
		if (e[0] == 0) {
			assert_int_equal(e[1], count[0] - 1);
			assert_int_equal(e[3], count[0] == 1 ? 3 : 1);	/* enabled, BSP */
		}
		if (e[0] == 1)
			assert_memory_equal(e + 2, "ISA   ", 6);
		if (e[0] == 2)
			assert_int_equal(le32(e + 4), ACPI_IOAPIC_ADDR);
		if (e[0] == 3 && e[5] == 0)
			assert_int_equal(e[7], 2);	/* IRQ 0 -> INTIN 2 */
		if (e[0] == 3 && e[5] != 0)
			assert_int_equal(e[7], e[5]);
		e += len[e[0]];
	}
	assert_int_equal(e - c, c[4] | c[5] << 8);
	assert_int_equal(count[0], cpus);
	assert_int_equal(count[1], 1);
	assert_int_equal(count[2], 1);
	assert_int_equal(count[3], 15);
	assert_int_equal(count[4], 2);
}

/* The string `n` (1-based) of the structure at s, whose formatted part is s[1] long. */
static const char *smbios_string(const uint8_t *s, unsigned n)
{
	const char *p = (const char *)s + s[1];

	while (--n)
		p += strlen(p) + 1;
	return p;
}

/* Where Linux's dmi_scan looks: an entry point, checksums, structures to the end marker. */
static void smbios_found_and_walked(void **state)
{
	const uint64_t at = 0xf8000;
	const uint8_t *ep = NULL, *s, *end;
	unsigned types[3] = { 0 }, n = 0;

	(void)state;
	memset(mem, 0xcc, sizeof(mem));
	assert_int_equal(smbios_build(mem + (at - BASE), smbios_size() - 1, at), 0);
	assert_int_equal(smbios_build(mem + (at - BASE), 0x1000, at), smbios_size());
	for (uint64_t a = 0xf0000; a < 0x100000 && !ep; a += 16)
		if (!memcmp(phys(a, 32, NULL), "_SM_", 4))
			ep = phys(a, 32, NULL);
	assert_non_null(ep);
	assert_int_equal(sum(ep, ep[5]), 0);
	assert_memory_equal(ep + 16, "_DMI_", 5);
	assert_int_equal(sum(ep + 16, 15), 0);
	s = phys(le32(ep + 24), ep[22] | ep[23] << 8, NULL);
	assert_non_null(s);
	end = s + (ep[22] | ep[23] << 8);
	while (s < end) {
		const uint8_t *next = s + s[1];

		while (next[0] || next[1])	/* the strings end in two NULs */
			next++;
		if (s[0] == 0) {
			assert_string_equal(smbios_string(s, s[8]), SMBIOS_BIOS_DATE);
			/* Linux's pci_sanity_check() trusts mechanism #1 from 2001 on. */
			assert_true(atoi(smbios_string(s, s[8]) + 6) >= 2001);
			types[0]++;
		}
		types[1] += s[0] == 1;
		types[2] += s[0] == 127;
		n++;
		s = next + 2;
	}
	assert_ptr_equal(s, end);
	assert_int_equal(n, ep[28] | ep[29] << 8);
	assert_int_equal(types[0], 1);
	assert_int_equal(types[1], 1);
	assert_int_equal(types[2], 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rsdp_found_where_linux_scans),
		cmocka_unit_test(madt_lists_every_cpu),
		cmocka_unit_test(madt_routing),
		cmocka_unit_test(fadt_registers),
		cmocka_unit_test(dsdt_s5_package),
		cmocka_unit_test(too_small_builds_nothing),
		cmocka_unit_test(mptable_entries),
		cmocka_unit_test(smbios_found_and_walked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
