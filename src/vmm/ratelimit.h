/* SPDX-License-Identifier: MIT */
/*
 * A token bucket in nanoseconds of credit, as pure code: the clock is an
 * argument, so tests need no sleeping.
 */
#ifndef VMM_RATELIMIT_H
#define VMM_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

struct ratelimit {
	uint64_t per_second;     /* 0: unlimited */
	uint64_t burst_ns;       /* most credit that can build up */
	uint64_t credit_ns;
	uint64_t last_ns;
	bool started;
};

/* `per_second` events a second, with up to `burst` of them at once. */
void ratelimit_init(struct ratelimit *rl, uint64_t per_second, uint64_t burst);
/*
 * Takes one event at time now_ns; returns how long the caller must wait
 * before it happens (0: at once). The wait is already paid for: the next
 * caller queues behind it.
 */
uint64_t ratelimit_delay(struct ratelimit *rl, uint64_t now_ns);
/*
 * Of a wait from start_ns until end_ns for a deadline: the part the
 * ratelimit imposed. Ended early (the VM stopped): what was waited. Ended
 * late (a pause held the waiter): no more than the deadline asked.
 */
uint64_t ratelimit_waited(uint64_t start_ns, uint64_t deadline_ns, uint64_t end_ns);
/* Takes one event if one is allowed now; never asks anyone to wait. */
bool ratelimit_allow(struct ratelimit *rl, uint64_t now_ns);

#endif
