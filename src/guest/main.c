/* SPDX-License-Identifier: MIT */
#include "guest.h"

static const struct test_group *const groups[] = {
	&boot_tests,
	&exception_tests,
	&user_tests,
	&smp_tests,
	&splitlock_tests,
};

static uint64_t user_ud2(uint64_t arg)
{
	(void)arg;
	asm volatile("ud2");
	return 0;
}

/*
 * "selftest.crash=ud" / "selftest.crash=user-ud": an exception that no
 * ASM_TRY covers, so that the bail-out path can be seen working.
 */
static void maybe_crash(void)
{
	char how[16];

	if (!cmdline_value("selftest.crash", how, sizeof(how)))
		return;
	if (!strcmp(how, "user-ud"))
		run_user(user_ud2, 0, 0);
	if (!strcmp(how, "ud"))
		asm volatile("ud2");
	tap_diag("selftest.crash=%s: unknown, ignored", how);
}

int guest_main(const struct boot_info *bi)
{
	if (cmdline_has("bench"))
		return bench_main(bi);
	if (hostile_selected())
		return hostile_main(bi);
	maybe_crash();
	for (size_t g = 0; g < ARRAY_SIZE(groups); g++) {
		tap_diag("%s", groups[g]->name);
		for (size_t t = 0; t < groups[g]->count; t++)
			groups[g]->tests[t].run(bi);
	}
	return tap_done();
}

void guest_ap_main(const struct boot_info *bi)
{
	/* Halt at once: a spinning AP would compete with vCPU 0 for host CPU. */
	if (cmdline_has("bench"))
		return;
	if (hostile_selected()) {
		hostile_ap_main(bi);
		return;
	}
	smp_ap_checkin(bi);
	splitlock_ap(bi);
}
