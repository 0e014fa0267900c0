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

bool pagewalk_canonical(const struct paging *p, uint64_t la)
{
	unsigned shift = p->la57 ? 7 : 16;

	return (uint64_t)((int64_t)(la << shift) >> shift) == la;
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
	if (!p->long_mode)
		return WALK_UNSUPPORTED;
	if (!pagewalk_canonical(p, la))
		return WALK_NONCANONICAL;
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
	if (!permitted(p, access, user_page, writable, nx, (unsigned)(e >> 59) & 15, &pk)) {
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
		.la57 = s->cr4 & X86_CR4_LA57,
		.wp = s->cr0 & X86_CR0_WP,
		.nxe = s->efer & X86_EFER_NXE,
		.smep = s->cr4 & X86_CR4_SMEP,
		.smap = s->cr4 & X86_CR4_SMAP,
		.pke = s->cr4 & X86_CR4_PKE,
		.cr3 = s->cr3,
		.cpl = s->cs.dpl,
	};
}

size_t pagewalk_read(const struct guest_mem *m, const struct paging *p, uint64_t la,
		     uint8_t *buf, size_t len)
{
	return pagewalk_read_as(m, p, la, WALK_FETCH, buf, len);
}

size_t pagewalk_read_as(const struct guest_mem *m, const struct paging *p, uint64_t la,
			unsigned access, uint8_t *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		struct walk w;
		size_t chunk;

		if (pagewalk(m, p, la + done, access, &w) != WALK_OK || w.gpa >= m->size)
			break;
		chunk = len - done < w.page_left ? len - done : (size_t)w.page_left;
		if (chunk > m->size - w.gpa)
			chunk = (size_t)(m->size - w.gpa);
		memcpy(buf + done, m->base + w.gpa, chunk);
		done += chunk;
	}
	return done;
}
