/* SPDX-License-Identifier: MIT */
#include "kimage.h"

#include <lzma.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

static void w16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static void w32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void w64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

size_t kimage_note(uint8_t *out, const char *name, uint32_t type, const void *desc, uint32_t desclen)
{
	uint32_t namesz = (uint32_t)strlen(name) + 1, npad = (namesz + 3) & ~3u, dpad = (desclen + 3) & ~3u;

	memset(out, 0, 12 + npad + dpad);
	w32(out, namesz);
	w32(out + 4, desclen);
	w32(out + 8, type);
	memcpy(out + 12, name, namesz);
	memcpy(out + 12 + npad, desc, desclen);
	return 12 + npad + dpad;
}

static void phdr(uint8_t *p, bool is64, uint32_t type, uint64_t off, uint64_t paddr, uint64_t filesz,
		 uint64_t memsz)
{
	if (is64) {
		w32(p, type); w32(p + 4, 7); w64(p + 8, off); w64(p + 16, paddr); w64(p + 24, paddr);
		w64(p + 32, filesz); w64(p + 40, memsz); w64(p + 48, 0x1000);
	} else {
		w32(p, type); w32(p + 4, (uint32_t)off); w32(p + 8, (uint32_t)paddr); w32(p + 12, (uint32_t)paddr);
		w32(p + 16, (uint32_t)filesz); w32(p + 20, (uint32_t)memsz); w32(p + 24, 7); w32(p + 28, 0x1000);
	}
}

static void header(uint8_t *b, bool is64, uint16_t machine, uint64_t entry, unsigned phnum,
		   uint64_t shoff, unsigned shnum)
{
	memcpy(b, "\x7f" "ELF", 4);
	b[4] = is64 ? 2 : 1;
	b[5] = b[6] = 1;
	w16(b + 16, 2);
	w16(b + 18, machine);
	w32(b + 20, 1);
	if (is64) {
		w64(b + 24, entry); w64(b + 32, 64); w64(b + 40, shoff);
		w16(b + 52, 64); w16(b + 54, 56); w16(b + 56, (uint16_t)phnum); w16(b + 58, 64);
		w16(b + 60, (uint16_t)shnum);
	} else {
		w32(b + 24, (uint32_t)entry); w32(b + 28, 52); w32(b + 32, (uint32_t)shoff);
		w16(b + 40, 52); w16(b + 42, 32); w16(b + 44, (uint16_t)phnum); w16(b + 46, 40);
		w16(b + 48, (uint16_t)shnum);
	}
}

void kimage_elf(struct kimage *k, bool is64, uint16_t machine, uint64_t entry,
		const struct kimage_seg *segs, unsigned n, const uint8_t *notes, size_t notes_len,
		bool notes_as_section)
{
	unsigned ehsize = is64 ? 64 : 52, phent = is64 ? 56 : 32, shent = is64 ? 64 : 40;
	unsigned nph = n + (notes_len && !notes_as_section);
	size_t off = ehsize + (size_t)nph * phent;

	memset(k->buf, 0, sizeof(k->buf));
	for (unsigned i = 0; i < n; i++) {
		phdr(k->buf + ehsize + i * phent, is64, 1, off, segs[i].paddr, segs[i].filesz, segs[i].memsz);
		memcpy(k->buf + off, segs[i].data, segs[i].filesz);
		off += segs[i].filesz;
	}
	if (notes_len)
		memcpy(k->buf + off, notes, notes_len);
	if (notes_len && !notes_as_section)
		phdr(k->buf + ehsize + n * phent, is64, 4, off, 0, notes_len, notes_len);
	if (notes_len && notes_as_section) {
		uint8_t *sh = k->buf + off + notes_len + shent;

		header(k->buf, is64, machine, entry, nph, off + notes_len, 2);
		w32(sh + 4, 7);
		if (is64) {
			w64(sh + 24, off); w64(sh + 32, notes_len);
		} else {
			w32(sh + 16, (uint32_t)off); w32(sh + 20, (uint32_t)notes_len);
		}
		k->len = off + notes_len + 2 * shent;
		return;
	}
	header(k->buf, is64, machine, entry, nph, 0, 0);
	k->len = off + notes_len;
}

void kimage_bzimage(uint8_t *out, size_t *len, uint16_t version, uint16_t xloadflags,
		    uint32_t cmdline_size, const uint8_t *payload, size_t payload_len)
{
	memset(out, 0, 1024);
	out[0x1f1] = 1;
	w16(out + 0x1fe, 0xaa55);
	out[0x200] = 0xeb;
	out[0x201] = 0x66;
	memcpy(out + 0x202, "HdrS", 4);
	w16(out + 0x206, version);
	out[0x211] = 1;
	w32(out + 0x22c, 0x7fffffff);
	w16(out + 0x236, xloadflags);
	w32(out + 0x238, cmdline_size);
	w32(out + 0x248, 0);
	w32(out + 0x24c, (uint32_t)payload_len);
	memcpy(out + 1024, payload, payload_len);
	*len = 1024 + payload_len;
}

uint8_t *kimage_compress(const char *fmt, const void *in, size_t len, size_t *outlen)
{
	size_t cap = len + 1024;
	uint8_t *out = malloc(cap);

	if (!strcmp(fmt, "gzip")) {
		z_stream z = { .next_in = (Bytef *)in, .avail_in = (uInt)len, .next_out = out,
			       .avail_out = (uInt)cap };

		deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
		deflate(&z, Z_FINISH);
		*outlen = z.total_out;
		deflateEnd(&z);
	} else if (!strcmp(fmt, "xz")) {
		*outlen = 0;
		lzma_easy_buffer_encode(6, LZMA_CHECK_CRC32, NULL, in, len, out, outlen, cap);
	} else {
		*outlen = ZSTD_compress(out, cap, in, len, 3);
	}
	return out;
}
