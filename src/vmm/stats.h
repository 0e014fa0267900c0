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

/*
 * Why guest code ran without --split-lock=emulate's check: each way the
 * engine gives detection up is one of these, counted by stats_unchecked().
 */
enum stats_unchecked {
	STATS_UNCHECKED_ESCAPED,        /* a handler the CPU entered by itself ran unwatched */
	STATS_UNCHECKED_HANDLER_UNKNOWN, /* the handler of an event could not be found */
	STATS_UNCHECKED_WATCH_MISSED,   /* the watched handler or return address was not reached */
	STATS_UNCHECKED_FRAME_UNFIXED,  /* a frame holding the VMM's TF could not be fixed */
	STATS_UNCHECKED_TASK_SWITCH,    /* a task switch's TSS images could not be read or fixed */
	STATS_UNCHECKED_IRET_TRAP_LOST, /* KVM ran an IRETQ and the next instruction in one step */
	STATS_UNCHECKED_TF_LOST,        /* KVM dropped the step's TF: the guest ran on to an exit */
	STATS_UNCHECKED_LEFT_SPLIT,     /* a split lock left to the CPU to fault on completed */
	STATS_UNCHECKED_SHADOWED,       /* the instruction behind MOV SS, POP SS or STI */
	STATS_UNCHECKED_OUTER,          /* code outside CPL0 where this KVM cannot step it */
	STATS_UNCHECKED_TASK_GATE,      /* INT n through a task gate, up to the next exit */
	STATS_UNCHECKED_COUNT,
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
	uint64_t unchecked[STATS_UNCHECKED_COUNT];   /* unchecked_runs by why */
	uint64_t rtm_aborts;             /* XBEGINs emulate performed as an immediate abort */
	uint64_t irets_performed;        /* IRETQs at CPL0 emulate performed itself */
	uint64_t sigbus;
	/* KVM_EXIT_INTERNAL_ERROR where KVM's emulator cannot run it at CPL0 (gap.c): */
	uint64_t gap_locked_rmw;         /* locked RMWs (CMPXCHG16B) the VMM completed */
	uint64_t gap_soft_int;           /* INT3, INT n, INTO, INT1 the VMM delivered */
	uint64_t gap_faults;             /* the faults the CPU raises instead, injected */
};

static inline void stats_count_exit(struct stats *s, uint32_t reason)
{
	s->exits[reason < STATS_EXIT_REASONS ? reason : STATS_EXIT_REASONS]++;
}

/* n more runs of guest code without the check, for this reason. */
static inline void stats_unchecked(struct stats *s, enum stats_unchecked why, uint64_t n)
{
	s->unchecked_runs += n;
	s->unchecked[why] += n;
}

/* One vCPU's counters as a JSON object (vm_print_stats prints them all). */
void stats_print_vcpu_json(FILE *out, unsigned index, const struct stats *s);

#endif
