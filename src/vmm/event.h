/* SPDX-License-Identifier: MIT */
/* Every exception the VMM queues for a guest goes through event_inject(). */
#ifndef VMM_EVENT_H
#define VMM_EVENT_H

#include "delivery.h"
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

/*
 * The paging of the CPU's implicit supervisor accesses (SDM vol. 3 4.6:
 * the GDT, LDT, IDT and TSS; an event's frame where its handler runs
 * below CPL3) in the state sregs, regs: CPL 0, SMAP whatever RFLAGS.AC,
 * and under CR4.PKE the guest's PKRU (v->ops); where that cannot be read,
 * every key denied, so that a user page there is left to the CPU.
 */
void event_implicit_paging(struct vcpu *v, const struct kvm_sregs *sregs,
			   const struct kvm_regs *regs, struct paging *p);

/*
 * Delivers e through the guest's IDT or IVT as the CPU would
 * (delivery_deliver(), over guest RAM) from v's registers (v->ops), the
 * frame holding guest_tf. Where r->outcome is DELIVERY_DONE the handler's
 * state is written back through v->ops and the interrupt shadow ended;
 * otherwise nothing is written. 0, or -errno with *call naming the ioctl.
 */
int event_deliver(struct vcpu *v, const struct delivery_event *e, bool guest_tf,
		  struct delivery_result *r, const char **call);

#endif
