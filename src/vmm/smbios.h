/* SPDX-License-Identifier: MIT */
/*
 * The PC machine's SMBIOS 2.8 tables (DMI): a 32-bit entry point, BIOS
 * information (type 0, a release date after 2000, so that Linux trusts PCI
 * mechanism #1 without finding a host bridge), system information (type 1)
 * and the end marker. Written into a buffer that stands for guest memory
 * at `base`, in the 0xf0000 segment where Linux's dmi_scan looks. Pure:
 * unit-tested by parsing.
 */
#ifndef VMM_SMBIOS_H
#define VMM_SMBIOS_H

#include <stddef.h>
#include <stdint.h>

#define SMBIOS_BIOS_DATE "01/01/2026"   /* mm/dd/yyyy, as type 0 has it */

/* Bytes smbios_build() needs. */
size_t smbios_size(void);
/*
 * The entry point at buf (base, 16-byte aligned), the structures behind it.
 * Returns the bytes used, or 0 if len is too small.
 */
size_t smbios_build(uint8_t *buf, size_t len, uint64_t base);

#endif
