/* SPDX-License-Identifier: MIT */
/*
 * The event-delivery model (delivery.c) on random vCPU state and random
 * guest RAM of 1 to 64 pages, in every mode the input can put together.
 *
 * Input:
 *   u8 a (bit 0 EFER.LMA, bit 1 CR0.PE, bit 2 CR0.PG, bit 3 RFLAGS.VM (PE, no LMA),
 *         bits 4-5 CPL (SS.DPL), bit 6 CR4.PAE, bit 7 the guest's TF),
 *   u8 b (bit 0 soft, bit 1 fault, bit 2 error code, bit 3 RF owed,
 *         bit 4 through the IVT (CR4.VME; no LMA), bit 5 CR0.WP, bit 6 CR4.LA57,
 *         bit 7 CR4.CET),
 *   u8 vector, u32 error code, u64 RIP pushed, u64 RSP, u32 RFLAGS,
 *   u8 RAM pages - 1 (mod 64), u8 MAXPHYADDR - 32 (mod 21),
 *   u32 CR3, IDTR, GDTR and TR bases (cut to 18 bits: mostly in RAM),
 *   u16 their limits, u8 TR type,
 *   CS and SS: u16 selector, u32 base (18 bits), u32 limit, u8 flags
 *   (bit 0 D/B, bit 1 L, bit 2 expand-down, bit 3 unusable),
 *   u16 ES, DS, FS, GS selectors, u16 IVT FLAGS image, u32 IVT handler
 *   FLAGS, then RAM's bytes (the rest zero).
 * RAM is a buffer of exactly its size, so ASan catches an access out of it.
 *
 * Oracles:
 *  - the outcome is one of the three; DELIVERY_FAULT only for INT n and
 *    only #GP or #NP with error code vector * 8 + 2, outside real mode
 *    (EFER.LMA alone, as the input may have it, reads 16-byte gates);
 *  - where the event faults or is left to the CPU, RAM is unchanged;
 *  - a delivery writes its frame (the result's bytes) at the linear
 *    addresses it names (through the page tables as they were), and
 *    otherwise only sets bits: the accessed and dirty bits of paging
 *    entries, a descriptor's accessed bit;
 *  - the frame is whole slots: [error code,] RIP, CS, FLAGS, ... with the
 *    event's RIP, the interrupted CS and the guest's TF in the image; in
 *    IA-32e mode six or five 8-byte slots whose top is 16-byte aligned
 *    and RSP its first byte;
 *  - the handler runs with TF, RF and VM clear (but through the IVT from
 *    virtual-8086 mode, whose FLAGS are given), NT too in protected mode,
 *    at the CPL its CS selector's RPL says, not above the interrupted
 *    one; on a 64-bit stack switch SS is null with that RPL.
 */
#include <inttypes.h>

#include "fuzz.h"

#include "delivery.h"
#include "emulate.h"
#include "x86.h"

struct input {
	struct delivery_cpu cpu;
	struct delivery_event e;
	uint64_t ram_size;
};

static void read_segment(struct fuzz_in *in, struct kvm_segment *s)
{
	uint8_t f;

	s->selector = fuzz_u16(in);
	s->base = fuzz_u32(in) & 0x3ffff;
	s->limit = fuzz_u32(in);
	f = fuzz_u8(in);
	s->db = f & 1;
	s->l = (f >> 1) & 1;
	s->type = f & 4 ? 0x7 : 0x3;
	s->unusable = (f >> 3) & 1;
	s->present = !s->unusable;
	s->s = 1;
}

static void read_control(struct fuzz_in *in, struct input *t, uint8_t a, uint8_t b)
{
	struct kvm_sregs *s = &t->cpu.sregs;
	unsigned maxphy;

	s->efer = a & 1 ? X86_EFER_LMA | X86_EFER_LME : 0;
	s->cr0 = (a & 2 ? X86_CR0_PE : 0) | (a & 4 ? X86_CR0_PG : 0) | (b & 0x20 ? X86_CR0_WP : 0);
	s->cr4 = (a & 0x40 ? X86_CR4_PAE : 0) | (b & 0x40 ? X86_CR4_LA57 : 0) |
		 (b & 0x80 ? X86_CR4_CET : 0);
	t->ram_size = ((uint64_t)(fuzz_u8(in) % 64) + 1) << 12;
	maxphy = 32 + fuzz_u8(in) % 21;
	s->cr3 = fuzz_u32(in) & 0x3ffff;
	s->idt.base = fuzz_u32(in) & 0x3ffff;
	s->gdt.base = fuzz_u32(in) & 0x3ffff;
	s->tr.base = fuzz_u32(in) & 0x3ffff;
	s->idt.limit = fuzz_u16(in);
	s->gdt.limit = fuzz_u16(in);
	s->tr.limit = fuzz_u16(in);
	s->tr.type = fuzz_u8(in) & 0xf;
	s->tr.present = 1;
	read_segment(in, &s->cs);
	read_segment(in, &s->ss);
	s->ss.dpl = (a >> 4) & 3;
	s->es.selector = fuzz_u16(in);
	s->ds.selector = fuzz_u16(in);
	s->fs.selector = fuzz_u16(in);
	s->gs.selector = fuzz_u16(in);
	emulate_paging(&t->cpu.implicit, s, &t->cpu.regs, 0, maxphy);
	t->cpu.implicit.cpl = 0;
	t->cpu.implicit.ac = false;
}

static void read_input(struct fuzz_in *in, struct input *t)
{
	uint8_t a = fuzz_u8(in), b = fuzz_u8(in);
	uint64_t flags;

	memset(t, 0, sizeof(*t));
	t->e.soft = b & 1;
	t->e.fault = (b >> 1) & 1;
	t->e.error_code = (b >> 2) & 1;
	t->e.rf = (b >> 3) & 1;
	t->e.ivt = (b >> 4) & 1 && !(a & 1);	/* CR4.VME's IVT: outside IA-32e mode only */
	t->e.vector = fuzz_u8(in);
	t->e.err = fuzz_u32(in);
	t->e.rip = fuzz_u64(in);
	t->cpu.regs.rip = t->e.rip;
	t->cpu.regs.rsp = fuzz_u64(in);
	flags = (fuzz_u32(in) & 0x3d7fd5u & ~X86_RFLAGS_VM) | X86_RFLAGS_FIXED;
	/* VM only in protected mode outside IA-32e mode, where it can be set. */
	t->cpu.regs.rflags = flags | ((a & 0xb) == 0xa ? X86_RFLAGS_VM : 0);
	t->cpu.guest_tf = a >> 7;
	read_control(in, t, a, b);
	t->e.ivt_image = fuzz_u16(in);
	t->e.ivt_flags = fuzz_u32(in);
}

/* Where linear la is in RAM for the implicit accesses (the frame's bytes were written there). */
static bool gpa_of(const struct guest_mem *m, const struct paging *p, uint64_t la, uint64_t *gpa)
{
	struct walk w;

	if (pagewalk(m, p, la, 0, &w) != WALK_OK || w.gpa >= m->size)
		return false;
	*gpa = w.gpa;
	return true;
}

static uint64_t slot(const struct delivery_result *d, unsigned size, unsigned i)
{
	uint64_t v = 0;

	for (unsigned b = 0; b < size; b++)
		v |= (uint64_t)d->frame[i * size + b] << (8 * b);
	return v;
}

/*
 * The frame's bytes are in RAM where it says (translated through the page
 * tables as they were: a frame may overwrite them); any other change only
 * sets A, D or accessed bits, which may land on the frame's bytes too.
 */
static void check_ram(const struct input *t, const struct guest_mem *m, uint8_t *before,
		      const struct delivery_result *d, bool long64)
{
	uint16_t *want = calloc(m->size, sizeof(*want));	/* 0x100 | the byte written */
	struct guest_mem old = { before, m->size };
	struct paging p = t->cpu.implicit;

	FUZZ_SETUP(want);
	p.smap = p.smep = p.pke = false;	/* a translation, whoever made the write */
	p.wp = false;
	for (unsigned i = 0; i < d->frame_bytes; i++) {
		uint64_t la = d->frame_la[0] + i, gpa;

		if (!long64)
			la &= 0xffffffffull;
		if (i == d->frame_bytes - 1)
			FUZZ_CHECK(la == d->frame_la[1], "frame ends at %#" PRIx64 ", not %#" PRIx64,
				   d->frame_la[1], la);
		FUZZ_CHECK(gpa_of(&old, &p, la, &gpa), "frame byte %u at %#" PRIx64 " not in RAM", i,
			   la);
		want[gpa] = 0x100 | d->frame[i];
	}
	for (uint64_t i = 0; i < m->size; i++) {
		uint8_t was = want[i] ? (uint8_t)want[i] : before[i];

		if (m->base[i] == was)
			continue;
		FUZZ_CHECK(!(was & ~m->base[i]) && !(m->base[i] & ~was & ~0x61u),
			   "RAM byte %#" PRIx64 " %#x -> %#x (frame: %d)", i, before[i], m->base[i],
			   want[i] != 0);
	}
	free(want);
}

static void check_frame(const struct input *t, const struct delivery_result *d, bool long64)
{
	unsigned size = d->slot, words = size ? d->frame_bytes / size : 0, i = 0;
	bool real = !(t->cpu.sregs.cr0 & X86_CR0_PE) || t->e.ivt;
	uint64_t mask = size == 8 ? ~0ull : (1ull << (8 * size)) - 1, image;

	FUZZ_CHECK((size == 8) == long64 && (size == 8 || size == 4 || size == 2) &&
		   d->frame_bytes % size == 0 && words >= 3 && words <= 10,
		   "frame of %u bytes in %u-byte slots", d->frame_bytes, size);
	if (long64) {
		FUZZ_CHECK(words == 5u + t->e.error_code, "%u words", words);
		FUZZ_CHECK((d->frame_la[0] + d->frame_bytes) % 16 == 0, "frame top %#" PRIx64,
			   d->frame_la[0] + d->frame_bytes);
		FUZZ_CHECK(d->regs.rsp == d->frame_la[0], "RSP %#llx", d->regs.rsp);
		FUZZ_CHECK(slot(d, 8, words - 2) == t->cpu.regs.rsp &&
			   slot(d, 8, words - 1) == t->cpu.sregs.ss.selector, "SS:RSP pushed");
	}
	if (t->e.error_code && !real)
		FUZZ_CHECK(slot(d, size, i++) == (t->e.err & mask), "error code pushed");
	FUZZ_CHECK(slot(d, size, i) == (t->e.rip & mask), "RIP pushed %#" PRIx64, slot(d, size, i));
	FUZZ_CHECK(slot(d, size, i + 1) == t->cpu.sregs.cs.selector, "CS pushed");
	image = slot(d, size, i + 2);
	if (!t->e.ivt)
		FUZZ_CHECK(!(image & X86_RFLAGS_TF) == !t->cpu.guest_tf, "image %#" PRIx64 " TF", image);
}

static void check_handler(const struct input *t, const struct delivery_result *d, bool long64)
{
	uint64_t f = d->regs.rflags;
	unsigned cpl = d->sregs.cs.selector & 3;

	if (t->e.ivt)
		return;		/* its FLAGS are the caller's (step_vme_int()) */
	FUZZ_CHECK(!(f & (X86_RFLAGS_TF | X86_RFLAGS_RF | X86_RFLAGS_VM)), "handler RFLAGS %#" PRIx64,
		   f);
	if (!(t->cpu.sregs.cr0 & X86_CR0_PE))
		return;		/* real mode keeps NT (SDM 20.1.4) */
	FUZZ_CHECK(!(f & X86_RFLAGS_NT), "handler RFLAGS %#" PRIx64, f);
	FUZZ_CHECK(d->sregs.cs.dpl <= cpl && cpl <= emulate_cpl(&t->cpu.sregs, t->cpu.regs.rflags),
		   "handler CPL %u, CS.DPL %u", cpl, d->sregs.cs.dpl);
	if (long64 && d->stack_switch && cpl < emulate_cpl(&t->cpu.sregs, t->cpu.regs.rflags))
		FUZZ_CHECK(d->sregs.ss.unusable && d->sregs.ss.selector == cpl, "SS %#x",
			   d->sregs.ss.selector);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = fuzz_in(data, size);
	struct input t;
	struct delivery_result d;
	struct guest_mem m;
	uint8_t *before;
	enum delivery_outcome o;
	bool long64;

	read_input(&in, &t);
	m = (struct guest_mem){ malloc(t.ram_size), t.ram_size };
	before = malloc(t.ram_size);
	FUZZ_SETUP(m.base && before);
	memset(m.base, 0, m.size);
	fuzz_bytes(&in, m.base, m.size);
	memcpy(before, m.base, m.size);
	o = delivery_deliver(&m, &t.cpu, &t.e, &d);
	long64 = (t.cpu.sregs.efer & X86_EFER_LMA) != 0;
	FUZZ_CHECK(o == d.outcome && (o == DELIVERY_DONE || o == DELIVERY_FAULT ||
				      o == DELIVERY_UNMODELLED), "outcome %d", (int)o);
	if (o == DELIVERY_FAULT)
		FUZZ_CHECK(t.e.soft && ((t.cpu.sregs.cr0 & X86_CR0_PE) || long64) && !t.e.ivt &&
			   (d.vector == X86_VEC_GP || d.vector == X86_VEC_NP) &&
			   d.err == t.e.vector * 8 + 2, "fault %u(%#x)", d.vector, d.err);
	if (o != DELIVERY_DONE) {
		FUZZ_CHECK(!memcmp(before, m.base, m.size), "RAM written by outcome %d", (int)o);
	} else {
		check_ram(&t, &m, before, &d, long64);
		check_frame(&t, &d, long64);
		check_handler(&t, &d, long64);
	}
	free(m.base);
	free(before);
	return 0;
}
