/* SPDX-License-Identifier: MIT */
#include "pagewalk.h"

#include <string.h>

#include "x86.h"

const char *pagewalk_result_name(enum walk_result r)
{
	switch (r) {
	case WALK_OK: return "ok";
	case WALK_FAULT: return "page fault";
	case WALK_OUTSIDE_RAM: return "page table outside guest RAM";
	case WALK_UNSUPPORTED: return "unsupported paging mode";
	case WALK_NONCANONICAL: return "non-canonical address";
	}
	return "?";
}

bool pagewalk_canonical(uint64_t la, bool la57)
{
	unsigned shift = la57 ? 7 : 16;

	return (uint64_t)((int64_t)(la << shift) >> shift) == la;
}

uint8_t *pagewalk_write_byte(const struct guest_mem *m, const struct paging *p, uint64_t la)
{
	struct walk w;

	if (pagewalk(m, p, la, WALK_WRITE, &w) != WALK_OK || w.gpa >= m->size)
		return NULL;
	return m->base + w.gpa;
}

static uint64_t phys_mask(const struct paging *p)
{
	unsigned bits = p->maxphyaddr && p->maxphyaddr < 52 ? p->maxphyaddr : 52;

	return ((1ull << bits) - 1) & ~0xfffull;
}

/* Reserved bits of a present entry at `level` (1 = PTE ... 5 = PML5E). */
static uint64_t reserved_bits(const struct paging *p, unsigned level, uint64_t e)
{
	uint64_t r = 0x000ffffffffff000ull & ~phys_mask(p);

	if (!p->nxe)
		r |= X86_PTE_XD;
	if (level >= 4)
		r |= X86_PTE_PS;
	else if (level == 3 && (e & X86_PTE_PS))
		r |= 0x3fffe000ull;      /* bits 29:13 of a 1 GiB page */
	else if (level == 2 && (e & X86_PTE_PS))
		r |= 0x1fe000ull;        /* bits 20:13 of a 2 MiB page */
	return r;
}

/* The error code bits that describe the access itself, not the fault. */
static uint32_t access_bits(const struct paging *p, unsigned access)
{
	uint32_t ec = 0;

	if (access & WALK_WRITE)
		ec |= X86_PF_W;
	if (p->cpl == 3)
		ec |= X86_PF_U;
	/* As KVM reports it: I/D only where NXE or SMEP give fetches rules. */
	if ((access & WALK_FETCH) && (p->nxe || p->smep))
		ec |= X86_PF_I;
	return ec;
}

/* SDM vol. 3 4.6: whether the translation allows the access; *pk for PKRU. */
static bool permitted(const struct paging *p, unsigned access, bool user_page,
		      bool writable, bool nx, unsigned pkey, bool *pk)
{
	bool write = access & WALK_WRITE, fetch = access & WALK_FETCH;
	bool ok = true;

	if (p->cpl == 3) {
		if (!user_page || (write && !writable) || (fetch && nx))
			ok = false;
	} else if (fetch) {
		if (nx || (user_page && p->smep))
			ok = false;
	} else {
		if (user_page && p->smap && !p->ac)
			ok = false;
		if (write && !writable && p->wp)
			ok = false;
	}
	/* Keys apply to data accesses to user pages, at any CPL, as KVM models it. */
	*pk = false;
	if (p->pke && user_page && !fetch) {
		bool ad = (p->pkru >> (2 * pkey)) & 1, wd = (p->pkru >> (2 * pkey + 1)) & 1;

		*pk = ad || (write && wd && (p->cpl == 3 || p->wp));
	}
	return ok && !*pk;
}

/* 32-bit paging (SDM vol. 3 4.3): 4-byte entries, two levels, no XD, no keys. */
static enum walk_result walk32(const struct guest_mem *m, const struct paging *p, uint32_t la,
			       unsigned access, struct walk *w)
{
	uint64_t addr = (p->cr3 & 0xfffff000ull) + ((la >> 22) & 0x3ff) * 4, gpa, span;
	uint32_t e;
	bool user_page, writable, pk;

	w->ent32 = true;
	for (unsigned level = 2;; level--) {
		if (addr > m->size || m->size - addr < 4)
			return WALK_OUTSIDE_RAM;
		e = __atomic_load_n((uint32_t *)(m->base + addr), __ATOMIC_RELAXED);
		w->ent_gpa[w->nents++] = addr;
		if (!(e & X86_PTE_P)) {
			w->error_code = access_bits(p, access);
			return WALK_FAULT;
		}
		if (level == 2 && p->pse && (e & X86_PTE_PS)) {
			/* 4 MiB page: bits 20:13 are physical bits 39:32 (PSE-36), 21 reserved. */
			uint64_t hi = (uint64_t)(e >> 13 & 0xff) << 32;

			if ((e & (1u << 21)) || (hi & ~phys_mask(p))) {
				w->error_code = access_bits(p, access) | X86_PF_P | X86_PF_RSVD;
				return WALK_FAULT;
			}
			gpa = hi | (e & 0xffc00000u);
			span = 1ull << 22;
			break;
		}
		if (level == 1) {
			gpa = e & 0xfffff000u;
			span = 1ull << 12;
			break;
		}
		addr = (e & 0xfffff000u) + ((la >> 12) & 0x3ff) * 4;
	}
	/* U/S and R/W of both levels count; a 4 MiB page has only one. */
	user_page = true;
	writable = true;
	for (unsigned i = 0; i < w->nents; i++) {
		uint32_t x = __atomic_load_n((uint32_t *)(m->base + w->ent_gpa[i]), __ATOMIC_RELAXED);

		user_page = user_page && (x & X86_PTE_US);
		writable = writable && (x & X86_PTE_RW);
	}
	if (!permitted(p, access, user_page, writable, false, 0, &pk)) {
		w->error_code = access_bits(p, access) | X86_PF_P;
		return WALK_FAULT;
	}
	w->gpa = gpa | (la & (span - 1));
	w->page_left = span - (la & (span - 1));
	return WALK_OK;
}

/*
 * PAE paging's PDPTE (SDM vol. 3 4.4.1): only P and the address count. The
 * CPU loads the four PDPTEs at MOV CR3 (and CR0/CR4 changes), where a
 * reserved bit is #GP, and walks with those copies: a reserved bit is never
 * a #PF, and one that is set in memory now was set after the load, by the
 * guest or by the CPU itself (the lab's sets the accessed bit, 5, in
 * them). The copies themselves are not in kvm_sregs: memory stands in.
 */
static enum walk_result walk_pdpte(const struct guest_mem *m, const struct paging *p, uint32_t la,
				   unsigned access, struct walk *w, uint64_t *table)
{
	uint64_t addr = (p->cr3 & 0xffffffe0ull) + ((la >> 30) & 3) * 8, e;

	if (addr > m->size || m->size - addr < 8)
		return WALK_OUTSIDE_RAM;
	e = __atomic_load_n((uint64_t *)(m->base + addr), __ATOMIC_RELAXED);
	if (!(e & X86_PTE_P)) {
		w->error_code = access_bits(p, access);
		return WALK_FAULT;
	}
	*table = e;	/* the walk takes bits M-1:12 of it */
	return WALK_OK;
}

enum walk_result pagewalk(const struct guest_mem *m, const struct paging *p, uint64_t la,
			  unsigned access, struct walk *w)
{
	unsigned levels = p->la57 ? 5 : 4, level;
	uint64_t table = p->cr3, e = 0, span = 0;
	bool user_page = true, writable = true, nx = false, pk;

	memset(w, 0, sizeof(*w));
	if (!p->enabled) {
		w->gpa = la & 0xffffffffull;
		w->page_left = 0x1000 - (la & 0xfff);
		return WALK_OK;
	}
	if (!p->long_mode) {
		enum walk_result r;

		la &= 0xffffffffull;
		if (!p->pae)
			return walk32(m, p, (uint32_t)la, access, w);
		r = walk_pdpte(m, p, (uint32_t)la, access, w, &table);
		if (r != WALK_OK)
			return r;
		levels = 2;
	} else if (!pagewalk_canonical(la, p->la57)) {
		return WALK_NONCANONICAL;
	}
	for (level = levels; level >= 1; level--) {
		uint64_t addr = (table & phys_mask(p)) + ((la >> (12 + 9 * (level - 1))) & 511) * 8;

		if (addr > m->size || m->size - addr < 8)
			return WALK_OUTSIDE_RAM;
		e = __atomic_load_n((uint64_t *)(m->base + addr), __ATOMIC_RELAXED);
		w->ent_gpa[w->nents++] = addr;
		if (!(e & X86_PTE_P)) {
			w->error_code = access_bits(p, access);
			return WALK_FAULT;
		}
		if (e & reserved_bits(p, level, e)) {
			w->error_code = access_bits(p, access) | X86_PF_P | X86_PF_RSVD;
			return WALK_FAULT;
		}
		user_page = user_page && (e & X86_PTE_US);
		writable = writable && (e & X86_PTE_RW);
		nx = nx || (p->nxe && (e & X86_PTE_XD));
		span = 1ull << (12 + 9 * (level - 1));
		if (level == 1 || ((level == 2 || level == 3) && (e & X86_PTE_PS)))
			break;
		table = e;
	}
	/* Protection keys exist in long mode only. */
	if (!permitted(p, access, user_page, writable, nx,
		       p->long_mode ? (unsigned)(e >> X86_PTE_PKEY_SHIFT) & 15 : 0, &pk)) {
		w->error_code = access_bits(p, access) | X86_PF_P | (pk ? X86_PF_PK : 0);
		return WALK_FAULT;
	}
	w->gpa = (e & phys_mask(p) & ~(span - 1)) | (la & (span - 1));
	w->page_left = span - (la & (span - 1));
	return WALK_OK;
}

void pagewalk_set_ad(const struct guest_mem *m, const struct walk *w, bool write)
{
	for (unsigned i = 0; i < w->nents; i++) {
		uint64_t *pe = (uint64_t *)(m->base + w->ent_gpa[i]);
		uint64_t bits = X86_PTE_A | (write && i == w->nents - 1 ? X86_PTE_D : 0);

		if (w->ent32) {
			uint32_t *pe32 = (uint32_t *)(m->base + w->ent_gpa[i]);

			if ((__atomic_load_n(pe32, __ATOMIC_RELAXED) & bits) != bits)
				__atomic_fetch_or(pe32, (uint32_t)bits, __ATOMIC_RELAXED);
			continue;
		}

		/* Only store when a bit is missing: other vCPUs share the tables. */
		if ((__atomic_load_n(pe, __ATOMIC_RELAXED) & bits) != bits)
			__atomic_fetch_or(pe, bits, __ATOMIC_RELAXED);
	}
}

void pagewalk_from_sregs(struct paging *p, const struct kvm_sregs *s)
{
	*p = (struct paging){
		.enabled = s->cr0 & X86_CR0_PG,
		.long_mode = s->efer & X86_EFER_LMA,
		.pae = s->cr4 & X86_CR4_PAE,
		.pse = s->cr4 & X86_CR4_PSE,
		.la57 = s->cr4 & X86_CR4_LA57,
		.wp = s->cr0 & X86_CR0_WP,
		.nxe = s->efer & X86_EFER_NXE,
		.smep = s->cr4 & X86_CR4_SMEP,
		.smap = s->cr4 & X86_CR4_SMAP,
		.pke = s->cr4 & X86_CR4_PKE,
		.cr3 = s->cr3,
		.cpl = s->ss.dpl,
	};
}

size_t pagewalk_read(const struct guest_mem *m, const struct paging *p, uint64_t la,
		     uint8_t *buf, size_t len)
{
	return pagewalk_read_as(m, p, la, WALK_FETCH, buf, len);
}

/* pagewalk_read_as() and pagewalk_read_filled(): fill < 0 stops where RAM ends. */
static size_t read_walked(const struct guest_mem *m, const struct paging *p, uint64_t la,
			  unsigned access, uint8_t *buf, size_t len, int fill, enum walk_result *why)
{
	enum walk_result r = WALK_OK;
	size_t done = 0;

	while (done < len) {
		struct walk w;
		size_t chunk, ram;

		r = pagewalk(m, p, la + done, access, &w);
		if (r != WALK_OK || (fill < 0 && w.gpa >= m->size))
			break;
		chunk = len - done < w.page_left ? len - done : (size_t)w.page_left;
		ram = w.gpa >= m->size ? 0 : chunk < m->size - w.gpa ? chunk : (size_t)(m->size - w.gpa);
		if (ram)
			memcpy(buf + done, m->base + w.gpa, ram);
		if (ram < chunk && fill < 0) {
			done += ram;
			break;
		}
		memset(buf + done + ram, fill, chunk - ram);
		done += chunk;
	}
	if (why)
		*why = r;
	return done;
}

size_t pagewalk_read_as(const struct guest_mem *m, const struct paging *p, uint64_t la,
			unsigned access, uint8_t *buf, size_t len)
{
	return read_walked(m, p, la, access, buf, len, -1, NULL);
}

size_t pagewalk_read_filled(const struct guest_mem *m, const struct paging *p, uint64_t la,
			    unsigned access, uint8_t *buf, size_t len, uint8_t fill,
			    enum walk_result *why)
{
	return read_walked(m, p, la, access, buf, len, fill, why);
}
