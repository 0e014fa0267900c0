/* SPDX-License-Identifier: MIT */
/*
 * "--append case=NAME" runs one case; "case=list" prints every name. The
 * first line after "TAP version 13" names the case, the last says it ended,
 * so that a run cut short shows as a difference.
 */
#include "diff.h"

static const struct case_table *const tables[] = {
	&fault_cases, &mode_cases, &ac_cases, &step_cases, &matrix_cases, &gen_cases,
	&event_cases, &legacy_cases, &ring_cases, &gap_cases,
};

static const struct diff_case *find(const char *name)
{
	for (size_t t = 0; t < ARRAY_SIZE(tables); t++)
		for (size_t i = 0; i < tables[t]->count; i++)
			if (!strcmp(tables[t]->cases[i].name, name))
				return &tables[t]->cases[i];
	return NULL;
}

int guest_main(const struct boot_info *bi)
{
	char name[64];
	const struct diff_case *c;
	int status;

	if (!cmdline_value("case", name, sizeof(name))) {
		printf("Bail out! no case: run with --append case=NAME (case=list names them)\n");
		return GUEST_STATUS_FAIL;
	}
	if (!strcmp(name, "list")) {
		for (size_t t = 0; t < ARRAY_SIZE(tables); t++)
			for (size_t i = 0; i < tables[t]->count; i++)
				printf("%s\n", tables[t]->cases[i].name);
		return 0;
	}
	c = find(name);
	if (!c) {
		printf("Bail out! unknown case '%s'\n", name);
		return GUEST_STATUS_FAIL;
	}
	gdt_init();
	win_init(bi);
	dbg_install();
	printf("case %s\n", c->name);
	status = c->run(bi);
	printf("case %s ended with status %d\n", c->name, status);
	return status;
}

/* vCPU 1 runs the case's part for it, if it has one; others halt at once. */
void guest_ap_main(const struct boot_info *bi)
{
	char name[64];

	if (bi->cpu_index != 1 || !cmdline_value("case", name, sizeof(name)))
		return;
	for (size_t i = 0; i < diff_ap_part_count; i++)
		if (!strcmp(diff_ap_parts[i].name, name))
			diff_ap_parts[i].run(bi);
}
