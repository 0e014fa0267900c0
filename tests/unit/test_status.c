/* SPDX-License-Identifier: MIT */
/*
 * The exit-status table (include/vmm_status.h): no status of vmm's own
 * means a guest's, and those in the sysexits(3) range mean what sysexits
 * says.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sysexits.h>

#include "vmm_status.h"
#include "array_size.h"

static const struct {
	const char *name;
	int status;
	int sysexit;    /* the sysexits(3) status it must equal, 0: none */
} vmm_statuses[] = {
	{ "USAGE", VMM_EXIT_USAGE, EX_USAGE },
	{ "IMAGE", VMM_EXIT_IMAGE, EX_DATAERR },
	{ "NOINPUT", VMM_EXIT_NOINPUT, EX_NOINPUT },
	{ "HOST", VMM_EXIT_HOST, EX_UNAVAILABLE },
	{ "SOFTWARE", VMM_EXIT_SOFTWARE, EX_SOFTWARE },
	{ "CANTCREAT", VMM_EXIT_CANTCREAT, EX_CANTCREAT },
	{ "IOERR", VMM_EXIT_IOERR, EX_IOERR },
	{ "POLICY", VMM_EXIT_POLICY, EX_CONFIG },
	{ "SHUTDOWN", VMM_EXIT_SHUTDOWN, 0 },
	{ "FAIL_ENTRY", VMM_EXIT_FAIL_ENTRY, 0 },
	{ "INTERNAL", VMM_EXIT_INTERNAL, 0 },
	{ "UNHANDLED", VMM_EXIT_UNHANDLED, 0 },
	{ "HALTED", VMM_EXIT_HALTED, 0 },
	{ "TIMEOUT", VMM_EXIT_TIMEOUT, 0 },
	{ "BAD_STATUS", VMM_EXIT_BAD_STATUS, 0 },
	{ "SPLIT_LOCK", VMM_EXIT_SPLIT_LOCK, 0 },
	{ "POWEROFF", VMM_EXIT_POWEROFF, 0 },
	{ "RESET", VMM_EXIT_RESET, 0 },
	{ "ESCAPE", VMM_EXIT_ESCAPE, 0 },
};

static void apart_from_the_guests(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(vmm_statuses); i++) {
		int s = vmm_statuses[i].status;

		if (s <= GUEST_STATUS_MAX || s >= VMM_EXIT_SIGNAL_BASE)
			fail_msg("VMM_EXIT_%s is %d: inside the guest's 0-%d or the signals' 128+",
				 vmm_statuses[i].name, s, GUEST_STATUS_MAX);
		if (s == 77)
			fail_msg("VMM_EXIT_%s is 77, a test's skip", vmm_statuses[i].name);
		for (size_t j = 0; j < i; j++)
			if (vmm_statuses[j].status == s)
				fail_msg("VMM_EXIT_%s and VMM_EXIT_%s are both %d",
					 vmm_statuses[j].name, vmm_statuses[i].name, s);
	}
}

static void agree_with_sysexits(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(vmm_statuses); i++) {
		int s = vmm_statuses[i].status, want = vmm_statuses[i].sysexit;

		if (want && s != want)
			fail_msg("VMM_EXIT_%s is %d, sysexits(3) says %d", vmm_statuses[i].name, s, want);
		if (!want && s >= EX__BASE && s <= EX__MAX)
			fail_msg("VMM_EXIT_%s is %d, which sysexits(3) gives another meaning",
				 vmm_statuses[i].name, s);
		if (!want && (s < VMM_EXIT_VM_FIRST || s > VMM_EXIT_VM_LAST))
			fail_msg("VMM_EXIT_%s is %d, outside VMM_EXIT_VM_FIRST-LAST", vmm_statuses[i].name, s);
	}
	assert_int_equal(VMM_EXIT_SYSEXITS_FIRST, EX__BASE);
	assert_int_equal(VMM_EXIT_SYSEXITS_LAST, EX__MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(apart_from_the_guests),
		cmocka_unit_test(agree_with_sysexits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
