/* SPDX-License-Identifier: MIT */
/*
 * What a guest image is, told by its content alone: a flat image for the
 * VMM's own boot protocol (the default: anything not recognised below), a
 * Linux bzImage, an ELF kernel with a PVH note, a multiboot (v1) kernel, or
 * a file of some other known kind that vmm does not boot.
 */
#ifndef VMM_IMAGE_H
#define VMM_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum image_kind {
	IMAGE_FLAT,
	IMAGE_BZIMAGE,
	IMAGE_PVH,
	IMAGE_MULTIBOOT,
	IMAGE_FOREIGN,   /* not bootable by vmm: info.what says what it is */
	IMAGE_BAD,       /* a kernel format with a broken header: info.what says how */
};

#define XEN_ELFNOTE_GUEST_OS      6
#define XEN_ELFNOTE_PHYS32_ENTRY  18

/* Multiboot v1: the header lies in the first 8 KiB, 4-byte aligned. */
#define MULTIBOOT_MAGIC        0x1badb002u
#define MULTIBOOT_SEARCH       8192u

struct image_info {
	enum image_kind kind;
	char what[200];          /* IMAGE_FOREIGN, IMAGE_BAD: one line, no file name */
	uint32_t pvh_entry;      /* IMAGE_PVH: XEN_ELFNOTE_PHYS32_ENTRY */
	bool linux_elf;          /* IMAGE_PVH: Xen GUEST_OS note "linux" */
	uint32_t mb_offset;      /* IMAGE_MULTIBOOT: the header's file offset */
};

void image_detect(const uint8_t *buf, size_t len, struct image_info *info);
/* "flat image", "Linux bzImage", "PVH ELF kernel", "multiboot kernel". */
const char *image_kind_name(enum image_kind kind);
/* Offset of a valid multiboot v1 header in the first 8 KiB, or -1. */
long image_multiboot_offset(const uint8_t *buf, size_t len);

/* What vmm boots, for the line that refuses anything else. */
#define IMAGE_BOOTS "vmm boots flat images (guest.bin), Linux bzImages, PVH ELF kernels and multiboot (v1) kernels"

#endif
