/* SPDX-License-Identifier: MIT */
#include "splitlock.h"

#include <stdio.h>
#include <string.h>

#include "dump.h"
#include "log.h"
#include "vmm_msr.h"
#include "vmm_status.h"

enum ac_action splitlock_decide_ac(const struct msr_state *msrs)
{
	return (msrs->test_ctrl & TEST_CTRL_SPLIT_LOCK_DETECT) ? AC_INJECT : AC_STOP;
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

static void stop_uninvited(struct vcpu *v, bool sigbus)
{
	struct kvm_regs regs = { 0 };
	uint8_t insn[15];
	char bytes[64];
	size_t n = 0;

	v->stats.split_lock_stops++;
	if (!vm_stop(v->vm, VMM_EXIT_SPLIT_LOCK))
		return;
	if (v->ops->get_regs(v, &regs) == 0)
		n = v->ops->read_virt(v, regs.rip, insn, sizeof(insn));
	dump_format_bytes(bytes, sizeof(bytes), insn, n);
	fprintf(stderr,
		"vmm: error: vCPU %u: split lock at RIP 0x%llx (bytes %s) that the guest did not ask #AC for "
		"(its TEST_CTRL bit 29 is clear); the host runs split_lock_detect=%s%s, so it cannot complete. "
		"Align the guest's locked operand within one 64-byte cache line, or have the guest set TEST_CTRL bit 29 to handle #AC itself\n",
		v->index, (unsigned long long)regs.rip, bytes,
		v->vm->host_mode ? v->vm->host_mode : "?",
		sigbus ? " (KVM also sent SIGBUS)" : "");
}

void splitlock_handle_exception(struct vcpu *v)
{
	bool sigbus = v->sigbus != 0;
	uint32_t vector = v->run->ex.exception;
	int r;

	v->sigbus = 0;
	if (sigbus)
		v->stats.sigbus++;
	if (vector != X86_VEC_AC) {
		if (vm_stop(v->vm, VMM_EXIT_UNHANDLED))
			fprintf(stderr, "vmm: error: vCPU %u: KVM reported guest exception %u (error code 0x%x) to userspace, which only expects split-lock #AC (17)\n",
				v->index, vector, v->run->ex.error_code);
		return;
	}
	if (splitlock_decide_ac(&v->msrs) == AC_STOP) {
		stop_uninvited(v, sigbus);
		return;
	}
	r = splitlock_inject_ac(v);
	if (r) {
		if (vm_stop(v->vm, VMM_EXIT_HOST))
			fprintf(stderr, "vmm: error: vCPU %u: injecting #AC with KVM_SET_VCPU_EVENTS failed: %s (errno %d)\n",
				v->index, strerror(-r), -r);
		return;
	}
	v->stats.ac_injected++;
}
