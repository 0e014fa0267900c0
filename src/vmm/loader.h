/* SPDX-License-Identifier: MIT */
/*
 * Guest images from files: read, recognised (image.c) and placed in guest
 * RAM, a flat image byte for byte at BOOT_IMAGE_ADDR, a kernel through
 * kernel.c. Errors are one line naming the file, and a LOADER_* status.
 */
#ifndef VMM_LOADER_H
#define VMM_LOADER_H

#include <stddef.h>
#include <stdint.h>

#include "boot.h"
#include "image.h"
#include "kernel.h"

/*
 * LOADER_BAD_IMAGE: the image's data is wrong, of a kind vmm does not boot,
 * or does not fit (65). LOADER_NO_INPUT: missing, unreadable, not a regular
 * file (66). LOADER_USAGE: an option that does not go with the image (64).
 */
enum { LOADER_BAD_IMAGE = -1, LOADER_NO_INPUT = -2, LOADER_USAGE = -3 };
_Static_assert(LOADER_BAD_IMAGE == KERNEL_BAD_IMAGE && LOADER_USAGE == KERNEL_USAGE,
	       "kernel.c's results are loader statuses");

/* 0 if a flat image of `size` bytes fits; else -1 with a one-line reason. */
int loader_check_size(uint64_t size, uint64_t ram_size, unsigned cpus,
		      char *err, size_t errlen);
/*
 * Reads the flat image at `path` into guest memory `mem` (ram_size bytes)
 * at BOOT_IMAGE_ADDR. 0 and *size on success; otherwise a LOADER_* status.
 */
int loader_load(const char *path, uint8_t *mem, uint64_t ram_size, unsigned cpus,
		uint64_t *size, char *err, size_t errlen);

struct loader_image {
	const char *path;
	uint8_t *buf;            /* the file, or only its head when larger than RAM */
	size_t len;
	uint64_t file_size;
	struct image_info info;
	const char *initrd_path; /* NULL: no --initrd */
	uint8_t *initrd;
	size_t initrd_len;
};

/*
 * Reads the image (and the initrd) and recognises it; anything vmm does
 * not boot is refused here. 0, or a LOADER_* status with one line;
 * loader_close() in every case.
 */
int loader_open(struct loader_image *img, const char *path, const char *initrd_path,
		uint64_t ram_size, char *err, size_t errlen);
/* MACHINE_BARE for a flat image, MACHINE_PC for a kernel. */
enum machine loader_machine(const struct loader_image *img);
/*
 * Puts the image into mem as l (RAM, vCPUs, --append) says; fills
 * l->image_size, l->machine, l->entry and *kb (kernels). 0 or a status.
 */
int loader_place(const struct loader_image *img, uint8_t *mem, struct boot_layout *l,
		 struct kernel_boot *kb, char *err, size_t errlen);
void loader_close(struct loader_image *img);

#endif
