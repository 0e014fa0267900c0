/* SPDX-License-Identifier: MIT */
/* Every exception the VMM queues for a guest goes through event_inject(). */
#ifndef VMM_EVENT_H
#define VMM_EVENT_H

#include "emulate.h"

struct vcpu;

/*
 * Queues ex as an injected exception (RIP left as it is), CR2 first for
 * #PF, through v->ops. 0 or -errno.
 */
int event_inject(struct vcpu *v, const struct emulate_exception *ex);

/*
 * Ends the interrupt shadow (STI, MOV SS) the instruction at RIP sits in,
 * for one the VMM completed, or an event it delivered, in the guest's
 * place, as the CPU's completion would: left set, it would cover the next
 * instruction too, and VMX refuses entry with STI blocking and IF clear.
 * nmi: for an IRET, which ends the blocking of NMIs too (SDM vol. 3
 * 6.7.1). Through v->kvm. 0, or -errno with *call naming the ioctl.
 */
int event_end_shadow(struct vcpu *v, bool nmi, const char **call);

#endif
