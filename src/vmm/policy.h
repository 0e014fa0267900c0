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

struct hostinfo;

enum policy {
	POLICY_INHERIT,
	POLICY_ON,
	POLICY_OFF,
	POLICY_EMULATE,  /* detect split locks in software, on any host */
};

const char *policy_name(enum policy p);
/* 0 and *out set when s names a policy, -1 otherwise. */
int policy_parse(const char *s, enum policy *out);

struct policy_decision {
	bool start;          /* false: refuse to start (VMM_EXIT_POLICY) */
	bool enumerate;      /* CORE_CAPABILITIES bit 5, TEST_CTRL bit 29 */
	char line[512];      /* one line for a person: policy, outcome, why */
};

void policy_decide(enum policy p, const struct hostinfo *hi,
		       struct policy_decision *d);

#endif
