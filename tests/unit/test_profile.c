/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "profile.h"
#include "array_size.h"

static const struct host_profile able = {
	.step_cpl3 = true, .step_hwbp = true, .guest_databp = true, .exec_bp_beside_step = true,
	.cmpxchg16b_cpl0 = true, .soft_int_cpl0 = true, .xsave_cpl0 = true,
	.kernel_insns_cpl0 = true,
};

/* Each name forces its entry, and only its entry, the quirky way. */
static void each_quirk_forces_one_entry(void **state)
{
	static const struct {
		const char *name;
		size_t entry;   /* offsetof the bool it flips */
	} cases[] = {
		{ "no-cpl3-step", offsetof(struct host_profile, step_cpl3) },
		{ "no-hw-breakpoints", offsetof(struct host_profile, step_hwbp) },
		{ "no-guest-data-breakpoints", offsetof(struct host_profile, guest_databp) },
		{ "no-exec-breakpoint-beside-step",
		  offsetof(struct host_profile, exec_bp_beside_step) },
		{ "iret-step-lost", offsetof(struct host_profile, iret_step_lost) },
		{ "no-cmpxchg16b-cpl0", offsetof(struct host_profile, cmpxchg16b_cpl0) },
		{ "no-soft-int-cpl0", offsetof(struct host_profile, soft_int_cpl0) },
		{ "no-xsave-cpl0", offsetof(struct host_profile, xsave_cpl0) },
		{ "no-kernel-insns-cpl0", offsetof(struct host_profile, kernel_insns_cpl0) },
	};
	char err[256], names[256];

	(void)state;
	profile_quirk_names(names, sizeof(names));
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct host_profile p = able, want = able;
		unsigned quirks;

		assert_int_equal(profile_parse_quirks(cases[i].name, &quirks, err, sizeof(err)), 0);
		profile_force_quirks(&p, quirks);
		*((bool *)&want + cases[i].entry) = !*((bool *)&able + cases[i].entry);
		assert_memory_equal(&p, &want, sizeof(p));
		assert_non_null(strstr(names, cases[i].name));
	}
}

/* Forcing only ever takes the quirky side: a quirky host stays quirky. */
static void forcing_never_repairs(void **state)
{
	struct host_profile quirky = { .iret_step_lost = true }, p = quirky;
	unsigned quirks;
	char err[64];

	(void)state;
	assert_int_equal(profile_parse_quirks("no-cpl3-step,no-hw-breakpoints,no-guest-data-breakpoints,"
					      "no-exec-breakpoint-beside-step,iret-step-lost,"
					      "no-cmpxchg16b-cpl0,no-soft-int-cpl0,no-xsave-cpl0",
					      &quirks, err, sizeof(err)), 0);
	profile_force_quirks(&p, quirks);
	assert_memory_equal(&p, &quirky, sizeof(p));
	p = able;
	profile_force_quirks(&p, 0);
	assert_memory_equal(&p, &able, sizeof(p));
}

static void bad_lists(void **state)
{
	static const char *const bad[] = { "", ",", "no-cpl3-step,", "No-cpl3-step",
					   "no-cpl3-step-x", "no-cpl3" };
	char err[256];
	unsigned quirks;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		assert_int_equal(profile_parse_quirks(bad[i], &quirks, err, sizeof(err)), -1);
		assert_non_null(strstr(err, "is not one of no-cpl3-step, no-hw-breakpoints, "));
	}
	/* The message fits a short buffer, truncated, never overrun. */
	assert_int_equal(profile_parse_quirks("x", &quirks, err, 8), -1);
	assert_int_equal(strlen(err), 7);
}

/* Linux is blocked exactly where KVM cannot run at CPL0 what vmm cannot complete. */
static void linux_blocker(void **state)
{
	struct host_profile p = able;
	unsigned quirks;
	char err[64];

	(void)state;
	assert_null(profile_linux_blocker(&p));
	p.cmpxchg16b_cpl0 = p.soft_int_cpl0 = false;	/* the VMM completes those */
	assert_null(profile_linux_blocker(&p));
	p = able;
	assert_int_equal(profile_parse_quirks("no-xsave-cpl0", &quirks, err, sizeof(err)), 0);
	profile_force_quirks(&p, quirks);
	assert_string_equal(profile_linux_blocker(&p), "XSAVE and XRSTOR");
	p = able;
	assert_int_equal(profile_parse_quirks("no-kernel-insns-cpl0", &quirks, err, sizeof(err)), 0);
	profile_force_quirks(&p, quirks);
	assert_string_equal(profile_linux_blocker(&p), "POPCNT, FWAIT or CLAC");
	p.xsave_cpl0 = false;
	assert_string_equal(profile_linux_blocker(&p), "POPCNT, FWAIT or CLAC");
}

/* --stats' host_profile names every entry. */
static void json_names_every_entry(void **state)
{
	struct host_profile p = able;
	char buf[512] = "";
	FILE *f = fmemopen(buf, sizeof(buf) - 1, "w");

	(void)state;
	assert_non_null(f);
	p.xsave_cpl0 = false;
	profile_print_json(f, &p);
	fclose(f);
	assert_string_equal(buf, "{\"step_cpl3\":true,\"step_hwbp\":true,\"guest_databp\":true,"
			    "\"exec_bp_beside_step\":true,\"iret_step_lost\":false,"
			    "\"cmpxchg16b_cpl0\":true,\"soft_int_cpl0\":true,\"xsave_cpl0\":false,\"kernel_insns_cpl0\":true}");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(each_quirk_forces_one_entry),
		cmocka_unit_test(forcing_never_repairs),
		cmocka_unit_test(bad_lists),
		cmocka_unit_test(linux_blocker),
		cmocka_unit_test(json_names_every_entry),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
