/* SPDX-License-Identifier: MIT */
/* vCPU creation, boot state and the run loop (one thread per vCPU). */
#ifndef VMM_VCPU_H
#define VMM_VCPU_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include <linux/kvm.h>

#include "boot.h"
#include "decode.h"
#include "msr.h"
#include "ratelimit.h"
#include "stats.h"
#include "step.h"
#include "vm.h"

/*
 * The vCPU ioctls that exit handlers and the emulate engine need beyond the
 * run page. Real KVM in vcpu.c; unit tests plug in fakes to drive the
 * handlers through each case. Each returns 0 or -errno.
 */
struct vcpu_ops {
	int (*get_regs)(struct vcpu *v, struct kvm_regs *regs);
	int (*get_sregs)(struct vcpu *v, struct kvm_sregs *sregs);
	int (*get_events)(struct vcpu *v, struct kvm_vcpu_events *ev);
	int (*set_events)(struct vcpu *v, const struct kvm_vcpu_events *ev);
	int (*set_regs)(struct vcpu *v, const struct kvm_regs *regs);
	/* CR2 before injecting #PF: KVM_SET_SREGS, or the run page's copy. */
	int (*set_sregs)(struct vcpu *v, const struct kvm_sregs *sregs);
	/* PKRU, from the XSAVE area (component 9): no sregs field holds it. */
	int (*get_pkru)(struct vcpu *v, uint32_t *pkru);
	int (*set_guest_debug)(struct vcpu *v, const struct kvm_guest_debug *dbg);
	int (*get_debugregs)(struct vcpu *v, struct kvm_debugregs *dr);
	int (*set_debugregs)(struct vcpu *v, const struct kvm_debugregs *dr);
	int (*get_msr)(struct vcpu *v, uint32_t index, uint64_t *value);
};

/* What the next KVM_RUN must finish before the VMM looks at the vCPU again. */
enum vcpu_completion {
	VCPU_COMPLETION_NONE,
	VCPU_COMPLETION_KVM,         /* an I/O, MMIO or MSR exit: KVM completes it on entry */
	VCPU_COMPLETION_MSR_FAULT,   /* a refused MSR access, completed with immediate_exit */
	VCPU_COMPLETION_RESYNC,      /* an exit after unstepped code, completed with immediate_exit */
};

struct vcpu {
	struct vm *vm;
	unsigned index;
	int fd;
	struct kvm_run *run;
	const struct vcpu_ops *ops;    /* what handlers use: kvm, or emulate's run-page view */
	const struct vcpu_ops *kvm;    /* the vCPU's own ioctls (a fake in tests) */
	pthread_t thread;
	bool started;                  /* thread created; both under vm->lock */
	struct msr_state msrs;         /* the guest's TEST_CTRL lives here */
	unsigned maxphyaddr;           /* its CPUID.80000008H:EAX[7:0]: reserved PTE bits */
	bool amd_like;                 /* its CPUID vendor is AMD's or Hygon's */
	bool rtm;                      /* its CPUID has RTM: XBEGIN begins transactions */
	volatile sig_atomic_t sigbus;  /* SIGBUS from KVM with a split-lock #AC */
	enum vcpu_completion completion;
	struct step_state step;        /* --split-lock=emulate's view of the stepping */
	struct ratelimit warn_rate;    /* "split lock emulated" lines */
	uint64_t warn_suppressed;
	struct stats stats;       /* written by this vCPU's thread only */
};


/* 0, or -1 after one line saying why (v->fd and v->run hold what was made). */
int vcpu_create(struct vcpu *v, const struct kvm_cpuid2 *cpuid,
		const struct boot_layout *layout);
void vcpu_destroy(struct vcpu *v);
/* pthread entry: runs v until the VM stops. */
void *vcpu_thread(void *v);
/* Installs the kick signal handler; call once before any vCPU thread starts. */
void vcpu_signals_init(void);
/* One line: where v is now. For a VM stopped from outside (--timeout). */
void vcpu_report_rip(struct vcpu *v);

#endif
