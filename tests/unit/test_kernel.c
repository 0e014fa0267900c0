/* SPDX-License-Identifier: MIT */
/*
 * kernel.c with bzimage.c, unpack.c, zeropage.c, startinfo.c,
 * multiboot.c and memmap.c: what each protocol puts in RAM and the entry
 * state, and each bad header's one line and status.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "bzimage.h"
#include "elf.h"
#include "image.h"
#include "kernel.h"
#include "kimage.h"
#include "memmap.h"
#include "multiboot.h"
#include "startinfo.h"
#include "unpack.h"
#include "zeropage.h"

#define RAM (64ull << 20)
#define LINUX 0x1000000u
#define KLOW 0x100000u

static char err[512];
static const uint8_t code[32] = { 0xf4 };
static uint8_t *mem;

static uint32_t r32(uint64_t a) { uint32_t v; memcpy(&v, mem + a, 4); return v; }
static uint64_t r64(uint64_t a) { uint64_t v; memcpy(&v, mem + a, 8); return v; }
static void w32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

static int setup(void **state) { (void)state; mem = calloc(1, RAM); return mem ? 0 : -1; }
static int teardown(void **state) { (void)state; free(mem); return 0; }

static void memmap_table(void **state)
{
	struct memmap_entry m[MEMMAP_MAX];

	(void)state;
	assert_int_equal(memmap_build(RAM, m), 3);
	assert_true(m[0].addr == 0 && m[0].size == 0x9fc00 && m[0].type == MEMMAP_RAM);
	assert_true(m[1].addr == 0x9fc00 && m[1].size == 0x60400 && m[1].type == MEMMAP_RESERVED);
	assert_true(m[2].addr == 0x100000 && m[2].size == RAM - 0x100000 && m[2].type == MEMMAP_RAM);
}

static void unpacks(void **state)
{
	static const char *fmts[] = { "gzip", "xz", "zstd" };
	static uint8_t data[300000];
	uint8_t *out, *z;
	size_t n, zn;

	(void)state;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 / 13);
	for (size_t f = 0; f < 3; f++) {
		z = kimage_compress(fmts[f], data, sizeof(data), &zn);
		assert_string_equal(unpack_format(z, zn), fmts[f]);
		assert_int_equal(unpack(z, zn, sizeof(data), &out, &n, err, sizeof(err)), 0);
		assert_int_equal(n, sizeof(data));
		assert_memory_equal(out, data, n);
		free(out);
		/* One byte short of room: refused, not cut. */
		assert_int_equal(unpack(z, zn, sizeof(data) - 1, &out, &n, err, sizeof(err)), -1);
		assert_non_null(strstr(err, "payload unpacks to more than 299999 bytes (the RAM)"));
		assert_null(out);
		/* Truncated. */
		assert_int_equal(unpack(z, zn / 2, sizeof(data), &out, &n, err, sizeof(err)), -1);
		assert_non_null(strstr(err, "data is corrupt or truncated"));
		free(z);
	}
	assert_int_equal(unpack((const uint8_t *)"\x89LZO", 4, 100, &out, &n, err, sizeof(err)), -1);
	assert_string_equal(err, "its payload is lzo-compressed; vmm unpacks gzip, xz and zstd");
	assert_int_equal(unpack((const uint8_t *)"abcd", 4, 100, &out, &n, err, sizeof(err)), -1);
	assert_string_equal(err, "its payload's compression is unknown; vmm unpacks gzip, xz and zstd");
}

/* A bzImage around a gzip'd vmlinux whose one segment is `seg`. */
static uint8_t *bz_build(const struct kimage_seg *seg, uint16_t version, uint16_t xlf,
			 uint32_t cmdline_size, size_t *len)
{
	static struct kimage k;
	uint8_t *bz = malloc(1024 + sizeof(k.buf) + 1024), *z;
	size_t zn;

	kimage_elf(&k, true, ELF_EM_X86_64, LINUX, seg, 1, NULL, 0, false);
	z = kimage_compress("gzip", k.buf, k.len, &zn);
	kimage_bzimage(bz, len, version, xlf, cmdline_size, z, zn);
	free(z);
	return bz;
}

static int load(enum image_kind kind, const uint8_t *buf, size_t len, const char *cmdline,
		const uint8_t *initrd, size_t initrd_len, struct kernel_boot *kb)
{
	struct image_info info;
	struct kernel_args a = { .cmdline = cmdline, .initrd = initrd, .initrd_len = initrd_len };

	image_detect(buf, len, &info);
	assert_int_equal(info.kind, kind);
	return kernel_load(&info, buf, len, &a, mem, RAM, kb, err, sizeof(err));
}

static void bzimage_boots(void **state)
{
	struct kimage_seg seg = { LINUX, code, sizeof(code), 0x1000 };
	static uint8_t initrd[10000];
	struct kernel_boot kb;
	size_t len;
	uint8_t *bz = bz_build(&seg, 0x020f, 1, 2047, &len);
	uint64_t zp = BOOT_PC_PARAMS_ADDR;

	(void)state;
	memset(initrd, 0x5a, sizeof(initrd));
	assert_int_equal(load(IMAGE_BZIMAGE, bz, len, "console=ttyS0", initrd, sizeof(initrd), &kb), 0);
	assert_int_equal(kb.entry.mode, BOOT_ENTRY_LONG);
	assert_int_equal(kb.entry.rip, LINUX);
	assert_int_equal(kb.entry.rsi, zp);
	assert_memory_equal(mem + LINUX, code, sizeof(code));
	assert_memory_equal(mem + zp + ZP_HEADER, "HdrS", 4);
	assert_int_equal(mem[zp + ZP_TYPE_OF_LOADER], 0xff);
	assert_int_equal(mem[zp + ZP_LOADFLAGS] & ZP_LOADED_HIGH, ZP_LOADED_HIGH);
	assert_int_equal(r32(zp + ZP_CMD_LINE_PTR), BOOT_PC_CMDLINE_ADDR);
	assert_string_equal((char *)mem + BOOT_PC_CMDLINE_ADDR, "console=ttyS0");
	assert_int_equal(r32(zp + ZP_CMDLINE_SIZE), 2047);
	/* The initrd at the top of RAM, page aligned. */
	assert_int_equal(kb.initrd_addr, (RAM - sizeof(initrd)) & ~0xfffull);
	assert_int_equal(r32(zp + ZP_RAMDISK_IMAGE), kb.initrd_addr);
	assert_int_equal(r32(zp + ZP_RAMDISK_SIZE), sizeof(initrd));
	assert_memory_equal(mem + kb.initrd_addr, initrd, sizeof(initrd));
	/* e820 from memmap.c. */
	assert_int_equal(mem[zp + ZP_E820_ENTRIES], 3);
	assert_int_equal(r64(zp + ZP_E820_TABLE + 40), 0x100000);
	assert_int_equal(r64(zp + ZP_E820_TABLE + 48), RAM - 0x100000);
	assert_int_equal(r32(zp + ZP_E820_TABLE + 56), 1);
	assert_int_equal(r32(zp + ZP_E820_TABLE + 36), 2);
	free(bz);
}

static void bzimage_refused(void **state)
{
	static const struct {
		const char *name; uint16_t version, xlf; uint32_t cmdline_size, seg_addr;
		int patch_off; uint32_t patch; size_t cut; const char *cmdline; int status; const char *msg;
	} cases[] = {
		{ "truncated", 0x20f, 1, 2047, LINUX, 0, 0, 0x27f, "", KERNEL_BAD_IMAGE, "its Linux setup header is truncated (639 bytes)" },
		{ "old protocol", 0x20b, 1, 2047, LINUX, 0, 0, 0, "", KERNEL_BAD_IMAGE, "boot protocol 2.11; vmm boots protocol 2.12 and later" },
		{ "32-bit", 0x20f, 0, 2047, LINUX, 0, 0, 0, "", KERNEL_BAD_IMAGE, "a 32-bit Linux kernel (no XLF_KERNEL_64)" },
		{ "payload past end", 0x20f, 1, 2047, LINUX, 0x24c, 0xffffff00u, 0, "", KERNEL_BAD_IMAGE, "its payload (0xffffff00 bytes at 0x400) lies past the end" },
		{ "payload offset past end", 0x20f, 1, 2047, LINUX, 0x248, 0xfffffff0u, 0, "", KERNEL_BAD_IMAGE, "lies past the end of the file" },
		{ "no payload", 0x20f, 1, 2047, LINUX, 0x24c, 0, 0, "", KERNEL_BAD_IMAGE, "its payload (0x0 bytes" },
		{ "setup past end", 0x20f, 1, 2047, LINUX, 0x1f1, 0xff, 0, "", KERNEL_BAD_IMAGE, "lies past the end of the file" },
		{ "corrupt payload", 0x20f, 1, 2047, LINUX, 1024 + 20, 0xdeadbeef, 0, "", KERNEL_BAD_IMAGE, "its gzip data is corrupt or truncated" },
		{ "cut payload", 0x20f, 1, 2047, LINUX, 0, 0, 1030, "", KERNEL_BAD_IMAGE, "lies past the end of the file" },
		{ "vmlinux outside RAM", 0x20f, 1, 2047, 0x7000000, 0, 0, 0, "", KERNEL_BAD_IMAGE,
		  "its unpacked vmlinux: segment 0 at 0x7000000 (0x1000 bytes) lies outside RAM (64M)" },
		{ "vmlinux below 1 MiB", 0x20f, 1, 2047, 0x9000, 0, 0, 0, "", KERNEL_BAD_IMAGE,
		  "its unpacked vmlinux: segment 0 at 0x9000 overlaps the VMM's area below 0x100000" },
		{ "cmdline too long", 0x20f, 1, 4, LINUX, 0, 0, 0, "abcde", KERNEL_USAGE, "--append: text is 5 bytes, this kernel takes at most 4" },
	};
	struct kernel_boot kb;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct kimage_seg seg = { cases[i].seg_addr, code, sizeof(code), 0x1000 };
		size_t len;
		uint8_t *bz = bz_build(&seg, cases[i].version, cases[i].xlf, cases[i].cmdline_size, &len);
		int r;

		if (cases[i].patch_off == 0x1f1)
			bz[0x1f1] = (uint8_t)cases[i].patch;
		else if (cases[i].patch_off)
			w32(bz + cases[i].patch_off, cases[i].patch);
		r = load(IMAGE_BZIMAGE, bz, cases[i].cut ? cases[i].cut : len, cases[i].cmdline, NULL, 0, &kb);
		if (r != cases[i].status || !strstr(err, cases[i].msg))
			fail_msg("%s: %d '%s', wanted %d '%s'", cases[i].name, r, err, cases[i].status, cases[i].msg);
		assert_null(strchr(err, '\n'));
		free(bz);
	}
}

static void pvh_boots(void **state)
{
	struct kimage_seg seg = { KLOW, code, sizeof(code), 0x3000 };
	uint8_t notes[64], initrd[100];
	struct kimage k;
	struct kernel_boot kb;
	uint64_t si = BOOT_PC_PARAMS_ADDR;
	size_t n = kimage_note(notes, "Xen", 18, "\x10\x00\x10\x00", 4);

	(void)state;
	memset(initrd, 7, sizeof(initrd));
	kimage_elf(&k, false, ELF_EM_386, KLOW, &seg, 1, notes, n, false);
	assert_int_equal(load(IMAGE_PVH, k.buf, k.len, "pvh line", initrd, sizeof(initrd), &kb), 0);
	assert_int_equal(kb.entry.mode, BOOT_ENTRY_PROT32);
	assert_int_equal(kb.entry.rip, 0x100010);
	assert_int_equal(kb.entry.rbx, si);
	assert_false(kb.enables_long_mode);
	assert_int_equal(r32(si), STARTINFO_MAGIC);
	assert_int_equal(r32(si + 4), 1);
	assert_int_equal(r32(si + 12), 1);
	assert_int_equal(r64(si + 16), si + STARTINFO_MODLIST);
	assert_int_equal(r64(si + STARTINFO_MODLIST), kb.initrd_addr);
	assert_int_equal(r64(si + STARTINFO_MODLIST + 8), sizeof(initrd));
	assert_int_equal(r64(si + 24), BOOT_PC_CMDLINE_ADDR);
	assert_string_equal((char *)mem + BOOT_PC_CMDLINE_ADDR, "pvh line");
	assert_int_equal(r64(si + 40), si + STARTINFO_MEMMAP);
	assert_int_equal(r32(si + 48), 3);
	assert_int_equal(r64(si + STARTINFO_MEMMAP + 48), 0x100000);
	assert_int_equal(r32(si + STARTINFO_MEMMAP + 40), 2);
	/* ELF64: a kernel that enables long mode itself. */
	kimage_elf(&k, true, ELF_EM_X86_64, KLOW, &seg, 1, notes, n, false);
	assert_int_equal(load(IMAGE_PVH, k.buf, k.len, NULL, NULL, 0, &kb), 0);
	assert_true(kb.enables_long_mode);
	assert_int_equal(r32(si + 12), 0);
	assert_string_equal((char *)mem + BOOT_PC_CMDLINE_ADDR, "");
}

/* A Linux vmlinux (Xen GUEST_OS "linux") takes the 64-bit entry, with a zero page of its own. */
static void pvh_linux_boots(void **state)
{
	struct kimage_seg seg = { LINUX, code, sizeof(code), 0x1000 };
	uint8_t notes[64];
	static char line[2049];
	struct kimage k;
	struct kernel_boot kb;
	size_t n = kimage_note(notes, "Xen", 18, "\x10\x00\x10\x00", 4);

	(void)state;
	n += kimage_note(notes + n, "Xen", 6, "linux", 6);
	kimage_elf(&k, true, ELF_EM_X86_64, LINUX, &seg, 1, notes, n, false);
	assert_int_equal(load(IMAGE_PVH, k.buf, k.len, "x", NULL, 0, &kb), 0);
	assert_int_equal(kb.entry.mode, BOOT_ENTRY_LONG);
	assert_int_equal(kb.entry.rip, LINUX);
	assert_memory_equal(mem + BOOT_PC_PARAMS_ADDR + ZP_HEADER, "HdrS", 4);
	assert_int_equal(r32(BOOT_PC_PARAMS_ADDR + ZP_CMDLINE_SIZE), ZP_DEFAULT_CMDLINE_SIZE);
	memset(line, 'y', 2048);
	assert_int_equal(load(IMAGE_PVH, k.buf, k.len, line, NULL, 0, &kb), KERNEL_USAGE);
	assert_string_equal(err, "--append: text is 2048 bytes, this kernel takes at most 2047");
}

/* A multiboot header with the a.out kludge at offset 0, the code after it. */
static size_t mb_build(uint8_t *buf, uint32_t flags, uint32_t hdr, uint32_t load, uint32_t load_end,
		       uint32_t bss_end, uint32_t entry)
{
	uint32_t f[8] = { MULTIBOOT_MAGIC, flags, -(MULTIBOOT_MAGIC + flags), hdr, load, load_end, bss_end, entry };

	memcpy(buf, f, sizeof(f));
	memcpy(buf + 32, code, sizeof(code));
	return 32 + sizeof(code);
}

static void multiboot_boots(void **state)
{
	uint8_t buf[64], initrd[5000] = { 1 };
	struct kernel_boot kb;
	uint64_t mi = BOOT_PC_PARAMS_ADDR;
	size_t len = mb_build(buf, 0x10003, KLOW, KLOW, 0, KLOW + 0x2000, KLOW + 32);

	(void)state;
	memset(mem + KLOW, 0xee, 0x3000);
	assert_int_equal(load(IMAGE_MULTIBOOT, buf, len, "mb", initrd, sizeof(initrd), &kb), 0);
	assert_int_equal(kb.entry.mode, BOOT_ENTRY_PROT32);
	assert_int_equal(kb.entry.rip, KLOW + 32);
	assert_int_equal(kb.entry.rax, MULTIBOOT_BOOTLOADER_MAGIC);
	assert_int_equal(kb.entry.rbx, mi);
	assert_memory_equal(mem + KLOW, buf, len);
	assert_int_equal(mem[KLOW + len], 0);          /* bss zeroed up to bss_end_addr */
	assert_int_equal(mem[KLOW + 0x1fff], 0);
	assert_int_equal(mem[KLOW + 0x2000], 0xee);
	assert_int_equal(r32(mi), MULTIBOOT_INFO_MEMORY | MULTIBOOT_INFO_CMDLINE | MULTIBOOT_INFO_MODS |
				  MULTIBOOT_INFO_MEM_MAP | MULTIBOOT_INFO_LOADER_NAME);
	assert_int_equal(r32(mi + 4), 639);
	assert_int_equal(r32(mi + 8), (RAM >> 10) - 1024);
	assert_int_equal(r32(mi + 16), BOOT_PC_CMDLINE_ADDR);
	assert_int_equal(r32(mi + 20), 1);
	assert_int_equal(r32(r32(mi + 24)), kb.initrd_addr);
	assert_int_equal(r32(r32(mi + 24) + 4), kb.initrd_addr + sizeof(initrd));
	assert_int_equal(kb.initrd_addr & 0xfff, 0);
	assert_int_equal(r32(mi + 44), 72);
	assert_int_equal(r32(r32(mi + 48)), 20);
	assert_int_equal(r64(r32(mi + 48) + 24 * 2 + 4), 0x100000);
	assert_string_equal((char *)mem + r32(mi + 64), "vmm");
}

static void multiboot_refused(void **state)
{
	static const struct {
		const char *name; uint32_t flags, hdr, load, load_end, bss_end; size_t cut; const char *msg;
	} cases[] = {
		{ "video", 0x10006, KLOW, KLOW, 0, 0, 0, "requires a video mode (bit 2) among flags 0x4" },
		{ "unknown requirement", 0x10102, KLOW, KLOW, 0, 0, 0, "requires flags 0x100 that vmm does not offer" },
		{ "kludge truncated", 0x10002, KLOW, KLOW, 0, 0, 20, "its multiboot header's address fields are truncated" },
		{ "header before load", 0x10002, KLOW, KLOW + 4, 0, 0, 0, "header_addr 0x100000 lies before load_addr 0x100004" },
		{ "load before file", 0x10002, KLOW + 8, KLOW, 0, 0, 0, "lies before load_addr 0x100000 or the file's start" },
		{ "load_end below load", 0x10002, KLOW, KLOW, KLOW - 1, 0, 0, "load_end_addr 0xfffff lies below load_addr" },
		{ "past end", 0x10002, KLOW, KLOW, KLOW + 0x1000, 0, 0, "(0x1000 bytes from file offset 0x0) lies past the end of the file (64 bytes)" },
		{ "bss below end", 0x10002, KLOW, KLOW, 0, KLOW + 4, 0, "bss_end_addr 0x100004 lies below the loaded end" },
		{ "below 1 MiB", 0x10002, 0x8000, 0x8000, 0, 0, 0, "load range 0x8000-0x8040 lies outside RAM above 0x100000" },
		{ "past RAM", 0x10002, 0xfffff000u, 0xfffff000u, 0, 0, 0, "lies outside RAM above 0x100000 (64M)" },
		{ "no addresses, no ELF", 0x2, 0, 0, 0, 0, 0, "gives no load addresses (flag 16) and it is not an ELF file" },
	};
	struct kernel_boot kb;
	uint8_t buf[64];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len = mb_build(buf, cases[i].flags, cases[i].hdr, cases[i].load, cases[i].load_end,
				      cases[i].bss_end, KLOW + 32);
		int r = load(IMAGE_MULTIBOOT, buf, cases[i].cut ? cases[i].cut : len, NULL, NULL, 0, &kb);

		if (r != KERNEL_BAD_IMAGE || !strstr(err, cases[i].msg))
			fail_msg("%s: %d '%s', wanted '%s'", cases[i].name, r, err, cases[i].msg);
	}
}

static void initrd_placement(void **state)
{
	uint64_t a;

	(void)state;
	assert_int_equal(kernel_place_initrd(RAM, 0x200000, UINT64_MAX, 4097, &a, err, sizeof(err)), 0);
	assert_int_equal(a, RAM - 0x2000);
	/* Below the kernel's bound for its last byte. */
	assert_int_equal(kernel_place_initrd(RAM, 0x200000, 0x800001, 4096, &a, err, sizeof(err)), 0);
	assert_int_equal(a, 0x7ff000);
	/* Never over the kernel, even by a byte. */
	assert_int_equal(kernel_place_initrd(RAM, 0x200001, UINT64_MAX, RAM - 0x201000, &a, err, sizeof(err)), 0);
	assert_int_equal(a, 0x201000);
	assert_int_equal(kernel_place_initrd(RAM, 0x200001, UINT64_MAX, RAM - 0x200fff, &a, err, sizeof(err)), -1);
	assert_string_equal(err, "the initrd (65007617 bytes) does not fit between the kernel's end (0x200001) and 0x4000000; give more with -m");
	assert_int_equal(kernel_place_initrd(RAM, 0x200000, UINT64_MAX, RAM - 0x200000, &a, err, sizeof(err)), 0);
	assert_int_equal(a, 0x200000);
	assert_int_equal(kernel_place_initrd(RAM, 0x200000, UINT64_MAX, RAM + 1, &a, err, sizeof(err)), -1);
	/* Capped at 4 GiB whatever the RAM. */
	assert_int_equal(kernel_place_initrd(8ull << 30, 0x200000, UINT64_MAX, 4096, &a, err, sizeof(err)), 0);
	assert_int_equal(a, (4ull << 30) - 4096);
}

static void initrd_too_big(void **state)
{
	uint8_t buf[64];
	static uint8_t initrd[RAM - 0x100000];
	struct kernel_boot kb;
	size_t len = mb_build(buf, 0x10002, KLOW, KLOW, 0, 0, KLOW + 32);

	(void)state;
	assert_int_equal(load(IMAGE_MULTIBOOT, buf, len, NULL, initrd, sizeof(initrd), &kb), KERNEL_BAD_IMAGE);
	assert_non_null(strstr(err, "the initrd (66060288 bytes) does not fit between the kernel's end (0x100040)"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(memmap_table),
		cmocka_unit_test(unpacks),
		cmocka_unit_test(bzimage_boots),
		cmocka_unit_test(bzimage_refused),
		cmocka_unit_test(pvh_boots),
		cmocka_unit_test(pvh_linux_boots),
		cmocka_unit_test(multiboot_boots),
		cmocka_unit_test(multiboot_refused),
		cmocka_unit_test(initrd_placement),
		cmocka_unit_test(initrd_too_big),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
