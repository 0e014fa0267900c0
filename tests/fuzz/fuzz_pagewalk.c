/*
 * The guest page-table walker (pagewalk.c) against a reference walker
 * written here from the SDM's 4- and 5-level paging rules, over guest RAM
 * the input builds.
 *
 * Input:
 *   u8 pages - 1 (mod 32: RAM of 1..32 pages), u8 mode (bit 0 CR0.PG,
 *   bit 1 EFER.LMA, bit 2 CR0.WP, bits 3-4 CPL, bit 5 RAM ends 4 bytes
 *   short of the last page), u8 CR3 page, u8 CR3 junk (low and high bits),
 *   u8 more mode (bit 0 EFER.NXE, bit 1 SMEP, bit 2 SMAP, bit 3 RFLAGS.AC,
 *   bit 4 CR4.PKE, bit 5 CR4.LA57, bits 6-7 MAXPHYADDR 52/46/40/36), u32
 *   PKRU, u8 number of entries to write, then for each: u8 page, u16 slot
 *   (0-511), u8 flags (P RW US PWT PCD A D PS), u8 target page (mod 64,
 *   so some lie beyond RAM), u8 junk (bit 0: set bits 62:52 and XD,
 *   bit 1: a frame above 4 GiB), then queries to the end: u64 linear
 *   address (bit 0 clear: built from four 9-bit indices that tend to hit
 *   the entries written), u8 (bit 0 write, bit 7 fetch, bits 1-6 length of
 *   a pagewalk_read).
 * RAM is a buffer of exactly its size, so ASan catches a walk out of it.
 *
 * Oracles:
 *  - pagewalk's result, gpa, page_left and #PF error code equal the
 *    reference's: no paging is 32-bit physical; otherwise PML5 (LA57),
 *    PML4, PDPT (PS: 1 GiB), PD (PS: 2 MiB), PT, each entry read at
 *    (previous & bits MAXPHYADDR-1:12) + index * 8 and outside RAM if it
 *    does not fit; not present without P; reserved bits above MAXPHYADDR,
 *    XD without NXE, PS in PML5E/PML4E, 29:13 and 20:13 of large pages;
 *    then U/S, R/W (CR0.WP), XD, SMEP, SMAP (RFLAGS.AC) and PKRU's AD/WD
 *    for user data pages; error code P W U RSVD I/D PK as the SDM and KVM
 *    give them;
 *  - pagewalk never changes guest RAM; pagewalk_set_ad sets the accessed
 *    bit of each entry used, and dirty on the last for a write, only;
 *  - pagewalk_read returns as many leading bytes as fetches translate into
 *    RAM, and they are RAM's at the translated addresses;
 *  - pagewalk_result_name knows every result.
 */
#include <inttypes.h>

#include "fuzz.h"

#include "pagewalk.h"
#include "x86.h"


struct ref {
	enum walk_result r;
	uint64_t gpa, left;
	uint32_t ec;
	uint64_t used[5];      /* byte offsets of the entries used */
	unsigned nused;
};

static bool read_entry(const uint8_t *ram, uint64_t size, uint64_t addr, uint64_t *e)
{
	if (addr > size || size - addr < 8)
		return false;
	memcpy(e, ram + addr, 8);
	return true;
}

static void ref_walk(const uint8_t *ram, uint64_t size, const struct paging *p, uint64_t la,
		     unsigned access, struct ref *out)
{
	unsigned maxphy = p->maxphyaddr ? p->maxphyaddr : 52;
	uint64_t frame_mask = ((1ull << maxphy) - 1) & ~0xfffull;
	uint64_t table = p->cr3, e = 0, span = 0;
	bool user = true, writable = true, xd = false, write = access & WALK_WRITE;
	bool fetch = access & WALK_FETCH, pk = false, ok;
	uint32_t acc = (write ? 2 : 0) | (p->cpl == 3 ? 4 : 0) |
		       (fetch && (p->nxe || p->smep) ? 16 : 0);
	int top = p->la57 ? 5 : 4, level;

	memset(out, 0, sizeof(*out));
	if (!p->enabled) {
		out->gpa = la & 0xffffffffull;
		out->left = 0x1000 - (la & 0xfff);
		out->r = WALK_OK;
		return;
	}
	if (!p->long_mode) {
		out->r = WALK_UNSUPPORTED;
		return;
	}
	/* The CPU raises #GP before walking when the top bits do not copy bit 47 (56). */
	if (p->la57 ? (la >> 56) != 0 && (la >> 56) != 0xff
		    : (la >> 47) != 0 && (la >> 47) != 0x1ffff) {
		out->r = WALK_NONCANONICAL;
		return;
	}
	for (level = top; level >= 1; level--) {
		unsigned idx = (unsigned)(la >> (12 + 9 * (level - 1))) & 511;
		uint64_t at = (table & frame_mask) + 8ull * idx, rsvd;

		if (!read_entry(ram, size, at, &e)) {
			out->r = WALK_OUTSIDE_RAM;
			return;
		}
		out->used[out->nused++] = at;
		if (!(e & X86_PTE_P)) {
			out->r = WALK_FAULT;
			out->ec = acc;
			return;
		}
		rsvd = (e & 0x000ffffffffff000ull) & ~frame_mask;
		if (!p->nxe)
			rsvd |= e & (1ull << 63);
		if (level >= 4)
			rsvd |= e & X86_PTE_PS;
		if (level == 3 && (e & X86_PTE_PS))
			rsvd |= e & (((1ull << 30) - 1) & ~((1ull << 13) - 1));
		if (level == 2 && (e & X86_PTE_PS))
			rsvd |= e & (((1ull << 21) - 1) & ~((1ull << 13) - 1));
		if (rsvd) {
			out->r = WALK_FAULT;
			out->ec = acc | 1 | 8;
			return;
		}
		user = user && (e & X86_PTE_US);
		writable = writable && (e & X86_PTE_RW);
		xd = xd || (p->nxe && (e >> 63));
		span = 1ull << (12 + 9 * (level - 1));
		/* A PS bit ends the walk at the PDPT (1 GiB) and PD (2 MiB). */
		if ((level == 3 || level == 2) && (e & X86_PTE_PS))
			break;
		table = e;
	}
	if (p->cpl == 3)
		ok = user && (!write || writable) && !(fetch && xd);
	else if (fetch)
		ok = !xd && !(user && p->smep);
	else
		ok = !(user && p->smap && !p->ac) && !(write && !writable && p->wp);
	if (p->pke && user && !fetch) {
		unsigned key = (unsigned)(e >> 59) & 15;

		pk = ((p->pkru >> (2 * key)) & 1) ||
		     (write && ((p->pkru >> (2 * key + 1)) & 1) && (p->cpl == 3 || p->wp));
	}
	if (!ok || pk) {
		out->r = WALK_FAULT;
		out->ec = acc | 1 | (pk ? 32 : 0);
		return;
	}
	out->gpa = (e & frame_mask & ~(span - 1)) | (la & (span - 1));
	out->left = span - (la & (span - 1));
	out->r = WALK_OK;
}

/* What pagewalk_set_ad may leave in RAM: A on every entry used, D on the last for a write. */
static void ref_apply(uint8_t *ram, const struct ref *w, bool write)
{
	for (unsigned i = 0; i < w->nused; i++) {
		uint64_t e;

		memcpy(&e, ram + w->used[i], 8);
		e |= X86_PTE_A;
		if (write && i == w->nused - 1)
			e |= X86_PTE_D;
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
	uint8_t cr3_page = fuzz_u8(&in), cr3_junk = fuzz_u8(&in), mode2 = fuzz_u8(&in);
	uint32_t pkru = (uint32_t)fuzz_u16(&in) | (uint32_t)fuzz_u16(&in) << 16;
	unsigned nentries = fuzz_u8(&in);
	static const unsigned maxphys[] = { 52, 46, 40, 36 };
	struct guest_mem m;
	struct paging pg;

	pg = (struct paging){
		.enabled = mode & 1,
		/* The reference walks long mode only; 32-bit and PAE paging: unit tests. */
		.long_mode = (mode & 2) || (mode & 1),
		.wp = mode & 4,
		.cpl = (mode >> 3) & 3,
		.nxe = mode2 & 1,
		.smep = mode2 & 2,
		.smap = mode2 & 4,
		.ac = mode2 & 8,
		.pke = mode2 & 16,
		.la57 = mode2 & 32,
		.maxphyaddr = maxphys[mode2 >> 6],
		.cr3 = (uint64_t)(cr3_page % 40) << 12 | (cr3_junk & 0x18) |
		       (cr3_junk & 0x80 ? 0xfff0000000000000ull : 0),
		.pkru = pkru,
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
		uint64_t la = fuzz_u64(&in);
		uint8_t q = fuzz_u8(&in);
		bool write = q & 1;
		unsigned access = (write ? WALK_WRITE : 0) | (q & 0x80 ? WALK_FETCH : 0);
		size_t len = (q >> 1) & 63, n;
		struct ref w;
		struct walk got;
		enum walk_result r;
		uint8_t buf[64];

		if (!(la & 1)) {
			/* Indices into the pages that hold entries: walks that go somewhere. */
			uint64_t raw = la;

			la = ((raw >> 1) & 3) << 39 | ((raw >> 3) & 7) << 30 | ((raw >> 6) & 15) << 21 |
			     ((raw >> 10) & 511) << 12 | ((raw >> 19) & 0xfff);
			if (raw & (1ull << 40))
				la |= pg.la57 ? 0xff00000000000000ull : 0xffff800000000000ull;
			else if (pg.la57)
				la |= ((raw >> 41) & 3) << 48;
		}

		memcpy(shadow, ram, ram_size);
		ref_walk(shadow, ram_size, &pg, la, access, &w);
		r = pagewalk(&m, &pg, la, access, &got);
		FUZZ_CHECK(strcmp(pagewalk_result_name(r), "?") != 0, "result %d", (int)r);
		FUZZ_CHECK(r == w.r, "walk of 0x%" PRIx64 " (access %u): %s, reference %s", la,
			   access, pagewalk_result_name(r), pagewalk_result_name(w.r));
		FUZZ_CHECK(memcmp(shadow, ram, ram_size) == 0,
			   "guest RAM changed by the walk of 0x%" PRIx64, la);
		if (r == WALK_FAULT)
			FUZZ_CHECK(got.error_code == w.ec, "walk of 0x%" PRIx64 ": error code 0x%x, reference 0x%x",
				   la, got.error_code, w.ec);
		if (r == WALK_OK) {
			FUZZ_CHECK(got.gpa == w.gpa && got.page_left == w.left,
				   "0x%" PRIx64 " -> 0x%" PRIx64 " (%" PRIu64 " left), reference 0x%" PRIx64
				   " (%" PRIu64 ")", la, got.gpa, got.page_left, w.gpa, w.left);
			if (pg.enabled) {
				FUZZ_CHECK(got.nents == w.nused, "%u entries used, reference %u",
					   got.nents, w.nused);
				pagewalk_set_ad(&m, &got, write);
				ref_apply(shadow, &w, write);
				FUZZ_CHECK(memcmp(shadow, ram, ram_size) == 0,
					   "accessed/dirty bits after the walk of 0x%" PRIx64
					   " are not the reference's", la);
			}
		}

		/* pagewalk_read: each byte's fetch translation, as RAM holds it. */
		if (!len)
			continue;
		n = pagewalk_read(&m, &pg, la, buf, len);
		FUZZ_CHECK(n <= len, "read %zu of %zu", n, len);
		for (size_t k = 0; k < len; k++) {
			struct ref b;

			ref_walk(ram, ram_size, &pg, la + k, WALK_FETCH, &b);
			if (b.r != WALK_OK || b.gpa >= ram_size) {
				FUZZ_CHECK(n == k, "read %zu bytes at 0x%" PRIx64 ", byte %zu does not translate",
					   n, la, k);
				break;
			}
			if (k == len - 1)
				FUZZ_CHECK(n == len, "read %zu of %zu translatable bytes", n, len);
			if (k < n)
				FUZZ_CHECK(buf[k] == ram[b.gpa], "byte %zu at 0x%" PRIx64 " read as 0x%02x, RAM 0x%02x",
					   k, b.gpa, buf[k], ram[b.gpa]);
		}
	}
	free(ram);
	free(shadow);
	ram = shadow = NULL;
	return 0;
}
