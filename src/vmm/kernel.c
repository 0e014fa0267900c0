/* SPDX-License-Identifier: MIT */
#include "kernel.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bzimage.h"
#include "elf.h"
#include "multiboot.h"
#include "startinfo.h"
#include "zeropage.h"

#define PAGE 4096ull
#define FOUR_G (1ull << 32)

int kernel_place_initrd(uint64_t ram_size, uint64_t kernel_end, uint64_t max_end,
			uint64_t size, uint64_t *addr, char *err, size_t errlen)
{
	uint64_t top = ram_size < FOUR_G ? ram_size : FOUR_G;
	uint64_t floor = (kernel_end + PAGE - 1) & ~(PAGE - 1);

	if (max_end < top)
		top = max_end;
	if (size > top || ((top - size) & ~(PAGE - 1)) < floor) {
		snprintf(err, errlen, "the initrd (%" PRIu64 " bytes) does not fit between the kernel's end (0x%"
			 PRIx64 ") and 0x%" PRIx64 "; give more with -m", size, kernel_end, top);
		return -1;
	}
	*addr = (top - size) & ~(PAGE - 1);
	return 0;
}

/* The command line at BOOT_PC_CMDLINE_ADDR, if it fits in `max` bytes (NUL excluded). */
static int put_cmdline(const char *cmdline, uint64_t max, const char *whose, uint8_t *mem,
		       char *err, size_t errlen)
{
	size_t n = cmdline ? strlen(cmdline) : 0;

	if (max > BOOT_PC_CMDLINE_SIZE - 1)
		max = BOOT_PC_CMDLINE_SIZE - 1;
	if (n > max) {
		snprintf(err, errlen, "--append: text is %zu bytes, %s takes at most %" PRIu64, n, whose, max);
		return KERNEL_USAGE;
	}
	memset(mem + BOOT_PC_CMDLINE_ADDR, 0, n + 1);
	memcpy(mem + BOOT_PC_CMDLINE_ADDR, cmdline ? cmdline : "", n);
	return 0;
}

/* The initrd above the kernel and below max_end; none is fine. */
static int put_initrd(const struct kernel_args *a, uint8_t *mem, uint64_t ram_size,
		      uint64_t max_end, struct kernel_boot *kb, char *err, size_t errlen)
{
	if (!a->initrd)
		return 0;
	if (kernel_place_initrd(ram_size, kb->kernel_end, max_end, a->initrd_len, &kb->initrd_addr,
				err, errlen))
		return KERNEL_BAD_IMAGE;
	memcpy(mem + kb->initrd_addr, a->initrd, a->initrd_len);
	return 0;
}

/*
 * A Linux vmlinux ELF entered at e_entry in long mode, RSI = the zero page
 * (hdr: the bzImage's setup header, or NULL for an ELF of its own).
 */
static int linux64(const uint8_t *elf, size_t len, const uint8_t *hdr, size_t hdr_len,
		   uint32_t cmdline_size, uint64_t initrd_max, const struct kernel_args *a,
		   uint8_t *mem, uint64_t ram_size, struct kernel_boot *kb, char *err, size_t errlen)
{
	struct elf_file e;
	char why[300];
	int r;

	if (elf_parse(elf, len, &e, why, sizeof(why)) ||
	    elf_load(&e, mem, BOOT_PC_KERNEL_LOW, ram_size, &kb->kernel_end, why, sizeof(why))) {
		snprintf(err, errlen, "%s%s", hdr ? "its unpacked vmlinux: " : "", why);
		return KERNEL_BAD_IMAGE;
	}
	r = put_cmdline(a->cmdline, cmdline_size, "this kernel", mem, err, errlen);
	if (!r)
		r = put_initrd(a, mem, ram_size, initrd_max, kb, err, errlen);
	if (r)
		return r;
	zeropage_build(mem + BOOT_PC_PARAMS_ADDR, &(struct zeropage_args){
		.hdr = hdr, .hdr_len = hdr_len, .ram_size = ram_size,
		.cmdline_addr = BOOT_PC_CMDLINE_ADDR, .cmdline_size = cmdline_size,
		.initrd_addr = kb->initrd_addr, .initrd_size = a->initrd ? a->initrd_len : 0,
	});
	kb->entry = (struct boot_entry){ .mode = BOOT_ENTRY_LONG, .rip = e.entry,
					 .rsi = BOOT_PC_PARAMS_ADDR };
	return 0;
}

static int load_bzimage(const uint8_t *buf, size_t len, const struct kernel_args *a,
			uint8_t *mem, uint64_t ram_size, struct kernel_boot *kb, char *err, size_t errlen)
{
	struct bzimage bz;
	struct image_info inner;
	uint8_t *vmlinux;
	size_t vmlen;
	int r;

	if (bzimage_parse(buf, len, &bz, err, errlen) ||
	    bzimage_unpack(buf, &bz, ram_size, &vmlinux, &vmlen, err, errlen))
		return KERNEL_BAD_IMAGE;
	r = linux64(vmlinux, vmlen, buf + ZP_HDR, bz.hdr_len, bz.cmdline_size,
		    (uint64_t)bz.initrd_addr_max + 1, a, mem, ram_size, kb, err, errlen);
	image_detect(vmlinux, vmlen, &inner);
	kb->linux_kernel = inner.kind == IMAGE_PVH && inner.linux_elf;
	free(vmlinux);
	return r;
}

/* A PVH kernel entered at its 32-bit entry, EBX = hvm_start_info. */
static int load_pvh(const struct image_info *info, const uint8_t *buf, size_t len,
		    const struct kernel_args *a, uint8_t *mem, uint64_t ram_size,
		    struct kernel_boot *kb, char *err, size_t errlen)
{
	struct elf_file e;
	int r;

	if (info->linux_elf) {
		kb->linux_kernel = true;
		return linux64(buf, len, NULL, 0, ZP_DEFAULT_CMDLINE_SIZE, FOUR_G, a, mem, ram_size,
			       kb, err, errlen);
	}
	if (elf_parse(buf, len, &e, err, errlen) ||
	    elf_load(&e, mem, BOOT_PC_KERNEL_LOW, ram_size, &kb->kernel_end, err, errlen))
		return KERNEL_BAD_IMAGE;
	r = put_cmdline(a->cmdline, BOOT_PC_CMDLINE_SIZE - 1, "a PVH kernel", mem, err, errlen);
	if (!r)
		r = put_initrd(a, mem, ram_size, FOUR_G, kb, err, errlen);
	if (r)
		return r;
	startinfo_build(mem, BOOT_PC_PARAMS_ADDR, &(struct startinfo_args){
		.ram_size = ram_size, .cmdline_addr = BOOT_PC_CMDLINE_ADDR,
		.module_addr = kb->initrd_addr, .module_size = a->initrd ? a->initrd_len : 0,
	});
	kb->entry = (struct boot_entry){ .mode = BOOT_ENTRY_PROT32, .rip = info->pvh_entry,
					 .rbx = BOOT_PC_PARAMS_ADDR };
	kb->enables_long_mode = e.is64;
	return 0;
}

/* A multiboot kernel: EAX = the bootloader magic, EBX = the info. */
static int load_multiboot(const struct image_info *info, const uint8_t *buf, size_t len,
			  const struct kernel_args *a, uint8_t *mem, uint64_t ram_size,
			  struct kernel_boot *kb, char *err, size_t errlen)
{
	struct multiboot_header h;
	uint32_t entry;
	int r;

	if (multiboot_parse(buf, len, info->mb_offset, &h, err, errlen) ||
	    multiboot_load(buf, len, &h, mem, BOOT_PC_KERNEL_LOW, ram_size, &entry, &kb->kernel_end,
			   err, errlen))
		return KERNEL_BAD_IMAGE;
	r = put_cmdline(a->cmdline, BOOT_PC_CMDLINE_SIZE - 1, "a multiboot kernel", mem, err, errlen);
	if (!r)
		r = put_initrd(a, mem, ram_size, FOUR_G, kb, err, errlen);
	if (r)
		return r;
	multiboot_build_info(mem, BOOT_PC_PARAMS_ADDR, &(struct multiboot_info_args){
		.ram_size = ram_size, .cmdline_addr = BOOT_PC_CMDLINE_ADDR,
		.module_addr = (uint32_t)kb->initrd_addr,
		.module_size = a->initrd ? (uint32_t)a->initrd_len : 0,
	});
	kb->entry = (struct boot_entry){ .mode = BOOT_ENTRY_PROT32, .rip = entry,
					 .rax = MULTIBOOT_BOOTLOADER_MAGIC, .rbx = BOOT_PC_PARAMS_ADDR };
	/* Whether it goes to long mode cannot be known: kernel_load's caller warns. */
	kb->enables_long_mode = true;
	return 0;
}

int kernel_load(const struct image_info *info, const uint8_t *buf, size_t len,
		const struct kernel_args *a, uint8_t *mem, uint64_t ram_size,
		struct kernel_boot *kb, char *err, size_t errlen)
{
	*kb = (struct kernel_boot){ 0 };
	switch (info->kind) {
	case IMAGE_BZIMAGE:
		return load_bzimage(buf, len, a, mem, ram_size, kb, err, errlen);
	case IMAGE_PVH:
		return load_pvh(info, buf, len, a, mem, ram_size, kb, err, errlen);
	case IMAGE_MULTIBOOT:
		return load_multiboot(info, buf, len, a, mem, ram_size, kb, err, errlen);
	default:
		snprintf(err, errlen, "%s", info->what[0] ? info->what : "it is not a kernel");
		return KERNEL_BAD_IMAGE;
	}
}
