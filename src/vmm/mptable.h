/* SPDX-License-Identifier: MIT */
/*
 * The Intel MultiProcessor Specification 1.4 table of the PC machine, for
 * kernels that find CPUs without ACPI (Linux with acpi=off, many test
 * kernels): the floating pointer, then the configuration table with one
 * processor entry per vCPU (APIC ID = vCPU index, vCPU 0 the BSP), the ISA
 * bus, the I/O APIC (acpi.h's ID and address), an I/O interrupt entry per
 * ISA IRQ (IRQ 0 on INTIN 2, as the MADT's override says) and the local
 * interrupts (ExtINT on LINT0, NMI on LINT1). Pure: unit-tested by parsing.
 */
#ifndef VMM_MPTABLE_H
#define VMM_MPTABLE_H

#include <stddef.h>
#include <stdint.h>

/* At most this many vCPUs fit: processor entries hold an 8-bit APIC ID. */
#define MPTABLE_MAX_CPUS 255u

/* Bytes mptable_build() needs for `cpus` vCPUs. */
size_t mptable_size(unsigned cpus);
/*
 * Writes the floating pointer at buf (guest-physical base, 16-byte
 * aligned) and the configuration table behind it. Returns the bytes used,
 * or 0 if len is too small or cpus above MPTABLE_MAX_CPUS.
 */
size_t mptable_build(uint8_t *buf, size_t len, uint64_t base, unsigned cpus);

#endif
