/* SPDX-License-Identifier: MIT */
/* The console's escapes: Ctrl-A x stops, Ctrl-A Ctrl-A is one Ctrl-A, the rest passes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "console.h"

static struct console c;

static int setup(void **state)
{
	(void)state;
	console_init(&c, 0);
	return 0;
}

/* Filters `in`; the bytes that pass in *out, *quit as the filter sets it. */
static size_t filter(const char *in, size_t n, char *out, bool *quit)
{
	return console_filter(&c, (const uint8_t *)in, n, (uint8_t *)out, quit);
}

static void plain_bytes_pass(void **state)
{
	char out[16];
	bool quit;

	(void)state;
	assert_int_equal(filter("ls\r\x03", 4, out, &quit), 4);
	assert_memory_equal(out, "ls\r\x03", 4);
	assert_false(quit);
}

static void ctrl_a_x_quits(void **state)
{
	char out[16];
	bool quit;

	(void)state;
	assert_int_equal(filter("ab\x01xcd", 6, out, &quit), 2);
	assert_memory_equal(out, "ab", 2);
	assert_true(quit);
}

static void ctrl_a_twice_sends_one(void **state)
{
	char out[16];
	bool quit;

	(void)state;
	assert_int_equal(filter("\x01\x01z", 3, out, &quit), 2);
	assert_memory_equal(out, "\x01z", 2);
	assert_false(quit);
}

/* Ctrl-A then another key: both go to the guest. */
static void ctrl_a_other_passes_both(void **state)
{
	char out[16];
	bool quit;

	(void)state;
	assert_int_equal(filter("\x01y", 2, out, &quit), 2);
	assert_memory_equal(out, "\x01y", 2);
	assert_false(quit);
}

/* An escape split across two reads is still one escape. */
static void escape_across_reads(void **state)
{
	char out[16];
	bool quit;

	(void)state;
	assert_int_equal(filter("q\x01", 2, out, &quit), 1);
	assert_false(quit);
	assert_int_equal(filter("x", 1, out, &quit), 0);
	assert_true(quit);
	/* A held Ctrl-A comes out in front of the next read's byte: n + 1. */
	assert_int_equal(filter("\x01", 1, out, &quit), 0);
	assert_int_equal(filter("k", 1, out, &quit), 2);
	assert_memory_equal(out, "\x01k", 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(plain_bytes_pass, setup),
		cmocka_unit_test_setup(ctrl_a_x_quits, setup),
		cmocka_unit_test_setup(ctrl_a_twice_sends_one, setup),
		cmocka_unit_test_setup(ctrl_a_other_passes_both, setup),
		cmocka_unit_test_setup(escape_across_reads, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
