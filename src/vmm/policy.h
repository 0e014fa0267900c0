/* SPDX-License-Identifier: MIT */
/*
 * Split-lock policy of one VM. The VMM keeps the guest's TEST_CTRL virtual
 * and never writes the host MSR, so it can promise split-lock detection to a
 * guest only where it can deliver the #AC: a host whose CPU detects split
 * locks and whose kernel runs split_lock_detect=fatal, where KVM exits to
 * userspace on every guest split lock.
 */
#ifndef VMM_POLICY_H
#define VMM_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hostinfo;

enum policy {
	POLICY_INHERIT,
	POLICY_ON,
	POLICY_OFF,
	POLICY_EMULATE,  /* detect split locks in software, on any host */
};

/*
 * --split-lock-watch: which vCPUs emulate single-steps. A CPU with detection
 * off raises no #AC, so a vCPU whose guest has not set TEST_CTRL bit 29 has
 * nothing to be told; only the VMM's warnings and --split-lock-ratelimit
 * would see its split locks.
 */
enum split_lock_watch {
	SPLIT_LOCK_WATCH_ARMED,  /* a vCPU while its TEST_CTRL bit 29 is set (default) */
	SPLIT_LOCK_WATCH_ALL,    /* every vCPU, all the time: warns and ratelimits the rest */
};

const char *policy_name(enum policy p);
/* 0 and *out set when s names a policy, -1 otherwise. */
int policy_parse(const char *s, enum policy *out);

struct policy_decision {
	bool start;          /* false: refuse to start (VMM_EXIT_POLICY) */
	bool enumerate;      /* CORE_CAPABILITIES bit 5, TEST_CTRL bit 29 */
	char line[512];      /* one line for a person: policy, outcome, why */
};

void policy_decide(enum policy p, enum split_lock_watch w, const struct hostinfo *hi,
		   struct policy_decision *d);

const char *policy_watch_name(enum split_lock_watch w);
/* 0 and *out set when s names one, -1 otherwise. */
int policy_watch_parse(const char *s, enum split_lock_watch *out);
/* Under emulate: whether a vCPU whose guest's TEST_CTRL is test_ctrl is single-stepped. */
bool policy_watches(enum split_lock_watch w, uint64_t test_ctrl);

#endif
