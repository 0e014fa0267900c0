/* SPDX-License-Identifier: MIT */
#include "zeropage.h"

#include <string.h>

#include "bytes.h"
#include "memmap.h"

static void synthetic_header(uint8_t *zp, uint32_t cmdline_size)
{
	put16(zp + ZP_BOOT_FLAG, 0xaa55);
	memcpy(zp + ZP_HEADER, "HdrS", 4);
	put16(zp + ZP_VERSION, 0x020f);
	put32(zp + ZP_INITRD_ADDR_MAX, 0x7fffffff);
	zp[ZP_XLOADFLAGS] = ZP_XLF_KERNEL_64;
	put32(zp + ZP_CMDLINE_SIZE, cmdline_size);
}

void zeropage_build(uint8_t *zp, const struct zeropage_args *a)
{
	struct memmap_entry map[MEMMAP_MAX];
	size_t n = memmap_build(a->ram_size, map);

	memset(zp, 0, ZP_SIZE);
	if (a->hdr)
		memcpy(zp + ZP_HDR, a->hdr, a->hdr_len < ZP_HDR_MAX_END - ZP_HDR ?
					   a->hdr_len : ZP_HDR_MAX_END - ZP_HDR);
	else
		synthetic_header(zp, a->cmdline_size);
	zp[ZP_TYPE_OF_LOADER] = ZP_LOADER_UNDEFINED;
	/* The 64-bit entry sets up its own heap: CAN_USE_HEAP stays clear. */
	zp[ZP_LOADFLAGS] = (uint8_t)((zp[ZP_LOADFLAGS] | ZP_LOADED_HIGH) & ~ZP_CAN_USE_HEAP);
	put32(zp + ZP_CMD_LINE_PTR, a->cmdline_addr);
	put32(zp + ZP_RAMDISK_IMAGE, (uint32_t)a->initrd_addr);
	put32(zp + ZP_RAMDISK_SIZE, (uint32_t)a->initrd_size);
	put32(zp + ZP_EXT_RAMDISK_IMAGE, (uint32_t)(a->initrd_addr >> 32));
	put32(zp + ZP_EXT_RAMDISK_SIZE, (uint32_t)(a->initrd_size >> 32));
	zp[ZP_E820_ENTRIES] = (uint8_t)n;
	for (size_t i = 0; i < n; i++) {
		uint8_t *e = zp + ZP_E820_TABLE + i * 20;

		put64le(e, map[i].addr);
		put64le(e + 8, map[i].size);
		put32(e + 16, map[i].type);
	}
}
