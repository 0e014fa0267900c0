/* SPDX-License-Identifier: MIT */
/* elf.c: headers, notes and segment loading, each bad header its one line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "elf.h"
#include "kimage.h"

#define RAM (8ull << 20)
#define LOW 0x100000ull

static const uint8_t code[64] = { 0xf4, 0x90, 0x90, 0xeb, 0xfe };
static char err[512];

/* A good ELF of two segments, and its load. */
static void loads_segments(void **state)
{
	struct kimage k;
	struct kimage_seg segs[] = {
		{ LOW, code, sizeof(code), 0x2000 },
		{ 0x300000, code, 5, 5 },
	};
	struct elf_file e;
	uint8_t *mem = malloc(RAM);
	uint64_t end;

	(void)state;
	for (int is64 = 0; is64 <= 1; is64++) {
		memset(mem, 0xa5, RAM);
		kimage_elf(&k, is64, is64 ? ELF_EM_X86_64 : ELF_EM_386, LOW, segs, 2, NULL, 0, false);
		assert_int_equal(elf_parse(k.buf, k.len, &e, err, sizeof(err)), 0);
		assert_int_equal(e.is64, is64);
		assert_int_equal(e.entry, LOW);
		assert_int_equal(elf_load(&e, mem, LOW, RAM, &end, err, sizeof(err)), 0);
		assert_int_equal(end, 0x300005);
		assert_memory_equal(mem + LOW, code, sizeof(code));
		/* p_memsz beyond p_filesz is zeroed, nothing past it touched. */
		assert_int_equal(mem[LOW + sizeof(code)], 0);
		assert_int_equal(mem[LOW + 0x1fff], 0);
		assert_int_equal(mem[LOW + 0x2000], 0xa5);
		assert_int_equal(mem[LOW - 1], 0xa5);
		assert_memory_equal(mem + 0x300000, code, 5);
	}
	free(mem);
}

struct bad {
	const char *name;
	struct kimage_seg segs[2];
	unsigned n;
	const char *msg;
};

static const struct bad bad_segments[] = {
	{ "filesz > memsz", { { LOW, code, 16, 8 } }, 1, "segment 0: p_filesz 0x10 is larger than p_memsz 0x8" },
	{ "below 1 MiB", { { 0x8000, code, 16, 16 } }, 1, "segment 0 at 0x8000 overlaps the VMM's area below 0x100000" },
	{ "straddles 1 MiB", { { LOW - 8, code, 16, 16 } }, 1, "segment 0 at 0xffff8 overlaps the VMM's area" },
	{ "past RAM", { { RAM - 8, code, 16, 16 } }, 1, "segment 0 at 0x7ffff8 (0x10 bytes) lies outside RAM (8M)" },
	{ "far past RAM", { { 1ull << 40, code, 16, 16 } }, 1, "lies outside RAM" },
	{ "wraps", { { UINT64_MAX - 4, code, 16, 16 } }, 1, "lies outside RAM" },
	{ "overlap", { { LOW, code, 16, 0x1000 }, { LOW + 0xfff, code, 1, 1 } }, 2,
	  "segments 0 and 1 overlap (at 0x100000 and 0x100fff)" },
	{ "same place", { { LOW, code, 16, 16 }, { LOW, code, 16, 16 } }, 2, "segments 0 and 1 overlap" },
};

static void refuses_segments(void **state)
{
	uint8_t *mem = malloc(RAM);
	struct elf_file e;
	struct kimage k;
	uint64_t end = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(bad_segments) / sizeof(bad_segments[0]); i++) {
		const struct bad *b = &bad_segments[i];

		memset(mem, 0xa5, RAM);
		kimage_elf(&k, true, ELF_EM_X86_64, LOW, b->segs, b->n, NULL, 0, false);
		assert_int_equal(elf_parse(k.buf, k.len, &e, err, sizeof(err)), 0);
		assert_int_equal(elf_load(&e, mem, LOW, RAM, &end, err, sizeof(err)), -1);
		if (!strstr(err, b->msg))
			fail_msg("%s: '%s' does not say '%s'", b->name, err, b->msg);
		assert_null(strchr(err, '\n'));
		/* Checked before any byte is written. */
		for (uint64_t a = 0; a < RAM; a += 4096)
			if (mem[a] != 0xa5 || mem[a + 4095] != 0xa5)
				fail_msg("%s: RAM changed at 0x%llx", b->name, (unsigned long long)a);
	}
	free(mem);
}

static void put(uint8_t *p, uint64_t v, int n) { memcpy(p, &v, (size_t)n); }

/* Headers broken one field at a time. */
static void refuses_headers(void **state)
{
	struct kimage_seg seg = { LOW, code, 16, 16 };
	static const struct { const char *name; size_t off; uint64_t v; int n; size_t len; const char *msg; } cases[] = {
		{ "truncated", 0, 0, 0, 40, "its ELF header is truncated (40 bytes)" },
		{ "truncated ELF64", 0, 0, 0, 60, "its ELF64 header is truncated (60 bytes)" },
		{ "class 3", 4, 3, 1, 0, "its ELF class 3 is neither ELF32 nor ELF64" },
		{ "big-endian", 5, 2, 1, 0, "big-endian or unknown-version" },
		{ "phoff past the file", 32, 1ull << 40, 8, 0, "its program header table (2 entries of 56 bytes at 0x10000000000) is truncated" },
		{ "phnum past the file", 56, 5000, 2, 0, "(5000 entries of 56 bytes at 0x40) is truncated" },
		{ "phentsize too small", 54, 8, 2, 0, "(2 entries of 8 bytes at 0x40)" },
		{ "segment offset past the file", 64 + 8, 1ull << 62, 8, 0, "segment 0: its 0x10 bytes at file offset 0x4000000000000000 lie past the end" },
		{ "filesz past the file", 64 + 32, 0x100000, 8, 0, "segment 0: p_filesz 0x100000 is larger than p_memsz" },
		{ "note past the file", 64 + 56 + 8, 1ull << 32, 8, 0, "its PT_NOTE segment at 0x100000000" },
	};
	uint8_t note[32], *mem = calloc(1, RAM);
	size_t nlen = kimage_note(note, "Xen", 18, "\0\0\x10\0", 4);
	struct elf_file e;
	struct kimage k;
	const uint8_t *desc;
	uint32_t dlen;
	uint64_t end;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r;

		kimage_elf(&k, true, ELF_EM_X86_64, LOW, &seg, 1, note, nlen, false);
		if (cases[i].n)
			put(k.buf + cases[i].off, cases[i].v, cases[i].n);
		r = elf_parse(k.buf, cases[i].len ? cases[i].len : k.len, &e, err, sizeof(err));
		if (r == 0)
			r = elf_find_note(&e, "Xen", 18, &desc, &dlen, err, sizeof(err)) < 0 ? -1 :
			    elf_load(&e, mem, LOW, RAM, &end, err, sizeof(err));
		assert_int_equal(r, -1);
		if (!strstr(err, cases[i].msg))
			fail_msg("%s: '%s' does not say '%s'", cases[i].name, err, cases[i].msg);
	}
	free(mem);
}

static void finds_notes(void **state)
{
	struct kimage_seg seg = { LOW, code, 16, 16 };
	uint8_t notes[128];
	size_t n = kimage_note(notes, "GNU", 18, "abcd", 4);
	struct elf_file e;
	struct kimage k;
	const uint8_t *desc;
	uint32_t dlen;

	(void)state;
	n += kimage_note(notes + n, "Xen", 6, "linux", 6);
	n += kimage_note(notes + n, "Xen", 18, "\x00\x00\x10\x00\x00\x00\x00\x00", 8);
	for (int sec = 0; sec <= 1; sec++)
		for (int is64 = 0; is64 <= 1; is64++) {
			kimage_elf(&k, is64, ELF_EM_X86_64, LOW, &seg, 1, notes, n, sec);
			assert_int_equal(elf_parse(k.buf, k.len, &e, err, sizeof(err)), 0);
			assert_int_equal(elf_find_note(&e, "Xen", 18, &desc, &dlen, err, sizeof(err)), 1);
			assert_int_equal(dlen, 8);
			assert_int_equal(desc[2], 0x10);
			assert_int_equal(elf_find_note(&e, "Xen", 6, &desc, &dlen, err, sizeof(err)), 1);
			assert_string_equal((const char *)desc, "linux");
			/* Owner and type both must match. */
			assert_int_equal(elf_find_note(&e, "Xen", 7, &desc, &dlen, err, sizeof(err)), 0);
			assert_int_equal(elf_find_note(&e, "Xe", 18, &desc, &dlen, err, sizeof(err)), 0);
		}
	/* A torn note ends the walk without reading past its area. */
	kimage_elf(&k, true, ELF_EM_X86_64, LOW, &seg, 1, notes, 14, false);
	assert_int_equal(elf_parse(k.buf, k.len, &e, err, sizeof(err)), 0);
	assert_int_equal(elf_find_note(&e, "Xen", 18, &desc, &dlen, err, sizeof(err)), 0);
}

static void no_loads(void **state)
{
	struct elf_file e;
	struct kimage k;
	uint64_t end;
	uint8_t mem[16];

	(void)state;
	kimage_elf(&k, true, ELF_EM_X86_64, LOW, NULL, 0, NULL, 0, false);
	assert_int_equal(elf_parse(k.buf, k.len, &e, err, sizeof(err)), 0);
	assert_int_equal(elf_load(&e, mem, LOW, RAM, &end, err, sizeof(err)), -1);
	assert_string_equal(err, "it has no PT_LOAD segment to load");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(loads_segments),
		cmocka_unit_test(refuses_segments),
		cmocka_unit_test(refuses_headers),
		cmocka_unit_test(finds_notes),
		cmocka_unit_test(no_loads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
