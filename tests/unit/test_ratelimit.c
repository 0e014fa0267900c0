/* SPDX-License-Identifier: MIT */
/* The token bucket behind --split-lock-ratelimit, on a clock we drive. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ratelimit.h"

#define MS 1000000ull
#define SEC 1000000000ull

static void unlimited(void **state)
{
	struct ratelimit rl;

	(void)state;
	ratelimit_init(&rl, 0, 0);
	for (int i = 0; i < 1000; i++) {
		assert_int_equal(ratelimit_delay(&rl, 5), 0);
		assert_true(ratelimit_allow(&rl, 5));
	}
}

static void burst_then_queue(void **state)
{
	struct ratelimit rl;
	uint64_t t = 10 * SEC;

	(void)state;
	ratelimit_init(&rl, 10, 10);            /* 10 a second, 100 ms apart */
	for (int i = 0; i < 10; i++)
		assert_int_equal(ratelimit_delay(&rl, t), 0);
	/* The bucket is empty: each further event waits one more slot. */
	assert_int_equal(ratelimit_delay(&rl, t), 100 * MS);
	assert_int_equal(ratelimit_delay(&rl, t), 200 * MS);
	assert_int_equal(ratelimit_delay(&rl, t + 50 * MS), 250 * MS);
	/* Once the queue has drained and time passed, credit is back. */
	t += 2 * SEC;
	for (int i = 0; i < 10; i++)
		assert_int_equal(ratelimit_delay(&rl, t), 0);
	assert_true(ratelimit_delay(&rl, t) > 0);
}

static void steady_rate(void **state)
{
	struct ratelimit rl;
	uint64_t t = 0, waited = 0;

	(void)state;
	ratelimit_init(&rl, 100, 1);
	/* 1000 events as fast as allowed take 10 s of clock, less one burst. */
	for (int i = 0; i < 1000; i++) {
		uint64_t d = ratelimit_delay(&rl, t);

		waited += d;
		t += d;
	}
	assert_int_equal(t, 999 * 10 * MS);
	assert_int_equal(waited, t);
}

static void allow_does_not_queue(void **state)
{
	struct ratelimit rl;
	uint64_t t = SEC;

	(void)state;
	ratelimit_init(&rl, 1, 5);              /* warnings: 1 a second, 5 at once */
	for (int i = 0; i < 5; i++)
		assert_true(ratelimit_allow(&rl, t));
	assert_false(ratelimit_allow(&rl, t));
	assert_false(ratelimit_allow(&rl, t + 999 * MS));
	assert_true(ratelimit_allow(&rl, t + SEC));
	assert_false(ratelimit_allow(&rl, t + SEC));
	/* Credit never exceeds the burst, however long the pause. */
	t += 3600 * SEC;
	for (int i = 0; i < 5; i++)
		assert_true(ratelimit_allow(&rl, t));
	assert_false(ratelimit_allow(&rl, t));
}

static void waited_is_what_the_ratelimit_imposed(void **state)
{
	(void)state;
	/* A wait that ran to its deadline. */
	assert_int_equal(ratelimit_waited(10 * SEC, 11 * SEC, 11 * SEC), SEC);
	/* Cut short by a stop: only what passed. */
	assert_int_equal(ratelimit_waited(10 * SEC, 12 * SEC, 10 * SEC + 300 * MS), 300 * MS);
	/* Held past the deadline by another vCPU's pause: that is not the ratelimit's. */
	assert_int_equal(ratelimit_waited(10 * SEC, 11 * SEC, 15 * SEC), SEC);
	assert_int_equal(ratelimit_waited(10 * SEC, 10 * SEC, 10 * SEC), 0);
	/* A clock read before the start (cannot happen on CLOCK_MONOTONIC) is no wait. */
	assert_int_equal(ratelimit_waited(10 * SEC, 11 * SEC, 9 * SEC), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(unlimited),
		cmocka_unit_test(burst_then_queue),
		cmocka_unit_test(steady_rate),
		cmocka_unit_test(allow_does_not_queue),
		cmocka_unit_test(waited_is_what_the_ratelimit_imposed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
