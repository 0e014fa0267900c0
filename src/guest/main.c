/* SPDX-License-Identifier: MIT */
#include "guest.h"

static const struct test_group *const groups[] = {
	&boot_tests,
	&exception_tests,
	&user_tests,
	&smp_tests,
	&splitlock_tests,
	&percpu_tests,
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

/*
 * "selftest.only=NAME[,NAME...]": only the tests of those names, of any
 * group, in the usual order (the e2e suite's fast per-vCPU run). Without
 * it, every test.
 */
static bool selected(const char *only, const char *name)
{
	size_t n = strlen(name);

	if (!*only)
		return true;
	for (const char *p = only; *p; p++) {
		if ((p == only || p[-1] == ',') && !strncmp(p, name, n) && (p[n] == ',' || !p[n]))
			return true;
	}
	return false;
}

static void run_group(const struct test_group *g, const char *only, const struct boot_info *bi)
{
	bool named = false;

	for (size_t t = 0; t < g->count; t++) {
		if (!selected(only, g->tests[t].name))
			continue;
		if (!named)
			tap_diag("%s", g->name);
		named = true;
		g->tests[t].run(bi);
	}
}

int guest_main(const struct boot_info *bi)
{
	char only[BOOT_CMDLINE_MAX] = "";

	if (cmdline_has("bench"))
		return bench_main(bi);
	if (hostile_selected())
		return hostile_main(bi);
	maybe_crash();
	cmdline_value("selftest.only", only, sizeof(only));
	for (size_t g = 0; g < ARRAY_SIZE(groups); g++)
		run_group(groups[g], only, bi);
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
	percpu_ap_main(bi);
}
