/* SPDX-License-Identifier: MIT */
#include "policy.h"

#include <string.h>

static const char *const names[] = {
	[SPLIT_LOCK_INHERIT] = "inherit",
	[SPLIT_LOCK_ON] = "on",
	[SPLIT_LOCK_OFF] = "off",
};

const char *split_lock_policy_name(enum split_lock_policy p)
{
	if ((unsigned)p < sizeof(names) / sizeof(names[0]))
		return names[p];
	return "?";
}

int split_lock_policy_parse(const char *s, enum split_lock_policy *out)
{
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(s, names[i]) == 0) {
			*out = (enum split_lock_policy)i;
			return 0;
		}
	}
	return -1;
}
