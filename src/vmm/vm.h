/* SPDX-License-Identifier: MIT */
/*
 * A VM and its vCPUs: the state every vCPU thread shares, and how the VM is
 * stopped. The first stop wins and sets the exit status; every vCPU is then
 * kicked out of KVM_RUN with a signal and immediate_exit.
 */
#ifndef VMM_VM_H
#define VMM_VM_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/kvm.h>

#include "cli.h"
#include "msr.h"
#include "ratelimit.h"
#include "serial.h"
#include "stats.h"
#include "step.h"

#define KICK_SIGNAL SIGUSR1

struct vm;
struct vcpu;

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
	struct ratelimit warn_rate;    /* "split lock emulated" lines */
	uint64_t warn_suppressed;
	struct vcpu_stats stats;       /* written by this vCPU's thread only */
};

struct vm {
	const struct vmm_options *opts;
	int kvm_fd;
	int vm_fd;
	uint8_t *mem;
	uint64_t ram_size;
	unsigned ncpus;
	struct vcpu *vcpus;
	size_t run_size;
	struct serial serial;
	bool split_lock_enumerated;    /* the policy's answer for this VM */
	bool split_lock_emulate;       /* --split-lock=emulate: single-step and decode */
	bool step_cpl3;                /* this KVM can single-step CPL3 code */
	bool step_hwbp;                /* ... and stop on a KVM_GUESTDBG_USE_HW_BP breakpoint */
	bool guest_databp;             /* the guest's own data breakpoints fire (CPL0 probe) */
	struct ratelimit split_lock_rate; /* --split-lock-ratelimit, under lock */

	pthread_mutex_t lock;          /* guards halted and the cond */
	pthread_cond_t cond;
	unsigned halted;
	struct vcpu *pauser;           /* the vCPU that has the others paused */
	unsigned parked;               /* vCPUs waiting for it, or out the ratelimit */
	atomic_bool pausing;           /* pauser != NULL, read without the lock */
	atomic_bool stopping;
	int status;                    /* valid once stopping */
	int stop_fd;                   /* eventfd: wakes the main thread */
	_Atomic uint8_t port_warned[65536 / 8];
	_Atomic uint64_t mmio_warned;  /* count of MMIO warnings given */
};

/* Fills the parts that need no KVM: locks, serial, stop state. */
int vm_init_common(struct vm *vm, const struct vmm_options *opts, unsigned ncpus,
		   int console_fd);
void vm_destroy_common(struct vm *vm);

/*
 * Ends the VM with `status`. Returns true for the caller that stopped it
 * first; only that caller should print why.
 */
bool vm_stop(struct vm *vm, int status);
static inline bool vm_stopping(struct vm *vm)
{
	return atomic_load(&vm->stopping);
}
/*
 * Parks a halted vCPU until the VM stops. The last vCPU to halt stops the
 * VM with VMM_EXIT_HALTED instead, and gets true back so that it can say why.
 */
bool vm_vcpu_halted(struct vm *vm);
/*
 * Stops every other vCPU from running guest code until vm_resume_others(),
 * so that `self` can change guest memory as one atomic operation. Waits for
 * them to leave KVM_RUN. false if the VM is stopping instead.
 */
bool vm_pause_others(struct vm *vm, struct vcpu *self);
void vm_resume_others(struct vm *vm);
/* Each vCPU calls this before KVM_RUN: it waits here while another pauses. */
void vm_pause_point(struct vm *vm, struct vcpu *self);

/*
 * Starts v's thread running fn(v); pthread_create's result. A vCPU that is
 * paused or stopped while its thread starts still honours it.
 */
int vm_start_vcpu(struct vm *vm, struct vcpu *v, const pthread_attr_t *attr,
		  void *(*fn)(void *));
/*
 * Waits out --split-lock-ratelimit for one split lock. While it waits the
 * vCPU counts as paused, so other vCPUs' pauses go ahead, and it waits on
 * after them. A stop cuts it short. false if no wait was needed; else
 * *waited_ns is the time the ratelimit actually held it.
 */
bool vm_ratelimit_wait(struct vm *vm, uint64_t *waited_ns);
/*
 * vm_stop(status), and the one who stopped it first prints "vmm: error: "
 * and the message. Returns what vm_stop returned: true means the caller
 * may add detail (a register dump).
 */
bool vm_fail(struct vm *vm, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * The signals that stop the VM as SIGTERM does (status 128 + N): every one
 * whose default would end vmm, except those it uses and the fault signals.
 */
void vm_stop_signals(sigset_t *set);

/* True the first time `port` is seen, so each unknown port warns once. */
bool vm_port_first_use(struct vm *vm, uint16_t port);

#endif
