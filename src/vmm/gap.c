/* SPDX-License-Identifier: MIT */
/* What KVM's emulator cannot run at CPL0, completed by the VMM (gap.h). */
#include "gap.h"

#include <stdio.h>
#include <string.h>

#include "dump.h"
#include "event.h"
#include "splitlock.h"
#include "step.h"
#include "stepping.h"
#include "vcpu.h"
#include "vmm_status.h"
#include "x86.h"

/* CS as the step engine classifies by it (stepping.c's load_insn()). */
static struct step_mode snapshot_mode(const struct emulate_snapshot *s)
{
	return (struct step_mode){ .cs_l = s->sregs.cs.l, .cs_d = s->sregs.cs.db };
}

enum gap_kind gap_classify(const struct host_profile *hp, const struct emulate_snapshot *s,
			   const struct emulate_plan *p, const char **why)
{
	struct step_insn insn;

	if (emulate_cpl(&s->sregs, s->regs.rflags) != 0) {
		*why = "the guest is not at CPL0, where the probes looked";
		return GAP_NONE;
	}
	if (p->decoded) {
		*why = p->insn.op != DECODE_CMPXCHG16B ?
		       "vmm completes only CMPXCHG16B of the read-modify-write instructions, which the probe found KVM cannot run" :
		       hp->cmpxchg16b_cpl0 ? "the probe found that KVM runs a locked CMPXCHG16B at CPL0 "
					     "(vmm --host-info, \"CMPXCHG16B at CPL0\")" : NULL;
		return *why ? GAP_NONE : GAP_LOCKED_RMW;
	}
	step_classify(p->bytes, p->nbytes, snapshot_mode(s), &insn);
	if (insn.kind != STEP_INT1 && !step_delivers(&insn, s->regs.rflags)) {
		*why = "it is neither a locked CMPXCHG16B nor INT3, INT n, INTO or INT1, "
		       "which vmm completes where the probes found KVM cannot";
		return GAP_NONE;
	}
	if (hp->soft_int_cpl0) {
		*why = "the probe found that KVM delivers INT3 and INT n at CPL0 "
		       "(vmm --host-info, \"INT3, INT n at CPL0\")";
		return GAP_NONE;
	}
	*why = NULL;
	return GAP_SOFT_INT;
}

/* The guest's own TF at the exit: under emulate the registers may hold the VMM's. */
static bool guest_tf(struct vcpu *v, const struct emulate_snapshot *s)
{
	if (v->vm->split_lock_emulate)
		return stepping_guest_tf(v);
	return (s->regs.rflags & X86_RFLAGS_TF) != 0;
}

/* A KVM ioctl failed: the VM stops, said. true: the exit is handled. */
static bool fail_host(struct vcpu *v, const char *call, int r)
{
	vm_fail(v->vm, VMM_EXIT_HOST, "vCPU %u: %s failed: %s (errno %d)", v->index, call,
		strerror(-r), -r);
	return true;
}

/*
 * The single-step trap a completed instruction owes the guest's TF, as the
 * CPU raises it: DR6.BS, then #DB. true: done, or the VM stops.
 */
static bool step_trap(struct vcpu *v)
{
	static const struct emulate_exception db = { .vector = X86_VEC_DB };
	struct kvm_debugregs dr;
	int r;

	if (v->vm->split_lock_emulate)
		return stepping_completed_for_kvm(v);
	r = v->ops->get_debugregs(v, &dr);
	if (r)
		return fail_host(v, "KVM_GET_DEBUGREGS", r);
	dr.dr6 = step_dr6_deliver(dr.dr6, X86_DR6_BS);
	dr.flags = 0;
	r = v->ops->set_debugregs(v, &dr);
	if (!r)
		r = event_inject(v, &db);
	return r ? !fail_host(v, "KVM_SET_DEBUGREGS and KVM_SET_VCPU_EVENTS (#DB)", r) : true;
}

/*
 * splitlock_act_for_kvm(): false where its plan completes nothing (KVM
 * would only stop again), with p->why in msg.
 */
static bool complete_locked(struct vcpu *v, struct emulate_snapshot *s, struct emulate_plan *p,
			    char *msg, size_t len)
{
	bool tf = guest_tf(v, s);

	switch (splitlock_act_for_kvm(v, s, p)) {
	case SPLITLOCK_EMULATED:
		return !tf || step_trap(v);
	case SPLITLOCK_AC_INJECTED:
	case SPLITLOCK_FAULT_INJECTED:
		v->stats.gap_faults++;
		return true;
	case SPLITLOCK_NONE:
		snprintf(msg, len, "%s", p->why ? p->why : "no plan");
		return false;
	default:	/* stopping; or re-entered after others changed it: KVM meets it anew */
		return true;
	}
}

/* A fault the delivery of INT n raises instead (#GP, #NP, #PF of the IDT or stack). */
static bool deliver_fault(struct vcpu *v, const struct emulate_snapshot *s, unsigned vector,
			  uint32_t err)
{
	const struct delivery_event e = {
		.vector = vector, .error_code = step_vector_error_code(vector), .err = err,
		.rip = s->regs.rip, .fault = true,
	};
	const struct emulate_exception ex = { .vector = (uint8_t)vector,
					      .has_error_code = e.error_code, .error_code = err };
	struct delivery_result r;
	const char *call;
	int rc = event_deliver(v, &e, guest_tf(v, s), &r, &call);

	v->stats.gap_faults++;
	if (!rc && r.outcome != DELIVERY_DONE) {	/* a fault of the fault's delivery: KVM's to raise */
		call = "KVM_SET_VCPU_EVENTS";
		rc = event_inject(v, &ex);
	}
	if (rc)
		return fail_host(v, call, rc);
	if (r.outcome == DELIVERY_DONE && v->vm->split_lock_emulate)
		stepping_delivered_for_kvm(v);
	return true;
}

static bool deliver_soft_int(struct vcpu *v, const struct emulate_snapshot *s,
			     const struct emulate_plan *p, char *msg, size_t len)
{
	struct step_mode mode = snapshot_mode(s);
	struct step_insn insn;
	struct delivery_event e;
	struct delivery_result r;
	const char *call;
	int rc;

	step_classify(p->bytes, p->nbytes, mode, &insn);
	e = (struct delivery_event){
		.vector = insn.vector, .rip = step_advance(s->regs.rip, insn.len, mode),
		.soft = insn.kind != STEP_INT1, .rf = (s->regs.rflags & X86_RFLAGS_RF) != 0,
	};
	rc = event_deliver(v, &e, guest_tf(v, s), &r, &call);
	if (rc)
		return fail_host(v, call, rc);
	switch (r.outcome) {
	case DELIVERY_DONE:
		v->stats.gap_soft_int++;
		if (v->vm->split_lock_emulate)
			stepping_delivered_for_kvm(v);
		return true;
	case DELIVERY_FAULT:
		return deliver_fault(v, s, r.vector, r.err);
	default:
		snprintf(msg, len, "vmm does not model this delivery through the guest's IDT");
		return false;
	}
}

bool gap_handle(struct vcpu *v, char *msg, size_t len)
{
	struct emulate_snapshot s;
	struct emulate_plan p;
	const char *why;
	char bytes[64], reason[128] = "";
	enum gap_kind kind;

	if (!splitlock_plan_for_kvm(v, &s, &p))
		return true;	/* the VM stops, said */
	kind = gap_classify(&v->vm->host, &s, &p, &why);
	if (kind == GAP_LOCKED_RMW && complete_locked(v, &s, &p, reason, sizeof(reason)))
		return true;
	if (kind == GAP_SOFT_INT && deliver_soft_int(v, &s, &p, reason, sizeof(reason)))
		return true;
	dump_format_bytes(bytes, sizeof(bytes), p.bytes, p.nbytes);
	snprintf(msg, len, "bytes at RIP 0x%llx: %s; vmm does not complete it: %s",
		 (unsigned long long)s.regs.rip, p.nbytes ? bytes : "(none readable)",
		 kind == GAP_NONE ? why : reason);
	return false;
}
