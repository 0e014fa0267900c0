/* SPDX-License-Identifier: MIT */
#include "elf.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "bytes.h"

bool elf_is_elf(const uint8_t *buf, size_t len)
{
	return len >= 4 && memcmp(buf, "\x7f" "ELF", 4) == 0;
}

/* Table of n entries of size ent at off lies inside the file. */
static bool table_fits(uint64_t off, uint64_t n, uint64_t ent, size_t len)
{
	return off <= len && n * ent <= len - off;
}

static int parse_tables(struct elf_file *e, char *err, size_t errlen)
{
	const uint8_t *b = e->buf;
	unsigned min_ph = e->is64 ? 56 : 32, min_sh = e->is64 ? 64 : 40;

	e->phoff = e->is64 ? get64(b + 32) : get32(b + 28);
	e->shoff = e->is64 ? get64(b + 40) : get32(b + 32);
	e->phentsize = get16(b + (e->is64 ? 54 : 42));
	e->phnum = get16(b + (e->is64 ? 56 : 44));
	e->shentsize = get16(b + (e->is64 ? 58 : 46));
	e->shnum = get16(b + (e->is64 ? 60 : 48));
	if (e->phnum && (e->phentsize < min_ph || !table_fits(e->phoff, e->phnum, e->phentsize, e->len))) {
		snprintf(err, errlen, "its program header table (%u entries of %u bytes at 0x%" PRIx64
			 ") is truncated or lies past the end of the file", e->phnum, e->phentsize, e->phoff);
		return -1;
	}
	/* Section headers only matter for notes: a bad table is ignored there. */
	if (e->shnum && (e->shentsize < min_sh || !table_fits(e->shoff, e->shnum, e->shentsize, e->len)))
		e->shnum = 0;
	return 0;
}

int elf_parse(const uint8_t *buf, size_t len, struct elf_file *e, char *err, size_t errlen)
{
	*e = (struct elf_file){ .buf = buf, .len = len };
	if (!elf_is_elf(buf, len) || len < 52) {
		snprintf(err, errlen, "its ELF header is truncated (%zu bytes)", len);
		return -1;
	}
	if (buf[4] != 1 && buf[4] != 2) {
		snprintf(err, errlen, "its ELF class %u is neither ELF32 nor ELF64", buf[4]);
		return -1;
	}
	e->is64 = buf[4] == 2;
	if (e->is64 && len < 64) {
		snprintf(err, errlen, "its ELF64 header is truncated (%zu bytes)", len);
		return -1;
	}
	if (buf[5] != 1 || buf[6] != 1) {
		snprintf(err, errlen, "it is a big-endian or unknown-version ELF, not an x86 one");
		return -1;
	}
	e->machine = get16(buf + 18);
	e->entry = e->is64 ? get64(buf + 24) : get32(buf + 24);
	return parse_tables(e, err, errlen);
}

void elf_segment(const struct elf_file *e, unsigned i, struct elf_seg *s)
{
	const uint8_t *p = e->buf + e->phoff + (uint64_t)i * e->phentsize;

	if (e->is64)
		*s = (struct elf_seg){ get32(p), get64(p + 8), get64(p + 16), get64(p + 24),
				       get64(p + 32), get64(p + 40) };
	else
		*s = (struct elf_seg){ get32(p), get32(p + 4), get32(p + 8), get32(p + 12),
				       get32(p + 16), get32(p + 20) };
}

/* Notes in [off, off + size): 1 found, 0 not. A torn last note ends the walk. */
static int scan_notes(const struct elf_file *e, uint64_t off, uint64_t size, const char *name,
		      uint32_t type, const uint8_t **desc, uint32_t *desclen)
{
	const uint8_t *p = e->buf + off;
	size_t nlen = strlen(name) + 1;

	while (size >= 12) {
		uint64_t namesz = get32(p), descsz = get32(p + 4);
		uint64_t nsz = (namesz + 3) & ~3ull, dsz = (descsz + 3) & ~3ull;

		if (12 + nsz > size || descsz > size - 12 - nsz)
			return 0;
		if (namesz == nlen && memcmp(p + 12, name, nlen) == 0 && get32(p + 8) == type) {
			*desc = p + 12 + nsz;
			*desclen = (uint32_t)descsz;
			return 1;
		}
		if (dsz > size - 12 - nsz)
			return 0;
		p += 12 + nsz + dsz;
		size -= 12 + nsz + dsz;
	}
	return 0;
}

static int note_area(const struct elf_file *e, uint64_t off, uint64_t size, const char *what,
		     char *err, size_t errlen)
{
	if (off > e->len || size > e->len - off) {
		snprintf(err, errlen, "its %s at 0x%" PRIx64 " (0x%" PRIx64
			 " bytes) lies past the end of the file", what, off, size);
		return -1;
	}
	return 0;
}

int elf_find_note(const struct elf_file *e, const char *name, uint32_t type,
		  const uint8_t **desc, uint32_t *desclen, char *err, size_t errlen)
{
	struct elf_seg s;

	for (unsigned i = 0; i < e->phnum; i++) {
		elf_segment(e, i, &s);
		if (s.type != ELF_PT_NOTE)
			continue;
		if (note_area(e, s.offset, s.filesz, "PT_NOTE segment", err, errlen))
			return -1;
		if (scan_notes(e, s.offset, s.filesz, name, type, desc, desclen))
			return 1;
	}
	for (unsigned i = 0; i < e->shnum; i++) {
		const uint8_t *sh = e->buf + e->shoff + (uint64_t)i * e->shentsize;
		uint64_t off = e->is64 ? get64(sh + 24) : get32(sh + 16);
		uint64_t size = e->is64 ? get64(sh + 32) : get32(sh + 20);

		if (get32(sh + 4) != ELF_SHT_NOTE)
			continue;
		if (note_area(e, off, size, "SHT_NOTE section", err, errlen))
			return -1;
		if (scan_notes(e, off, size, name, type, desc, desclen))
			return 1;
	}
	return 0;
}

static int check_segment(const struct elf_file *e, unsigned i, const struct elf_seg *s,
			 uint64_t low, uint64_t ram_size, char *err, size_t errlen)
{
	if (s->filesz > s->memsz) {
		snprintf(err, errlen, "segment %u: p_filesz 0x%" PRIx64 " is larger than p_memsz 0x%" PRIx64,
			 i, s->filesz, s->memsz);
		return -1;
	}
	if (s->offset > e->len || s->filesz > e->len - s->offset) {
		snprintf(err, errlen, "segment %u: its 0x%" PRIx64 " bytes at file offset 0x%" PRIx64
			 " lie past the end of the file (%zu bytes)", i, s->filesz, s->offset, e->len);
		return -1;
	}
	if (s->paddr > ram_size || s->memsz > ram_size - s->paddr) {
		snprintf(err, errlen, "segment %u at 0x%" PRIx64 " (0x%" PRIx64
			 " bytes) lies outside RAM (%" PRIu64 "M); give more with -m if it is below 4G",
			 i, s->paddr, s->memsz, ram_size >> 20);
		return -1;
	}
	if (s->paddr < low) {
		snprintf(err, errlen, "segment %u at 0x%" PRIx64 " overlaps the VMM's area below 0x%" PRIx64,
			 i, s->paddr, low);
		return -1;
	}
	return 0;
}

/* The PT_LOAD segments with bytes in RAM, each checked; -1 and err if not. */
static int load_list(const struct elf_file *e, uint64_t low, uint64_t ram_size,
		     struct elf_seg *segs, unsigned *idx, unsigned *n, char *err, size_t errlen)
{
	*n = 0;
	for (unsigned i = 0; i < e->phnum; i++) {
		struct elf_seg s;

		elf_segment(e, i, &s);
		if (s.type != ELF_PT_LOAD || s.memsz == 0)
			continue;
		if (*n == ELF_MAX_LOADS) {
			snprintf(err, errlen, "it has more than %u PT_LOAD segments", ELF_MAX_LOADS);
			return -1;
		}
		if (check_segment(e, i, &s, low, ram_size, err, errlen))
			return -1;
		for (unsigned j = 0; j < *n; j++)
			if (s.paddr < segs[j].paddr + segs[j].memsz && segs[j].paddr < s.paddr + s.memsz) {
				snprintf(err, errlen, "segments %u and %u overlap (at 0x%" PRIx64 " and 0x%" PRIx64 ")",
					 idx[j], i, segs[j].paddr, s.paddr);
				return -1;
			}
		idx[*n] = i;
		segs[(*n)++] = s;
	}
	if (*n == 0) {
		snprintf(err, errlen, "it has no PT_LOAD segment to load");
		return -1;
	}
	return 0;
}

int elf_load(const struct elf_file *e, uint8_t *mem, uint64_t low, uint64_t ram_size,
	     uint64_t *end, char *err, size_t errlen)
{
	struct elf_seg segs[ELF_MAX_LOADS];
	unsigned idx[ELF_MAX_LOADS], n;

	if (load_list(e, low, ram_size, segs, idx, &n, err, errlen))
		return -1;
	*end = 0;
	for (unsigned i = 0; i < n; i++) {
		memcpy(mem + segs[i].paddr, e->buf + segs[i].offset, segs[i].filesz);
		memset(mem + segs[i].paddr + segs[i].filesz, 0, segs[i].memsz - segs[i].filesz);
		if (segs[i].paddr + segs[i].memsz > *end)
			*end = segs[i].paddr + segs[i].memsz;
	}
	return 0;
}
