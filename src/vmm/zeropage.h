/* SPDX-License-Identifier: MIT */
/*
 * Linux's zero page (struct boot_params, Documentation/arch/x86/boot.rst
 * and zero-page.rst) for the 64-bit entry: the setup header, the e820 map
 * from memmap.c, the command line and the initrd.
 */
#ifndef VMM_ZEROPAGE_H
#define VMM_ZEROPAGE_H

#include <stddef.h>
#include <stdint.h>

#define ZP_SIZE              4096u
#define ZP_EXT_RAMDISK_IMAGE 0x0c0
#define ZP_EXT_RAMDISK_SIZE  0x0c4
#define ZP_EXT_CMD_LINE_PTR  0x0c8
#define ZP_E820_ENTRIES      0x1e8
#define ZP_HDR               0x1f1  /* the setup header starts here ... */
#define ZP_HDR_MAX_END       0x280  /* ... and ends before this */
#define ZP_BOOT_FLAG         0x1fe
#define ZP_HEADER            0x202  /* "HdrS" */
#define ZP_VERSION           0x206
#define ZP_TYPE_OF_LOADER    0x210
#define ZP_LOADFLAGS         0x211
#define ZP_RAMDISK_IMAGE     0x218
#define ZP_RAMDISK_SIZE      0x21c
#define ZP_CMD_LINE_PTR      0x228
#define ZP_INITRD_ADDR_MAX   0x22c
#define ZP_XLOADFLAGS        0x236
#define ZP_CMDLINE_SIZE      0x238
#define ZP_PAYLOAD_OFFSET    0x248
#define ZP_PAYLOAD_LENGTH    0x24c
#define ZP_E820_TABLE        0x2d0

#define ZP_LOADED_HIGH       0x01  /* loadflags */
#define ZP_CAN_USE_HEAP      0x80
#define ZP_XLF_KERNEL_64     0x01  /* xloadflags */
#define ZP_LOADER_UNDEFINED  0xff  /* type_of_loader: a loader with no ID */

/* Linux 6.1's COMMAND_LINE_SIZE less its NUL: the bound without a header. */
#define ZP_DEFAULT_CMDLINE_SIZE 2047u

struct zeropage_args {
	const uint8_t *hdr;   /* the image's setup header from 0x1f1, or NULL */
	size_t hdr_len;       /* its bytes */
	uint64_t ram_size;
	uint32_t cmdline_addr;
	uint32_t cmdline_size;
	uint64_t initrd_addr, initrd_size;
};

/*
 * Writes the 4 KiB zero page at zp: zeros, the image's setup header (or,
 * without one, a protocol 2.15 header of Linux's fields), then the
 * loader's fields. Addresses above 4 GiB go to the ext_ fields.
 */
void zeropage_build(uint8_t *zp, const struct zeropage_args *a);

#endif
