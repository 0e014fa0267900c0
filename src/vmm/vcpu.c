/* SPDX-License-Identifier: MIT */
#include "vcpu.h"

#include <errno.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cpuid.h"
#include "dump.h"
#include "ioport.h"
#include "kvm.h"
#include "log.h"
#include "splitlock.h"
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
	if (sigaction(KICK_SIGNAL, &sa, NULL) < 0)
		die_errno("sigaction(SIGUSR1)", errno, NULL);
	sa = (struct sigaction){ .sa_sigaction = sigbus_handler, .sa_flags = SA_SIGINFO };
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, NULL) < 0)
		die_errno("sigaction(SIGBUS)", errno, NULL);
}

static int kvm_get_regs(struct vcpu *v, struct kvm_regs *regs)
{
	return ioctl(v->fd, KVM_GET_REGS, regs) < 0 ? -errno : 0;
}

static int kvm_get_sregs(struct vcpu *v, struct kvm_sregs *sregs)
{
	return ioctl(v->fd, KVM_GET_SREGS, sregs) < 0 ? -errno : 0;
}

static int kvm_set_regs(struct vcpu *v, const struct kvm_regs *regs)
{
	return ioctl(v->fd, KVM_SET_REGS, regs) < 0 ? -errno : 0;
}

/*
 * Under --split-lock=emulate every instruction is an exit, so registers
 * travel in the run page (KVM_CAP_SYNC_REGS) instead of costing ioctls.
 */
static int sync_get_regs(struct vcpu *v, struct kvm_regs *regs)
{
	*regs = v->run->s.regs.regs;
	return 0;
}

static int sync_get_sregs(struct vcpu *v, struct kvm_sregs *sregs)
{
	*sregs = v->run->s.regs.sregs;
	return 0;
}

static int sync_set_regs(struct vcpu *v, const struct kvm_regs *regs)
{
	v->run->s.regs.regs = *regs;
	v->run->kvm_dirty_regs |= KVM_SYNC_X86_REGS;
	return 0;
}

static int kvm_set_sregs(struct vcpu *v, const struct kvm_sregs *sregs)
{
	return ioctl(v->fd, KVM_SET_SREGS, sregs) < 0 ? -errno : 0;
}

static int sync_set_sregs(struct vcpu *v, const struct kvm_sregs *sregs)
{
	v->run->s.regs.sregs = *sregs;
	v->run->kvm_dirty_regs |= KVM_SYNC_X86_SREGS;
	return 0;
}

/*
 * KVM_GET_XSAVE's buffer is the standard (non-compacted) XSAVE layout at
 * the host's offsets: PKRU sits where CPUID.(0xd,9):EBX says, and is in its
 * init state, 0, when XSTATE_BV bit 9 is clear.
 */
static int kvm_get_pkru(struct vcpu *v, uint32_t *pkru)
{
	struct kvm_xsave xs;
	uint32_t a = 0xd, b, c = 9, d;
	uint64_t bv;

	asm volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
	if (!a || b + 4 > sizeof(xs.region))
		return -ENOTSUP;
	if (ioctl(v->fd, KVM_GET_XSAVE, &xs) < 0)
		return -errno;
	memcpy(&bv, (uint8_t *)xs.region + 512, sizeof(bv));
	*pkru = 0;
	if (bv & (1ull << 9))
		memcpy(pkru, (uint8_t *)xs.region + b, sizeof(*pkru));
	return 0;
}

static int kvm_get_events(struct vcpu *v, struct kvm_vcpu_events *ev)
{
	return ioctl(v->fd, KVM_GET_VCPU_EVENTS, ev) < 0 ? -errno : 0;
}

static int kvm_set_events(struct vcpu *v, const struct kvm_vcpu_events *ev)
{
	return ioctl(v->fd, KVM_SET_VCPU_EVENTS, ev) < 0 ? -errno : 0;
}

static size_t read_guest_virt(struct vcpu *v, uint64_t gva, uint8_t *buf, size_t len);

static const struct vcpu_ops kvm_vcpu_ops = {
	.get_regs = kvm_get_regs,
	.get_sregs = kvm_get_sregs,
	.get_events = kvm_get_events,
	.set_events = kvm_set_events,
	.set_regs = kvm_set_regs,
	.set_sregs = kvm_set_sregs,
	.get_pkru = kvm_get_pkru,
	.read_virt = read_guest_virt,
};

static const struct vcpu_ops sync_vcpu_ops = {
	.get_regs = sync_get_regs,
	.get_sregs = sync_get_sregs,
	.get_events = kvm_get_events,
	.set_events = kvm_set_events,
	.set_regs = sync_set_regs,
	.set_sregs = sync_set_sregs,
	.get_pkru = kvm_get_pkru,
	.read_virt = read_guest_virt,
};

void vcpu_create(struct vcpu *v, const struct kvm_cpuid2 *supported,
		 const struct boot_layout *layout)
{
	struct vm *vm = v->vm;
	size_t cpuid_size = sizeof(*supported) + supported->nent * sizeof(supported->entries[0]);
	struct kvm_cpuid2 *cpuid = malloc(cpuid_size);
	struct kvm_sregs sregs;
	struct kvm_regs regs;

	if (!cpuid)
		die(VMM_EXIT_HOST, "out of memory for vCPU %u's CPUID table", v->index);
	v->ops = vm->split_lock_emulate ? &sync_vcpu_ops : &kvm_vcpu_ops;
	msr_reset(&v->msrs);
	ratelimit_init(&v->warn_rate, 1, 5);
	v->fd = KVM_IOCTL(vm->vm_fd, KVM_CREATE_VCPU, (void *)(uintptr_t)v->index);
	v->run = mmap(NULL, vm->run_size, PROT_READ | PROT_WRITE, MAP_SHARED, v->fd, 0);
	if (v->run == MAP_FAILED)
		die_errno("mmap of the vCPU run page", errno, NULL);

	memcpy(cpuid, supported, cpuid_size);
	cpuid_fixup(cpuid, v->index);
	/* Without leaf 0x80000008, MAXPHYADDR is 36 (SDM vol. 3 4.1.4). */
	v->maxphyaddr = cpuid_find(cpuid, 0x80000008, 0) ?
			cpuid_find(cpuid, 0x80000008, 0)->eax & 0xff : 36;
	KVM_IOCTL(v->fd, KVM_SET_CPUID2, cpuid);
	free(cpuid);

	KVM_IOCTL(v->fd, KVM_GET_SREGS, &sregs);
	boot_init_sregs(&sregs);
	KVM_IOCTL(v->fd, KVM_SET_SREGS, &sregs);
	boot_init_regs(&regs, layout, v->index);
	KVM_IOCTL(v->fd, KVM_SET_REGS, &regs);
	if (vm->split_lock_emulate) {
		/* The first check runs before any exit has filled the copies. */
		v->run->s.regs.regs = regs;
		v->run->s.regs.sregs = sregs;
		v->run->kvm_valid_regs = KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS;
	}
}

void vcpu_destroy(struct vcpu *v)
{
	if (v->run && v->run != MAP_FAILED)
		munmap(v->run, v->vm->run_size);
	if (v->fd >= 0)
		close(v->fd);
	v->run = NULL;
	v->fd = -1;
}

/* Reads guest bytes at a guest-virtual address through KVM_TRANSLATE. */
static size_t read_guest_virt(struct vcpu *v, uint64_t gva, uint8_t *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		struct kvm_translation t = { .linear_address = gva + done };
		size_t chunk = 0x1000 - ((gva + done) & 0xfff);

		if (ioctl(v->fd, KVM_TRANSLATE, &t) < 0 || !t.valid)
			break;
		if (chunk > len - done)
			chunk = len - done;
		if (t.physical_address + chunk > v->vm->ram_size)
			break;
		memcpy(buf + done, v->vm->mem + t.physical_address, chunk);
		done += chunk;
	}
	return done;
}

void vcpu_dump(struct vcpu *v)
{
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	uint8_t insn[16];
	char bytes[64];
	size_t n;

	int r = v->ops->get_regs(v, &regs);

	if (!r)
		r = v->ops->get_sregs(v, &sregs);
	if (r) {
		warn("vCPU %u: reading registers for the dump failed: %s", v->index,
		     strerror(-r));
		return;
	}
	flockfile(stderr);
	dump_regs(stderr, v->index, &regs, &sregs);
	n = v->ops->read_virt(v, regs.rip, insn, sizeof(insn));
	dump_format_bytes(bytes, sizeof(bytes), insn, n);
	fprintf(stderr, "vmm:   bytes at RIP: %s\n", bytes);
	funlockfile(stderr);
}

/* Stops the VM for an exit it cannot go on from; the first stopper explains. */
static void fatal_exit(struct vcpu *v, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fatal_exit(struct vcpu *v, int status, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!vm_stop(v->vm, status))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "vmm: error: vCPU %u: %s\n", v->index, msg);
	vcpu_dump(v);
}

static void handle_internal_error(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	char data[160] = "";
	size_t off = 0;

	for (uint32_t i = 0; i < run->internal.ndata && i < 4 && off < sizeof(data); i++)
		off += (size_t)snprintf(data + off, sizeof(data) - off, " 0x%llx",
					(unsigned long long)run->internal.data[i]);
	fatal_exit(v, VMM_EXIT_INTERNAL,
		   "KVM internal error, suberror %u%s%s (KVM could not emulate or deliver something at this RIP)",
		   run->internal.suberror, *data ? ", data" : "", data);
}

static void handle_exit(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	uint32_t reason = run->exit_reason;

	stats_count_exit(&v->stats, reason);
	switch (reason) {
	case KVM_EXIT_X86_RDMSR:
		splitlock_handle_rdmsr(v);
		break;
	case KVM_EXIT_X86_WRMSR:
		splitlock_handle_wrmsr(v);
		break;
	case KVM_EXIT_EXCEPTION:
		splitlock_handle_exception(v);
		break;
	case KVM_EXIT_IO:
		ioport_handle(v);
		break;
	case KVM_EXIT_MMIO:
		if (atomic_fetch_add(&v->vm->mmio_warned, 1) < 8)
			warn("vCPU %u: %s of %u byte(s) at guest-physical 0x%llx, where there is no RAM or device; reads return all-ones, writes are dropped",
			     v->index, run->mmio.is_write ? "write" : "read", run->mmio.len,
			     (unsigned long long)run->mmio.phys_addr);
		if (!run->mmio.is_write)
			memset(run->mmio.data, 0xff, sizeof(run->mmio.data));
		break;
	case KVM_EXIT_HLT:
		if (vm_vcpu_halted(v->vm)) {
			fprintf(stderr, "vmm: error: every vCPU has halted with nothing to wake them (there are no interrupts); vCPU %u halted last\n",
				v->index);
			vcpu_dump(v);
		}
		break;
	case KVM_EXIT_SHUTDOWN:
		fatal_exit(v, VMM_EXIT_SHUTDOWN,
			   "triple fault (KVM_EXIT_SHUTDOWN): an exception the guest could not handle, often a missing IDT, GDT or stack");
		break;
	case KVM_EXIT_FAIL_ENTRY:
		fatal_exit(v, VMM_EXIT_FAIL_ENTRY,
			   "KVM could not enter the guest (KVM_EXIT_FAIL_ENTRY), hardware reason 0x%llx",
			   (unsigned long long)run->fail_entry.hardware_entry_failure_reason);
		break;
	case KVM_EXIT_INTERNAL_ERROR:
		handle_internal_error(v);
		break;
	case KVM_EXIT_INTR:
		break;
	case KVM_EXIT_DEBUG:
		if (v->stepping) {
			v->stats.single_steps++;
			break;
		}
		fatal_exit(v, VMM_EXIT_UNHANDLED, "debug exit (KVM_EXIT_DEBUG) while not single-stepping, DR6 0x%llx",
			   (unsigned long long)run->debug.arch.dr6);
		break;
	default:
		fatal_exit(v, VMM_EXIT_UNHANDLED, "exit reason %u, which this vmm does not handle",
			   reason);
		break;
	}
}

void vcpu_report_rip(struct vcpu *v)
{
	struct kvm_regs regs;

	if (v->ops->get_regs(v, &regs) == 0)
		fprintf(stderr, "vmm: vCPU %u was at RIP 0x%llx\n", v->index,
			(unsigned long long)regs.rip);
}

/*
 * Single-step where this KVM can: on the project's hosts a single-step at
 * CPL3 reaches the guest as #DB instead of exiting, so there it is on at
 * CPL0 only, and CPL3 split locks go unseen (boot_info says so).
 */
static bool set_stepping(struct vcpu *v)
{
	bool want = v->vm->step_cpl3 || v->run->s.regs.sregs.cs.dpl == 0;
	struct kvm_guest_debug dbg = { 0 };

	if (want == v->stepping)
		return true;
	if (want)
		dbg.control = KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_SINGLESTEP;
	if (ioctl(v->fd, KVM_SET_GUEST_DEBUG, &dbg) < 0) {
		if (vm_stop(v->vm, VMM_EXIT_HOST))
			fprintf(stderr, "vmm: error: vCPU %u: KVM_SET_GUEST_DEBUG failed: %s (errno %d); --split-lock=emulate needs single-stepping\n",
				v->index, strerror(errno), errno);
		return false;
	}
	v->stepping = want;
	return true;
}

/* Before each entry under emulate: catch a split lock before it runs. */
static void emulate_before_run(struct vcpu *v)
{
	/* Bounded: a guest of back-to-back split locks still yields. */
	for (int i = 0; i < 64; i++)
		if (splitlock_check(v) != SL_EMULATED)
			break;
	if (!vm_stopping(v->vm))
		set_stepping(v);
}

void *vcpu_thread(void *arg)
{
	struct vcpu *v = arg;
	struct vm *vm = v->vm;
	sigset_t kick;

	this_vcpu = v;
	sigemptyset(&kick);
	sigaddset(&kick, KICK_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &kick, NULL);

	while (!vm_stopping(vm)) {
		vm_pause_point(vm, v);
		if (vm->split_lock_emulate) {
			emulate_before_run(v);
			if (vm_stopping(vm))
				break;
		}
		if (ioctl(v->fd, KVM_RUN, NULL) < 0) {
			if (errno == EINTR || errno == EAGAIN) {
				v->run->immediate_exit = 0;
				continue;
			}
			if (vm_stop(vm, VMM_EXIT_HOST))
				fprintf(stderr, "vmm: error: vCPU %u: KVM_RUN failed: %s (errno %d)\n",
					v->index, strerror(errno), errno);
			break;
		}
		handle_exit(v);
	}
	this_vcpu = NULL;
	return NULL;
}
