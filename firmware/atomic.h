/* SPDX-License-Identifier: MIT */
/* Sequentially consistent unless a name says otherwise; vCPUs share RAM. */
#ifndef FW_ATOMIC_H
#define FW_ATOMIC_H

#include <stdbool.h>
#include <stdint.h>

#include "processor.h"

#define atomic_load(p)          __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define atomic_store(p, v)      __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define atomic_load_acquire(p)  __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define atomic_store_release(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define atomic_fetch_add(p, v)  __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)
#define atomic_fetch_or(p, v)   __atomic_fetch_or((p), (v), __ATOMIC_SEQ_CST)
#define atomic_xchg(p, v)       __atomic_exchange_n((p), (v), __ATOMIC_SEQ_CST)

struct spinlock {
	uint32_t locked;
};

static inline void spin_lock(struct spinlock *l)
{
	while (__atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&l->locked, __ATOMIC_RELAXED))
			cpu_relax();
}

static inline void spin_unlock(struct spinlock *l)
{
	__atomic_store_n(&l->locked, 0, __ATOMIC_RELEASE);
}

/*
 * Waits until *p == want or max_spins pauses have passed. CPL0 loops cost
 * about 2 us per iteration on the project's hosts, so size max_spins in
 * those units. Returns whether the value was seen.
 */
static inline bool spin_wait_eq32(const uint32_t *p, uint32_t want,
				  uint64_t max_spins)
{
	for (uint64_t i = 0; i < max_spins; i++) {
		if (__atomic_load_n(p, __ATOMIC_ACQUIRE) == want)
			return true;
		cpu_relax();
	}
	return __atomic_load_n(p, __ATOMIC_ACQUIRE) == want;
}

#endif
