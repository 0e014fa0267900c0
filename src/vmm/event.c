/* SPDX-License-Identifier: MIT */
#include "event.h"

#include "vcpu.h"
#include "x86.h"

int event_inject(struct vcpu *v, const struct emulate_exception *ex)
{
	struct kvm_vcpu_events ev;
	struct kvm_sregs sregs;
	int r;

	/* CR2 through sregs: stock KVM delivers an injected #PF as it stands. */
	if (ex->has_cr2) {
		r = v->ops->get_sregs(v, &sregs);
		if (!r) {
			sregs.cr2 = ex->cr2;
			r = v->ops->set_sregs(v, &sregs);
		}
		if (r)
			return r;
	}
	/* A fault pushes RF set, as KVM does for the exceptions it queues itself. */
	if (ex->vector < 32 && ((X86_VEC_FAULTS >> ex->vector) & 1)) {
		struct kvm_regs regs;

		r = v->ops->get_regs(v, &regs);
		if (!r) {
			regs.rflags |= X86_RFLAGS_RF;
			r = v->ops->set_regs(v, &regs);
		}
		if (r)
			return r;
	}
	r = v->ops->get_events(v, &ev);
	if (r)
		return r;
	/*
	 * Injected, not pending, with the vector's error code: without
	 * KVM_CAP_EXCEPTION_PAYLOAD a pending one is dropped (docs/design.md, #AC).
	 */
	ev.flags &= ~(uint32_t)KVM_VCPUEVENT_VALID_PAYLOAD;
	ev.exception.injected = 1;
	ev.exception.pending = 0;
	ev.exception.nr = ex->vector;
	ev.exception.has_error_code = ex->has_error_code;
	ev.exception.error_code = ex->error_code;
	ev.exception_has_payload = 0;
	ev.exception_payload = 0;
	return v->ops->set_events(v, &ev);
}

int event_end_shadow(struct vcpu *v, bool nmi, const char **call)
{
	struct kvm_vcpu_events ev;
	int r;

	*call = "KVM_GET_VCPU_EVENTS";
	r = v->kvm->get_events(v, &ev);
	if (r || (!ev.interrupt.shadow && !(nmi && ev.nmi.masked)))
		return r;
	ev.interrupt.shadow = 0;
	if (nmi)
		ev.nmi.masked = 0;
	ev.flags = (ev.flags & KVM_VCPUEVENT_VALID_NMI_PENDING) | KVM_VCPUEVENT_VALID_SHADOW;
	*call = "KVM_SET_VCPU_EVENTS (interrupt shadow)";
	return v->kvm->set_events(v, &ev);
}

void event_implicit_paging(struct vcpu *v, const struct kvm_sregs *sregs,
			   const struct kvm_regs *regs, struct paging *p)
{
	uint32_t pkru;

	/* PKRU applies to none of the accesses the walk makes but the keys below. */
	emulate_paging(p, sregs, regs, 0, v->maxphyaddr);
	p->cpl = 0;
	p->ac = false;
	if (p->pke)
		p->pkru = v->ops->get_pkru(v, &pkru) ? 0x55555555 : pkru;
}

int event_deliver(struct vcpu *v, const struct delivery_event *e, bool guest_tf,
		  struct delivery_result *r, const char **call)
{
	struct guest_mem m = { v->vm->mem, v->vm->ram_size };
	struct delivery_cpu cpu = { .guest_tf = guest_tf };
	int err;

	r->outcome = DELIVERY_UNMODELLED;
	*call = "KVM_GET_REGS";
	err = v->ops->get_regs(v, &cpu.regs);
	if (!err) {
		*call = "KVM_GET_SREGS";
		err = v->ops->get_sregs(v, &cpu.sregs);
	}
	if (err)
		return err;
	event_implicit_paging(v, &cpu.sregs, &cpu.regs, &cpu.implicit);
	r->outcome = delivery_deliver(&m, &cpu, e, r);
	if (r->outcome != DELIVERY_DONE)
		return 0;
	*call = "KVM_SET_SREGS";
	err = v->ops->set_sregs(v, &r->sregs);
	if (!err) {
		*call = "KVM_SET_REGS";
		err = v->ops->set_regs(v, &r->regs);
	}
	return err ? err : event_end_shadow(v, false, call);
}
