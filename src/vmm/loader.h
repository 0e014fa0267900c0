/* SPDX-License-Identifier: MIT */
/* Guest image rules and loading (flat binary at BOOT_IMAGE_ADDR). */
#ifndef VMM_LOADER_H
#define VMM_LOADER_H

#include <stddef.h>
#include <stdint.h>

/* 0 if an image of `size` bytes fits; else -1 with a one-line reason. */
int loader_check_size(uint64_t size, uint64_t ram_size, unsigned cpus,
		      char *err, size_t errlen);
/*
 * Reads the image at `path` into guest memory `mem` (ram_size bytes) at
 * BOOT_IMAGE_ADDR. 0 and *size on success; otherwise a one-line reason
 * naming the file and LOADER_BAD_IMAGE (empty, too big: its data is wrong)
 * or LOADER_NO_INPUT (missing, unreadable, not a regular file).
 */
enum { LOADER_BAD_IMAGE = -1, LOADER_NO_INPUT = -2 };
int loader_load(const char *path, uint8_t *mem, uint64_t ram_size, unsigned cpus,
		uint64_t *size, char *err, size_t errlen);

#endif
