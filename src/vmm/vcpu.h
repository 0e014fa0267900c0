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
 * The vCPU ioctls that exit handlers need beyond the run page. Real KVM in
 * vcpu.c; unit tests plug in fakes to drive the handlers through each case.
 * Each returns 0 or -errno.
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
};

struct vcpu {
	struct vm *vm;
	unsigned index;
	int fd;
	struct kvm_run *run;
	const struct vcpu_ops *ops;
	pthread_t thread;
	bool started;                  /* thread created; both under vm->lock */
	struct msr_state msrs;         /* the guest's TEST_CTRL lives here */
	unsigned maxphyaddr;           /* its CPUID.80000008H:EAX[7:0]: reserved PTE bits */
	volatile sig_atomic_t sigbus;  /* SIGBUS from KVM with a split-lock #AC */
	bool stepping;                 /* KVM_GUESTDBG_SINGLESTEP is on */
	struct step_state step;        /* --split-lock=emulate's view of the stepping */
	struct decode_length_memo lengths;
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
