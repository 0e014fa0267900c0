/* SPDX-License-Identifier: MIT */
/* Firmware tables for the PVH boot; see acpi.h. Host-buildable: no fw.h. */
#include "acpi.h"

#include <stdbool.h>

#define SDT_HEADER      36
#define SDT_MAX         (1u << 20)  /* sanity bound on a table's length */
#define MADT_ENTRIES    44
#define MADT_LAPIC      0
#define MADT_X2APIC     9
#define MADT_ENABLED    1u

uint64_t pvh_ram_end(const struct hvm_memmap_table_entry *map, uint32_t entries,
		     uint64_t addr)
{
	uint64_t end = 0;

	for (uint32_t i = 0; i < entries; i++)
		if (map[i].type == HVM_MEMMAP_TYPE_RAM && map[i].addr <= addr &&
		    addr - map[i].addr < map[i].size)
			end = map[i].addr + map[i].size;
	return end;
}

static uint32_t le32(const uint8_t *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return le32(p) | (uint64_t)le32(p + 4) << 32;
}

static bool checksum_ok(const uint8_t *p, size_t len)
{
	uint8_t sum = 0;

	for (size_t i = 0; i < len; i++)
		sum += p[i];
	return sum == 0;
}

uint64_t acpi_rsdp_scan(uint64_t start, uint64_t end, acpi_phys_fn phys, void *ctx)
{
	for (uint64_t a = start; a + 20 <= end; a += 16) {
		const uint8_t *p = phys(a, 20, ctx);

		if (p && !__builtin_memcmp(p, "RSD PTR ", 8) && checksum_ok(p, 20))
			return a;
	}
	return 0;
}

static const uint8_t *table(uint64_t addr, const char *sig, acpi_phys_fn phys, void *ctx)
{
	const uint8_t *t = addr ? phys(addr, SDT_HEADER, ctx) : NULL;
	uint32_t len;

	if (!t || __builtin_memcmp(t, sig, 4))
		return NULL;
	len = le32(t + 4);
	if (len < SDT_HEADER || len > SDT_MAX)
		return NULL;
	t = phys(addr, len, ctx);
	return t && checksum_ok(t, len) ? t : NULL;
}

const uint8_t *acpi_find_madt(uint64_t rsdp_addr, acpi_phys_fn phys, void *ctx)
{
	const uint8_t *rsdp = phys(rsdp_addr, 36, ctx);
	const uint8_t *sdt = NULL;
	unsigned width = 8;

	if (!rsdp)
		rsdp = phys(rsdp_addr, 20, ctx);
	if (!rsdp || __builtin_memcmp(rsdp, "RSD PTR ", 8))
		return NULL;
	if (rsdp[15] >= 2 && phys(rsdp_addr, 36, ctx))
		sdt = table(le64(rsdp + 24), "XSDT", phys, ctx);
	if (!sdt) {
		sdt = table(le32(rsdp + 16), "RSDT", phys, ctx);
		width = 4;
	}
	if (!sdt)
		return NULL;
	for (uint32_t off = SDT_HEADER; off + width <= le32(sdt + 4); off += width) {
		uint64_t entry = width == 8 ? le64(sdt + off) : le32(sdt + off);
		const uint8_t *t = table(entry, "APIC", phys, ctx);

		if (t)
			return t;
	}
	return NULL;
}

uint32_t acpi_madt_cpus(const uint8_t *madt)
{
	uint32_t len = le32(madt + 4), count = 0;

	for (uint32_t off = MADT_ENTRIES; off + 2 <= len;) {
		uint8_t type = madt[off], elen = madt[off + 1];

		if (elen < 2 || off + elen > len)
			break;
		if (type == MADT_LAPIC && elen >= 8 && (le32(madt + off + 4) & MADT_ENABLED))
			count++;
		if (type == MADT_X2APIC && elen >= 16 && (le32(madt + off + 8) & MADT_ENABLED))
			count++;
		off += elen;
	}
	return count;
}
