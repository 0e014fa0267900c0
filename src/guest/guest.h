/* SPDX-License-Identifier: MIT */
/* The self-test's test registry. */
#ifndef GUEST_H
#define GUEST_H

#include "fw.h"

/* One test reports one or more TAP lines itself (tap_ok, tap_skip). */
struct guest_test {
	const char *name;
	void (*run)(const struct boot_info *bi);
};

struct test_group {
	const char *name;
	const struct guest_test *tests;
	size_t count;
};

#define TEST_GROUP(sym, group_name, array) \
	const struct test_group sym = { group_name, array, ARRAY_SIZE(array) }

/* Run by guest_main in this order; main.c has the table. */
extern const struct test_group boot_tests;
extern const struct test_group exception_tests;
extern const struct test_group user_tests;
extern const struct test_group smp_tests;
extern const struct test_group splitlock_tests;

/* test_smp.c: what each AP does. */
void smp_ap_checkin(const struct boot_info *bi);
/* test_splitlock.c: vCPU 1's part of the per-vCPU TEST_CTRL check. */
void splitlock_ap(const struct boot_info *bi);

/* bench.c: "--append bench" runs this on vCPU 0 instead of the tests. */
int bench_main(const struct boot_info *bi);

/*
 * hostile.c: "--append hostile=MODE" makes every vCPU misbehave in one way
 * instead of running the tests (see docs/reliability.md).
 */
bool hostile_selected(void);
int hostile_main(const struct boot_info *bi);
void hostile_ap_main(const struct boot_info *bi);

#endif
