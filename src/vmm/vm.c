/* SPDX-License-Identifier: MIT */
#include "vm.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "stats.h"
#include "vcpu.h"
#include "vmm_status.h"
#include "array_size.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int vm_init_common(struct vm *vm, enum policy policy, unsigned ncpus,
		   int console_fd, const char **what)
{
	pthread_condattr_t attr;
	int r;

	memset(vm, 0, sizeof(*vm));
	vm->policy = policy;
	vm->ncpus = ncpus;
	vm->kvm_fd = vm->vm_fd = vm->stop_fd = -1;
	*what = "calloc of the vCPUs";
	vm->vcpus = calloc(ncpus, sizeof(*vm->vcpus));
	if (!vm->vcpus)
		return -1;
	for (unsigned i = 0; i < ncpus; i++) {
		vm->vcpus[i].vm = vm;
		vm->vcpus[i].index = i;
		vm->vcpus[i].fd = -1;
	}
	*what = "calloc of the console's lines";
	if (serial_init(&vm->serial, console_fd, ncpus))
		return -1;
	vm->serial.stopping = &vm->stopping;
	pthread_mutex_init(&vm->lock, NULL);
	/* Ratelimit deadlines are monotonic: a clock step must not stretch them. */
	*what = "pthread_cond_init";
	r = pthread_condattr_init(&attr);
	if (!r) {
		r = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
		if (!r)
			r = pthread_cond_init(&vm->cond, &attr);
		pthread_condattr_destroy(&attr);
	}
	if (r) {
		errno = r;	/* pthread calls return the error instead */
		return -1;
	}
	*what = "eventfd";
	vm->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	return vm->stop_fd < 0 ? -1 : 0;
}

void vm_destroy_common(struct vm *vm)
{
	serial_destroy(&vm->serial);
	if (vm->machine == MACHINE_PC)
		pc_destroy(&vm->pc);
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
	/*
	 * Under the lock, as vm_start_vcpu() starts threads: a vCPU is either
	 * kicked here or starts after `stopping` is set and never runs.
	 */
	for (unsigned i = 0; i < vm->ncpus; i++) {
		struct vcpu *v = &vm->vcpus[i];

		if (v->started && !pthread_equal(v->thread, self))
			pthread_kill(v->thread, VM_KICK_SIGNAL);
	}
	pthread_mutex_unlock(&vm->lock);

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

/* Caller holds vm->lock. */
static unsigned started_others(const struct vm *vm, const struct vcpu *self)
{
	unsigned n = 0;

	for (unsigned i = 0; i < vm->ncpus; i++)
		n += vm->vcpus[i].started && &vm->vcpus[i] != self;
	return n;
}

bool vm_pause_others(struct vm *vm, struct vcpu *self)
{
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
	/*
	 * Threads start under this lock (vm_start_vcpu), so every vCPU is
	 * either kicked and counted here, or starts after `pausing` is set
	 * and parks before it ever runs guest code, counted once it has.
	 */
	for (unsigned i = 0; i < vm->ncpus; i++) {
		struct vcpu *v = &vm->vcpus[i];

		if (v != self && v->started)
			pthread_kill(v->thread, VM_KICK_SIGNAL);
	}
	/*
	 * Halted vCPUs and those waiting out the ratelimit run no guest code
	 * either; the latter count themselves parked.
	 */
	while (vm->parked + vm->halted < started_others(vm, self) && !vm_stopping(vm))
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

int vm_start_vcpu(struct vm *vm, struct vcpu *v, const pthread_attr_t *attr,
		  void *(*fn)(void *))
{
	int r;

	/*
	 * pthread_create() stores the thread id while the lock is held, so
	 * anyone who kicks vCPUs (vm_stop, vm_pause_others) sees the thread
	 * together with `started`, or the thread sees what they did first.
	 */
	pthread_mutex_lock(&vm->lock);
	r = pthread_create(&v->thread, attr, fn, v);
	v->started = r == 0;
	pthread_mutex_unlock(&vm->lock);
	return r;
}

bool vm_ratelimit_wait(struct vm *vm, uint64_t *waited_ns)
{
	uint64_t start, deadline;
	struct timespec ts;

	*waited_ns = 0;
	pthread_mutex_lock(&vm->lock);
	start = mono_ns();
	deadline = start + ratelimit_delay(&vm->split_lock_rate, start);
	if (deadline == start) {
		pthread_mutex_unlock(&vm->lock);
		return false;
	}
	ts.tv_sec = (time_t)(deadline / 1000000000ull);
	ts.tv_nsec = (long)(deadline % 1000000000ull);
	/*
	 * Waiting, this vCPU runs no guest code: it counts as parked, so that
	 * another vCPU's pause need not wait for the deadline, and it stays
	 * parked until that pause ends even if the deadline passes meanwhile.
	 */
	vm->parked++;
	pthread_cond_broadcast(&vm->cond);
	while (!vm_stopping(vm)) {
		if (vm->pauser)
			pthread_cond_wait(&vm->cond, &vm->lock);
		else if (mono_ns() >= deadline)
			break;
		else
			pthread_cond_timedwait(&vm->cond, &vm->lock, &ts);
	}
	vm->parked--;
	*waited_ns = ratelimit_waited(start, deadline, mono_ns());
	pthread_mutex_unlock(&vm->lock);
	return true;
}

bool vm_fail(struct vm *vm, int status, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!vm_stop(vm, status))
		return false;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	errmsg("%s", msg);
	return true;
}

void vm_stop_signals(sigset_t *set)
{
	/*
	 * Every signal whose default action ends the process, except those
	 * vmm uses itself (VM_KICK_SIGNAL; SIGBUS, which KVM sends with a
	 * split-lock #AC; SIGPIPE, ignored so that a console reader going away
	 * is a write error; SIGSYS, the sandbox's report) and the synchronous
	 * faults (SIGSEGV, SIGILL, SIGFPE, SIGTRAP, SIGABRT): those mean a bug
	 * in vmm itself, where clean-up cannot be trusted, and the kernel
	 * delivers them even when blocked.
	 */
	static const int sigs[] = {
		SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF,
		SIGXCPU, SIGXFSZ, SIGIO, SIGPWR, SIGSTKFLT,
	};

	sigemptyset(set);
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
		sigaddset(set, sigs[i]);
	/* glibc keeps the lowest real-time signals for itself: SIGRTMIN is above them. */
	for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
		sigaddset(set, sig);
}

void vm_print_stats(FILE *out, const struct vm *vm)
{
	fprintf(out, "{\"status\":%d,\"split_lock\":{\"policy\":\"%s\",\"enumerated\":%s",
		vm->status, policy_name(vm->policy),
		vm->split_lock_enumerated ? "true" : "false");
	if (vm->split_lock_emulate)
		fprintf(out, ",\"watch\":\"%s\"", policy_watch_name(vm->split_lock_watch));
	/* Under every policy: what KVM runs at CPL0 decides what the run loop completes. */
	fputs(",\"host_profile\":", out);
	profile_print_json(out, &vm->host);
	fputs("},\"vcpus\":[", out);
	for (unsigned i = 0; i < vm->ncpus; i++) {
		if (i)
			fputc(',', out);
		stats_print_vcpu_json(out, vm->vcpus[i].index, &vm->vcpus[i].stats);
	}
	fprintf(out, "]}\n");
}
