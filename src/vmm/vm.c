/* SPDX-License-Identifier: MIT */
#include "vm.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "log.h"
#include "vmm_status.h"

int vm_init_common(struct vm *vm, const struct vmm_options *opts, unsigned ncpus,
		   int console_fd)
{
	memset(vm, 0, sizeof(*vm));
	vm->opts = opts;
	vm->ncpus = ncpus;
	vm->kvm_fd = vm->vm_fd = -1;
	vm->vcpus = calloc(ncpus, sizeof(*vm->vcpus));
	if (!vm->vcpus)
		return -1;
	for (unsigned i = 0; i < ncpus; i++) {
		vm->vcpus[i].vm = vm;
		vm->vcpus[i].index = i;
		vm->vcpus[i].fd = -1;
	}
	if (serial_init(&vm->serial, console_fd, ncpus))
		return -1;
	vm->serial.stopping = &vm->stopping;
	pthread_mutex_init(&vm->lock, NULL);
	pthread_cond_init(&vm->cond, NULL);
	vm->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	return vm->stop_fd < 0 ? -1 : 0;
}

void vm_destroy_common(struct vm *vm)
{
	serial_destroy(&vm->serial);
	pthread_cond_destroy(&vm->cond);
	pthread_mutex_destroy(&vm->lock);
	if (vm->stop_fd >= 0)
		close(vm->stop_fd);
	free(vm->vcpus);
	vm->vcpus = NULL;
}

bool vm_stop(struct vm *vm, int status)
{
	bool expected = false;
	uint64_t one = 1;
	pthread_t self = pthread_self();

	pthread_mutex_lock(&vm->lock);
	if (!atomic_compare_exchange_strong(&vm->stopping, &expected, true)) {
		pthread_mutex_unlock(&vm->lock);
		return false;
	}
	vm->status = status;
	pthread_cond_broadcast(&vm->cond);
	pthread_mutex_unlock(&vm->lock);

	for (unsigned i = 0; i < vm->ncpus; i++) {
		struct vcpu *v = &vm->vcpus[i];

		if (v->started && !pthread_equal(v->thread, self))
			pthread_kill(v->thread, KICK_SIGNAL);
	}
	/* Cannot fail short of a bug: the counter is far from overflow. */
	if (write(vm->stop_fd, &one, sizeof(one)) != sizeof(one))
		warn("waking the main thread failed");
	return true;
}

bool vm_vcpu_halted(struct vm *vm)
{
	bool all;

	pthread_mutex_lock(&vm->lock);
	all = ++vm->halted == vm->ncpus;
	pthread_cond_broadcast(&vm->cond);	/* a pausing vCPU counts us */
	if (!all)
		while (!vm_stopping(vm))
			pthread_cond_wait(&vm->cond, &vm->lock);
	pthread_mutex_unlock(&vm->lock);
	/*
	 * There is no interrupt controller, so a halted vCPU can only be
	 * woken by the VM ending: once they all halt, nothing will happen.
	 */
	return all && vm_stop(vm, VMM_EXIT_HALTED);
}

/* Caller holds vm->lock. Counts itself parked while another vCPU pauses. */
static void park_while_paused(struct vm *vm, struct vcpu *self)
{
	while (vm->pauser && vm->pauser != self && !vm_stopping(vm)) {
		vm->parked++;
		pthread_cond_broadcast(&vm->cond);
		pthread_cond_wait(&vm->cond, &vm->lock);
		vm->parked--;
	}
}

void vm_pause_point(struct vm *vm, struct vcpu *self)
{
	if (!atomic_load(&vm->pausing))
		return;
	pthread_mutex_lock(&vm->lock);
	park_while_paused(vm, self);
	pthread_mutex_unlock(&vm->lock);
}

bool vm_pause_others(struct vm *vm, struct vcpu *self)
{
	unsigned others = 0;
	bool ok;

	pthread_mutex_lock(&vm->lock);
	/* Two vCPUs may want it at once: the loser is paused by the winner. */
	park_while_paused(vm, self);
	if (vm_stopping(vm)) {
		pthread_mutex_unlock(&vm->lock);
		return false;
	}
	vm->pauser = self;
	atomic_store(&vm->pausing, true);
	pthread_mutex_unlock(&vm->lock);

	/* A vCPU whose thread starts later parks before it ever runs. */
	for (unsigned i = 0; i < vm->ncpus; i++) {
		struct vcpu *v = &vm->vcpus[i];

		if (v != self && v->started) {
			pthread_kill(v->thread, KICK_SIGNAL);
			others++;
		}
	}
	/* Halted vCPUs run no guest code either, and cannot park. */
	pthread_mutex_lock(&vm->lock);
	while (vm->parked + vm->halted < others && !vm_stopping(vm))
		pthread_cond_wait(&vm->cond, &vm->lock);
	ok = !vm_stopping(vm);
	pthread_mutex_unlock(&vm->lock);
	return ok;
}

void vm_resume_others(struct vm *vm)
{
	pthread_mutex_lock(&vm->lock);
	vm->pauser = NULL;
	atomic_store(&vm->pausing, false);
	pthread_cond_broadcast(&vm->cond);
	pthread_mutex_unlock(&vm->lock);
}

bool vm_port_first_use(struct vm *vm, uint16_t port)
{
	uint8_t bit = (uint8_t)(1u << (port & 7));

	return !(atomic_fetch_or(&vm->port_warned[port >> 3], bit) & bit);
}
