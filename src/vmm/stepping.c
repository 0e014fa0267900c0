/* SPDX-License-Identifier: MIT */
#include "stepping.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "decode.h"
#include "delivery.h"
#include "emulate.h"
#include "event.h"
#include "log.h"
#include "pagewalk.h"
#include "splitlock.h"
#include "step.h"
#include "vcpu.h"
#include "vmm_status.h"
#include "x86.h"

/* err: a positive errno. */
static bool stepping_fail(struct vcpu *v, const char *call, int err)
{
	vm_fail(v->vm, VMM_EXIT_HOST,
		"vCPU %u: %s failed: %s (errno %d); --split-lock=emulate cannot go on watching this guest",
		v->index, call, strerror(err), err);
	return false;
}

/* One of the guest's MSRs, as KVM holds it; false (the VM stopped) where KVM cannot read it. */
static bool guest_msr(struct vcpu *v, uint32_t index, uint64_t *value)
{
	char call[48];
	int r = v->kvm->get_msr(v, index, value);

	if (!r)
		return true;
	snprintf(call, sizeof(call), "KVM_GET_MSRS (MSR 0x%x)", index);
	return stepping_fail(v, call, -r);
}

/* The guest's paging as it stands, for accesses made on its behalf. */
static void guest_paging(struct vcpu *v, struct paging *p)
{
	/* PKRU applies to none of the accesses made through this. */
	emulate_paging(p, &v->run->s.regs.sregs, &v->run->s.regs.regs, 0, v->maxphyaddr);
}

static enum decode_mode guest_mode(struct vcpu *v)
{
	return emulate_cpu_mode(&v->run->s.regs.sregs, v->run->s.regs.regs.rflags);
}

/*
 * Bytes at a linear address through the guest's page tables, checked as
 * an access of kind `access` (0: data read, WALK_FETCH); how many it could.
 */
static size_t read_linear(struct vcpu *v, uint64_t la, unsigned access, void *buf, size_t len)
{
	struct guest_mem m = { v->vm->mem, v->vm->ram_size };
	struct paging p;

	guest_paging(v, &p);
	return pagewalk_read_as(&m, &p, la, access, buf, len);
}

/*
 * The accessed bits a data read of len bytes at la sets (on both pages,
 * where it spans two), for a read the VMM made in the CPU's stead.
 */
static void read_ad(struct vcpu *v, uint64_t la, unsigned len)
{
	struct guest_mem m = { v->vm->mem, v->vm->ram_size };
	struct paging p;
	struct walk w;

	guest_paging(v, &p);
	if (pagewalk(&m, &p, la, 0, &w) == WALK_OK)
		pagewalk_set_ad(&m, &w, false);
	if ((la ^ (la + len - 1)) >> 12 && pagewalk(&m, &p, la + len - 1, 0, &w) == WALK_OK)
		pagewalk_set_ad(&m, &w, false);
}

/* 8 bytes of guest memory as the guest reads them (little-endian). */
static uint64_t le64(const uint8_t b[8])
{
	uint64_t w = 0;

	for (unsigned i = 0; i < 8; i++)
		w |= (uint64_t)b[i] << (8 * i);
	return w;
}

/*
 * The bytes of the instruction at CS:rip, up to 15; outside 64-bit code
 * none past CS's limit, whose fetch is a #GP (emulate.c's fetch() too).
 */
static size_t read_code(struct vcpu *v, uint64_t rip, uint8_t buf[DECODE_INSN_MAX])
{
	const struct kvm_sregs *sregs = &v->run->s.regs.sregs;
	uint64_t rflags = v->run->s.regs.regs.rflags, want = DECODE_INSN_MAX;

	if (!((sregs->efer & X86_EFER_LMA) && sregs->cs.l)) {
		uint64_t ip = rip & (sregs->cs.db ? 0xffffffffull : 0xffffull);

		want = ip > sregs->cs.limit ? 0 : sregs->cs.limit - ip + 1;
		if (want > DECODE_INSN_MAX)
			want = DECODE_INSN_MAX;
	}
	return read_linear(v, emulate_code_la(sregs, rflags, rip), WALK_FETCH, buf, (size_t)want);
}

/*
 * KVM's emulator ends each instruction it emulates with a step exit that
 * writes no DR7 (kvm_vcpu_do_singlestep()); a trap of the CPU's writes the
 * guest's. A value no DR7 can hold (bits 63:32 are reserved) tells them
 * apart. The offset is past what an I/O, MMIO or MSR exit leaves for KVM
 * to complete on the next run.
 */
#define DR7_UNWRITTEN (~0ull)
_Static_assert(offsetof(struct kvm_run, debug.arch.dr7) >=
		       offsetof(struct kvm_run, mmio) + sizeof(((struct kvm_run *)0)->mmio) &&
	       offsetof(struct kvm_run, debug.arch.dr7) >=
		       offsetof(struct kvm_run, io) + sizeof(((struct kvm_run *)0)->io) &&
	       offsetof(struct kvm_run, debug.arch.dr7) >=
		       offsetof(struct kvm_run, msr) + sizeof(((struct kvm_run *)0)->msr),
	       "the DR7 marker would overwrite an exit KVM completes");

/* Every change of phase: one transition of step_phase_next()'s table. */
static void phase_on(struct step_state *s, enum step_event e)
{
	s->phase = step_phase_next(s->phase, e);
}

/* Where byte la of a stack slot the CPU just wrote lives, or NULL. */
static uint8_t *stack_byte_as(struct vcpu *v, const struct paging *p, uint64_t la)
{
	struct guest_mem m = { v->vm->mem, v->vm->ram_size };

	return pagewalk_write_byte(&m, p, la);
}

static uint8_t *stack_byte(struct vcpu *v, uint64_t la)
{
	struct paging p;

	guest_paging(v, &p);
	return stack_byte_as(v, &p, la);
}

/* Hardware TF = the guest's own, from the next entry on. */
static void put_guest_tf(struct vcpu *v)
{
	struct kvm_regs *regs = &v->run->s.regs.regs;

	regs->rflags = (regs->rflags & ~X86_RFLAGS_TF) | (v->step.guest_tf ? X86_RFLAGS_TF : 0);
	v->run->kvm_dirty_regs |= KVM_SYNC_X86_REGS;
}

static bool hw_steps(enum step_debug mode)
{
	return mode == STEP_DEBUG_STEP || mode == STEP_DEBUG_PREDICT;
}

static bool refresh_dr(struct vcpu *v);

/*
 * The one place that sets what the debug hardware does for the VMM; only a
 * change costs a call, unless `again` (re-issued here, the step survives
 * a #GP KVM queues: docs/stepping.md, "A failed MSR access").
 */
static bool set_hw(struct vcpu *v, enum step_debug mode, uint64_t addr, bool again)
{
	struct step_debug_state *hw = &v->step.hw;
	struct kvm_guest_debug dbg = { 0 };
	bool was = hw_steps(hw->mode);
	int r;

	if (!again && mode == hw->mode && addr == hw->addr && mode != STEP_DEBUG_WATCH)
		return true;
	if (mode != STEP_DEBUG_OFF)
		dbg.control = KVM_GUESTDBG_ENABLE;
	if (hw_steps(mode))
		dbg.control |= KVM_GUESTDBG_SINGLESTEP;
	hw->mine = hw->guests = 0;
	if (mode == STEP_DEBUG_WATCH || mode == STEP_DEBUG_PREDICT) {
		uint64_t dr[8] = { [0] = addr, [7] = X86_DR7_L0 };
		int slot = -1;

		dbg.control |= KVM_GUESTDBG_USE_HW_BP;
		/*
		 * The guest's own breakpoints stay armed beside the VMM's
		 * (docs/stepping.md, "Forecast").
		 */
		if (v->step.dr_valid || refresh_dr(v))
			slot = step_merge_breakpoint(v->step.db, v->step.dr7, addr, dr);
		if (slot < 0)		/* the guest enables all four: they are off meanwhile */
			slot = 0;
		for (unsigned i = 0; i < 8; i++)
			dbg.arch.debugreg[i] = dr[i];
		hw->mine = 1ull << slot;
		hw->guests = step_enabled_bps(dr[7]) & ~hw->mine;
	}
	if (!was && mode == STEP_DEBUG_STEP)	/* unstepped, the registers showed the real TF */
		v->step.guest_tf = (v->run->s.regs.regs.rflags & X86_RFLAGS_TF) != 0;
	r = v->kvm->set_guest_debug(v, &dbg);
	if (r)
		return stepping_fail(v, "KVM_SET_GUEST_DEBUG", -r);
	hw->mode = mode;
	hw->addr = addr;
	if (!hw_steps(mode))
		put_guest_tf(v);
	return true;
}

/* The IDT format the CPU reads: 16-byte gates, 8-byte gates or the IVT. */
static enum step_idt idt_format(const struct kvm_sregs *sregs)
{
	if (sregs->efer & X86_EFER_LMA)
		return STEP_IDT_LONG;
	return sregs->cr0 & X86_CR0_PE ? STEP_IDT_PROT : STEP_IDT_REAL;
}

/* The linear address of the GDT or LDT entry sel names. */
static uint64_t descriptor_la(struct vcpu *v, uint16_t sel)
{
	const struct kvm_sregs *sregs = &v->run->s.regs.sregs;

	return (sel & X86_SEL_TI ? sregs->ldt.base : sregs->gdt.base) + (sel & ~7u);
}

/*
 * The CPU's implicit supervisor accesses (SDM vol. 3 4.6: the GDT, LDT,
 * IDT and TSS; an event's frame where its handler runs below CPL3): SMAP
 * applies whatever RFLAGS.AC, and under CR4.PKE the guest's PKRU, read
 * with KVM_GET_XSAVE; where that fails, every key is taken as denied, so
 * that a user page there is left to the CPU.
 */
static void implicit_paging(struct vcpu *v, struct paging *p)
{
	event_implicit_paging(v, &v->run->s.regs.sregs, &v->run->s.regs.regs, p);
}

/*
 * size bytes (8, or 16 for a system descriptor in long mode) of the GDT or
 * LDT entry sel names, read as implicit_paging() has it; false: past the
 * table's limit, or unreadable.
 */
static bool read_descriptor(struct vcpu *v, uint16_t sel, uint8_t *d, unsigned size)
{
	const struct kvm_sregs *sregs = &v->run->s.regs.sregs;
	struct guest_mem m = { v->vm->mem, v->vm->ram_size };
	struct paging p;

	implicit_paging(v, &p);
	return (sel | 7u) + (size - 8) <=
		       (sel & X86_SEL_TI ? sregs->ldt.limit : sregs->gdt.limit) &&
	       pagewalk_read_as(&m, &p, descriptor_la(v, sel), 0, d, size) == size;
}

/* vector's IDT entry in the format the CPU reads; false: beyond the limit or unreadable. */
static bool idt_entry(struct vcpu *v, unsigned vector, uint8_t entry[16])
{
	const struct kvm_sregs *sregs = &v->run->s.regs.sregs;
	struct guest_mem m = { v->vm->mem, v->vm->ram_size };
	unsigned size = step_idt_entry_size(idt_format(sregs));
	struct paging p;

	/* The CPU reads the IDT as a supervisor, whatever the CPL. */
	implicit_paging(v, &p);
	return vector * size + size - 1 <= sregs->idt.limit &&
	       pagewalk_read_as(&m, &p, sregs->idt.base + vector * size, 0, entry, size) == size;
}

/*
 * Where vector's handler starts: its offset, the width of its frame's
 * slots (step_idt_handler()) and, where sel is not NULL, the gate's
 * selector (the segment in real mode).
 */
static bool gate_handler(struct vcpu *v, unsigned vector, uint64_t *handler, unsigned *slot,
			 uint16_t *sel)
{
	uint8_t entry[16];

	if (!idt_entry(v, vector, entry) ||
	    !step_idt_handler(idt_format(&v->run->s.regs.sregs), entry, handler, slot))
		return false;
	if (sel)
		*sel = (uint16_t)(entry[2] | entry[3] << 8);
	return true;
}

/*
 * How INT n goes in virtual-8086 mode under CR4.VME (step_vme_int()), by
 * vector's bit of the interrupt redirection bitmap: the 32 bytes below the
 * current 32-bit TSS's I/O map base (supervisor reads). false: no such
 * TSS, or the bit beyond its limit (the CPU's #GP(0), left to it).
 */
static bool vme_route(struct vcpu *v, unsigned vector, enum step_vme_int *how, uint16_t *image,
		      uint32_t *handler_flags)
{
	const struct kvm_segment *tr = &v->run->s.regs.sregs.tr;
	struct guest_mem m = { v->vm->mem, v->vm->ram_size };
	struct paging p;
	uint8_t b[2];
	uint64_t off;

	if (tr->unusable || !tr->present || (tr->type != 9 && tr->type != 11) || tr->limit < 0x67)
		return false;
	implicit_paging(v, &p);
	if (pagewalk_read_as(&m, &p, tr->base + 0x66, 0, b, 2) != 2)
		return false;
	off = (uint64_t)(b[0] | b[1] << 8) + vector / 8;
	if (off < 32 || off - 32 > tr->limit ||
	    pagewalk_read_as(&m, &p, (uint32_t)(tr->base + off - 32), 0, b, 1) != 1)
		return false;
	*how = step_vme_int(((uint32_t)v->run->s.regs.regs.rflags & ~X86_RFLAGS_TF) |
			    (v->step.guest_tf ? X86_RFLAGS_TF : 0),
			    (b[0] >> (vector % 8)) & 1, image, handler_flags);
	return true;
}

/* INT n in virtual-8086 mode that CR4.VME sends elsewhere than the IDT (or may). */
static bool vme_not_idt(struct vcpu *v, const struct step_insn *insn)
{
	enum step_vme_int how;
	uint16_t image;
	uint32_t flags;

	return insn->kind == STEP_INTN && (v->run->s.regs.regs.rflags & X86_RFLAGS_VM) &&
	       (v->run->s.regs.sregs.cr4 & X86_CR4_VME) &&
	       !(vme_route(v, insn->vector, &how, &image, &flags) && how == STEP_VME_IDT);
}

/*
 * INT n, INT3 or INTO that goes through a present task gate (outside
 * IA-32e mode; by_vmm() delivered the fault of one it cannot use). KVM
 * switches tasks for it without a step exit, the TSS of the task left
 * holding the EFLAGS it ran with (docs/stepping.md, "Events the VMM
 * delivers").
 */
static bool through_task_gate(struct vcpu *v, const struct step_insn *insn)
{
	const struct kvm_sregs *sregs = &v->run->s.regs.sregs;
	uint64_t rflags = v->run->s.regs.regs.rflags;
	uint8_t entry[16];

	if (idt_format(sregs) != STEP_IDT_PROT ||
	    (insn->kind != STEP_INTN && insn->kind != STEP_INT3 && insn->kind != STEP_INTO) ||
	    (insn->kind == STEP_INTO && !(rflags & X86_RFLAGS_OF)) || vme_not_idt(v, insn))
		return false;
	return idt_entry(v, insn->vector, entry) && (entry[5] & 0x9f) == 0x85;
}

/*
 * The linear address of a handler at sel:offset, which a breakpoint takes:
 * the offset in IA-32e mode, plus the code segment's base outside it.
 * false: the descriptor cannot be read (the handler is stepped instead).
 */
static bool handler_la(struct vcpu *v, uint16_t sel, uint64_t offset, uint64_t *la)
{
	struct guest_mem m = { v->vm->mem, v->vm->ram_size };
	struct kvm_segment cs;
	struct paging p;
	struct walk w;
	uint64_t desc;

	switch (idt_format(&v->run->s.regs.sregs)) {
	case STEP_IDT_LONG:
		*la = offset;
		return true;
	case STEP_IDT_REAL:
		*la = (uint64_t)sel * 16 + offset;
		return true;
	default:
		/* An LDT selector: not looked up here (a gate's descriptor is the GDT's). */
		if (sel & X86_SEL_TI)
			return false;
		implicit_paging(v, &p);
		if (!delivery_gdt_descriptor(&m, &p, &v->run->s.regs.sregs.gdt, sel, &desc, &w))
			return false;
		step_segment_cache(desc, sel, &cs);
		*la = (uint32_t)(cs.base + offset);
		return true;
	}
}

/* What emulate.c's forecasts read: the vCPU's registers and the guest's RAM. */
static struct emulate_snapshot snapshot(struct vcpu *v)
{
	return (struct emulate_snapshot){
		.regs = v->run->s.regs.regs,
		.sregs = v->run->s.regs.sregs,
		.maxphyaddr = v->maxphyaddr,
		.mem = { v->vm->mem, v->vm->ram_size },
	};
}

/*
 * An access KVM emulates (part of it MMIO): a fault KVM queues from that
 * emulation (a #PF on the other part) keeps TF in its frame only where
 * single-step is issued again at the instruction (set_hw()'s `again`).
 */
static bool access_emulated_by_kvm(struct vcpu *v, const uint8_t *bytes, size_t n)
{
	struct emulate_snapshot snap = snapshot(v);
	struct emulate_forecast f;

	emulate_predict_fault(&snap, bytes, n, &f);
	return f.mmio;
}

/* Stepped, with a breakpoint at vector's handler (again: see set_hw()); false: none there. */
static bool predict_handler(struct vcpu *v, int vector, bool again)
{
	uint64_t handler, la;
	unsigned slot;
	uint16_t sel;

	if (vector < 0 || !gate_handler(v, (unsigned)vector, &handler, &slot, &sel) ||
	    !handler_la(v, sel, handler, &la))
		return false;
	return set_hw(v, STEP_DEBUG_PREDICT, la, again);
}

/*
 * A fault forecast for the instruction of `bytes` at rip (the one at RIP,
 * or the one behind MOV SS, which runs in its step): step with a
 * breakpoint on its handler too (docs/stepping.md, "Forecast"). false:
 * plain stepping.
 */
static bool predicted(struct vcpu *v, uint64_t rip, const uint8_t *bytes, size_t n)
{
	struct emulate_snapshot snap = snapshot(v);

	snap.regs.rip = rip;
	return predict_handler(v, emulate_predict_fault(&snap, bytes, n, NULL), false);
}

static bool deliver_fault(struct vcpu *v, unsigned vector, uint32_t err);

/* event_end_shadow(), a failure stopping the VM; nmi: an IRET's, NMIs unblocked too. */
static bool end_shadow(struct vcpu *v, bool nmi)
{
	const char *call;
	int r = event_end_shadow(v, nmi, &call);

	return r ? stepping_fail(v, call, -r) : true;
}


/*
 * Delivers an event through the IDT or IVT as the CPU would (delivery.c),
 * the frame holding the guest's TF, the handler's first instruction next
 * and the VMM's TF kept, so that it is checked (docs/design.md, "Events
 * the VMM delivers"). false, nothing written: the CPU or KVM delivers it.
 */
static bool deliver_event(struct vcpu *v, const struct delivery_event *e)
{
	struct delivery_result r;
	const char *call;
	/* Written back through the run page with the VMM's TF: the handler is stepped. */
	int err = event_deliver(v, e, v->step.guest_tf, &r, &call);

	switch (r.outcome) {
	case DELIVERY_DONE:
		/* The handler runs with TF clear, no interrupt shadow. */
		v->step.guest_tf = false;
		v->step.iret_rf = false;
		return err ? stepping_fail(v, call, -err) : true;
	case DELIVERY_FAULT:
		return deliver_fault(v, r.vector, r.err);
	default:
		return false;
	}
}

/* A fault of the instruction at RIP, delivered by the VMM (deliver_event). */
static bool deliver_fault(struct vcpu *v, unsigned vector, uint32_t err)
{
	struct delivery_event e = {
		.vector = vector, .error_code = step_vector_error_code(vector), .err = err,
		.rip = v->run->s.regs.regs.rip, .fault = true,
	};

	if (!deliver_event(v, &e))
		return false;
	v->stats.faults_delivered++;
	return true;
}

static void watch_handler(struct vcpu *v, unsigned vector)
{
	struct step_state *s = &v->step;
	uint64_t handler, la;
	unsigned slot;
	uint16_t sel;

	s->inject_vector = -1;
	if (!gate_handler(v, vector, &handler, &slot, &sel)) {
		stats_unchecked(&v->stats, STATS_UNCHECKED_HANDLER_UNKNOWN, 1);
		s->guest_tf = false;	/* delivery clears it (a task gate: the task's, unknown) */
		set_hw(v, STEP_DEBUG_STEP, 0, false);
		return;
	}
	if (v->vm->host.step_hwbp && handler_la(v, sel, handler, &la)) {
		set_hw(v, STEP_DEBUG_WATCH, la, false);
		return;
	}
	/* No breakpoint: where the CPU steps into the handler, frame_fix() puts the guest's TF in. */
	s->frame_vector = (int)vector;
	s->frame_handler = handler;
	s->frame_slot = slot;
	/* An exception (not INT n: its vectors come here with breakpoints only). */
	s->frame_err = idt_format(&v->run->s.regs.sregs) != STEP_IDT_REAL &&
		       step_vector_error_code(vector);
	s->frame_tf = s->guest_tf;
	s->guest_tf = false;
	set_hw(v, STEP_DEBUG_STEP, 0, false);
}

void stepping_msr_fault(struct vcpu *v)
{
	if (v->step.phase != STEP_PHASE_CHECKED)
		return;
	phase_on(&v->step, STEP_ON_DONE);	/* the access faults: no step of its own */
	watch_handler(v, X86_VEC_GP);
	if (hw_steps(v->step.hw.mode)) {
		set_hw(v, STEP_DEBUG_STEP, 0, true);
		/* Completed before immediate_exit is honoured: the #GP is queued, not delivered. */
		v->completion = VCPU_COMPLETION_MSR_FAULT;
		v->run->immediate_exit = 1;
	}
}

/*
 * After the KVM_RUN that stepping_msr_fault() made return at once: true
 * where KVM had queued the #GP and the VMM delivered it instead. false: the
 * #GP (if queued at all: an older KVM may not have completed the access) is
 * left to KVM, and the handler runs to its IRET, counted.
 */
static bool took_back_gp(struct vcpu *v)
{
	struct kvm_vcpu_events ev, none;
	int r;

	r = v->kvm->get_events(v, &ev);
	if (r)
		return stepping_fail(v, "KVM_GET_VCPU_EVENTS", -r);
	if (!(ev.exception.injected || ev.exception.pending) || ev.exception.nr != X86_VEC_GP ||
	    v->run->s.regs.regs.rip != v->step.rip)
		return false;
	none = ev;
	none.exception.injected = 0;
	none.exception.pending = 0;
	r = v->kvm->set_events(v, &none);
	if (r)
		return stepping_fail(v, "KVM_SET_VCPU_EVENTS (#GP)", -r);
	/* watch_handler() took the guest's TF as delivery would: the frame wants it back. */
	v->step.guest_tf = v->step.frame_tf;
	if (deliver_fault(v, X86_VEC_GP, ev.exception.has_error_code ? ev.exception.error_code : 0)) {
		v->step.frame_vector = -1;
		return true;
	}
	v->step.guest_tf = false;
	r = v->kvm->set_events(v, &ev);
	if (r)
		stepping_fail(v, "KVM_SET_VCPU_EVENTS (#GP)", -r);
	return false;
}

/*
 * A step that stopped at the first instruction of the handler of an event
 * delivered with the VMM's TF: the frame at RSP shows it, so the guest's
 * own goes in its place. Where the CPU ran the handler without stopping,
 * the handler ran unchecked.
 */
static void frame_fix(struct vcpu *v)
{
	struct step_state *s = &v->step;
	const struct kvm_regs *regs = &v->run->s.regs.regs;
	/* RIP, CS, RFLAGS at SS:RSP, in slots of the gate's width; an error code may come first. */
	uint64_t la = emulate_stack_la(&v->run->s.regs.sregs, regs->rflags,
				       regs->rsp + s->frame_slot * (s->frame_err ? 3u : 2u)) + 1;
	uint8_t *b;

	s->frame_vector = -1;
	if (v->run->s.regs.regs.rip != s->frame_handler) {
		stats_unchecked(&v->stats, STATS_UNCHECKED_FRAME_UNFIXED, 1);
		return;
	}
	b = stack_byte(v, la);
	if (b)
		*b = (uint8_t)((*b & ~1u) | (s->frame_tf ? 1u : 0u));
}

/*
 * A diverted step that stopped at a handler's first instruction with its
 * frame at SS:RSP (through any IDT format), a frame whose RIP is rip (a
 * fault's) or next (a trap's): the frame gets the guest's TF, and true.
 * false: the handler ran unchecked, which the caller counts
 * (docs/stepping.md, "Afterwards").
 */
static bool diverted_at_handler(struct vcpu *v, uint64_t rip, uint64_t next)
{
	const struct kvm_sregs *sregs = &v->run->s.regs.sregs;
	const struct kvm_regs *regs = &v->run->s.regs.regs;
	struct step_state *s = &v->step;
	struct guest_mem m = { v->vm->mem, v->vm->ram_size };
	enum step_idt f = idt_format(sregs);
	unsigned size = step_idt_entry_size(f), gates = (sregs->idt.limit + 1u) / size;
	unsigned vector, slot = 8;
	uint8_t idt[256 * 16], raw[32], first[DECODE_INSN_MAX];
	uint64_t w[4] = { 0 }, handler = 0, mask, rsp = regs->rsp;
	struct paging p;
	uint8_t *b;
	int at, pushed = -1;

	if (gates > 256)
		gates = 256;
	implicit_paging(v, &p);
	gates = (unsigned)(pagewalk_read_as(&m, &p, sregs->idt.base, 0, idt, gates * size) / size);
	for (vector = 0; vector < gates; vector++) {
		unsigned len;

		if (!step_idt_handler(f, idt + vector * size, &handler, &slot))
			continue;
		if (handler == regs->rip)
			break;
		/*
		 * A KVM that reports the step after the handler's first
		 * instruction (the nested PVM KVM, for events it delivers in
		 * its emulator): the frame is behind what that one pushed.
		 */
		if (regs->rip - handler - 1 >= STEP_HANDLER_FIRST_MAX)
			continue;	/* not a first instruction away: nothing to read */
		pushed = step_handler_first_push(first, read_code(v, handler, first), sregs->cs.l, &len);
		if (pushed >= 0 && handler + len == regs->rip)
			break;
		pushed = -1;
	}
	if (pushed > 0)
		rsp += slot;
	/* The frame at SS:RSP, in slots of the gate's width (8, 4 or 2 bytes). */
	if (vector == gates ||
	    read_linear(v, emulate_stack_la(sregs, regs->rflags, rsp), 0, raw, 4 * slot) !=
		    4 * slot)
		return false;
	for (unsigned i = 0; i < 4; i++)
		memcpy(&w[i], raw + i * slot, slot);
	mask = slot == 8 ? ~0ull : (1ull << (8 * slot)) - 1;
	/* Real mode pushes no error code. */
	at = step_frame_rflags(w, f != STEP_IDT_REAL && step_vector_error_code(vector),
			       rip & mask, next & mask);
	b = at < 0 ? NULL
		   : stack_byte(v, emulate_stack_la(sregs, regs->rflags, rsp + slot * (unsigned)at) + 1);
	if (!b)
		return false;
	/* A fault pushes RFLAGS as the instruction began. */
	*b = (uint8_t)((*b & ~1u) | (s->tf_at_start ? 1u : 0u));
	return true;
}

static uint64_t read_fmask(struct vcpu *v)
{
	uint64_t fmask;

	/* Not readable (the VM stops): TF masked, as every 64-bit kernel has it. */
	if (!guest_msr(v, MSR_SYSCALL_MASK, &fmask))
		return X86_RFLAGS_TF;
	return fmask;
}

/*
 * Slot i, `size` bytes wide, of the stack at sp through sr's SS (at the
 * stack's width), as the CPU pops it at CPL0: false (and 0) where that
 * read faults.
 */
static bool stack_slot(struct vcpu *v, const struct kvm_sregs *sr, uint64_t sp, unsigned size,
		       unsigned i, uint64_t *val)
{
	uint8_t b[8] = { 0 };
	bool ok = size <= sizeof(b) &&
		  read_linear(v, emulate_stack_la(sr, v->run->s.regs.regs.rflags, sp + i * size), 0,
			      b, size) == size;

	*val = ok ? le64(b) : 0;
	return ok;
}

/*
 * Slot i of what the instruction at RIP pops, at its operand size: POPF's
 * image (0), IRET's frame (0 RIP, 1 CS, 2 RFLAGS, then RSP and SS).
 */
static bool popped_slot(struct vcpu *v, unsigned i, uint64_t *val)
{
	return stack_slot(v, &v->run->s.regs.sregs, v->run->s.regs.regs.rsp, v->step.insn.opsize,
			  i, val);
}

/*
 * The guest's TF once the instruction at RIP completes; for an IRET,
 * SYSENTER or SYSEXIT, also where it goes (step_missed_target()).
 */
static bool tf_after(struct vcpu *v)
{
	const struct kvm_regs *regs = &v->run->s.regs.regs;
	const struct kvm_sregs *sregs = &v->run->s.regs.sregs;
	const struct step_insn *insn = &v->step.insn;
	struct step_tf_inputs in = {
		.tf = v->step.guest_tf, .of = (regs->rflags & X86_RFLAGS_OF) != 0,
	};

	v->step.to_known = false;
	switch (insn->kind) {
	case STEP_SYSENTER:
		/* RIP = IA32_SYSENTER_EIP, its low half outside long mode. */
		v->step.to_known = guest_msr(v, MSR_IA32_SYSENTER_EIP, &v->step.to);
		if (!(sregs->efer & X86_EFER_LMA))
			v->step.to = (uint32_t)v->step.to;
		break;
	case STEP_SYSEXIT:
		v->step.to = insn->opsize == 8 ? regs->rdx : (uint32_t)regs->rdx;
		v->step.to_known = true;
		break;
	case STEP_IRET:
		/* NT outside long mode: a task switch, which returns elsewhere. */
		v->step.to_known = popped_slot(v, 0, &v->step.to) &&
				   ((sregs->efer & X86_EFER_LMA) || !(regs->rflags & X86_RFLAGS_NT));
		in.popped_valid = popped_slot(v, 2, &in.popped);
		break;
	case STEP_POPF:
		in.popped_valid = popped_slot(v, 0, &in.popped);
		break;
	case STEP_SYSRET:
		in.r11 = regs->r11;
		break;
	case STEP_SYSCALL:
		in.fmask = read_fmask(v);
		break;
	default:
		break;
	}
	v->step.popped = in.popped_valid ? in.popped : 0;
	return step_tf_after(insn->kind, &in);
}

/*
 * PUSHF pushed hardware RFLAGS, whose TF is the VMM's: put the guest's own
 * in the pushed copy, so that stepping stays invisible.
 */
static void fix_pushf(struct vcpu *v)
{
	const struct kvm_regs *regs = &v->run->s.regs.regs;
	/* TF: bit 0 of byte 1, at SS:RSP as the stack's width has it. */
	uint8_t *b = stack_byte(v, emulate_stack_la(&v->run->s.regs.sregs, regs->rflags,
						    regs->rsp) + 1);

	if (b)
		*b = (uint8_t)((*b & ~1u) | (v->step.tf_at_start ? 1u : 0u));
}

/*
 * The length of the instruction of `bytes` where step_classify() leaves it
 * to the decoder (every kind that falls through to the next), and whether
 * what runs next is right behind it (`falls`).
 */
static void full_length(struct vcpu *v, const uint8_t *bytes, size_t n, struct step_insn *insn)
{
	unsigned len;
	bool falls;

	/* MOV SS from memory: its length, for the instruction behind it; what runs next is that. */
	if (insn->kind == STEP_MOV_SS && !insn->len) {
		insn->len = decode_length(guest_mode(v), bytes, n, &falls);
		return;
	}
	if (insn->rep || (insn->kind != STEP_OTHER && insn->kind != STEP_PUSHF &&
			  insn->kind != STEP_POPF && insn->kind != STEP_MOV_DR))
		return;
	len = decode_length(guest_mode(v), bytes, n, &insn->falls);
	if (insn->len && insn->len != len)
		insn->falls = false;
	insn->len = len;
}

/*
 * The instruction at rip read into bytes and classified in `mode`, with
 * the decoder's length where step_classify() leaves it to it: the bytes
 * read (0: none could be).
 */
static size_t classify_at(struct vcpu *v, uint64_t rip, struct step_mode mode,
			  uint8_t bytes[DECODE_INSN_MAX], struct step_insn *insn)
{
	size_t n = read_code(v, rip, bytes);

	step_classify(bytes, n, mode, insn);
	if (n)	/* not for every step: a decode */
		full_length(v, bytes, n, insn);
	return n;
}

/*
 * The selector MOV SS or POP SS (bytes mov, s->insn) loads, read as the
 * CPU reads it, before any check of its own: from a register (its ModR/M
 * ends it), from its memory operand through its segment, or from SS:SP
 * (ESP by SS.B) for POP SS, at linear *at (~0: a register). false where
 * that read faults, or cannot be made here (its page unmapped, MMIO).
 * Protection keys are not applied.
 */
static bool ss_selector(struct vcpu *v, const uint8_t *mov, uint16_t *sel, uint64_t *at)
{
	const struct step_state *s = &v->step;
	const struct kvm_regs *regs = &v->run->s.regs.regs;
	const struct kvm_sregs *sr = &v->run->s.regs.sregs;
	struct emulate_exception fault;
	enum decode_mode mode = guest_mode(v);
	struct decode_insn m = { .seg = DECODE_SEG_SS, .mode = mode };
	uint8_t b[2];
	uint64_t ea, la;
	bool write;

	if (s->insn.kind != STEP_MOV_SS || !s->insn.len)
		return false;
	if (s->insn.opsize) {	/* POP SS (only it pops) */
		ea = sr->ss.db ? (uint32_t)regs->rsp : (uint16_t)regs->rsp;
		if (!emulate_linear_access(&m, sr, regs->rflags, ea, s->insn.opsize, false, &la,
					   &fault))
			return false;
	} else if (!decode_access(mode, mov, s->insn.len, &m, &write, NULL)) {
		if (!emulate_linear_access(&m, sr, regs->rflags, emulate_effective(&m, regs), 2, false,
					   &la, &fault))
			return false;
	} else {	/* REX.B, in 64-bit code right before the opcode, extends ModR/M.rm */
		unsigned rm = mov[s->insn.len - 1] & 7;

		if (mode == DECODE_MODE_64 && s->insn.len >= 3 && (mov[s->insn.len - 3] & 0xf0) == 0x40)
			rm |= (mov[s->insn.len - 3] & 1u) << 3;
		*sel = (uint16_t)emulate_reg_get(regs, (int)rm);
		*at = ~0ull;
		return true;
	}
	if (read_linear(v, la, 0, b, 2) != 2)
		return false;
	*sel = (uint16_t)(b[0] | b[1] << 8);
	*at = la;
	return true;
}

/*
 * The frame an IRET in the shadow of `insn` (MOV SS, POP SS or STI, whose
 * bytes are mov) pops, read before the step: RIP, CS and RFLAGS at SS:RSP
 * as `insn` leaves them. STI changes neither; in 64-bit code SS's base is
 * 0 and MOV SS leaves RSP; elsewhere MOV SS and POP SS load a selector
 * (from a register, memory or the stack) whose base and B bit the pops
 * use (real and virtual-8086 mode: the selector times 16). false: not
 * known (a read that faults, a descriptor unreadable): then MOV SS faulted
 * and no IRET ran, or the frame is read by neither.
 */
static bool shadowed_iret_frame(struct vcpu *v, const uint8_t *mov, uint64_t frame[3])
{
	const struct step_state *s = &v->step;
	const struct kvm_regs *regs = &v->run->s.regs.regs;
	struct kvm_sregs sr = v->run->s.regs.sregs;
	bool real = !(sr.cr0 & X86_CR0_PE) || (regs->rflags & X86_RFLAGS_VM);
	unsigned size = s->shadowed.opsize;
	uint64_t sp = regs->rsp;

	if (s->insn.kind == STEP_MOV_SS && !s->mode.cs_l) {
		uint8_t b[8] = { 0 };
		uint64_t at;
		uint16_t sel;

		if (!ss_selector(v, mov, &sel, &at))
			return false;
		if (s->insn.opsize) {	/* POP SS moved the old stack's pointer, at its width */
			uint64_t mask = !real && sr.ss.db ? 0xffffffffull : 0xffffull;

			sp = (sp & ~mask) | ((sp + s->insn.opsize) & mask);
		}
		if (real) {
			sr.ss.selector = sel;
			sr.ss.base = (uint64_t)sel << 4;
		} else if (read_descriptor(v, sel, b, 8)) {
			step_segment_cache(le64(b), sel, &sr.ss);
		} else {
			return false;
		}
	}
	for (unsigned i = 0; i < 3; i++)
		if (!stack_slot(v, &sr, sp, size, i, &frame[i]))
			return false;
	return true;
}

/*
 * The instruction behind a MOV SS, POP SS or STI (whose bytes are mov),
 * read before the step (in the CS it runs in): what it is, for
 * shadowed_after(), and whether it may be a split lock. MOV SS and POP SS
 * hold off the step trap for one more instruction (the CPU's own rule),
 * STI does on some CPUs, so it runs in the same step: with no LOCK prefix
 * or XCHG it cannot be a split lock; if it may be, or cannot be read, it
 * ran unchecked, and says so.
 */
static void classify_shadowed(struct vcpu *v, const uint8_t *mov)
{
	struct step_state *s = &v->step;
	uint8_t next[DECODE_INSN_MAX];
	uint64_t at = step_advance(s->rip, s->insn.len, s->mode);
	size_t n = 0;

	if ((s->insn.kind == STEP_MOV_SS || s->insn.kind == STEP_STI) && s->insn.len)
		n = classify_at(v, at, s->mode, next, &s->shadowed);
	else
		step_classify(next, 0, s->mode, &s->shadowed);
	s->shadowed_unchecked = !n || decode_maybe_locked(guest_mode(v), next, n);
	s->shadowed_faulted = false;
	s->shadowed_frame_valid = s->shadowed.kind == STEP_IRET &&
				  shadowed_iret_frame(v, mov, s->shadowed_frame);
}

/*
 * The forecast for MOV SS or POP SS (mov) and the instruction behind it,
 * which runs in their step: MOV SS's own operand first (from memory),
 * whose fault ends the step before any shadow; then the next one's, where
 * the CPU does not stop at its handler with the trap MOV SS held (QEMU's
 * TCG drops it): the breakpoint does. Its operand is forecast with SS as
 * it was: a wrong forecast costs nothing but itself.
 */
static bool predicted_pair(struct vcpu *v, const uint8_t *mov, size_t n)
{
	const struct step_state *s = &v->step;
	uint64_t at = step_advance(s->rip, s->insn.len, s->mode);
	uint8_t next[DECODE_INSN_MAX];

	if (s->insn.kind != STEP_MOV_SS)
		return false;
	if (predicted(v, s->rip, mov, n))
		return true;
	if (!s->shadowed.falls)
		return false;
	n = read_code(v, at, next);
	return predicted(v, at, next, n);
}

/* SYSCALL saved the hardware's RFLAGS in R11, the VMM's TF in it: the guest's goes there. */
static void fix_syscall_r11(struct vcpu *v)
{
	struct kvm_regs *r = &v->run->s.regs.regs;

	r->r11 = step_syscall_r11(r->r11, v->step.tf_at_start);
	v->run->kvm_dirty_regs |= KVM_SYNC_X86_REGS;
}

/*
 * INT n, INT3 or INTO `insn`, delivered by the CPU in the step: its frame
 * gets the guest's TF where the step stopped at the handler. false where
 * it delivered nothing.
 */
static bool fix_int_frame(struct vcpu *v, const struct step_insn *insn)
{
	struct step_state *s = &v->step;

	if (!step_delivers(insn, v->run->s.regs.regs.rflags) ||
	    !gate_handler(v, insn->vector, &s->frame_handler, &s->frame_slot, NULL))
		return false;
	s->frame_err = false;	/* INT n, INT3, INTO push none */
	s->frame_vector = insn->vector;
	s->frame_tf = s->tf_at_start;
	frame_fix(v);
	return true;
}

/* How the instruction behind MOV SS, POP SS or STI ended (shadowed_end()). */
enum shadowed_end {
	SHADOWED_DONE,          /* completed, or none ran: no shadow held the trap */
	SHADOWED_FAULTED,       /* cannot have ended where the step did: it (or MOV SS) faulted */
	SHADOWED_MAYBE,         /* may go anywhere (a branch, SYSENTER, IRET ...): only a fault's
				   frame at a handler tells */
};

/*
 * A step that ended right behind MOV SS or STI ran that alone; one that
 * ended right behind the next instruction, both.
 */
static enum shadowed_end shadowed_end(struct vcpu *v)
{
	const struct step_state *s = &v->step;
	uint64_t at = step_advance(s->rip, s->insn.len, s->mode), rip = v->run->s.regs.regs.rip;

	if ((s->insn.kind != STEP_MOV_SS && s->insn.kind != STEP_STI) || !s->insn.len || rip == at ||
	    (s->shadowed.len && rip == step_advance(at, s->shadowed.len, s->mode)))
		return SHADOWED_DONE;
	return step_diverted(&s->shadowed, at, rip, s->mode) ? SHADOWED_FAULTED : SHADOWED_MAYBE;
}

/*
 * The instruction in the shadow ran in the same step as the MOV SS, POP SS
 * or STI before it, with the VMM's TF: what it saved of RFLAGS gets the
 * guest's TF, and what it loaded is the guest's TF from now on, as after a
 * step of its own (PUSHF, POPF, SYSCALL, SYSRET, INT n, INT3, INTO).
 * The guest's TF after the pair; the trap the pair owes is MOV SS's.
 */
static bool shadowed_after(struct vcpu *v)
{
	struct step_state *s = &v->step;
	const struct step_insn *sh = &s->shadowed;
	struct kvm_regs *regs = &v->run->s.regs.regs;
	const struct kvm_sregs *sregs = &v->run->s.regs.sregs;
	uint64_t at = step_advance(s->rip, s->insn.len, s->mode),
		 next = step_advance(at, sh->len, s->mode);
	uint8_t b[8] = { 0 };

	if (s->shadowed_faulted)
		return false;	/* delivery clears it */
	switch (sh->kind) {
	case STEP_PUSHF:
		if (sh->len && regs->rip == next)
			fix_pushf(v);
		return s->tf_at_start;
	case STEP_POPF:
		if (!sh->len || regs->rip != next ||
		    read_linear(v, emulate_stack_la(sregs, regs->rflags, regs->rsp - sh->opsize), 0,
				b, sh->opsize) != sh->opsize)
			return s->tf_at_start;
		return (le64(b) & X86_RFLAGS_TF) != 0;
	case STEP_SYSCALL:
		/* In 64-bit code only; RCX says it completed, where #UD leaves it. */
		if (!(sregs->efer & X86_EFER_LMA) || !s->mode.cs_l || regs->rcx != next)
			return s->tf_at_start;
		fix_syscall_r11(v);
		return s->tf_at_start && !(read_fmask(v) & X86_RFLAGS_TF);
	case STEP_SYSRET:
		if (regs->rip != (sh->opsize == 8 ? regs->rcx : (uint32_t)regs->rcx) ||
		    (sregs->cs.selector & X86_SEL_RPL) != 3)
			return s->tf_at_start;
		return (regs->r11 & X86_RFLAGS_TF) != 0;
	case STEP_IRET:
		/* Completed where it went to the frame's CS:RIP; else it faulted, or its frame is not known. */
		if (!s->shadowed_frame_valid || regs->rip != s->shadowed_frame[0] ||
		    sregs->cs.selector != (uint16_t)s->shadowed_frame[1])
			return s->tf_at_start;
		s->iret_rf = (s->shadowed_frame[2] & X86_RFLAGS_RF) != 0;
		return (s->shadowed_frame[2] & X86_RFLAGS_TF) != 0;
	case STEP_INT3:
	case STEP_INTN:
	case STEP_INTO:
		/* Delivery clears it. */
		return fix_int_frame(v, sh) ? false : s->tf_at_start;
	default:
		return s->tf_at_start;
	}
}

static const struct emulate_exception db_event = { .vector = X86_VEC_DB };

/*
 * Hands the guest its own #DB: DR6 as the CPU would leave it and DR7.GD
 * clear (SDM vol. 3 17.2.4), then the event, delivered by the VMM where it
 * can. true: it was, and the handler's first instruction is at RIP, to be
 * checked before it runs; false: KVM delivers it (or the VM is stopping).
 */
static bool reinject_db(struct vcpu *v, uint64_t payload)
{
	const struct delivery_event e = { .vector = X86_VEC_DB, .rip = v->run->s.regs.regs.rip };
	struct kvm_debugregs dr;
	int r = v->kvm->get_debugregs(v, &dr);

	if (r)
		return stepping_fail(v, "KVM_GET_DEBUGREGS", -r);
	dr.dr6 = step_dr6_deliver(dr.dr6, payload);
	dr.dr7 &= ~X86_DR7_GD;
	dr.flags = 0;
	r = v->kvm->set_debugregs(v, &dr);
	if (r)
		return stepping_fail(v, "KVM_SET_DEBUGREGS", -r);
	v->step.dr7 = dr.dr7;
	v->stats.db_reinjected++;
	if (deliver_event(v, &e))
		return true;
	r = event_inject(v, &db_event);
	if (r)
		return stepping_fail(v, "KVM_SET_VCPU_EVENTS (#DB)", -r);
	return false;
}

/*
 * The registers a SYSCALL or SYSRET the VMM performed leaves, then the
 * single-step trap, which follows TF at their end, not their start.
 * -1 where the VM is stopping or KVM was left the #DB, 1 done.
 */
static int land_sys(struct vcpu *v, const struct step_syscall *sc, enum step_kind kind)
{
	struct kvm_regs *regs = &v->run->s.regs.regs;
	struct kvm_sregs *sregs = &v->run->s.regs.sregs;

	if (!end_shadow(v, false))
		return -1;
	sregs->cs = sc->cs;
	sregs->ss = sc->ss;
	v->ops->set_sregs(v, sregs);
	regs->rcx = sc->rcx;
	regs->r11 = sc->r11;
	regs->rip = sc->rip;
	regs->rflags = sc->rflags;
	v->ops->set_regs(v, regs);
	v->step.guest_tf = (sc->rflags & X86_RFLAGS_TF) != 0;
	if (step_trap_owed(kind, v->step.tf_at_start, v->step.guest_tf) &&
	    !reinject_db(v, X86_DR6_BS))
		return -1;
	return vm_stopping(v->vm) ? -1 : 1;
}

/*
 * SYSCALL in 64-bit code, performed by the VMM: stepped, the CPU would
 * save the VMM's TF in R11 and, where IA32_FMASK clears TF, run the
 * handler unstepped. -1 where the VM is stopping, 0 where it is the CPU's
 * (compatibility or legacy mode; MSRs unreadable), 1 done.
 */
static int perform_syscall(struct vcpu *v, uint64_t next)
{
	struct kvm_regs *regs = &v->run->s.regs.regs;
	struct kvm_sregs *sregs = &v->run->s.regs.sregs;
	struct step_syscall sc;
	uint64_t star, target, fmask;

	/* Compatibility mode: #UD on Intel, CSTAR on AMD; the CPU's. */
	if (!(sregs->efer & X86_EFER_LMA) || !sregs->cs.l || !guest_msr(v, MSR_STAR, &star) ||
	    !guest_msr(v, MSR_LSTAR, &target) || !guest_msr(v, MSR_SYSCALL_MASK, &fmask))
		return 0;
	step_syscall_plan(next, (regs->rflags & ~X86_RFLAGS_TF) |
			  (v->step.guest_tf ? X86_RFLAGS_TF : 0), star, target, fmask, &sc);
	return land_sys(v, &sc, STEP_SYSCALL);
}

/*
 * SYSRET from CPL0, performed by the VMM: stepped, the CPU traps only
 * where R11 sets TF, and the code after it would run unstepped.
 */
static int perform_sysret(struct vcpu *v)
{
	struct kvm_regs *regs = &v->run->s.regs.regs;
	struct kvm_sregs *sregs = &v->run->s.regs.sregs;
	struct step_syscall sc;
	uint64_t star;

	/* Certain to fault, loading nothing (R11's TF included): #GP(0) above CPL0. */
	if ((sregs->efer & X86_EFER_LMA) && sregs->cs.l && emulate_cpl(sregs, regs->rflags) != 0)
		return deliver_fault(v, X86_VEC_GP, 0) ? 1 : 0;
	if (!(sregs->efer & X86_EFER_LMA) || !sregs->cs.l ||
	    emulate_cpl(sregs, regs->rflags) != 0 || !guest_msr(v, MSR_STAR, &star) ||
	    !step_sysret_plan(regs->rcx, regs->r11, star, v->step.insn.opsize == 8,
			      (sregs->cr4 & X86_CR4_LA57) != 0, &sc))
		return 0;
	return land_sys(v, &sc, STEP_SYSRET);
}

/*
 * IRETQ at CPL0 back to CPL0 with SS unchanged, performed by the VMM
 * (step_iret_plan()) where this KVM runs one stepped without its trap (the
 * nested PVM KVM: the iret_step probe, or a late exit, iret_step_late()),
 * which leaves the instruction at its target unchecked. Elsewhere, and where a read could
 * fault or watch it (the frame unreadable, a guest data breakpoint on it,
 * protection keys), the CPU's; an instruction breakpoint at the target is
 * the next check's, RF as IRET loads it. -1 where the VM is stopping, 0
 * where it is the CPU's, 1 done.
 */
static int perform_iret(struct vcpu *v)
{
	struct step_state *s = &v->step;
	struct kvm_regs *regs = &v->run->s.regs.regs;
	struct kvm_sregs *sregs = &v->run->s.regs.sregs;
	uint64_t frame[5], desc[2] = { 0, 0 }, rflags;
	struct kvm_segment cs;
	uint8_t d[8];

	if (!__atomic_load_n(&v->vm->host.iret_step_lost, __ATOMIC_RELAXED) ||
	    !(sregs->efer & X86_EFER_LMA) || !sregs->cs.l || s->insn.opsize != 8 ||
	    emulate_cpl(sregs, regs->rflags) != 0 || (sregs->cr4 & X86_CR4_PKE) ||
	    !s->dr_valid || step_data_hits(s->db, s->dr7, regs->rsp, sizeof(frame)))
		return 0;
	for (unsigned i = 0; i < 5; i++)
		if (!popped_slot(v, i, &frame[i]))
			return 0;
	for (unsigned i = 0; i < 2; i++)
		if (((uint16_t)frame[1 + 3 * i] & ~X86_SEL_RPL) &&
		    read_descriptor(v, (uint16_t)frame[1 + 3 * i], d, 8))
			desc[i] = le64(d);
	if (!step_iret_plan(frame, desc[0], desc[1], &sregs->ss, regs->rflags,
			    (sregs->cr4 & X86_CR4_LA57) != 0, &cs, &rflags))
		return 0;
	if (!end_shadow(v, true))
		return -1;
	read_ad(v, regs->rsp, sizeof(frame));
	if (memcmp(&cs, &sregs->cs, sizeof(cs))) {
		sregs->cs = cs;
		v->ops->set_sregs(v, sregs);
	}
	regs->rip = frame[0];
	regs->rsp = frame[3];
	regs->rflags = rflags;
	v->ops->set_regs(v, regs);
	s->guest_tf = (rflags & X86_RFLAGS_TF) != 0;
	/* RF, set by a #DB handler to step over its breakpoint, holds for one instruction. */
	s->iret_rf = (rflags & X86_RFLAGS_RF) != 0;
	v->stats.irets_performed++;
	if (step_trap_owed(STEP_IRET, s->tf_at_start, s->guest_tf) && !reinject_db(v, X86_DR6_BS))
		return -1;
	return vm_stopping(v->vm) ? -1 : 1;
}

/*
 * XBEGIN, where the guest's CPUID has RTM, performed by the VMM as an
 * immediate abort (step_xbegin_abort()), so that the fallback is checked
 * from its first instruction. Without RTM it is the CPU's: #UD, or an
 * abort at once where the host turned TSX off.
 */
static int perform_xbegin(struct vcpu *v)
{
	struct kvm_regs *regs = &v->run->s.regs.regs;
	const struct kvm_sregs *sregs = &v->run->s.regs.sregs;
	bool long64 = (sregs->efer & X86_EFER_LMA) && sregs->cs.l;
	struct step_xbegin x;

	if (!v->rtm)
		return 0;
	if (!step_xbegin_abort(&v->step.insn, regs->rip, long64, (sregs->cr4 & X86_CR4_LA57) != 0,
			       sregs->cs.limit, v->step.guest_tf, &x))
		return deliver_fault(v, X86_VEC_GP, 0) ? 1 : 0;
	if (!end_shadow(v, false))
		return -1;
	/* A 32-bit write: zero-extended in 64-bit code, the upper half kept elsewhere. */
	regs->rax = long64 ? x.status : (regs->rax & ~0xffffffffull) | x.status;
	regs->rip = x.rip;
	regs->rflags &= ~X86_RFLAGS_RF;
	v->ops->set_regs(v, regs);
	v->stats.rtm_aborts++;
	return vm_stopping(v->vm) ? -1 : 1;
}

/*
 * Reads len bytes at la for the target of a branch as the guest sees
 * them: past RAM, where no device answers, KVM's emulator gets
 * VM_UNBACKED_BYTE through an MMIO exit (vcpu.c). 1 done; 0 the CPU
 * faults on that read (#PF, a non-canonical address; a paging-structure
 * entry outside RAM too: KVM emulates the access, and its walker raises
 * #PF where no memory slot holds a table); -1 not known.
 */
static int read_target(struct vcpu *v, uint64_t la, uint8_t *buf, size_t len)
{
	struct guest_mem m = { v->vm->mem, v->vm->ram_size };
	enum walk_result r;
	struct paging p;

	guest_paging(v, &p);
	if (pagewalk_read_filled(&m, &p, la, 0, buf, len, VM_UNBACKED_BYTE, &r) == len)
		return 1;
	return r == WALK_FAULT || r == WALK_NONCANONICAL || r == WALK_OUTSIDE_RAM ? 0 : -1;
}

/*
 * The target of the indirect JMP or CALL, or the RET, decoded in `br`,
 * read as the CPU reads it (a register, memory through its segment and
 * paging at the CPL, the stack top), and a far one's selector: 1. 0: the
 * CPU faults on that read. -1: not known.
 */
static int indirect_target(struct vcpu *v, const struct decode_branch *br, uint64_t *to,
			   uint16_t *sel)
{
	const struct kvm_regs *regs = &v->run->s.regs.regs;
	const struct kvm_sregs *sregs = &v->run->s.regs.sregs;
	struct emulate_exception fault;
	uint8_t buf[10] = { 0 };
	unsigned want = br->size + (br->far ? 2 : 0);
	uint64_t la, value;
	int r = 1;

	switch (br->from) {
	case DECODE_FROM_REG:
		value = emulate_reg_get(regs, br->reg);
		memcpy(buf, &value, sizeof(value));
		break;
	case DECODE_FROM_MEM:
		if (!emulate_linear_access(&br->mem, sregs, regs->rflags, emulate_effective(&br->mem, regs),
					   want, false, &la, &fault))
			return 0;	/* #GP or #SS */
		r = read_target(v, la, buf, want);
		break;
	case DECODE_FROM_STACK:
		r = read_target(v, emulate_stack_la(sregs, regs->rflags, regs->rsp), buf, want);
		break;
	default:
		return -1;
	}
	if (r < 1)
		return r;
	*to = 0;
	for (unsigned i = 0; i < br->size && i < 8; i++)
		*to |= (uint64_t)buf[i] << (8 * i);
	*sel = br->far ? (uint16_t)(buf[br->size] | buf[br->size + 1] << 8) : 0;
	return 1;
}

/*
 * Where the branch at RIP can complete (step_branch_missed()): a direct
 * one at its target (and behind it, if conditional), an indirect one or a
 * RET at the target it reads; nowhere if that read faults, if a far
 * one's selector is null, in no LDT or past its table, or if a far RET's
 * names no code or data segment. JMP or CALL far through a call gate
 * lands at the gate's offset instead of the pointer's (a task switch
 * changes TR, which the caller tells apart).
 */
static void branch_targets(struct vcpu *v, const uint8_t *bytes, size_t n, struct step_branch *b)
{
	const struct kvm_sregs *sregs = &v->run->s.regs.sregs;
	unsigned size = sregs->efer & X86_EFER_LMA ? 16 : 8;
	struct decode_branch br;
	uint16_t sel = 0;
	uint8_t d[16];
	uint32_t err;

	*b = (struct step_branch){ .n = 0 };
	if (!decode_branch(guest_mode(v), bytes, n, v->run->s.regs.regs.rip, &br))
		return;
	b->n = br.n;
	memcpy(b->to, br.to, sizeof(b->to));
	sel = br.far_sel;
	if (br.from >= 0) {
		int r = indirect_target(v, &br, &b->to[0], &sel);

		b->faults = r == 0;
		b->n = r == 1;
	}
	if (!br.far || !b->n || !(sregs->cr0 & X86_CR0_PE) ||
	    (v->run->s.regs.regs.rflags & X86_RFLAGS_VM))
		return;
	if (step_code_selector_fault(sel, &sregs->gdt, &sregs->ldt, &err) >= 0) {
		*b = (struct step_branch){ .faults = true };
		return;
	}
	if (!read_descriptor(v, sel, d, size)) {
		b->n = 0;
		return;
	}
	if (d[5] & 0x10)	/* a code or data segment: the pointer's offset, or a fault */
		return;
	if (br.from == DECODE_FROM_STACK) {	/* RET far to a gate or a TSS: #GP */
		*b = (struct step_branch){ .faults = true };
		return;
	}
	switch (d[5] & 0x0f) {
	case 0x4:		/* 16-bit call gate */
		b->to[1] = d[0] | d[1] << 8;
		b->n = 2;
		return;
	case 0xc:		/* 32-bit call gate; 64-bit in IA-32e mode */
		b->to[1] = (uint64_t)(d[0] | d[1] << 8 | d[6] << 16 | (uint32_t)d[7] << 24);
		if (size == 16)
			b->to[1] |= (uint64_t)(d[8] | d[9] << 8 | d[10] << 16 | (uint32_t)d[11] << 24) << 32;
		b->n = 2;
		return;
	default:
		return;
	}
}

/*
 * What step_certain_fault() looks at for the instruction `bytes` at RIP,
 * from the vCPU as it is (gpr: its storage); the selector MOV SS loads is
 * the caller's to add.
 */
static void cpu_for_faults(struct vcpu *v, const uint8_t *bytes, size_t n, uint64_t gpr[16],
			struct step_cpu *c)
{
	const struct step_state *s = &v->step;
	const struct kvm_regs *regs = &v->run->s.regs.regs;
	const struct kvm_sregs *sr = &v->run->s.regs.sregs;
	const uint64_t g[16] = {
		regs->rax, regs->rcx, regs->rdx, regs->rbx, regs->rsp, regs->rbp, regs->rsi,
		regs->rdi, regs->r8, regs->r9, regs->r10, regs->r11, regs->r12, regs->r13,
		regs->r14, regs->r15,
	};
	enum step_stack_read need;
	uint8_t ret[8];

	memcpy(gpr, g, sizeof(g));
	*c = (struct step_cpu){
		.cpl = emulate_cpl(sr, regs->rflags), .dr7 = s->dr7, .rflags = regs->rflags,
		.cr4 = sr->cr4,
		.long64 = (sr->efer & X86_EFER_LMA) && sr->cs.l, .cs_d = sr->cs.db,
		.lma = (sr->efer & X86_EFER_LMA) != 0, .amd = v->amd_like,
		.real = !(sr->cr0 & X86_CR0_PE) || (regs->rflags & X86_RFLAGS_VM),
		.la57 = (sr->cr4 & X86_CR4_LA57) != 0, .gpr = gpr, .gdt_limit = sr->gdt.limit,
		.ldt_limit = sr->ldt.unusable || !sr->ldt.present ? -1 : (int64_t)sr->ldt.limit,
		.lock_ud = decode_lock_faults(guest_mode(v), bytes, n),
	};
	need = n ? step_certain_fault_stack(bytes, n, c) : STEP_STACK_NONE;
	if (need == STEP_STACK_RET && read_linear(v, regs->rsp, 0, ret, 8) == 8) {
		c->ret_valid = true;
		c->ret_target = le64(ret);
	}
	if ((need == STEP_STACK_FLAGS_AT_0 || need == STEP_STACK_FLAGS_AT_4) &&
	    read_linear(v, emulate_stack_la(sr, regs->rflags,
					    (uint16_t)(regs->rsp + (need == STEP_STACK_FLAGS_AT_4 ? 4 : 0))),
			0, ret, 2) == 2) {
		c->popped_valid = true;
		c->popped = (uint16_t)(ret[0] | ret[1] << 8);
	}
}

/*
 * The accessed bits MOV SS's reads set: its selector's from memory (at
 * ss_at, ~0 for a register) and, with `desc`, its descriptor's.
 */
static void mov_ss_read_ad(struct vcpu *v, const struct step_cpu *c, uint64_t ss_at, bool desc)
{
	if (ss_at != ~0ull)
		read_ad(v, ss_at, 2);
	if (desc)
		read_ad(v, descriptor_la(v, c->ss_sel), 8);
}

/*
 * MOV SS or POP SS (judged by `mov`: no certain fault, its selector at
 * ss_at or in a register) in front of an instruction that faults (a
 * certain fault, or its operand's certain #GP or #SS) or raises INT n,
 * INT3 or INTO: the pair is the VMM's, MOV SS performed as the CPU
 * performs it (SDM vol. 2 MOV, POP) and the event delivered at the second
 * instruction. Stepped, the pair runs in one step, and a CPU that does
 * not stop at the handler with the trap MOV SS held (QEMU's TCG) leaves
 * the handler unwatched, its frame showing the VMM's TF. Only where MOV
 * SS is certain to complete (its descriptor read and judged, its accessed
 * bit writable; in real and virtual-8086 mode its selector read, which
 * sets the base to 16 times it and leaves the rest of the cache), and
 * none of the guest's breakpoints is enabled. With the guest's TF set,
 * only in front of a certain #UD: KVM intercepts #UD and queues it
 * itself, and a fault it queues away from the RIP its single-step began
 * at loses TF from its frame (__kvm_set_rflags()); the trap MOV SS held
 * is then dropped, as QEMU's TCG drops it. 1: done; 0: stepped as before.
 */
/*
 * What the instruction at RIP, behind a MOV SS performed, is certain to
 * raise: a fault (*vector, *err), or INT n, INT3 or INTO (true, *e filled
 * in). *vector -1 and false: nothing certain.
 */
static bool behind_mov_ss(struct vcpu *v, struct delivery_event *e, int *vector, uint32_t *err)
{
	const struct step_state *s = &v->step;
	const struct kvm_regs *regs = &v->run->s.regs.regs;
	uint8_t next[DECODE_INSN_MAX];
	struct emulate_snapshot snap;
	struct emulate_forecast f;
	struct step_insn nx;
	struct step_cpu c;
	uint64_t gpr[16];
	size_t n;

	*vector = -1;
	n = read_code(v, regs->rip, next);
	if (!n)
		return false;
	step_classify(next, n, s->mode, &nx);
	cpu_for_faults(v, next, n, gpr, &c);
	/* SYSCALL and SYSRET without EFER.SCE: #UD before anything else, as by_vmm() has it. */
	if ((nx.kind == STEP_SYSCALL || nx.kind == STEP_SYSRET) &&
	    !(v->run->s.regs.sregs.efer & X86_EFER_SCE)) {
		*vector = X86_VEC_UD;
		return false;
	}
	*vector = step_certain_fault(next, n, &c, err);
	if (*vector >= 0)
		return false;
	if (nx.kind == STEP_INTN || nx.kind == STEP_INT3 ||
	    (nx.kind == STEP_INTO && (regs->rflags & X86_RFLAGS_OF))) {
		e->vector = nx.vector;
		e->rip = step_advance(regs->rip, nx.len, s->mode);
		return true;
	}
	snap = snapshot(v);
	if (emulate_predict_segment_fault(&snap, next, n, &f) >= 0 && f.certain &&
	    (f.ex.vector == X86_VEC_SS || f.ex.vector == X86_VEC_GP)) {
		*vector = (int)f.ex.vector;
		*err = f.ex.error_code;
	}
	return false;
}

static int mov_ss_pair(struct vcpu *v, const struct step_cpu *mov, uint64_t ss_at)
{
	const struct step_state *s = &v->step;
	struct kvm_regs *regs = &v->run->s.regs.regs, was = *regs;
	struct kvm_sregs *sr = &v->run->s.regs.sregs, sr_was = *sr;
	struct guest_mem m = { v->vm->mem, v->vm->ram_size };
	uint64_t la = descriptor_la(v, mov->ss_sel);
	bool desc = !mov->real, event, ok;
	struct delivery_event e = { .soft = true };
	struct walk aw;
	struct paging p;
	uint32_t err = 0;
	int vector;

	if (!s->dr_valid || (s->dr7 & X86_DR7_ENABLES) || !(desc ? mov->ss_desc_valid : mov->ss_sel_valid))
		return 0;
	/*
	 * The accessed bit the load sets: an implicit supervisor write, as
	 * read_descriptor() reads (paged only here: KVM_GET_XSAVE under PKE).
	 */
	if (desc && !(mov->ss_desc & X86_DESC_A)) {
		implicit_paging(v, &p);
		if (pagewalk(&m, &p, la + X86_DESC_A_BYTE, WALK_WRITE, &aw) != WALK_OK ||
		    aw.gpa >= m.size)
			return 0;
	}
	if (desc) {
		step_segment_cache(mov->ss_desc, mov->ss_sel, &sr->ss);
	} else {
		sr->ss.selector = mov->ss_sel;
		sr->ss.base = (uint64_t)mov->ss_sel << 4;
	}
	if (s->insn.opsize) {	/* POP SS: the old stack's pointer, at its width */
		uint64_t mask = desc && sr_was.ss.db ? 0xffffffffull : 0xffffull;

		regs->rsp = (regs->rsp & ~mask) | ((regs->rsp + s->insn.opsize) & mask);
	}
	regs->rip = step_advance(s->rip, s->insn.len, s->mode);
	event = behind_mov_ss(v, &e, &vector, &err);
	/* MOV DR's #DB with DR7.GD has its own path: stepped. */
	ok = !(vector == X86_VEC_DB || (vector < 0 && !event) ||
	       (s->tf_at_start && vector != X86_VEC_UD));
	if (ok) {
		mov_ss_read_ad(v, mov, ss_at, desc);
		if (desc && !(mov->ss_desc & X86_DESC_A)) {
			m.base[aw.gpa] |= 1;	/* X86_DESC_A, bit 0 of its byte */
			pagewalk_set_ad(&m, &aw, true);
		}
		ok = event ? deliver_event(v, &e) : deliver_fault(v, (unsigned)vector, err);
	}
	if (!ok) {
		*regs = was;
		*sr = sr_was;
	}
	return ok ? 1 : 0;
}

/* by_vmm()'s answer where only the instruction's certain fault can decide. */
#define BY_VMM_CERTAIN_FAULT 2

/* IRETQ in 64-bit code: the frame's CS, as wide as the operand: certain faults are delivered. */
static int iret_by_vmm(struct vcpu *v)
{
	const struct kvm_sregs *sr = &v->run->s.regs.sregs;
	uint64_t cs;
	uint32_t err;
	int vector;

	/* Outside 64-bit code, virtual-8086 mode's certain #GP (by_vmm()). */
	if (!(sr->efer & X86_EFER_LMA) || !sr->cs.l)
		return BY_VMM_CERTAIN_FAULT;
	if (!popped_slot(v, 1, &cs))
		return 0;
	vector = step_code_selector_fault((uint16_t)cs, &sr->gdt, &sr->ldt, &err);
	if (vector < 0)
		return perform_iret(v);
	return deliver_fault(v, (unsigned)vector, err) ? 1 : 0;
}

/* INT n, INT3, INTO and INT1, delivered as the CPU does; no single-step trap follows any. */
static int soft_int_by_vmm(struct vcpu *v, struct delivery_event *e)
{
	const struct step_state *s = &v->step;
	const struct kvm_regs *regs = &v->run->s.regs.regs;
	bool v86 = (regs->rflags & X86_RFLAGS_VM) != 0;

	if (s->insn.kind == STEP_INTO && !(regs->rflags & X86_RFLAGS_OF))
		return 0;
	/*
	 * In virtual-8086 mode CR4.VME routes INT n by the TSS's redirection
	 * bitmap (vme_route()): to the IVT, a #GP(0) or the IDT; where it
	 * cannot be read, stepped. Without it, below IOPL 3, INT n is a certain
	 * #GP(0) (INTO is not IOPL-sensitive).
	 */
	if (s->insn.kind == STEP_INTN && v86 && (v->run->s.regs.sregs.cr4 & X86_CR4_VME)) {
		enum step_vme_int how;

		if (!vme_route(v, s->insn.vector, &how, &e->ivt_image, &e->ivt_flags))
			return 0;
		if (how == STEP_VME_GP)
			return deliver_fault(v, X86_VEC_GP, 0) ? 1 : 0;
		e->ivt = how == STEP_VME_IVT;	/* else the IDT, as below */
	} else if (s->insn.kind == STEP_INTN && v86 && X86_RFLAGS_IOPL(regs->rflags) < 3) {
		return BY_VMM_CERTAIN_FAULT;
	}
	/* INT1 leaves DR6 as it is, and is no software interrupt. */
	e->soft = s->insn.kind != STEP_INT1;
	e->vector = s->insn.vector;
	return deliver_event(v, e) ? 1 : 0;
}

/* The fault the instruction is certain to raise, delivered; MOV SS paired with the next. */
static int certain_fault_by_vmm(struct vcpu *v, const uint8_t *bytes, size_t n)
{
	const struct kvm_sregs *sr = &v->run->s.regs.sregs;
	uint64_t gpr[16], ss_at = ~0ull;
	struct step_cpu c;
	uint8_t d[8];
	uint32_t err;
	int vector;

	cpu_for_faults(v, bytes, n, gpr, &c);
	/* From memory only without protection keys, which could fault the read first. */
	c.ss_sel_valid = ss_selector(v, bytes, &c.ss_sel, &ss_at) &&
			 (ss_at == ~0ull || !(sr->cr4 & X86_CR4_PKE));
	if (c.ss_sel_valid && !c.real && (c.ss_sel & ~X86_SEL_RPL) &&
	    read_descriptor(v, c.ss_sel, d, 8)) {
		c.ss_desc_valid = true;
		c.ss_desc = le64(d);
	}
	vector = step_certain_fault(bytes, n, &c, &err);
	/* MOV SS's fault of its selector comes after the reads (of its descriptor: within its table). */
	if ((vector == X86_VEC_GP || vector == X86_VEC_SS) &&
	    v->step.insn.kind == STEP_MOV_SS && c.ss_sel_valid)
		mov_ss_read_ad(v, &c, ss_at, c.ss_desc_valid && err);
	if (vector < 0 && v->step.insn.kind == STEP_MOV_SS)
		return mov_ss_pair(v, &c, ss_at);
	/* MOV DR with DR7.GD at CPL0: #DB with BD, the guest's (reinject_db clears GD). */
	if (vector == X86_VEC_DB)
		return reinject_db(v, X86_DR6_BD) ? 1 : -1;
	return vector >= 0 && deliver_fault(v, (unsigned)vector, err) ? 1 : 0;
}

/*
 * What the VMM does itself instead of stepping the instruction at RIP, so
 * that no handler runs unchecked and every saved RFLAGS holds the guest's
 * TF: INT n, INT3, INTO, INT1 and the faults certain to come are
 * delivered, SYSCALL and SYSRET performed. 1: done, RIP moved; 0: stepped
 * as any other; -1: the VM is stopping, or KVM was left an event to deliver.
 */
static int by_vmm(struct vcpu *v, const uint8_t *bytes, size_t n)
{
	struct step_state *s = &v->step;
	struct delivery_event e = { .rip = step_advance(s->rip, s->insn.len, s->mode), .rf = s->rf };
	int r;

	/*
	 * SYSCALL and SYSRET with EFER.SCE clear: #UD in every mode, certain
	 * (SDM vol. 2; APM vol. 3), delivered so that its handler is checked.
	 * Outside IA-32e mode too: stepped, the #UD KVM injects there ran its
	 * handler unwatched and the SYSCALL was taken for completed.
	 */
	if ((s->insn.kind == STEP_SYSCALL || s->insn.kind == STEP_SYSRET) &&
	    !(v->run->s.regs.sregs.efer & X86_EFER_SCE))
		return deliver_fault(v, X86_VEC_UD, 0) ? 1 : 0;
	switch (s->insn.kind) {
	case STEP_SYSCALL:
		return perform_syscall(v, e.rip);
	case STEP_SYSRET:
		return perform_sysret(v);
	case STEP_XBEGIN:
		return perform_xbegin(v);
	case STEP_IRET:
		r = iret_by_vmm(v);
		break;
	case STEP_INTO:
	case STEP_INTN:
	case STEP_INT3:
	case STEP_INT1:
		r = soft_int_by_vmm(v, &e);
		break;
	default:
		r = BY_VMM_CERTAIN_FAULT;
		break;
	}
	return r == BY_VMM_CERTAIN_FAULT ? certain_fault_by_vmm(v, bytes, n) : r;
}

/*
 * A step that changed TR switched tasks (a far JMP or CALL to a TSS or
 * task gate, IRET with NT, an event through a task gate: SDM vol. 3 7.3).
 * The outgoing task's TSS saved the hardware EFLAGS, whose TF may be the
 * VMM's: the guest's own goes there; the guest's TF is now the incoming
 * image's. Where either TSS cannot be written or read, counted.
 */
static void task_switched(struct vcpu *v)
{
	struct step_state *s = &v->step;
	const struct kvm_segment *tr = &v->run->s.regs.sregs.tr;
	int out = step_tss_flags_offset(s->tr.type & 0xf), in = step_tss_flags_offset(tr->type & 0xf);
	struct guest_mem m = { v->vm->mem, v->vm->ram_size };
	uint8_t *b, flags = 0;
	struct paging p;

	/* Both TSSes are implicit supervisor accesses, whatever CPL the new task runs at. */
	implicit_paging(v, &p);
	b = out < 0 ? NULL : stack_byte_as(v, &p, s->tr.base + (unsigned)out + 1);
	if (b)
		*b = (uint8_t)((*b & ~1u) | (s->tf_at_start ? 1u : 0u));
	if (in >= 0 && pagewalk_read_as(&m, &p, tr->base + (unsigned)in + 1, 0, &flags, 1) == 1)
		s->guest_tf = flags & 1;
	if (!b || in < 0)
		stats_unchecked(&v->stats, STATS_UNCHECKED_TASK_SWITCH, 1);
}

/*
 * The instruction at RIP (CPL0) returns to CPL3: SYSEXIT, or an IRET whose
 * frame holds an outer CS or, outside IA-32e mode, VM (virtual-8086 mode).
 */
static bool returns_outward(struct vcpu *v)
{
	const struct kvm_sregs *sregs = &v->run->s.regs.sregs;
	const struct kvm_regs *regs = &v->run->s.regs.regs;
	uint64_t cs, fl;

	if (v->step.insn.kind == STEP_SYSEXIT)
		return true;
	if (v->step.insn.kind != STEP_IRET || !(sregs->cr0 & X86_CR0_PE) ||
	    (!(sregs->efer & X86_EFER_LMA) && (regs->rflags & X86_RFLAGS_NT)) ||
	    !popped_slot(v, 1, &cs))
		return false;
	if (!(sregs->efer & X86_EFER_LMA) && v->step.insn.opsize == 4 && popped_slot(v, 2, &fl) &&
	    (fl & X86_RFLAGS_VM))
		return true;
	return (cs & X86_SEL_RPL) != 0;
}

/*
 * IRET whose step exit, the CPU's own, came one instruction past the
 * frame's target: a KVM that performs IRET without its step trap (the
 * nested PVM KVM, at CPL0) ran the target's instruction in the same step.
 */
static bool iret_step_late(struct vcpu *v, bool emulated)
{
	const struct step_state *s = &v->step;
	const struct kvm_sregs *sr = &v->run->s.regs.sregs;
	struct step_mode mode = { .cs_l = sr->cs.l, .cs_d = sr->cs.db };
	uint8_t b[DECODE_INSN_MAX];
	struct step_insn in;

	if (s->insn.kind != STEP_IRET || !s->to_known || emulated ||
	    v->run->s.regs.regs.rip == s->to)
		return false;
	classify_at(v, s->to, mode, b, &in);
	return in.len && in.kind == STEP_OTHER && !in.rep &&
	       v->run->s.regs.regs.rip == step_advance(s->to, in.len, mode);
}

/*
 * The exit at our breakpoint of STEP_DEBUG_WATCH: the event is delivered
 * (or the IRET done), the next instruction is checked before it runs.
 * set_hw() reads the guest's TF back from the unstepped registers.
 */
static bool watched_exit(struct vcpu *v, uint64_t hit)
{
	struct step_state *s = &v->step;
	bool ours = (hit & s->hw.mine) && v->run->debug.arch.pc == s->hw.addr;
	uint64_t guests = s->hw.guests;

	if (!set_hw(v, STEP_DEBUG_STEP, 0, false))
		return true;
	/* The guest's own breakpoints that fired too (a data breakpoint on the frame). */
	if (ours) {
		if (hit & guests)
			reinject_db(v, hit & guests);
		return true;
	}
	/*
	 * Something else: the guest's own #DB (its TF is the hardware's
	 * while watching, its breakpoints are armed beside ours), or the
	 * event went elsewhere (a fault in its delivery).
	 */
	stats_unchecked(&v->stats, STATS_UNCHECKED_WATCH_MISSED, 1);
	if (hit & (X86_DR6_BS | X86_DR6_BD | X86_DR6_BT | guests))
		reinject_db(v, hit & ~(X86_DR6_B0_3 & ~guests));
	return true;
}

/* The guest's DR0-3 and DR7: read again only where the step may have changed them. */
static bool guest_debugregs(struct vcpu *v, uint64_t hit, uint64_t db[4], uint64_t *dr7)
{
	struct step_state *s = &v->step;
	struct kvm_debugregs dr = { 0 };
	int r;

	if (s->dr_valid && s->insn.kind != STEP_MOV_DR && !(hit & X86_DR6_B0_3)) {
		memcpy(db, s->db, 4 * sizeof(db[0]));
		*dr7 = s->dr7;
		return true;
	}
	r = v->kvm->get_debugregs(v, &dr);
	if (r) {
		stepping_fail(v, "KVM_GET_DEBUGREGS", -r);
		return false;
	}
	memcpy(db, dr.db, 4 * sizeof(db[0]));
	*dr7 = dr.dr7;
	return true;
}

/* What a step exit says of the checked instruction. */
struct step_verdict {
	bool escaped;    /* guest code ran that nothing checked */
	bool late_iret;  /* an IRET whose trap KVM lost: the instruction behind ran too */
	bool in_handler; /* the exit is inside a handler, where KVM's emulator stopped */
};

/*
 * The checked instruction did not end where it would have, had it not
 * faulted: it was diverted to a handler (verdict unchanged, the step
 * unchecked), or it escaped.
 */
static void judge_diversion(struct vcpu *v, uint64_t hit, bool emulated, struct step_verdict *j)
{
	struct step_state *s = &v->step;
	const struct kvm_run *run = v->run;
	bool missed = step_diverted(&s->insn, s->rip, run->s.regs.regs.rip, s->mode) ||
		      step_missed_target(&s->insn, s->to_known, s->to, run->s.regs.regs.rip) ||
		      (emulated && step_undecodable_diverted(&s->insn, s->rip,
							     run->s.regs.regs.rip, s->mode)) ||
		      ((step_jump_faulted(&s->insn, s->rsp, run->s.regs.regs.rsp) ||
			step_branch_missed(&s->insn, &s->branch, run->s.regs.regs.rip)) &&
		       run->s.regs.sregs.tr.selector == s->tr.selector);
	/*
	 * A branch may go anywhere, a handler included: only a frame of its
	 * own RIP there says it faulted (a non-canonical target, a #PF on
	 * CALL's push, a far branch's bad selector). So may what the decoder
	 * rejects, its length unknown, and what KVM runs itself (VMRUN ...).
	 */
	bool branch = (s->insn.kind == STEP_BRANCH || step_undecodable(&s->insn) ||
		       s->insn.kvm_faults) && (hit & X86_DR6_BS);
	enum shadowed_end behind = shadowed_end(v);
	uint64_t at = step_advance(s->rip, s->insn.len, s->mode);

	/*
	 * The instruction behind MOV SS faulted, and the CPU stopped at its
	 * handler (with the trap MOV SS held, which is the guest's there too
	 * if its TF was set: shadowed_after()). Delivery cleared the guest's
	 * TF. One that may go anywhere faulted only where the frame holds its
	 * own RIP.
	 */
	if (behind != SHADOWED_DONE &&
	    diverted_at_handler(v, at, behind == SHADOWED_FAULTED
					       ? step_advance(at, s->shadowed.len, s->mode) : at)) {
		s->shadowed_faulted = true;
		s->guest_tf = false;
	/*
	 * The instruction faulted: no step of its own is owed to the guest,
	 * and what an IRET would have loaded (tf_after) is not the guest's:
	 * its TF stays as it was.
	 */
	} else if ((missed || branch || behind == SHADOWED_FAULTED) &&
		   diverted_at_handler(v, s->rip, branch || behind == SHADOWED_FAULTED ? s->rip : at)) {
		phase_on(s, STEP_ON_DONE);
		s->guest_tf = false;	/* delivery clears it */
	} else if (missed || behind == SHADOWED_FAULTED ||
		   (emulated && behind == SHADOWED_MAYBE &&
		    (s->shadowed.kind == STEP_INT3 || s->shadowed.kind == STEP_INTN ||
		     s->shadowed.kind == STEP_INTO))) {
		j->escaped = true;
		/*
		 * An event was delivered (clearing TF) and its handler ran
		 * unwatched up to an instruction KVM emulated: no trap of the
		 * CPU's, and the handler's TF is clear. So for INT n, INT3 or
		 * INTO behind MOV SS with the guest's TF, where the CPU drops
		 * the trap MOV SS held (QEMU's TCG): that exit, inside the
		 * handler, is no trap of the guest's.
		 */
		j->in_handler = emulated;
	}
}

/*
 * A step that comes back where the checked instruction cannot have taken
 * the vCPU, or after a stretch nothing checked, ends in an IRET of a
 * handler the CPU entered by itself: TF was clear there (delivery clears
 * it), so the trap is the VMM's, and the guest's TF is what it was before
 * the event (the frame held the VMM's).
 */
static struct step_verdict judge_step(struct vcpu *v, uint64_t hit, bool at_handler, bool emulated)
{
	struct step_state *s = &v->step;
	struct step_verdict j = { 0 };
	bool stepped = s->phase == STEP_PHASE_CHECKED && (hit & X86_DR6_BS);

	j.escaped = stepped && step_escaped(&s->insn, s->rip, v->run->s.regs.regs.rip, true, true);
	/*
	 * IRET completed there, loading the guest's TF from its frame, and the
	 * instruction behind it ran unchecked, with that TF: its trap is owed.
	 */
	j.late_iret = stepped && !j.escaped && iret_step_late(v, emulated);
	if (j.late_iret) {
		stats_unchecked(&v->stats, STATS_UNCHECKED_IRET_TRAP_LOST, 1);
		if (!__atomic_exchange_n(&v->vm->host.iret_step_lost, true, __ATOMIC_RELAXED))
			info("split-lock emulation: this KVM runs a single-stepped IRETQ at CPL0 without "
			     "its trap; the VMM performs those IRETs itself from now on");
	}
	if (s->phase == STEP_PHASE_CHECKED && ((hit & X86_DR6_BS) || at_handler) && !j.escaped &&
	    !j.late_iret)
		judge_diversion(v, hit, emulated, &j);
	return j;
}

/*
 * Whether the guest's own TF asks for this trap. A stretch that escaped
 * from a guest whose own TF was set: every frame in it held the TF the
 * CPU's would, so the trap that ends it is one the CPU raises too (the
 * first after a fault handler's IRET): the guest's.
 */
static bool guest_trap_owed(const struct step_state *s, const struct step_verdict *j)
{
	if (s->phase != STEP_PHASE_CHECKED)
		return s->resume_tf;
	if (j->escaped)
		return s->tf_at_start && !j->in_handler;
	if (j->late_iret)
		return s->tf_after;
	return step_trap_owed(s->insn.kind, s->tf_at_start, s->tf_after);
}

/* The checked instruction completed: what the VMM's TF hid from the guest is put right. */
static void completed_insn(struct vcpu *v)
{
	struct step_state *s = &v->step;

	/*
	 * A split lock left to the CPU to fault on that completed instead (a
	 * stale TLB entry, another vCPU's PTE write in between): it ran
	 * unchecked.
	 */
	if (s->left_split)
		stats_unchecked(&v->stats, STATS_UNCHECKED_LEFT_SPLIT, 1);
	if (s->insn.kind == STEP_PUSHF)
		fix_pushf(v);
	if (s->insn.kind == STEP_SYSCALL)
		fix_syscall_r11(v);
	if (s->insn.kind == STEP_MOV_DR)
		s->dr_valid = false;
	/* RF, set by a #DB handler to step over its breakpoint, holds for one instruction. */
	s->iret_rf = s->insn.kind == STEP_IRET && (s->popped & X86_RFLAGS_RF);
	/*
	 * STI's interrupt shadow holds the step trap on some CPUs (the lab's),
	 * as MOV SS does everywhere: the next instruction ran too.
	 */
	if (s->insn.kind == STEP_STI &&
	    v->run->s.regs.regs.rip != step_advance(s->rip, s->insn.len, s->mode)) {
		stats_unchecked(&v->stats, STATS_UNCHECKED_SHADOWED, s->shadowed_unchecked);
		s->tf_after = shadowed_after(v);
	}
	if (s->insn.kind == STEP_MOV_SS)
		s->tf_after = shadowed_after(v);
	fix_int_frame(v, &s->insn);
	s->guest_tf = s->tf_after;
}

bool stepping_debug_exit(struct vcpu *v)
{
	struct step_state *s = &v->step;
	uint64_t dr6 = v->run->debug.arch.dr6;
	uint64_t hit = (dr6 ^ X86_DR6_ACTIVE_LOW) & X86_DR6_VOLATILE;
	/* Read first: this exit came from KVM's emulator, not the CPU (DR7_UNWRITTEN). */
	bool emulated = v->run->debug.arch.dr7 == DR7_UNWRITTEN, at_handler = false;
	struct step_verdict j;
	uint64_t db[4], dr7;
	struct step_db d;

	if (s->hw.mode == STEP_DEBUG_WATCH)
		return watched_exit(v, hit);
	if (!hw_steps(s->hw.mode))
		return false;
	v->stats.single_steps++;
	/* The forecast fault's handler, reached: the VMM's breakpoint, not the guest's. */
	if (s->hw.mode == STEP_DEBUG_PREDICT && (hit & s->hw.mine) &&
	    v->run->debug.arch.pc == s->hw.addr) {
		at_handler = true;
		hit &= ~s->hw.mine;
		dr6 &= ~s->hw.mine;
	}
	if (!guest_debugregs(v, hit, db, &dr7))
		return true;
	if (s->frame_vector >= 0)
		frame_fix(v);
	j = judge_step(v, hit, at_handler, emulated);
	d = step_debug_exit(dr6, guest_trap_owed(s, &j), dr7,
			    step_exec_beside(db, dr7,
					     emulate_code_la(&v->run->s.regs.sregs,
							     v->run->s.regs.regs.rflags,
							     v->run->s.regs.regs.rip),
					     /* KVM emulates MOV DR while it steps the guest */
					     s->phase == STEP_PHASE_CHECKED && !j.escaped &&
					     s->insn.kind == STEP_MOV_DR &&
					     v->vm->host.exec_bp_beside_step));
	if (j.in_handler)
		s->guest_tf = false;
	if (j.escaped || s->phase != STEP_PHASE_CHECKED)
		stats_unchecked(&v->stats, STATS_UNCHECKED_ESCAPED, j.escaped);
	else if (d.completed)
		completed_insn(v);
	/* Task switches exist outside IA-32e mode only; LTR changes TR without one. */
	if (s->phase == STEP_PHASE_CHECKED && v->run->s.regs.sregs.tr.selector != s->tr.selector &&
	    !(v->run->s.regs.sregs.efer & X86_EFER_LMA) && s->insn.kind != STEP_LTR)
		task_switched(v);
	phase_on(s, STEP_ON_DONE);
	s->resume_tf = false;
	if (d.inject)
		reinject_db(v, d.payload);
	return true;
}

static bool refresh_dr(struct vcpu *v)
{
	struct kvm_debugregs dr;
	int r = v->kvm->get_debugregs(v, &dr);

	if (r)
		return stepping_fail(v, "KVM_GET_DEBUGREGS", -r);
	memcpy(v->step.db, dr.db, sizeof(v->step.db));
	v->step.dr7 = dr.dr7;
	v->step.dr_valid = true;
	return true;
}

static void release_others(struct vcpu *v)
{
	if (!v->step.holds_pause)
		return;
	v->step.holds_pause = false;
	vm_resume_others(v->vm);
}

/*
 * A split lock left to the CPU (its #PF comes first, ...) on a VM of more
 * than one vCPU: decided again with the others out of guest mode, where
 * they stay until this step's exit, so that none maps the page between
 * the decision and the CPU's access (docs/design.md, "What cannot be
 * watched"). Only where a breakpoint watches the fault's handler: the step
 * then ends at once, whatever the CPU does. If the plan changed, it is made
 * and carried out anew in *o. false: the VM is stopping.
 */
static bool hold_others(struct vcpu *v, enum splitlock_outcome *o)
{
	struct vm *vm = v->vm;

	if (vm->ncpus < 2 || !vm->host.step_hwbp || v->step.holds_pause)
		return true;
	if (!vm_pause_others(vm, v))
		return false;
	if (splitlock_still_left_to_cpu(v)) {
		v->step.holds_pause = true;
		return true;
	}
	vm_resume_others(vm);
	if (vm_stopping(vm))
		return false;
	*o = splitlock_check(v);
	return true;
}

/* The memory operand of the locked instruction at RIP, if it is one. */
static bool locked_operand(struct vcpu *v, struct emulate_access *acc)
{
	const struct kvm_regs *regs = &v->run->s.regs.regs;
	const struct kvm_sregs *sregs = &v->run->s.regs.sregs;
	enum decode_mode mode = guest_mode(v);
	uint8_t bytes[DECODE_INSN_MAX];
	struct decode_insn insn;
	struct emulate_exception fault;
	size_t n = read_code(v, regs->rip, bytes);

	if (!n || !decode_maybe_locked(mode, bytes, n) || decode_insn(mode, bytes, n, &insn))
		return false;
	acc->size = insn.size;
	return emulate_linear(&insn, sregs, regs->rflags, emulate_effective(&insn, regs), insn.size,
			 &acc->la, &fault);
}

/*
 * The split-lock check, for as many as come in a row, with the #DBs the CPU
 * would raise around one (docs/design.md, "What a step checks"). false: the VM is
 * stopping, or an event is due instead.
 */
static bool check_split_locks(struct vcpu *v)
{
	struct step_state *s = &v->step;
	struct kvm_regs *regs = &v->run->s.regs.regs;

	if (!s->dr_valid && !refresh_dr(v))
		return false;
	for (;;) {
		struct emulate_access acc;
		bool data, tf = s->guest_tf;
		enum splitlock_outcome o;
		uint64_t payload, rip = regs->rip;

		uint64_t exec = step_exec_hits(s->db, s->dr7,
					       emulate_code_la(&v->run->s.regs.sregs, regs->rflags,
							       regs->rip),
					       regs->rflags | (s->iret_rf ? X86_RFLAGS_RF : 0));

		/* An INT n the VMM delivers pushes it (a #DB handler's IRET may have set it). */
		s->rf = (regs->rflags & X86_RFLAGS_RF) || s->iret_rf;
		s->iret_rf = false;

		/* The guest's instruction breakpoint fires first; its handler is checked next. */
		if (exec) {
			if (!reinject_db(v, exec) || vm_stopping(v->vm))
				return false;
			vm_pause_point(v->vm, v);
			continue;
		}
		data = v->vm->host.guest_databp && step_has_data_bp(s->dr7) && locked_operand(v, &acc);
		o = splitlock_check(v);
		if (o == SPLITLOCK_LEFT_TO_CPU && !hold_others(v, &o))
			return false;
		if (o == SPLITLOCK_STOPPED || vm_stopping(v->vm))
			return false;
		s->left_split = o == SPLITLOCK_LEFT_TO_CPU;
		/* An #AC (or the fault that comes first) the VMM delivered: its handler is next. */
		if (o != SPLITLOCK_EMULATED && s->inject_vector < 0 && regs->rip != rip &&
		    !vm_stopping(v->vm)) {
			vm_pause_point(v->vm, v);
			continue;
		}
		if (o != SPLITLOCK_EMULATED)
			return s->inject_vector < 0;
		regs->rflags &= ~X86_RFLAGS_RF;
		v->run->kvm_dirty_regs |= KVM_SYNC_X86_REGS;
		payload = (data ? step_data_hits(s->db, s->dr7, acc.la, acc.size) : 0);
		if (tf)
			payload |= X86_DR6_BS |
				   step_exec_beside(s->db, s->dr7,
						    emulate_code_la(&v->run->s.regs.sregs, regs->rflags,
								    regs->rip),
						    v->vm->host.exec_bp_beside_step);
		if (payload && (!reinject_db(v, payload) || vm_stopping(v->vm)))
			return false;
		vm_pause_point(v->vm, v);
	}
}

/*
 * Before each entry under emulate: every instruction is checked before it
 * runs, however many split locks come in a row (each emulated one moves RIP
 * on, and the next is checked before anything runs); pauses and stops are
 * honoured in between, so the VM stays responsive.
 */
/* How one question of planning a run left it. */
enum run_plan {
	PLAN_OPEN,      /* not settled: the next question */
	PLAN_SET,       /* the run is set up, or the VM stops */
	PLAN_PERFORMED, /* the VMM performed the instruction or its fault: plan at the new RIP */
};

/*
 * Bounds on what the VMM performs in a row before letting the guest run
 * (a handler that faults at once, an IRET chain): instructions, and
 * faults it forecasts and delivers without a breakpoint.
 */
#define PERFORMED_MAX 8
#define FORECAST_DELIVERIES_MAX 4

/* A delivery is due (the VMM's or KVM's): its handler runs next, watched. */
static void watch_pending(struct vcpu *v)
{
	if (v->step.inject_vector >= 0 && !vm_stopping(v->vm))
		watch_handler(v, (unsigned)v->step.inject_vector);
}

/* Code this KVM cannot step runs with the guest's own TF, counted, up to an exit. */
static void run_unchecked(struct vcpu *v, bool outer)
{
	stats_unchecked(&v->stats, outer ? STATS_UNCHECKED_OUTER : STATS_UNCHECKED_TASK_GATE, 1);
	set_hw(v, STEP_DEBUG_OFF, 0, false);
	phase_on(&v->step, outer ? STEP_ON_OUTER : STEP_ON_TASK_GATE);
}

/* Decodes the instruction at RIP into v->step, with what it needs of its state. */
static size_t load_insn(struct vcpu *v, uint8_t bytes[DECODE_INSN_MAX])
{
	struct step_state *s = &v->step;
	const struct kvm_regs *regs = &v->run->s.regs.regs;
	const struct kvm_sregs *sregs = &v->run->s.regs.sregs;
	size_t n;

	if (!hw_steps(s->hw.mode))
		s->guest_tf = (regs->rflags & X86_RFLAGS_TF) != 0;
	s->mode = (struct step_mode){ .cs_l = sregs->cs.l, .cs_d = sregs->cs.db };
	n = classify_at(v, regs->rip, s->mode, bytes, &s->insn);
	s->rip = regs->rip;
	s->rsp = regs->rsp;
	if (s->insn.kind == STEP_BRANCH)
		branch_targets(v, bytes, n, &s->branch);
	else
		s->branch = (struct step_branch){ .n = 0 };
	s->tf_at_start = s->guest_tf;
	s->tr = sregs->tr;
	return n;
}

/*
 * Runs that cannot be stepped. Where this KVM cannot step CPL3 (probed),
 * a return there runs unstepped with the guest's TF, counted: stepped, its
 * trap would come at CPL3, where such a KVM (the nested PVM one) hands it
 * to the guest as a #DB of its own. Through a task gate, stepped, the old
 * task's TSS would save the VMM's TF (or none of the guest's, hidden by
 * KVM's), and the new task runs unstepped anyway: it runs with the guest's
 * own TF, unchecked and counted, up to the next exit. (A far CALL or JMP
 * to a TSS is stepped: a step exit follows in the new task, and
 * task_switched() fixes both images.)
 */
static enum run_plan plan_unstepped(struct vcpu *v)
{
	if (!v->vm->host.step_cpl3 && returns_outward(v)) {
		run_unchecked(v, true);
		return PLAN_SET;
	}
	if (through_task_gate(v, &v->step.insn)) {
		run_unchecked(v, false);
		return PLAN_SET;
	}
	return PLAN_OPEN;
}

/* INT1, as the CPU: RIP past it, #DB through the IDT, DR6 untouched. */
static enum run_plan perform_int1(struct vcpu *v)
{
	int r;

	v->run->s.regs.regs.rip += v->step.insn.len;
	v->run->kvm_dirty_regs |= KVM_SYNC_X86_REGS;
	r = event_inject(v, &db_event);
	if (r) {
		stepping_fail(v, "KVM_SET_VCPU_EVENTS (INT1)", -r);
		return PLAN_SET;
	}
	v->step.guest_tf = false;
	watch_handler(v, X86_VEC_DB);
	return PLAN_SET;
}

/*
 * Events the instruction delivers: INT1 performed, INT n and the like
 * watched at their handler. No breakpoint can stop at a handler without
 * hardware breakpoints: an access certain to fault
 * (emulate_predict_fault) is delivered by the VMM, and the handler
 * checked. MOV SS from memory too: its read comes before its shadow.
 */
static enum run_plan plan_delivery(struct vcpu *v, const uint8_t *bytes, size_t n,
				   unsigned performed)
{
	struct step_state *s = &v->step;
	uint64_t rflags = v->run->s.regs.regs.rflags;

	if (s->insn.kind == STEP_INT1)
		return perform_int1(v);
	if (v->vm->host.step_hwbp && step_delivers(&s->insn, rflags)) {
		s->guest_tf = false;
		watch_handler(v, s->insn.vector);
		return PLAN_SET;
	}
	if (!v->vm->host.step_hwbp && (s->insn.falls || s->insn.kind == STEP_MOV_SS) &&
	    performed < FORECAST_DELIVERIES_MAX) {
		struct emulate_snapshot snap = snapshot(v);
		struct emulate_forecast f;

		if (emulate_predict_segment_fault(&snap, bytes, n, &f) >= 0 && f.certain &&
		    (f.ex.vector == X86_VEC_SS || f.ex.vector == X86_VEC_GP) &&
		    deliver_fault(v, f.ex.vector, f.ex.error_code))
			return PLAN_PERFORMED;
	}
	return PLAN_OPEN;
}

/*
 * An IRET that gives the guest TF: a breakpoint at the return address
 * (docs/design.md), unless it loads RF too, which would suppress that
 * breakpoint: stepped then, as stock KVM traps after such an IRET. Only an
 * IRETQ from 64-bit code back to the same code segment: the breakpoint
 * takes a linear address, and the popped RIP is one there.
 */
static enum run_plan plan_iret_watch(struct vcpu *v)
{
	struct step_state *s = &v->step;
	const struct kvm_sregs *sregs = &v->run->s.regs.sregs;
	uint8_t ret[16] = { 0 };

	if (s->insn.kind != STEP_IRET || !s->tf_after || !v->vm->host.step_hwbp ||
	    (s->popped & X86_RFLAGS_RF) || !sregs->cs.l || s->insn.opsize != 8)
		return PLAN_OPEN;
	if (read_linear(v, v->run->s.regs.regs.rsp, 0, ret, sizeof(ret)) != sizeof(ret) ||
	    (ret[8] | ret[9] << 8) != sregs->cs.selector)
		return PLAN_OPEN;
	set_hw(v, STEP_DEBUG_WATCH, le64(ret), false);
	return PLAN_SET;
}

/*
 * INT n, INT3 or INTO behind MOV SS or POP SS is delivered in the same
 * step, the VMM's TF in its frame. With the guest's TF clear and a
 * breakpoint, the pair runs unstepped (the guest's TF) up to the handler,
 * watched there; else the frame is fixed where the CPU stops at the
 * handler with the trap MOV SS held (shadowed_after()).
 */
static enum run_plan plan_shadowed(struct vcpu *v, const uint8_t *bytes)
{
	struct step_state *s = &v->step;

	classify_shadowed(v, bytes);
	if (s->insn.kind == STEP_MOV_SS)
		stats_unchecked(&v->stats, STATS_UNCHECKED_SHADOWED, s->shadowed_unchecked);
	if (s->insn.kind == STEP_MOV_SS && v->vm->host.step_hwbp && !s->guest_tf &&
	    step_delivers(&s->shadowed, v->run->s.regs.regs.rflags)) {
		watch_handler(v, s->shadowed.vector);
		return PLAN_SET;
	}
	return PLAN_OPEN;
}

/*
 * A fault KVM intercepts and injects keeps the step's TF only at the RIP
 * of the last KVM_SET_GUEST_DEBUG: issued here again where one may come
 * (docs/stepping.md, "An MSR access KVM fails by itself"), and for an MMIO
 * access with the guest's TF, whose frame must hold it. An instruction KVM
 * runs and may fault itself (RDPMC, XSETBV ...): with a breakpoint at the
 * handler of the fault it would queue, where a KVM that stops one
 * instruction into the handler it injected (the nested PVM KVM) would
 * leave the frame unfixed.
 */
static void arm_step(struct vcpu *v, const uint8_t *bytes, size_t n, unsigned cpl)
{
	struct step_state *s = &v->step;
	struct vm *vm = v->vm;
	struct kvm_regs *regs = &v->run->s.regs.regs;
	const struct kvm_sregs *sregs = &v->run->s.regs.sregs;

	if (!(vm->host.step_hwbp && (s->insn.falls ? predicted(v, regs->rip, bytes, n)
						    : predicted_pair(v, bytes, n))) &&
	    !(vm->host.step_hwbp && s->insn.kvm_faults &&
	      predict_handler(v, step_kvm_fault_vector(&s->insn, sregs->cr4, sregs->efer), true)) &&
	    !set_hw(v, STEP_DEBUG_STEP, 0,
		    step_kvm_may_inject(&s->insn, cpl, sregs->cr0, regs->rflags) ||
		    (s->tf_at_start && access_emulated_by_kvm(v, bytes, n))))
		return;
	if (vm_stopping(vm))
		return;
	if (s->rearm) {
		regs->rflags |= X86_RFLAGS_TF;
		v->run->kvm_dirty_regs |= KVM_SYNC_X86_REGS;
		s->rearm = false;
	}
	phase_on(s, STEP_ON_ARMED);
}

/* Plans the run of the instruction at RIP, after `performed` the VMM did itself. */
static enum run_plan plan_at_rip(struct vcpu *v, unsigned performed)
{
	struct step_state *s = &v->step;
	uint8_t bytes[DECODE_INSN_MAX];
	enum run_plan plan;
	unsigned cpl;
	size_t n;

	if (!check_split_locks(v)) {
		watch_pending(v);
		return PLAN_SET;
	}
	cpl = emulate_cpl(&v->run->s.regs.sregs, v->run->s.regs.regs.rflags);
	/* Where this KVM cannot step CPL3 code (probed), it runs unchecked. */
	if (!v->vm->host.step_cpl3 && cpl != 0) {
		run_unchecked(v, true);
		return PLAN_SET;
	}
	phase_on(s, STEP_ON_CPL0);
	n = load_insn(v, bytes);
	if (step_hlt_unstepped(&s->insn, cpl)) {
		set_hw(v, STEP_DEBUG_OFF, 0, false);
		return PLAN_SET;
	}
	if (performed < PERFORMED_MAX) {
		int done = by_vmm(v, bytes, n);

		if (done < 0)
			watch_pending(v);
		if (done)
			return done < 0 ? PLAN_SET : PLAN_PERFORMED;
	}
	plan = plan_unstepped(v);
	if (plan == PLAN_OPEN)
		plan = plan_delivery(v, bytes, n, performed);
	if (plan != PLAN_OPEN)
		return plan;
	s->tf_after = tf_after(v);
	plan = plan_iret_watch(v);
	if (plan == PLAN_OPEN)
		plan = plan_shadowed(v, bytes);
	if (plan == PLAN_OPEN)
		arm_step(v, bytes, n, cpl);
	return PLAN_SET;
}

/* Whether this vCPU is stepped: its guest asks for #AC, or --split-lock-watch=all. */
static bool watched(const struct vcpu *v)
{
	return policy_watches(v->vm->split_lock_watch, v->msrs.test_ctrl);
}

/*
 * Stepping off until the guest sets TEST_CTRL bit 29 again: hardware TF
 * the guest's (set_hw()), and nothing kept that the guest may change
 * unseen meanwhile (its debug registers) or that belonged to the last step.
 */
static void unwatch(struct vcpu *v)
{
	struct step_state *s = &v->step;

	if (!set_hw(v, STEP_DEBUG_OFF, 0, false))
		return;
	s->rearm = false;
	s->dr_valid = false;
	s->iret_rf = false;
	s->left_split = false;
	phase_on(s, STEP_ON_UNWATCH);
}

static void before_run(struct vcpu *v)
{
	struct step_state *s = &v->step;
	unsigned performed = 0;

	phase_on(s, STEP_ON_ENTRY);
	s->resume_tf = false;
	if (s->hw.mode == STEP_DEBUG_WATCH)	/* the pending delivery goes first */
		return;
	/* An event is due: the handler runs next, not the instruction at RIP. */
	if (s->inject_vector >= 0) {
		watch_handler(v, (unsigned)s->inject_vector);
		return;
	}
	/* Unwatched once no frame waits for the guest's TF (frame_fix()). */
	if (!watched(v) && s->frame_vector < 0) {
		if (s->phase != STEP_PHASE_UNWATCHED)
			unwatch(v);
		return;
	}
	while (plan_at_rip(v, performed) == PLAN_PERFORMED)
		performed++;
}

void stepping_before_run(struct vcpu *v)
{
	before_run(v);
	v->run->debug.arch.dr7 = DR7_UNWRITTEN;
	/* Held only for a step that ends at the watched handler or right behind. */
	if (v->step.holds_pause &&
	    (v->step.hw.mode != STEP_DEBUG_PREDICT || v->step.phase != STEP_PHASE_CHECKED))
		release_others(v);
}

/*
 * The run that completes this exit (one KVM completes) returns at once:
 * stepping resumes behind the instruction (resynced()).
 */
static void resync_after(struct vcpu *v, uint32_t reason)
{
	v->completion = VCPU_COMPLETION_RESYNC;
	v->step.resync_rip = v->run->s.regs.regs.rip;
	v->step.resync_rcx = v->run->s.regs.regs.rcx;
	/* KVM finished an MMIO write before the exit: RIP is already behind it. */
	v->step.resync_done = reason == KVM_EXIT_MMIO && v->run->mmio.is_write;
	v->run->immediate_exit = 1;
}

/*
 * Stepping back on for the run that completes this exit, after a run left
 * unstepped: KVM traps right behind the instruction (or the REP round) it
 * completes (kvm_skip_emulated_instruction(), its emulator), before
 * anything else runs. resync_after() is no use here: for a REP OUTSB the
 * lab's KVM returned from the immediate_exit run with RIP and RCX as at
 * the exit, and the next run went on unstepped (docs/design.md, "What
 * cannot be watched"). An MMIO write KVM finished before the exit leaves nothing to
 * trap behind: resynced instead.
 */
static void completing_run_stepped(struct vcpu *v, uint32_t reason)
{
	if (reason == KVM_EXIT_MMIO && v->run->mmio.is_write) {
		resync_after(v, reason);
		return;
	}
	if (!set_hw(v, STEP_DEBUG_STEP, 0, true))
		return;
	v->step.resume_tf = v->step.guest_tf;	/* set_hw() read it from the unstepped registers */
}

void stepping_msr_written(struct vcpu *v)
{
	if (v->step.phase != STEP_PHASE_UNWATCHED || !watched(v))
		return;
	/* The WRMSR is KVM's to complete: stepped, it traps right behind it. */
	phase_on(&v->step, STEP_ON_WATCH);
	completing_run_stepped(v, KVM_EXIT_X86_WRMSR);
}

void stepping_after_exit(struct vcpu *v, uint32_t reason)
{
	struct step_state *s = &v->step;

	release_others(v);
	/*
	 * Back at CPL0 from code outside it that ran unstepped (an event took
	 * it there; counted when stepping went off): the run that completes
	 * this exit would go on unstepped.
	 */
	if (s->phase == STEP_PHASE_OUTER && step_completes_in_kvm(reason) &&
	    emulate_cpl(&v->run->s.regs.sregs, v->run->s.regs.regs.rflags) == 0) {
		completing_run_stepped(v, reason);
		return;
	}
	/*
	 * The same after a run left unstepped up to this exit (until
	 * before_run() clears it: a REP string I/O takes several rounds):
	 * without it, a guest whose exits are all ones KVM completes (port
	 * I/O, MMIO, MSRs) would never be stepped again.
	 */
	if (s->phase == STEP_PHASE_TO_EXIT && step_completes_in_kvm(reason)) {
		completing_run_stepped(v, reason);
		return;
	}
	if (hw_steps(s->hw.mode) && step_rearm_after_exit(reason))
		s->rearm = true;
	/*
	 * Watching for a handler or a return address, any other exit means
	 * the guest went elsewhere unwatched (a fault in the delivery or in
	 * the IRET): stepping resumes from here.
	 */
	if (s->hw.mode == STEP_DEBUG_WATCH && reason != KVM_EXIT_DEBUG) {
		stats_unchecked(&v->stats, STATS_UNCHECKED_WATCH_MISSED, 1);
		set_hw(v, STEP_DEBUG_STEP, 0, false);
		return;
	}
	if (reason == KVM_EXIT_DEBUG || reason == KVM_EXIT_HLT || s->phase != STEP_PHASE_CHECKED)
		return;
	if (!step_escaped(&s->insn, s->rip, v->run->s.regs.regs.rip, false, false))
		return;
	stats_unchecked(&v->stats, STATS_UNCHECKED_TF_LOST, 1);
	/*
	 * The guest ran on unstepped (KVM lost TF, docs/design.md): the run
	 * that completes this exit returns at once, and stepping resumes here.
	 */
	if (hw_steps(s->hw.mode) && step_completes_in_kvm(reason))
		resync_after(v, reason);
}

/* true where KVM completed the exit first (RIP moved on): check and re-arm from here. */
static bool resynced(struct vcpu *v)
{
	struct step_state *s = &v->step;

	/*
	 * Not completed yet (an older KVM checks immediate_exit first). A REP
	 * string I/O's round that completed leaves RIP on the instruction but
	 * moves RCX: the guest is between two iterations, where stepping can
	 * resume; waiting for RIP instead would let the rounds after it, and
	 * whatever follows, run unstepped.
	 */
	if (v->run->s.regs.regs.rip == s->resync_rip && !s->resync_done &&
	    v->run->s.regs.regs.rcx == s->resync_rcx)
		return false;
	s->rearm = true;
	phase_on(s, STEP_ON_DONE);
	return true;
}

void stepping_interrupted(struct vcpu *v)
{
	release_others(v);
	if (v->completion == VCPU_COMPLETION_MSR_FAULT)
		v->completion = took_back_gp(v) ? VCPU_COMPLETION_NONE : VCPU_COMPLETION_KVM;
	else if (v->completion == VCPU_COMPLETION_RESYNC)
		v->completion = resynced(v) ? VCPU_COMPLETION_NONE : VCPU_COMPLETION_KVM;
}

bool stepping_guest_tf(struct vcpu *v)
{
	if (hw_steps(v->step.hw.mode))
		return v->step.guest_tf;
	return (v->run->s.regs.regs.rflags & X86_RFLAGS_TF) != 0;
}

bool stepping_completed_for_kvm(struct vcpu *v)
{
	bool tf = stepping_guest_tf(v);

	if (tf)
		(void)reinject_db(v, X86_DR6_BS);	/* false: KVM delivers it, or the VM stops */
	return true;
}

void stepping_delivered_for_kvm(struct vcpu *v)
{
	v->step.guest_tf = false;
	v->step.iret_rf = false;
}

/*
 * Under emulate every instruction is an exit, so registers travel in the
 * run page (KVM_CAP_SYNC_REGS) instead of costing ioctls; the rest goes to
 * the vCPU's own ops.
 */
static int sync_get_regs(struct vcpu *v, struct kvm_regs *regs)
{
	*regs = v->run->s.regs.regs;
	return 0;
}

static int sync_get_sregs(struct vcpu *v, struct kvm_sregs *sregs)
{
	*sregs = v->run->s.regs.sregs;
	return 0;
}

static int sync_set_regs(struct vcpu *v, const struct kvm_regs *regs)
{
	v->run->s.regs.regs = *regs;
	/* KVM hid its TF from these; written back without it, KVM would clear it. */
	if (hw_steps(v->step.hw.mode))
		v->run->s.regs.regs.rflags |= X86_RFLAGS_TF;
	v->run->kvm_dirty_regs |= KVM_SYNC_X86_REGS;
	return 0;
}

static int sync_set_sregs(struct vcpu *v, const struct kvm_sregs *sregs)
{
	v->run->s.regs.sregs = *sregs;
	v->run->kvm_dirty_regs |= KVM_SYNC_X86_SREGS;
	return 0;
}

static int sync_set_events(struct vcpu *v, const struct kvm_vcpu_events *ev)
{
	bool exception = ev->exception.injected || ev->exception.pending;
	int r;

	/*
	 * The frame must hold the guest's TF: single-step off and the registers
	 * written now, since some KVMs build the frame at KVM_SET_VCPU_EVENTS.
	 * Only where a breakpoint can stop at the handler: elsewhere the VMM's
	 * TF in the frame brings stepping back at the handler's IRET.
	 */
	/*
	 * A fault the VMM injects while stepping (#AC for a split lock, #GP,
	 * #PF): delivered by the VMM where it can, its handler checked next.
	 */
	if (exception && ev->exception.injected && hw_steps(v->step.hw.mode) &&
	    ev->exception.nr < 32 && ((X86_VEC_FAULTS >> ev->exception.nr) & 1) &&
	    deliver_fault(v, ev->exception.nr, ev->exception.error_code))
		return 0;
	if (exception && hw_steps(v->step.hw.mode) && v->vm->host.step_hwbp) {
		if (!set_hw(v, STEP_DEBUG_OFF, 0, false))
			return -EIO;
		r = v->kvm->set_regs(v, &v->run->s.regs.regs);
		if (r)
			return r;
		v->run->kvm_dirty_regs &= ~(uint64_t)KVM_SYNC_X86_REGS;
	}
	r = v->kvm->set_events(v, ev);
	/* The next entry watches the handler instead of letting it run unchecked. */
	if (!r && exception)
		v->step.inject_vector = ev->exception.nr;
	return r;
}

static int sync_get_events(struct vcpu *v, struct kvm_vcpu_events *ev)
{
	return v->kvm->get_events(v, ev);
}

static int sync_get_pkru(struct vcpu *v, uint32_t *pkru)
{
	return v->kvm->get_pkru(v, pkru);
}

static int sync_set_guest_debug(struct vcpu *v, const struct kvm_guest_debug *dbg)
{
	return v->kvm->set_guest_debug(v, dbg);
}

static int sync_get_debugregs(struct vcpu *v, struct kvm_debugregs *dr)
{
	return v->kvm->get_debugregs(v, dr);
}

static int sync_set_debugregs(struct vcpu *v, const struct kvm_debugregs *dr)
{
	return v->kvm->set_debugregs(v, dr);
}

static int sync_get_msr(struct vcpu *v, uint32_t index, uint64_t *value)
{
	return v->kvm->get_msr(v, index, value);
}

static const struct vcpu_ops sync_ops = {
	.get_regs = sync_get_regs,
	.get_sregs = sync_get_sregs,
	.get_events = sync_get_events,
	.set_events = sync_set_events,
	.set_regs = sync_set_regs,
	.set_sregs = sync_set_sregs,
	.get_pkru = sync_get_pkru,
	.set_guest_debug = sync_set_guest_debug,
	.get_debugregs = sync_get_debugregs,
	.set_debugregs = sync_set_debugregs,
	.get_msr = sync_get_msr,
};

void stepping_init(struct vcpu *v, const struct kvm_regs *regs, const struct kvm_sregs *sregs)
{
	v->ops = &sync_ops;
	v->step = (struct step_state){ .inject_vector = -1, .frame_vector = -1 };
	/* The first check runs before any exit has filled the copies. */
	v->run->s.regs.regs = *regs;
	v->run->s.regs.sregs = *sregs;
	v->run->kvm_valid_regs = KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS;
}
