/* SPDX-License-Identifier: MIT */
/* Per-vCPU counters for --stats. */
#ifndef VMM_STATS_H
#define VMM_STATS_H

#include <stdint.h>
#include <stdio.h>

#define STATS_EXIT_REASONS 64    /* KVM exit reasons below this are counted by number */

enum stats_msr {
	STATS_MSR_TEST_CTRL,
	STATS_MSR_CORE_CAPABILITIES,
	STATS_MSR_COUNT,
};

struct stats {
	uint64_t exits[STATS_EXIT_REASONS + 1];   /* last: any higher reason */
	uint64_t msr_reads[STATS_MSR_COUNT];
	uint64_t msr_writes[STATS_MSR_COUNT];
	uint64_t gp_injected;
	uint64_t ac_injected;
	uint64_t split_lock_stops;
	uint64_t split_locks_detected;   /* by --split-lock=emulate's check */
	uint64_t split_locks_emulated;
	uint64_t split_lock_delays;      /* waits for --split-lock-ratelimit */
	uint64_t split_lock_delay_ns;
	uint64_t single_steps;
	uint64_t db_reinjected;          /* #DB that were the guest's own, handed back */
	uint64_t faults_delivered;       /* foreseen faults emulate delivered itself (no breakpoints) */
	uint64_t unchecked_runs;         /* guest code ran without the check: each at least one instruction */
	uint64_t rtm_aborts;             /* XBEGINs emulate performed as an immediate abort */
	uint64_t irets_performed;        /* IRETQs at CPL0 emulate performed itself */
	uint64_t sigbus;
};

static inline void stats_count_exit(struct stats *s, uint32_t reason)
{
	s->exits[reason < STATS_EXIT_REASONS ? reason : STATS_EXIT_REASONS]++;
}

/* One vCPU's counters as a JSON object (vm_print_stats prints them all). */
void stats_print_vcpu_json(FILE *out, unsigned index, const struct stats *s);

#endif
