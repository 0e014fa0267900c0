/* SPDX-License-Identifier: MIT */
/* Little-endian stores and the byte checksum that ACPI and MP tables share. */
#ifndef VMM_FWTABLE_H
#define VMM_FWTABLE_H

#include <stddef.h>
#include <stdint.h>

static inline void fwtable_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void fwtable_put32(uint8_t *p, uint32_t v)
{
	fwtable_put16(p, (uint16_t)v);
	fwtable_put16(p + 2, (uint16_t)(v >> 16));
}

static inline void fwtable_put64(uint8_t *p, uint64_t v)
{
	fwtable_put32(p, (uint32_t)v);
	fwtable_put32(p + 4, (uint32_t)(v >> 32));
}

/* The byte that makes p[0..len) sum to zero, given that it is now 0 in there. */
static inline uint8_t fwtable_checksum(const uint8_t *p, size_t len)
{
	uint8_t sum = 0;

	for (size_t i = 0; i < len; i++)
		sum = (uint8_t)(sum + p[i]);
	return (uint8_t)-sum;
}

#endif
