/* SPDX-License-Identifier: MIT */
/*
 * --host-quirks: names to quirk bits, a probed profile forced to them, and
 * the profile as --stats shows it.
 */
#include "profile.h"

#include <stdio.h>
#include <string.h>

#include "array_size.h"

static const struct {
	const char *name;
	enum profile_quirk bit;
} quirks_table[] = {
	{ "no-cpl3-step", PROFILE_NO_CPL3_STEP },
	{ "no-hw-breakpoints", PROFILE_NO_HW_BREAKPOINTS },
	{ "no-guest-data-breakpoints", PROFILE_NO_GUEST_DATA_BREAKPOINTS },
	{ "no-exec-breakpoint-beside-step", PROFILE_NO_EXEC_BREAKPOINT_BESIDE_STEP },
	{ "iret-step-lost", PROFILE_IRET_STEP_LOST },
	{ "no-cmpxchg16b-cpl0", PROFILE_NO_CMPXCHG16B_CPL0 },
	{ "no-soft-int-cpl0", PROFILE_NO_SOFT_INT_CPL0 },
	{ "no-xsave-cpl0", PROFILE_NO_XSAVE_CPL0 },
	{ "no-kernel-insns-cpl0", PROFILE_NO_KERNEL_INSNS_CPL0 },
};

static int quirk_bit(const char *name, size_t len, unsigned *bit)
{
	for (size_t i = 0; i < ARRAY_SIZE(quirks_table); i++)
		if (strlen(quirks_table[i].name) == len &&
		    memcmp(quirks_table[i].name, name, len) == 0) {
			*bit = quirks_table[i].bit;
			return 0;
		}
	return -1;
}

int profile_parse_quirks(const char *list, unsigned *quirks, char *err, size_t errlen)
{
	const char *p = list;

	*quirks = 0;
	for (;;) {
		size_t len = strcspn(p, ",");
		unsigned bit;

		if (quirk_bit(p, len, &bit)) {
			char names[200];

			profile_quirk_names(names, sizeof(names));
			snprintf(err, errlen, "'%.*s' is not one of %s", (int)len, p, names);
			return -1;
		}
		*quirks |= bit;
		if (!p[len])
			return 0;
		p += len + 1;
	}
}

void profile_quirk_names(char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(quirks_table) && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "",
					quirks_table[i].name);
}

void profile_force_quirks(struct host_profile *p, unsigned quirks)
{
	if (quirks & PROFILE_NO_CPL3_STEP)
		p->step_cpl3 = false;
	if (quirks & PROFILE_NO_HW_BREAKPOINTS)
		p->step_hwbp = false;
	if (quirks & PROFILE_NO_GUEST_DATA_BREAKPOINTS)
		p->guest_databp = false;
	if (quirks & PROFILE_NO_EXEC_BREAKPOINT_BESIDE_STEP)
		p->exec_bp_beside_step = false;
	if (quirks & PROFILE_IRET_STEP_LOST)
		p->iret_step_lost = true;
	if (quirks & PROFILE_NO_CMPXCHG16B_CPL0)
		p->cmpxchg16b_cpl0 = false;
	if (quirks & PROFILE_NO_SOFT_INT_CPL0)
		p->soft_int_cpl0 = false;
	if (quirks & PROFILE_NO_XSAVE_CPL0)
		p->xsave_cpl0 = false;
	if (quirks & PROFILE_NO_KERNEL_INSNS_CPL0)
		p->kernel_insns_cpl0 = false;
}

void profile_print_json(FILE *out, const struct host_profile *p)
{
	fprintf(out, "{\"step_cpl3\":%s,\"step_hwbp\":%s,\"guest_databp\":%s,"
		"\"exec_bp_beside_step\":%s,\"iret_step_lost\":%s,\"cmpxchg16b_cpl0\":%s,"
		"\"soft_int_cpl0\":%s,\"xsave_cpl0\":%s,\"kernel_insns_cpl0\":%s}",
		p->step_cpl3 ? "true" : "false", p->step_hwbp ? "true" : "false",
		p->guest_databp ? "true" : "false", p->exec_bp_beside_step ? "true" : "false",
		__atomic_load_n(&p->iret_step_lost, __ATOMIC_RELAXED) ? "true" : "false",
		p->cmpxchg16b_cpl0 ? "true" : "false", p->soft_int_cpl0 ? "true" : "false",
		p->xsave_cpl0 ? "true" : "false", p->kernel_insns_cpl0 ? "true" : "false");
}

const char *profile_linux_blocker(const struct host_profile *p)
{
	/*
	 * Linux's FPU set-up runs XRSTOR (noxsave would avoid it), but the
	 * instructions below it cannot avoid: a KVM without them runs no Linux.
	 */
	if (!p->kernel_insns_cpl0)
		return "POPCNT, FWAIT or CLAC";
	if (!p->xsave_cpl0)
		return "XSAVE and XRSTOR";
	return NULL;
}
