/* SPDX-License-Identifier: MIT */
/* The policy table: each policy against each host mode. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "hostinfo.h"
#include "policy.h"
#include "array_size.h"
#include "vmm_msr.h"

struct row {
	enum policy policy;
	enum hostinfo_mode mode;
	bool start;
	bool enumerate;
	const char *says;
};

static const struct row table[] = {
	{ POLICY_INHERIT, HOSTINFO_MODE_NONE, true, false, "no split-lock detection" },
	{ POLICY_INHERIT, HOSTINFO_MODE_OFF, true, false, "split_lock_detect=off" },
	{ POLICY_INHERIT, HOSTINFO_MODE_WARN, true, false, "split_lock_detect=warn" },
	{ POLICY_INHERIT, HOSTINFO_MODE_RATELIMIT, true, false, "ratelimit:7" },
	{ POLICY_INHERIT, HOSTINFO_MODE_FATAL, true, true, "split_lock_detect=fatal" },
	{ POLICY_ON, HOSTINFO_MODE_NONE, false, false, "cannot be honoured" },
	{ POLICY_ON, HOSTINFO_MODE_OFF, false, false, "boot the host with split_lock_detect=fatal" },
	{ POLICY_ON, HOSTINFO_MODE_WARN, false, false, "cannot be honoured" },
	{ POLICY_ON, HOSTINFO_MODE_RATELIMIT, false, false, "cannot be honoured" },
	{ POLICY_ON, HOSTINFO_MODE_FATAL, true, true, "enumerated to the guest" },
	{ POLICY_OFF, HOSTINFO_MODE_NONE, true, false, "as asked" },
	{ POLICY_OFF, HOSTINFO_MODE_OFF, true, false, "as asked" },
	{ POLICY_OFF, HOSTINFO_MODE_WARN, true, false, "as asked" },
	{ POLICY_OFF, HOSTINFO_MODE_RATELIMIT, true, false, "as asked" },
	{ POLICY_OFF, HOSTINFO_MODE_FATAL, true, false, "as asked" },
};

static void decision_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(table); i++) {
		struct hostinfo hi;
		struct policy_decision d;

		memset(&hi, 0, sizeof(hi));
		hi.mode = table[i].mode;
		hi.sld_flag = table[i].mode != HOSTINFO_MODE_NONE;
		hi.ratelimit = 7;
		policy_decide(table[i].policy, SPLIT_LOCK_WATCH_ARMED, &hi, &d);
		if (d.start != table[i].start || d.enumerate != table[i].enumerate)
			fail_msg("row %zu (%s, mode %d): start %d enumerate %d", i,
				 policy_name(table[i].policy), table[i].mode,
				 d.start, d.enumerate);
		if (!strstr(d.line, table[i].says))
			fail_msg("row %zu: '%s' lacks '%s'", i, d.line, table[i].says);
		assert_null(strchr(d.line, '\n'));
		assert_int_equal(hostinfo_can_deliver_ac(&hi), table[i].mode == HOSTINFO_MODE_FATAL);
	}
}

static void names(void **state)
{
	enum policy p;

	(void)state;
	assert_int_equal(policy_parse("inherit", &p), 0);
	assert_int_equal(p, POLICY_INHERIT);
	assert_int_equal(policy_parse("on", &p), 0);
	assert_int_equal(p, POLICY_ON);
	assert_int_equal(policy_parse("off", &p), 0);
	assert_int_equal(p, POLICY_OFF);
	assert_int_equal(policy_parse("", &p), -1);
	assert_int_equal(policy_parse("onn", &p), -1);
	assert_string_equal(policy_name(POLICY_OFF), "off");
	assert_string_equal(policy_name(POLICY_EMULATE), "emulate");
	/* Past the table (a corrupt value): a name all the same, read from nowhere else. */
	assert_string_equal(policy_name((enum policy)(POLICY_EMULATE + 1)), "?");
}

/* Under emulate: stepped while the guest asks for #AC, or always with all. */
static void watch(void **state)
{
	struct policy_decision d;
	enum split_lock_watch w;
	struct hostinfo hi;

	(void)state;
	assert_false(policy_watches(SPLIT_LOCK_WATCH_ARMED, 0));
	assert_false(policy_watches(SPLIT_LOCK_WATCH_ARMED, ~TEST_CTRL_SPLIT_LOCK_DETECT));
	assert_true(policy_watches(SPLIT_LOCK_WATCH_ARMED, TEST_CTRL_SPLIT_LOCK_DETECT));
	assert_true(policy_watches(SPLIT_LOCK_WATCH_ALL, 0));
	assert_true(policy_watches(SPLIT_LOCK_WATCH_ALL, TEST_CTRL_SPLIT_LOCK_DETECT));
	assert_int_equal(policy_watch_parse("armed", &w), 0);
	assert_int_equal(w, SPLIT_LOCK_WATCH_ARMED);
	assert_int_equal(policy_watch_parse("all", &w), 0);
	assert_int_equal(w, SPLIT_LOCK_WATCH_ALL);
	assert_int_equal(policy_watch_parse("al", &w), -1);
	assert_string_equal(policy_watch_name(SPLIT_LOCK_WATCH_ALL), "all");
	assert_string_equal(policy_watch_name((enum split_lock_watch)2), "?");
	memset(&hi, 0, sizeof(hi));
	policy_decide(POLICY_EMULATE, SPLIT_LOCK_WATCH_ARMED, &hi, &d);
	assert_true(d.start && d.enumerate);
	assert_non_null(strstr(d.line, "while its guest asks for #AC"));
	policy_decide(POLICY_EMULATE, SPLIT_LOCK_WATCH_ALL, &hi, &d);
	assert_non_null(strstr(d.line, "single-steps every vCPU"));
}

/* warn is the kernel's default: said so unless the command line chose it. */
static void warn_default_named(void **state)
{
	static const struct {
		bool has, malformed, dflt;
	} cases[] = {
		{ false, false, true }, { true, true, true }, { true, false, false },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct hostinfo hi;
		struct policy_decision d;

		memset(&hi, 0, sizeof(hi));
		hi.mode = HOSTINFO_MODE_WARN;
		hi.sld_flag = true;
		hi.cmdline_has_sld = cases[i].has;
		hi.cmdline_malformed = cases[i].malformed;
		policy_decide(POLICY_INHERIT, SPLIT_LOCK_WATCH_ARMED, &hi, &d);
		if (!strstr(d.line, "split_lock_detect=warn") ||
		    !strstr(d.line, " (the default)") != !cases[i].dflt)
			fail_msg("case %zu: '%s'", i, d.line);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(decision_table),
		cmocka_unit_test(names),
		cmocka_unit_test(watch),
		cmocka_unit_test(warn_default_named),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
