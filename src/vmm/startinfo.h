/* SPDX-License-Identifier: MIT */
/*
 * PVH's struct hvm_start_info, version 1 (Xen's
 * include/public/arch-x86/hvm/start_info.h): memory map, command line and
 * one module (the initrd).
 */
#ifndef VMM_STARTINFO_H
#define VMM_STARTINFO_H

#include <stdint.h>

#define STARTINFO_MAGIC      0x336ec578u
#define STARTINFO_SIZE       56u
#define STARTINFO_MEMMAP     0x100u  /* from the start_info: the memory map ... */
#define STARTINFO_MODLIST    0x800u  /* ... and the module list */
#define STARTINFO_AREA       0x1000u /* all of it */

struct startinfo_args {
	uint64_t ram_size;
	uint32_t cmdline_addr;            /* 0: none */
	uint64_t module_addr, module_size; /* size 0: none */
};

/* Writes start_info, its memory map and module list at mem + addr. */
void startinfo_build(uint8_t *mem, uint32_t addr, const struct startinfo_args *a);

#endif
