/* SPDX-License-Identifier: MIT */
/*
 * Exit statuses of vmm. A guest chooses 0-63 through PORT_EXIT and vmm
 * passes it on unchanged; everything else belongs to the VMM.
 */
#ifndef VMM_STATUS_H
#define VMM_STATUS_H

#define GUEST_STATUS_PASS        0   /* self-test: every test passed */
#define GUEST_STATUS_FAIL        1   /* self-test: at least one failed */
#define GUEST_STATUS_MAX         63  /* highest status a guest may pick */

#define VMM_EXIT_USAGE           2   /* bad command line or --stats file; the guest never ran */
#define VMM_EXIT_HOST            64  /* /dev/kvm, a capability or a syscall failed */
#define VMM_EXIT_IMAGE           65  /* guest image missing, unreadable or too big */
#define VMM_EXIT_SHUTDOWN        66  /* guest triple fault (KVM_EXIT_SHUTDOWN) */
#define VMM_EXIT_FAIL_ENTRY      67  /* KVM_EXIT_FAIL_ENTRY: bad vCPU state */
#define VMM_EXIT_INTERNAL        68  /* KVM_EXIT_INTERNAL_ERROR */
#define VMM_EXIT_UNHANDLED       69  /* an exit reason the VMM does not know */
#define VMM_EXIT_HALTED          70  /* every vCPU halted, nothing can wake them */
#define VMM_EXIT_TIMEOUT         71  /* --timeout expired */
#define VMM_EXIT_BAD_STATUS      72  /* guest wrote a status above GUEST_STATUS_MAX */
#define VMM_EXIT_SPLIT_LOCK      73  /* guest split lock it did not ask #AC for */
#define VMM_EXIT_POLICY          74  /* --split-lock=on but the host cannot deliver */
/* 128 + N: stopped by signal N (SIGINT -> 130, SIGTERM -> 143). */
#define VMM_EXIT_SIGNAL_BASE     128

#endif
