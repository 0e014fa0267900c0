/* SPDX-License-Identifier: MIT */
/* The PC machine's MP table (mptable.h), after the MP specification 1.4. */
#include "mptable.h"

#include <string.h>

#include "acpi.h"
#include "fwtable.h"

#define MPF_LEN         16u
#define MPC_HEADER      44u
#define MPC_CPU_LEN     20u
#define MPC_BUS_LEN     8u
#define MPC_IOAPIC_LEN  8u
#define MPC_INT_LEN     8u
#define ISA_IRQS        16u
/* Every ISA IRQ but 2 (the cascade), and LINT0 and LINT1. */
#define MPC_INTS        (ISA_IRQS - 1u)
#define MPC_LINTS       2u

enum { MP_PROCESSOR, MP_BUS, MP_IOAPIC, MP_INTSRC, MP_LINTSRC };
enum { MP_INT, MP_NMI, MP_SMI, MP_EXTINT };

#define CPU_ENABLED     0x01u
#define CPU_BSP         0x02u
#define LAPIC_VERSION   0x14u
#define IOAPIC_VERSION  0x11u

static size_t config_len(unsigned cpus)
{
	return MPC_HEADER + cpus * MPC_CPU_LEN + MPC_BUS_LEN + MPC_IOAPIC_LEN +
	       (MPC_INTS + MPC_LINTS) * MPC_INT_LEN;
}

size_t mptable_size(unsigned cpus)
{
	return MPF_LEN + config_len(cpus);
}

static uint8_t *processor(uint8_t *e, unsigned cpu)
{
	e[0] = MP_PROCESSOR;
	e[1] = (uint8_t)cpu;
	e[2] = LAPIC_VERSION;
	e[3] = CPU_ENABLED | (cpu == 0 ? CPU_BSP : 0);
	fwtable_put32(e + 4, 0x600);            /* signature: family 6 */
	fwtable_put32(e + 8, 0x201);            /* features: FPU, APIC */
	return e + MPC_CPU_LEN;
}

static uint8_t *interrupt(uint8_t *e, uint8_t type, uint8_t kind, uint8_t irq, uint8_t dest,
			  uint8_t pin)
{
	e[0] = type;
	e[1] = kind;
	fwtable_put16(e + 2, 0);                /* conforms to the bus */
	e[4] = 0;                               /* source bus: ISA */
	e[5] = irq;
	e[6] = dest;                            /* I/O APIC ID, or 0xff: every local APIC */
	e[7] = pin;
	return e + MPC_INT_LEN;
}

static uint8_t *entries(uint8_t *e, unsigned cpus)
{
	for (unsigned i = 0; i < cpus; i++)
		e = processor(e, i);
	e[0] = MP_BUS;
	e[1] = 0;
	memcpy(e + 2, "ISA   ", 6);
	e += MPC_BUS_LEN;
	e[0] = MP_IOAPIC;
	e[1] = ACPI_IOAPIC_ID;
	e[2] = IOAPIC_VERSION;
	e[3] = 1;                               /* usable */
	fwtable_put32(e + 4, ACPI_IOAPIC_ADDR);
	e += MPC_IOAPIC_LEN;
	for (uint8_t irq = 0; irq < ISA_IRQS; irq++)
		if (irq != 2)
			e = interrupt(e, MP_INTSRC, MP_INT, irq, ACPI_IOAPIC_ID, irq ? irq : 2);
	e = interrupt(e, MP_LINTSRC, MP_EXTINT, 0, 0xff, 0);
	return interrupt(e, MP_LINTSRC, MP_NMI, 0, 0xff, 1);
}

size_t mptable_build(uint8_t *buf, size_t len, uint64_t base, unsigned cpus)
{
	size_t clen = config_len(cpus);
	uint8_t *c = buf + MPF_LEN;

	if (cpus > MPTABLE_MAX_CPUS || len < MPF_LEN + clen)
		return 0;
	memset(buf, 0, MPF_LEN + clen);
	memcpy(c, "PCMP", 4);
	fwtable_put16(c + 4, (uint16_t)clen);
	c[6] = 4;                               /* spec revision 1.4 */
	memcpy(c + 8, "VMM     ", 8);
	memcpy(c + 16, "PC          ", 12);
	fwtable_put16(c + 34, (uint16_t)(cpus + 1 + 1 + MPC_INTS + MPC_LINTS));
	fwtable_put32(c + 36, ACPI_LAPIC_ADDR);
	entries(c + MPC_HEADER, cpus);
	c[7] = fwtable_checksum(c, clen);

	memcpy(buf, "_MP_", 4);
	fwtable_put32(buf + 4, (uint32_t)(base + MPF_LEN));
	buf[8] = 1;                             /* length in 16-byte units */
	buf[9] = 4;
	buf[10] = fwtable_checksum(buf, MPF_LEN);
	return MPF_LEN + clen;
}
