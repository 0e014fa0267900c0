/* SPDX-License-Identifier: MIT */
#include "startinfo.h"

#include <string.h>

#include "bytes.h"
#include "memmap.h"

void startinfo_build(uint8_t *mem, uint32_t addr, const struct startinfo_args *a)
{
	struct memmap_entry map[MEMMAP_MAX];
	size_t n = memmap_build(a->ram_size, map);
	uint8_t *si = mem + addr;

	memset(si, 0, STARTINFO_AREA);
	put32(si, STARTINFO_MAGIC);
	put32(si + 4, 1);                                 /* version */
	if (a->module_size) {
		uint8_t *m = si + STARTINFO_MODLIST;

		put32(si + 12, 1);                        /* nr_modules */
		put64le(si + 16, addr + STARTINFO_MODLIST);
		put64le(m, a->module_addr);
		put64le(m + 8, a->module_size);
	}
	put64le(si + 24, a->cmdline_addr);
	put64le(si + 40, addr + STARTINFO_MEMMAP);        /* memmap_paddr */
	put32(si + 48, (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		uint8_t *e = si + STARTINFO_MEMMAP + i * 24;

		put64le(e, map[i].addr);
		put64le(e + 8, map[i].size);
		put32(e + 16, map[i].type);
	}
}
