/* SPDX-License-Identifier: MIT */
#include "pagewalk.h"

#include <string.h>

#define PTE_P   (1ull << 0)
#define PTE_RW  (1ull << 1)
#define PTE_US  (1ull << 2)
#define PTE_A   (1ull << 5)
#define PTE_D   (1ull << 6)
#define PTE_PS  (1ull << 7)
#define PTE_ADDR 0x000ffffffffff000ull

const char *walk_result_name(enum walk_result r)
{
	switch (r) {
	case WALK_OK: return "ok";
	case WALK_NOT_PRESENT: return "page not present";
	case WALK_PROTECTION: return "page protection";
	case WALK_OUTSIDE_RAM: return "outside guest RAM";
	case WALK_UNSUPPORTED: return "unsupported paging mode";
	case WALK_NONCANONICAL: return "non-canonical address";
	}
	return "?";
}

static uint64_t *entry(const struct guest_mem *m, uint64_t table, unsigned idx)
{
	uint64_t addr = (table & PTE_ADDR) + idx * 8ull;

	if (addr + 8 > m->size)
		return NULL;
	return (uint64_t *)(m->base + addr);
}

enum walk_result pagewalk(const struct guest_mem *m, const struct paging *p,
			  uint64_t la, bool write, uint64_t *gpa, uint64_t *page_left)
{
	static const unsigned shifts[] = { 39, 30, 21, 12 };
	uint64_t table = p->cr3, e = 0;
	bool user_ok = true, write_ok = true;
	uint64_t *ents[4];
	unsigned level;

	if (!p->enabled) {
		*gpa = la & 0xffffffffull;
		*page_left = 0x1000 - (la & 0xfff);
		return *gpa < m->size ? WALK_OK : WALK_OUTSIDE_RAM;
	}
	if (!p->long_mode)
		return WALK_UNSUPPORTED;
	if ((uint64_t)((int64_t)(la << 16) >> 16) != la)
		return WALK_NONCANONICAL;
	for (level = 0; level < 4; level++) {
		uint64_t *pe = entry(m, table, (la >> shifts[level]) & 511);

		if (!pe)
			return WALK_OUTSIDE_RAM;
		ents[level] = pe;
		memcpy(&e, pe, sizeof(e));
		if (!(e & PTE_P))
			return WALK_NOT_PRESENT;
		user_ok = user_ok && (e & PTE_US);
		write_ok = write_ok && (e & PTE_RW);
		if (level > 0 && level < 3 && (e & PTE_PS))
			break;
		table = e;
	}
	if (level == 4)
		level = 3;
	if (p->cpl == 3 && !user_ok)
		return WALK_PROTECTION;
	if (write && !write_ok && (p->cpl == 3 || p->wp))
		return WALK_PROTECTION;
	{
		uint64_t span = 1ull << shifts[level];
		uint64_t frame = e & PTE_ADDR & ~(span - 1);

		*gpa = frame | (la & (span - 1));
		*page_left = span - (la & (span - 1));
	}
	if (*gpa >= m->size)
		return WALK_OUTSIDE_RAM;
	/* Only store when a bit is missing: walks happen on every single-step. */
	for (unsigned i = 0; i <= level; i++)
		if (!(__atomic_load_n(ents[i], __ATOMIC_RELAXED) & PTE_A))
			__atomic_fetch_or(ents[i], PTE_A, __ATOMIC_RELAXED);
	if (write && !(__atomic_load_n(ents[level], __ATOMIC_RELAXED) & PTE_D))
		__atomic_fetch_or(ents[level], PTE_D, __ATOMIC_RELAXED);
	return WALK_OK;
}

void paging_from_sregs(struct paging *p, const struct kvm_sregs *s)
{
	*p = (struct paging){
		.enabled = s->cr0 & (1ull << 31),
		.long_mode = s->efer & (1ull << 10),
		.wp = s->cr0 & (1ull << 16),
		.cr3 = s->cr3,
		.cpl = s->cs.dpl,
	};
}

size_t pagewalk_read(const struct guest_mem *m, const struct paging *p, uint64_t la,
		     uint8_t *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		uint64_t gpa, left;
		size_t chunk;

		if (pagewalk(m, p, la + done, false, &gpa, &left) != WALK_OK)
			break;
		chunk = len - done < left ? len - done : (size_t)left;
		if (gpa + chunk > m->size)
			chunk = (size_t)(m->size - gpa);
		memcpy(buf + done, m->base + gpa, chunk);
		done += chunk;
	}
	return done;
}
