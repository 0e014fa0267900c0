/* SPDX-License-Identifier: MIT */
#include "memmap.h"

size_t memmap_build(uint64_t ram_size, struct memmap_entry out[MEMMAP_MAX])
{
	size_t n = 0;

	out[n++] = (struct memmap_entry){ 0, MEMMAP_LOW_END, MEMMAP_RAM };
	out[n++] = (struct memmap_entry){ MEMMAP_LOW_END, MEMMAP_HIGH_BASE - MEMMAP_LOW_END,
					  MEMMAP_RESERVED };
	if (ram_size > MEMMAP_HIGH_BASE)
		out[n++] = (struct memmap_entry){ MEMMAP_HIGH_BASE, ram_size - MEMMAP_HIGH_BASE,
						  MEMMAP_RAM };
	return n;
}
