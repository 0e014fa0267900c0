/* SPDX-License-Identifier: MIT */
#include "policy.h"

#include <stdio.h>
#include <string.h>

#include "hostinfo.h"
#include "array_size.h"
#include "vmm_msr.h"

static const char *const names[] = {
	[POLICY_INHERIT] = "inherit",
	[POLICY_ON] = "on",
	[POLICY_OFF] = "off",
	[POLICY_EMULATE] = "emulate",
};

const char *policy_name(enum policy p)
{
	if ((unsigned)p < ARRAY_SIZE(names))
		return names[p];
	return "?";
}

int policy_parse(const char *s, enum policy *out)
{
	for (unsigned i = 0; i < ARRAY_SIZE(names); i++) {
		if (strcmp(s, names[i]) == 0) {
			*out = (enum policy)i;
			return 0;
		}
	}
	return -1;
}

static const char *const watch_names[] = {
	[SPLIT_LOCK_WATCH_ARMED] = "armed",
	[SPLIT_LOCK_WATCH_ALL] = "all",
};

const char *policy_watch_name(enum split_lock_watch w)
{
	if ((unsigned)w < ARRAY_SIZE(watch_names))
		return watch_names[w];
	return "?";
}

int policy_watch_parse(const char *s, enum split_lock_watch *out)
{
	for (unsigned i = 0; i < ARRAY_SIZE(watch_names); i++) {
		if (strcmp(s, watch_names[i]) == 0) {
			*out = (enum split_lock_watch)i;
			return 0;
		}
	}
	return -1;
}

bool policy_watches(enum split_lock_watch w, uint64_t test_ctrl)
{
	return w == SPLIT_LOCK_WATCH_ALL || (test_ctrl & TEST_CTRL_SPLIT_LOCK_DETECT);
}

static void host_reason(const struct hostinfo *hi, char *buf, size_t len)
{
	switch (hi->mode) {
	case HOSTINFO_MODE_NONE:
		snprintf(buf, len, "the host CPU has no split-lock detection (no split_lock_detect flag in /proc/cpuinfo)");
		break;
	case HOSTINFO_MODE_OFF:
		snprintf(buf, len, "the host kernel runs split_lock_detect=off");
		break;
	case HOSTINFO_MODE_WARN:
		snprintf(buf, len, "the host kernel runs split_lock_detect=warn%s, so KVM lets guest split locks through without telling the VMM",
			 hi->cmdline_has_sld && !hi->cmdline_malformed ? "" : " (the default)");
		break;
	case HOSTINFO_MODE_RATELIMIT:
		snprintf(buf, len, "the host kernel runs split_lock_detect=ratelimit:%u, which throttles split locks instead of reporting them",
			 hi->ratelimit);
		break;
	case HOSTINFO_MODE_FATAL:
		snprintf(buf, len, "the host kernel runs split_lock_detect=fatal, so KVM reports every guest split lock to the VMM");
		break;
	}
}

void policy_decide(enum policy p, enum split_lock_watch w, const struct hostinfo *hi,
		   struct policy_decision *d)
{
	char why[256];
	bool deliver = hostinfo_can_deliver_ac(hi);

	host_reason(hi, why, sizeof(why));
	d->start = true;
	switch (p) {
	case POLICY_OFF:
		d->enumerate = false;
		snprintf(d->line, sizeof(d->line),
			 "split-lock detection: off, not enumerated to the guest (as asked)");
		return;
	case POLICY_ON:
		d->enumerate = deliver;
		d->start = deliver;
		if (!deliver) {
			snprintf(d->line, sizeof(d->line),
				 "--split-lock=on cannot be honoured: %s; boot the host with split_lock_detect=fatal, or use --split-lock=emulate (software detection, slow), inherit or off",
				 why);
			return;
		}
		break;
	case POLICY_INHERIT:
		d->enumerate = deliver;
		break;
	case POLICY_EMULATE:
		/* The VMM behaves like a fatal host itself, whatever the host is. */
		d->enumerate = true;
		if (w == SPLIT_LOCK_WATCH_ALL)
			snprintf(d->line, sizeof(d->line),
				 "split-lock detection: emulate, enumerated to the guest: the VMM single-steps every vCPU and checks each instruction (--split-lock-watch=all; slow, several microseconds each)");
		else
			snprintf(d->line, sizeof(d->line),
				 "split-lock detection: emulate, enumerated to the guest: the VMM single-steps a vCPU while its guest asks for #AC (TEST_CTRL bit 29) and checks each instruction (slow, several microseconds each); the others run at full speed");
		return;
	}
	snprintf(d->line, sizeof(d->line), "split-lock detection: %s, %s: %s",
		 policy_name(p),
		 d->enumerate ? "enumerated to the guest" : "not enumerated", why);
}
