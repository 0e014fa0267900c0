/* SPDX-License-Identifier: MIT */
/*
 * The host profile: how this host's KVM behaves where --split-lock=emulate
 * must work around it. vm_kvm.c fills it from the probes, once, before the
 * VM is built; the stepping code reads it and nothing else about the host.
 * --host-quirks forces entries, so a test (or a person reproducing another
 * host) takes a quirky host's path on any KVM.
 */
#ifndef VMM_PROFILE_H
#define VMM_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct host_profile {
	bool step_cpl3;            /* single-steps CPL3 code */
	bool step_hwbp;            /* stops on a KVM_GUESTDBG_USE_HW_BP breakpoint */
	bool guest_databp;         /* the guest's own data breakpoints fire at CPL0 */
	bool exec_bp_beside_step;  /* reports instruction breakpoints beside a step trap */
	/* Runs a stepped IRETQ at CPL0 without its trap: probed, or seen at run time (atomic). */
	bool iret_step_lost;
	/*
	 * What KVM's instruction emulator runs at CPL0 (it stops the VM with
	 * KVM_EXIT_INTERNAL_ERROR where it cannot: the nested PVM KVM). The
	 * probes run under every policy; the VMM completes the first two itself.
	 */
	bool cmpxchg16b_cpl0;      /* a locked CMPXCHG16B */
	bool soft_int_cpl0;        /* INT3 and INT n, delivered through the IDT */
	bool xsave_cpl0;           /* XSAVE and XRSTOR */
	bool kernel_insns_cpl0;    /* POPCNT, FWAIT, CLAC */
};

/* The quirks --host-quirks names, as bits. */
enum profile_quirk {
	PROFILE_NO_CPL3_STEP = 1u << 0,
	PROFILE_NO_HW_BREAKPOINTS = 1u << 1,
	PROFILE_NO_GUEST_DATA_BREAKPOINTS = 1u << 2,
	PROFILE_NO_EXEC_BREAKPOINT_BESIDE_STEP = 1u << 3,
	PROFILE_IRET_STEP_LOST = 1u << 4,
	PROFILE_NO_CMPXCHG16B_CPL0 = 1u << 5,
	PROFILE_NO_SOFT_INT_CPL0 = 1u << 6,
	PROFILE_NO_XSAVE_CPL0 = 1u << 7,
	PROFILE_NO_KERNEL_INSNS_CPL0 = 1u << 8,
};
/* The quirks of what KVM runs at CPL0, probed under every policy (vm_create()). */
#define PROFILE_CPL0_QUIRKS \
	(PROFILE_NO_CMPXCHG16B_CPL0 | PROFILE_NO_SOFT_INT_CPL0 | PROFILE_NO_XSAVE_CPL0 | \
	 PROFILE_NO_KERNEL_INSNS_CPL0)

/*
 * "no-cpl3-step,iret-step-lost" into quirk bits. 0, or -1 with the first
 * name it does not know in err.
 */
int profile_parse_quirks(const char *list, unsigned *quirks, char *err, size_t errlen);
/* Every name profile_parse_quirks takes, comma-separated, for a message. */
void profile_quirk_names(char *buf, size_t len);
/* The probed profile as a host with these quirks would have it. */
void profile_force_quirks(struct host_profile *p, unsigned quirks);
/* {"step_cpl3":true,...}: what --stats says the VM ran by. */
void profile_print_json(FILE *out, const struct host_profile *p);
/*
 * What on this host stops a Linux kernel at CPL0 that vmm cannot complete
 * for it ("XSAVE and XRSTOR", "POPCNT, FWAIT or CLAC"), or NULL where
 * nothing does.
 */
const char *profile_linux_blocker(const struct host_profile *p);

#endif
