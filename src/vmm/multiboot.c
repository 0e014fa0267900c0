/* SPDX-License-Identifier: MIT */
#include "multiboot.h"

#include <stdio.h>
#include <string.h>

#include "bytes.h"
#include "elf.h"
#include "memmap.h"

/* Requirements (bits 0-15) vmm meets: page-aligned modules, memory info. */
#define MET (MULTIBOOT_PAGE_ALIGN | MULTIBOOT_MEMORY_INFO)

int multiboot_parse(const uint8_t *buf, size_t len, uint32_t offset,
		    struct multiboot_header *h, char *err, size_t errlen)
{
	const uint8_t *p = buf + offset;

	*h = (struct multiboot_header){ .offset = offset, .flags = get32(p + 4) };
	if (h->flags & 0xffff & ~MET) {
		snprintf(err, errlen, "its multiboot header requires%s flags 0x%x that vmm does not offer",
			 h->flags & MULTIBOOT_VIDEO_MODE ? " a video mode (bit 2) among" : "",
			 h->flags & 0xffff & ~MET);
		return -1;
	}
	if (!(h->flags & MULTIBOOT_AOUT_KLUDGE))
		return 0;
	if (len < 32 || offset > len - 32) {
		snprintf(err, errlen, "its multiboot header's address fields are truncated");
		return -1;
	}
	h->header_addr = get32(p + 12);
	h->load_addr = get32(p + 16);
	h->load_end_addr = get32(p + 20);
	h->bss_end_addr = get32(p + 24);
	h->entry_addr = get32(p + 28);
	return 0;
}

/* The a.out kludge: [load_addr, load_end_addr) from the file, zeros to bss_end_addr. */
static int load_kludge(const uint8_t *buf, size_t len, const struct multiboot_header *h,
		       uint8_t *mem, uint64_t low, uint64_t ram_size, uint64_t *end,
		       char *err, size_t errlen)
{
	uint64_t start, size, top;

	if (h->header_addr < h->load_addr || h->header_addr - h->load_addr > h->offset) {
		snprintf(err, errlen, "its multiboot header_addr 0x%x lies before load_addr 0x%x or the file's start",
			 h->header_addr, h->load_addr);
		return -1;
	}
	start = h->offset - (h->header_addr - h->load_addr);
	size = h->load_end_addr ? (uint64_t)h->load_end_addr - h->load_addr : len - start;
	top = h->bss_end_addr ? h->bss_end_addr : (uint64_t)h->load_addr + size;
	if (h->load_end_addr && h->load_end_addr < h->load_addr) {
		snprintf(err, errlen, "its multiboot load_end_addr 0x%x lies below load_addr 0x%x",
			 h->load_end_addr, h->load_addr);
		return -1;
	}
	if (size > len - start) {
		snprintf(err, errlen, "its multiboot load range (0x%llx bytes from file offset 0x%llx) lies past the end of the file (%zu bytes)",
			 (unsigned long long)size, (unsigned long long)start, len);
		return -1;
	}
	if (top < h->load_addr + size) {
		snprintf(err, errlen, "its multiboot bss_end_addr 0x%x lies below the loaded end", h->bss_end_addr);
		return -1;
	}
	if (h->load_addr < low || top > ram_size) {
		snprintf(err, errlen, "its multiboot load range 0x%x-0x%llx lies outside RAM above 0x%llx (%lluM); give more with -m if it is below 4G",
			 h->load_addr, (unsigned long long)top, (unsigned long long)low,
			 (unsigned long long)(ram_size >> 20));
		return -1;
	}
	memcpy(mem + h->load_addr, buf + start, size);
	memset(mem + h->load_addr + size, 0, top - h->load_addr - size);
	*end = top;
	return 0;
}

int multiboot_load(const uint8_t *buf, size_t len, const struct multiboot_header *h,
		   uint8_t *mem, uint64_t low, uint64_t ram_size, uint32_t *entry,
		   uint64_t *end, char *err, size_t errlen)
{
	struct elf_file e;

	if (h->flags & MULTIBOOT_AOUT_KLUDGE) {
		*entry = h->entry_addr;
		return load_kludge(buf, len, h, mem, low, ram_size, end, err, errlen);
	}
	if (!elf_is_elf(buf, len)) {
		snprintf(err, errlen, "its multiboot header gives no load addresses (flag 16) and it is not an ELF file");
		return -1;
	}
	if (elf_parse(buf, len, &e, err, errlen))
		return -1;
	if (e.entry > UINT32_MAX) {
		snprintf(err, errlen, "its ELF entry 0x%llx lies above 4G", (unsigned long long)e.entry);
		return -1;
	}
	*entry = (uint32_t)e.entry;
	return elf_load(&e, mem, low, ram_size, end, err, errlen);
}

void multiboot_build_info(uint8_t *mem, uint32_t addr, const struct multiboot_info_args *a)
{
	struct memmap_entry map[MEMMAP_MAX];
	size_t n = memmap_build(a->ram_size, map);
	uint8_t *mi = mem + addr;
	uint32_t flags = MULTIBOOT_INFO_MEMORY | MULTIBOOT_INFO_MEM_MAP | MULTIBOOT_INFO_LOADER_NAME;

	memset(mi, 0, MULTIBOOT_AREA);
	put32(mi + 4, MEMMAP_LOW_END >> 10);                   /* mem_lower, KiB */
	put32(mi + 8, (uint32_t)((a->ram_size - MEMMAP_HIGH_BASE) >> 10)); /* mem_upper */
	if (a->cmdline_addr) {
		flags |= MULTIBOOT_INFO_CMDLINE;
		put32(mi + 16, a->cmdline_addr);
	}
	if (a->module_size) {
		flags |= MULTIBOOT_INFO_MODS;
		put32(mi + 20, 1);
		put32(mi + 24, addr + MULTIBOOT_MODS);
		put32(mi + MULTIBOOT_MODS, a->module_addr);
		put32(mi + MULTIBOOT_MODS + 4, a->module_addr + a->module_size);
		put32(mi + MULTIBOOT_MODS + 8, addr + MULTIBOOT_STRINGS + 8);
		memcpy(mi + MULTIBOOT_STRINGS + 8, "initrd", 7);
	}
	put32(mi + 44, (uint32_t)(n * 24));                     /* mmap_length */
	put32(mi + 48, addr + MULTIBOOT_MMAP);
	for (size_t i = 0; i < n; i++) {
		uint8_t *e = mi + MULTIBOOT_MMAP + i * 24;

		put32(e, 20);                                   /* size, not counting itself */
		put64le(e + 4, map[i].addr);
		put64le(e + 12, map[i].size);
		put32(e + 20, map[i].type);
	}
	memcpy(mi + MULTIBOOT_STRINGS, "vmm", 4);
	put32(mi + 64, addr + MULTIBOOT_STRINGS);               /* boot_loader_name */
	put32(mi, flags);
}
