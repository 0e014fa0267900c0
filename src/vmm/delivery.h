/* SPDX-License-Identifier: MIT */
/*
 * Event delivery through the IDT or the IVT as the CPU does it (SDM vol. 3
 * 6.12, 6.14, 20.1.4, 20.3; APM vol. 2 8.9), as a pure function of the
 * vCPU's state and guest RAM: the gate, the code descriptor and the TSS
 * read through the guest's page tables, the frame pushed, the accessed and
 * dirty bits set, the handler's state computed. event_deliver() (event.c)
 * fills it from the vCPU and applies the result: for the step engine, so
 * that the handler's first instruction is stepped too (docs/stepping.md,
 * "Events the VMM delivers"), and for gap.c, where KVM cannot. The checks
 * are the plans below (delivery_long_plan(), delivery_legacy_plan(), the
 * soft-INT faults), pure functions of the fields read for them.
 */
#ifndef VMM_DELIVERY_H
#define VMM_DELIVERY_H

#include <stdbool.h>
#include <stdint.h>

#include <linux/kvm.h>

#include "pagewalk.h"

/*
 * An event delivered by the VMM itself through a 64-bit IDT gate, as the
 * CPU would (SDM vol. 3 6.12.1 and 6.14, APM vol. 2 8.9.3), where a
 * single-step cannot follow the CPU's own delivery (it clears TF): the gate
 * and the code descriptor checked, the stack chosen (an IST slot, RSPn of
 * the TSS on a privilege change, else the current one), RSP aligned down to
 * 16, then SS, RSP, RFLAGS, CS, RIP and the error code pushed; the handler
 * runs with TF, NT, RF and VM clear, and IF too through an interrupt gate.
 */
struct delivery_long_in {
	uint8_t gate[16];
	uint64_t desc;          /* the GDT descriptor the gate's selector names */
	unsigned cpl;
	uint16_t cs, ss;        /* the interrupted selectors, pushed */
	uint64_t rip;           /* pushed: the faulting instruction, or the next */
	uint64_t rsp;
	uint64_t rflags;        /* the image pushed: the guest's own TF, RF as owed */
	bool error_code;
	uint32_t err;
	bool soft;              /* INT n, INT3, INTO: the gate's DPL must allow the CPL */
	bool la57;              /* canonical means 57 bits */
	bool tss_valid;         /* tss_rsp/tss_ist were read from the TSS */
	uint64_t tss_rsp[3], tss_ist[7];
};

struct delivery_long {
	uint64_t rsp;           /* the new RSP, where frame[0] goes */
	uint64_t frame[6];      /* from RSP up: [error code,] RIP, CS, RFLAGS, RSP, SS */
	unsigned words;
	uint64_t rip;           /* the handler */
	uint64_t rflags;        /* the handler's */
	uint16_t cs;            /* the handler's selector, RPL = its CPL */
	unsigned cpl;           /* the handler's */
	bool stack_switch;      /* privilege change: SS becomes null with RPL = cpl */
};
/*
 * false where the VMM leaves it to the CPU or KVM (which raise what the
 * architecture says): a gate that is not a present 64-bit interrupt or trap
 * gate, has reserved bits set, or is beyond the CPL's reach for INT n; a
 * descriptor that is not a present 64-bit code segment of a DPL at most the
 * CPL; a non-canonical handler or stack; a stack switch without the TSS.
 */
bool delivery_long_plan(const struct delivery_long_in *in, struct delivery_long *out);

/*
 * The CPL a handler in the code segment desc runs at, entered from cpl
 * through an interrupt or trap gate: a conforming segment keeps the CPL,
 * any other runs at its DPL (SDM vol. 3 6.12.1.1).
 */
unsigned delivery_handler_cpl(uint64_t desc, unsigned cpl);

/*
 * Outside IA-32e mode (SDM vol. 3 6.12.1; real mode: 20.1.4): an event
 * delivered through a 16- or 32-bit interrupt or trap gate into a code
 * segment of a DPL not above the CPL (on the 32-bit TSS's stack for the
 * handler's CPL where that is lower), or in real mode through the IVT.
 * From virtual-8086 mode (20.3.1.3) only a 32-bit gate into a
 * non-conforming DPL0 segment, on SS0:ESP0, GS, FS, DS and ES pushed too.
 */
struct delivery_legacy_in {
	bool real;
	bool vm86;              /* cpl is 3; es, ds, fs and gs are pushed */
	uint16_t es, ds, fs, gs;
	uint8_t entry[8];       /* the IDT entry (its first 4 bytes in real mode) */
	uint64_t desc;          /* protected mode: the descriptor the gate's selector names */
	unsigned cpl;
	uint16_t cs;            /* pushed */
	uint32_t ip;            /* pushed: the faulting instruction, or the next */
	uint32_t sp;            /* ESP (SP where the stack is 16-bit) */
	bool ss_big;            /* SS.B: the stack pointer is ESP */
	bool ss_down;           /* SS is expand-down */
	uint32_t ss_limit;
	uint32_t flags;         /* the image pushed: the guest's own TF, RF as owed */
	bool error_code;
	uint32_t err;
	bool soft;              /* INT n, INT3, INTO: the gate's DPL must allow the CPL */
	uint16_t ss;            /* pushed on a stack switch, with sp */
	/*
	 * Where the handler's CPL (delivery_handler_cpl()) is below cpl: the TSS's
	 * SSn:ESPn for it and SSn's descriptor, when tss_valid says they were read.
	 */
	bool tss_valid;
	uint32_t stack_esp;
	uint16_t stack_ss;
	uint64_t stack_ss_desc;
};

struct delivery_legacy {
	uint32_t sp;            /* the new stack pointer, where frame[0] goes */
	/* from there up: [error code,] EIP, CS, EFLAGS[, ESP, SS[, ES, DS, FS, GS]] */
	uint32_t frame[10];
	unsigned words, slot;   /* slots of 4 bytes, 2 through a 16-bit gate and in real mode */
	uint32_t ip;            /* the handler */
	uint16_t cs;            /* its selector, RPL its CPL (real mode: the segment) */
	unsigned cpl;           /* the handler's */
	uint32_t flags;         /* the handler's */
	bool stack_switch;      /* SS becomes stack_ss (its cache from stack_ss_desc), SP sp */
	uint32_t ss_base;       /* the stack's base, for the frame's linear addresses */
	bool ss_big;            /* and its width */
};

/*
 * false where the VMM leaves it to the CPU or KVM: a gate that is no
 * present 16- or 32-bit interrupt or trap gate or is beyond INT n's reach
 * (task gates among them), a descriptor that is no present code segment of
 * the GDT (L clear) at a DPL not above the CPL, a handler beyond its limit;
 * on a privilege change no 32-bit TSS or a stack segment that is no present
 * writable data segment whose RPL and DPL are the new CPL; from
 * virtual-8086 mode a 16-bit gate or a handler above CPL0 (#GP); a frame
 * that would wrap or leave the stack's limit.
 */
bool delivery_legacy_plan(const struct delivery_legacy_in *in, struct delivery_legacy *out);

/*
 * INT n, INT3 or INTO through a long-mode IDT entry it cannot use (SDM vol. 2
 * INT n, IA-32e mode): beyond the IDT's limit, not an interrupt or trap gate
 * (or its upper type field set), or a gate DPL below the CPL: #GP; a gate not
 * present: #NP; each with error code vector * 8 + 2. The vector, or -1.
 * gate is ignored where in_limit is false.
 */
int delivery_soft_int_fault(const uint8_t gate[16], bool in_limit, unsigned vector,
			    unsigned cpl, uint32_t *err);
/*
 * The same outside IA-32e mode, in protected and virtual-8086 mode (SDM
 * vol. 2 INT n, PROTECTED-MODE): the entry a task gate or a 16- or 32-bit
 * interrupt or trap gate, else #GP; its DPL at least the CPL (CPL3 in
 * virtual-8086 mode), else #GP; present, else #NP.
 */
int delivery_legacy_soft_int_fault(const uint8_t gate[8], bool in_limit, unsigned vector,
				   unsigned cpl, uint32_t *err);

/* An event to deliver: an exception, INT n, INT3, INTO or INT1. */
struct delivery_event {
	unsigned vector;
	bool error_code;
	uint32_t err;
	uint64_t rip;           /* pushed: the instruction (a fault) or the next (a trap, INT n) */
	bool fault;             /* pushes RF set (SDM vol. 3 17.3.1.1), but for a #DB */
	bool soft;              /* INT n, INT3, INTO: gate DPL checked against the CPL */
	bool rf;                /* not a fault: RF as the instruction began, which it pushes */
	/*
	 * INT n that CR4.VME redirects (step_vme_int()): real mode's delivery
	 * through the IVT at linear 0, with this FLAGS image and handler flags.
	 */
	bool ivt;
	uint16_t ivt_image;
	uint32_t ivt_flags;
};

/* The state delivery starts from. */
struct delivery_cpu {
	struct kvm_regs regs;   /* RFLAGS as the vCPU holds it; only TF is not the guest's */
	struct kvm_sregs sregs;
	bool guest_tf;          /* the guest's own TF, which the frame holds */
	/*
	 * The CPU's implicit supervisor accesses (IDT, GDT, TSS; SDM vol. 3
	 * 4.6): paging from sregs, CPL 0, AC clear, PKRU as the guest has it.
	 */
	struct paging implicit;
};

enum delivery_outcome {
	DELIVERY_DONE,          /* frame written, regs and sregs the handler's */
	DELIVERY_FAULT,         /* the event raises vector(err) instead; nothing written */
	DELIVERY_UNMODELLED,    /* left to the CPU or KVM (CET, an unreadable gate...); nothing written */
};

#define DELIVERY_FRAME_MAX 48	/* six 8-byte slots; ten 4-byte ones from virtual-8086 mode */

struct delivery_result {
	enum delivery_outcome outcome;
	unsigned vector;        /* DELIVERY_FAULT: the fault and its error code */
	uint32_t err;
	/* DELIVERY_DONE: */
	struct kvm_regs regs;   /* the handler's RIP, RSP and RFLAGS; the rest as they were */
	struct kvm_sregs sregs; /* CS, SS (and, out of virtual-8086 mode, DS-GS) loaded */
	uint8_t frame[DELIVERY_FRAME_MAX];  /* the bytes written, lowest address first */
	unsigned frame_bytes;
	unsigned slot;          /* bytes per slot: 8 in IA-32e mode, 4 or 2 (16-bit gates, real mode) */
	uint64_t frame_la[2];   /* linear addresses of its first and last bytes */
	bool stack_switch;      /* SS:RSP came from the TSS (or an IST slot) */
};

/* Delivers e; m->base is written only where the outcome is DELIVERY_DONE. */
enum delivery_outcome delivery_deliver(const struct guest_mem *m, const struct delivery_cpu *cpu,
				       const struct delivery_event *e, struct delivery_result *out);

/*
 * The GDT descriptor sel names, read through p, and the walk to the byte
 * of its accessed bit, which delivery sets (a supervisor write the GDT
 * must take). false: past the GDT's limit, unreadable, or that write
 * would fault.
 */
bool delivery_gdt_descriptor(const struct guest_mem *m, const struct paging *p,
			     const struct kvm_dtable *gdt, unsigned sel, uint64_t *desc,
			     struct walk *desc_w);

#endif
