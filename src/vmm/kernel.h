/* SPDX-License-Identifier: MIT */
/*
 * Kernel images (bzImage, PVH ELF, multiboot) into guest RAM: the kernel,
 * its command line, the initrd, the boot parameters its protocol passes,
 * and the state vCPU 0 enters it in (docs/boot-protocol.md, "Kernels").
 */
#ifndef VMM_KERNEL_H
#define VMM_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "boot.h"
#include "image.h"

/* kernel_load's results besides 0; loader.h's statuses. */
#define KERNEL_BAD_IMAGE  (-1)   /* the image or initrd is wrong or does not fit */
#define KERNEL_USAGE      (-3)   /* --append is too long for this kernel */

struct kernel_args {
	const char *cmdline;          /* NULL: none */
	const uint8_t *initrd;        /* NULL: none */
	size_t initrd_len;
};

struct kernel_boot {
	struct boot_entry entry;
	/* Entered in 32-bit mode, the kernel must enable long mode itself. */
	bool enables_long_mode;
	/* Linux, by its ELF's Xen GUEST_OS note "linux" (the vmlinux of a bzImage too). */
	bool linux_kernel;
	uint64_t kernel_end;          /* highest kernel byte, exclusive */
	uint64_t initrd_addr;         /* 0: none */
};

/*
 * Loads the kernel `buf` of kind info->kind into mem (ram_size bytes) and
 * fills *kb. 0, or KERNEL_BAD_IMAGE / KERNEL_USAGE with one line in err
 * (without the file's name).
 */
int kernel_load(const struct image_info *info, const uint8_t *buf, size_t len,
		const struct kernel_args *a, uint8_t *mem, uint64_t ram_size,
		struct kernel_boot *kb, char *err, size_t errlen);

/*
 * Where an initrd of `size` bytes goes: the top of RAM below 4 GiB and
 * below max_end (its last byte's bound), page aligned, above kernel_end.
 * 0 and *addr, or -1 with err.
 */
int kernel_place_initrd(uint64_t ram_size, uint64_t kernel_end, uint64_t max_end,
			uint64_t size, uint64_t *addr, char *err, size_t errlen);

#endif
