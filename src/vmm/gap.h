/* SPDX-License-Identifier: MIT */
/*
 * What KVM's instruction emulator cannot run at CPL0 (KVM_EXIT_INTERNAL_ERROR
 * with KVM_INTERNAL_ERROR_EMULATION; the nested PVM KVM), where the host
 * profile's probes say so: a locked CMPXCHG16B is completed as a split lock
 * is (splitlock.c: the other vCPUs paused, the faults the CPU raises
 * instead injected), INT3, INT n, INTO and INT1 are delivered through the
 * guest's IDT as the CPU would (event_deliver()). Invisible to the guest:
 * the CPU is the oracle (tests/differential). Anything else stays KVM's
 * internal error.
 */
#ifndef VMM_GAP_H
#define VMM_GAP_H

#include <stdbool.h>
#include <stddef.h>

#include "emulate.h"
#include "profile.h"

struct vcpu;

enum gap_kind {
	GAP_NONE,          /* not the VMM's to complete: *why says why */
	GAP_LOCKED_RMW,    /* a locked CMPXCHG16B: splitlock_act_for_kvm() */
	GAP_SOFT_INT,      /* INT3, INT n, INTO (OF set), INT1: delivered */
};

/*
 * The pure decision, from the plan splitlock_plan_for_kvm() made of the
 * instruction at RIP (its bytes, and its decode where it is a locked
 * RMW) and the vCPU's state in s.
 */
enum gap_kind gap_classify(const struct host_profile *hp, const struct emulate_snapshot *s,
			   const struct emulate_plan *p, const char **why);

/*
 * KVM_EXIT_INTERNAL_ERROR with suberror KVM_INTERNAL_ERROR_EMULATION:
 * completes or delivers the instruction at RIP as the CPU would. true:
 * done, or the VM is stopping; false: not the VMM's to complete, with
 * why (the instruction's bytes, and the reason) in msg for the caller's
 * fatal line.
 */
bool gap_handle(struct vcpu *v, char *msg, size_t len);

#endif
