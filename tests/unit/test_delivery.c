/* SPDX-License-Identifier: MIT */
/*
 * delivery.c against the Intel SDM vol. 3 ch. 6 and 20 (APM vol. 2 ch. 8
 * where AMD differs): each row of the tables names its section and is
 * delivered in a fake guest RAM holding an IDT (or IVT), a GDT, a TSS and,
 * in IA-32e mode, 4-level page tables. The parts modelled are the same on
 * AMD (APM vol. 2 8.9), which two rows name.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "delivery.h"
#include "emulate.h"
#include "x86.h"

#define RAM     (4ull << 20)
#define PML4    0x1000ull
#define IDT     0x10000ull
#define GDT     0x20000ull
#define TSS     0x30000ull
#define STACK   0x280000ull     /* the interrupted stack */
#define STACK0  0x290000ull     /* RSP0 / ESP0 */
#define IST1    0x2a0008ull
#define RIP     0x1234ull       /* pushed: the faulting instruction, or the next */
#define H64     0x5000ull       /* handlers */
#define H32     0x6000ull
#define H16     0x0700ull

/* GDT selectors: DPL0 then DPL3 code and data, and odd ones for the refusals. */
enum {
	K64 = 0x08, KDATA = 0x10, K32 = 0x18, K16 = 0x20, U64 = 0x28, UDATA = 0x30, U32 = 0x38,
	CONF64 = 0x40, K16DATA = 0x48, KRO = 0x50, K32SMALL = 0x58,
};

enum mode { M_LONG, M_PROT32, M_PROT16, M_REAL, M_VM86 };

/* Set-ups beside the mode's own. */
#define T_CET        0x001u  /* CR4.CET */
#define T_IDT_SHORT  0x002u  /* IDTR.limit 0x7ff: vector 0x80 beyond it */
#define T_TSS16      0x004u  /* a busy 16-bit TSS */
#define T_SS0_RO     0x008u  /* the TSS's SS0 a read-only data segment */
#define T_STACK_RO   0x010u  /* the stacks' page read-only, CR0.WP */
#define T_STACK_SUP  0x020u  /* the stacks' page supervisor-only */
#define T_IVT_RELOC  0x040u  /* real mode's IDTR.base at IDT, not 0 */
#define T_REAL_SHORT 0x080u  /* real mode's IDTR.limit 0x3f */
#define T_VMM_TF     0x100u  /* the vCPU's RFLAGS hold the VMM's TF */
#define T_LME        0x200u  /* EFER.LME set, LMA clear: paging off on the way out of IA-32e mode */

struct row {
	const char *sdm;
	enum mode mode;
	unsigned cpl, tweak;
	/* The gate: type 0 writes none. */
	uint8_t type, dpl, ist;
	bool absent;
	uint16_t sel;
	uint64_t handler;
	/* The event and the interrupted state (RFLAGS 0x202 | flags). */
	unsigned vector;
	bool soft, fault, error_code, guest_tf, ivt;
	uint32_t err;
	uint64_t rip, rsp, flags;
	uint16_t ivt_image;
	uint32_t ivt_flags;
	/* What the CPU does. */
	enum delivery_outcome out;
	unsigned fvec;
	uint32_t ferr;
	uint16_t cs, ss;
	uint64_t to_rip, to_rsp, to_rflags;
	unsigned slot, words;
	uint64_t frame[10];
};

static uint8_t *ram;
static struct guest_mem mem;

static void put(uint64_t at, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		ram[at + i] = (uint8_t)(v >> (8 * i));
}

static uint64_t desc(uint32_t base, uint32_t limit, unsigned type, unsigned dpl, uint64_t flags)
{
	bool g = limit > 0xfffff;

	if (g)
		limit >>= 12;
	return (limit & 0xffff) | (uint64_t)(base & 0xffffff) << 16 | (uint64_t)type << 40 |
	       X86_DESC_S | (uint64_t)dpl << X86_DESC_DPL_SHIFT | X86_DESC_P |
	       (uint64_t)((limit >> 16) & 0xf) << 48 | (g ? X86_DESC_G : 0) | flags |
	       (uint64_t)(base >> 24) << 56;
}

static void write_gdt(void)
{
	static const struct { uint16_t sel; uint32_t limit; unsigned type, dpl; uint64_t f; } d[] = {
		{ K64, 0xffffffff, 0xa, 0, X86_DESC_L }, { KDATA, 0xffffffff, 0x2, 0, X86_DESC_DB },
		{ K32, 0xffffffff, 0xa, 0, X86_DESC_DB }, { K16, 0xffff, 0xa, 0, 0 },
		{ U64, 0xffffffff, 0xa, 3, X86_DESC_L }, { UDATA, 0xffffffff, 0x2, 3, X86_DESC_DB },
		{ U32, 0xffffffff, 0xa, 3, X86_DESC_DB }, { CONF64, 0xffffffff, 0xe, 0, X86_DESC_L },
		{ K16DATA, 0xffff, 0x2, 0, 0 }, { KRO, 0xffffffff, 0x0, 0, X86_DESC_DB },
		{ K32SMALL, 0xfff, 0xa, 0, X86_DESC_DB },
	};

	for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++)
		put(GDT + d[i].sel, desc(0, d[i].limit, d[i].type, d[i].dpl, d[i].f), 8);
}

static void write_gate(const struct row *r, const struct kvm_sregs *s)
{
	uint8_t access = (uint8_t)(r->type | r->dpl << 5 | (r->absent ? 0 : X86_GATE_P));

	if (!r->type)
		return;
	if (r->mode == M_REAL || r->ivt) {
		uint64_t at = (r->ivt ? 0 : s->idt.base) + r->vector * 4;

		put(at, r->handler, 2);
		put(at + 2, r->sel, 2);
	} else if (r->mode == M_LONG) {
		uint64_t at = IDT + r->vector * 16;

		put(at, r->handler & 0xffff, 2);
		put(at + 2, r->sel, 2);
		put(at + 4, r->ist, 1);
		put(at + 5, access, 1);
		put(at + 6, r->handler >> 16, 6);
	} else {
		uint64_t at = IDT + r->vector * 8;

		put(at, r->handler & 0xffff, 2);
		put(at + 2, r->sel, 2);
		put(at + 5, access, 1);
		put(at + 6, r->handler >> 16, 2);
	}
}

/* A segment cache as the CPU holds one loaded from this GDT (or a real-mode selector). */
static struct kvm_segment seg(uint16_t sel, enum mode mode)
{
	struct kvm_segment s = { .selector = sel, .present = 1, .s = 1, .type = 3, .limit = 0xffff };

	if (mode == M_REAL || mode == M_VM86) {
		s.base = (uint64_t)sel << 4;
		s.dpl = mode == M_VM86 ? 3 : 0;
		return s;
	}
	s.dpl = sel & 3;
	s.limit = sel == K16 || sel == K16DATA ? 0xffff : 0xffffffff;
	s.g = s.limit > 0xffff;
	s.db = sel != K16 && sel != K16DATA && (mode != M_LONG || (sel & ~3u) == KDATA ||
						  (sel & ~3u) == UDATA);
	s.l = mode == M_LONG && ((sel & ~3u) == K64 || (sel & ~3u) == U64);
	return s;
}

/* IA-32e mode's identity map: 2 MiB pages, user and writable unless the row says. */
static void write_paging(const struct row *r)
{
	uint64_t stack = 0x200000 | 0x87 | 0x20;	/* P, RW, US, PS; A set: D is what is looked at */

	if (r->tweak & T_STACK_RO)
		stack &= ~2ull;
	if (r->tweak & T_STACK_SUP)
		stack &= ~4ull;
	put(PML4, 0x2000 | 7, 8);
	put(0x2000, 0x3000 | 7, 8);
	put(0x3000, 0x87, 8);
	put(0x3008, stack, 8);
}

static void tss(const struct row *r, struct kvm_sregs *s)
{
	s->tr = (struct kvm_segment){ .base = TSS, .limit = 0x67, .type = 11, .present = 1 };
	if (r->mode == M_LONG) {
		put(TSS + 4, STACK0, 8);
		put(TSS + 0x24, IST1, 8);
	} else if (r->tweak & T_TSS16) {
		s->tr.type = 3;
		s->tr.limit = 0x2b;
		put(TSS + 2, 0x9000, 2);
		put(TSS + 4, KDATA, 2);
	} else {
		put(TSS + 4, STACK0, 4);
		put(TSS + 8, r->tweak & T_SS0_RO ? KRO : KDATA, 2);
	}
}

static void set_mode(const struct row *r, struct delivery_cpu *c)
{
	struct kvm_sregs *s = &c->sregs;
	bool u = r->cpl == 3;
	static const uint16_t code[][2] = {
		[M_LONG] = { K64, U64 | 3 }, [M_PROT32] = { K32, U32 | 3 }, [M_PROT16] = { K16, K16 },
		[M_REAL] = { 0x50, 0x50 }, [M_VM86] = { 0x50, 0x50 },
	};
	static const uint16_t data[][2] = {
		[M_LONG] = { KDATA, UDATA | 3 }, [M_PROT32] = { KDATA, UDATA | 3 },
		[M_PROT16] = { K16DATA, K16DATA }, [M_REAL] = { 0, 0 }, [M_VM86] = { 0x700, 0x700 },
	};

	s->cr0 = r->mode == M_REAL ? 0 : X86_CR0_PE;
	s->cs = seg(code[r->mode][u], r->mode);
	s->ss = seg(data[r->mode][u], r->mode);
	s->es = seg(0x11, M_VM86);
	s->ds = seg(0x22, M_VM86);
	s->fs = seg(0x33, M_VM86);
	s->gs = seg(0x44, M_VM86);
	s->gdt = (struct kvm_dtable){ .base = GDT, .limit = 0xff };
	s->idt = (struct kvm_dtable){ .base = IDT, .limit = 0xfff };
	if (r->mode == M_REAL)
		s->idt = (struct kvm_dtable){ .base = r->tweak & T_IVT_RELOC ? IDT : 0,
					      .limit = r->tweak & T_REAL_SHORT ? 0x3f : 0x3ff };
	if (r->tweak & T_IDT_SHORT)
		s->idt.limit = 0x7ff;
	if (r->mode == M_LONG) {
		s->efer = X86_EFER_LME | X86_EFER_LMA;
		s->cr0 |= X86_CR0_PG | X86_CR0_WP;
		s->cr4 = X86_CR4_PAE;
		s->cr3 = PML4;
		write_paging(r);
	}
	if (r->tweak & T_CET)
		s->cr4 |= X86_CR4_CET;
	if (r->tweak & T_LME)
		s->efer = X86_EFER_LME;
}

/* The vCPU as the row has it, and the CPU's implicit accesses (stepping.c's implicit_paging()). */
static void setup_row(const struct row *r, struct delivery_cpu *c, struct delivery_event *e)
{
	memset(ram, 0, RAM);
	memset(c, 0, sizeof(*c));
	write_gdt();
	set_mode(r, c);
	tss(r, &c->sregs);
	write_gate(r, &c->sregs);
	c->regs.rip = RIP;
	c->regs.rsp = r->rsp;
	c->regs.rflags = 0x202 | r->flags | (r->mode == M_VM86 ? X86_RFLAGS_VM : 0) |
			 (r->tweak & T_VMM_TF ? X86_RFLAGS_TF : 0);
	c->guest_tf = r->guest_tf;
	emulate_paging(&c->implicit, &c->sregs, &c->regs, 0, 40);
	c->implicit.cpl = 0;
	c->implicit.ac = false;
	*e = (struct delivery_event){
		.vector = r->vector, .error_code = r->error_code, .err = r->err,
		.rip = r->rip ? r->rip : RIP, .fault = r->fault, .soft = r->soft, .ivt = r->ivt,
		.ivt_image = r->ivt_image, .ivt_flags = r->ivt_flags,
	};
}

#define CHECK(r, cond)                                                                   \
	do {                                                                             \
		if (!(cond))                                                             \
			fail_msg("%s: %s", (r)->sdm, #cond);                             \
	} while (0)

/* The frame, in the result and in RAM at its linear address (identity mapped). */
static void check_frame(const struct row *r, const struct delivery_result *d)
{
	uint8_t want[DELIVERY_FRAME_MAX];

	CHECK(r, d->frame_bytes == r->words * r->slot);
	for (unsigned i = 0; i < r->words * r->slot; i++)
		want[i] = (uint8_t)(r->frame[i / r->slot] >> (8 * (i % r->slot)));
	CHECK(r, !memcmp(d->frame, want, d->frame_bytes));
	CHECK(r, d->frame_la[1] == d->frame_la[0] + d->frame_bytes - 1);
	CHECK(r, !memcmp(ram + d->frame_la[0], want, d->frame_bytes));
}

static void run_row(const struct row *r)
{
	struct delivery_cpu c;
	struct delivery_event e;
	struct delivery_result d;
	uint8_t *before = malloc(RAM);

	assert_non_null(before);
	setup_row(r, &c, &e);
	memcpy(before, ram, RAM);
	CHECK(r, delivery_deliver(&mem, &c, &e, &d) == r->out);
	CHECK(r, d.outcome == r->out);
	if (r->out != DELIVERY_DONE) {
		CHECK(r, !memcmp(before, ram, RAM));	/* nothing written */
		if (r->out == DELIVERY_FAULT)
			CHECK(r, d.vector == r->fvec && d.err == r->ferr);
		free(before);
		return;
	}
	free(before);
	CHECK(r, d.sregs.cs.selector == r->cs);
	CHECK(r, d.sregs.ss.selector == r->ss);
	CHECK(r, d.regs.rip == r->to_rip);
	CHECK(r, d.regs.rsp == r->to_rsp);
	CHECK(r, d.regs.rflags == r->to_rflags);
	if (r->mode == M_VM86 && !r->ivt)	/* null selectors out of virtual-8086 mode */
		CHECK(r, d.sregs.ds.unusable && d.sregs.es.unusable && d.sregs.fs.unusable &&
			 d.sregs.gs.unusable && !d.sregs.ds.selector && !d.sregs.gs.selector);
	if (r->mode != M_VM86 || r->ivt)
		CHECK(r, d.sregs.ds.selector == 0x22 && !d.sregs.ds.unusable);
	CHECK(r, d.frame_la[0] == (r->mode == M_REAL || r->ivt || r->mode == M_PROT16
					   ? d.sregs.ss.base + (r->to_rsp & 0xffff) : r->to_rsp));
	check_frame(r, &d);
}

#define RF  X86_RFLAGS_RF
#define VM  X86_RFLAGS_VM
#define TF  X86_RFLAGS_TF
#define NT  X86_RFLAGS_NT
#define AC  X86_RFLAGS_AC
#define IOPL3 0x3000ull

static const struct row long_rows[] = {
	{ "SDM 6.14.2 64-bit mode stack frame: SS, RSP, RFLAGS, CS, RIP, RF set by a fault; "
	  "6.12.1.2 an interrupt gate clears IF (APM vol. 2 8.9.3 alike)", M_LONG, 0, 0, 0xe, 0, 0, false, K64, H64,
	  X86_VEC_UD, false, true, .rsp = STACK, .out = DELIVERY_DONE, .cs = K64, .ss = KDATA,
	  .to_rip = H64, .to_rsp = STACK - 40, .to_rflags = 2, .slot = 8, .words = 5,
	  .frame = { RIP, K64, 0x202 | RF, STACK, KDATA } },
	{ "SDM 6.13 error code pushed below RIP; 6.14.2 frame of 64-bit mode",
	  M_LONG, 0, 0, 0xe, 0, 0, false, K64, H64, X86_VEC_GP, false, true, true, .err = 0x18,
	  .rsp = STACK, .out = DELIVERY_DONE, .cs = K64, .ss = KDATA, .to_rip = H64,
	  .to_rsp = STACK - 48, .to_rflags = 2, .slot = 8, .words = 6,
	  .frame = { 0x18, RIP, K64, 0x202 | RF, STACK, KDATA } },
	{ "SDM 6.14.2 RSP aligned down to 16 bytes before the frame is pushed",
	  M_LONG, 0, 0, 0xe, 0, 0, false, K64, H64, X86_VEC_UD, false, true, .rsp = STACK + 0xf,
	  .out = DELIVERY_DONE, .cs = K64, .ss = KDATA, .to_rip = H64, .to_rsp = STACK - 40,
	  .to_rflags = 2, .slot = 8, .words = 5,
	  .frame = { RIP, K64, 0x202 | RF, STACK + 0xf, KDATA } },
	{ "SDM 6.12.1.2 a trap gate leaves IF set; INT3 a trap: RF clear, the next RIP",
	  M_LONG, 0, 0, 0xf, 0, 0, false, K64, H64, X86_VEC_BP, true, false, .rip = RIP + 1,
	  .rsp = STACK, .out = DELIVERY_DONE, .cs = K64, .ss = KDATA, .to_rip = H64,
	  .to_rsp = STACK - 40, .to_rflags = 0x202, .slot = 8, .words = 5,
	  .frame = { RIP + 1, K64, 0x202, STACK, KDATA } },
	{ "SDM 6.14.4 privilege change: RSP0 of the 64-bit TSS, SS null with RPL the new CPL "
	  "(APM vol. 2 8.9.3 alike)",
	  M_LONG, 3, 0, 0xe, 3, 0, false, K64, H64, 0x80, true, false, .rip = RIP + 2,
	  .rsp = 0x270000, .out = DELIVERY_DONE, .cs = K64, .ss = 0, .to_rip = H64,
	  .to_rsp = STACK0 - 40, .to_rflags = 2, .slot = 8, .words = 5,
	  .frame = { RIP + 2, U64 | 3, 0x202, 0x270000, UDATA | 3 } },
	{ "SDM 6.14.5 interrupt stack table: IST1 taken without a privilege change",
	  M_LONG, 0, 0, 0xe, 0, 1, false, K64, H64, X86_VEC_UD, false, true, .rsp = STACK,
	  .out = DELIVERY_DONE, .cs = K64, .ss = KDATA, .to_rip = H64, .to_rsp = IST1 - 8 - 40,
	  .to_rflags = 2, .slot = 8, .words = 5,
	  .frame = { RIP, K64, 0x202 | RF, STACK, KDATA } },
	{ "SDM 6.12.1.1 privilege check for software interrupts: DPL < CPL -> #GP(vector*8+2)",
	  M_LONG, 3, 0, 0xe, 0, 0, false, K64, H64, 0x80, true, .rsp = 0x270000,
	  .out = DELIVERY_FAULT, .fvec = X86_VEC_GP, .ferr = 0x80 * 8 + 2 },
	{ "SDM 6.12.1.1 the gate's DPL is not checked for exceptions: #UD from CPL3 delivered",
	  M_LONG, 3, 0, 0xe, 0, 0, false, K64, H64, X86_VEC_UD, false, true, .rsp = 0x270000,
	  .out = DELIVERY_DONE, .cs = K64, .ss = 0, .to_rip = H64, .to_rsp = STACK0 - 40,
	  .to_rflags = 2, .slot = 8, .words = 5,
	  .frame = { RIP, U64 | 3, 0x202 | RF, 0x270000, UDATA | 3 } },
	{ "SDM vol. 2 INT n (IA-32e): gate not present -> #NP(vector*8+2)",
	  M_LONG, 0, 0, 0xe, 0, 0, true, K64, H64, 0x80, true, .rsp = STACK,
	  .out = DELIVERY_FAULT, .fvec = X86_VEC_NP, .ferr = 0x80 * 8 + 2 },
	{ "SDM 6.12.1.1 an exception through a gate not present: #NP, left to the CPU",
	  M_LONG, 0, 0, 0xe, 0, 0, true, K64, H64, X86_VEC_UD, false, true, .rsp = STACK,
	  .out = DELIVERY_UNMODELLED },
	{ "SDM 6.14.1 a 64-bit IDT entry other than an interrupt or trap gate: INT n #GP(vector*8+2)",
	  M_LONG, 0, 0, 0xc, 0, 0, false, K64, H64, 0x80, true, .rsp = STACK,
	  .out = DELIVERY_FAULT, .fvec = X86_VEC_GP, .ferr = 0x80 * 8 + 2 },
	{ "SDM 6.10 a vector beyond the IDT's limit: INT n #GP(vector*8+2)",
	  M_LONG, 0, T_IDT_SHORT, 0xe, 0, 0, false, K64, H64, 0x80, true, .rsp = STACK,
	  .out = DELIVERY_FAULT, .fvec = X86_VEC_GP, .ferr = 0x80 * 8 + 2 },
	{ "SDM 6.14.1 a non-canonical handler: #GP, left to the CPU",
	  M_LONG, 0, 0, 0xe, 0, 0, false, K64, 0x0000800000000000ull, X86_VEC_UD, false, true,
	  .rsp = STACK, .out = DELIVERY_UNMODELLED },
	{ "SDM 6.12.1.1 a conforming code segment keeps the CPL: no stack switch",
	  M_LONG, 3, 0, 0xe, 0, 0, false, CONF64, H64, X86_VEC_UD, false, true, .rsp = 0x270000,
	  .out = DELIVERY_DONE, .cs = CONF64 | 3, .ss = UDATA | 3, .to_rip = H64,
	  .to_rsp = 0x270000 - 40, .to_rflags = 2, .slot = 8, .words = 5,
	  .frame = { RIP, U64 | 3, 0x202 | RF, 0x270000, UDATA | 3 } },
	{ "SDM 17.3.1.1 a #DB fault pushes RF clear", M_LONG, 0, 0, 0xe, 0, 0, false, K64, H64,
	  X86_VEC_DB, false, true, .rsp = STACK, .out = DELIVERY_DONE, .cs = K64, .ss = KDATA,
	  .to_rip = H64, .to_rsp = STACK - 40, .to_rflags = 2, .slot = 8, .words = 5,
	  .frame = { RIP, K64, 0x202, STACK, KDATA } },
	{ "SDM 6.12.1.2 the image holds TF and NT; the handler runs with TF, NT, RF clear",
	  M_LONG, 0, 0, 0xf, 0, 0, false, K64, H64, X86_VEC_UD, false, true, .guest_tf = true,
	  .rsp = STACK, .flags = NT, .out = DELIVERY_DONE, .cs = K64, .ss = KDATA, .to_rip = H64,
	  .to_rsp = STACK - 40, .to_rflags = 0x202, .slot = 8, .words = 5,
	  .frame = { RIP, K64, 0x202 | NT | TF | RF, STACK, KDATA } },
	{ "SDM 6.12.1.2 the image's TF is the guest's, not the VMM's single-step",
	  M_LONG, 0, T_VMM_TF, 0xe, 0, 0, false, K64, H64, X86_VEC_UD, false, true, .rsp = STACK,
	  .out = DELIVERY_DONE, .cs = K64, .ss = KDATA, .to_rip = H64, .to_rsp = STACK - 40,
	  .to_rflags = 2, .slot = 8, .words = 5, .frame = { RIP, K64, 0x202 | RF, STACK, KDATA } },
	{ "SDM vol. 1 ch. 17 (CET) shadow-stack delivery: not modelled", M_LONG, 0, T_CET, 0xe, 0, 0, false,
	  K64, H64, X86_VEC_UD, false, true, .rsp = STACK, .out = DELIVERY_UNMODELLED },
	{ "SDM 4.6 a supervisor write to a read-only stack page under CR0.WP: #PF, left to the CPU",
	  M_LONG, 0, T_STACK_RO, 0xe, 0, 0, false, K64, H64, X86_VEC_UD, false, true,
	  .rsp = STACK, .out = DELIVERY_UNMODELLED },
	{ "SDM 4.6 a CPL3 handler's frame is a user write: a supervisor page #PF, left to the CPU",
	  M_LONG, 3, T_STACK_SUP, 0xe, 0, 0, false, CONF64, H64, X86_VEC_UD, false, true,
	  .rsp = 0x270000, .out = DELIVERY_UNMODELLED },
};

static const struct row legacy_rows[] = {
	{ "SDM 6.12.1 figure 6-4 no privilege change: error code, EIP, CS, EFLAGS on the stack",
	  M_PROT32, 0, 0, 0xe, 0, 0, false, K32, H32, X86_VEC_GP, false, true, true, .err = 0x20,
	  .rsp = STACK, .out = DELIVERY_DONE, .cs = K32, .ss = KDATA, .to_rip = H32,
	  .to_rsp = STACK - 16, .to_rflags = 2, .slot = 4, .words = 4,
	  .frame = { 0x20, RIP, K32, 0x202 | RF } },
	{ "SDM 6.12.1 stack switch to a more privileged level takes SS:ESP from the TSS",
	  M_PROT32, 3, 0, 0xe, 3, 0, false, K32, H32, 0x80, true, .rip = RIP + 2, .rsp = 0x270000,
	  .out = DELIVERY_DONE, .cs = K32, .ss = KDATA, .to_rip = H32, .to_rsp = STACK0 - 20,
	  .to_rflags = 2, .slot = 4, .words = 5,
	  .frame = { RIP + 2, U32 | 3, 0x202, 0x270000, UDATA | 3 } },
	{ "SDM 7.6 a 16-bit TSS: SP0 and SS0 at offsets 2 and 4",
	  M_PROT32, 3, T_TSS16, 0xe, 3, 0, false, K32, H32, 0x80, true, .rip = RIP + 2,
	  .rsp = 0x270000, .out = DELIVERY_DONE, .cs = K32, .ss = KDATA, .to_rip = H32,
	  .to_rsp = 0x9000 - 20, .to_rflags = 2, .slot = 4, .words = 5,
	  .frame = { RIP + 2, U32 | 3, 0x202, 0x270000, UDATA | 3 } },
	{ "SDM 6.12.1.1 privilege check for software interrupts: DPL < CPL -> #GP(vector*8+2)",
	  M_PROT32, 3, 0, 0xe, 0, 0, false, K32, H32, 0x80, true, .rsp = 0x270000,
	  .out = DELIVERY_FAULT, .fvec = X86_VEC_GP, .ferr = 0x80 * 8 + 2 },
	{ "SDM vol. 2 INT n (protected mode): gate not present -> #NP(vector*8+2)",
	  M_PROT32, 0, 0, 0xf, 0, 0, true, K32, H32, 0x21, true, .rsp = STACK,
	  .out = DELIVERY_FAULT, .fvec = X86_VEC_NP, .ferr = 0x21 * 8 + 2 },
	{ "SDM 6.11 an IDT entry of a reserved type: INT n #GP(vector*8+2)",
	  M_PROT32, 0, 0, 0x1, 0, 0, false, K32, H32, 0x21, true, .rsp = STACK,
	  .out = DELIVERY_FAULT, .fvec = X86_VEC_GP, .ferr = 0x21 * 8 + 2 },
	{ "SDM 6.12.2 INT n through a task gate: a task switch, left to KVM",
	  M_PROT32, 3, 0, 0x5, 3, 0, false, 0x60, 0, 0x80, true, .rsp = 0x270000,
	  .out = DELIVERY_UNMODELLED },
	{ "SDM 6.12.1 figure 6-4 through a 16-bit interrupt gate: 16-bit IP, CS, FLAGS",
	  M_PROT16, 0, 0, 0x6, 0, 0, false, K16, H16, X86_VEC_UD, false, true, .rsp = 0x8000,
	  .out = DELIVERY_DONE, .cs = K16, .ss = K16DATA, .to_rip = H16, .to_rsp = 0x8000 - 6,
	  .to_rflags = 2, .slot = 2, .words = 3, .frame = { RIP, K16, 0x202 } },
	{ "SDM 6.12.1 the TSS's SS0 not a writable data segment: #TS, left to the CPU",
	  M_PROT32, 3, T_SS0_RO, 0xe, 3, 0, false, K32, H32, 0x80, true, .rsp = 0x270000,
	  .out = DELIVERY_UNMODELLED },
	{ "SDM 6.12.1 the handler beyond its code segment's limit: #GP(0), left to the CPU",
	  M_PROT32, 0, 0, 0xe, 0, 0, false, K32SMALL, H32, X86_VEC_UD, false, true, .rsp = STACK,
	  .out = DELIVERY_UNMODELLED },
	{ "SDM 6.12.1 a frame that leaves SS (SP 4, six bytes): #SS, left to the CPU",
	  M_PROT16, 0, 0, 0x6, 0, 0, false, K16, H16, X86_VEC_UD, false, true, .rsp = 4,
	  .out = DELIVERY_UNMODELLED },
	{ "SDM 9.8.5.4 EFER.LME with LMA clear (paging off, IA-32e mode left): 8-byte gates",
	  M_PROT32, 0, T_LME, 0xe, 0, 0, false, K32, H32, X86_VEC_UD, false, true, .rsp = STACK,
	  .out = DELIVERY_DONE, .cs = K32, .ss = KDATA, .to_rip = H32, .to_rsp = STACK - 12,
	  .to_rflags = 2, .slot = 4, .words = 3, .frame = { RIP, K32, 0x202 | RF } },
	{ "SDM vol. 1 ch. 17 (CET) outside IA-32e mode: not modelled", M_PROT32, 0, T_CET, 0xe, 0, 0, false,
	  K32, H32, X86_VEC_UD, false, true, .rsp = STACK, .out = DELIVERY_UNMODELLED },
};

static const struct row real_rows[] = {
	{ "SDM 20.1.4 real-mode IVT: FLAGS, CS, IP pushed; IF, TF, AC cleared; CS:IP from the entry",
	  M_REAL, 0, 0, 1, 0, 0, false, 0x100, 0x50, 0x10, true, .rip = RIP + 2, .guest_tf = true,
	  .flags = AC, .rsp = 0x8000, .out = DELIVERY_DONE, .cs = 0x100, .ss = 0, .to_rip = 0x50,
	  .to_rsp = 0x8000 - 6, .to_rflags = 2, .slot = 2, .words = 3,
	  .frame = { RIP + 2, 0x50, 0x302 } },
	{ "SDM 20.1.4 the IVT is where IDTR.base says",
	  M_REAL, 0, T_IVT_RELOC, 1, 0, 0, false, 0x100, 0x50, X86_VEC_UD, false, true,
	  .rsp = 0x8000, .out = DELIVERY_DONE, .cs = 0x100, .ss = 0, .to_rip = 0x50,
	  .to_rsp = 0x8000 - 6, .to_rflags = 2, .slot = 2, .words = 3,
	  .frame = { RIP, 0x50, 0x202 } },
	{ "SDM 20.1.4 a vector beyond IDTR.limit: #GP, left to the CPU",
	  M_REAL, 0, T_REAL_SHORT, 1, 0, 0, false, 0x100, 0x50, 0x10, true, .rsp = 0x8000,
	  .out = DELIVERY_UNMODELLED },
	{ "SDM 20.1.4 a frame that would wrap SP: left to the CPU",
	  M_REAL, 0, 0, 1, 0, 0, false, 0x100, 0x50, 0x10, true, .rsp = 4,
	  .out = DELIVERY_UNMODELLED },
};

static const struct row vm86_rows[] = {
	{ "SDM 20.3.1.3 from virtual-8086 mode to a CPL0 handler: GS, FS, DS, ES, "
	  "SS, ESP, EFLAGS, CS, EIP, error code on SS0:ESP0; VM cleared",
	  M_VM86, 3, 0, 0xe, 0, 0, false, K32, H32, X86_VEC_GP, false, true, true, .err = 0,
	  .flags = IOPL3, .rsp = 0x1000, .out = DELIVERY_DONE, .cs = K32, .ss = KDATA,
	  .to_rip = H32, .to_rsp = STACK0 - 40, .to_rflags = IOPL3 | 2, .slot = 4, .words = 10,
	  .frame = { 0, RIP, 0x50, 0x202 | IOPL3 | VM | RF, 0x1000, 0x700, 0x11, 0x22, 0x33,
		     0x44 } },
	{ "SDM 20.3.1.3 a 16-bit gate from virtual-8086 mode: #GP, left to the CPU",
	  M_VM86, 3, 0, 0x6, 0, 0, false, K16, H16, X86_VEC_UD, false, true, .flags = IOPL3,
	  .rsp = 0x1000, .out = DELIVERY_UNMODELLED },
	{ "SDM 20.3.1.3 a handler above CPL0 from virtual-8086 mode: #GP(selector), left to the CPU",
	  M_VM86, 3, 0, 0xe, 0, 0, false, U32 | 3, H32, X86_VEC_UD, false, true, .flags = IOPL3,
	  .rsp = 0x1000, .out = DELIVERY_UNMODELLED },
	{ "SDM 20.3.3 table 20-2 method 1 (IOPL 3, no VME): gate DPL < 3 -> #GP(vector*8+2)",
	  M_VM86, 3, 0, 0xe, 0, 0, false, K32, H32, 0x21, true, .flags = IOPL3, .rsp = 0x1000,
	  .out = DELIVERY_FAULT, .fvec = X86_VEC_GP, .ferr = 0x21 * 8 + 2 },
	{ "SDM 20.3.3 table 20-2 method 5 (CR4.VME, bit clear, IOPL 3): the 8086 IVT at linear 0",
	  M_VM86, 3, 0, 1, 0, 0, false, 0x200, 0x60, 0x21, true, .ivt = true, .rip = RIP + 2,
	  .flags = IOPL3, .rsp = 0x1000, .ivt_image = 0x3202,
	  .ivt_flags = (uint32_t)(VM | IOPL3 | 2), .out = DELIVERY_DONE, .cs = 0x200,
	  .ss = 0x700, .to_rip = 0x60, .to_rsp = 0x1000 - 6, .to_rflags = VM | IOPL3 | 2,
	  .slot = 2, .words = 3, .frame = { RIP + 2, 0x50, 0x3202 } },
};

static int setup(void **state)
{
	(void)state;
	ram = calloc(1, RAM);
	mem = (struct guest_mem){ ram, RAM };
	return ram ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	free(ram);
	return 0;
}

static void run_table(const struct row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		run_row(&rows[i]);
}

static void ia32e_gates(void **state)
{
	(void)state;
	run_table(long_rows, sizeof(long_rows) / sizeof(long_rows[0]));
}

static void protected_mode_gates(void **state)
{
	(void)state;
	run_table(legacy_rows, sizeof(legacy_rows) / sizeof(legacy_rows[0]));
}

static void real_mode_ivt(void **state)
{
	(void)state;
	run_table(real_rows, sizeof(real_rows) / sizeof(real_rows[0]));
}

static void virtual_8086(void **state)
{
	(void)state;
	run_table(vm86_rows, sizeof(vm86_rows) / sizeof(vm86_rows[0]));
}

/*
 * SDM 4.8: the CPU's accesses set the accessed flags of the entries they
 * use, dirty too where they write (the frame; the descriptor's accessed
 * bit, SDM 3.4.5.1, set as CS is loaded from it).
 */
static void accessed_and_dirty(void **state)
{
	const struct row *r = &long_rows[0];
	struct delivery_cpu c;
	struct delivery_event e;
	struct delivery_result d;
	uint64_t pde;

	(void)state;
	/* Reads alone where the descriptor is accessed already: A on the IDT's page. */
	setup_row(r, &c, &e);
	put(0x3000, 0x87, 8);		/* A and D clear where the IDT and GDT are */
	put(0x3008, 0x200087, 8);	/* and where the stack is */
	ram[GDT + K64 + X86_DESC_A_BYTE] |= 1;
	assert_int_equal(delivery_deliver(&mem, &c, &e, &d), DELIVERY_DONE);
	memcpy(&pde, ram + 0x3000, 8);
	assert_int_equal(pde & 0x60, 0x20);
	memcpy(&pde, ram + 0x3008, 8);
	assert_int_equal(pde & 0x60, 0x60);
	/* The descriptor's accessed bit written: the GDT's page dirty too. */
	setup_row(r, &c, &e);
	put(0x3000, 0x87, 8);
	assert_int_equal(delivery_deliver(&mem, &c, &e, &d), DELIVERY_DONE);
	assert_int_equal(ram[GDT + K64 + X86_DESC_A_BYTE] & 1, 1);
	assert_int_equal(d.sregs.cs.type & 1, 1);
	memcpy(&pde, ram + 0x3000, 8);
	assert_int_equal(pde & 0x60, 0x60);
	/* A GDT that cannot take that write (read-only, CR0.WP): left to the CPU. */
	setup_row(r, &c, &e);
	put(0x3000, 0x85, 8);
	assert_int_equal(delivery_deliver(&mem, &c, &e, &d), DELIVERY_UNMODELLED);
	assert_int_equal(ram[GDT + K64 + X86_DESC_A_BYTE] & 1, 0);
	memcpy(&pde, ram + 0x3000, 8);
	assert_int_equal(pde, 0x85);
}

/* The plans alone, on the gate, descriptors and TSS fields given them. */
/* A 64-bit code descriptor (base 0, limit 4 GiB, accessed), DPL dpl. */
static uint64_t code64(unsigned dpl)
{
	return 0x00af9b000000ffffull | (uint64_t)dpl << X86_DESC_DPL_SHIFT;
}

static struct delivery_long_in delivery_in(void)
{
	/* Handler 0xffffffff81234567, selector 0x08, interrupt gate (type 14), DPL0, no IST. */
	struct delivery_long_in in = {
		.gate = { 0x67, 0x45, 0x08, 0x00, 0x00, 0x8e, 0x23, 0x81,
			  0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0 },
		.desc = code64(0), .cpl = 0, .cs = 0x08, .ss = 0x10,
		.rip = 0x1000, .rsp = 0x8000, .rflags = 0x2,
		.tss_valid = true,
		.tss_rsp = { 0x90008, 0x91000, 0x92000 },
		.tss_ist = { 0xa0000, 0xa1000, 0xa2000, 0xa3000, 0xa4000, 0xa5000, 0xa6000 },
	};

	return in;
}

static void test_delivery(void **state)
{
	struct delivery_long_in in = delivery_in();
	struct delivery_long d;

	(void)state;
	/* #GP(0) at RIP 0x1000, RSP 0x7ff8 (not 16-aligned), IF and RF set in the image. */
	in.rsp = 0x7ff8;
	in.rflags = 0x10202;
	in.error_code = true;
	assert_true(delivery_long_plan(&in, &d));
	assert_int_equal(d.words, 6);
	assert_int_equal(d.rsp, 0x7ff0 - 48);		/* aligned down to 16 first */
	assert_int_equal(d.frame[0], 0);		/* error code */
	assert_int_equal(d.frame[1], 0x1000);
	assert_int_equal(d.frame[2], 0x08);
	assert_int_equal(d.frame[3], 0x10202);
	assert_int_equal(d.frame[4], 0x7ff8);		/* the old RSP, unaligned */
	assert_int_equal(d.frame[5], 0x10);
	assert_int_equal(d.rip, 0xffffffff81234567ull);
	assert_int_equal(d.rflags, 0x2);		/* IF and RF clear through an interrupt gate */
	assert_int_equal(d.cs, 0x08);
	assert_int_equal(d.cpl, 0);
	assert_false(d.stack_switch);
	/* A trap gate keeps IF; TF, NT and RF go; no error code for #UD. */
	in = delivery_in();
	in.gate[5] = 0x8f;
	in.rflags = 0x14302;
	assert_true(delivery_long_plan(&in, &d));
	assert_int_equal(d.words, 5);
	assert_int_equal(d.rsp, 0x8000 - 40);
	assert_int_equal(d.frame[0], 0x1000);
	assert_int_equal(d.frame[2], 0x14302);		/* the image keeps TF */
	assert_int_equal(d.rflags, 0x202);
}

/* From CPL3: RSP0 of the TSS, SS null; an IST slot wins over both. */
static void test_delivery_privilege(void **state)
{
	struct delivery_long_in in = delivery_in();
	struct delivery_long d;

	(void)state;
	in.cpl = 3;
	in.cs = 0x33;
	in.ss = 0x2b;
	in.rsp = 0x7000123;
	assert_true(delivery_long_plan(&in, &d));
	assert_true(d.stack_switch);
	assert_int_equal(d.cpl, 0);
	assert_int_equal(d.cs, 0x08);
	assert_int_equal(d.rsp, 0x90000 - 40);		/* RSP0 aligned down to 16 */
	assert_int_equal(d.frame[1], 0x33);
	assert_int_equal(d.frame[3], 0x7000123);	/* the CPL3 stack */
	assert_int_equal(d.frame[4], 0x2b);
	/* Without the TSS it is the CPU's. */
	in.tss_valid = false;
	assert_false(delivery_long_plan(&in, &d));
	/* IST 2, even without a privilege change. */
	in = delivery_in();
	in.gate[4] = 2;
	assert_true(delivery_long_plan(&in, &d));
	assert_int_equal(d.rsp, 0xa1000 - 40);
	assert_false(d.stack_switch);
	/* A conforming code segment runs at the caller's CPL: no switch. */
	in = delivery_in();
	in.cpl = 3;
	in.cs = 0x33;
	in.desc |= X86_DESC_CONFORMING;
	assert_true(delivery_long_plan(&in, &d));
	assert_false(d.stack_switch);
	assert_int_equal(d.cpl, 3);
	assert_int_equal(d.cs, 0x0b);
	assert_int_equal(d.rsp, 0x8000 - 40);
	/* INT n through a DPL0 gate from CPL3 is #GP: the CPU's; a DPL3 gate is fine. */
	in = delivery_in();
	in.cpl = 3;
	in.soft = true;
	assert_false(delivery_long_plan(&in, &d));
	in.gate[5] = 0xee;
	assert_true(delivery_long_plan(&in, &d));
	/* A non-canonical RSP0 is the CPU's (#SS). */
	in.tss_rsp[0] = 0x0000800000000000ull;
	assert_false(delivery_long_plan(&in, &d));
	in.la57 = true;
	assert_true(delivery_long_plan(&in, &d));
}

/* Left to the CPU: whatever it would fault on. */
static void test_delivery_refused(void **state)
{
	struct delivery_long_in in;
	struct delivery_long d;

	(void)state;
	in = delivery_in();
	in.gate[5] = 0x0e;				/* not present */
	assert_false(delivery_long_plan(&in, &d));
	in.gate[5] = 0x8c;				/* a call gate */
	assert_false(delivery_long_plan(&in, &d));
	in = delivery_in();
	in.gate[13] = 0x01;				/* reserved type bits of the upper dword */
	assert_false(delivery_long_plan(&in, &d));
	in = delivery_in();
	in.gate[11] = 0x7f;				/* handler not canonical */
	assert_false(delivery_long_plan(&in, &d));
	in = delivery_in();
	in.gate[2] = 0x0c;				/* selector in the LDT */
	assert_false(delivery_long_plan(&in, &d));
	in = delivery_in();
	in.gate[2] = 0x00;				/* null selector */
	assert_false(delivery_long_plan(&in, &d));
	in = delivery_in();
	in.desc &= ~X86_DESC_P;
	assert_false(delivery_long_plan(&in, &d));
	in = delivery_in();
	in.desc &= ~X86_DESC_L;				/* 32-bit code */
	assert_false(delivery_long_plan(&in, &d));
	in = delivery_in();
	in.desc = code64(3);				/* DPL above the CPL */
	assert_false(delivery_long_plan(&in, &d));
}

/* INT n's own faults through the gate (SDM vol. 2 INT n, IA-32e mode), in their order. */
static void test_soft_int_fault(void **state)
{
	uint8_t gate[16] = { [2] = 0x08, [5] = 0xef };	/* present, DPL3, 64-bit trap gate */
	uint32_t err = 7;

	(void)state;
	assert_int_equal(delivery_soft_int_fault(gate, true, 3, 3, &err), -1);
	gate[5] = 0x8f;					/* DPL0 */
	assert_int_equal(delivery_soft_int_fault(gate, true, 3, 0, &err), -1);
	assert_int_equal(delivery_soft_int_fault(gate, true, 3, 3, &err), X86_VEC_GP);
	assert_int_equal(err, 3 * 8 + 2);		/* the IDT bit, EXT clear */
	assert_int_equal(delivery_soft_int_fault(gate, true, 0x80, 1, &err), X86_VEC_GP);
	assert_int_equal(err, 0x402);
	gate[5] = 0xcf;					/* DPL2: from CPL2 and below only */
	assert_int_equal(delivery_soft_int_fault(gate, true, 3, 2, &err), -1);
	assert_int_equal(delivery_soft_int_fault(gate, true, 3, 3, &err), X86_VEC_GP);
	gate[5] = 0xaf;					/* DPL1 */
	assert_int_equal(delivery_soft_int_fault(gate, true, 3, 1, &err), -1);
	assert_int_equal(delivery_soft_int_fault(gate, true, 3, 2, &err), X86_VEC_GP);
	gate[5] = 0x6f;					/* DPL3, not present */
	assert_int_equal(delivery_soft_int_fault(gate, true, 4, 3, &err), X86_VEC_NP);
	assert_int_equal(err, 0x22);
	gate[5] = 0x0f;					/* DPL0, not present: the DPL first */
	assert_int_equal(delivery_soft_int_fault(gate, true, 4, 3, &err), X86_VEC_GP);
	gate[5] = 0xec;					/* a call gate is no interrupt gate */
	assert_int_equal(delivery_soft_int_fault(gate, true, 4, 0, &err), X86_VEC_GP);
	gate[5] = 0xfe;					/* S set: no gate */
	assert_int_equal(delivery_soft_int_fault(gate, true, 4, 0, &err), X86_VEC_GP);
	gate[5] = 0xee;
	gate[13] = 0x01;				/* the upper dword's type field */
	assert_int_equal(delivery_soft_int_fault(gate, true, 4, 0, &err), X86_VEC_GP);
	gate[13] = 0;
	assert_int_equal(delivery_soft_int_fault(gate, true, 4, 0, &err), -1);
	assert_int_equal(delivery_soft_int_fault(gate, false, 0x21, 0, &err), X86_VEC_GP);
	assert_int_equal(err, 0x10a);			/* beyond the limit */
}

/* The same outside IA-32e mode: 8-byte entries, task and 16-bit gates too. */
static void test_legacy_soft_int_fault(void **state)
{
	uint8_t gate[8] = { [2] = 0x38, [5] = 0xee };	/* present, DPL3, 32-bit interrupt gate */
	static const uint8_t types[] = { 0x05, 0x06, 0x07, 0x0e, 0x0f };
	uint32_t err = 7;

	(void)state;
	for (unsigned i = 0; i < sizeof(types); i++) {
		gate[5] = (uint8_t)(0xe0 | types[i]);
		assert_int_equal(delivery_legacy_soft_int_fault(gate, true, 3, 3, &err), -1);
	}
	gate[5] = 0x8e;					/* DPL0 */
	assert_int_equal(delivery_legacy_soft_int_fault(gate, true, 3, 0, &err), -1);
	assert_int_equal(delivery_legacy_soft_int_fault(gate, true, 3, 3, &err), X86_VEC_GP);
	assert_int_equal(err, 3 * 8 + 2);
	assert_int_equal(delivery_legacy_soft_int_fault(gate, true, 0x41, 1, &err), X86_VEC_GP);
	assert_int_equal(err, 0x20a);
	gate[5] = 0x6f;					/* DPL3, not present */
	assert_int_equal(delivery_legacy_soft_int_fault(gate, true, 4, 3, &err), X86_VEC_NP);
	assert_int_equal(err, 0x22);
	gate[5] = 0x0f;					/* DPL0, not present: the DPL first */
	assert_int_equal(delivery_legacy_soft_int_fault(gate, true, 4, 3, &err), X86_VEC_GP);
	gate[5] = 0xec;					/* a call gate is no interrupt gate */
	assert_int_equal(delivery_legacy_soft_int_fault(gate, true, 4, 0, &err), X86_VEC_GP);
	gate[5] = 0xe9;					/* nor an available 32-bit TSS */
	assert_int_equal(delivery_legacy_soft_int_fault(gate, true, 4, 0, &err), X86_VEC_GP);
	gate[5] = 0xfe;					/* S set: no gate */
	assert_int_equal(delivery_legacy_soft_int_fault(gate, true, 4, 0, &err), X86_VEC_GP);
	assert_int_equal(delivery_legacy_soft_int_fault(gate, false, 0x21, 0, &err), X86_VEC_GP);
	assert_int_equal(err, 0x10a);			/* beyond the limit */
}

/* Delivery outside IA-32e mode: 32- and 16-bit gates, each CPL, the real-mode IVT. */
static void test_legacy_delivery(void **state)
{
	/* 32-bit interrupt gate to 0x38:0x00123456; a flat 32-bit DPL0 code segment. */
	struct delivery_legacy_in in = {
		.entry = { 0x56, 0x34, 0x38, 0x00, 0x00, 0x8e, 0x12, 0x00 },
		.desc = 0x00cf9b000000ffffull, .cs = 0x38, .ip = 0x1000, .sp = 0x8000,
		.ss_big = true, .ss_limit = 0xffffffff, .flags = 0x10302,
		.error_code = true, .err = 0x1234,
	};
	struct delivery_legacy d;
	struct delivery_legacy_in t;

	(void)state;
	assert_true(delivery_legacy_plan(&in, &d));
	assert_int_equal(d.ip, 0x123456);
	assert_int_equal(d.cs, 0x38);
	assert_int_equal(d.slot, 4);
	assert_int_equal(d.words, 4);
	assert_int_equal(d.sp, 0x8000 - 16);
	assert_int_equal(d.frame[0], 0x1234);
	assert_int_equal(d.frame[1], 0x1000);
	assert_int_equal(d.frame[2], 0x38);
	assert_int_equal(d.frame[3], 0x10302);		/* the image as given: TF, RF kept */
	assert_int_equal(d.flags, 0x2);			/* TF, RF, IF cleared */
	t = in;
	t.entry[5] = 0x8f;				/* a trap gate keeps IF */
	t.error_code = false;
	assert_true(delivery_legacy_plan(&t, &d));
	assert_int_equal(d.flags, 0x202);
	assert_int_equal(d.words, 3);
	/* From CPL3: SS0:ESP0 of the TSS, the old SS:ESP pushed too. */
	t = in;
	t.cpl = 3;
	t.cs = 0x1b;
	t.ss = 0x23;
	assert_false(delivery_legacy_plan(&t, &d));	/* no TSS */
	t.tss_valid = true;
	t.stack_esp = 0x9000;
	t.stack_ss = 0x10;
	t.stack_ss_desc = 0x00cf93000000ffffull;	/* flat writable data, DPL0 */
	assert_true(delivery_legacy_plan(&t, &d));
	assert_true(d.stack_switch);
	assert_int_equal(d.cpl, 0);
	assert_int_equal(d.cs, 0x38);
	assert_true(d.ss_big);
	assert_int_equal(d.ss_base, 0);
	assert_int_equal(d.words, 6);
	assert_int_equal(d.sp, 0x9000 - 24);
	assert_int_equal(d.frame[1], 0x1000);
	assert_int_equal(d.frame[2], 0x1b);
	assert_int_equal(d.frame[4], 0x8000);
	assert_int_equal(d.frame[5], 0x23);
	t.stack_ss_desc = 0x00cff3000000ffffull;	/* DPL3: #TS, the CPU's */
	assert_false(delivery_legacy_plan(&t, &d));
	t.stack_ss_desc = 0x00cf91000000ffffull;	/* read-only */
	assert_false(delivery_legacy_plan(&t, &d));
	t.stack_ss_desc = 0x00cf93000000ffffull;
	t.stack_ss = 0x13;				/* RPL 3 */
	assert_false(delivery_legacy_plan(&t, &d));
	t.stack_ss = 0x10;
	t.stack_ss_desc = 0x0040930100000fffull;	/* base 0x10000, limit 0xfff, byte-granular */
	assert_false(delivery_legacy_plan(&t, &d));	/* ESP beyond the limit */
	t.stack_esp = 0x1000;
	assert_true(delivery_legacy_plan(&t, &d));
	assert_int_equal(d.ss_base, 0x10000);
	assert_int_equal(d.sp, 0x1000 - 24);
	/* A conforming handler stays at CPL3: no stack switch, the TSS unread. */
	t = in;
	t.cpl = 3;
	t.cs = 0x1b;
	t.desc |= X86_DESC_CONFORMING;
	assert_true(delivery_legacy_plan(&t, &d));
	assert_false(d.stack_switch);
	assert_int_equal(d.cpl, 3);
	assert_int_equal(d.cs, 0x3b);			/* RPL the CPL */
	assert_int_equal(d.words, 4);
	assert_int_equal(d.sp, 0x8000 - 16);
	/* A DPL3 handler from CPL3: the same stack too; from CPL2 it is out of reach (#GP). */
	t = in;
	t.cpl = 3;
	t.desc = 0x00cffb000000ffffull;
	assert_true(delivery_legacy_plan(&t, &d));
	assert_false(d.stack_switch);
	assert_int_equal(d.cs, 0x3b);
	t.cpl = 2;
	assert_false(delivery_legacy_plan(&t, &d));
	/* A DPL1 handler from CPL3: SS1:ESP1, whose RPL and DPL must be 1. */
	t = in;
	t.cpl = 3;
	t.desc = 0x00cfbb000000ffffull;
	t.tss_valid = true;
	t.stack_esp = 0x7000;
	t.stack_ss = 0x49;
	t.stack_ss_desc = 0x00cfb3000000ffffull;
	assert_true(delivery_legacy_plan(&t, &d));
	assert_true(d.stack_switch);
	assert_int_equal(d.cpl, 1);
	assert_int_equal(d.cs, 0x39);
	assert_int_equal(d.sp, 0x7000 - 24);
	t.stack_ss = 0x48;				/* RPL 0 */
	assert_false(delivery_legacy_plan(&t, &d));
	t.stack_ss = 0x49;
	t.stack_ss_desc = 0x00cf93000000ffffull;	/* DPL 0 */
	assert_false(delivery_legacy_plan(&t, &d));
	/* A 16-bit interrupt gate: IP from the low word, 2-byte pushes; 16-bit code is fine. */
	t = in;
	t.entry[5] = 0x86;
	t.desc = 0x00009b000000ffffull;			/* 16-bit code, limit 0xffff */
	t.entry[0] = 0x00;
	t.entry[1] = 0x80;
	assert_true(delivery_legacy_plan(&t, &d));
	assert_int_equal(d.ip, 0x8000);			/* offset bits 16-31 ignored */
	assert_int_equal(d.slot, 2);
	assert_int_equal(d.words, 4);
	assert_int_equal(d.sp, 0x8000 - 8);
	assert_int_equal(d.flags, 0x2);
	t.entry[5] = 0x87;				/* a 16-bit trap gate keeps IF */
	t.flags = 0x302;
	assert_true(delivery_legacy_plan(&t, &d));
	assert_int_equal(d.flags, 0x202);
	t.desc = 0x000093000000ffffull;			/* a data segment: the CPU's #GP */
	assert_false(delivery_legacy_plan(&t, &d));
	/* From virtual-8086 mode: to CPL0 on SS0:ESP0, GS, FS, DS and ES pushed after SS. */
	t = in;
	t.vm86 = true;
	t.cpl = 3;
	t.cs = 0x7000;
	t.ss = 0x7100;
	t.es = 0x7200;
	t.ds = 0x7300;
	t.fs = 0x7400;
	t.gs = 0x7500;
	t.flags = 0x20302;
	t.error_code = false;
	t.tss_valid = true;
	t.stack_esp = 0x9000;
	t.stack_ss = 0x10;
	t.stack_ss_desc = 0x00cf93000000ffffull;
	assert_true(delivery_legacy_plan(&t, &d));
	assert_true(d.stack_switch);
	assert_int_equal(d.cpl, 0);
	assert_int_equal(d.words, 9);
	assert_int_equal(d.sp, 0x9000 - 36);
	assert_int_equal(d.frame[0], 0x1000);
	assert_int_equal(d.frame[1], 0x7000);
	assert_int_equal(d.frame[2], 0x20302);		/* VM set in the image ... */
	assert_int_equal(d.frame[3], 0x8000);
	assert_int_equal(d.frame[4], 0x7100);
	assert_int_equal(d.frame[5], 0x7200);
	assert_int_equal(d.frame[6], 0x7300);
	assert_int_equal(d.frame[7], 0x7400);
	assert_int_equal(d.frame[8], 0x7500);
	assert_int_equal(d.flags, 0x2);			/* ... clear for the handler */
	t.error_code = true;
	assert_true(delivery_legacy_plan(&t, &d));
	assert_int_equal(d.words, 10);
	assert_int_equal(d.frame[0], 0x1234);
	t.desc |= X86_DESC_CONFORMING;			/* would stay at CPL3: #GP */
	assert_false(delivery_legacy_plan(&t, &d));
	t.desc = 0x00cffb000000ffffull;			/* DPL3: #GP */
	assert_false(delivery_legacy_plan(&t, &d));
	t.desc = in.desc;
	t.entry[5] = 0x86;				/* a 16-bit gate */
	assert_false(delivery_legacy_plan(&t, &d));
	/* Left to the CPU: a task gate, a DPL above the CPL, L set, past the limit. */
	t = in;
	t.entry[5] = 0x85;
	assert_false(delivery_legacy_plan(&t, &d));
	t = in;
	t.desc = 0x00cffb000000ffffull;
	assert_false(delivery_legacy_plan(&t, &d));
	t.desc = 0x00af9b000000ffffull;
	assert_false(delivery_legacy_plan(&t, &d));
	t = in;
	t.desc = 0x00409b000000ffffull;			/* byte-granular limit 0xffff */
	assert_false(delivery_legacy_plan(&t, &d));
	/* A stack that would wrap, or leave SS's limit; 16-bit SP. */
	t = in;
	t.sp = 8;
	assert_false(delivery_legacy_plan(&t, &d));
	t = in;
	t.ss_limit = 0x7000;
	assert_false(delivery_legacy_plan(&t, &d));
	t = in;
	t.ss_big = false;
	t.sp = 0x12340100;
	assert_true(delivery_legacy_plan(&t, &d));
	assert_int_equal(d.sp, 0x100 - 16);
	t.ss_down = true;				/* expand-down: above the limit only */
	t.ss_limit = 0x100;
	assert_false(delivery_legacy_plan(&t, &d));
	t.ss_limit = 0xf0;				/* the frame's lowest byte at the limit */
	assert_false(delivery_legacy_plan(&t, &d));
	t.ss_limit = 0xef;
	assert_true(delivery_legacy_plan(&t, &d));
	/* Real mode: IP, CS, FLAGS in 2-byte slots, no error code; IF, TF, RF, AC cleared. */
	t = (struct delivery_legacy_in){
		.real = true, .entry = { 0x34, 0x12, 0x00, 0xf0 }, .cs = 0x7000, .ip = 0x1234abcd,
		.sp = 0xf00, .ss_limit = 0xffff, .flags = 0x50302, .error_code = true, .err = 5,
	};
	assert_true(delivery_legacy_plan(&t, &d));
	assert_int_equal(d.ip, 0x1234);
	assert_int_equal(d.cs, 0xf000);
	assert_int_equal(d.slot, 2);
	assert_int_equal(d.words, 3);
	assert_int_equal(d.sp, 0xf00 - 6);
	assert_int_equal(d.frame[0], 0xabcd);
	assert_int_equal(d.frame[1], 0x7000);
	assert_int_equal(d.frame[2], 0x0302);
	assert_int_equal(d.flags, 0x2);
	t.sp = 0;					/* SP wraps: the CPU's */
	assert_false(delivery_legacy_plan(&t, &d));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(ia32e_gates, setup, teardown),
		cmocka_unit_test_setup_teardown(protected_mode_gates, setup, teardown),
		cmocka_unit_test_setup_teardown(real_mode_ivt, setup, teardown),
		cmocka_unit_test_setup_teardown(virtual_8086, setup, teardown),
		cmocka_unit_test_setup_teardown(accessed_and_dirty, setup, teardown),
		cmocka_unit_test(test_delivery),
		cmocka_unit_test(test_delivery_privilege),
		cmocka_unit_test(test_delivery_refused),
		cmocka_unit_test(test_soft_int_fault),
		cmocka_unit_test(test_legacy_soft_int_fault),
		cmocka_unit_test(test_legacy_delivery),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
