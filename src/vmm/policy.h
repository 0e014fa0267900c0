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

struct host_info;

enum split_lock_policy {
	SPLIT_LOCK_INHERIT,
	SPLIT_LOCK_ON,
	SPLIT_LOCK_OFF,
	SPLIT_LOCK_EMULATE,  /* detect split locks in software, on any host */
};

const char *split_lock_policy_name(enum split_lock_policy p);
/* 0 and *out set when s names a policy, -1 otherwise. */
int split_lock_policy_parse(const char *s, enum split_lock_policy *out);

struct split_lock_decision {
	bool start;          /* false: refuse to start (VMM_EXIT_POLICY) */
	bool enumerate;      /* CORE_CAPABILITIES bit 5, TEST_CTRL bit 29 */
	char line[512];      /* one line for a person: policy, outcome, why */
};

void split_lock_decide(enum split_lock_policy p, const struct host_info *hi,
		       struct split_lock_decision *d);

#endif
