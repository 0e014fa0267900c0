/* SPDX-License-Identifier: MIT */
/*
 * Tiny kernel images for the loader's unit tests and fuzz harnesses, as
 * tests/e2e/kernels.py builds them: ELF32/ELF64 with PT_LOAD segments and
 * a note segment, bzImages around a payload, multiboot headers.
 */
#ifndef VMM_TEST_KIMAGE_H
#define VMM_TEST_KIMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kimage_seg {
	uint64_t paddr;
	const void *data;
	uint64_t filesz, memsz;
};

struct kimage {
	uint8_t buf[8192];
	size_t len;
};

/* One note record (name, type, desc) at out; its length. */
size_t kimage_note(uint8_t *out, const char *name, uint32_t type, const void *desc, uint32_t desclen);
/* An ELF with segments and, if notes_len, a PT_NOTE segment (or SHT_NOTE section). */
void kimage_elf(struct kimage *k, bool is64, uint16_t machine, uint64_t entry,
		const struct kimage_seg *segs, unsigned n, const uint8_t *notes, size_t notes_len,
		bool notes_as_section);
/* A bzImage (protocol version, xloadflags, cmdline_size) around payload. */
void kimage_bzimage(uint8_t *out, size_t *len, uint16_t version, uint16_t xloadflags,
		    uint32_t cmdline_size, const uint8_t *payload, size_t payload_len);
/* The gzip, xz or zstd compression of in, malloc'd. */
uint8_t *kimage_compress(const char *fmt, const void *in, size_t len, size_t *outlen);

#endif
