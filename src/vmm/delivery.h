/* SPDX-License-Identifier: MIT */
/*
 * Event delivery through the IDT or the IVT as the CPU does it (SDM vol. 3
 * 6.12, 6.14, 20.1.4, 20.3; APM vol. 2 8.9), as a pure function of the
 * vCPU's state and guest RAM: the gate, the code descriptor and the TSS
 * read through the guest's page tables, the frame pushed, the accessed and
 * dirty bits set, the handler's state computed. stepping.c fills it from
 * the vCPU and applies the result, so that the handler's first instruction
 * is stepped too (docs/design.md, "Events the VMM delivers"). The checks
 * themselves are step.c's plans.
 */
#ifndef VMM_DELIVERY_H
#define VMM_DELIVERY_H

#include <stdbool.h>
#include <stdint.h>

#include <linux/kvm.h>

#include "pagewalk.h"

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
