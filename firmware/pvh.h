/* SPDX-License-Identifier: MIT */
/*
 * The PVH boot ABI (Xen's hvm_start_info, as QEMU, Firecracker and
 * cloud-hypervisor implement it) and the glue between pvh.S and pvh.c.
 * docs/boot-protocol.md, "PVH entry", describes the path as a whole.
 */
#ifndef FW_PVH_H
#define FW_PVH_H

#define XEN_ELFNOTE_PHYS32_ENTRY 18
#define HVM_START_MAGIC          0x336ec578u
#define HVM_MEMMAP_TYPE_RAM      1u

/* Transition GDT (pvh.S). 0x08 and 0x10 are the VMM's boot selectors. */
#define PVH_SEL_CODE64  0x08
#define PVH_SEL_DATA    0x10
#define PVH_SEL_CODE32  0x18

/*
 * Where the AP trampoline is copied: just above the boot_info array, 4 KiB
 * aligned as a SIPI vector requires, and below the EBDA.
 */
#define PVH_TRAMPOLINE_ADDR 0x18000

/* struct boot_info offsets pvh.S needs; pvh.c asserts them. */
#define BI_REGION_BASE  48
#define BI_REGION_SIZE  56
#define BI_SIZE_SHIFT   8

#ifndef __ASSEMBLER__
#include <stdint.h>

struct hvm_start_info {
	uint32_t magic;
	uint32_t version;
	uint32_t flags;
	uint32_t nr_modules;
	uint64_t modlist_paddr;
	uint64_t cmdline_paddr;
	uint64_t rsdp_paddr;
	/* Version 1 and later. */
	uint64_t memmap_paddr;
	uint32_t memmap_entries;
	uint32_t reserved;
};

struct hvm_memmap_table_entry {
	uint64_t addr;
	uint64_t size;
	uint32_t type;
	uint32_t reserved;
};

_Static_assert(sizeof(struct hvm_start_info) == 56, "Xen ABI");
_Static_assert(sizeof(struct hvm_memmap_table_entry) == 24, "Xen ABI");

/* pvh.S */
extern char pvh_tramp_start[], pvh_tramp_end[];
extern uint32_t pvh_ap_next;   /* next AP index; starts at 1 */
extern uint32_t pvh_ap_go;     /* set once the APs' boot_info is final */

/* pvh.c: called by pvh.S on the BSP in long mode; returns its boot_info. */
struct boot_info *pvh_main(uint32_t start_info_paddr);
#endif

#endif
