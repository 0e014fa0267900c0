/* SPDX-License-Identifier: MIT */
/*
 * The ACPI tables of the PC machine (hardware-reduced ACPI 6): RSDP, XSDT,
 * FADT, DSDT and MADT, written into a buffer that stands for guest memory
 * at `base`. The FADT's sleep control, sleep status and reset registers are
 * the I/O ports below (pcio.c answers them); the DSDT holds only _S5, so
 * that Linux's power-off writes SLP_TYP 5 with SLP_EN. The MADT lists one
 * local APIC per vCPU (APIC ID = vCPU index), the I/O APIC at 0xfec00000
 * with GSI base 0, and ISA IRQ 0 on GSI 2. Pure: unit-tested by parsing.
 */
#ifndef VMM_ACPI_H
#define VMM_ACPI_H

#include <stddef.h>
#include <stdint.h>

#define ACPI_SLEEP_CONTROL_PORT 0x600u  /* write SLP_TYP << 2 | SLP_EN */
#define ACPI_SLEEP_STATUS_PORT  0x601u  /* reads 0 */
#define ACPI_SLEEP_TYPE_S5      5u
#define ACPI_SLEEP_TYPE(v)      (((v) >> 2) & 7u)
#define ACPI_SLEEP_ENABLE       0x20u
#define ACPI_RESET_PORT         0xcf9u  /* the FADT's RESET_REG: 0xcf9 itself */
#define ACPI_RESET_VALUE        0x06u

#define ACPI_IOAPIC_ADDR        0xfec00000u
#define ACPI_IOAPIC_ID          0u      /* KVM's I/O APIC resets its ID register to 0 */
#define ACPI_LAPIC_ADDR         0xfee00000u

/* Bytes acpi_build() needs for `cpus` vCPUs. */
size_t acpi_size(unsigned cpus);
/*
 * Writes the tables to buf (guest-physical base, 16-byte aligned), the RSDP
 * first, so that a scan of the 0xe0000 segment finds it at base. Returns
 * the bytes used, or 0 if len is less than acpi_size(cpus).
 */
size_t acpi_build(uint8_t *buf, size_t len, uint64_t base, unsigned cpus);

#endif
