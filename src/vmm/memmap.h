/* SPDX-License-Identifier: MIT */
/*
 * The PC machine's memory map (e820 style), the one table the Linux zero
 * page, PVH's hvm_start_info and the multiboot mmap are all built from.
 */
#ifndef VMM_MEMMAP_H
#define VMM_MEMMAP_H

#include <stddef.h>
#include <stdint.h>

#define MEMMAP_RAM       1u  /* e820 / multiboot / Xen: usable RAM */
#define MEMMAP_RESERVED  2u

/* Where the legacy hole starts: the EBDA's usual place, 639 KiB. */
#define MEMMAP_LOW_END   0x9fc00u
#define MEMMAP_HIGH_BASE 0x100000u

struct memmap_entry {
	uint64_t addr;
	uint64_t size;
	uint32_t type;
};

#define MEMMAP_MAX 3

/*
 * RAM [0, 0x9fc00), reserved [0x9fc00, 1 MiB) (the firmware tables live in
 * 0xe0000-0xfffff), RAM [1 MiB, ram_size). Returns the entries written
 * (MEMMAP_MAX at most); ram_size is at least 1 MiB.
 */
size_t memmap_build(uint64_t ram_size, struct memmap_entry out[MEMMAP_MAX]);

#endif
