/* SPDX-License-Identifier: MIT */
/*
 * Linux bzImages (Documentation/arch/x86/boot.rst): the setup header, and
 * the payload, unpacked to the vmlinux ELF that vmm loads and enters in
 * long mode itself (docs/boot-protocol.md says why not the image's own
 * 64-bit entry).
 */
#ifndef VMM_BZIMAGE_H
#define VMM_BZIMAGE_H

#include <stddef.h>
#include <stdint.h>

/* Protocol 2.12: xloadflags, and so XLF_KERNEL_64. */
#define BZIMAGE_MIN_VERSION 0x020c

struct bzimage {
	uint16_t version;
	uint32_t setup_size;      /* (setup_sects + 1) * 512: where the kernel starts */
	size_t hdr_len;           /* bytes of setup header from 0x1f1 */
	uint32_t cmdline_size;
	uint32_t initrd_addr_max;
	uint64_t payload_offset;  /* in the file */
	uint32_t payload_length;
};

/* Checks the header; 0 and *bz, or -1 with a one-line reason. */
int bzimage_parse(const uint8_t *buf, size_t len, struct bzimage *bz, char *err, size_t errlen);
/* The payload unpacked (at most max bytes, malloc'd): 0, or -1 with err. */
int bzimage_unpack(const uint8_t *buf, const struct bzimage *bz, size_t max,
		   uint8_t **vmlinux, size_t *vmlen, char *err, size_t errlen);

#endif
