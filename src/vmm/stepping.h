/* SPDX-License-Identifier: MIT */
/*
 * --split-lock=emulate's engine: single-steps a vCPU so that every
 * instruction is checked for a split lock before it runs, and keeps the
 * stepping invisible to the guest and alive through what KVM does to TF
 * (docs/design.md, "--split-lock=emulate"). step.c holds its pure decisions;
 * this file reaches the vCPU through v->ops and v->kvm only. The run loop
 * calls it at five points.
 */
#ifndef VMM_STEPPING_H
#define VMM_STEPPING_H

#include <stdbool.h>
#include <stdint.h>

#include <linux/kvm.h>

struct vcpu;

/*
 * Sets v up for emulate: v->ops becomes the run page's register view over
 * v->kvm (KVM_CAP_SYNC_REGS), seeded with the boot registers.
 */
void stepping_init(struct vcpu *v, const struct kvm_regs *regs, const struct kvm_sregs *sregs);
/* Before an entry with nothing left to complete: checks the instruction at RIP, arms the step. */
void stepping_before_run(struct vcpu *v);
/* After each exit, before it is handled; may set v->completion. */
void stepping_after_exit(struct vcpu *v, uint32_t reason);
/* KVM_EXIT_DEBUG; false where the VMM had no debug hardware armed (not its exit). */
bool stepping_debug_exit(struct vcpu *v);
/* An MSR exit answered with #GP: watch its handler (may set v->completion). */
void stepping_msr_fault(struct vcpu *v);
/*
 * A WRMSR exit answered without a fault: where it set TEST_CTRL bit 29 of
 * a vCPU that was not watched (--split-lock-watch=armed), stepping starts
 * with the instruction behind it.
 */
void stepping_msr_written(struct vcpu *v);
/* KVM_RUN returned EINTR: finishes an immediate_exit completion, updates v->completion. */
void stepping_interrupted(struct vcpu *v);

/* The guest's own TF: while stepped, the registers hold the VMM's. */
bool stepping_guest_tf(struct vcpu *v);
/*
 * The VMM completed the instruction at RIP for KVM (gap.c), RIP moved on:
 * the #DB the guest's TF owes it. Always true: done, or the VM stops.
 */
bool stepping_completed_for_kvm(struct vcpu *v);
/* The VMM delivered an event for KVM (gap.c): its handler runs with TF clear. */
void stepping_delivered_for_kvm(struct vcpu *v);

#endif
