/* SPDX-License-Identifier: MIT */
/*
 * ELF32 and ELF64 kernels, read from a buffer: the header, program headers,
 * notes (PT_NOTE segments, else SHT_NOTE sections) and PT_LOAD segments
 * loaded at their physical addresses into a buffer that stands for guest
 * RAM. Every offset and address is checked against the file and RAM; a
 * problem is one line in err and -1.
 */
#ifndef VMM_ELF_H
#define VMM_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ELF_EM_386      3
#define ELF_EM_X86_64   62
#define ELF_PT_LOAD     1
#define ELF_PT_NOTE     4
#define ELF_SHT_NOTE    7
/* At most this many PT_LOAD segments (Linux's vmlinux has 5). */
#define ELF_MAX_LOADS   64

struct elf_file {
	const uint8_t *buf;
	size_t len;
	bool is64;
	uint16_t machine;
	uint64_t entry;
	uint64_t phoff, shoff;
	uint16_t phnum, phentsize, shnum, shentsize;
};

struct elf_seg {
	uint32_t type;
	uint64_t offset, vaddr, paddr, filesz, memsz;
};

/* True when buf starts with the ELF magic. */
bool elf_is_elf(const uint8_t *buf, size_t len);
/*
 * Checks the header (class, little-endian, version, header and program
 * header table inside the file); 0 and *e, or -1 and err.
 */
int elf_parse(const uint8_t *buf, size_t len, struct elf_file *e, char *err, size_t errlen);
/* Program header i (< e->phnum), widened to 64 bits. */
void elf_segment(const struct elf_file *e, unsigned i, struct elf_seg *s);
/*
 * The first note owned by `name` with `type`: 1 with *desc and *desclen,
 * 0 when there is none, -1 and err when a note area lies past the file.
 */
int elf_find_note(const struct elf_file *e, const char *name, uint32_t type,
		  const uint8_t **desc, uint32_t *desclen, char *err, size_t errlen);
/*
 * Loads every PT_LOAD segment at p_paddr: file bytes, then zeros up to
 * p_memsz. Nothing is written unless every segment lies in the file and in
 * [low, ram_size), none overlaps another and p_filesz <= p_memsz. *end is
 * the highest address loaded (exclusive).
 */
int elf_load(const struct elf_file *e, uint8_t *mem, uint64_t low, uint64_t ram_size,
	     uint64_t *end, char *err, size_t errlen);

#endif
