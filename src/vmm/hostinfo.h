/* SPDX-License-Identifier: MIT */
/*
 * What this host offers for split-lock detection, read without privileges:
 * /proc/cpuinfo flags, the split_lock_detect= boot parameter,
 * /proc/sys/kernel/split_lock_mitigate, KVM capabilities, and what KVM
 * really does with CPUID, found by running a tiny probe guest.
 * The parsers are pure (text in, fields out) so that unit tests feed them
 * captured file contents.
 */
#ifndef VMM_HOSTINFO_H
#define VMM_HOSTINFO_H

#include <stdbool.h>
#include <stdio.h>

/* The host kernel's split-lock mode (split_lock_detect=). */
enum hostinfo_mode {
	HOSTINFO_MODE_NONE,       /* the CPU has no split-lock detection */
	HOSTINFO_MODE_OFF,
	HOSTINFO_MODE_WARN,       /* kernel default when the CPU has it */
	HOSTINFO_MODE_FATAL,
	HOSTINFO_MODE_RATELIMIT,
};

struct hostinfo_kvm_caps {
	int user_space_msr;
	int msr_filter;
	int exception_payload;
	int vcpu_events;
	int set_guest_debug;
	int bus_lock_exit;
	int immediate_exit;
	int nr_vcpus;
	int max_vcpus;
};

struct hostinfo {
	/* /proc/cpuinfo */
	bool cpuinfo_read;
	bool sld_flag;               /* "split_lock_detect" in flags */
	bool bld_flag;               /* "bus_lock_detect" in flags */
	/* /proc/cmdline */
	bool cmdline_read;
	bool cmdline_has_sld;        /* split_lock_detect= present */
	bool cmdline_malformed;      /* present but not a value the kernel takes */
	char cmdline_value[32];      /* as written, truncated */
	unsigned ratelimit;          /* N of ratelimit:N */
	/* /proc/sys/kernel/split_lock_mitigate: -1 absent or unreadable */
	int split_lock_mitigate;
	/* derived by hostinfo_finish() */
	enum hostinfo_mode mode;

	/* KVM; kvm_error is empty when /dev/kvm could be opened */
	char kvm_error[160];
	struct hostinfo_kvm_caps caps;
	/* KVM_GET_SUPPORTED_CPUID: enum cpuid_nested (SVM or VMX for a guest's
	 * own guests), -1 = not read */
	int nested;
	/* probe guest: 1 = a KVM_SET_CPUID2 value of CPUID.(7,0):EDX[30]
	 * reaches the guest, 0 = KVM answers from the host instead,
	 * -1 = not run (probe_error says why) */
	int cpuid_7_edx30_reaches_guest;
	/* the same for CPUID.1:ECX[31] (hypervisor), which such KVMs answer too */
	int cpuid_1_ecx31_reaches_guest;
	char probe_error[160];
	/* probe guests: 1 = KVM_SET_GUEST_DEBUG single-step exits after one
	 * instruction at that CPL, 0 = it does not, -1 = not run or failed */
	int singlestep_cpl0;
	int singlestep_cpl3;
	/* probe guest: 1 = a KVM_GUESTDBG_USE_HW_BP execute breakpoint stops
	 * the guest before that instruction, 0 = it does not, -1 = not run */
	int hwbp;
	char hwbp_detail[96];        /* what happened instead, when not 1 */
	/* probe guest: 1 = the guest's own data breakpoint fires at CPL0 */
	int databp_cpl0;
	/* the same probe guest: 1 = an enabled instruction breakpoint at the next
	 * instruction is reported (B0-3) beside the single-step trap */
	int exec_bp_beside_step;
	/* probe guest, unwatched: 1 = MOV DR with DR7.GD set raises #DB */
	int dr7_gd;
	/* probe guest, unwatched: 1 = a write through CS in compatibility mode raises #GP */
	int cs_write_gp;
	/* probe guest, unwatched: 1 = INT n's #GP for an IDT entry beyond the limit has
	 * error code vector * 8 + 2, 0 = vector * 16 + 2 (QEMU's TCG) */
	int intn_error_code;
	/* probe guest, unwatched: 1 = LOCK MOV to memory raises #UD */
	int lock_ud;
	/* probe guest, unwatched: 1 = it left IA-32e mode (CR0.PG, EFER.LME off) and came back */
	int leave_long_mode;
	/* probe guest, unwatched: 1 = from 32-bit protected mode it set EFER.LME and paging
	 * and reached IA-32e mode (Linux's AP trampoline does); 0 = KVM stopped the VM (PVM) */
	int enter_long_mode;
	/* probe guest, unwatched: 1 = INT3 and #UD with TF set, and INT3 behind MOV SS,
	 * are delivered at CPL0; 0 = KVM stops the VM there (its emulator's, PVM) */
	int cpl0_events;
	/* probe guest, unwatched: 1 = it ran at CPL1 and came back through a gate */
	int cpl1;
	/* probe guest, single-stepped: 1 = the step after IRETQ at CPL0 ends at its target,
	 * 0 = one instruction later (IRETQ run without its trap: the nested PVM KVM) */
	int iret_step;
	/* probe guest, unwatched: 1 = the single-step trap of MOV SS waits for the next
	 * instruction, 0 = it comes right after MOV SS (the nested PVM KVM) */
	int movss_trap;
	/* probe guests at CPL3: 1 = SYSCALL with EFER.SCE clear raises #UD there, and with
	 * SCE set and TF, SYSCALL to a SYSRETQ comes back; 0 = not (the nested PVM KVM) */
	int syscall_sysret;
	/* probe guest, unwatched: 1 = a locked access across a page boundary that faults on
	 * its second page writes nothing, 0 = the first page was written (KVM's emulator) */
	int split_fault;
	/* probe guest at CPL3: 1 = a misaligned load with CR0.AM and RFLAGS.AC set raises
	 * #AC, 0 = it does not (QEMU's TCG) */
	int alignment_check;
	/* probe guests at CPL0, where a KVM may run them in its instruction emulator:
	 * 1 = it runs them, 0 = KVM stops the VM with its internal error (the nested
	 * PVM KVM) */
	int cmpxchg16b_cpl0;         /* a locked CMPXCHG16B */
	int soft_int_cpl0;           /* INT3 and INT n, no TF */
	int xsave_cpl0;              /* XSAVE64 and XRSTOR64 (1 too where CPUID has no XSAVE) */
	int kernel_insns_cpl0;       /* POPCNT, FWAIT, CLAC: what every Linux kernel runs */
};

void hostinfo_init(struct hostinfo *hi);
/* Each returns 0, or -1 for text it could not make sense of (fields stay safe). */
int hostinfo_parse_cpuinfo(struct hostinfo *hi, const char *text);
int hostinfo_parse_cmdline(struct hostinfo *hi, const char *text);
int hostinfo_parse_mitigate(struct hostinfo *hi, const char *text);
/* Effective mode from the fields above, as the kernel would decide it. */
void hostinfo_finish(struct hostinfo *hi);
const char *hostinfo_mode_name(enum hostinfo_mode m);
/* True when KVM on this host reports guest split locks to the VMM. */
bool hostinfo_can_deliver_ac(const struct hostinfo *hi);

/* ---- hostinfo_kvm.c, the I/O half, in the KVM library */

/* Reads the /proc files and finishes; no KVM. */
void hostinfo_read_proc(struct hostinfo *hi);
/* Opens /dev/kvm for the capabilities, and with run_probe runs the probe guest. */
void hostinfo_read_kvm(struct hostinfo *hi, bool run_probe);

/*
 * Runs a probe guest at `cpl` (0 or 3) on the /dev/kvm fd: 1 when single-step
 * works there, 0 when it does not (err says what happened instead), -1 (with
 * err) when the probe failed.
 */
int hostinfo_probe_singlestep(int kvm_fd, unsigned cpl, char *err, size_t errlen);
/* Likewise for a hardware execute breakpoint (KVM_GUESTDBG_USE_HW_BP) at CPL0. */
int hostinfo_probe_hwbp(int kvm_fd, char *err, size_t errlen);
/*
 * Likewise for the guest's own data breakpoint at CPL0; *exec_beside_step
 * gets 1 when the CPU reports an enabled instruction breakpoint at the next
 * instruction beside a single-step trap, 0 when it does not, -1 (with err)
 * when the probe could not tell.
 */
int hostinfo_probe_guest_bps(int kvm_fd, int *exec_beside_step, char *err, size_t errlen);
/*
 * Does MOV DR with DR7.GD set raise #DB in a guest nobody watches, as the
 * architecture says (SDM vol. 3 17.2.4)? 1, 0 (QEMU's TCG: it ignores GD),
 * or -1 with err.
 */
int hostinfo_probe_dr7_gd(int kvm_fd, char *err, size_t errlen);
/*
 * Does a write through CS in compatibility mode raise #GP(0), as the
 * architecture says (code segments are not writable, SDM vol. 3 3.4.5.1)?
 * 1, 0 (QEMU's TCG: it checks no segment types), or -1 with err.
 */
int hostinfo_probe_cs_write(int kvm_fd, char *err, size_t errlen);
/*
 * Does INT n through an IDT entry beyond the limit raise #GP(vector * 8 + 2),
 * as the architecture says (SDM vol. 3 6.13)? 1, 0 (QEMU's TCG: vector * 16
 * + 2), or -1 with err.
 */
int hostinfo_probe_intn_error_code(int kvm_fd, char *err, size_t errlen);
/*
 * Does LOCK on an instruction that takes none (MOV to memory) raise #UD, as
 * the architecture says (SDM vol. 2 "LOCK")? 1, 0 (QEMU's TCG: the store
 * completes), or -1 with err.
 */
int hostinfo_probe_lock_ud(int kvm_fd, char *err, size_t errlen);
/*
 * Can a guest leave IA-32e mode and come back: CR0.PG cleared, EFER.LME
 * cleared and set again, PG set again? 1, 0 (the VM stopped: the nested
 * KVM of some hosts shuts it down at the EFER write), or -1 with err.
 */
int hostinfo_probe_leave_long_mode(int kvm_fd, char *err, size_t errlen);
/*
 * Can a guest enter IA-32e mode itself, as an AP that INIT and SIPI start
 * does: from 32-bit protected mode without paging, EFER.LME set with
 * WRMSR, then CR4.PAE and CR0.PG? 1, 0 (the VM stopped), or -1 with err.
 */
int hostinfo_probe_enter_long_mode(int kvm_fd, char *err, size_t errlen);
/*
 * Are events delivered at CPL0 where a KVM may emulate the guest: INT3 and
 * an undefined opcode with TF set, INT3 behind MOV SS? 1, 0 (KVM internal
 * error: the nested PVM KVM), or -1 with err.
 */
int hostinfo_probe_cpl0_events(int kvm_fd, char *err, size_t errlen);
/*
 * Are INT3 and INT $0x20 (no TF) delivered at CPL0? The same probe guest
 * as hostinfo_probe_cpl0_events(): 1, 0 (KVM internal error: the nested
 * PVM KVM), or -1 with err.
 */
int hostinfo_probe_soft_int_cpl0(int kvm_fd, char *err, size_t errlen);
/*
 * Does a locked CMPXCHG16B at CPL0 complete (both outcomes written as the
 * architecture says)? 1, 0 (KVM internal error: the nested PVM KVM), -1.
 */
int hostinfo_probe_cmpxchg16b_cpl0(int kvm_fd, char *err, size_t errlen);
/*
 * Do XSAVE64 and XRSTOR64 at CPL0 complete (CR4.OSXSAVE, XCR0 x87|SSE)?
 * 1 (also where the guest's CPUID has no XSAVE: a kernel does not use it),
 * 0 (KVM internal error: the nested PVM KVM), or -1 with err.
 */
int hostinfo_probe_xsave_cpl0(int kvm_fd, char *err, size_t errlen);
/*
 * Do POPCNT, FWAIT and (where CPUID has SMAP) CLAC run at CPL0? 1, 0 (KVM
 * internal error: the nested PVM KVM, whose CPL0 emulator lacks them), -1.
 */
int hostinfo_probe_kernel_insns_cpl0(int kvm_fd, char *err, size_t errlen);
/*
 * Can a guest run at CPL1 (IRETQ there, INT n back to CPL0)? 1, 0 (KVM
 * internal error: the nested PVM KVM knows CPL0 and CPL3 only), or -1.
 */
int hostinfo_probe_cpl1(int kvm_fd, char *err, size_t errlen);
/*
 * Does a single-stepped IRETQ at CPL0 trap at its target? 1, 0 (one
 * instruction later: the nested PVM KVM), or -1 with err.
 */
int hostinfo_probe_iret_step(int kvm_fd, char *err, size_t errlen);
/*
 * Does MOV SS hold the guest's single-step trap over the next instruction
 * (SDM vol. 3 6.8.3)? 1, 0 (right after MOV SS: the nested PVM KVM), -1.
 */
int hostinfo_probe_movss_trap(int kvm_fd, char *err, size_t errlen);
/*
 * From CPL3: SYSCALL with EFER.SCE clear raises #UD at itself, and with SCE
 * set and TF, SYSCALL to a handler's SYSRETQ comes back? 1, 0 (either not:
 * the nested PVM KVM), or -1 with err.
 */
int hostinfo_probe_syscall_sysret(int kvm_fd, char *err, size_t errlen);
/*
 * Does a locked access that faults on its second page write nothing to
 * its first (SDM: the whole access is checked before it writes)? 1, 0
 * (written: KVM's emulator runs the guest's CPL0 code, the nested PVM
 * KVM), or -1 with err.
 */
int hostinfo_probe_split_fault(int kvm_fd, char *err, size_t errlen);
/*
 * Does a misaligned load at CPL3 with CR0.AM and RFLAGS.AC set raise the
 * legacy alignment-check #AC? 1, 0 (QEMU's TCG never raises it), or -1
 * with err.
 */
int hostinfo_probe_alignment_check(int kvm_fd, char *err, size_t errlen);
/*
 * Does a CPUID.(7,0):EDX[30] set with KVM_SET_CPUID2 reach the guest? 1, 0
 * (this KVM answers leaf 7 from the host: the project's nested KVM), -1
 * where the probe found no answer.
 */
int hostinfo_probe_cpuid_reaches(int kvm_fd);
/*
 * The same for CPUID.1:ECX[31] (hypervisor, --hypervisor-bit): 1, 0
 * (the guest sees the host's bit, *host_bit, whatever the table says), -1.
 */
int hostinfo_probe_cpuid_hypervisor(int kvm_fd, bool *host_bit);
/* The host's own CPUID.1:ECX[31]: vmm itself runs in a VM. */
bool hostinfo_host_hypervisor(void);

void hostinfo_print(FILE *out, const struct hostinfo *hi);
void hostinfo_print_json(FILE *out, const struct hostinfo *hi);

#endif
