/* SPDX-License-Identifier: MIT */
#include "ratelimit.h"

#define NSEC 1000000000ull

void ratelimit_init(struct ratelimit *rl, uint64_t per_second, uint64_t burst)
{
	*rl = (struct ratelimit){ .per_second = per_second };
	if (per_second)
		rl->burst_ns = (burst ? burst : 1) * (NSEC / per_second);
}

static uint64_t cost(const struct ratelimit *rl)
{
	uint64_t c = NSEC / rl->per_second;

	return c ? c : 1;
}

static void refill(struct ratelimit *rl, uint64_t now_ns)
{
	if (!rl->started) {
		rl->started = true;
		rl->credit_ns = rl->burst_ns;
		rl->last_ns = now_ns;
		return;
	}
	/* last_ns may lie ahead: a caller that was told to wait paid for it. */
	if (now_ns > rl->last_ns) {
		uint64_t room = rl->burst_ns - rl->credit_ns;
		uint64_t gained = now_ns - rl->last_ns;

		rl->credit_ns += gained < room ? gained : room;
		rl->last_ns = now_ns;
	}
}

uint64_t ratelimit_delay(struct ratelimit *rl, uint64_t now_ns)
{
	uint64_t c, wait;

	if (!rl->per_second)
		return 0;
	refill(rl, now_ns);
	c = cost(rl);
	if (rl->credit_ns >= c) {
		rl->credit_ns -= c;
		return 0;
	}
	wait = c - rl->credit_ns;
	rl->credit_ns = 0;
	if (rl->last_ns < now_ns)
		rl->last_ns = now_ns;
	rl->last_ns += wait;
	return rl->last_ns - now_ns;
}

bool ratelimit_allow(struct ratelimit *rl, uint64_t now_ns)
{
	if (!rl->per_second)
		return true;
	refill(rl, now_ns);
	if (rl->credit_ns < cost(rl))
		return false;
	rl->credit_ns -= cost(rl);
	return true;
}

uint64_t ratelimit_waited(uint64_t start_ns, uint64_t deadline_ns, uint64_t end_ns)
{
	uint64_t end = end_ns < deadline_ns ? end_ns : deadline_ns;

	return end > start_ns ? end - start_ns : 0;
}
