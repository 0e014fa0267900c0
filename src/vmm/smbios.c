/* SPDX-License-Identifier: MIT */
/* The PC machine's SMBIOS tables (smbios.h), after DSP0134 2.8. */
#include "smbios.h"

#include <string.h>

#include "fwtable.h"

#define EP_LEN      0x1fu
#define EP_SPACE    0x20u   /* the entry point, padded to the structures */
#define TYPE0_LEN   0x18u
#define TYPE1_LEN   0x1bu
#define END_LEN     4u

/* Each structure's formatted part is followed by its strings, then a NUL. */
static const char type0_strings[] = "vmm\0" "1\0" SMBIOS_BIOS_DATE "\0";
static const char type1_strings[] = "vmm\0" "PC\0";

#define TABLE_LEN (TYPE0_LEN + sizeof(type0_strings) + TYPE1_LEN + sizeof(type1_strings) + \
		   END_LEN + 2)

size_t smbios_size(void)
{
	return EP_SPACE + TABLE_LEN;
}

static uint8_t *header(uint8_t *s, uint8_t type, uint8_t len, uint16_t handle)
{
	s[0] = type;
	s[1] = len;
	fwtable_put16(s + 2, handle);
	return s;
}

/* Copies a structure's strings (each with its NUL) and the NUL that ends them. */
static uint8_t *strings(uint8_t *s, const char *str, size_t len)
{
	memcpy(s, str, len);
	return s + len;	/* sizeof() of the literal counts the final NUL */
}

static uint8_t *bios_information(uint8_t *s)
{
	header(s, 0, TYPE0_LEN, 0);
	s[4] = 1;                               /* vendor: string 1 */
	s[5] = 2;                               /* version */
	fwtable_put16(s + 6, 0xe800);           /* starting segment */
	s[8] = 3;                               /* release date */
	fwtable_put64(s + 10, 1u << 3);         /* characteristics not supported */
	s[19] = 1u << 4;                        /* extension byte 2: a virtual machine */
	s[20] = 1;                              /* BIOS release 1.0 */
	s[22] = s[23] = 0xff;                   /* no embedded controller */
	return strings(s + TYPE0_LEN, type0_strings, sizeof(type0_strings));
}

static uint8_t *system_information(uint8_t *s)
{
	header(s, 1, TYPE1_LEN, 1);
	s[4] = 1;                               /* manufacturer */
	s[5] = 2;                               /* product name */
	s[24] = 6;                              /* woken by the power switch */
	return strings(s + TYPE1_LEN, type1_strings, sizeof(type1_strings));
}

size_t smbios_build(uint8_t *buf, size_t len, uint64_t base)
{
	uint8_t *t = buf + EP_SPACE, *s;

	if (len < smbios_size())
		return 0;
	memset(buf, 0, smbios_size());
	s = system_information(bios_information(t));
	header(s, 127, END_LEN, 2);             /* end of table, no strings */
	memcpy(buf, "_SM_", 4);
	buf[5] = EP_LEN;
	buf[6] = 2;
	buf[7] = 8;
	fwtable_put16(buf + 8, TYPE0_LEN + sizeof(type0_strings));	/* largest structure */
	memcpy(buf + 16, "_DMI_", 5);
	fwtable_put16(buf + 22, TABLE_LEN);
	fwtable_put32(buf + 24, (uint32_t)(base + EP_SPACE));
	fwtable_put16(buf + 28, 3);
	buf[30] = 0x28;                         /* BCD revision 2.8 */
	buf[21] = fwtable_checksum(buf + 16, EP_LEN - 16);
	buf[4] = fwtable_checksum(buf, EP_LEN);
	return smbios_size();
}
