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

#include "vm.h"

/* What to do with a split-lock #AC; pure, see splitlock_decide_ac(). */
enum ac_action {
	AC_INJECT,          /* the guest asked for it: deliver #AC */
	AC_STOP,            /* the guest did not: it cannot go on */
};

enum ac_action splitlock_decide_ac(const struct msr_state *msrs);

void splitlock_handle_rdmsr(struct vcpu *v);
void splitlock_handle_wrmsr(struct vcpu *v);
/* KVM_EXIT_EXCEPTION; may stop the VM. */
void splitlock_handle_exception(struct vcpu *v);
/*
 * Injects #AC as a fault: error code 0, RIP left on the instruction.
 * 0 or -errno.
 */
int splitlock_inject_ac(struct vcpu *v);

#endif
