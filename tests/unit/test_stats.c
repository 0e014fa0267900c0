/* SPDX-License-Identifier: MIT */
/* --stats: exit reasons by name, by number or as "other", and every counter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/kvm.h>

#include "stats.h"

static char *json(unsigned index, const struct stats *s)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	stats_print_vcpu_json(f, index, s);
	assert_int_equal(fclose(f), 0);
	return text;
}

static void exits_by_name_number_and_other(void **state)
{
	struct stats s;
	char *text;

	(void)state;
	memset(&s, 0, sizeof(s));
	for (int i = 0; i < 3; i++)
		stats_count_exit(&s, KVM_EXIT_IO);
	stats_count_exit(&s, 60);			/* no name: by number */
	stats_count_exit(&s, STATS_EXIT_REASONS - 1);
	stats_count_exit(&s, STATS_EXIT_REASONS);	/* the first one past: other */
	stats_count_exit(&s, 1000);
	assert_int_equal(s.exits[STATS_EXIT_REASONS], 2);
	text = json(2, &s);
	assert_non_null(strstr(text, "{\"index\":2,\"exits\":{\"io\":3,\"reason_60\":1,\"reason_63\":1,"
				     "\"other\":2},\"msr\":"));
	free(text);
}

/* Every reason below STATS_EXIT_REASONS once: each listed once, by name or number. */
static void every_reason_listed(void **state)
{
	struct stats s;
	char *text, *p, *end;
	unsigned n = 0;

	(void)state;
	memset(&s, 0, sizeof(s));
	for (uint32_t r = 0; r < STATS_EXIT_REASONS; r++)
		stats_count_exit(&s, r);
	text = json(0, &s);
	end = strstr(text, "},\"msr\"");
	assert_non_null(end);
	for (p = text; (p = strstr(p, "\":1")) && p < end; p++)
		n++;
	assert_int_equal(n, STATS_EXIT_REASONS);
	assert_non_null(strstr(text, "\"x86_bus_lock\":1,"));
	assert_non_null(strstr(text, "\"reason_63\":1}"));
	free(text);
}

static void every_counter(void **state)
{
	struct stats s;
	char *text;

	(void)state;
	memset(&s, 0, sizeof(s));
	s.msr_reads[STATS_MSR_TEST_CTRL] = 1;
	s.msr_writes[STATS_MSR_TEST_CTRL] = 2;
	s.msr_reads[STATS_MSR_CORE_CAPABILITIES] = 3;
	s.msr_writes[STATS_MSR_CORE_CAPABILITIES] = 4;
	s.gp_injected = 5;
	s.ac_injected = 6;
	s.split_lock_stops = 7;
	s.sigbus = 8;
	s.split_locks_detected = 9;
	s.split_locks_emulated = 10;
	s.split_lock_delays = 11;
	s.split_lock_delay_ns = 12;
	s.single_steps = 13;
	s.db_reinjected = 14;
	s.faults_delivered = 15;
	s.rtm_aborts = 17;
	s.irets_performed = 18;
	s.gap_locked_rmw = 19;
	s.gap_soft_int = 20;
	s.gap_faults = 21;
	/* Each reason its own count; unchecked_runs their sum. */
	for (unsigned why = 0; why < STATS_UNCHECKED_COUNT; why++)
		stats_unchecked(&s, why, why % 5 + 1);
	text = json(0, &s);
	assert_string_equal(text,
		"{\"index\":0,\"exits\":{},\"msr\":{\"test_ctrl\":{\"reads\":1,\"writes\":2},"
		"\"core_capabilities\":{\"reads\":3,\"writes\":4}},\"gp_injected\":5,\"ac_injected\":6,"
		"\"split_lock_stops\":7,\"sigbus\":8,\"split_locks_detected\":9,\"split_locks_emulated\":10,"
		"\"split_lock_delays\":11,\"split_lock_delay_ns\":12,\"single_steps\":13,"
		"\"db_reinjected\":14,\"faults_delivered\":15,\"unchecked_runs\":31,\"rtm_aborts\":17,\"irets_performed\":18,"
		"\"gap_locked_rmw\":19,\"gap_soft_int\":20,\"gap_faults\":21,"
		"\"unchecked\":{\"escaped\":1,\"handler_unknown\":2,\"watch_missed\":3,\"frame_unfixed\":4,"
		"\"task_switch\":5,\"iret_trap_lost\":1,\"tf_lost\":2,\"left_split\":3,\"shadowed\":4,"
		"\"outer\":5,\"task_gate\":1}}");
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(exits_by_name_number_and_other),
		cmocka_unit_test(every_reason_listed),
		cmocka_unit_test(every_counter),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
