/* SPDX-License-Identifier: MIT */
#include "bzimage.h"

#include <stdio.h>

#include "bytes.h"
#include "unpack.h"
#include "zeropage.h"

static int header_fields(const uint8_t *buf, size_t len, struct bzimage *bz, char *err, size_t errlen)
{
	unsigned sects = buf[ZP_HDR] ? buf[ZP_HDR] : 4;

	bz->setup_size = (sects + 1) * 512;
	bz->hdr_len = (size_t)(ZP_HEADER + buf[0x201]) - ZP_HDR;
	if (bz->hdr_len > ZP_HDR_MAX_END - ZP_HDR)
		bz->hdr_len = ZP_HDR_MAX_END - ZP_HDR;
	if (ZP_HDR + bz->hdr_len < ZP_PAYLOAD_LENGTH + 4)
		bz->hdr_len = ZP_PAYLOAD_LENGTH + 4 - ZP_HDR;
	bz->cmdline_size = get32(buf + ZP_CMDLINE_SIZE);
	bz->initrd_addr_max = get32(buf + ZP_INITRD_ADDR_MAX);
	bz->payload_offset = (uint64_t)bz->setup_size + get32(buf + ZP_PAYLOAD_OFFSET);
	bz->payload_length = get32(buf + ZP_PAYLOAD_LENGTH);
	if (bz->setup_size > len || bz->payload_offset > len ||
	    bz->payload_length > len - bz->payload_offset || bz->payload_length == 0) {
		snprintf(err, errlen, "its payload (0x%x bytes at 0x%llx) lies past the end of the file (%zu bytes)",
			 bz->payload_length, (unsigned long long)bz->payload_offset, len);
		return -1;
	}
	return 0;
}

int bzimage_parse(const uint8_t *buf, size_t len, struct bzimage *bz, char *err, size_t errlen)
{
	*bz = (struct bzimage){ 0 };
	if (len < ZP_HDR_MAX_END) {
		snprintf(err, errlen, "its Linux setup header is truncated (%zu bytes)", len);
		return -1;
	}
	bz->version = get16(buf + ZP_VERSION);
	if (bz->version < BZIMAGE_MIN_VERSION) {
		snprintf(err, errlen, "it is a Linux kernel of boot protocol %u.%02u; vmm boots protocol 2.12 and later",
			 bz->version >> 8, bz->version & 0xff);
		return -1;
	}
	if (!(buf[ZP_XLOADFLAGS] & ZP_XLF_KERNEL_64)) {
		snprintf(err, errlen, "it is a 32-bit Linux kernel (no XLF_KERNEL_64); vmm boots 64-bit ones");
		return -1;
	}
	return header_fields(buf, len, bz, err, errlen);
}

int bzimage_unpack(const uint8_t *buf, const struct bzimage *bz, size_t max,
		   uint8_t **vmlinux, size_t *vmlen, char *err, size_t errlen)
{
	return unpack(buf + bz->payload_offset, bz->payload_length, max, vmlinux, vmlen, err, errlen);
}
