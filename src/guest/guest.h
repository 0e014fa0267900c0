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
extern const struct test_group percpu_tests;

/* test_smp.c: what each AP does. */
void smp_ap_checkin(const struct boot_info *bi);

/*
 * test_splitlock.c: whether CORE_CAPABILITIES enumerates split-lock
 * detection (read once), the split locks made (printed by
 * splitlock_count_made as split_locks_made.cpl0= and .cpl3=).
 */
bool splitlock_enumerated(void);
void splitlock_made_cpl0(unsigned n);
void splitlock_count_made(const struct boot_info *bi);

/*
 * test_percpu.c: vCPUs 1 to PERCPU_MAX_APS run requests of vCPU 0 on their
 * own MSRs (percpu_ap_main) until ap_release(); ap_call() posts one to the
 * APs in mask (bit i: vCPU i) and waits, false if one did not answer.
 */
#define PERCPU_MAX_APS 3u

enum ap_op {
	AP_OP_READ,        /* TEST_CTRL into value */
	AP_OP_WRITE,       /* arg into TEST_CTRL */
	AP_OP_CORE_CAPS,   /* IA32_CORE_CAPABILITIES into value */
	AP_OP_RESERVED,    /* bad: reserved bits that did not #GP or changed the value */
	AP_OP_SPLIT_LOCK,  /* LOCK INC across a line seeded with arg: memory after into value */
};

struct ap_reply {
	int vector;        /* EXC_NONE or the fault's vector */
	uint32_t bad;
	uint64_t value;
};

void percpu_ap_main(const struct boot_info *bi);
unsigned percpu_aps(const struct boot_info *bi);
uint64_t percpu_mask(unsigned aps);
bool ap_call(enum ap_op op, uint64_t arg, uint64_t mask);
const struct ap_reply *ap_reply(unsigned cpu);
/* How many APs in mask did not answer with `vector` and `want`. */
unsigned ap_replies_not(uint64_t mask, int vector, uint64_t want);
void ap_release(void);

/* bench.c: "--append bench" runs this on vCPU 0 instead of the tests. */
int bench_main(const struct boot_info *bi);

/*
 * hostile.c: "--append hostile=MODE" makes every vCPU misbehave in one way
 * instead of running the tests (see docs/testing.md, "Hostile guests").
 */
bool hostile_selected(void);
int hostile_main(const struct boot_info *bi);
void hostile_ap_main(const struct boot_info *bi);

#endif
