/* SPDX-License-Identifier: MIT */
/*
 * A VM and its vCPUs: the state every vCPU thread shares, and how the VM is
 * stopped. The first stop wins and sets the exit status; every vCPU is then
 * kicked out of KVM_RUN with a signal and immediate_exit.
 */
#ifndef VMM_VM_H
#define VMM_VM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/kvm.h>

#include "cli.h"
#include "serial.h"

#define KICK_SIGNAL SIGUSR1

struct vm;

struct vcpu {
	struct vm *vm;
	unsigned index;
	int fd;
	struct kvm_run *run;
	pthread_t thread;
	bool started;
	uint64_t exits[KVM_EXIT_X86_BUS_LOCK + 2]; /* last slot: unknown reasons */
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

	pthread_mutex_t lock;          /* guards halted and the cond */
	pthread_cond_t cond;
	unsigned halted;
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
/* True the first time `port` is seen, so each unknown port warns once. */
bool vm_port_first_use(struct vm *vm, uint16_t port);

#endif
