/* SPDX-License-Identifier: MIT */
/*
 * Split-lock exits: the emulated MSRs (KVM_EXIT_X86_RDMSR/WRMSR, reason
 * FILTER) and hardware split-lock #AC (KVM_EXIT_EXCEPTION, vector 17, with
 * the SIGBUS that KVM sends the vCPU thread alongside it).
 */
#ifndef VMM_SPLITLOCK_H
#define VMM_SPLITLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "emulate.h"
#include "vcpu.h"

/* What to do with a split lock; pure, see splitlock_decide_ac(). */
enum splitlock_ac_action {
	SPLITLOCK_AC_INJECT,          /* the guest asked for it: deliver #AC */
	SPLITLOCK_AC_EMULATE,         /* it did not: complete the instruction for it */
};

enum splitlock_outcome {
	SPLITLOCK_NONE,            /* no split lock at RIP */
	/*
	 * A split lock left to the CPU, which is to fault first (a page fault,
	 * legacy #AC, PKRU unread) or KVM's MMIO emulation: if it completes
	 * instead (a stale TLB entry, another vCPU's PTE write), it ran unchecked.
	 */
	SPLITLOCK_LEFT_TO_CPU,
	SPLITLOCK_AC_INJECTED,
	SPLITLOCK_FAULT_INJECTED,  /* the fault the CPU would raise instead (#PF, #GP, #SS) */
	SPLITLOCK_EMULATED,        /* done, RIP moved on: check the next one too */
	SPLITLOCK_STOPPED,         /* the VM is stopping */
};

enum splitlock_ac_action splitlock_decide_ac(const struct msr_state *msrs);

/* What an MSR exit was answered with. */
enum splitlock_msr {
	SPLITLOCK_MSR_DONE,
	SPLITLOCK_MSR_GP,          /* run->msr.error set: KVM completes it with #GP */
};

enum splitlock_msr splitlock_handle_rdmsr(struct vcpu *v);
enum splitlock_msr splitlock_handle_wrmsr(struct vcpu *v);
/*
 * KVM_EXIT_EXCEPTION: a hardware split-lock #AC is injected when the guest
 * asked for it (or it is a legacy alignment check), replaced by the fault
 * the operand would take without detection, else emulated; what cannot be
 * emulated stops the VM. emulate_plan() decides.
 */
void splitlock_handle_exception(struct vcpu *v);
/*
 * --split-lock=emulate: looks at the instruction at RIP before it runs; a
 * split lock gets #AC if the guest asked for it, else is emulated, and one
 * the CPU would fault on first (or check for legacy alignment) is left to
 * the CPU. emulate_plan() decides.
 */
enum splitlock_outcome splitlock_check(struct vcpu *v);
/*
 * Decides again, acting on nothing: true where the instruction at RIP is
 * still a split lock to leave to the CPU (with the other vCPUs paused, so
 * that none changes the tables before the CPU runs it).
 */
bool splitlock_still_left_to_cpu(struct vcpu *v);
/*
 * A locked RMW KVM could not run (gap.c): the plan for the instruction at
 * RIP as KVM left it (EMULATE_SOURCE_KVM), read through v->ops. false
 * where the VM stops (KVM's registers or PKRU unreadable).
 */
bool splitlock_plan_for_kvm(struct vcpu *v, struct emulate_snapshot *s, struct emulate_plan *p);
/*
 * Carries that plan out as a split lock's: the fault the CPU raises
 * instead injected, or the instruction completed with every other vCPU
 * out of guest mode, decided again once they are (SPLITLOCK_LEFT_TO_CPU
 * where it no longer is one to complete: KVM meets it anew). A plan that
 * completes nothing is SPLITLOCK_NONE.
 */
enum splitlock_outcome splitlock_act_for_kvm(struct vcpu *v, struct emulate_snapshot *s,
					     struct emulate_plan *p);

#endif
