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
#include "decode.h"
#include "dump.h"
#include "emulate.h"
#include "hostinfo.h"
#include "ioport.h"
#include "kvm.h"
#include "log.h"
#include "pagewalk.h"
#include "splitlock.h"
#include "step.h"
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
	/*
	 * KVM hid its TF from these registers; written back without it, stock
	 * KVM would clear TF in hardware (unless RIP is where stepping began)
	 * and the guest would run on unchecked.
	 */
	if (v->stepping)
		v->run->s.regs.regs.rflags |= X86_RFLAGS_TF;
	v->run->kvm_dirty_regs |= KVM_SYNC_X86_REGS;
	return 0;
}

static int ioctl_set_sregs(struct vcpu *v, const struct kvm_sregs *sregs)
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
static int ioctl_get_pkru(struct vcpu *v, uint32_t *pkru)
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

static int ioctl_get_events(struct vcpu *v, struct kvm_vcpu_events *ev)
{
	return ioctl(v->fd, KVM_GET_VCPU_EVENTS, ev) < 0 ? -errno : 0;
}

static int ioctl_set_events(struct vcpu *v, const struct kvm_vcpu_events *ev)
{
	return ioctl(v->fd, KVM_SET_VCPU_EVENTS, ev) < 0 ? -errno : 0;
}

/*
 * Under emulate an injected event is noted, so that the next entry watches
 * its handler's first instruction instead of letting it run unchecked.
 */
static bool set_debug(struct vcpu *v, bool step, uint64_t bp);

static int sync_set_events(struct vcpu *v, const struct kvm_vcpu_events *ev)
{
	int r;

	/*
	 * The frame must hold the guest's own TF, not the VMM's: single-step
	 * off and the registers written now, since some KVMs (the project's)
	 * build the frame when the event is set, not at the next entry. Only
	 * where a breakpoint can then stop at the handler: elsewhere the VMM's
	 * TF in the frame is what brings stepping back at the handler's IRET.
	 */
	if ((ev->exception.injected || ev->exception.pending) && v->stepping && v->vm->step_hwbp) {
		if (!set_debug(v, false, 0))
			return -EIO;
		if (ioctl(v->fd, KVM_SET_REGS, &v->run->s.regs.regs) < 0)
			return -errno;
		v->run->kvm_dirty_regs &= ~(uint64_t)KVM_SYNC_X86_REGS;
	}
	r = ioctl_set_events(v, ev);

	if (!r && (ev->exception.injected || ev->exception.pending))
		v->step.inject_vector = ev->exception.nr;
	return r;
}

static const struct vcpu_ops ioctl_vcpu_ops = {
	.get_regs = ioctl_get_regs,
	.get_sregs = ioctl_get_sregs,
	.get_events = ioctl_get_events,
	.set_events = ioctl_set_events,
	.set_regs = ioctl_set_regs,
	.set_sregs = ioctl_set_sregs,
	.get_pkru = ioctl_get_pkru,
};

static const struct vcpu_ops sync_vcpu_ops = {
	.get_regs = sync_get_regs,
	.get_sregs = sync_get_sregs,
	.get_events = ioctl_get_events,
	.set_events = sync_set_events,
	.set_regs = sync_set_regs,
	.set_sregs = sync_set_sregs,
	.get_pkru = ioctl_get_pkru,
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
	v->ops = vm->split_lock_emulate ? &sync_vcpu_ops : &ioctl_vcpu_ops;
	v->step = (struct step_state){ .inject_vector = -1, .frame_vector = -1 };
	msr_reset(&v->msrs);
	ratelimit_init(&v->warn_rate, 1, 5);

	memcpy(cpuid, supported, cpuid_size);
	cpuid_fixup(cpuid, v->index);
	/* Without leaf 0x80000008, MAXPHYADDR is 36 (SDM vol. 3 4.1.4). */
	v->maxphyaddr = cpuid_find(cpuid, 0x80000008, 0) ?
			cpuid_find(cpuid, 0x80000008, 0)->eax & 0xff : 36;
	r = kvm_vcpu_create(vm->vm_fd, &(struct kvm_vcpu_setup){
				    .index = v->index, .run_size = vm->run_size,
				    .cpuid = cpuid, .layout = layout,
			    }, &v->fd, &v->run, &regs, &sregs);
	free(cpuid);
	if (r)
		return -1;
	if (vm->split_lock_emulate) {
		/* The first check runs before any exit has filled the copies. */
		v->run->s.regs.regs = regs;
		v->run->s.regs.sregs = sregs;
		v->run->kvm_valid_regs = KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS;
	}
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

/* Stops the VM for an exit it cannot go on from; the first stopper explains. */
static void fatal_exit(struct vcpu *v, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fatal_exit(struct vcpu *v, int status, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (vm_fail(v->vm, status, "vCPU %u: %s", v->index, msg))
		dump_vcpu(v);
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

static void stepping_debug_exit(struct vcpu *v);
static void stepping_after_exit(struct vcpu *v, uint32_t reason);
static void stepping_msr_fault(struct vcpu *v);
static bool msr_fault_queued(struct vcpu *v);

static void handle_exit(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	uint32_t reason = run->exit_reason;

	stats_count_exit(&v->stats, reason);
	if (v->vm->split_lock_emulate)
		stepping_after_exit(v, reason);
	switch (reason) {
	case KVM_EXIT_X86_RDMSR:
		splitlock_handle_rdmsr(v);
		if (v->vm->split_lock_emulate && run->msr.error)
			stepping_msr_fault(v);
		break;
	case KVM_EXIT_X86_WRMSR:
		splitlock_handle_wrmsr(v);
		if (v->vm->split_lock_emulate && run->msr.error)
			stepping_msr_fault(v);
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
			errmsg("every vCPU has halted with nothing to wake them (there are no interrupts); vCPU %u halted last",
			       v->index);
			dump_vcpu(v);
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
		if (v->vm->split_lock_emulate) {
			stepping_debug_exit(v);
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

/* ------------------------------------------------ --split-lock=emulate */

#define DR7_L0           0x1ull      /* DR0 enabled, execute, one byte */
#define MSR_SYSCALL_MASK 0xc0000084u

static bool stepping_fail(struct vcpu *v, const char *call, int err)
{
	vm_fail(v->vm, VMM_EXIT_HOST,
		"vCPU %u: %s failed: %s (errno %d); --split-lock=emulate cannot go on watching this guest",
		v->index, call, strerror(err), err);
	return false;
}

/* The guest's paging as it stands, for accesses made on its behalf. */
static void guest_paging(struct vcpu *v, struct paging *p)
{
	/* PKRU applies to none of the accesses made through this. */
	emulate_paging(p, &v->run->s.regs.sregs, &v->run->s.regs.regs, 0, v->maxphyaddr);
}

static enum decode_mode guest_mode(struct vcpu *v)
{
	return emulate_cpu_mode(&v->run->s.regs.sregs, v->run->s.regs.regs.rflags);
}

/*
 * Bytes at a linear address through the guest's page tables, checked as
 * an access of kind `access` (0: data read, WALK_FETCH); how many it could.
 */
static size_t read_linear(struct vcpu *v, uint64_t la, unsigned access, void *buf, size_t len)
{
	struct guest_mem m = { v->vm->mem, v->vm->ram_size };
	struct paging p;

	guest_paging(v, &p);
	return pagewalk_read_as(&m, &p, la, access, buf, len);
}

/* Where byte la of a stack slot the CPU just wrote lives, or NULL. */
static uint8_t *stack_byte(struct vcpu *v, uint64_t la)
{
	struct guest_mem m = { v->vm->mem, v->vm->ram_size };
	struct paging p;
	struct walk w;

	guest_paging(v, &p);
	if (pagewalk(&m, &p, la, WALK_WRITE, &w) != WALK_OK || w.gpa >= v->vm->ram_size)
		return NULL;
	return v->vm->mem + w.gpa;
}

/* Hardware TF = the guest's own, from the next entry on. */
static void put_guest_tf(struct vcpu *v)
{
	struct kvm_regs *regs = &v->run->s.regs.regs;

	regs->rflags = (regs->rflags & ~X86_RFLAGS_TF) | (v->step.guest_tf ? X86_RFLAGS_TF : 0);
	v->run->kvm_dirty_regs |= KVM_SYNC_X86_REGS;
}

/*
 * Single-step, or a breakpoint at bp (0: neither). Only changes cost an
 * ioctl. KVM drops TF when single-step goes off, the guest's own with it
 * (it cannot tell them apart), so the guest's is written back.
 */
static bool set_debug(struct vcpu *v, bool step, uint64_t bp)
{
	struct kvm_guest_debug dbg = { 0 };
	bool was = v->stepping;

	if (step == v->stepping && !bp && !v->step.watch && !v->step.predict)
		return true;
	if (step) {
		dbg.control = KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_SINGLESTEP;
	} else if (bp) {
		dbg.control = KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_USE_HW_BP;
		dbg.arch.debugreg[0] = bp;
		dbg.arch.debugreg[7] = DR7_L0;
	}
	if (!was && step)	/* unstepped, KVM_GET_REGS showed the real TF */
		v->step.guest_tf = (v->run->s.regs.regs.rflags & X86_RFLAGS_TF) != 0;
	if (ioctl(v->fd, KVM_SET_GUEST_DEBUG, &dbg) < 0)
		return stepping_fail(v, "KVM_SET_GUEST_DEBUG", errno);
	v->stepping = step;
	v->step.watch = bp != 0;
	v->step.watch_addr = bp;
	v->step.predict = false;
	if (!step)
		put_guest_tf(v);
	return true;
}

/*
 * The next guest instruction is the first of the handler for `vector`:
 * a hardware breakpoint there stops the vCPU before it runs, with TF out of
 * the way so that the frame holds the guest's own. Without one (a host that
 * has no working KVM_GUESTDBG_USE_HW_BP, a gate that cannot be read) the
 * handler's start runs before the next check, counted.
 */
/* The handler of `vector` from the long-mode IDT; false where it cannot be read. */
static bool gate_handler(struct vcpu *v, unsigned vector, uint64_t *handler)
{
	const struct kvm_sregs *sregs = &v->run->s.regs.sregs;
	struct guest_mem m = { v->vm->mem, v->vm->ram_size };
	struct paging p;
	uint8_t gate[16];

	/* The CPU reads the IDT as a supervisor, whatever the CPL. */
	guest_paging(v, &p);
	p.cpl = 0;
	if (!(sregs->efer & X86_EFER_LMA) || vector * 16 + 15 > sregs->idt.limit ||
	    pagewalk_read_as(&m, &p, sregs->idt.base + vector * 16, 0, gate, sizeof(gate)) !=
	    sizeof(gate) ||
	    !(gate[5] & 0x80))
		return false;
	*handler = step_gate_offset(gate);
	return true;
}

/*
 * Single-step again from RIP as it is now. Stock KVM keeps TF through an
 * exception it queues itself only at the RIP KVM_SET_GUEST_DEBUG recorded
 * (inject_pending_event() sets RF on a fault through __kvm_set_rflags(),
 * which drops TF anywhere else): issued here, the delivery keeps the VMM's
 * TF, so stepping comes back at the handler (or at its IRET, from the frame).
 */
static bool restep_here(struct vcpu *v)
{
	struct kvm_guest_debug dbg = { .control = KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_SINGLESTEP };

	if (ioctl(v->fd, KVM_SET_GUEST_DEBUG, &dbg) < 0)
		return stepping_fail(v, "KVM_SET_GUEST_DEBUG", errno);
	v->stepping = true;
	v->step.watch = false;
	v->step.predict = false;
	return true;
}

/*
 * Where hardware breakpoints work: will the instruction at RIP fault on
 * its memory operand (emulate_predict_fault)? Then single-step with a
 * breakpoint on that vector's handler as well, so that the vCPU stops
 * before the handler's first instruction, which the CPU delivers with TF
 * clear; stepping stays on, so a wrong forecast costs nothing but the
 * ioctls. false: plain stepping.
 */
static bool stepping_predicted(struct vcpu *v, const uint8_t *bytes, size_t n)
{
	struct emulate_snapshot snap = {
		.regs = v->run->s.regs.regs,
		.sregs = v->run->s.regs.sregs,
		.maxphyaddr = v->maxphyaddr,
		.mem = { v->vm->mem, v->vm->ram_size },
	};
	struct kvm_guest_debug dbg = {
		.control = KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_SINGLESTEP | KVM_GUESTDBG_USE_HW_BP,
	};
	uint64_t handler;
	int vector = emulate_predict_fault(&snap, bytes, n, NULL);

	if (vector < 0 || !gate_handler(v, (unsigned)vector, &handler))
		return false;
	if (v->step.predict && v->step.predict_addr == handler)
		return true;
	dbg.arch.debugreg[0] = handler;
	dbg.arch.debugreg[7] = DR7_L0;
	if (ioctl(v->fd, KVM_SET_GUEST_DEBUG, &dbg) < 0)
		return stepping_fail(v, "KVM_SET_GUEST_DEBUG", errno);
	v->stepping = true;
	v->step.watch = false;
	v->step.predict = true;
	v->step.predict_addr = handler;
	return true;
}

/*
 * Delivers exception `vector` (error code `err`, where the vector has one)
 * for the instruction at RIP, as the CPU would (step_delivery_plan), for
 * hosts where nothing can stop at a handler the CPU or KVM enters (no
 * working KVM_GUESTDBG_USE_HW_BP: the lab's): the VMM's TF stays set, so
 * the handler's first instruction is checked like any other. The frame is
 * written through the guest's page tables as the CPU's supervisor pushes
 * are (SMAP applies, whatever RFLAGS.AC), accessed and dirty bits set.
 * false, with nothing written, where a push would fault, shadow stacks are
 * on (CR4.CET) or the plan declines: the CPU or KVM delivers it then.
 */
static bool deliver_fault(struct vcpu *v, unsigned vector, uint32_t err)
{
	struct kvm_regs *regs = &v->run->s.regs.regs;
	const struct kvm_sregs *sregs = &v->run->s.regs.sregs;
	struct guest_mem m = { v->vm->mem, v->vm->ram_size };
	uint64_t gate_la = sregs->idt.base + vector * 16, desc_la, desc = 0, rflags;
	unsigned sel = sregs->cs.selector;
	struct step_delivery d;
	struct walk w, gate_w, desc_w;
	struct paging p;
	uint8_t gate[16], frame[48], raw[8];

	guest_paging(v, &p);
	p.cpl = 0;	/* the IDT, the GDT and the frame are supervisor accesses */
	p.ac = false;	/* implicit ones: SMAP applies whatever RFLAGS.AC says */
	desc_la = sregs->gdt.base + (sel & ~7u);
	if (!(sregs->efer & X86_EFER_LMA) || (sregs->cr4 & (1ull << 23)) || sregs->cs.dpl != 0 ||
	    (sel & 4) || vector * 16 + 15 > sregs->idt.limit || (sel | 7u) > sregs->gdt.limit ||
	    pagewalk(&m, &p, gate_la, 0, &gate_w) != WALK_OK ||
	    pagewalk(&m, &p, desc_la, 0, &desc_w) != WALK_OK ||
	    pagewalk_read_as(&m, &p, gate_la, 0, gate, sizeof(gate)) != sizeof(gate) ||
	    pagewalk_read_as(&m, &p, desc_la, 0, raw, sizeof(raw)) != sizeof(raw))
		return false;
	/*
	 * The CPU reloads CS from the GDT: a present 64-bit code segment of
	 * the same privilege, whose accessed bit the CPU sets if it is clear
	 * (SDM vol. 3 3.4.5), a supervisor write (then the GDT must take it).
	 */
	for (unsigned i = 0; i < 8; i++)
		desc |= (uint64_t)raw[i] << (8 * i);
	/* code (43), S (44), P (47), L (53), D (54) */
	if ((desc & (0x18ull << 40 | 1ull << 47 | 3ull << 53)) !=
	    (0x18ull << 40 | 1ull << 47 | 1ull << 53) ||
	    ((desc >> 45) & 3) != sregs->cs.dpl ||
	    (!(desc & (1ull << 40)) &&
	     (pagewalk(&m, &p, desc_la + 5, WALK_WRITE, &desc_w) != WALK_OK || desc_w.gpa >= m.size)))
		return false;
	/* The frame holds the guest's TF, and RF as every fault pushes it. */
	rflags = (regs->rflags & ~X86_RFLAGS_TF) | (v->step.guest_tf ? X86_RFLAGS_TF : 0) | X86_RFLAGS_RF;
	if (!step_delivery_plan(gate, (uint16_t)sel, sregs->ss.selector, regs->rip, regs->rsp,
				rflags, step_vector_error_code(vector), err, &d))
		return false;
	/* Both ends of the frame (it spans at most two pages) must take the writes. */
	for (unsigned end = 0; end < 2; end++) {
		uint64_t la = end ? d.rsp + 8ull * d.words - 1 : d.rsp;

		if (pagewalk(&m, &p, la, WALK_WRITE, &w) != WALK_OK || w.gpa >= m.size)
			return false;
	}
	for (unsigned i = 0; i < d.words; i++)
		for (unsigned b = 0; b < 8; b++)
			frame[8 * i + b] = (uint8_t)(d.frame[i] >> (8 * b));
	for (unsigned i = 0; i < 8 * d.words; i++) {
		uint8_t *at = stack_byte(v, d.rsp + i);

		if (!at)
			return false;	/* checked above: cannot happen */
		*at = frame[i];
	}
	/* Accessed (and, for what is written, dirty) bits, as the CPU's accesses set them. */
	pagewalk_set_ad(&m, &gate_w, false);
	if (!(desc & (1ull << 40))) {
		m.base[desc_w.gpa] |= 1;	/* byte 5, bit 0: the descriptor's accessed bit */
		pagewalk_set_ad(&m, &desc_w, true);
	} else {
		pagewalk_set_ad(&m, &desc_w, false);
	}
	for (unsigned end = 0; end < 2; end++)
		if (pagewalk(&m, &p, end ? d.rsp + 8ull * d.words - 1 : d.rsp, WALK_WRITE, &w) == WALK_OK)
			pagewalk_set_ad(&m, &w, true);
	regs->rsp = d.rsp;
	regs->rip = d.rip;
	regs->rflags = d.rflags;
	v->ops->set_regs(v, regs);	/* with the VMM's TF: the handler is stepped */
	v->step.guest_tf = false;
	v->stats.faults_delivered++;
	return true;
}

static void watch_handler(struct vcpu *v, unsigned vector)
{
	struct step_state *s = &v->step;
	uint64_t handler;

	s->inject_vector = -1;
	if (!gate_handler(v, vector, &handler)) {
		v->stats.unchecked_runs++;
		set_debug(v, true, 0);
		return;
	}
	if (v->vm->step_hwbp) {
		set_debug(v, false, handler);
		return;
	}
	/*
	 * No breakpoint: delivered with TF set, which some CPUs (the lab's)
	 * follow with a step at the handler's first instruction; the frame
	 * then gets the guest's own TF there (step_frame_fix). Delivery
	 * clears TF.
	 */
	s->frame_vector = (int)vector;
	s->frame_handler = handler;
	s->frame_tf = s->guest_tf;
	s->guest_tf = false;
	set_debug(v, true, 0);
}

/*
 * The VMM answered an MSR access with an error: the next KVM_RUN completes
 * it by queuing #GP, which KVM delivers at once, before any step. Its
 * handler is watched as for an event the VMM injects; without a breakpoint,
 * single-step is issued again at this RIP so that the delivery keeps TF
 * (restep_here). Only the debug state and RFLAGS.TF change here, which
 * completing a failed access leaves alone.
 */
static void stepping_msr_fault(struct vcpu *v)
{
	if (!v->step.checked)
		return;
	v->step.checked = false;	/* the access faults: no step of its own */
	watch_handler(v, X86_VEC_GP);
	if (v->stepping && !v->step.watch) {
		restep_here(v);
		/*
		 * KVM completes a pending access before it honours immediate_exit
		 * (KVM API, "struct kvm_run"): the #GP is then queued, not yet
		 * delivered, and the VMM can deliver it itself (msr_fault_queued).
		 */
		v->step.msr_fault = true;
		v->run->immediate_exit = 1;
	}
}

/*
 * After the KVM_RUN that stepping_msr_fault() made return at once: true
 * where KVM had queued the #GP and the VMM delivered it instead, the
 * handler's first instruction to be checked next. false: the #GP (if KVM
 * queued it at all; an older KVM may not have completed the access yet)
 * is left to KVM, and the handler runs to its IRET, counted.
 */
static bool msr_fault_queued(struct vcpu *v)
{
	struct kvm_vcpu_events ev, none;

	v->step.msr_fault = false;
	if (ioctl_get_events(v, &ev) ||
	    !(ev.exception.injected || ev.exception.pending) || ev.exception.nr != X86_VEC_GP ||
	    v->run->s.regs.regs.rip != v->step.rip)
		return false;
	none = ev;
	none.exception.injected = 0;
	none.exception.pending = 0;
	if (ioctl_set_events(v, &none))
		return false;
	/* watch_handler() took the guest's TF as delivery would: the frame wants it back. */
	v->step.guest_tf = v->step.frame_tf;
	if (deliver_fault(v, X86_VEC_GP, ev.exception.has_error_code ? ev.exception.error_code : 0)) {
		v->step.frame_vector = -1;
		return true;
	}
	v->step.guest_tf = false;
	if (ioctl_set_events(v, &ev))
		stepping_fail(v, "KVM_SET_VCPU_EVENTS (#GP)", errno);
	return false;
}

/*
 * A step that stopped at the first instruction of the handler of an event
 * delivered with the VMM's TF: the frame at RSP shows it, so the guest's
 * own goes in its place. Where the CPU ran the handler without stopping,
 * the handler ran unchecked.
 */
static void frame_fix(struct vcpu *v)
{
	struct step_state *s = &v->step;
	unsigned vector = (unsigned)s->frame_vector;
	/* RIP, CS, RFLAGS; an error code comes first for some vectors. */
	uint64_t la = v->run->s.regs.regs.rsp + (step_vector_error_code(vector) ? 24 : 16) + 1;
	uint8_t *b;

	s->frame_vector = -1;
	if (v->run->s.regs.regs.rip != s->frame_handler) {
		v->stats.unchecked_runs++;
		return;
	}
	b = stack_byte(v, la);
	if (b)
		*b = (uint8_t)((*b & ~1u) | (s->frame_tf ? 1u : 0u));
}

/*
 * A step diverted by an exception the VMM did not deliver (step_diverted):
 * true where the vCPU stopped at the first instruction of the handler
 * (some CPUs step into it, the lab's among them), with the frame the CPU
 * just pushed at RSP: the frame then gets the guest's own TF in place of
 * the VMM's, and nothing ran unchecked. Elsewhere the handler, or its
 * start, ran before this exit (delivery clears TF; the IRET restores it
 * from the frame): the caller counts it.
 */
static bool diverted_at_handler(struct vcpu *v)
{
	const struct kvm_sregs *sregs = &v->run->s.regs.sregs;
	const struct kvm_regs *regs = &v->run->s.regs.regs;
	struct step_state *s = &v->step;
	struct guest_mem m = { v->vm->mem, v->vm->ram_size };
	uint8_t idt[256 * 16], raw[32];
	unsigned gates = (sregs->idt.limit + 1u) / 16, vector;
	uint64_t w[4];
	struct paging p;
	uint8_t *b;
	int slot;

	if (gates > 256)
		gates = 256;
	guest_paging(v, &p);
	p.cpl = 0;	/* the CPU reads the IDT as a supervisor */
	if (!(sregs->efer & X86_EFER_LMA) || !gates)
		return false;
	gates = (unsigned)(pagewalk_read_as(&m, &p, sregs->idt.base, 0, idt, gates * 16) / 16);
	for (vector = 0; vector < gates; vector++)
		if ((idt[vector * 16 + 5] & 0x80) && step_gate_offset(idt + vector * 16) == regs->rip)
			break;
	if (vector == gates || read_linear(v, regs->rsp, 0, raw, sizeof(raw)) != sizeof(raw))
		return false;
	memcpy(w, raw, sizeof(w));
	slot = step_frame_rflags(w, step_vector_error_code(vector), s->rip,
				 step_advance(s->rip, s->insn.len, s->mode));
	b = slot < 0 ? NULL : stack_byte(v, regs->rsp + 8u * (unsigned)slot + 1);
	if (!b)
		return false;
	/* A fault pushes RFLAGS as the instruction began. */
	*b = (uint8_t)((*b & ~1u) | (s->tf_at_start ? 1u : 0u));
	return true;
}

static uint64_t read_fmask(struct vcpu *v)
{
	/* struct kvm_msrs ends in a flexible array: one entry right behind it. */
	union {
		struct kvm_msrs hdr;
		uint8_t bytes[sizeof(struct kvm_msrs) + sizeof(struct kvm_msr_entry)];
	} m = { .hdr.nmsrs = 1 };

	m.hdr.entries[0].index = MSR_SYSCALL_MASK;
	/* Not readable: assume TF masked, as every 64-bit kernel does. */
	if (ioctl(v->fd, KVM_GET_MSRS, &m) != 1)
		return X86_RFLAGS_TF;
	return m.hdr.entries[0].data;
}

/* The guest's TF once the instruction at RIP completes. */
static bool tf_after(struct vcpu *v)
{
	const struct kvm_regs *regs = &v->run->s.regs.regs;
	const struct step_insn *insn = &v->step.insn;
	struct step_tf_inputs in = { .tf = v->step.guest_tf };
	uint8_t buf[8] = { 0 };
	uint64_t at = regs->rsp;

	switch (insn->kind) {
	case STEP_IRET:
		at += 2ull * insn->opsize;	/* RIP, CS, then RFLAGS */
		/* fallthrough */
	case STEP_POPF:
		in.popped_valid = read_linear(v, emulate_stack_la(&v->run->s.regs.sregs, regs->rflags, at),
					      0, buf, insn->opsize) == insn->opsize;
		for (unsigned i = 0; i < 8; i++)
			in.popped |= (uint64_t)buf[i] << (8 * i);
		break;
	case STEP_SYSRET:
		in.r11 = regs->r11;
		break;
	case STEP_SYSCALL:
		in.fmask = read_fmask(v);
		break;
	default:
		break;
	}
	v->step.popped = in.popped_valid ? in.popped : 0;
	return step_tf_after(insn->kind, &in);
}

/*
 * PUSHF pushed hardware RFLAGS, whose TF is the VMM's: put the guest's own
 * in the pushed copy, so that stepping stays invisible.
 */
static void fix_pushf(struct vcpu *v)
{
	const struct kvm_regs *regs = &v->run->s.regs.regs;
	/* TF: bit 0 of byte 1, at SS:RSP as the stack's width has it. */
	uint8_t *b = stack_byte(v, emulate_stack_la(&v->run->s.regs.sregs, regs->rflags,
						    regs->rsp) + 1);

	if (b)
		*b = (uint8_t)((*b & ~1u) | (v->step.tf_at_start ? 1u : 0u));
}

/*
 * MOV SS and POP SS hold off the step trap for one more instruction (the
 * CPU's own rule), so the one after runs in the same step. It cannot be a
 * split lock if it has no LOCK prefix or XCHG; if it may be, it ran
 * unchecked, and says so.
 */
static void check_shadowed_at(struct vcpu *v, uint64_t rip)
{
	uint8_t next[DECODE_INSN_MAX];
	size_t n = 0;

	if (v->step.insn.len)
		n = read_linear(v, emulate_code_la(&v->run->s.regs.sregs, v->run->s.regs.regs.rflags,
						   step_advance(rip, v->step.insn.len, v->step.mode)),
				WALK_FETCH, next, sizeof(next));
	if (!n || decode_maybe_locked(guest_mode(v), next, n))
		v->stats.unchecked_runs++;
}

static void check_shadowed(struct vcpu *v)
{
	check_shadowed_at(v, v->run->s.regs.regs.rip);
}

/* Hands the guest its own #DB: DR6 as the CPU would leave it, then the event. */
static void reinject_db(struct vcpu *v, uint64_t payload)
{
	struct kvm_debugregs dr;
	struct kvm_vcpu_events ev;
	int r;

	if (ioctl(v->fd, KVM_GET_DEBUGREGS, &dr) < 0) {
		stepping_fail(v, "KVM_GET_DEBUGREGS", errno);
		return;
	}
	dr.dr6 = step_dr6_deliver(dr.dr6, payload);
	dr.flags = 0;
	if (ioctl(v->fd, KVM_SET_DEBUGREGS, &dr) < 0) {
		stepping_fail(v, "KVM_SET_DEBUGREGS", errno);
		return;
	}
	r = v->ops->get_events(v, &ev);
	if (!r) {
		/* injected: without KVM_CAP_EXCEPTION_PAYLOAD, pending is dropped. */
		ev.exception.injected = 1;
		ev.exception.pending = 0;
		ev.exception.nr = 1;
		ev.exception.has_error_code = 0;
		ev.exception.error_code = 0;
		ev.exception_has_payload = 0;
		ev.exception_payload = 0;
		r = v->ops->set_events(v, &ev);
	}
	if (r) {
		stepping_fail(v, "KVM_SET_VCPU_EVENTS (#DB)", -r);
		return;
	}
	v->stats.db_reinjected++;
}

/* KVM_EXIT_DEBUG under emulate. */
static void stepping_debug_exit(struct vcpu *v)
{
	struct step_state *s = &v->step;
	uint64_t dr6 = v->run->debug.arch.dr6;
	uint64_t hit = (dr6 ^ X86_DR6_ACTIVE_LOW) & X86_DR6_VOLATILE;
	struct kvm_debugregs dr = { 0 };
	struct step_db d;
	bool escaped, at_handler = false;

	if (s->watch) {
		/*
		 * Our breakpoint: the event is delivered (or the IRET done), the
		 * next instruction is checked before it runs. set_debug() reads
		 * the guest's TF back from the unstepped registers.
		 */
		bool ours = (hit & 1) && v->run->debug.arch.pc == s->watch_addr;

		if (!set_debug(v, true, 0) || ours)
			return;
		/*
		 * Something else: the guest's own #DB (its TF is the hardware's
		 * while watching; DR0 is ours, its own breakpoints are off), or
		 * the event went elsewhere (a fault in its delivery).
		 */
		v->stats.unchecked_runs++;
		if (hit & (X86_DR6_BS | X86_DR6_BD | X86_DR6_BT))
			reinject_db(v, hit & ~X86_DR6_B0_3);
		return;
	}
	if (!v->stepping) {
		fatal_exit(v, VMM_EXIT_UNHANDLED, "debug exit (KVM_EXIT_DEBUG) while not single-stepping, DR6 0x%llx",
			   (unsigned long long)dr6);
		return;
	}
	v->stats.single_steps++;
	/* The forecast fault's handler, reached: the VMM's breakpoint, not the guest's. */
	if (s->predict && (hit & 1) && v->run->debug.arch.pc == s->predict_addr) {
		at_handler = true;
		hit &= ~1ull;
		dr6 &= ~1ull;
	}
	if ((hit & X86_DR6_B0_3) && ioctl(v->fd, KVM_GET_DEBUGREGS, &dr) < 0) {
		stepping_fail(v, "KVM_GET_DEBUGREGS", errno);
		return;
	}
	/*
	 * A step that comes back where the checked instruction cannot have
	 * taken the vCPU, or after a stretch nothing checked, ends in an IRET
	 * of a handler the CPU entered by itself: TF was clear there (delivery
	 * clears it), so the trap is the VMM's, and the guest's TF is what it
	 * was before the event (the frame held the VMM's).
	 */
	if (s->frame_vector >= 0)
		frame_fix(v);
	escaped = s->checked && (hit & X86_DR6_BS) &&
		  step_escaped(&s->insn, s->rip, v->run->s.regs.regs.rip, true, true);
	if (s->checked && ((hit & X86_DR6_BS) || at_handler) && !escaped &&
	    step_diverted(&s->insn, s->rip, v->run->s.regs.regs.rip, s->mode)) {
		/* The instruction faulted: no step of its own is owed to the guest. */
		if (diverted_at_handler(v)) {
			s->checked = false;
			s->guest_tf = false;	/* delivery clears it */
		} else {
			escaped = true;
		}
	}
	d = step_debug_exit(dr6, s->checked && !escaped && s->tf_at_start, dr.dr7);
	if (escaped || !s->checked)
		v->stats.unchecked_runs += escaped;
	else if (d.completed) {
		if (s->insn.kind == STEP_PUSHF)
			fix_pushf(v);
		if (s->insn.kind == STEP_SYSCALL) {
			struct kvm_regs *r = &v->run->s.regs.regs;

			r->r11 = step_syscall_r11(r->r11, s->tf_at_start);
			v->run->kvm_dirty_regs |= KVM_SYNC_X86_REGS;
		}
		if (s->insn.kind == STEP_MOV_DR)
			s->dr_valid = false;
		/*
		 * STI's interrupt shadow holds the step trap on some CPUs (the
		 * lab's), as MOV SS does everywhere: the next instruction ran too.
		 */
		if (s->insn.kind == STEP_STI &&
		    v->run->s.regs.regs.rip != step_advance(s->rip, s->insn.len, s->mode))
			check_shadowed_at(v, s->rip);
		/* RF, set by a #DB handler to step over its breakpoint, holds for one instruction. */
		s->iret_rf = s->insn.kind == STEP_IRET && (s->popped & X86_RFLAGS_RF);
		if (step_delivers(&s->insn, X86_RFLAGS_OF) &&
		    gate_handler(v, s->insn.vector, &s->frame_handler)) {
			s->frame_vector = s->insn.vector;
			s->frame_tf = s->tf_at_start;
			frame_fix(v);
		}
		s->guest_tf = s->tf_after;
	}
	s->checked = false;
	if (d.inject)
		reinject_db(v, d.payload);
}

static bool refresh_dr(struct vcpu *v)
{
	struct kvm_debugregs dr;

	if (ioctl(v->fd, KVM_GET_DEBUGREGS, &dr) < 0)
		return stepping_fail(v, "KVM_GET_DEBUGREGS", errno);
	memcpy(v->step.db, dr.db, sizeof(v->step.db));
	v->step.dr7 = dr.dr7;
	v->step.dr_valid = true;
	return true;
}

/* The memory operand of the locked instruction at RIP, if it is one. */
static bool locked_operand(struct vcpu *v, struct emulate_access *acc)
{
	const struct kvm_regs *regs = &v->run->s.regs.regs;
	const struct kvm_sregs *sregs = &v->run->s.regs.sregs;
	enum decode_mode mode = guest_mode(v);
	uint8_t bytes[DECODE_INSN_MAX];
	struct decode_insn insn;
	struct emulate_exception fault;
	size_t n = read_linear(v, emulate_code_la(sregs, regs->rflags, regs->rip), WALK_FETCH,
			       bytes, sizeof(bytes));

	if (!n || !decode_maybe_locked(mode, bytes, n) || decode_insn(mode, bytes, n, &insn))
		return false;
	acc->size = insn.size;
	return emulate_linear(&insn, sregs, regs->rflags, emulate_effective(&insn, regs), insn.size,
			 &acc->la, &fault);
}

/*
 * The split-lock check, repeated for as many split locks as come in a row.
 * An emulated one is completed by the VMM, not the CPU, so what the CPU
 * would do around it is done here: its instruction breakpoint fires first
 * (the check is skipped, the CPU raises it), RF clears afterwards, and the
 * #DB owed for the guest's TF or a data breakpoint it wrote is handed over.
 * false: the VM is stopping, or an event is due instead.
 */
static bool check_split_locks(struct vcpu *v)
{
	struct step_state *s = &v->step;
	struct kvm_regs *regs = &v->run->s.regs.regs;

	if (!s->dr_valid && !refresh_dr(v))
		return false;
	for (;;) {
		struct emulate_access acc;
		bool data, tf = s->guest_tf;
		enum splitlock_outcome o;
		uint64_t payload;

		uint64_t exec = step_exec_hits(s->db, s->dr7, regs->rip,
					       regs->rflags | (s->iret_rf ? X86_RFLAGS_RF : 0));

		s->iret_rf = false;

		/*
		 * The guest's instruction breakpoint fires before the instruction:
		 * delivered here, as the CPU would, rather than left to hardware
		 * that some KVMs (the project's) deliver with the VMM's TF showing.
		 */
		if (exec) {
			reinject_db(v, exec);
			return false;
		}
		data = v->vm->guest_databp && step_has_data_bp(s->dr7) && locked_operand(v, &acc);
		o = splitlock_check(v);
		if (o == SPLITLOCK_STOPPED || vm_stopping(v->vm))
			return false;
		if (o != SPLITLOCK_EMULATED)
			return s->inject_vector < 0;
		regs->rflags &= ~X86_RFLAGS_RF;
		v->run->kvm_dirty_regs |= KVM_SYNC_X86_REGS;
		payload = (tf ? X86_DR6_BS : 0) | (data ? step_data_hits(s->db, s->dr7, acc.la, acc.size) : 0);
		if (payload) {
			reinject_db(v, payload);
			return false;
		}
		vm_pause_point(v->vm, v);
	}
}

/*
 * Before each entry under emulate: every instruction is checked before it
 * runs, however many split locks come in a row (each emulated one moves RIP
 * on, and the next is checked before anything runs); pauses and stops are
 * honoured in between, so the VM stays responsive.
 */
static void stepping_before_run(struct vcpu *v)
{
	struct vm *vm = v->vm;
	struct step_state *s = &v->step;
	struct kvm_regs *regs = &v->run->s.regs.regs;
	const struct kvm_sregs *sregs = &v->run->s.regs.sregs;
	uint8_t bytes[DECODE_INSN_MAX];
	unsigned cpl, deliveries = 0;
	size_t n;

	s->checked = false;
	s->hlt = false;
	if (s->watch)		/* the pending delivery goes first */
		return;
	/* An event is due: the handler runs next, not the instruction at RIP. */
	if (s->inject_vector >= 0) {
		watch_handler(v, (unsigned)s->inject_vector);
		return;
	}
again:
	if (!check_split_locks(v)) {
		if (s->inject_vector >= 0 && !vm_stopping(vm))
			watch_handler(v, (unsigned)s->inject_vector);
		return;
	}
	cpl = sregs->cs.dpl;
	/* Where this KVM cannot step CPL3 code (probed), it runs unchecked. */
	if (!vm->step_cpl3 && cpl != 0) {
		v->stats.unchecked_runs++;
		set_debug(v, false, 0);
		return;
	}
	if (!v->stepping)
		s->guest_tf = (regs->rflags & X86_RFLAGS_TF) != 0;
	n = read_linear(v, emulate_code_la(sregs, regs->rflags, regs->rip), WALK_FETCH, bytes,
			sizeof(bytes));
	step_classify(bytes, n, (struct step_mode){ .cs_l = sregs->cs.l, .cs_d = sregs->cs.db },
		      &s->insn);
	if (!s->insn.rep && (s->insn.kind == STEP_OTHER || s->insn.kind == STEP_PUSHF ||
			     s->insn.kind == STEP_POPF)) {
		unsigned len = decode_length_memo(&v->lengths, regs->rip, guest_mode(v), bytes, n,
						  &s->insn.falls);

		if (s->insn.len && s->insn.len != len)
			s->insn.falls = false;
		s->insn.len = len;
	}
	s->mode = (struct step_mode){ .cs_l = sregs->cs.l, .cs_d = sregs->cs.db };
	s->rip = regs->rip;
	s->tf_at_start = s->guest_tf;
	if (step_hlt_unstepped(&s->insn, cpl)) {
		s->hlt = true;
		set_debug(v, false, 0);
		return;
	}
	if (s->insn.kind == STEP_INT1) {
		/* As the CPU: RIP past it, #DB through the IDT, DR6 untouched. */
		struct kvm_vcpu_events ev;

		if (v->ops->get_events(v, &ev) == 0) {
			regs->rip += s->insn.len;
			v->run->kvm_dirty_regs |= KVM_SYNC_X86_REGS;
			ev.exception.injected = 1;
			ev.exception.pending = 0;
			ev.exception.nr = 1;
			ev.exception.has_error_code = 0;
			ev.exception.error_code = 0;
			if (v->ops->set_events(v, &ev) == 0) {
				s->guest_tf = false;
				watch_handler(v, 1);
				return;
			}
		}
		stepping_fail(v, "KVM_SET_VCPU_EVENTS (INT1)", errno);
		return;
	}
	if (vm->step_hwbp && step_delivers(&s->insn, regs->rflags)) {
		s->guest_tf = false;
		watch_handler(v, s->insn.vector);
		return;
	}
	/*
	 * No breakpoint can stop at a handler here: an access certain to fault
	 * (emulate_predict_fault) is delivered by the VMM, and the handler checked.
	 */
	if (!vm->step_hwbp && s->insn.falls && deliveries < 4) {
		struct emulate_snapshot snap = {
			.regs = *regs, .sregs = *sregs, .maxphyaddr = v->maxphyaddr,
			.mem = { vm->mem, vm->ram_size },
		};
		struct emulate_forecast f;

		if (emulate_predict_segment_fault(&snap, bytes, n, &f) >= 0 && f.certain &&
		    (f.ex.vector == X86_VEC_SS || f.ex.vector == X86_VEC_GP) && deliver_fault(v, f.ex.vector, f.ex.error_code)) {
			deliveries++;
			goto again;
		}
	}
	s->tf_after = tf_after(v);
	/*
	 * An IRET that gives the guest TF: some KVMs (the project's own) run
	 * the next instruction in the same step. A breakpoint at the return
	 * address stops before it on every KVM.
	 */
	if (s->insn.kind == STEP_IRET && s->tf_after && vm->step_hwbp) {
		uint8_t ret[8] = { 0 };
		uint64_t to = 0;

		if (read_linear(v, regs->rsp, 0, ret, s->insn.opsize) == s->insn.opsize) {
			for (unsigned i = 0; i < s->insn.opsize; i++)
				to |= (uint64_t)ret[i] << (8 * i);
			set_debug(v, false, to);
			return;
		}
	}
	if (s->insn.kind == STEP_MOV_SS)
		check_shadowed(v);
	if (!(vm->step_hwbp && s->insn.falls && stepping_predicted(v, bytes, n)) &&
	    !set_debug(v, true, 0))
		return;
	if (vm_stopping(vm))
		return;
	if (s->rearm) {
		regs->rflags |= X86_RFLAGS_TF;
		v->run->kvm_dirty_regs |= KVM_SYNC_X86_REGS;
		s->rearm = false;
	}
	s->checked = true;
}

/* After each exit under emulate, before it is handled. */
static void stepping_after_exit(struct vcpu *v, uint32_t reason)
{
	struct step_state *s = &v->step;

	/* A completing run that exited instead of returning EINTR: TF was there after all. */
	s->resync = false;
	if (v->stepping && step_rearm_after_exit(reason))
		s->rearm = true;
	/*
	 * Watching for a handler or a return address, any other exit means
	 * the guest went elsewhere unwatched (a fault in the delivery or in
	 * the IRET): stepping resumes from here.
	 */
	if (s->watch && reason != KVM_EXIT_DEBUG) {
		v->stats.unchecked_runs++;
		set_debug(v, true, 0);
		return;
	}
	if (reason == KVM_EXIT_DEBUG || reason == KVM_EXIT_HLT || !s->checked)
		return;
	if (!step_escaped(&s->insn, s->rip, v->run->s.regs.regs.rip, false, false))
		return;
	v->stats.unchecked_runs++;
	/*
	 * The guest ran on unstepped: KVM lost TF (an exception it queued by
	 * itself, docs/design.md). After an exit KVM completes, nothing may be
	 * written before the next KVM_RUN, so that run completes it with
	 * immediate_exit and returns before the guest runs; stepping then
	 * resumes here rather than at the next exit KVM does not complete.
	 */
	if (v->stepping && step_completes_in_kvm(reason)) {
		s->resync = true;
		s->resync_rip = v->run->s.regs.regs.rip;
		v->run->immediate_exit = 1;
	}
}

/*
 * After a KVM_RUN that returned EINTR with an exit still to complete: true
 * where KVM completed it first (the KVM API says pending operations are;
 * RIP moved on), so the VMM may check and re-arm from here.
 */
static bool resynced(struct vcpu *v)
{
	struct step_state *s = &v->step;

	if (!s->resync)
		return false;
	s->resync = false;
	if (v->run->s.regs.regs.rip == s->resync_rip)
		return false;	/* not completed yet (a REP string I/O's next round, an older KVM) */
	s->rearm = true;
	s->checked = false;
	return true;
}

void *vcpu_thread(void *arg)
{
	struct vcpu *v = arg;
	struct vm *vm = v->vm;
	bool completing = false;
	sigset_t kick;

	this_vcpu = v;
	sigemptyset(&kick);
	sigaddset(&kick, VM_KICK_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &kick, NULL);

	while (!vm_stopping(vm)) {
		vm_pause_point(vm, v);
		/*
		 * After an I/O, MMIO or MSR exit the instruction is complete only
		 * once KVM_RUN re-enters (KVM API, "struct kvm_run"): it was
		 * checked before it started, and touching registers or debug
		 * state now would change an instruction KVM is half-way through.
		 */
		if (vm->split_lock_emulate && !completing) {
			stepping_before_run(v);
			if (vm_stopping(vm))
				break;
		}
		if (ioctl(v->fd, KVM_RUN, NULL) < 0) {
			if (errno == EINTR || errno == EAGAIN) {
				v->run->immediate_exit = 0;
				if (completing && v->step.msr_fault)
					completing = !msr_fault_queued(v);
				else if (completing && resynced(v))
					completing = false;
				continue;
			}
			vm_fail(vm, VMM_EXIT_HOST, "vCPU %u: KVM_RUN failed: %s (errno %d)",
				v->index, strerror(errno), errno);
			break;
		}
		completing = step_completes_in_kvm(v->run->exit_reason);
		handle_exit(v);
	}
	this_vcpu = NULL;
	return NULL;
}
