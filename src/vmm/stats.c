/* SPDX-License-Identifier: MIT */
#include "stats.h"

#include <linux/kvm.h>

#include "array_size.h"

static const char *stats_exit_name(uint32_t reason)
{
	static const char *const names[] = {
		[KVM_EXIT_UNKNOWN] = "unknown",
		[KVM_EXIT_EXCEPTION] = "exception",
		[KVM_EXIT_IO] = "io",
		[KVM_EXIT_HYPERCALL] = "hypercall",
		[KVM_EXIT_DEBUG] = "debug",
		[KVM_EXIT_HLT] = "hlt",
		[KVM_EXIT_MMIO] = "mmio",
		[KVM_EXIT_IRQ_WINDOW_OPEN] = "irq_window_open",
		[KVM_EXIT_SHUTDOWN] = "shutdown",
		[KVM_EXIT_FAIL_ENTRY] = "fail_entry",
		[KVM_EXIT_INTR] = "intr",
		[KVM_EXIT_SET_TPR] = "set_tpr",
		[KVM_EXIT_TPR_ACCESS] = "tpr_access",
		[KVM_EXIT_NMI] = "nmi",
		[KVM_EXIT_INTERNAL_ERROR] = "internal_error",
		[KVM_EXIT_SYSTEM_EVENT] = "system_event",
		[KVM_EXIT_X86_RDMSR] = "x86_rdmsr",
		[KVM_EXIT_X86_WRMSR] = "x86_wrmsr",
		[KVM_EXIT_X86_BUS_LOCK] = "x86_bus_lock",
	};

	if (reason < ARRAY_SIZE(names) && names[reason])
		return names[reason];
	return NULL;
}

static void print_msr_counts(FILE *out, const char *name, uint64_t reads, uint64_t writes)
{
	fprintf(out, "\"%s\":{\"reads\":%llu,\"writes\":%llu}", name,
		(unsigned long long)reads, (unsigned long long)writes);
}

/* "unchecked":{"escaped":N,...}: every reason, so that a script finds each key. */
static void print_unchecked(FILE *out, const struct stats *s)
{
	static const char *const names[STATS_UNCHECKED_COUNT] = {
		[STATS_UNCHECKED_ESCAPED] = "escaped",
		[STATS_UNCHECKED_HANDLER_UNKNOWN] = "handler_unknown",
		[STATS_UNCHECKED_WATCH_MISSED] = "watch_missed",
		[STATS_UNCHECKED_FRAME_UNFIXED] = "frame_unfixed",
		[STATS_UNCHECKED_TASK_SWITCH] = "task_switch",
		[STATS_UNCHECKED_IRET_TRAP_LOST] = "iret_trap_lost",
		[STATS_UNCHECKED_TF_LOST] = "tf_lost",
		[STATS_UNCHECKED_LEFT_SPLIT] = "left_split",
		[STATS_UNCHECKED_SHADOWED] = "shadowed",
		[STATS_UNCHECKED_OUTER] = "outer",
		[STATS_UNCHECKED_TASK_GATE] = "task_gate",
	};

	fputs(",\"unchecked\":{", out);
	for (unsigned i = 0; i < STATS_UNCHECKED_COUNT; i++)
		fprintf(out, "%s\"%s\":%llu", i ? "," : "", names[i],
			(unsigned long long)s->unchecked[i]);
	fputc('}', out);
}

void stats_print_vcpu_json(FILE *out, unsigned index, const struct stats *s)
{
	const char *sep = "";

	fprintf(out, "{\"index\":%u,\"exits\":{", index);
	for (uint32_t r = 0; r <= STATS_EXIT_REASONS; r++) {
		const char *name = r < STATS_EXIT_REASONS ? stats_exit_name(r) : "other";

		if (!s->exits[r])
			continue;
		if (name)
			fprintf(out, "%s\"%s\":%llu", sep, name, (unsigned long long)s->exits[r]);
		else
			fprintf(out, "%s\"reason_%u\":%llu", sep, r, (unsigned long long)s->exits[r]);
		sep = ",";
	}
	fprintf(out, "},\"msr\":{");
	print_msr_counts(out, "test_ctrl", s->msr_reads[STATS_MSR_TEST_CTRL],
			 s->msr_writes[STATS_MSR_TEST_CTRL]);
	fputc(',', out);
	print_msr_counts(out, "core_capabilities", s->msr_reads[STATS_MSR_CORE_CAPABILITIES],
			 s->msr_writes[STATS_MSR_CORE_CAPABILITIES]);
	fprintf(out, "},\"gp_injected\":%llu,\"ac_injected\":%llu,\"split_lock_stops\":%llu,\"sigbus\":%llu",
		(unsigned long long)s->gp_injected, (unsigned long long)s->ac_injected,
		(unsigned long long)s->split_lock_stops, (unsigned long long)s->sigbus);
	fprintf(out, ",\"split_locks_detected\":%llu,\"split_locks_emulated\":%llu,\"split_lock_delays\":%llu,\"split_lock_delay_ns\":%llu,\"single_steps\":%llu,\"db_reinjected\":%llu,\"faults_delivered\":%llu,\"unchecked_runs\":%llu,\"rtm_aborts\":%llu,\"irets_performed\":%llu",
		(unsigned long long)s->split_locks_detected, (unsigned long long)s->split_locks_emulated,
		(unsigned long long)s->split_lock_delays, (unsigned long long)s->split_lock_delay_ns,
		(unsigned long long)s->single_steps, (unsigned long long)s->db_reinjected,
		(unsigned long long)s->faults_delivered, (unsigned long long)s->unchecked_runs,
		(unsigned long long)s->rtm_aborts, (unsigned long long)s->irets_performed);
	fprintf(out, ",\"gap_locked_rmw\":%llu,\"gap_soft_int\":%llu,\"gap_faults\":%llu",
		(unsigned long long)s->gap_locked_rmw, (unsigned long long)s->gap_soft_int,
		(unsigned long long)s->gap_faults);
	print_unchecked(out, s);
	fputc('}', out);
}
