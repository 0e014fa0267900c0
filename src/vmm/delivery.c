/* SPDX-License-Identifier: MIT */
#include "delivery.h"

#include <string.h>

#include "emulate.h"
#include "step.h"
#include "x86.h"

bool delivery_long_plan(const struct delivery_long_in *in, struct delivery_long *out)
{
	const uint8_t *gate = in->gate;
	unsigned type = gate[5] & 0x1f, gate_dpl = (gate[5] >> 5) & 3, ist = gate[4] & 7, n = 0;
	uint16_t sel = (uint16_t)(gate[2] | gate[3] << 8);
	unsigned dpl = (unsigned)(in->desc >> X86_DESC_DPL_SHIFT) & 3, cpl = in->cpl;
	uint64_t rsp = in->rsp;

	/* Present, S=0, type 14 or 15, the upper dword's type field clear (else #GP). */
	if (!(gate[5] & 0x80) || (type != 0x0e && type != 0x0f) || (gate[13] & 0x1f) ||
	    (in->soft && gate_dpl < in->cpl))
		return false;
	/* A present 64-bit code segment in the GDT, not above the CPL. */
	if (!(sel & ~(unsigned)X86_SEL_RPL) || (sel & X86_SEL_TI) ||
	    (in->desc & (X86_DESC_CODE | X86_DESC_S | X86_DESC_P | X86_DESC_L | X86_DESC_DB)) !=
	    (X86_DESC_CODE | X86_DESC_S | X86_DESC_P | X86_DESC_L) || dpl > in->cpl)
		return false;
	cpl = delivery_handler_cpl(in->desc, cpl);
	out->rip = step_gate_offset(gate);
	if (!pagewalk_canonical(out->rip, in->la57))
		return false;
	if (ist || cpl < in->cpl) {
		if (!in->tss_valid)
			return false;
		rsp = ist ? in->tss_ist[ist - 1] : in->tss_rsp[cpl];
		if (!pagewalk_canonical(rsp, in->la57))
			return false;
	}
	if (in->error_code)
		out->frame[n++] = in->err;
	out->frame[n++] = in->rip;
	out->frame[n++] = in->cs;
	out->frame[n++] = in->rflags;
	out->frame[n++] = in->rsp;
	out->frame[n++] = in->ss;
	out->words = n;
	out->rsp = (rsp & ~0xfull) - 8ull * n;
	out->cs = (uint16_t)((sel & ~(unsigned)X86_SEL_RPL) | cpl);
	out->cpl = cpl;
	out->stack_switch = cpl < in->cpl;
	out->rflags = in->rflags & ~(X86_RFLAGS_TF | X86_RFLAGS_RF | X86_RFLAGS_VM | X86_RFLAGS_NT);
	if (type == 0x0e)
		out->rflags &= ~X86_RFLAGS_IF;
	return true;
}

unsigned delivery_handler_cpl(uint64_t desc, unsigned cpl)
{
	return desc & X86_DESC_CONFORMING ? cpl : (unsigned)(desc >> X86_DESC_DPL_SHIFT) & 3;
}

/* The stack an event outside IA-32e mode pushes its frame on. */
struct legacy_stack {
	uint32_t sp, limit;
	bool big, down;
};

/*
 * The handler's CPL, CS:IP and flags through a protected-mode gate, and
 * the frame's slot size; false where the gate or its code segment is not
 * one the VMM delivers through.
 */
static bool legacy_gate_target(const struct delivery_legacy_in *in, struct delivery_legacy *out)
{
	const uint8_t *e = in->entry;
	unsigned type = e[5] & 0x1f, sel = (unsigned)(e[2] | e[3] << 8);
	unsigned dpl = (unsigned)(in->desc >> X86_DESC_DPL_SHIFT) & 3;
	bool gate16 = type == 0x06 || type == 0x07;

	if (!(e[5] & X86_GATE_P) || (!gate16 && type != 0x0e && type != 0x0f) ||
	    (in->soft && ((e[5] >> 5) & 3) < in->cpl) || (in->vm86 && gate16))
		return false;
	/* A present code segment of the GDT, L clear (reserved here), DPL <= CPL (else #GP). */
	if (!(sel & ~(unsigned)X86_SEL_RPL) || (sel & X86_SEL_TI) ||
	    (in->desc & (X86_DESC_CODE | X86_DESC_S | X86_DESC_P | X86_DESC_L)) !=
	    (X86_DESC_CODE | X86_DESC_S | X86_DESC_P) || dpl > in->cpl)
		return false;
	out->cpl = delivery_handler_cpl(in->desc, in->cpl);
	if (in->vm86 && out->cpl)
		return false;	/* #GP(selector) */
	out->ip = (uint32_t)(e[0] | e[1] << 8);
	if (!gate16)
		out->ip |= (uint32_t)(e[6] << 16 | (uint32_t)e[7] << 24);
	if (out->ip > step_desc_limit(in->desc))
		return false;	/* #GP(0) */
	out->cs = (uint16_t)((sel & ~(unsigned)X86_SEL_RPL) | out->cpl);
	/* Interrupt gates (type bit 0 clear) clear IF too. */
	out->flags = in->flags & ~(uint32_t)(X86_RFLAGS_TF | X86_RFLAGS_NT | X86_RFLAGS_RF |
					     X86_RFLAGS_VM | (type & 1 ? 0 : X86_RFLAGS_IF));
	out->slot = gate16 ? 2 : 4;
	return true;
}

/* A handler at a lower CPL runs on the TSS's stack for it: false where that is unusable. */
static bool legacy_inner_stack(const struct delivery_legacy_in *in, struct delivery_legacy *out,
			       struct legacy_stack *st)
{
	/* The new SS: RPL and DPL the new CPL, present, writable data (else #TS). */
	uint64_t d = in->stack_ss_desc;

	if (!in->tss_valid || !(in->stack_ss & ~(unsigned)X86_SEL_RPL) ||
	    (in->stack_ss & X86_SEL_TI) || (in->stack_ss & X86_SEL_RPL) != out->cpl ||
	    (d & (X86_DESC_CODE | X86_DESC_S | X86_DESC_P | (3ull << X86_DESC_DPL_SHIFT) |
		  X86_DESC_W)) !=
	    (X86_DESC_S | X86_DESC_P | X86_DESC_W | (uint64_t)out->cpl << X86_DESC_DPL_SHIFT))
		return false;
	out->stack_switch = true;
	out->ss_base = step_desc_base(d);
	st->big = (d & X86_DESC_DB) != 0;
	st->down = (d & X86_DESC_E) != 0;
	st->limit = step_desc_limit(d);
	st->sp = in->stack_esp;
	return true;
}

/* The frame's words, and where on the stack they go: false where it would leave SS. */
static bool legacy_push_frame(const struct delivery_legacy_in *in, struct delivery_legacy *out,
			      struct legacy_stack st)
{
	unsigned n = 0;
	uint32_t bytes;

	if (!in->real && in->error_code)
		out->frame[n++] = in->err;
	out->frame[n++] = in->real ? in->ip & 0xffff : in->ip;
	out->frame[n++] = in->cs;
	out->frame[n++] = in->real ? in->flags & 0xffff : in->flags;
	if (out->stack_switch) {
		out->frame[n++] = in->sp;
		out->frame[n++] = in->ss;
	}
	if (in->vm86) {
		out->frame[n++] = in->es;
		out->frame[n++] = in->ds;
		out->frame[n++] = in->fs;
		out->frame[n++] = in->gs;
	}
	out->words = n;
	out->ss_big = st.big && !in->real;
	st.sp &= out->ss_big ? 0xffffffffu : 0xffffu;
	bytes = n * out->slot;
	/* Every byte inside SS: no wrap below 0, none beyond (or, expand-down, at or below) its limit. */
	if (st.sp < bytes || (st.down ? st.sp - bytes <= st.limit : st.sp - 1 > st.limit))
		return false;
	out->sp = st.sp - bytes;
	return true;
}

bool delivery_legacy_plan(const struct delivery_legacy_in *in, struct delivery_legacy *out)
{
	const uint8_t *e = in->entry;
	struct legacy_stack st = { .sp = in->sp, .limit = in->ss_limit, .big = in->ss_big,
				   .down = in->ss_down };

	out->stack_switch = false;
	out->ss_base = 0;
	out->cpl = in->cpl;
	if (in->real) {
		out->ip = (uint32_t)(e[0] | e[1] << 8);
		out->cs = (uint16_t)(e[2] | e[3] << 8);
		out->flags = in->flags & ~(uint32_t)(X86_RFLAGS_IF | X86_RFLAGS_TF | X86_RFLAGS_RF |
						     X86_RFLAGS_AC);
		out->slot = 2;
	} else {
		if (!legacy_gate_target(in, out))
			return false;
		if (out->cpl < in->cpl && !legacy_inner_stack(in, out, &st))
			return false;
	}
	return legacy_push_frame(in, out, st);
}

/* The checks of INT n's operation, in its order, once the gate's type is judged. */
static int soft_int_fault(bool gate_ok, uint8_t access, bool in_limit, unsigned vector,
			  unsigned cpl, uint32_t *err)
{
	/* The IDT bit set, EXT clear: a software interrupt is no external event. */
	*err = vector * 8 + 2;
	if (!in_limit || !gate_ok || ((unsigned)(access >> 5) & 3) < cpl)
		return X86_VEC_GP;
	if (!(access & 0x80))
		return X86_VEC_NP;
	return -1;
}

int delivery_soft_int_fault(const uint8_t gate[16], bool in_limit, unsigned vector,
			    unsigned cpl, uint32_t *err)
{
	unsigned type = gate[5] & 0x1f;

	return soft_int_fault((type == 0x0e || type == 0x0f) && !(gate[13] & 0x1f), gate[5],
			      in_limit, vector, cpl, err);
}

int delivery_legacy_soft_int_fault(const uint8_t gate[8], bool in_limit, unsigned vector,
				   unsigned cpl, uint32_t *err)
{
	unsigned type = gate[5] & 0x1f;

	/* Task gates (5), 16-bit (6, 7) and 32-bit (14, 15) interrupt and trap gates. */
	return soft_int_fault(type == 0x05 || type == 0x06 || type == 0x07 || type == 0x0e ||
			      type == 0x0f, gate[5], in_limit, vector, cpl, err);
}

/* 8 bytes of guest memory as the guest reads them (little-endian). */
static uint64_t le64(const uint8_t b[8])
{
	uint64_t w = 0;

	for (unsigned i = 0; i < 8; i++)
		w |= (uint64_t)b[i] << (8 * i);
	return w;
}

bool delivery_gdt_descriptor(const struct guest_mem *m, const struct paging *p,
			     const struct kvm_dtable *gdt, unsigned sel, uint64_t *desc,
			     struct walk *desc_w)
{
	uint64_t desc_la = gdt->base + (sel & ~(unsigned)(X86_SEL_TI | X86_SEL_RPL));
	uint8_t raw[8];

	if ((sel | 7u) > gdt->limit || pagewalk(m, p, desc_la, 0, desc_w) != WALK_OK ||
	    pagewalk_read_as(m, p, desc_la, 0, raw, sizeof(raw)) != sizeof(raw))
		return false;
	*desc = le64(raw);
	return (*desc & X86_DESC_A) ||
	       (pagewalk(m, p, desc_la + X86_DESC_A_BYTE, WALK_WRITE, desc_w) == WALK_OK &&
		desc_w->gpa < m->size);
}

/* The IDT (IVT) entry of e, its walk for the accessed bits; false: unreadable. */
static bool read_gate(const struct guest_mem *m, const struct paging *p, uint64_t la,
		      unsigned size, uint8_t *entry, struct walk *w)
{
	return pagewalk(m, p, la, 0, w) == WALK_OK && pagewalk_read_as(m, p, la, 0, entry, size) == size;
}

/* What the CPU's accesses set: accessed bits on the IDT and GDT, dirty too where written. */
static void gate_ad(const struct guest_mem *m, const struct walk *gate_w, const struct walk *desc_w,
		    bool desc_read, uint64_t desc)
{
	pagewalk_set_ad(m, gate_w, false);
	if (!desc_read)
		return;
	if (!(desc & X86_DESC_A)) {
		m->base[desc_w->gpa] |= 1;	/* X86_DESC_A, bit 0 of its byte */
		pagewalk_set_ad(m, desc_w, true);
	} else {
		pagewalk_set_ad(m, desc_w, false);
	}
}

/* Accessed and dirty bits of the pages a frame's first and last bytes went to. */
static void frame_ad(const struct guest_mem *m, const struct paging *fp, const uint64_t la[2])
{
	struct walk w;

	for (unsigned end = 0; end < 2; end++)
		if (pagewalk(m, fp, la[end], WALK_WRITE, &w) == WALK_OK)
			pagewalk_set_ad(m, &w, true);
}

/* The image pushed: the guest's TF; RF set by a fault but a #DB, clear after a trap unless owed. */
static uint64_t pushed_rflags(const struct delivery_cpu *cpu, const struct delivery_event *e)
{
	uint64_t rf = (e->fault && e->vector != X86_VEC_DB) || (!e->fault && e->rf) ? X86_RFLAGS_RF
										 : 0;

	return (cpu->regs.rflags & ~(X86_RFLAGS_TF | X86_RFLAGS_RF)) |
	       (cpu->guest_tf ? X86_RFLAGS_TF : 0) | rf;
}

/* Reads the 64-bit TSS's RSP0-2 and IST1-7 (supervisor reads); false where it cannot. */
static bool read_tss(const struct guest_mem *m, const struct delivery_cpu *cpu,
		     struct delivery_long_in *in)
{
	const struct kvm_segment *tr = &cpu->sregs.tr;
	uint8_t tss[0x64];

	if (tr->unusable || !tr->present || tr->limit < sizeof(tss) - 1 ||
	    pagewalk_read_as(m, &cpu->implicit, tr->base, 0, tss, sizeof(tss)) != sizeof(tss))
		return false;
	memcpy(in->tss_rsp, tss + 4, sizeof(in->tss_rsp));
	memcpy(in->tss_ist, tss + 0x24, sizeof(in->tss_ist));
	return true;
}

/*
 * A 64-bit delivery's frame at d->rsp, written as the handler's accesses
 * (fp): false, nothing written, where either end of it (it spans at most
 * two pages) cannot take the write.
 */
static bool push_frame(const struct guest_mem *m, const struct paging *fp,
		       const struct delivery_long *d, struct delivery_result *out)
{
	unsigned bytes = 8 * d->words;
	struct walk w;

	out->frame_la[0] = d->rsp;
	out->frame_la[1] = d->rsp + bytes - 1;
	for (unsigned end = 0; end < 2; end++)
		if (pagewalk(m, fp, out->frame_la[end], WALK_WRITE, &w) != WALK_OK || w.gpa >= m->size)
			return false;
	for (unsigned i = 0; i < bytes; i++)
		out->frame[i] = (uint8_t)(d->frame[i / 8] >> (8 * (i % 8)));
	out->frame_bytes = bytes;
	out->slot = 8;
	for (unsigned i = 0; i < bytes; i++) {
		uint8_t *at = pagewalk_write_byte(m, fp, d->rsp + i);

		if (!at)
			return false;	/* checked above: cannot happen */
		*at = out->frame[i];
	}
	return true;
}

/* The handler's state after a 64-bit delivery: CS, and SS null with RPL the new CPL on a switch. */
static void enter_handler(const struct delivery_long_in *in, const struct delivery_long *d,
			  struct delivery_result *out)
{
	step_segment_cache(in->desc, d->cs, &out->sregs.cs);
	if (d->stack_switch)
		out->sregs.ss = (struct kvm_segment){ .selector = (uint16_t)d->cpl,
						      .dpl = (uint8_t)d->cpl, .unusable = 1 };
	out->stack_switch = d->stack_switch;
	out->regs.rsp = d->rsp;
	out->regs.rip = d->rip;
	out->regs.rflags = d->rflags;
}

static enum delivery_outcome fault(struct delivery_result *out, int vector, uint32_t err)
{
	out->vector = (unsigned)vector;
	out->err = err;
	return out->outcome = DELIVERY_FAULT;
}

static enum delivery_outcome unmodelled(struct delivery_result *out)
{
	return out->outcome = DELIVERY_UNMODELLED;
}

/* IA-32e mode: through a 16-byte gate (delivery_long_plan()). */
static enum delivery_outcome deliver_long(const struct guest_mem *m,
					  const struct delivery_cpu *cpu,
					  const struct delivery_event *e, struct delivery_result *out)
{
	const struct kvm_sregs *sregs = &cpu->sregs;
	const struct paging *p = &cpu->implicit;
	uint64_t gate_la = sregs->idt.base + e->vector * 16;
	struct delivery_long_in in = {
		.cpl = emulate_cpl(sregs, cpu->regs.rflags), .cs = sregs->cs.selector,
		.ss = sregs->ss.selector, .rip = e->rip, .rsp = cpu->regs.rsp,
		.error_code = e->error_code, .err = e->err, .soft = e->soft,
		.la57 = (sregs->cr4 & X86_CR4_LA57) != 0, .rflags = pushed_rflags(cpu, e),
	};
	struct delivery_long d;
	struct walk gate_w, desc_w;
	struct paging fp;
	bool in_limit = e->vector * 16 + 15 <= sregs->idt.limit;
	uint32_t err;
	int vector;

	if ((sregs->cr4 & X86_CR4_CET) ||
	    (in_limit && !read_gate(m, p, gate_la, sizeof(in.gate), in.gate, &gate_w)))
		return unmodelled(out);
	/* INT n that cannot use its gate faults, its frame holding the guest's TF too. */
	if (e->soft && (vector = delivery_soft_int_fault(in.gate, in_limit, e->vector, in.cpl, &err)) >= 0)
		return fault(out, vector, err);
	if (!in_limit || !delivery_gdt_descriptor(m, p, &sregs->gdt,
						  (unsigned)(in.gate[2] | in.gate[3] << 8),
						  &in.desc, &desc_w))
		return unmodelled(out);
	in.tss_valid = read_tss(m, cpu, &in);
	if (!delivery_long_plan(&in, &d))
		return unmodelled(out);
	fp = *p;
	fp.cpl = d.cpl;		/* the pushes are the handler's: a user access at CPL3 */
	if (!push_frame(m, &fp, &d, out))
		return unmodelled(out);
	gate_ad(m, &gate_w, &desc_w, true, in.desc);
	frame_ad(m, &fp, out->frame_la);
	enter_handler(&in, &d, out);
	return out->outcome = DELIVERY_DONE;
}

/*
 * SSn:ESPn for a handler at CPL `level`, from the current TSS: a 32-bit
 * TSS's ESPn and SSn at 4 + 8n, a 16-bit TSS's SPn and SSn at 2 + 4n (SP
 * zero-extended). SDM vol. 3 7.2.1, 7.6; vol. 2 INT n's operation, whose
 * limit check covers the entry alone. false: no such TSS, or the entry
 * past its limit (#TS, left to the CPU).
 */
static bool tss_stack(const struct guest_mem *m, const struct delivery_cpu *cpu, unsigned level,
		      uint32_t *esp, uint16_t *ss)
{
	const struct kvm_segment *tr = &cpu->sregs.tr;
	bool t16 = tr->type == 1 || tr->type == 3;	/* available, busy */
	unsigned off = t16 ? 2 + 4 * level : 4 + 8 * level, len = t16 ? 4 : 6;
	uint8_t b[6];
	uint16_t sp;

	if (tr->unusable || !tr->present || (!t16 && tr->type != 9 && tr->type != 11) ||
	    off + len - 1 > tr->limit ||
	    pagewalk_read_as(m, &cpu->implicit, tr->base + off, 0, b, len) != len)
		return false;
	if (t16) {
		memcpy(&sp, b, 2);
		*esp = sp;
		memcpy(ss, b + 2, 2);
	} else {
		memcpy(esp, b, 4);
		memcpy(ss, b + 4, 2);
	}
	return true;
}

/*
 * A legacy delivery's frame: every byte, at SS:SP as the stack's width has
 * it, must take the write (the handler's, fp), else false and nothing
 * written.
 */
static bool push_legacy_frame(const struct guest_mem *m, const struct delivery_cpu *cpu,
			      const struct paging *fp, const struct delivery_legacy *d,
			      struct delivery_result *out)
{
	uint64_t width = d->ss_big ? 0xffffffffull : 0xffffull;
	uint8_t *at[DELIVERY_FRAME_MAX];
	unsigned bytes = d->words * d->slot;

	for (unsigned i = 0; i < bytes; i++) {
		uint64_t byte = d->stack_switch
					? (d->ss_base + ((d->sp + i) & width)) & 0xffffffffull
					: emulate_stack_la(&cpu->sregs, cpu->regs.rflags, d->sp + i);

		if (!i || i == bytes - 1)
			out->frame_la[i ? 1 : 0] = byte;
		at[i] = pagewalk_write_byte(m, fp, byte);
		if (!at[i])
			return false;
	}
	for (unsigned i = 0; i < bytes; i++)
		out->frame[i] = (uint8_t)(d->frame[i / d->slot] >> (8 * (i % d->slot)));
	out->frame_bytes = bytes;
	out->slot = d->slot;
	for (unsigned i = 0; i < bytes; i++)
		*at[i] = out->frame[i];
	return true;
}

/* CS, SS:SP, IP and FLAGS as a legacy delivery leaves them: the handler's first instruction next. */
static void enter_legacy_handler(const struct delivery_legacy_in *in,
				 const struct delivery_legacy *d, struct delivery_result *out)
{
	struct kvm_regs *regs = &out->regs;
	struct kvm_sregs *sregs = &out->sregs;
	uint64_t width = d->ss_big ? 0xffffffffull : 0xffffull;

	if (in->real) {
		sregs->cs.selector = d->cs;
		sregs->cs.base = (uint64_t)d->cs << 4;
	} else {
		step_segment_cache(in->desc, d->cs, &sregs->cs);
	}
	if (in->vm86) {
		/* Out of virtual-8086 mode, DS, ES, FS and GS hold null selectors. */
		sregs->ds = sregs->es = sregs->fs = sregs->gs = (struct kvm_segment){ .unusable = 1 };
	}
	if (d->stack_switch) {
		/* SS.DPL is the CPL KVM keeps (VMX and SVM alike). */
		step_segment_cache(in->stack_ss_desc, in->stack_ss, &sregs->ss);
		regs->rsp = in->stack_esp;	/* ESPn, the upper half too under a 16-bit SS */
	}
	out->stack_switch = d->stack_switch;
	regs->rsp = (regs->rsp & ~width) | d->sp;
	regs->rip = d->ip;
	regs->rflags = (regs->rflags & ~0xffffffffull) | d->flags;
}

/* The interrupted state a legacy delivery pushes and checks against. */
static void legacy_input(const struct delivery_cpu *cpu, const struct delivery_event *e,
			 bool real, struct delivery_legacy_in *in)
{
	const struct kvm_sregs *sregs = &cpu->sregs;
	uint64_t rflags = cpu->regs.rflags;

	*in = (struct delivery_legacy_in){
		.real = real, .cpl = emulate_cpl(sregs, rflags), .cs = sregs->cs.selector,
		.ip = (uint32_t)e->rip, .sp = (uint32_t)cpu->regs.rsp, .ss_big = !real && sregs->ss.db,
		.ss_down = (sregs->ss.type & 0xc) == 0x4, .ss_limit = sregs->ss.limit,
		.error_code = e->error_code, .err = e->err, .soft = e->soft,
		.ss = sregs->ss.selector, .vm86 = !e->ivt && (rflags & X86_RFLAGS_VM),
		.es = sregs->es.selector, .ds = sregs->ds.selector, .fs = sregs->fs.selector,
		.gs = sregs->gs.selector, .flags = (uint32_t)pushed_rflags(cpu, e),
	};
}

/*
 * Outside IA-32e mode: through a 16- or 32-bit gate, or in real mode
 * (delivery_legacy_plan()).
 */
static enum delivery_outcome deliver_legacy(const struct guest_mem *m,
					    const struct delivery_cpu *cpu,
					    const struct delivery_event *e,
					    struct delivery_result *out)
{
	const struct kvm_sregs *sregs = &cpu->sregs;
	const struct paging *p = &cpu->implicit;	/* the IDT, the GDT and the TSS */
	bool real = !(sregs->cr0 & X86_CR0_PE) || e->ivt;
	unsigned size = real ? 4 : 8, hcpl;
	bool in_limit = e->ivt || e->vector * size + size - 1 <= sregs->idt.limit;
	struct delivery_legacy_in in;
	struct delivery_legacy d;
	struct walk gate_w, desc_w, ss_w;
	struct paging fp;
	uint32_t err;
	int vector;

	legacy_input(cpu, e, real, &in);
	if (sregs->cr4 & X86_CR4_CET)
		return unmodelled(out);
	if (in_limit && !read_gate(m, p, (e->ivt ? 0 : sregs->idt.base) + e->vector * size, size,
				   in.entry, &gate_w))
		return unmodelled(out);
	/* INT n that cannot use its gate faults, as in IA-32e mode. */
	if (!real && e->soft &&
	    (vector = delivery_legacy_soft_int_fault(in.entry, in_limit, e->vector, in.cpl, &err)) >= 0)
		return fault(out, vector, err);
	if (!in_limit || (!real && !delivery_gdt_descriptor(m, p, &sregs->gdt,
							    (unsigned)(in.entry[2] | in.entry[3] << 8),
							    &in.desc, &desc_w)))
		return unmodelled(out);
	/* To a lower CPL: SSn:ESPn of the TSS for it, and SSn's descriptor. */
	hcpl = real ? 0 : delivery_handler_cpl(in.desc, in.cpl);
	if (!real && hcpl < in.cpl && tss_stack(m, cpu, hcpl, &in.stack_esp, &in.stack_ss))
		in.tss_valid = delivery_gdt_descriptor(m, p, &sregs->gdt, in.stack_ss,
						       &in.stack_ss_desc, &ss_w);
	if (!delivery_legacy_plan(&in, &d))
		return unmodelled(out);
	if (e->ivt) {		/* IP, CS, FLAGS: no error code for INT n */
		d.frame[2] = e->ivt_image;
		d.flags = e->ivt_flags;
	}
	fp = *p;
	fp.cpl = d.cpl;		/* the pushes are the handler's: a user access at CPL3 */
	if (!push_legacy_frame(m, cpu, &fp, &d, out))
		return unmodelled(out);
	gate_ad(m, &gate_w, &desc_w, !real, in.desc);
	if (d.stack_switch)
		gate_ad(m, &gate_w, &ss_w, true, in.stack_ss_desc);
	frame_ad(m, &fp, out->frame_la);
	enter_legacy_handler(&in, &d, out);
	return out->outcome = DELIVERY_DONE;
}

enum delivery_outcome delivery_deliver(const struct guest_mem *m, const struct delivery_cpu *cpu,
				       const struct delivery_event *e, struct delivery_result *out)
{
	memset(out, 0, sizeof(*out));
	out->regs = cpu->regs;
	out->sregs = cpu->sregs;
	if (!(cpu->sregs.efer & X86_EFER_LMA))
		return deliver_legacy(m, cpu, e, out);
	return deliver_long(m, cpu, e, out);
}
