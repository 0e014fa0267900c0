/* SPDX-License-Identifier: MIT */
/*
 * The guest page-table walker (pagewalk.c) against a reference walker
 * written here from the SDM's 4-level paging rules, over guest RAM the
 * input builds.
 *
 * Input:
 *   u8 pages - 1 (mod 32: RAM of 1..32 pages), u8 mode (bit 0 CR0.PG,
 *   bit 1 EFER.LMA, bit 2 CR0.WP, bits 3-4 CPL, bit 5 RAM ends 4 bytes
 *   short of the last page), u8 CR3 page, u8 CR3 junk (low and high bits),
 *   u8 number of entries to write, then for each: u8 page, u16 slot
 *   (0-511), u8 flags (P RW US PWT PCD A D PS), u8 target page (mod 64,
 *   so some lie beyond RAM), u8 junk (bit 0: set bits 62:52 and NX,
 *   bit 1: a frame above 4 GiB), then queries to the end: u64 linear
 *   address (bit 0 clear: built from four 9-bit indices that tend to hit
 *   the entries written), u8 (bit 0 write, bits 1-6 length of a
 *   pagewalk_read).
 * RAM is a buffer of exactly its size, so ASan catches a walk out of it.
 *
 * Oracles:
 *  - pagewalk's result, gpa and page_left equal the reference's: no
 *    paging is 32-bit physical; otherwise PML4, PDPT (PS: 1 GiB), PD (PS:
 *    2 MiB), PT, each entry read at (previous & bits 51:12) + index * 8
 *    and outside RAM if it does not fit, not present without P, user
 *    access at CPL 3 needing U/S at every level, writes needing R/W at
 *    every level at CPL 3 or with CR0.WP, the final address in RAM;
 *  - guest RAM changes only by the accessed bits of the entries used
 *    (and dirty of the last one for a write) of a successful walk;
 *  - pagewalk_read returns as many leading bytes as translate, and they
 *    are RAM's at the translated addresses;
 *  - walk_result_name knows every result.
 */
#include <inttypes.h>

#include "fuzz.h"

#include "pagewalk.h"

#define E_P   (1ull << 0)
#define E_RW  (1ull << 1)
#define E_US  (1ull << 2)
#define E_A   (1ull << 5)
#define E_D   (1ull << 6)
#define E_PS  (1ull << 7)
#define E_ADDR 0x000ffffffffff000ull

struct ref {
	enum walk_result r;
	uint64_t gpa, left;
	uint64_t used[4];      /* byte offsets of the entries used */
	unsigned nused;
};

static bool read_entry(const uint8_t *ram, uint64_t size, uint64_t table, unsigned idx,
		       uint64_t *e, uint64_t *at)
{
	uint64_t addr = (table & E_ADDR) + 8ull * idx;

	if (addr > size || size - addr < 8)
		return false;
	memcpy(e, ram + addr, 8);
	*at = addr;
	return true;
}

static void ref_walk(const uint8_t *ram, uint64_t size, const struct paging *p, uint64_t la,
		     bool write, struct ref *out)
{
	uint64_t table = p->cr3, e = 0, span = 0;
	bool user = true, writable = true;
	int level;

	out->nused = 0;
	out->gpa = out->left = 0;
	if (!p->enabled) {
		out->gpa = la & 0xffffffffull;
		out->left = 0x1000 - (la & 0xfff);
		out->r = out->gpa < size ? WALK_OK : WALK_OUTSIDE_RAM;
		return;
	}
	if (!p->long_mode) {
		out->r = WALK_UNSUPPORTED;
		return;
	}
	/* The CPU raises #GP before walking when bits 63:47 are not all equal. */
	if ((la >> 47) != 0 && (la >> 47) != 0x1ffff) {
		out->r = WALK_NONCANONICAL;
		return;
	}
	for (level = 4; level >= 1; level--) {
		unsigned idx = (unsigned)(la >> (12 + 9 * (level - 1))) & 511;
		uint64_t at;

		if (!read_entry(ram, size, table, idx, &e, &at)) {
			out->r = WALK_OUTSIDE_RAM;
			return;
		}
		out->used[out->nused++] = at;
		if (!(e & E_P)) {
			out->r = WALK_NOT_PRESENT;
			return;
		}
		user = user && (e & E_US);
		writable = writable && (e & E_RW);
		span = 1ull << (12 + 9 * (level - 1));
		/* A PS bit ends the walk at the PDPT (1 GiB) and PD (2 MiB). */
		if ((level == 3 || level == 2) && (e & E_PS))
			break;
		table = e;
	}
	if (p->cpl == 3 && !user) {
		out->r = WALK_PROTECTION;
		return;
	}
	if (write && !writable && (p->cpl == 3 || p->wp)) {
		out->r = WALK_PROTECTION;
		return;
	}
	out->gpa = (e & E_ADDR & ~(span - 1)) | (la & (span - 1));
	out->left = span - (la & (span - 1));
	out->r = out->gpa < size ? WALK_OK : WALK_OUTSIDE_RAM;
}

/* What a successful walk may leave in RAM: A on every entry used, D on the last for a write. */
static void ref_apply(uint8_t *ram, const struct ref *w, bool write)
{
	for (unsigned i = 0; i < w->nused; i++) {
		uint64_t e;

		memcpy(&e, ram + w->used[i], 8);
		e |= E_A;
		if (write && i == w->nused - 1)
			e |= E_D;
		memcpy(ram + w->used[i], &e, 8);
	}
}

static uint8_t *ram;
static uint8_t *shadow;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = fuzz_in(data, size);
	unsigned pages = 1 + fuzz_u8(&in) % 32;
	uint8_t mode = fuzz_u8(&in);
	uint64_t ram_size = pages * 4096ull - (mode & 0x20 ? 4 : 0);
	uint8_t cr3_page = fuzz_u8(&in), cr3_junk = fuzz_u8(&in);
	unsigned nentries = fuzz_u8(&in);
	struct guest_mem m;
	struct paging pg = {
		.enabled = mode & 1,
		.long_mode = mode & 2,
		.wp = mode & 4,
		.cpl = (mode >> 3) & 3,
		.cr3 = (uint64_t)(cr3_page % 40) << 12 | (cr3_junk & 0x18) |
		       (cr3_junk & 0x80 ? 0xfff0000000000000ull : 0),
	};

	ram = malloc(ram_size);
	shadow = malloc(ram_size);
	FUZZ_SETUP(ram && shadow);
	memset(ram, 0, ram_size);
	m = (struct guest_mem){ ram, ram_size };

	for (unsigned n = 0; n < nentries && in.n; n++) {
		unsigned page = fuzz_u8(&in) % pages;
		unsigned slot = fuzz_u16(&in) % 512;
		uint8_t flags = fuzz_u8(&in), target = fuzz_u8(&in) % 64, junk = fuzz_u8(&in);
		uint64_t e = (uint64_t)target << 12 | flags;
		uint64_t at = page * 4096ull + slot * 8ull;

		if (junk & 1)
			e |= 0xfff0000000000000ull;
		if (junk & 2)
			e |= (uint64_t)(junk >> 2) << 32;
		if (at + 8 <= ram_size)
			memcpy(ram + at, &e, 8);
	}

	while (in.n) {
		uint64_t la = fuzz_u64(&in), gpa = 0xdead, left = 0xdead;
		uint8_t q = fuzz_u8(&in);
		bool write = q & 1;
		size_t len = (q >> 1) & 63, n;
		struct ref w;
		enum walk_result r;
		uint8_t buf[64], after_read[64];

		if (!(la & 1)) {
			/* Indices into the pages that hold entries: walks that go somewhere. */
			uint64_t raw = la;

			la = ((raw >> 1) & 3) << 39 | ((raw >> 3) & 7) << 30 | ((raw >> 6) & 15) << 21 |
			     ((raw >> 10) & 511) << 12 | ((raw >> 19) & 0xfff);
			if (raw & (1ull << 40))
				la |= 0xffff800000000000ull;
		}

		memcpy(shadow, ram, ram_size);
		ref_walk(shadow, ram_size, &pg, la, write, &w);
		r = pagewalk(&m, &pg, la, write, &gpa, &left);
		FUZZ_CHECK(strcmp(walk_result_name(r), "?") != 0, "result %d", (int)r);
		FUZZ_CHECK(r == w.r, "walk of 0x%" PRIx64 " (%s): %s, reference %s", la,
			   write ? "write" : "read", walk_result_name(r), walk_result_name(w.r));
		if (r == WALK_OK) {
			FUZZ_CHECK(gpa == w.gpa && left == w.left,
				   "0x%" PRIx64 " -> 0x%" PRIx64 " (%" PRIu64 " left), reference 0x%" PRIx64
				   " (%" PRIu64 ")", la, gpa, left, w.gpa, w.left);
			if (pg.enabled)
				ref_apply(shadow, &w, write);
		}
		FUZZ_CHECK(memcmp(shadow, ram, ram_size) == 0,
			   "guest RAM after the walk of 0x%" PRIx64 " is not the reference's", la);

		/* pagewalk_read: each byte's translation, as RAM holds it after. */
		if (!len)
			continue;
		n = pagewalk_read(&m, &pg, la, buf, len);
		FUZZ_CHECK(n <= len, "read %zu of %zu", n, len);
		memcpy(after_read, buf, n);
		for (size_t k = 0; k < len; k++) {
			struct ref b;

			ref_walk(ram, ram_size, &pg, la + k, false, &b);
			if (b.r != WALK_OK) {
				FUZZ_CHECK(n == k, "read %zu bytes at 0x%" PRIx64 ", byte %zu does not translate",
					   n, la, k);
				break;
			}
			if (k == len - 1)
				FUZZ_CHECK(n == len, "read %zu of %zu translatable bytes", n, len);
			if (k < n) {
				uint8_t now = ram[b.gpa];

				/* A later walk may have set an accessed bit in a byte read before. */
				FUZZ_CHECK(after_read[k] == now ||
					   (b.gpa % 8 == 0 && (after_read[k] ^ now) == E_A),
					   "byte %zu at 0x%" PRIx64 " read as 0x%02x, RAM 0x%02x", k,
					   b.gpa, after_read[k], now);
			}
		}
	}
	free(ram);
	free(shadow);
	ram = shadow = NULL;
	return 0;
}
