/* SPDX-License-Identifier: MIT */
/* Little-endian fields of file formats, at any alignment. */
#ifndef VMM_BYTES_H
#define VMM_BYTES_H

#include <stdint.h>
#include <string.h>

static inline uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t get64(const uint8_t *p) { return get32(p) | (uint64_t)get32(p + 4) << 32; }
static inline void put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static inline void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void put64le(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

#endif
