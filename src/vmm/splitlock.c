/* SPDX-License-Identifier: MIT */
#include "splitlock.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dump.h"
#include "emulate.h"
#include "event.h"
#include "pagewalk.h"
#include "vcpu.h"
#include "log.h"
#include "vmm_msr.h"
#include "x86.h"
#include "vmm_status.h"

enum splitlock_ac_action splitlock_decide_ac(const struct msr_state *msrs)
{
	return (msrs->test_ctrl & TEST_CTRL_SPLIT_LOCK_DETECT) ? SPLITLOCK_AC_INJECT : SPLITLOCK_AC_EMULATE;
}

static enum stats_msr counted_msr(uint32_t index)
{
	return index == MSR_TEST_CTRL ? STATS_MSR_TEST_CTRL : STATS_MSR_CORE_CAPABILITIES;
}

/*
 * The MSRs the filter denies reach here, and under emulate the accesses KVM
 * would fail itself: anything else is a KVM surprise.
 */
static bool expected_msr_exit(struct vcpu *v)
{
	uint32_t reason = v->run->msr.reason;

	if (reason == KVM_MSR_EXIT_REASON_FILTER && msr_is_emulated(v->run->msr.index))
		return true;
	/*
	 * Under emulate KVM's own answer, #GP, is given here: one KVM queues by
	 * itself loses the stepping TF (docs/stepping.md, "A failed MSR access").
	 */
	if (v->vm->split_lock_emulate &&
	    (reason == KVM_MSR_EXIT_REASON_UNKNOWN || reason == KVM_MSR_EXIT_REASON_INVAL))
		return false;
	v->stats.gp_injected++;
	warn("vCPU %u: unexpected MSR exit for 0x%x (reason %u); injecting #GP",
	     v->index, v->run->msr.index, v->run->msr.reason);
	return false;
}

/* Answers the access: error set means KVM completes it with #GP. */
static enum splitlock_msr answer(struct vcpu *v, bool ok)
{
	v->run->msr.error = ok ? 0 : 1;
	return ok ? SPLITLOCK_MSR_DONE : SPLITLOCK_MSR_GP;
}

enum splitlock_msr splitlock_handle_rdmsr(struct vcpu *v)
{
	uint64_t val = 0;

	if (!expected_msr_exit(v))
		return answer(v, false);
	v->stats.msr_reads[counted_msr(v->run->msr.index)]++;
	if (msr_read(v->vm->split_lock_enumerated, &v->msrs, v->run->msr.index, &val) != MSR_OK) {
		v->stats.gp_injected++;
		return answer(v, false);
	}
	v->run->msr.data = val;
	return answer(v, true);
}

enum splitlock_msr splitlock_handle_wrmsr(struct vcpu *v)
{
	if (!expected_msr_exit(v))
		return answer(v, false);
	v->stats.msr_writes[counted_msr(v->run->msr.index)]++;
	if (msr_write(v->vm->split_lock_enumerated, &v->msrs, v->run->msr.index,
		      v->run->msr.data) != MSR_OK) {
		v->stats.gp_injected++;
		return answer(v, false);
	}
	return answer(v, true);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void describe(const struct emulate_plan *p, uint64_t rip, char *buf, size_t len)
{
	char bytes[64];

	dump_format_bytes(bytes, sizeof(bytes), p->bytes, p->decoded ? p->insn.length : p->nbytes);
	if (p->decoded)
		snprintf(buf, len, "split lock at RIP 0x%llx (%s%s, %u bytes at 0x%llx, bytes %s)",
			 (unsigned long long)rip,
			 p->insn.locked_by_prefix ? "lock " : "", decode_op_name(p->insn.op),
			 p->access.size, (unsigned long long)p->access.la, bytes);
	else
		snprintf(buf, len, "split lock at RIP 0x%llx (bytes %s)",
			 (unsigned long long)rip, bytes);
}

static void stop_uninvited(struct vcpu *v, const struct emulate_snapshot *s, const struct emulate_plan *p)
{
	char what[256];

	bool stopped;

	v->stats.split_lock_stops++;
	if (s->source == EMULATE_SOURCE_SOFTWARE && !p->decoded) {
		stopped = vm_fail(v->vm, VMM_EXIT_SPLIT_LOCK,
				  "vCPU %u: --split-lock=emulate cannot check the instruction at RIP 0x%llx: %s",
				  v->index, (unsigned long long)s->regs.rip, p->why);
	} else {
		describe(p, s->regs.rip, what, sizeof(what));
		stopped = vm_fail(v->vm, VMM_EXIT_SPLIT_LOCK,
				  "vCPU %u: %s that the guest did not ask #AC for (its TEST_CTRL bit 29 is clear), "
				  "and the VMM cannot complete it: %s. Align the guest's locked operand within one 64-byte cache line, "
				  "or have the guest set TEST_CTRL bit 29 to handle #AC itself",
				  v->index, what, p->why);
	}
	if (stopped)
		dump_vcpu(v);
}

static void warn_emulated(struct vcpu *v, const struct emulate_snapshot *s, const struct emulate_plan *p)
{
	char what[256];

	if (!ratelimit_allow(&v->warn_rate, now_ns())) {
		v->warn_suppressed++;
		return;
	}
	describe(p, s->regs.rip, what, sizeof(what));
	if (v->warn_suppressed)
		warn("vCPU %u: %s emulated; the guest did not ask for #AC (%llu more since the last line)",
		     v->index, what, (unsigned long long)v->warn_suppressed);
	else
		warn("vCPU %u: %s emulated; the guest did not ask for #AC", v->index, what);
	v->warn_suppressed = 0;
}

/* Waits out the VM's ratelimit, paused for others' emulation meanwhile. */
static void pay_ratelimit(struct vcpu *v)
{
	uint64_t waited;

	if (!vm_ratelimit_wait(v->vm, &waited))
		return;
	v->stats.split_lock_delays++;
	v->stats.split_lock_delay_ns += waited;
}

/* The decision's inputs, read from the vCPU: 0, or KVM's -errno (*call names the ioctl). */
static int snapshot(struct vcpu *v, enum emulate_source source, struct emulate_snapshot *s,
		    const char **call)
{
	int r;

	memset(s, 0, sizeof(*s));
	s->source = source;
	s->ac_requested = splitlock_decide_ac(&v->msrs) == SPLITLOCK_AC_INJECT;
	s->maxphyaddr = v->maxphyaddr;
	s->mem = (struct guest_mem){ v->vm->mem, v->vm->ram_size };
	*call = "KVM_GET_REGS";
	r = v->ops->get_regs(v, &s->regs);
	if (r)
		return r;
	*call = "KVM_GET_SREGS";
	return v->ops->get_sregs(v, &s->sregs);
}

static void fail_host(struct vcpu *v, const char *call, int r)
{
	vm_fail(v->vm, VMM_EXIT_HOST, "vCPU %u: %s failed: %s (errno %d)",
		v->index, call, strerror(-r), -r);
}

/*
 * emulate_plan(), reading PKRU (an XSAVE read, too dear for every step) only
 * when the decision needs it. False when that read failed and the VM stops:
 * a guessed PKRU would let a split lock through or fault where the CPU doesn't.
 */
static bool decide(struct vcpu *v, struct emulate_snapshot *s, struct emulate_plan *p)
{
	int r;

	emulate_plan(s, p);
	if (!p->needs_pkru)
		return true;
	r = v->ops->get_pkru(v, &s->pkru);
	if (r) {
		fail_host(v, "reading PKRU with KVM_GET_XSAVE", r);
		return false;
	}
	s->pkru_known = true;
	emulate_plan(s, p);
	return true;
}

static enum splitlock_outcome act(struct vcpu *v, struct emulate_snapshot *s, struct emulate_plan *p,
				  bool replanned);

/*
 * Performs the instruction on guest memory with every other vCPU out of
 * guest mode, deciding again once they are: another vCPU may have changed
 * the page tables or the operand since.
 */
static enum splitlock_outcome complete_locked(struct vcpu *v, struct emulate_snapshot *s, struct emulate_plan *p)
{
	struct vm *vm = v->vm;
	struct kvm_regs regs;
	const char *call;
	int r;

	if (s->source != EMULATE_SOURCE_KVM)
		pay_ratelimit(v);
	if (!vm_pause_others(vm, v))
		return SPLITLOCK_STOPPED;
	if (!decide(v, s, p)) {
		vm_resume_others(vm);
		return SPLITLOCK_STOPPED;
	}
	if (p->kind != EMULATE_PLAN_EMULATE) {
		vm_resume_others(vm);
		return act(v, s, p, true);
	}
	regs = s->regs;
	emulate_perform(p, &s->mem, &regs);
	/* For KVM, done: RF clears as the CPU's completion clears it (emulate's check does it after). */
	if (s->source == EMULATE_SOURCE_KVM)
		regs.rflags &= ~X86_RFLAGS_RF;
	call = "KVM_SET_REGS";
	r = v->ops->set_regs(v, &regs);
	if (!r)
		r = event_end_shadow(v, false, &call);
	vm_resume_others(vm);
	if (r) {
		fail_host(v, call, r);
		return SPLITLOCK_STOPPED;
	}
	if (s->source == EMULATE_SOURCE_KVM) {
		v->stats.gap_locked_rmw++;
		return SPLITLOCK_EMULATED;
	}
	v->stats.split_locks_emulated++;
	warn_emulated(v, s, p);
	return SPLITLOCK_EMULATED;
}

/* Carries out a plan; `replanned` for complete_locked()'s second decision. */
static enum splitlock_outcome act(struct vcpu *v, struct emulate_snapshot *s, struct emulate_plan *p,
				  bool replanned)
{
	int r;

	/* What KVM could not run and the VMM does not complete: KVM meets it again, or it is fatal. */
	if (s->source == EMULATE_SOURCE_KVM &&
	    (p->kind == EMULATE_PLAN_NONE || p->kind == EMULATE_PLAN_NATIVE || p->kind == EMULATE_PLAN_STOP))
		return replanned ? SPLITLOCK_LEFT_TO_CPU : SPLITLOCK_NONE;
	if (s->source == EMULATE_SOURCE_SOFTWARE && !replanned &&
	    (p->kind == EMULATE_PLAN_INJECT || p->kind == EMULATE_PLAN_EMULATE || p->kind == EMULATE_PLAN_STOP))
		v->stats.split_locks_detected++;
	switch (p->kind) {
	case EMULATE_PLAN_NONE:
		return SPLITLOCK_NONE;
	case EMULATE_PLAN_NATIVE:
		return p->split ? SPLITLOCK_LEFT_TO_CPU : SPLITLOCK_NONE;
	case EMULATE_PLAN_STOP:
		stop_uninvited(v, s, p);
		return SPLITLOCK_STOPPED;
	case EMULATE_PLAN_INJECT:
		r = event_inject(v, &p->ex);
		if (r) {
			fail_host(v, p->ex.has_cr2 ? "injecting #PF with KVM_SET_REGS, KVM_SET_SREGS and KVM_SET_VCPU_EVENTS"
						   : "injecting an exception with KVM_SET_REGS and KVM_SET_VCPU_EVENTS", r);
			return SPLITLOCK_STOPPED;
		}
		emulate_plan_fetched(p, &s->mem);
		if (p->ex.vector == X86_VEC_AC) {
			v->stats.ac_injected++;
			return SPLITLOCK_AC_INJECTED;
		}
		return SPLITLOCK_FAULT_INJECTED;
	case EMULATE_PLAN_EMULATE:
		if (replanned)
			return SPLITLOCK_NONE;	/* not reached: complete_locked() performs it */
		return complete_locked(v, s, p);
	}
	return SPLITLOCK_NONE;
}

enum splitlock_outcome splitlock_check(struct vcpu *v)
{
	struct emulate_snapshot s;
	struct emulate_plan p;
	const char *call;

	/* Under emulate the registers are the run page's: nothing to fail. */
	if (snapshot(v, EMULATE_SOURCE_SOFTWARE, &s, &call))
		return SPLITLOCK_NONE;
	if (!decide(v, &s, &p))
		return SPLITLOCK_STOPPED;
	return act(v, &s, &p, false);
}

bool splitlock_still_left_to_cpu(struct vcpu *v)
{
	struct emulate_snapshot s;
	struct emulate_plan p;
	const char *call;

	if (snapshot(v, EMULATE_SOURCE_SOFTWARE, &s, &call))
		return false;
	return decide(v, &s, &p) && p.kind == EMULATE_PLAN_NATIVE && p.split;
}

void splitlock_handle_exception(struct vcpu *v)
{
	struct emulate_snapshot s;
	struct emulate_plan p;
	bool sigbus = v->sigbus != 0;
	uint32_t vector = v->run->ex.exception;
	const char *call;
	int r;

	v->sigbus = 0;
	if (sigbus)
		v->stats.sigbus++;
	if (vector != X86_VEC_AC) {
		vm_fail(v->vm, VMM_EXIT_UNHANDLED,
			"vCPU %u: KVM reported guest exception %u (error code 0x%x) to userspace, which only expects split-lock #AC (17)",
			v->index, vector, v->run->ex.error_code);
		return;
	}
	r = snapshot(v, EMULATE_SOURCE_HARDWARE, &s, &call);
	if (r) {
		vm_fail(v->vm, VMM_EXIT_HOST,
			"vCPU %u: reading registers after a split-lock #AC failed: %s: %s (errno %d)",
			v->index, call, strerror(-r), -r);
		return;
	}
	if (decide(v, &s, &p))
		act(v, &s, &p, false);
}

bool splitlock_plan_for_kvm(struct vcpu *v, struct emulate_snapshot *s, struct emulate_plan *p)
{
	const char *call;
	int r = snapshot(v, EMULATE_SOURCE_KVM, s, &call);

	if (r) {
		fail_host(v, call, r);
		return false;
	}
	return decide(v, s, p);
}

enum splitlock_outcome splitlock_act_for_kvm(struct vcpu *v, struct emulate_snapshot *s,
					     struct emulate_plan *p)
{
	return act(v, s, p, false);
}
