/* SPDX-License-Identifier: MIT */
#include "image.h"

#include <stdio.h>
#include <string.h>

#include "array_size.h"
#include "bytes.h"
#include "elf.h"
#include "unpack.h"

const char *image_kind_name(enum image_kind kind)
{
	switch (kind) {
	case IMAGE_FLAT: return "flat image";
	case IMAGE_BZIMAGE: return "Linux bzImage";
	case IMAGE_PVH: return "PVH ELF kernel";
	case IMAGE_MULTIBOOT: return "multiboot kernel";
	default: return "image";
	}
}

long image_multiboot_offset(const uint8_t *buf, size_t len)
{
	size_t end = len < MULTIBOOT_SEARCH ? len : MULTIBOOT_SEARCH;

	for (size_t off = 0; off + 12 <= end; off += 4)
		if (get32(buf + off) == MULTIBOOT_MAGIC &&
		    (uint32_t)(get32(buf + off) + get32(buf + off + 4) + get32(buf + off + 8)) == 0)
			return (long)off;
	return -1;
}

/* Multiboot2's header: 8-byte aligned in the first 32 KiB. */
static bool multiboot2(const uint8_t *buf, size_t len)
{
	for (size_t off = 0; off + 16 <= len && off < 32768; off += 8)
		if (get32(buf + off) == 0xe85250d6u &&
		    (uint32_t)(get32(buf + off) + get32(buf + off + 4) + get32(buf + off + 8) +
			       get32(buf + off + 12)) == 0)
			return true;
	return false;
}

static const struct {
	size_t off;
	const char *magic;
	size_t len;
	const char *what;
} foreign[] = {
	{ 0, "MZ", 2, "a PE/COFF executable (Windows or EFI) without a Linux boot header" },
	{ 0, "#!", 2, "a script" },
	{ 0, "070701", 6, "a cpio archive (an initramfs? give it with --initrd)" },
	{ 0, "070702", 6, "a cpio archive (an initramfs? give it with --initrd)" },
	{ 0, "070707", 6, "a cpio archive (an initramfs? give it with --initrd)" },
	{ 0, "PK\x03\x04", 4, "a zip archive" },
	{ 0, "QFI\xfb", 4, "a qcow2 disk image" },
	{ 257, "ustar", 5, "a tar archive" },
};

static bool foreign_format(const uint8_t *buf, size_t len, struct image_info *info)
{
	const char *z = unpack_format(buf, len);

	if (z && strcmp(z, "lzma") != 0) {
		snprintf(info->what, sizeof(info->what),
			 "%s-compressed data (unpack it first: a vmlinux ELF or a bzImage boots)", z);
		return true;
	}
	if (multiboot2(buf, len)) {
		snprintf(info->what, sizeof(info->what), "a multiboot2 kernel without a multiboot (v1) header");
		return true;
	}
	for (size_t i = 0; i < ARRAY_SIZE(foreign); i++)
		if (len >= foreign[i].off + foreign[i].len &&
		    memcmp(buf + foreign[i].off, foreign[i].magic, foreign[i].len) == 0) {
			snprintf(info->what, sizeof(info->what), "%s", foreign[i].what);
			return true;
		}
	return false;
}

static const char *elf_type_name(uint16_t type)
{
	switch (type) {
	case 1: return "an ELF relocatable object";
	case 2: return "an ELF executable";
	case 3: return "an ELF shared object";
	case 4: return "an ELF core dump";
	default: return "an ELF file";
	}
}

/* The PVH entry note: 4 or 8 bytes, an address below 4 GiB. */
static void pvh_note(const struct elf_file *e, const uint8_t *d, uint32_t n, struct image_info *info)
{
	uint64_t entry = n >= 8 ? get64(d) : n >= 4 ? get32(d) : UINT64_MAX;
	const uint8_t *os;
	uint32_t oslen;
	char ignored[8];

	if (entry > UINT32_MAX) {
		info->kind = IMAGE_BAD;
		snprintf(info->what, sizeof(info->what),
			 "its PVH note (Xen note 18) holds no 32-bit entry address (%u bytes)", n);
		return;
	}
	info->kind = IMAGE_PVH;
	info->pvh_entry = (uint32_t)entry;
	info->linux_elf = elf_find_note(e, "Xen", XEN_ELFNOTE_GUEST_OS, &os, &oslen, ignored,
					sizeof(ignored)) == 1 &&
			  oslen >= 5 && memcmp(os, "linux", 5) == 0;
}

static bool detect_multiboot(const uint8_t *buf, size_t len, struct image_info *info)
{
	long mb = image_multiboot_offset(buf, len);

	if (mb < 0)
		return false;
	info->kind = IMAGE_MULTIBOOT;
	info->mb_offset = (uint32_t)mb;
	return true;
}

static void detect_elf(const uint8_t *buf, size_t len, struct image_info *info)
{
	struct elf_file e;
	const uint8_t *desc;
	uint32_t desclen;
	int r;

	info->kind = IMAGE_BAD;
	if (elf_parse(buf, len, &e, info->what, sizeof(info->what)))
		return;
	if (e.machine != ELF_EM_X86_64 && e.machine != ELF_EM_386) {
		info->kind = IMAGE_FOREIGN;
		snprintf(info->what, sizeof(info->what), "%s for machine %u, not x86",
			 elf_type_name(get16(buf + 16)), e.machine);
		return;
	}
	r = elf_find_note(&e, "Xen", XEN_ELFNOTE_PHYS32_ENTRY, &desc, &desclen, info->what,
			  sizeof(info->what));
	if (r < 0)
		return;
	if (r == 1) {
		pvh_note(&e, desc, desclen, info);
		return;
	}
	if (detect_multiboot(buf, len, info))
		return;
	info->kind = IMAGE_FOREIGN;
	snprintf(info->what, sizeof(info->what),
		 "%s without a PVH note (Xen note 18) or a multiboot header", elf_type_name(get16(buf + 16)));
}

void image_detect(const uint8_t *buf, size_t len, struct image_info *info)
{
	*info = (struct image_info){ .kind = IMAGE_FLAT };
	if (len >= 0x206 && memcmp(buf + 0x202, "HdrS", 4) == 0) {
		info->kind = IMAGE_BZIMAGE;
		return;
	}
	if (elf_is_elf(buf, len)) {
		detect_elf(buf, len, info);
		return;
	}
	if (detect_multiboot(buf, len, info))
		return;
	if (foreign_format(buf, len, info))
		info->kind = IMAGE_FOREIGN;
}
