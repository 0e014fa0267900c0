/* SPDX-License-Identifier: MIT */
/*
 * Multiboot (v1) kernels (the Multiboot Specification 0.6.96): the header,
 * loading by the a.out kludge's addresses or the ELF program headers, and
 * the multiboot information structure.
 */
#ifndef VMM_MULTIBOOT_H
#define VMM_MULTIBOOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MULTIBOOT_BOOTLOADER_MAGIC 0x2badb002u
#define MULTIBOOT_PAGE_ALIGN       (1u << 0)
#define MULTIBOOT_MEMORY_INFO      (1u << 1)
#define MULTIBOOT_VIDEO_MODE       (1u << 2)
#define MULTIBOOT_AOUT_KLUDGE      (1u << 16)
/* The info's flags vmm sets. */
#define MULTIBOOT_INFO_MEMORY      (1u << 0)
#define MULTIBOOT_INFO_CMDLINE     (1u << 2)
#define MULTIBOOT_INFO_MODS        (1u << 3)
#define MULTIBOOT_INFO_MEM_MAP     (1u << 6)
#define MULTIBOOT_INFO_LOADER_NAME (1u << 9)

#define MULTIBOOT_INFO_SIZE        0x58u
#define MULTIBOOT_MMAP             0x100u  /* from the info: the mmap ... */
#define MULTIBOOT_MODS             0x800u  /* ... the module list ... */
#define MULTIBOOT_STRINGS          0xc00u  /* ... and the names */
#define MULTIBOOT_AREA             0x1000u

struct multiboot_header {
	uint32_t offset;   /* in the file */
	uint32_t flags;
	uint32_t header_addr, load_addr, load_end_addr, bss_end_addr, entry_addr;
};

/*
 * The header at `offset`: 0, or -1 with a one-line reason (a requirement
 * vmm cannot meet, a truncated a.out kludge).
 */
int multiboot_parse(const uint8_t *buf, size_t len, uint32_t offset,
		    struct multiboot_header *h, char *err, size_t errlen);
/*
 * Loads the kernel into RAM at or above `low`: by the a.out kludge's
 * addresses when its flag is set, else by the ELF program headers. 0 with
 * *entry and *end (highest byte loaded, exclusive), or -1 with err.
 */
int multiboot_load(const uint8_t *buf, size_t len, const struct multiboot_header *h,
		   uint8_t *mem, uint64_t low, uint64_t ram_size, uint32_t *entry,
		   uint64_t *end, char *err, size_t errlen);

struct multiboot_info_args {
	uint64_t ram_size;
	uint32_t cmdline_addr;              /* 0: none */
	uint32_t module_addr, module_size;  /* size 0: none */
};

/* Writes the info, mmap, module list and names at mem + addr. */
void multiboot_build_info(uint8_t *mem, uint32_t addr, const struct multiboot_info_args *a);

#endif
