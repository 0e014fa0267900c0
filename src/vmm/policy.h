/* SPDX-License-Identifier: MIT */
/* Split-lock policy of one VM: names and parsing. */
#ifndef VMM_POLICY_H
#define VMM_POLICY_H

enum split_lock_policy {
	SPLIT_LOCK_INHERIT,
	SPLIT_LOCK_ON,
	SPLIT_LOCK_OFF,
};

const char *split_lock_policy_name(enum split_lock_policy p);
/* 0 and *out set when s names a policy, -1 otherwise. */
int split_lock_policy_parse(const char *s, enum split_lock_policy *out);

#endif
