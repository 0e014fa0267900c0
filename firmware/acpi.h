/* SPDX-License-Identifier: MIT */
/*
 * What the PVH boot reads from firmware tables: the RAM range from an
 * hvm_start_info memory map, and the CPUs in the ACPI MADT. Pure logic over
 * memory reached through a callback, so that tests/unit/test_pvh.c runs it
 * on the host against fake tables; pvh.c passes the identity map.
 */
#ifndef FW_ACPI_H
#define FW_ACPI_H

#include <stddef.h>
#include <stdint.h>

#include "pvh.h"

/*
 * Bytes [paddr, paddr + len) as a pointer, or NULL where they cannot be
 * read (beyond what is mapped).
 */
typedef const uint8_t *(*acpi_phys_fn)(uint64_t paddr, size_t len, void *ctx);

/* End of the RAM entry that holds addr, or 0 if none does. */
uint64_t pvh_ram_end(const struct hvm_memmap_table_entry *map, uint32_t entries,
		     uint64_t addr);

/* Address of a valid "RSD PTR " in [start, end) on a 16-byte boundary, or 0. */
uint64_t acpi_rsdp_scan(uint64_t start, uint64_t end, acpi_phys_fn phys, void *ctx);

/*
 * The MADT through the XSDT (revision 2 and up) or the RSDT, checksums
 * checked; NULL if there is none.
 */
const uint8_t *acpi_find_madt(uint64_t rsdp, acpi_phys_fn phys, void *ctx);

/* Enabled processors in a MADT: local APIC (type 0) and x2APIC (type 9). */
uint32_t acpi_madt_cpus(const uint8_t *madt);

#endif
