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
#include <stdio.h>

#include <linux/kvm.h>

#include "boot.h"
#include "cpuid.h"
#include "pc.h"
#include "policy.h"
#include "profile.h"
#include "ratelimit.h"
#include "serial.h"
#include "boot.h"

#define VM_KICK_SIGNAL SIGUSR1

struct vm;
struct loader_image;
struct vcpu;

/* Each byte a guest reads where there is no RAM and no device (MMIO). */
#define VM_UNBACKED_BYTE 0xff

struct vm {
	enum policy policy; /* --split-lock */
	int kvm_fd;
	int vm_fd;
	uint8_t *mem;
	uint64_t ram_size;
	unsigned ncpus;
	struct vcpu *vcpus;
	size_t run_size;
	struct serial serial;
	enum machine machine;
	struct pc pc;                  /* MACHINE_PC's devices */
	bool split_lock_enumerated;    /* the policy's answer for this VM */
	bool split_lock_emulate;       /* --split-lock=emulate: single-step and decode */
	enum split_lock_watch split_lock_watch; /* under emulate: which vCPUs it steps */
	struct host_profile host;      /* under emulate: how this KVM steps */
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
	/* Appended to a fatal exit's line: what the start already suspected. */
	const char *stop_hint;
};

/*
 * The parts that need no KVM: locks, serial, stop state. -1 and errno on
 * failure, *what naming the call; vm_destroy_common() then gives back what
 * was made, as always.
 */
int vm_init_common(struct vm *vm, enum policy policy, unsigned ncpus,
		   int console_fd, const char **what);
void vm_destroy_common(struct vm *vm);

/* ---- vm_kvm.c, in the KVM library: the VM's whole lifetime */

/*
 * Fills the host profile from the probes, then forces the --host-quirks
 * on it. Probes once, before anything is built, since the boot flags depend
 * on the answers (BOOT_FLAG_SPLIT_LOCK_CPL0_ONLY). Under emulate only (all
 * false without), it opens /dev/kvm for the probe guests and closes it
 * again; vm_create() probes what KVM runs at CPL0, under every policy.
 * 0, or the exit status after one line; without a /dev/kvm,
 * vm_create() says so.
 */
int vm_probe(bool emulate, unsigned quirks, struct host_profile *p);

/* Everything decided before the VM takes any resource. */
struct vm_config {
	enum policy policy;
	bool split_lock_enumerated;    /* the policy's answer */
	bool split_lock_emulate;
	enum split_lock_watch split_lock_watch;
	enum cpuid_hypervisor cpuid_hypervisor; /* --hypervisor-bit */
	uint64_t split_lock_ratelimit; /* a second, 0: no limit */
	struct host_profile host;
	unsigned host_quirks;          /* --host-quirks, forced on what vm_create() probes too */
	const struct boot_layout *layout; /* the image's size is the loader's to fill in */
	const struct loader_image *image;  /* read and recognised (loader_open) */
	/*
	 * From the image's kind (loader_machine): BARE for flat images, PC for
	 * kernels. The PC machine's devices key on vm->machine.
	 */
	enum machine machine;
	int console_fd;
};

/*
 * Takes every resource the VM holds, each once: its shared state, guest RAM
 * with the image and boot structures in it, /dev/kvm, the VM and its
 * vCPUs. 0, or the exit status after one line, having given everything back.
 */
int vm_create(struct vm *vm, const struct vm_config *c);
/* Gives back everything vm_create took; the vCPU threads have ended. */
void vm_destroy(struct vm *vm);

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
/* --stats: the VM's status and policy and each vCPU's counters, as JSON. */
void vm_print_stats(FILE *out, const struct vm *vm);

/* True the first time `port` is seen, so each unknown port warns once. */
bool vm_port_first_use(struct vm *vm, uint16_t port);

#endif
