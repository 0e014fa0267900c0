/* SPDX-License-Identifier: MIT */
#include "splitlock.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dump.h"
#include "emulate.h"
#include "pagewalk.h"
#include "vcpu.h"
#include "log.h"
#include "vmm_msr.h"
#include "vmm_status.h"

enum ac_action splitlock_decide_ac(const struct msr_state *msrs)
{
	return (msrs->test_ctrl & TEST_CTRL_SPLIT_LOCK_DETECT) ? AC_INJECT : AC_EMULATE;
}

static enum stats_msr stats_slot(uint32_t index)
{
	return index == MSR_TEST_CTRL ? STATS_MSR_TEST_CTRL : STATS_MSR_CORE_CAPABILITIES;
}

/* Only the MSRs the filter denies reach here; anything else is a KVM surprise. */
static bool expected_msr_exit(struct vcpu *v)
{
	if (v->run->msr.reason == KVM_MSR_EXIT_REASON_FILTER &&
	    msr_is_emulated(v->run->msr.index))
		return true;
	v->run->msr.error = 1;
	v->stats.gp_injected++;
	warn("vCPU %u: unexpected MSR exit for 0x%x (reason %u); injecting #GP",
	     v->index, v->run->msr.index, v->run->msr.reason);
	return false;
}

void splitlock_handle_rdmsr(struct vcpu *v)
{
	uint64_t val = 0;

	if (!expected_msr_exit(v))
		return;
	v->stats.msr_reads[stats_slot(v->run->msr.index)]++;
	if (msr_read(v->vm->split_lock_enumerated, &v->msrs, v->run->msr.index, &val) == MSR_OK) {
		v->run->msr.error = 0;
		v->run->msr.data = val;
	} else {
		v->run->msr.error = 1;
		v->stats.gp_injected++;
	}
}

void splitlock_handle_wrmsr(struct vcpu *v)
{
	if (!expected_msr_exit(v))
		return;
	v->stats.msr_writes[stats_slot(v->run->msr.index)]++;
	if (msr_write(v->vm->split_lock_enumerated, &v->msrs, v->run->msr.index,
		      v->run->msr.data) == MSR_OK) {
		v->run->msr.error = 0;
	} else {
		v->run->msr.error = 1;
		v->stats.gp_injected++;
	}
}

int splitlock_inject_ac(struct vcpu *v)
{
	struct kvm_vcpu_events ev;
	int r = v->ops->get_events(v, &ev);

	if (r)
		return r;
	/*
	 * injected rather than pending, with has_error_code: measured on the
	 * project's hosts, pending without KVM_CAP_EXCEPTION_PAYLOAD is dropped
	 * and has_error_code = 0 corrupts the guest's frame.
	 */
	ev.exception.injected = 1;
	ev.exception.pending = 0;
	ev.exception.nr = X86_VEC_AC;
	ev.exception.has_error_code = 1;
	ev.exception.error_code = 0;
	ev.exception_has_payload = 0;
	ev.exception_payload = 0;
	return v->ops->set_events(v, &ev);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Everything known about one caught split lock, for handling and messages. */
struct caught {
	enum sl_source source;
	uint64_t rip;                 /* of the instruction; regs.rip moves on */
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	struct paging paging;
	uint8_t bytes[SL_INSN_MAX];
	size_t nbytes;
	bool decoded;
	struct sl_insn insn;
	struct sl_access access;
};

static void describe(const struct caught *c, char *buf, size_t len)
{
	char bytes[64];

	dump_format_bytes(bytes, sizeof(bytes), c->bytes,
			  c->decoded ? c->insn.length : c->nbytes);
	if (c->decoded)
		snprintf(buf, len, "split lock at RIP 0x%llx (%s%s, %u bytes at 0x%llx, bytes %s)",
			 (unsigned long long)c->rip,
			 c->insn.locked_by_prefix ? "lock " : "", sl_op_name(c->insn.op),
			 c->access.size, (unsigned long long)c->access.la, bytes);
	else
		snprintf(buf, len, "split lock at RIP 0x%llx (bytes %s)",
			 (unsigned long long)c->rip, bytes);
}

static void stop_uninvited(struct vcpu *v, const struct caught *c, const char *why)
{
	char what[256];

	v->stats.split_lock_stops++;
	if (!vm_stop(v->vm, VMM_EXIT_SPLIT_LOCK))
		return;
	describe(c, what, sizeof(what));
	fprintf(stderr,
		"vmm: error: vCPU %u: %s that the guest did not ask #AC for (its TEST_CTRL bit 29 is clear), "
		"and the VMM cannot complete it: %s. Align the guest's locked operand within one 64-byte cache line, "
		"or have the guest set TEST_CTRL bit 29 to handle #AC itself\n",
		v->index, what, why);
	vcpu_dump(v);
}

static void warn_emulated(struct vcpu *v, const struct caught *c)
{
	char what[256];

	if (!ratelimit_allow(&v->warn_rate, now_ns())) {
		v->warn_suppressed++;
		return;
	}
	describe(c, what, sizeof(what));
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

/*
 * Performs the instruction on guest memory with every other vCPU out of
 * guest mode. NULL on success, else why it could not.
 */
static const char *emulate(struct vcpu *v, struct caught *c)
{
	struct vm *vm = v->vm;
	struct guest_mem m = { vm->mem, vm->ram_size };
	uint8_t op[16] __attribute__((aligned(16)));
	uint64_t gpa[2] = { 0, 0 }, left = 0;
	unsigned first;
	enum walk_result w;
	const char *why = NULL;

	if (!vm_pause_others(vm, v))
		return "the VM is stopping";
	w = pagewalk(&m, &c->paging, c->access.la, true, &gpa[0], &left);
	first = left < c->access.size ? (unsigned)left : c->access.size;
	if (w == WALK_OK && first < c->access.size)
		w = pagewalk(&m, &c->paging, c->access.la + first, true, &gpa[1], &left);
	if (w != WALK_OK) {
		why = walk_result_name(w);
		goto out;
	}
	if (gpa[0] + first > vm->ram_size ||
	    (first < c->access.size && gpa[1] + (c->access.size - first) > vm->ram_size)) {
		why = "operand outside guest RAM";
		goto out;
	}
	memcpy(op, vm->mem + gpa[0], first);
	memcpy(op + first, vm->mem + gpa[1], c->access.size - first);
	sl_execute(&c->insn, &c->regs, op);
	memcpy(vm->mem + gpa[0], op, first);
	memcpy(vm->mem + gpa[1], op + first, c->access.size - first);
	if (v->ops->set_regs(v, &c->regs))
		why = "KVM_SET_REGS failed";
out:
	vm_resume_others(vm);
	return why;
}

/* The one decision for a split lock, however it was caught. */
static enum sl_outcome handle_caught(struct vcpu *v, struct caught *c)
{
	const char *why;
	int r;

	if (c->source == SL_SOFTWARE)
		v->stats.split_locks_detected++;
	if (splitlock_decide_ac(&v->msrs) == AC_INJECT) {
		r = splitlock_inject_ac(v);
		if (r) {
			if (vm_stop(v->vm, VMM_EXIT_HOST))
				fprintf(stderr, "vmm: error: vCPU %u: injecting #AC with KVM_SET_VCPU_EVENTS failed: %s (errno %d)\n",
					v->index, strerror(-r), -r);
			return SL_STOPPED;
		}
		v->stats.ac_injected++;
		return SL_AC_INJECTED;
	}
	if (!c->decoded) {
		stop_uninvited(v, c, "it is not a locked read-modify-write the VMM can emulate");
		return SL_STOPPED;
	}
	pay_ratelimit(v);
	why = emulate(v, c);
	if (why) {
		if (!vm_stopping(v->vm))
			stop_uninvited(v, c, why);
		return SL_STOPPED;
	}
	v->stats.split_locks_emulated++;
	warn_emulated(v, c);
	return SL_EMULATED;
}

static bool load_state(struct vcpu *v, struct caught *c)
{
	struct guest_mem m = { v->vm->mem, v->vm->ram_size };

	if (v->ops->get_regs(v, &c->regs) || v->ops->get_sregs(v, &c->sregs))
		return false;
	c->rip = c->regs.rip;
	paging_from_sregs(&c->paging, &c->sregs);
	c->nbytes = pagewalk_read(&m, &c->paging, c->regs.rip, c->bytes, sizeof(c->bytes));
	return true;
}

static void decode_caught(struct caught *c)
{
	c->decoded = c->nbytes && sl_decode(c->bytes, c->nbytes, &c->insn) == 0;
	if (c->decoded)
		c->access = sl_operand(&c->insn, &c->regs, c->sregs.fs.base, c->sregs.gs.base);
}

enum sl_outcome splitlock_check(struct vcpu *v)
{
	struct caught c = { .source = SL_SOFTWARE };

	if (!load_state(v, &c) || !c.nbytes || !sl_maybe_locked(c.bytes, c.nbytes))
		return SL_NONE;
	decode_caught(&c);
	if (!c.decoded || !sl_is_split_lock(&c.insn, &c.access))
		return SL_NONE;
	return handle_caught(v, &c);
}

void splitlock_handle_exception(struct vcpu *v)
{
	struct caught c = { .source = SL_HARDWARE };
	bool sigbus = v->sigbus != 0;
	uint32_t vector = v->run->ex.exception;

	v->sigbus = 0;
	if (sigbus)
		v->stats.sigbus++;
	if (vector != X86_VEC_AC) {
		if (vm_stop(v->vm, VMM_EXIT_UNHANDLED))
			fprintf(stderr, "vmm: error: vCPU %u: KVM reported guest exception %u (error code 0x%x) to userspace, which only expects split-lock #AC (17)\n",
				v->index, vector, v->run->ex.error_code);
		return;
	}
	if (!load_state(v, &c)) {
		if (vm_stop(v->vm, VMM_EXIT_HOST))
			fprintf(stderr, "vmm: error: vCPU %u: reading registers after a split-lock #AC failed\n",
				v->index);
		return;
	}
	decode_caught(&c);
	handle_caught(v, &c);
}
