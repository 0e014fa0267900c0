/* SPDX-License-Identifier: MIT */
/* The exit dispatch (dispatch.h): each exit to the module that owns it. */
#include "dispatch.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "dump.h"
#include "gap.h"
#include "ioport.h"
#include "log.h"
#include "splitlock.h"
#include "step.h"
#include "stepping.h"
#include "vmm_status.h"

/* Stops the VM for an exit it cannot go on from; the first stopper explains. */
static void fatal_exit(struct vcpu *v, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fatal_exit(struct vcpu *v, int status, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!vm_fail(v->vm, status, "vCPU %u: %s%s", v->index, msg, v->vm->stop_hint ? v->vm->stop_hint : ""))
		return;
	dump_vcpu(v);
	/* On the PC machine the guest starts vCPUs 1-N itself, from real mode. */
	if (v->vm->machine == MACHINE_PC && v->index)
		errmsg("vCPU %u is one the guest started (INIT, SIPI, real mode); where this KVM cannot run that start (vmm --host-info: entering long mode), boot with -c 1",
		       v->index);
}

/*
 * KVM's internal error. Its emulator's (KVM_INTERNAL_ERROR_EMULATION) at
 * what the VMM completes where the probes found KVM cannot (gap.c) is no
 * error; anything else stops the VM, naming the instruction's bytes.
 */
static void handle_internal_error(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	char data[160] = "", why[384] = "";
	size_t off = 0;

	if (run->internal.suberror == KVM_INTERNAL_ERROR_EMULATION && gap_handle(v, why, sizeof(why)))
		return;
	for (uint32_t i = 0; i < run->internal.ndata && i < 4 && off < sizeof(data); i++)
		off += (size_t)snprintf(data + off, sizeof(data) - off, " 0x%llx",
					(unsigned long long)run->internal.data[i]);
	fatal_exit(v, VMM_EXIT_INTERNAL,
		   "KVM internal error, suberror %u%s%s (KVM could not emulate or deliver something at this RIP)%s%s",
		   run->internal.suberror, *data ? ", data" : "", data, *why ? "; " : "", why);
}

void dispatch_exit(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	uint32_t reason = run->exit_reason;

	v->completion = step_completes_in_kvm(reason) ? VCPU_COMPLETION_KVM : VCPU_COMPLETION_NONE;
	stats_count_exit(&v->stats, reason);
	if (v->vm->split_lock_emulate)
		stepping_after_exit(v, reason);
	switch (reason) {
	case KVM_EXIT_X86_RDMSR:
		if (splitlock_handle_rdmsr(v) == SPLITLOCK_MSR_GP && v->vm->split_lock_emulate)
			stepping_msr_fault(v);
		break;
	case KVM_EXIT_X86_WRMSR:
		if (!v->vm->split_lock_emulate)
			(void)splitlock_handle_wrmsr(v);
		else if (splitlock_handle_wrmsr(v) == SPLITLOCK_MSR_GP)
			stepping_msr_fault(v);
		else
			stepping_msr_written(v);
		break;
	case KVM_EXIT_EXCEPTION:
		splitlock_handle_exception(v);
		break;
	case KVM_EXIT_IO:
		ioport_handle(v);
		break;
	case KVM_EXIT_MMIO:
		if (atomic_fetch_add(&v->vm->mmio_warned, 1) < 8)
			warn("vCPU %u: %s of %u byte(s) at guest-physical 0x%llx, where there is no RAM or device; reads return all-ones, writes are dropped",
			     v->index, run->mmio.is_write ? "write" : "read", run->mmio.len,
			     (unsigned long long)run->mmio.phys_addr);
		if (!run->mmio.is_write)
			memset(run->mmio.data, VM_UNBACKED_BYTE, sizeof(run->mmio.data));
		break;
	case KVM_EXIT_HLT:
		if (vm_vcpu_halted(v->vm)) {
			errmsg("every vCPU has halted with nothing to wake them (there are no interrupts); vCPU %u halted last",
			       v->index);
			dump_vcpu(v);
		}
		break;
	case KVM_EXIT_SHUTDOWN:
		fatal_exit(v, VMM_EXIT_SHUTDOWN,
			   "triple fault (KVM_EXIT_SHUTDOWN): an exception the guest could not handle, often a missing IDT, GDT or stack");
		break;
	case KVM_EXIT_FAIL_ENTRY:
		fatal_exit(v, VMM_EXIT_FAIL_ENTRY,
			   "KVM could not enter the guest (KVM_EXIT_FAIL_ENTRY), hardware reason 0x%llx",
			   (unsigned long long)run->fail_entry.hardware_entry_failure_reason);
		break;
	case KVM_EXIT_INTERNAL_ERROR:
		handle_internal_error(v);
		break;
	case KVM_EXIT_INTR:
		break;
	case KVM_EXIT_DEBUG:
		if (v->vm->split_lock_emulate && stepping_debug_exit(v))
			break;
		fatal_exit(v, VMM_EXIT_UNHANDLED, "debug exit (KVM_EXIT_DEBUG) while not single-stepping, DR6 0x%llx",
			   (unsigned long long)run->debug.arch.dr6);
		break;
	default:
		fatal_exit(v, VMM_EXIT_UNHANDLED, "exit reason %u, which this vmm does not handle",
			   reason);
		break;
	}
}
