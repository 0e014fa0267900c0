/* SPDX-License-Identifier: MIT */
/*
 * The exit dispatch: what the run loop does with each exit KVM_RUN returns,
 * handing it to the module that owns it. Pure, so that the unit tests drive
 * it with synthetic exits through the fake KVM; vcpu.c calls it after every
 * KVM_RUN that returned one.
 */
#ifndef VMM_DISPATCH_H
#define VMM_DISPATCH_H

#include "vcpu.h"

/*
 * Counts v->run's exit, notes whether KVM completes it on the next entry
 * (v->completion), and handles it. An exit the VM cannot go on from stops
 * it (vm_fail()) with one line and a register dump.
 */
void dispatch_exit(struct vcpu *v);

#endif
