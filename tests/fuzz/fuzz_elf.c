/* SPDX-License-Identifier: MIT */
/*
 * ELF kernels: elf_parse, elf_find_note, elf_load.
 *
 * Input: u8 RAM size in 256 KiB units (1..64, 0 and beyond wrap), then the
 * ELF file's bytes. RAM is a malloc'd buffer of exactly that size filled
 * with a pattern, so ASan catches a write past it.
 *
 * Oracles:
 *  - a parsed file's program header table lies inside it, with entries of
 *    at least the class's size;
 *  - a note found lies inside the file with its descriptor;
 *  - a load that fails changes no byte of RAM and says why in one line;
 *  - a load that succeeds loaded exactly the PT_LOAD segments with bytes
 *    (computed here again from the headers): each inside [1 MiB, RAM),
 *    none overlapping, p_filesz <= p_memsz, file bytes inside the file;
 *    RAM holds their file bytes then zeros, and no other byte changed;
 *    *end is the highest end.
 */
#include "fuzz.h"

#include "elf.h"

#define PATTERN 0xa5
#define LOW 0x100000u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = fuzz_in(data, size);
	uint64_t ram = (uint64_t)(1 + (fuzz_u8(&in) & 63)) << 18;
	struct elf_file e;
	struct elf_seg s;
	const uint8_t *desc;
	uint32_t dlen;
	uint64_t end = 0, want_end = 0, covered = 0;
	char err[512] = "";
	uint8_t *mem;
	int r;

	if (elf_parse(in.p, in.n, &e, err, sizeof(err))) {
		FUZZ_CHECK(err[0] && !strchr(err, '\n'), "parse message '%s'", err);
		return 0;
	}
	FUZZ_CHECK(!e.phnum || (e.phoff <= in.n && (uint64_t)e.phnum * e.phentsize <= in.n - e.phoff &&
				e.phentsize >= (e.is64 ? 56 : 32)), "program headers outside the file");
	r = elf_find_note(&e, "Xen", 18, &desc, &dlen, err, sizeof(err));
	if (r == 1)
		FUZZ_CHECK(desc >= in.p && desc + dlen <= in.p + in.n, "note outside the file");
	mem = malloc(ram);
	FUZZ_SETUP(mem);
	memset(mem, PATTERN, ram);
	r = elf_load(&e, mem, LOW, ram, &end, err, sizeof(err));
	if (r) {
		FUZZ_CHECK(err[0] && !strchr(err, '\n'), "load message '%s'", err);
		FUZZ_CHECK(fuzz_all_bytes(mem, ram, PATTERN), "a failed load changed RAM: %s", err);
		free(mem);
		return 0;
	}
	for (unsigned i = 0; i < e.phnum; i++) {
		elf_segment(&e, i, &s);
		if (s.type != ELF_PT_LOAD || s.memsz == 0)
			continue;
		FUZZ_CHECK(s.paddr >= LOW && s.paddr <= ram && s.memsz <= ram - s.paddr, "segment %u outside RAM", i);
		FUZZ_CHECK(s.filesz <= s.memsz && s.offset <= in.n && s.filesz <= in.n - s.offset, "segment %u", i);
		FUZZ_CHECK(memcmp(mem + s.paddr, in.p + s.offset, s.filesz) == 0, "segment %u's bytes", i);
		FUZZ_CHECK(fuzz_all_bytes(mem + s.paddr + s.filesz, s.memsz - s.filesz, 0), "segment %u's zeros", i);
		if (s.paddr + s.memsz > want_end)
			want_end = s.paddr + s.memsz;
		covered += s.memsz;
		/* Mark it so that what stays PATTERN is exactly the rest. */
		memset(mem + s.paddr, PATTERN, s.memsz);
	}
	FUZZ_CHECK(end == want_end, "end 0x%llx, segments end at 0x%llx", (unsigned long long)end,
		   (unsigned long long)want_end);
	FUZZ_CHECK(covered <= ram, "segments overlap");
	FUZZ_CHECK(fuzz_all_bytes(mem, ram, PATTERN), "a byte outside the segments changed");
	free(mem);
	return 0;
}
