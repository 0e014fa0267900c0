/* SPDX-License-Identifier: MIT */
/* image.c: what each file is, by content alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "elf.h"
#include "image.h"
#include "kimage.h"

#define LOW 0x100000u

static const uint8_t code[16] = { 0xf4 };

static void elf_kinds(void **state)
{
	struct kimage_seg seg = { LOW, code, 16, 16 };
	uint8_t notes[128];
	size_t n = kimage_note(notes, "Xen", 18, "\x20\x00\x10\x00", 4);
	struct image_info info;
	struct kimage k;

	(void)state;
	for (int is64 = 0; is64 <= 1; is64++)
		for (int sec = 0; sec <= 1; sec++) {
			kimage_elf(&k, is64, is64 ? ELF_EM_X86_64 : ELF_EM_386, LOW, &seg, 1, notes, n, sec);
			image_detect(k.buf, k.len, &info);
			assert_int_equal(info.kind, IMAGE_PVH);
			assert_int_equal(info.pvh_entry, 0x100020);
			assert_false(info.linux_elf);
		}
	/* Linux's vmlinux says who it is. */
	n += kimage_note(notes + n, "Xen", XEN_ELFNOTE_GUEST_OS, "linux", 6);
	kimage_elf(&k, true, ELF_EM_X86_64, LOW, &seg, 1, notes, n, false);
	image_detect(k.buf, k.len, &info);
	assert_int_equal(info.kind, IMAGE_PVH);
	assert_true(info.linux_elf);
	/* No note: one line says what it is. */
	kimage_elf(&k, true, ELF_EM_X86_64, LOW, &seg, 1, NULL, 0, false);
	image_detect(k.buf, k.len, &info);
	assert_int_equal(info.kind, IMAGE_FOREIGN);
	assert_string_equal(info.what, "an ELF executable without a PVH note (Xen note 18) or a multiboot header");
	kimage_elf(&k, false, 40, LOW, &seg, 1, NULL, 0, false);
	image_detect(k.buf, k.len, &info);
	assert_int_equal(info.kind, IMAGE_FOREIGN);
	assert_string_equal(info.what, "an ELF executable for machine 40, not x86");
	/* A note of 2 bytes holds no entry. */
	n = kimage_note(notes, "Xen", 18, "\x20\x00", 2);
	kimage_elf(&k, true, ELF_EM_X86_64, LOW, &seg, 1, notes, n, false);
	image_detect(k.buf, k.len, &info);
	assert_int_equal(info.kind, IMAGE_BAD);
	assert_string_equal(info.what, "its PVH note (Xen note 18) holds no 32-bit entry address (2 bytes)");
	/* An 8-byte entry above 4 GiB neither. */
	n = kimage_note(notes, "Xen", 18, "\0\0\0\0\1\0\0\0", 8);
	kimage_elf(&k, true, ELF_EM_X86_64, LOW, &seg, 1, notes, n, false);
	image_detect(k.buf, k.len, &info);
	assert_int_equal(info.kind, IMAGE_BAD);
}

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

static void multiboot_header(void **state)
{
	uint8_t buf[16384] = { 0 };
	struct image_info info;

	(void)state;
	/* Found 4-aligned in the first 8 KiB, with its checksum. */
	put32(buf + 8188, MULTIBOOT_MAGIC - 12);
	put32(buf + 8180, MULTIBOOT_MAGIC);
	put32(buf + 8184, 0);
	put32(buf + 8188, -MULTIBOOT_MAGIC);
	image_detect(buf, sizeof(buf), &info);
	assert_int_equal(info.kind, IMAGE_MULTIBOOT);
	assert_int_equal(info.mb_offset, 8180);
	/* A bad checksum, or past 8 KiB, or unaligned: a flat image. */
	put32(buf + 8188, 1 - MULTIBOOT_MAGIC);
	assert_int_equal(image_multiboot_offset(buf, sizeof(buf)), -1);
	memset(buf, 0, sizeof(buf));
	put32(buf + 8192, MULTIBOOT_MAGIC);
	put32(buf + 8200, -MULTIBOOT_MAGIC);
	assert_int_equal(image_multiboot_offset(buf, sizeof(buf)), -1);
	memset(buf, 0, sizeof(buf));
	put32(buf + 2, MULTIBOOT_MAGIC);
	put32(buf + 10, -MULTIBOOT_MAGIC);
	image_detect(buf, sizeof(buf), &info);
	assert_int_equal(info.kind, IMAGE_FLAT);
	/* A header cut by the file's end is not one. */
	memset(buf, 0, sizeof(buf));
	put32(buf + 0, MULTIBOOT_MAGIC);
	put32(buf + 8, -MULTIBOOT_MAGIC);
	assert_int_equal(image_multiboot_offset(buf, 11), -1);
	assert_int_equal(image_multiboot_offset(buf, 12), 0);
}

static void other_files(void **state)
{
	static const struct { const char *data; size_t len; enum image_kind kind; const char *what; } cases[] = {
		{ "\xf4", 1, IMAGE_FLAT, "" },
		{ "\x66\xba\xf4\x00\xb8\x00\x00\x00\x00\xef\xf4", 11, IMAGE_FLAT, "" },
		{ "", 0, IMAGE_FLAT, "" },
		{ "\x1f\x8b\x08\x00", 4, IMAGE_FOREIGN, "gzip-compressed data (unpack it first: a vmlinux ELF or a bzImage boots)" },
		{ "\xfd" "7zXZ\0\0", 7, IMAGE_FOREIGN, "xz-compressed data (unpack it first: a vmlinux ELF or a bzImage boots)" },
		{ "\x28\xb5\x2f\xfd\0", 5, IMAGE_FOREIGN, "zstd-compressed data (unpack it first: a vmlinux ELF or a bzImage boots)" },
		{ "BZh9", 4, IMAGE_FOREIGN, "bzip2-compressed data (unpack it first: a vmlinux ELF or a bzImage boots)" },
		{ "#!/bin/sh\n", 10, IMAGE_FOREIGN, "a script" },
		{ "MZ\x90\0", 4, IMAGE_FOREIGN, "a PE/COFF executable (Windows or EFI) without a Linux boot header" },
		{ "070701000", 9, IMAGE_FOREIGN, "a cpio archive (an initramfs? give it with --initrd)" },
		{ "PK\x03\x04", 4, IMAGE_FOREIGN, "a zip archive" },
		{ "QFI\xfb", 4, IMAGE_FOREIGN, "a qcow2 disk image" },
		{ "\x7f" "ELF", 4, IMAGE_BAD, "its ELF header is truncated (4 bytes)" },
	};
	struct image_info info;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		image_detect((const uint8_t *)cases[i].data, cases[i].len, &info);
		if (info.kind != cases[i].kind || strcmp(info.what, cases[i].what))
			fail_msg("case %zu: kind %d '%s', wanted %d '%s'", i, info.kind, info.what,
				 cases[i].kind, cases[i].what);
	}
}

static void bzimage_and_multiboot2(void **state)
{
	static uint8_t buf[40000];
	struct image_info info;

	(void)state;
	memcpy(buf + 0x202, "HdrS", 4);
	image_detect(buf, 0x206, &info);
	assert_int_equal(info.kind, IMAGE_BZIMAGE);
	image_detect(buf, 0x205, &info);
	assert_int_equal(info.kind, IMAGE_FLAT);
	memset(buf, 0, sizeof(buf));
	put32(buf + 32768 - 16, 0xe85250d6u);
	put32(buf + 32768 - 4, -0xe85250d6u);
	image_detect(buf, sizeof(buf), &info);
	assert_int_equal(info.kind, IMAGE_FOREIGN);
	assert_string_equal(info.what, "a multiboot2 kernel without a multiboot (v1) header");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(elf_kinds),
		cmocka_unit_test(multiboot_header),
		cmocka_unit_test(other_files),
		cmocka_unit_test(bzimage_and_multiboot2),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
