/* SPDX-License-Identifier: MIT */
#include "vcpu.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cpuid.h"
#include "dispatch.h"
#include "kvm.h"
#include "log.h"
#include "stepping.h"
#include "vmm_status.h"

/* Signal handlers need the vCPU that their thread drives. */
static __thread struct vcpu *volatile this_vcpu;

static void kick_handler(int sig)
{
	(void)sig;
	if (this_vcpu)
		this_vcpu->run->immediate_exit = 1;
}

/*
 * On a split_lock_detect=fatal host KVM force-sends SIGBUS (BUS_ADRALN) with
 * every split-lock #AC exit; unhandled, it would kill the whole VMM. The
 * exit handler reads the flag. Any other SIGBUS is a fault in the VMM's own
 * memory and nothing can safely go on.
 */
static void sigbus_handler(int sig, siginfo_t *si, void *uc)
{
	static const char msg[] =
		"vmm: error: SIGBUS that is not a split-lock #AC (a fault in guest or VMM memory); exiting\n";
	struct vcpu *v = this_vcpu;

	(void)sig;
	(void)uc;
	if (v && si->si_code == BUS_ADRALN) {
		v->sigbus = 1;
		return;
	}
	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(VMM_EXIT_HOST);
	_exit(VMM_EXIT_HOST);
}

void vcpu_signals_init(void)
{
	struct sigaction sa = { .sa_handler = kick_handler };

	/* No SA_RESTART: KVM_RUN must come back with EINTR. */
	sigemptyset(&sa.sa_mask);
	if (sigaction(VM_KICK_SIGNAL, &sa, NULL) < 0)
		die_errno("sigaction(SIGUSR1)", errno, NULL);
	sa = (struct sigaction){ .sa_sigaction = sigbus_handler, .sa_flags = SA_SIGINFO };
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, NULL) < 0)
		die_errno("sigaction(SIGBUS)", errno, NULL);
}

static int ioctl_get_regs(struct vcpu *v, struct kvm_regs *regs)
{
	return ioctl(v->fd, KVM_GET_REGS, regs) < 0 ? -errno : 0;
}

static int ioctl_get_sregs(struct vcpu *v, struct kvm_sregs *sregs)
{
	return ioctl(v->fd, KVM_GET_SREGS, sregs) < 0 ? -errno : 0;
}

static int ioctl_set_regs(struct vcpu *v, const struct kvm_regs *regs)
{
	return ioctl(v->fd, KVM_SET_REGS, regs) < 0 ? -errno : 0;
}

static int ioctl_set_sregs(struct vcpu *v, const struct kvm_sregs *sregs)
{
	return ioctl(v->fd, KVM_SET_SREGS, sregs) < 0 ? -errno : 0;
}

/*
 * KVM_GET_XSAVE's buffer is the standard (non-compacted) XSAVE layout at
 * the host's offsets: PKRU sits where CPUID.(0xd,9):EBX says. KVM keeps
 * the guest's PKRU apart from its XSAVE image and fills that slot from its
 * own copy, while XSTATE_BV comes from the image (Linux 6.1), so the slot
 * is read whatever bit 9 says, as QEMU reads it.
 */
static int ioctl_get_pkru(struct vcpu *v, uint32_t *pkru)
{
	struct kvm_xsave xs;
	uint32_t a = 0xd, b, c = 9, d;

	asm volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
	if (!a || b + 4 > sizeof(xs.region))
		return -ENOTSUP;
	if (ioctl(v->fd, KVM_GET_XSAVE, &xs) < 0)
		return -errno;
	memcpy(pkru, (uint8_t *)xs.region + b, sizeof(*pkru));
	return 0;
}

static int ioctl_get_events(struct vcpu *v, struct kvm_vcpu_events *ev)
{
	return ioctl(v->fd, KVM_GET_VCPU_EVENTS, ev) < 0 ? -errno : 0;
}

static int ioctl_set_events(struct vcpu *v, const struct kvm_vcpu_events *ev)
{
	return ioctl(v->fd, KVM_SET_VCPU_EVENTS, ev) < 0 ? -errno : 0;
}

static int ioctl_set_guest_debug(struct vcpu *v, const struct kvm_guest_debug *dbg)
{
	return ioctl(v->fd, KVM_SET_GUEST_DEBUG, dbg) < 0 ? -errno : 0;
}

static int ioctl_get_debugregs(struct vcpu *v, struct kvm_debugregs *dr)
{
	return ioctl(v->fd, KVM_GET_DEBUGREGS, dr) < 0 ? -errno : 0;
}

static int ioctl_set_debugregs(struct vcpu *v, const struct kvm_debugregs *dr)
{
	return ioctl(v->fd, KVM_SET_DEBUGREGS, dr) < 0 ? -errno : 0;
}

static int ioctl_get_msr(struct vcpu *v, uint32_t index, uint64_t *value)
{
	/* struct kvm_msrs ends in a flexible array: one entry right behind it. */
	union {
		struct kvm_msrs hdr;
		uint8_t bytes[sizeof(struct kvm_msrs) + sizeof(struct kvm_msr_entry)];
	} m = { .hdr.nmsrs = 1 };
	int r;

	m.hdr.entries[0].index = index;
	r = ioctl(v->fd, KVM_GET_MSRS, &m);
	if (r != 1)
		return r < 0 ? -errno : -ENODATA;	/* it read none: KVM does not know the MSR */
	*value = m.hdr.entries[0].data;
	return 0;
}

static const struct vcpu_ops ioctl_vcpu_ops = {
	.get_regs = ioctl_get_regs,
	.get_sregs = ioctl_get_sregs,
	.get_events = ioctl_get_events,
	.set_events = ioctl_set_events,
	.set_regs = ioctl_set_regs,
	.set_sregs = ioctl_set_sregs,
	.get_pkru = ioctl_get_pkru,
	.set_guest_debug = ioctl_set_guest_debug,
	.get_debugregs = ioctl_get_debugregs,
	.set_debugregs = ioctl_set_debugregs,
	.get_msr = ioctl_get_msr,
};

int vcpu_create(struct vcpu *v, const struct kvm_cpuid2 *supported,
		const struct boot_layout *layout)
{
	struct vm *vm = v->vm;
	size_t cpuid_size = sizeof(*supported) + supported->nent * sizeof(supported->entries[0]);
	struct kvm_cpuid2 *cpuid = malloc(cpuid_size);
	struct kvm_sregs sregs;
	struct kvm_regs regs;
	int r;

	if (!cpuid) {
		errmsg("out of memory for vCPU %u's CPUID table", v->index);
		return -1;
	}
	v->ops = v->kvm = &ioctl_vcpu_ops;
	msr_reset(&v->msrs);
	ratelimit_init(&v->warn_rate, 1, 5);

	memcpy(cpuid, supported, cpuid_size);
	cpuid_fixup(cpuid, v->index);
	/* Without leaf 0x80000008, MAXPHYADDR is 36 (SDM vol. 3 4.1.4). */
	v->maxphyaddr = cpuid_find(cpuid, 0x80000008, 0) ?
			cpuid_find(cpuid, 0x80000008, 0)->eax & 0xff : 36;
	v->amd_like = cpuid_amd_like(cpuid);
	v->rtm = cpuid_rtm(cpuid);
	r = kvm_vcpu_create(vm->vm_fd, &(struct kvm_vcpu_setup){
				    .index = v->index, .run_size = vm->run_size,
				    .cpuid = cpuid, .layout = layout,
			    }, &v->fd, &v->run, &regs, &sregs);
	free(cpuid);
	if (r)
		return -1;
	if (vm->split_lock_emulate)
		stepping_init(v, &regs, &sregs);
	return 0;
}

void vcpu_destroy(struct vcpu *v)
{
	if (v->run)
		munmap(v->run, v->vm->run_size);
	if (v->fd >= 0)
		close(v->fd);
	v->run = NULL;
	v->fd = -1;
}

void vcpu_report_rip(struct vcpu *v)
{
	struct kvm_regs regs;

	if (v->ops->get_regs(v, &regs) == 0)
		fprintf(stderr, "vmm: vCPU %u was at RIP 0x%llx\n", v->index,
			(unsigned long long)regs.rip);
}

void *vcpu_thread(void *arg)
{
	struct vcpu *v = arg;
	struct vm *vm = v->vm;
	sigset_t kick;
	int r;

	this_vcpu = v;
	sigemptyset(&kick);
	sigaddset(&kick, VM_KICK_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &kick, NULL);

	while (!vm_stopping(vm)) {
		vm_pause_point(vm, v);
		/* An instruction KVM is half-way through is neither checked nor touched. */
		if (vm->split_lock_emulate && v->completion == VCPU_COMPLETION_NONE) {
			stepping_before_run(v);
			if (vm_stopping(vm))
				break;
		}
		r = __kvm_vcpu_run(v->fd);
		if (r == -EINTR || r == -EAGAIN) {
			v->run->immediate_exit = 0;
			if (vm->split_lock_emulate)
				stepping_interrupted(v);
			continue;
		}
		if (r) {
			vm_fail(vm, VMM_EXIT_HOST, "vCPU %u: KVM_RUN failed: %s (errno %d)",
				v->index, strerror(-r), -r);
			break;
		}
		dispatch_exit(v);
	}
	this_vcpu = NULL;
	return NULL;
}
