/* SPDX-License-Identifier: MIT */
/* The PC machine's ACPI tables (acpi.h). Offsets are those of ACPI 6.4. */
#include "acpi.h"

#include <string.h>

#include "fwtable.h"

#define RSDP_LEN        36u
#define SDT_HEADER      36u
#define XSDT_LEN        (SDT_HEADER + 2 * 8u)
#define FADT_LEN        276u
#define MADT_FIXED      44u
#define MADT_LAPIC_LEN  8u
#define MADT_X2APIC_LEN 16u
#define MADT_IOAPIC_LEN 12u
#define MADT_ISO_LEN    10u
#define MADT_NMI_LEN    6u
#define MADT_X2NMI_LEN  12u

#define FADT_HW_REDUCED     (1u << 20)
#define FADT_RESET_REG_SUP  (1u << 10)
#define FADT_BOOT_NO_VGA    (1u << 2)   /* IAPC_BOOT_ARCH: VGA not present */
#define GAS_SYSTEM_IO       1u

/* Name (_S5, Package (4) { 5, 5, 0, 0 }), hand-assembled AML. */
static const uint8_t dsdt_aml[] = {
	0x08, '_', 'S', '5', '_',               /* NameOp "_S5_" */
	0x12, 0x08, 0x04,                       /* PackageOp, PkgLength 8, 4 elements */
	0x0a, ACPI_SLEEP_TYPE_S5,               /* BytePrefix: SLP_TYPa */
	0x0a, ACPI_SLEEP_TYPE_S5,               /* BytePrefix: SLP_TYPb */
	0x00, 0x00,                             /* Zero, Zero */
};

#define DSDT_LEN (SDT_HEADER + sizeof(dsdt_aml))

static size_t align16(size_t n)
{
	return (n + 15) & ~(size_t)15;
}

/* Local APIC IDs up to 254 have a type-0 entry; 255 is broadcast: x2APIC. */
static size_t madt_len(unsigned cpus)
{
	size_t n = MADT_FIXED + MADT_IOAPIC_LEN + MADT_ISO_LEN + MADT_NMI_LEN;

	for (unsigned i = 0; i < cpus; i++)
		n += i < 255 ? MADT_LAPIC_LEN : MADT_X2APIC_LEN;
	return n + (cpus > 255 ? MADT_X2NMI_LEN : 0);
}

/* Where each table starts, from the RSDP's offset 0. */
struct layout {
	size_t xsdt, fadt, dsdt, madt, end;
};

static struct layout lay_out(unsigned cpus)
{
	struct layout l;

	l.xsdt = align16(RSDP_LEN);
	l.fadt = align16(l.xsdt + XSDT_LEN);
	l.dsdt = align16(l.fadt + FADT_LEN);
	l.madt = align16(l.dsdt + DSDT_LEN);
	l.end = l.madt + madt_len(cpus);
	return l;
}

size_t acpi_size(unsigned cpus)
{
	return lay_out(cpus).end;
}

static void header(uint8_t *t, const char *sig, uint32_t len, uint8_t rev)
{
	memcpy(t, sig, 4);
	fwtable_put32(t + 4, len);
	t[8] = rev;
	memcpy(t + 10, "VMM   ", 6);
	memcpy(t + 16, "VMMPC   ", 8);
	fwtable_put32(t + 24, 1);               /* OEM revision */
	memcpy(t + 28, "VMM ", 4);              /* creator */
	fwtable_put32(t + 32, 1);
}

static void seal(uint8_t *t, size_t len)
{
	t[9] = 0;
	t[9] = fwtable_checksum(t, len);
}

static void rsdp(uint8_t *p, uint64_t xsdt)
{
	memcpy(p, "RSD PTR ", 8);
	memcpy(p + 9, "VMM   ", 6);
	p[15] = 2;                               /* ACPI 2.0+: the XSDT */
	fwtable_put32(p + 20, RSDP_LEN);
	fwtable_put64(p + 24, xsdt);
	p[8] = fwtable_checksum(p, 20);
	p[32] = fwtable_checksum(p, RSDP_LEN);
}

/* A Generic Address Structure for one I/O port of `bytes` bytes. */
static void gas_io(uint8_t *g, uint16_t port, unsigned bytes)
{
	g[0] = GAS_SYSTEM_IO;
	g[1] = (uint8_t)(bytes * 8);            /* register bit width */
	g[2] = 0;                               /* bit offset */
	g[3] = (uint8_t)bytes;                  /* access size: 1 byte, 2 word... */
	fwtable_put64(g + 4, port);
}

static void fadt(uint8_t *t, uint64_t dsdt)
{
	header(t, "FACP", FADT_LEN, 6);
	fwtable_put32(t + 40, (uint32_t)dsdt);
	fwtable_put16(t + 109, FADT_BOOT_NO_VGA);
	fwtable_put32(t + 112, FADT_HW_REDUCED | FADT_RESET_REG_SUP);
	gas_io(t + 116, ACPI_RESET_PORT, 1);
	t[128] = ACPI_RESET_VALUE;
	t[131] = 4;                             /* FADT minor version: 6.4 */
	fwtable_put64(t + 140, dsdt);
	gas_io(t + 244, ACPI_SLEEP_CONTROL_PORT, 1);
	gas_io(t + 256, ACPI_SLEEP_STATUS_PORT, 1);
	memcpy(t + 268, "VMM     ", 8);         /* hypervisor vendor identity */
	seal(t, FADT_LEN);
}

static size_t madt_cpu(uint8_t *e, unsigned cpu)
{
	if (cpu < 255) {
		e[0] = 0;                       /* processor local APIC */
		e[1] = MADT_LAPIC_LEN;
		e[2] = (uint8_t)cpu;            /* ACPI processor UID */
		e[3] = (uint8_t)cpu;            /* APIC ID */
		fwtable_put32(e + 4, 1);        /* enabled */
		return MADT_LAPIC_LEN;
	}
	e[0] = 9;                               /* processor local x2APIC */
	e[1] = MADT_X2APIC_LEN;
	fwtable_put32(e + 4, cpu);
	fwtable_put32(e + 8, 1);
	fwtable_put32(e + 12, cpu);
	return MADT_X2APIC_LEN;
}

static void madt(uint8_t *t, unsigned cpus)
{
	size_t len = madt_len(cpus), off = MADT_FIXED;
	uint8_t *e;

	header(t, "APIC", (uint32_t)len, 5);
	fwtable_put32(t + 36, ACPI_LAPIC_ADDR);
	fwtable_put32(t + 40, 1);               /* PCAT_COMPAT: the 8259s exist */
	for (unsigned i = 0; i < cpus; i++)
		off += madt_cpu(t + off, i);
	e = t + off;
	e[0] = 1;                               /* I/O APIC */
	e[1] = MADT_IOAPIC_LEN;
	e[2] = ACPI_IOAPIC_ID;
	fwtable_put32(e + 4, ACPI_IOAPIC_ADDR);
	fwtable_put32(e + 8, 0);                /* GSI base */
	e += MADT_IOAPIC_LEN;
	e[0] = 2;                               /* interrupt source override */
	e[1] = MADT_ISO_LEN;
	e[2] = 0;                               /* ISA */
	e[3] = 0;                               /* IRQ 0, the PIT... */
	fwtable_put32(e + 4, 2);                /* ...is GSI 2 */
	fwtable_put16(e + 8, 0);                /* conforms to the bus: edge, high */
	e += MADT_ISO_LEN;
	e[0] = 4;                               /* local APIC NMI: LINT1 of all */
	e[1] = MADT_NMI_LEN;
	e[2] = 0xff;
	fwtable_put16(e + 3, 0);
	e[5] = 1;
	if (cpus > 255) {
		e += MADT_NMI_LEN;
		e[0] = 0x0a;                    /* local x2APIC NMI: all */
		e[1] = MADT_X2NMI_LEN;
		fwtable_put32(e + 4, 0xffffffffu);
		e[8] = 1;
	}
	seal(t, len);
}

size_t acpi_build(uint8_t *buf, size_t len, uint64_t base, unsigned cpus)
{
	struct layout l = lay_out(cpus);

	if (len < l.end)
		return 0;
	memset(buf, 0, l.end);
	header(buf + l.xsdt, "XSDT", XSDT_LEN, 1);
	fwtable_put64(buf + l.xsdt + SDT_HEADER, base + l.fadt);
	fwtable_put64(buf + l.xsdt + SDT_HEADER + 8, base + l.madt);
	seal(buf + l.xsdt, XSDT_LEN);
	fadt(buf + l.fadt, base + l.dsdt);
	header(buf + l.dsdt, "DSDT", DSDT_LEN, 2);
	memcpy(buf + l.dsdt + SDT_HEADER, dsdt_aml, sizeof(dsdt_aml));
	seal(buf + l.dsdt, DSDT_LEN);
	madt(buf + l.madt, cpus);
	rsdp(buf, base + l.xsdt);
	return l.end;
}
