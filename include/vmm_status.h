/* SPDX-License-Identifier: MIT */
/*
 * Exit statuses of vmm. A guest chooses 0-63 through PORT_EXIT and vmm
 * passes it on unchanged; every other status belongs to vmm, so none of
 * vmm's own can be mistaken for a guest's. Errors of vmm itself use the
 * sysexits(3) numbers with sysexits' meanings; a VM that vmm stopped gets
 * 80-90, which sysexits leaves free; 77 (a test's skip) is not used. On
 * the PC machine the guest's status comes from isa-debug-exit (port 0xf4:
 * value V gives (V << 1) | 1, so 1-63 and odd).
 */
#ifndef VMM_STATUS_H
#define VMM_STATUS_H

#define GUEST_STATUS_PASS        0   /* self-test: every test passed */
#define GUEST_STATUS_FAIL        1   /* self-test: at least one failed */
#define GUEST_STATUS_MAX         63  /* highest status a guest may pick */

/* vmm's errors, as sysexits(3); the guest never ran. */
#define VMM_EXIT_USAGE           64  /* EX_USAGE: bad command line, --append too long for the image */
#define VMM_EXIT_IMAGE           65  /* EX_DATAERR: guest image empty, too big, not bootable or malformed */
#define VMM_EXIT_NOINPUT         66  /* EX_NOINPUT: guest image or initrd missing or unreadable */
#define VMM_EXIT_HOST            69  /* EX_UNAVAILABLE: /dev/kvm, a capability or a syscall failed,
				      * or a kernel this KVM cannot run */
#define VMM_EXIT_SOFTWARE        70  /* EX_SOFTWARE: a bug in vmm (seccomp refused a call) */
#define VMM_EXIT_CANTCREAT       73  /* EX_CANTCREAT: --stats FILE cannot be created */
#define VMM_EXIT_IOERR           74  /* EX_IOERR: --host-info could not write its report */
#define VMM_EXIT_POLICY          78  /* EX_CONFIG: --split-lock=on, host not set up to deliver */
#define VMM_EXIT_SYSEXITS_FIRST  64
#define VMM_EXIT_SYSEXITS_LAST   78

/* A VM that vmm stopped. */
#define VMM_EXIT_SHUTDOWN        80  /* guest triple fault (KVM_EXIT_SHUTDOWN) */
#define VMM_EXIT_FAIL_ENTRY      81  /* KVM_EXIT_FAIL_ENTRY: bad vCPU state */
#define VMM_EXIT_INTERNAL        82  /* KVM_EXIT_INTERNAL_ERROR */
#define VMM_EXIT_UNHANDLED       83  /* an exit reason the VMM does not know */
#define VMM_EXIT_HALTED          84  /* every vCPU halted, nothing can wake them */
#define VMM_EXIT_TIMEOUT         85  /* --timeout expired */
#define VMM_EXIT_BAD_STATUS      86  /* guest wrote a status above GUEST_STATUS_MAX */
#define VMM_EXIT_SPLIT_LOCK      87  /* guest split lock it did not ask #AC for */
#define VMM_EXIT_POWEROFF        88  /* PC machine: the guest powered off (ACPI S5) */
#define VMM_EXIT_RESET           89  /* PC machine: the guest reset it; vmm does not reboot */
#define VMM_EXIT_ESCAPE          90  /* PC machine: Ctrl-A x on the console */
#define VMM_EXIT_VM_FIRST        80
#define VMM_EXIT_VM_LAST         90

/*
 * 128 + N: stopped by signal N (SIGINT -> 130, SIGTERM -> 143): the VM's
 * status and --stats' record; vmm itself then dies by N (main.c).
 */
#define VMM_EXIT_SIGNAL_BASE     128

#endif
