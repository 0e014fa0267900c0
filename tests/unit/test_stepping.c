/* SPDX-License-Identifier: MIT */
/*
 * --split-lock=emulate's engine (src/vmm/stepping.c) through the fake KVM:
 * each flow as the run loop drives it, entry by entry, with the exits a
 * KVM would give.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "array_size.h"
#include "capture.h"
#include "dispatch.h"
#include "fake_kvm.h"
#include "splitlock.h"
#include "step.h"
#include "stepping.h"
#include "vcpu.h"
#include "vmm_boot.h"
#include "vmm_msr.h"
#include "vmm_status.h"
#include "x86.h"

#define RAM      (4ull << 20)
#define CODE     0x101000ull
#define IDT      0x60000ull
#define NGATES   32u
#define STACK    0x180000ull
#define HANDLER(vector) (0x120000ull + (vector) * 0x100ull)
/* DR6 as a step exit reports it: the active-low bits set, BS. */
#define DR6_STEP (X86_DR6_ACTIVE_LOW | X86_DR6_BS)

static struct fake_vm fv;
static uint8_t *ram;
/* lock xadd [rdi], eax */
static const uint8_t lock_xadd[] = { 0xf0, 0x0f, 0xc1, 0x07 };

/*
 * ncpus vCPUs, the first at CODE (nops), CPL0 in long mode, an IDT of interrupt gates to
 * HANDLER(vector) (nops), a 64-bit code descriptor at BOOT_SEL_CODE64 and
 * a flat data one at BOOT_SEL_DATA, and the engine set up as vcpu_create()
 * does under emulate.
 */
static int setup_vm(bool hwbp, unsigned ncpus)
{
	struct fake_vcpu *fc;
	struct vcpu *v;
	uint64_t code64 = 0x00af9b000000ffffull, data = 0x00cf93000000ffffull;

	if (fake_vm_init(&fv, ncpus, RAM))
		return -1;
	ram = fv.vm.mem;
	fv.vm.split_lock_emulate = true;
	fv.vm.host.step_cpl3 = true;
	fv.vm.host.step_hwbp = hwbp;
	v = &fv.vm.vcpus[0];
	fc = fake_vcpu(v);
	memcpy(ram + BOOT_GDT_ADDR + BOOT_SEL_CODE64, &code64, sizeof(code64));
	memcpy(ram + BOOT_GDT_ADDR + BOOT_SEL_DATA, &data, sizeof(data));
	for (unsigned i = 0; i < NGATES; i++) {
		uint8_t *g = ram + IDT + 16 * i;
		uint64_t h = HANDLER(i);

		memset(g, 0, 16);
		g[0] = (uint8_t)h;
		g[1] = (uint8_t)(h >> 8);
		g[2] = BOOT_SEL_CODE64;
		g[5] = 0x8e;	/* present interrupt gate, DPL0 */
		g[6] = (uint8_t)(h >> 16);
		g[7] = (uint8_t)(h >> 24);
		memset(ram + h, 0x90, 0x100);
	}
	memset(ram + CODE, 0x90, 0x100);
	fc->sregs.idt.base = IDT;
	fc->sregs.idt.limit = NGATES * 16 - 1;
	fc->regs.rip = CODE;
	fc->regs.rsp = STACK;
	stepping_init(v, &fc->regs, &fc->sregs);
	return 0;
}

/* cmocka setups: with or without working breakpoints, one or two vCPUs. */
#define SETUP(name, hwbp, ncpus) \
	static int name(void **state) \
	{ \
		(void)state; \
		return setup_vm(hwbp, ncpus); \
	}
SETUP(setup_hwbp, true, 1)
SETUP(setup_no_hwbp, false, 1)
SETUP(setup_hwbp_2cpus, true, 2)
SETUP(setup_no_hwbp_2cpus, false, 2)

static int teardown(void **state)
{
	(void)state;
	fake_vm_destroy(&fv);
	return 0;
}

static struct kvm_regs *regs(struct vcpu *v)
{
	return &v->run->s.regs.regs;
}

/*
 * The run loop's part after KVM_RUN returned an exit: the real dispatch.
 * An I/O exit is a write of nothing to port 0x80, in the run page's second
 * half as KVM puts it; no exit here may stop the VM.
 */
static void exit_with(struct vcpu *v, uint32_t reason)
{
	v->run->exit_reason = reason;
	if (reason == KVM_EXIT_IO)
		v->run->io = (typeof(v->run->io)){ .direction = KVM_EXIT_IO_OUT, .size = 1,
						   .port = 0x80, .count = 1, .data_offset = 2048 };
	dispatch_exit(v);
	assert_false(vm_stopping(v->vm));
}

/* A step exit: the instruction ran and the vCPU is now at rip (a #DB of the CPU's: DR7 written). */
static void step_to_la(struct vcpu *v, uint64_t rip, uint64_t la, uint64_t dr6)
{
	regs(v)->rip = rip;
	v->run->debug.arch.dr6 = dr6;
	v->run->debug.arch.dr7 = 0x400;
	v->run->debug.arch.pc = la;	/* KVM reports the linear address: CS.base + RIP */
	exit_with(v, KVM_EXIT_DEBUG);
}

static void step_to(struct vcpu *v, uint64_t rip, uint64_t dr6)
{
	step_to_la(v, rip, rip, dr6);
}

/* The step exit KVM's emulator makes after an instruction it emulated: DR7 left as it was. */
static void step_to_emulated(struct vcpu *v, uint64_t rip)
{
	regs(v)->rip = rip;
	v->run->debug.arch.dr6 = DR6_STEP;
	v->run->debug.arch.pc = rip;
	exit_with(v, KVM_EXIT_DEBUG);
}

static uint64_t word_at(uint64_t gpa)
{
	uint64_t w;

	memcpy(&w, ram + gpa, sizeof(w));
	return w;
}

/* vector's gate gets IST 1 and TR no TSS: only the CPU can deliver it. */
static void no_vmm_delivery(struct vcpu *v, unsigned vector)
{
	ram[IDT + 16 * vector + 4] = 1;
	v->run->s.regs.sregs.tr.present = 0;
}

/* CPL3 code at CODE on the stack at STACK, RSP0 of the TSS at RSP0. */
#define RSP0 0x1c0000ull
static void to_cpl3(struct vcpu *v)
{
	struct kvm_sregs *sr = &v->run->s.regs.sregs;
	uint64_t rsp0 = RSP0;

	sr->cs.selector = 0x33;
	sr->cs.dpl = 3;
	sr->ss.selector = 0x2b;
	sr->ss.dpl = 3;
	memcpy(ram + BOOT_TSS_ADDR + 4, &rsp0, 8);
}

/* A nop is checked, stepped, and the next entry writes TF back without a new ioctl. */
static void plain_step(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);

	(void)state;
	stepping_before_run(v);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_STEP);
	assert_int_equal(FAKE_CALLS(fc, set_guest_debug), 1);
	assert_int_equal(fc->debug.control, KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_SINGLESTEP);

	/* KVM hides its TF from the registers it hands back. */
	step_to(v, CODE + 1, DR6_STEP);
	assert_int_equal(v->stats.single_steps, 1);
	assert_int_equal(v->stats.unchecked_runs, 0);
	assert_int_equal(FAKE_CALLS(fc, set_events), 0);

	v->run->kvm_dirty_regs = 0;
	stepping_before_run(v);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_int_equal(v->step.rip, CODE + 1);
	assert_int_equal(FAKE_CALLS(fc, set_guest_debug), 1);
	assert_true(regs(v)->rflags & X86_RFLAGS_TF);
	assert_true(v->run->kvm_dirty_regs & KVM_SYNC_X86_REGS);
}

/* lock xadd [rdi], eax across a line: emulated before entry, then the next one is checked. */
static void split_lock_emulated(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct capture c;
	uint32_t result;

	(void)state;
	memcpy(ram + CODE, lock_xadd, sizeof(lock_xadd));
	memcpy(ram + 0x20003e, (uint32_t[]){ 0x11223344 }, 4);
	regs(v)->rdi = 0x20003e;
	regs(v)->rax = 5;
	assert_int_equal(capture_stderr(&c), 0);
	stepping_before_run(v);
	assert_int_equal(capture_close(&c), 0);
	assert_non_null(strstr(c.buf, "split lock at RIP 0x101000 (lock xadd"));
	free(c.buf);
	assert_int_equal(v->stats.split_locks_detected, 1);
	assert_int_equal(v->stats.split_locks_emulated, 1);
	memcpy(&result, ram + 0x20003e, 4);
	assert_int_equal(result, 0x11223349);
	assert_int_equal(regs(v)->rax, 0x11223344);
	/* RIP moved on and the instruction behind it is the one stepped. */
	assert_int_equal(regs(v)->rip, CODE + sizeof(lock_xadd));
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_int_equal(v->step.rip, CODE + sizeof(lock_xadd));
	assert_false(vm_stopping(&fv.vm));
}

/*
 * The guest's data breakpoint on a split lock the VMM completed (where
 * KVM lets the guest's data breakpoints fire): the #DB the CPU's write
 * raises after the instruction, B1 in DR6, delivered by the VMM.
 */
static void split_lock_data_breakpoint(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);
	uint64_t frame = STACK - 40;

	(void)state;
	fv.vm.host.guest_databp = true;
	memcpy(ram + CODE, lock_xadd, sizeof(lock_xadd));
	regs(v)->rdi = 0x20003e;
	/* DR1: a dword write breakpoint on the operand's second line (L1, RW1 01, LEN1 11). */
	fc->debugregs.db[1] = 0x200040;
	fc->debugregs.dr7 = 0x400 | X86_BIT(2) | (1ull << 20) | (3ull << 22);
	fc->debugregs.dr6 = X86_DR6_ACTIVE_LOW;
	stepping_before_run(v);
	assert_int_equal(v->stats.split_locks_emulated, 1);
	assert_int_equal(v->stats.db_reinjected, 1);
	assert_int_equal(fc->debugregs.dr6 & 0xf, 2);
	assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_DB));
	assert_int_equal(word_at(frame), CODE + sizeof(lock_xadd));	/* a trap */
	/* Off the operand (DR1 moved, as a MOV DR would, which drops the cache): no #DB. */
	fc->debugregs.db[1] = 0x200100;
	v->step.dr_valid = false;
	fc->debugregs.dr6 = X86_DR6_ACTIVE_LOW;
	regs(v)->rip = CODE;
	regs(v)->rsp = STACK;
	stepping_before_run(v);
	assert_int_equal(v->stats.split_locks_emulated, 2);
	assert_int_equal(v->stats.db_reinjected, 1);
	assert_int_equal(regs(v)->rip, CODE + sizeof(lock_xadd));
}

/* A #DB the guest got for a step trap: BS, and these B0-3 beside it. */
static void assert_step_trap(uint64_t dr6, uint64_t b0_3)
{
	assert_true(dr6 & X86_DR6_BS);
	assert_int_equal(dr6 & X86_DR6_B0_3, b0_3);
}

/*
 * The same with the guest's TF and its DR0 enabled on the instruction
 * behind: the #DB the VMM makes for the split lock it completed has B0
 * beside BS where the CPU reports that (the probe's exec_bp_beside_step),
 * BS alone elsewhere. Returns the guest's DR6.
 */
static uint64_t split_lock_tf_dr6(bool cpu_reports)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);
	struct capture c;

	fv.vm.host.exec_bp_beside_step = cpu_reports;
	memcpy(ram + CODE, lock_xadd, sizeof(lock_xadd));
	regs(v)->rdi = 0x20003e;
	v->step.guest_tf = true;
	fc->debugregs.db[0] = CODE + sizeof(lock_xadd);
	fc->debugregs.dr7 = 0x401;	/* L0, execute */
	assert_int_equal(capture_stderr(&c), 0);
	stepping_before_run(v);
	assert_int_equal(capture_close(&c), 0);
	free(c.buf);
	assert_int_equal(v->stats.split_locks_emulated, 1);
	assert_int_equal(v->stats.db_reinjected, 1);
	return fc->debugregs.dr6;
}

static void split_lock_tf_exec_bp_beside(void **state)
{
	(void)state;
	assert_step_trap(split_lock_tf_dr6(true), 1);
}

static void split_lock_tf_exec_bp_not_beside(void **state)
{
	(void)state;
	assert_step_trap(split_lock_tf_dr6(false), 0);
}

/* WRMSR of a reserved TEST_CTRL bit reaches the VMM: #GP for the guest. */
static void test_ctrl_reserved_write(struct vcpu *v)
{
	v->run->msr.reason = KVM_MSR_EXIT_REASON_FILTER;
	v->run->msr.index = MSR_TEST_CTRL;
	v->run->msr.data = 1;
	exit_with(v, KVM_EXIT_X86_WRMSR);
}

/*
 * wrmsr of a reserved TEST_CTRL bit, without breakpoints: single-step is
 * issued again at the access, the completing run returns at once, and the
 * #GP KVM queued is taken back and delivered by the VMM, its handler next.
 */
static void msr_fault_restep(void **state)
{
	static const uint8_t wrmsr[] = { 0x0f, 0x30 };
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);
	uint64_t rsp;

	(void)state;
	memcpy(ram + CODE, wrmsr, sizeof(wrmsr));
	stepping_before_run(v);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_int_equal(FAKE_CALLS(fc, set_guest_debug), 1);

	test_ctrl_reserved_write(v);
	assert_int_equal(v->run->msr.error, 1);
	assert_int_equal(v->completion, VCPU_COMPLETION_MSR_FAULT);
	assert_int_equal(v->run->immediate_exit, 1);
	assert_int_equal(FAKE_CALLS(fc, set_guest_debug), 2);	/* issued again, here */
	assert_int_equal(fc->debug.control, KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_SINGLESTEP);

	/* KVM completes the access with a queued #GP, then honours immediate_exit. */
	fc->events.exception.injected = 1;
	fc->events.exception.nr = X86_VEC_GP;
	fc->events.exception.has_error_code = 1;
	v->run->immediate_exit = 0;
	stepping_interrupted(v);
	assert_int_equal(v->completion, VCPU_COMPLETION_NONE);
	assert_int_equal(fc->events.exception.injected, 0);
	assert_int_equal(v->stats.faults_delivered, 1);
	assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_GP));
	rsp = regs(v)->rsp;
	assert_int_equal(rsp, STACK - 48);
	assert_int_equal(word_at(rsp), 0);			/* error code */
	assert_int_equal(word_at(rsp + 8), CODE);		/* the wrmsr, a fault */
	assert_int_equal(word_at(rsp + 16), BOOT_SEL_CODE64);
	assert_false(word_at(rsp + 24) & X86_RFLAGS_TF);	/* the guest's TF, not the VMM's */

	stepping_before_run(v);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_int_equal(v->step.rip, HANDLER(X86_VEC_GP));
}

/*
 * INT3 through an IST gate without a TSS (the VMM cannot deliver it), with
 * breakpoints: run with a breakpoint on its handler instead of TF; the stop there is the VMM's own, and stepping resumes at the handler.
 */
static void watch_breakpoint_on_handler(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);

	(void)state;
	no_vmm_delivery(v, X86_VEC_BP);
	ram[CODE] = 0xcc;
	stepping_before_run(v);
	assert_int_not_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_WATCH);
	assert_int_equal(v->step.hw.addr, HANDLER(X86_VEC_BP));
	assert_int_equal(fc->debug.control, KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_USE_HW_BP);
	assert_int_equal(fc->debug.arch.debugreg[0], HANDLER(X86_VEC_BP));
	assert_int_equal(fc->debug.arch.debugreg[7], X86_DR7_L0);

	step_to(v, HANDLER(X86_VEC_BP), X86_DR6_ACTIVE_LOW | 1);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_STEP);
	assert_int_equal(v->stats.unchecked_runs, 0);
	assert_int_equal(FAKE_CALLS(fc, set_events), 0);

	stepping_before_run(v);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_int_equal(v->step.rip, HANDLER(X86_VEC_BP));
}

/*
 * A #DB at the watched address that is not the VMM's breakpoint (B0 clear,
 * BS set: the guest's own trap) is the guest's: the handler ran
 * unwatched, counted, and the guest gets its #DB.
 */
static void watch_address_not_ours(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	no_vmm_delivery(v, X86_VEC_BP);
	ram[CODE] = 0xcc;
	stepping_before_run(v);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_WATCH);
	step_to(v, HANDLER(X86_VEC_BP), DR6_STEP);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_STEP);
	assert_int_equal(v->stats.unchecked_runs, 1);
	assert_int_equal(v->stats.db_reinjected, 1);
}

/*
 * The same without breakpoints: stepped, delivered with the VMM's TF, which
 * the step exit at the handler's first instruction takes out of the frame.
 */
static void frame_fix(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	uint64_t frame = STACK - 40;

	(void)state;
	no_vmm_delivery(v, X86_VEC_BP);
	ram[CODE] = 0xcc;
	stepping_before_run(v);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_STEP);

	/* The CPU's frame: RIP after INT3, CS, RFLAGS with the VMM's TF, RSP, SS. */
	memcpy(ram + frame, (uint64_t[]){ CODE + 1, BOOT_SEL_CODE64, X86_RFLAGS_FIXED | X86_RFLAGS_TF,
					  STACK, BOOT_SEL_DATA }, 40);
	regs(v)->rsp = frame;
	step_to(v, HANDLER(X86_VEC_BP), DR6_STEP);
	assert_int_equal(word_at(frame + 16), X86_RFLAGS_FIXED);
	assert_int_equal(v->stats.unchecked_runs, 0);
	assert_int_equal(v->step.frame_vector, -1);
}

/*
 * An I/O exit far from the instruction checked: the guest ran unstepped.
 * The run that completes it returns at once; stepping resumes where KVM
 * left RIP, with TF written back.
 */
static void resync_after_completed_exit(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	stepping_before_run(v);
	regs(v)->rip = CODE + 0x40;
	exit_with(v, KVM_EXIT_IO);
	assert_int_equal(v->stats.unchecked_runs, 1);
	assert_int_equal(v->completion, VCPU_COMPLETION_RESYNC);
	assert_int_equal(v->run->immediate_exit, 1);

	/* Not completed yet (RIP unmoved): left to the next KVM_RUN. */
	v->run->immediate_exit = 0;
	stepping_interrupted(v);
	assert_int_equal(v->completion, VCPU_COMPLETION_KVM);

	v->completion = VCPU_COMPLETION_RESYNC;
	regs(v)->rip = CODE + 0x41;
	regs(v)->rflags = X86_RFLAGS_FIXED;
	stepping_interrupted(v);
	assert_int_equal(v->completion, VCPU_COMPLETION_NONE);
	stepping_before_run(v);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_int_equal(v->step.rip, CODE + 0x41);
	assert_true(regs(v)->rflags & X86_RFLAGS_TF);
}

/*
 * mov eax, [rbx] whose step ends neither behind it nor at a handler: an
 * exception took the vCPU elsewhere, one unchecked run, nothing owed.
 */
static void diverted_step_unchecked(void **state)
{
	static const uint8_t mov[] = { 0x8b, 0x03 };
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);

	(void)state;
	memcpy(ram + CODE, mov, sizeof(mov));
	stepping_before_run(v);
	assert_true(v->step.insn.falls);
	step_to(v, CODE + 0x80, DR6_STEP);
	assert_int_equal(v->stats.unchecked_runs, 1);
	assert_int_equal(FAKE_CALLS(fc, set_events), 0);

	/* Behind itself: a plain step, nothing counted. */
	regs(v)->rip = CODE;
	stepping_before_run(v);
	step_to(v, CODE + sizeof(mov), DR6_STEP);
	assert_int_equal(v->stats.unchecked_runs, 1);
}

/*
 * iretq whose frame has TF set but whose CS faults (#GP: a data segment),
 * without breakpoints: the CPU delivers the #GP itself, its handler runs
 * unstepped and returns to a fixup, whose first instruction the step ends
 * behind. The IRET loaded nothing: the guest's TF stays clear (it was
 * taken from the frame, and a #DB owed at the next instruction), and the
 * handler's run is counted. An IRET that returns where its frame says
 * loads the frame's TF.
 */
/*
 * IRETQ whose frame's CS is beyond the GDT: #GP(selector) is certain, and
 * the VMM delivers it; nothing is loaded, the guest's TF stays clear, and
 * the handler is checked next.
 */
static void iret_selector_fault_delivered(void **state)
{
	static const uint8_t iretq[] = { 0x48, 0xcf };
	struct vcpu *v = &fv.vm.vcpus[0];
	uint64_t frame = STACK - 40, rsp;

	(void)state;
	memcpy(ram + CODE, iretq, sizeof(iretq));
	memcpy(ram + frame, (uint64_t[]){ CODE + 0x40, 0xfff8, X86_RFLAGS_FIXED | X86_RFLAGS_TF,
					  STACK, BOOT_SEL_DATA }, 40);
	regs(v)->rsp = frame;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_GP));
	rsp = regs(v)->rsp;
	assert_int_equal(word_at(rsp), 0xfff8);			/* the error code */
	assert_int_equal(word_at(rsp + 8), CODE);			/* the IRETQ itself */
	assert_int_equal(word_at(rsp + 24), X86_RFLAGS_FIXED | X86_RFLAGS_RF);
	assert_false(v->step.guest_tf);
	assert_int_equal(v->stats.faults_delivered, 1);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_int_equal(v->step.rip, HANDLER(X86_VEC_GP));
}

static void iret_fault_keeps_tf(void **state)
{
	static const uint8_t iretq[] = { 0x48, 0xcf };
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);
	uint64_t frame = STACK - 40;

	(void)state;
	memcpy(ram + CODE, iretq, sizeof(iretq));
	memcpy(ram + frame, (uint64_t[]){ CODE + 0x40, BOOT_SEL_DATA, X86_RFLAGS_FIXED | X86_RFLAGS_TF,
					  STACK, BOOT_SEL_DATA }, 40);
	regs(v)->rsp = frame;
	stepping_before_run(v);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_false(v->step.tf_at_start);
	assert_true(v->step.tf_after);
	regs(v)->rsp = STACK;
	step_to(v, CODE + 0x84, DR6_STEP);
	assert_false(v->step.guest_tf);
	assert_int_equal(v->stats.unchecked_runs, 1);
	assert_int_equal(v->stats.db_reinjected, 0);
	stepping_before_run(v);
	assert_false(v->step.tf_at_start);
	step_to(v, CODE + 0x85, DR6_STEP);
	assert_int_equal(v->stats.db_reinjected, 0);
	assert_int_equal(FAKE_CALLS(fc, set_events), 0);

	regs(v)->rip = CODE;
	regs(v)->rsp = frame;
	stepping_before_run(v);
	step_to(v, CODE + 0x40, DR6_STEP);
	assert_true(v->step.guest_tf);
	assert_int_equal(v->stats.unchecked_runs, 1);
}

/*
 * The same IRET's step ending at the #GP handler's first instruction: the
 * frame there (the IRET's RIP, a fault) gets the guest's TF instead of the
 * VMM's, and nothing is owed or counted.
 */
static void iret_fault_at_handler(void **state)
{
	static const uint8_t iretq[] = { 0x48, 0xcf };
	struct vcpu *v = &fv.vm.vcpus[0];
	uint64_t frame = STACK - 40, gp = frame - 48;

	(void)state;
	memcpy(ram + CODE, iretq, sizeof(iretq));
	memcpy(ram + frame, (uint64_t[]){ CODE + 0x40, BOOT_SEL_DATA, X86_RFLAGS_FIXED | X86_RFLAGS_TF,
					  STACK, BOOT_SEL_DATA }, 40);
	regs(v)->rsp = frame;
	stepping_before_run(v);
	memcpy(ram + gp, (uint64_t[]){ BOOT_SEL_DATA, CODE, BOOT_SEL_CODE64, X86_RFLAGS_FIXED | X86_RFLAGS_TF,
				       frame, BOOT_SEL_DATA }, 48);
	regs(v)->rsp = gp;
	step_to(v, HANDLER(X86_VEC_GP), DR6_STEP);
	assert_int_equal(word_at(gp + 24), X86_RFLAGS_FIXED);
	assert_false(v->step.guest_tf);
	assert_int_equal(v->stats.unchecked_runs, 0);
	assert_int_equal(v->stats.db_reinjected, 0);
}

/*
 * JMP *%rax with the guest's TF (a branch: it may go anywhere) whose step
 * ends at the #GP handler with a fault frame of its own RIP at RSP (a
 * non-canonical target): the frame gets the guest's TF, the handler runs
 * with TF clear, nothing is owed or counted.
 */
static void branch_fault_at_handler(void **state)
{
	static const uint8_t jmp_rax[] = { 0xff, 0xe0 };
	struct vcpu *v = &fv.vm.vcpus[0];
	uint64_t gp = STACK - 48;

	(void)state;
	memcpy(ram + CODE, jmp_rax, sizeof(jmp_rax));
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_TF;
	stepping_before_run(v);
	assert_true(v->step.guest_tf);
	assert_int_equal(v->step.insn.kind, STEP_BRANCH);
	memcpy(ram + gp, (uint64_t[]){ 0, CODE, BOOT_SEL_CODE64, X86_RFLAGS_FIXED | X86_RFLAGS_TF,
				       STACK, BOOT_SEL_DATA }, 48);
	regs(v)->rsp = gp;
	step_to(v, HANDLER(X86_VEC_GP), DR6_STEP);
	assert_int_equal(word_at(gp + 24), X86_RFLAGS_FIXED | X86_RFLAGS_TF);
	assert_false(v->step.guest_tf);
	assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_GP));
	assert_int_equal(v->stats.unchecked_runs, 0);
	assert_int_equal(v->stats.db_reinjected, 0);
}

/*
 * Without breakpoints, a data access certain to fault on its address (a
 * non-canonical one) is delivered by the VMM, not left to the CPU: #GP(0)
 * through a general register, #SS(0) through RBP (SS's), RIP at the
 * instruction, RF and the guest's TF in the frame, the handler checked.
 */
static void certain_segment_faults_delivered(void **state)
{
	static const uint8_t load[] = { 0x48, 0x8b, 0x18 },	/* mov (%rax), %rbx */
			     load_bp[] = { 0x48, 0x8b, 0x45, 0x00 };	/* mov 0(%rbp), %rax */
	struct vcpu *v = &fv.vm.vcpus[0];
	uint64_t frame = STACK - 48;

	(void)state;
	memcpy(ram + CODE, load, sizeof(load));
	regs(v)->rax = 0x0000800000000000ull;
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_TF;
	stepping_before_run(v);
	assert_int_equal(v->stats.faults_delivered, 1);
	assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_GP));
	assert_int_equal(regs(v)->rsp, frame);
	assert_int_equal(word_at(frame), 0);				/* the error code */
	assert_int_equal(word_at(frame + 8), CODE);
	assert_int_equal(word_at(frame + 24), X86_RFLAGS_FIXED | X86_RFLAGS_TF | X86_RFLAGS_RF);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_int_equal(v->step.rip, HANDLER(X86_VEC_GP));

	memcpy(ram + CODE, load_bp, sizeof(load_bp));
	regs(v)->rip = CODE;
	regs(v)->rsp = STACK;
	regs(v)->rbp = 0x0000800000000000ull;
	regs(v)->rflags = X86_RFLAGS_FIXED;
	v->step.guest_tf = false;
	stepping_before_run(v);
	assert_int_equal(v->stats.faults_delivered, 2);
	assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_SS));
}

/*
 * The step of the instruction at CODE (the guest's TF set) ends at the #UD
 * handler with a fault frame of CODE at `frame`: it faulted, the frame
 * keeps the guest's TF, the handler runs with TF clear, nothing is owed or
 * counted.
 */
static void faulted_to_ud_handler(struct vcpu *v, uint64_t frame)
{
	memcpy(ram + frame, (uint64_t[]){ CODE, BOOT_SEL_CODE64, X86_RFLAGS_FIXED | X86_RFLAGS_TF,
					  STACK, BOOT_SEL_DATA }, 40);
	regs(v)->rsp = frame;
	step_to(v, HANDLER(X86_VEC_UD), DR6_STEP);
	assert_int_equal(word_at(frame + 16), X86_RFLAGS_FIXED | X86_RFLAGS_TF);
	assert_false(v->step.guest_tf);
	assert_int_equal(v->stats.unchecked_runs, 0);
	assert_int_equal(v->stats.db_reinjected, 0);
}

/*
 * bytes at CODE with the guest's TF: the step ends at the #UD handler with
 * a frame of CODE (faulted_to_ud_handler), and back at CODE single-step is
 * issued again for it, even in the same mode.
 */
static void ud_at_handler_then_again(struct vcpu *v, const uint8_t *bytes, size_t n)
{
	struct fake_vcpu *fc = fake_vcpu(v);
	unsigned issued;

	memcpy(ram + CODE, bytes, n);
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_TF;
	stepping_before_run(v);
	issued = FAKE_CALLS(fc, set_guest_debug);
	assert_true(fc->debug.control & KVM_GUESTDBG_SINGLESTEP);
	faulted_to_ud_handler(v, STACK - 40);
	regs(v)->rip = CODE;
	regs(v)->rsp = STACK;
	v->step.guest_tf = true;	/* the guest's own, from the frame's IRET */
	stepping_before_run(v);
	assert_int_equal(FAKE_CALLS(fc, set_guest_debug), issued + 1);
}

/*
 * 0F 04 (the decoder rejects it: the CPU's #UD, which KVM intercepts and
 * injects): single-step is issued again at its RIP, so that KVM's delivery
 * keeps the step's TF; a step that ends at the #UD handler with a frame of
 * its own RIP faulted, and the frame gets the guest's TF. The same bytes
 * run by a CPU that accepts them end behind them: completed, nothing owed
 * beyond the guest's trap. A decoded instruction issues nothing.
 */
static void undecodable_fault_at_handler(void **state)
{
	static const uint8_t undecodable[] = { 0x0f, 0x04 };
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);
	unsigned issued;

	(void)state;
	ud_at_handler_then_again(v, undecodable, sizeof(undecodable));
	assert_true(step_undecodable(&v->step.insn));
	/* A CPU that runs it: the step ends behind it, the guest's trap is owed. */
	step_to(v, CODE + sizeof(undecodable), DR6_STEP);
	assert_int_equal(v->stats.unchecked_runs, 0);
	assert_int_equal(v->stats.db_reinjected, 1);

	/* A decoded instruction (the NOPs behind it): no call. */
	issued = FAKE_CALLS(fc, set_guest_debug);
	stepping_before_run(v);
	assert_false(step_undecodable(&v->step.insn));
	assert_int_equal(FAKE_CALLS(fc, set_guest_debug), issued);
}

/*
 * The step checked with the guest's TF ends at an exit of KVM's emulator
 * at rip, where a fault's handler ran unwatched (delivery cleared TF): one
 * more unchecked run, no #DB for the guest, its TF clear.
 */
static void handler_ran_to_emulated_exit(struct vcpu *v, uint64_t rip)
{
	uint64_t unchecked = v->stats.unchecked_runs, db = v->stats.db_reinjected;

	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_true(v->step.tf_at_start);
	step_to_emulated(v, rip);
	assert_int_equal(v->stats.unchecked_runs, unchecked + 1);
	assert_int_equal(v->stats.db_reinjected, db);
	assert_false(v->step.guest_tf);
	assert_int_equal(regs(v)->rip, rip);
}

/*
 * The same with the guest's TF, where the CPU does not stop at the
 * handler: KVM's #UD ran its handler (TF clear) up to an instruction KVM's
 * emulator ended with a step exit of its own (the lab's MOV to CR0 on the
 * way back to long mode). No trap of the CPU's there, so no #DB for the
 * guest, whose TF is clear; one unchecked run. Before the fix the guest
 * got a #DB at each instruction after it, and in long mode with the
 * legacy IDT still loaded, a triple fault (seed 38 record 384). An exit
 * within 15 bytes behind it is the instruction run by KVM itself: the
 * guest's trap.
 */
static void undecodable_handler_to_emulated_exit(void **state)
{
	static const uint8_t undecodable[] = { 0x0f, 0x04 };
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	memcpy(ram + CODE, undecodable, sizeof(undecodable));
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_TF;
	stepping_before_run(v);
	handler_ran_to_emulated_exit(v, HANDLER(X86_VEC_UD) + 0x40);

	regs(v)->rip = CODE;
	v->step.guest_tf = true;
	stepping_before_run(v);
	step_to_emulated(v, CODE + sizeof(undecodable));
	assert_int_equal(v->stats.unchecked_runs, 1);
	assert_int_equal(v->stats.db_reinjected, 1);
}

/* The same for VMRUN, which KVM runs itself and answers with #UD without nested SVM. */
static void kvm_fault_at_handler(void **state)
{
	static const uint8_t vmrun[] = { 0x0f, 0x01, 0xd8 };
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	ud_at_handler_then_again(v, vmrun, sizeof(vmrun));
	assert_true(v->step.insn.kvm_faults);
}

/*
 * SYSENTER with the guest's TF goes to IA32_SYSENTER_EIP (TF kept: the
 * guest's trap is owed there). One whose step ends anywhere else faulted
 * (#UD in long mode on AMD): at the #UD handler with its frame, the frame
 * gets the guest's TF; after a handler that ran, one unchecked run and
 * the guest's trap after it.
 */
static void sysenter_target(void **state)
{
	static const uint8_t sysenter[] = { 0x0f, 0x34 };
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);
	uint64_t ud = STACK - 40;

	(void)state;
	fc->msrs[0].valid = true;
	fc->msrs[0].index = MSR_IA32_SYSENTER_EIP;
	fc->msrs[0].value = HANDLER(0x1f);
	memcpy(ram + CODE, sysenter, sizeof(sysenter));
	memcpy(ram + CODE + 0x40, sysenter, sizeof(sysenter));
	memcpy(ram + CODE + 0x80, sysenter, sizeof(sysenter));

	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_TF;
	stepping_before_run(v);
	assert_int_equal(v->step.insn.kind, STEP_SYSENTER);
	faulted_to_ud_handler(v, ud);

	/* The handler ran and returned behind SYSENTER: its run is counted, the trap owed. */
	regs(v)->rip = CODE + 0x40;
	regs(v)->rsp = STACK;
	v->step.guest_tf = true;
	stepping_before_run(v);
	step_to(v, CODE + 0x42, DR6_STEP);
	assert_int_equal(v->stats.unchecked_runs, 1);
	assert_int_equal(v->stats.db_reinjected, 1);

	/* At IA32_SYSENTER_EIP: completed, TF kept, the trap owed. */
	regs(v)->rip = CODE + 0x80;
	v->step.guest_tf = true;
	stepping_before_run(v);
	step_to(v, HANDLER(0x1f), DR6_STEP);
	assert_int_equal(v->stats.unchecked_runs, 1);
	assert_int_equal(v->stats.db_reinjected, 2);
}

/*
 * RDPMC's #GP, KVM's, with the guest's TF, where the step exit comes after
 * the handler's first instruction (PUSH imm8), as on the nested PVM KVM:
 * the frame is found behind that push and gets the guest's TF (KVM pushed
 * it clear), and the handler runs with TF clear. A first instruction whose
 * stack effect is not known: left alone, the handler counted unchecked.
 */
static void fault_frame_behind_handler_push(void **state)
{
	static const uint8_t rdpmc[] = { 0x0f, 0x33 }, push_0d[] = { 0x6a, 0x0d };
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	memcpy(ram + CODE, rdpmc, sizeof(rdpmc));
	memcpy(ram + HANDLER(X86_VEC_GP), push_0d, sizeof(push_0d));
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_TF;
	stepping_before_run(v);
	assert_true(v->step.tf_at_start);
	memcpy(ram + STACK - 56, (uint64_t[]){ 0xd, 0, CODE, BOOT_SEL_CODE64, X86_RFLAGS_FIXED,
					       STACK, BOOT_SEL_DATA }, 56);
	regs(v)->rsp = STACK - 56;
	step_to(v, HANDLER(X86_VEC_GP) + 2, DR6_STEP);
	assert_int_equal(word_at(STACK - 24), X86_RFLAGS_FIXED | X86_RFLAGS_TF);
	assert_false(v->step.guest_tf);
	assert_int_equal(v->stats.db_reinjected, 0);
	assert_int_equal(v->stats.unchecked_runs, 0);

	/* CLD first, which pushes nothing: the frame is at RSP. */
	memcpy(ram + HANDLER(X86_VEC_GP), (uint8_t[]){ 0xfc }, 1);
	regs(v)->rip = CODE;
	regs(v)->rsp = STACK;
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_TF;
	v->step.guest_tf = true;
	stepping_before_run(v);
	assert_true(v->step.tf_at_start);
	memcpy(ram + STACK - 48, (uint64_t[]){ 0, CODE, BOOT_SEL_CODE64, X86_RFLAGS_FIXED, STACK,
					       BOOT_SEL_DATA }, 48);
	regs(v)->rsp = STACK - 48;
	step_to(v, HANDLER(X86_VEC_GP) + 1, DR6_STEP);
	assert_int_equal(word_at(STACK - 24), X86_RFLAGS_FIXED | X86_RFLAGS_TF);
	assert_int_equal(v->stats.unchecked_runs, 0);

	/* mov %rsp, %rbp first: where the frame is is not known. */
	memcpy(ram + HANDLER(X86_VEC_GP), (uint8_t[]){ 0x48, 0x89, 0xe5 }, 3);
	regs(v)->rip = CODE;
	regs(v)->rsp = STACK;
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_TF;
	v->step.guest_tf = true;
	stepping_before_run(v);
	memcpy(ram + STACK - 48, (uint64_t[]){ 0, CODE, BOOT_SEL_CODE64, X86_RFLAGS_FIXED, STACK,
					       BOOT_SEL_DATA }, 48);
	regs(v)->rsp = STACK - 48;
	step_to(v, HANDLER(X86_VEC_GP) + 3, DR6_STEP);
	assert_int_equal(word_at(STACK - 24), X86_RFLAGS_FIXED);
	assert_int_equal(v->stats.unchecked_runs, 1);
}

/*
 * A JMP with the guest's TF that lands on a handler's first instruction
 * without a fault frame of its own at RSP: a branch that completed, and
 * its trap is the guest's.
 */
static void branch_to_handler_completes(void **state)
{
	static const uint8_t jmp_rax[] = { 0xff, 0xe0 };
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	memcpy(ram + CODE, jmp_rax, sizeof(jmp_rax));
	memcpy(ram + STACK - 40, (uint64_t[]){ CODE + 2, BOOT_SEL_CODE64, X86_RFLAGS_FIXED,
					       STACK, BOOT_SEL_DATA }, 40);
	regs(v)->rsp = STACK - 40;
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_TF;
	stepping_before_run(v);
	assert_true(v->step.guest_tf);
	step_to(v, HANDLER(X86_VEC_UD), DR6_STEP);
	assert_int_equal(v->stats.db_reinjected, 1);
	assert_int_equal(word_at(STACK - 24), X86_RFLAGS_FIXED);
}

/* A debug exit with no debug hardware armed is not the engine's. */
static void debug_exit_unarmed(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	v->run->exit_reason = KVM_EXIT_DEBUG;
	v->run->debug.arch.dr6 = DR6_STEP;
	assert_false(stepping_debug_exit(v));
}

/*
 * INT3 with the guest's TF, delivered by the VMM (any host): the frame
 * holds the guest's TF and the address after INT3, the handler runs with
 * the VMM's TF and its first instruction is checked; no #DB is owed.
 */
static void int3_delivered(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);
	uint64_t frame = STACK - 40;

	(void)state;
	ram[CODE] = 0xcc;
	ram[STACK] = 0x5a;	/* above the frame: untouched */
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_TF | X86_RFLAGS_IF;
	stepping_before_run(v);
	assert_int_equal(ram[STACK], 0x5a);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_int_equal(v->step.rip, HANDLER(X86_VEC_BP));
	assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_BP));
	assert_int_equal(regs(v)->rsp, frame);
	assert_int_equal(word_at(frame), CODE + 1);
	assert_int_equal(word_at(frame + 8), BOOT_SEL_CODE64);
	assert_int_equal(word_at(frame + 16), X86_RFLAGS_FIXED | X86_RFLAGS_TF | X86_RFLAGS_IF);
	assert_int_equal(word_at(frame + 24), STACK);
	assert_false(v->step.guest_tf);
	/* The handler is stepped (KVM's TF, hidden); IF clear through the interrupt gate. */
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_STEP);
	assert_false(regs(v)->rflags & (X86_RFLAGS_TF | X86_RFLAGS_IF));
	assert_int_equal(FAKE_CALLS(fc, set_events), 0);
	step_to(v, HANDLER(X86_VEC_BP) + 1, DR6_STEP);
	assert_int_equal(v->stats.unchecked_runs, 0);
	assert_int_equal(FAKE_CALLS(fc, set_events), 0);	/* no #DB for the guest */
}

/* The accessed and dirty bits of the boot map's PDE i (the 2 MiB page at i * 2 MiB). */
static uint64_t pde_ad(unsigned i)
{
	uint64_t pde;

	memcpy(&pde, ram + BOOT_PD_ADDR + 8 * i, 8);
	return pde & (X86_PTE_A | X86_PTE_D);
}

/* Clears them in PDEs 0 and 1. */
static void clear_pde_ad(void)
{
	for (unsigned i = 0; i < 2; i++) {
		uint64_t pde;

		memcpy(&pde, ram + BOOT_PD_ADDR + 8 * i, 8);
		pde &= ~(uint64_t)(X86_PTE_A | X86_PTE_D);
		memcpy(ram + BOOT_PD_ADDR + 8 * i, &pde, 8);
	}
}

/*
 * INT3's frame across the 2 MiB boundary of the boot's page tables: both
 * PDEs get their accessed and dirty bits, as the CPU's pushes give them.
 */
static void frame_across_pages(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	clear_pde_ad();
	ram[CODE] = 0xcc;
	regs(v)->rsp = 0x200010;
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_TF;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_BP));
	assert_int_equal(regs(v)->rsp, 0x200010 - 40);
	assert_int_equal(pde_ad(0), X86_PTE_A | X86_PTE_D);
	assert_int_equal(pde_ad(1), X86_PTE_A | X86_PTE_D);

	/* A frame ending on the boundary leaves the page above it alone. */
	clear_pde_ad();
	regs(v)->rip = CODE;
	regs(v)->rsp = 0x200000;
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_TF;
	v->step.inject_vector = -1;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rsp, 0x200000 - 40);
	assert_int_equal(pde_ad(0), X86_PTE_A | X86_PTE_D);
	assert_int_equal(pde_ad(1), 0);
}

/* UD2 at CPL3: delivered on RSP0 with a privilege change, SS null, RF in the image. */
static void ud2_cpl3_delivered(void **state)
{
	static const uint8_t ud2[] = { 0x0f, 0x0b };
	struct vcpu *v = &fv.vm.vcpus[0];
	const struct kvm_sregs *sr = &v->run->s.regs.sregs;
	uint64_t frame = RSP0 - 40;

	(void)state;
	to_cpl3(v);
	memcpy(ram + CODE, ud2, sizeof(ud2));
	regs(v)->rsp = STACK - 8;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_UD));
	assert_int_equal(regs(v)->rsp, frame);
	assert_int_equal(word_at(frame), CODE);
	assert_int_equal(word_at(frame + 8), 0x33);
	assert_int_equal(word_at(frame + 16), X86_RFLAGS_FIXED | X86_RFLAGS_RF);
	assert_int_equal(word_at(frame + 24), STACK - 8);
	assert_int_equal(word_at(frame + 32), 0x2b);
	assert_int_equal(sr->cs.selector, BOOT_SEL_CODE64);
	assert_int_equal(sr->cs.dpl, 0);
	assert_true(sr->cs.l);
	assert_int_equal(sr->ss.selector, 0);
	assert_int_equal(sr->ss.dpl, 0);
	assert_true(v->run->kvm_dirty_regs & KVM_SYNC_X86_SREGS);
	assert_int_equal(v->stats.faults_delivered, 1);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_int_equal(v->step.rip, HANDLER(X86_VEC_UD));
}

/*
 * INT3 at CPL3 with the guest's TF, through a DPL0 gate: #GP(3 * 8 + 2),
 * delivered by the VMM as a fault of the INT3 (its RIP, RF set), the frame
 * holding the guest's TF so that its handler's IRET single-steps on.
 */
static void int3_dpl0_gate_cpl3_gp(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	uint64_t frame = RSP0 - 48;

	(void)state;
	to_cpl3(v);
	ram[CODE] = 0xcc;
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_TF;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_GP));
	assert_int_equal(regs(v)->rsp, frame);
	assert_int_equal(word_at(frame), X86_VEC_BP * 8 + 2);
	assert_int_equal(word_at(frame + 8), CODE);
	assert_int_equal(word_at(frame + 24), X86_RFLAGS_FIXED | X86_RFLAGS_TF | X86_RFLAGS_RF);
	assert_int_equal(v->stats.faults_delivered, 1);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	/* Through a DPL3 gate the #BP itself. */
	ram[IDT + 16 * X86_VEC_BP + 5] = 0xee;
	to_cpl3(v);
	regs(v)->rip = CODE;
	regs(v)->rsp = STACK;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_BP));
	assert_int_equal(word_at(RSP0 - 40), CODE + 1);
	assert_int_equal(v->stats.faults_delivered, 1);
}

/*
 * INT3 at CPL3 through a DPL3 gate to DPL3 code: no privilege change, and
 * the frame's pushes are the handler's, user writes at CPL3 (SDM vol. 3
 * 4.6). SMAP does not apply to them; the guest's PKRU does (write
 * disable of key 0: left to the CPU, whose #PF the VMM does not deliver).
 */
static void int3_cpl3_handler_frame_user_access(void **state)
{
	const uint64_t code64_dpl3 = 0x00affb000000ffffull, code = 0x280000, stack = 0x300000;
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);
	struct kvm_sregs *sr = &v->run->s.regs.sregs;
	uint64_t pde;

	(void)state;
	/* The tables in PDE 0, a supervisor page; the program and its stack in PDE 1, a user one. */
	memcpy(&pde, ram + BOOT_PD_ADDR, 8);
	pde &= ~(uint64_t)X86_PTE_US;
	memcpy(ram + BOOT_PD_ADDR, &pde, 8);
	memcpy(ram + BOOT_GDT_ADDR + 0x30, &code64_dpl3, sizeof(code64_dpl3));
	sr->gdt.limit = 0x37;
	ram[IDT + 16 * X86_VEC_BP + 2] = 0x33;
	ram[IDT + 16 * X86_VEC_BP + 5] = 0xee;
	memset(ram + code, 0x90, 16);
	ram[code] = 0xcc;
	to_cpl3(v);
	sr->cr4 |= X86_CR4_SMAP;
	regs(v)->rip = code;
	regs(v)->rsp = stack;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_BP));
	assert_int_equal(regs(v)->rsp, stack - 40);
	assert_int_equal(word_at(stack - 40), code + 1);
	assert_int_equal(word_at(stack - 8), 0x2b);
	assert_int_equal(sr->cs.dpl, 3);

	sr->cr4 ^= X86_CR4_SMAP | X86_CR4_PKE;
	fc->pkru = 2;	/* key 0: write disabled */
	to_cpl3(v);
	regs(v)->rip = code;
	regs(v)->rsp = stack;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, code);
	assert_int_equal(regs(v)->rsp, stack);
	assert_int_equal(v->stats.faults_delivered, 0);
}

/*
 * The tables' limits at their edges: an IDT whose limit is the gate's last
 * byte, a 64-bit TSS whose limit is IST7's last byte (0x63), both usable
 * (SDM vol. 3 6.14.1, 8.7); one byte less and the VMM leaves the event to
 * the CPU.
 */
static void delivery_table_limits(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct kvm_sregs *sr = &v->run->s.regs.sregs;

	(void)state;
	ram[CODE] = 0xcc;
	sr->idt.limit = 16 * X86_VEC_BP + 15;
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_TF;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_BP));

	/* From CPL3 through a DPL3 gate, on RSP0 of a TSS of limit 0x63. */
	sr->idt.limit = NGATES * 16 - 1;
	ram[IDT + 16 * X86_VEC_BP + 5] = 0xee;
	for (unsigned limit = 0x62; limit <= 0x63; limit++) {
		to_cpl3(v);
		sr->tr.limit = limit;
		regs(v)->rip = CODE;
		regs(v)->rsp = STACK;
		regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_TF;
		stepping_before_run(v);
		if (limit == 0x63) {
			assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_BP));
			assert_int_equal(regs(v)->rsp, RSP0 - 40);
			assert_int_equal(word_at(RSP0 - 40), CODE + 1);
		} else {
			assert_int_equal(regs(v)->rip, CODE);
		}
	}
}

/*
 * A step that escaped (the CPU delivered a fault and its handler ran
 * unstepped) from a guest whose own TF was set: the frame held the TF the
 * CPU's would, so the trap after the handler's IRET is the guest's #DB.
 * Without the guest's TF it is the VMM's, and no #DB is owed.
 */
static void escaped_with_guest_tf(void **state)
{
	static const uint8_t mov[] = { 0x8b, 0x03 };
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	memcpy(ram + CODE, mov, sizeof(mov));
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_TF;
	stepping_before_run(v);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	step_to(v, CODE + 0x80, DR6_STEP);
	assert_int_equal(v->stats.unchecked_runs, 1);
	assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_DB));
	assert_int_equal(word_at(STACK - 40), CODE + 0x80);
	assert_int_equal(word_at(STACK - 24), X86_RFLAGS_FIXED | X86_RFLAGS_TF);

	/* Without it: a plain escape, counted, nothing delivered. */
	regs(v)->rip = CODE;
	regs(v)->rsp = STACK;
	regs(v)->rflags = X86_RFLAGS_FIXED;
	stepping_before_run(v);
	step_to(v, CODE + 0x80, DR6_STEP);
	assert_int_equal(v->stats.unchecked_runs, 2);
	assert_int_equal(regs(v)->rip, CODE + 0x80);

	/*
	 * With it, but the exit is KVM's emulator's, inside the handler
	 * (delivery cleared TF): no trap of the CPU's, so no #DB; the
	 * guest's TF is clear from there on.
	 */
	regs(v)->rip = CODE;
	regs(v)->rsp = STACK;
	v->step.guest_tf = true;	/* stepping already: its TF is the VMM's record */
	stepping_before_run(v);
	assert_true(v->step.tf_at_start);
	step_to_emulated(v, CODE + 0x80);
	assert_int_equal(v->stats.unchecked_runs, 3);
	assert_int_equal(regs(v)->rip, CODE + 0x80);
	assert_false(v->step.guest_tf);
	stepping_before_run(v);
	assert_int_equal(v->run->debug.arch.dr7, ~0ull);
}

/*
 * INT3 at CPL2 through a DPL3 gate, right after an IRET that loaded RF (a
 * #DB handler's, stepping over its breakpoint): delivered by the VMM on
 * RSP0, the frame's RFLAGS image holds RF as the CPU pushes it for a trap.
 */
static void int3_cpl2_pushes_rf(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct kvm_sregs *sr = &v->run->s.regs.sregs;
	uint64_t frame = RSP0 - 40;

	(void)state;
	to_cpl3(v);
	sr->cs.selector = 0x9a;
	sr->cs.dpl = 2;
	sr->ss.selector = 0xa2;
	sr->ss.dpl = 2;
	ram[IDT + 16 * X86_VEC_BP + 5] = 0xee;	/* DPL3 */
	ram[CODE] = 0xcc;
	regs(v)->rflags = X86_RFLAGS_FIXED;
	v->step.iret_rf = true;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_BP));
	assert_int_equal(regs(v)->rsp, frame);
	assert_int_equal(word_at(frame), CODE + 1);
	assert_int_equal(word_at(frame + 8), 0x9a);
	assert_int_equal(word_at(frame + 16), X86_RFLAGS_FIXED | X86_RFLAGS_RF);
	assert_int_equal(word_at(frame + 24), STACK);
	assert_int_equal(word_at(frame + 32), 0xa2);
	assert_int_equal(sr->cs.dpl, 0);
	assert_int_equal(sr->ss.selector, 0);
	assert_false(regs(v)->rflags & X86_RFLAGS_RF);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_int_equal(v->step.rip, HANDLER(X86_VEC_BP));
}

/*
 * A KVM that cannot step CPL3: stepping goes off there, counted. Back at
 * CPL0 (an event the CPU delivered, unseen), the first exit is one KVM
 * completes (an I/O exit): its completing run returns at once, and
 * stepping resumes behind it before any more CPL0 code runs.
 */
static void cpl3_unstepped_then_io_exit(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);
	struct kvm_sregs *sr = &v->run->s.regs.sregs;

	(void)state;
	fv.vm.host.step_cpl3 = false;
	to_cpl3(v);
	stepping_before_run(v);
	assert_int_not_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_OFF);
	assert_int_equal(v->stats.unchecked_runs, 1);

	/* An exit at CPL3 that KVM completes: the run completing it goes on at CPL3. */
	exit_with(v, KVM_EXIT_IO);
	assert_int_equal(v->completion, VCPU_COMPLETION_KVM);
	assert_int_equal(v->run->immediate_exit, 0);

	/*
	 * Back at CPL0 unseen, then an OUT: single-step goes on for the run
	 * that completes it, which traps right behind it (with immediate_exit
	 * a KVM that checks it before completing would run on unstepped).
	 */
	sr->cs.selector = BOOT_SEL_CODE64;
	sr->cs.dpl = 0;
	sr->ss.selector = 0;
	sr->ss.dpl = 0;
	regs(v)->rip = HANDLER(X86_VEC_UD) + 0x10;
	exit_with(v, KVM_EXIT_IO);
	assert_int_equal(v->completion, VCPU_COMPLETION_KVM);
	assert_int_equal(v->run->immediate_exit, 0);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_STEP);
	assert_int_equal(fc->debug.control, KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_SINGLESTEP);

	step_to(v, HANDLER(X86_VEC_UD) + 0x11, DR6_STEP);	/* KVM completed the OUT */
	assert_int_equal(FAKE_CALLS(fc, set_events), 0);	/* the VMM's trap, not the guest's */
	stepping_before_run(v);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_int_equal(v->step.rip, HANDLER(X86_VEC_UD) + 0x11);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_STEP);
	assert_int_equal(fc->debug.control, KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_SINGLESTEP);
	assert_int_equal(v->stats.unchecked_runs, 1);
}

/*
 * A KVM that cannot step CPL3 (the nested PVM one) hands the trap of a
 * stepped IRETQ to CPL3 to the guest as a #DB of its own: such an IRETQ
 * (and SYSEXIT) runs unstepped with the guest's TF, counted; one back to
 * CPL0 is stepped.
 */
static void return_to_cpl3_unstepped(void **state)
{
	static const uint8_t iretq[] = { 0x48, 0xcf }, sysexit[] = { 0x48, 0x0f, 0x35 };
	uint64_t frame[5] = { CODE + 0x40, 0x23, X86_RFLAGS_FIXED | X86_RFLAGS_TF, STACK, 0x1b };
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	fv.vm.host.step_cpl3 = false;
	memcpy(ram + CODE, iretq, sizeof(iretq));
	memcpy(ram + STACK - 40, frame, sizeof(frame));
	regs(v)->rsp = STACK - 40;
	stepping_before_run(v);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_OFF);
	assert_int_equal(v->step.phase, STEP_PHASE_OUTER);
	assert_int_not_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_int_equal(v->stats.unchecked_runs, 1);
	assert_int_equal(regs(v)->rip, CODE);		/* the CPU's IRET */

	memcpy(ram + CODE, sysexit, sizeof(sysexit));
	stepping_before_run(v);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_OFF);
	assert_int_equal(v->stats.unchecked_runs, 2);

	frame[1] = BOOT_SEL_CODE64;
	frame[4] = 0;
	memcpy(ram + CODE, iretq, sizeof(iretq));
	memcpy(ram + STACK - 40, frame, sizeof(frame));
	stepping_before_run(v);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_STEP);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_int_equal(v->stats.unchecked_runs, 2);

}

/* The same through an MMIO write, which KVM finished before the exit: RIP does not move. */
static void cpl3_unstepped_then_mmio_write(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct kvm_sregs *sr = &v->run->s.regs.sregs;

	(void)state;
	fv.vm.host.step_cpl3 = false;
	to_cpl3(v);
	stepping_before_run(v);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_OFF);
	sr->cs.selector = BOOT_SEL_CODE64;
	sr->cs.dpl = 0;
	sr->ss.dpl = 0;
	regs(v)->rip = CODE + 0x20;
	v->run->mmio.is_write = 1;
	exit_with(v, KVM_EXIT_MMIO);
	assert_int_equal(v->completion, VCPU_COMPLETION_RESYNC);
	v->run->immediate_exit = 0;
	stepping_interrupted(v);
	assert_int_equal(v->completion, VCPU_COMPLETION_NONE);
	stepping_before_run(v);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_int_equal(v->step.rip, CODE + 0x20);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_STEP);
}

/* lock xadd at CODE on 0x1ffffe, across into 0x200000, which is not present. */
static void place_left_split(struct vcpu *v)
{
	uint64_t pde;

	memcpy(ram + CODE, lock_xadd, sizeof(lock_xadd));
	memcpy(&pde, ram + BOOT_PD_ADDR + 8, 8);
	pde &= ~1ull;
	memcpy(ram + BOOT_PD_ADDR + 8, &pde, 8);
	regs(v)->rdi = 0x1ffffe;
}

/*
 * lock xadd across into a page that is not present: left to the CPU, whose
 * #PF comes first. A step that ends right behind it instead (the CPU's TLB
 * still held the page, or another vCPU mapped it in between) means the
 * split lock ran on the CPU unchecked: counted. The next step is not.
 */
static void left_split_completes_unchecked(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	(void)state;
	place_left_split(v);
	stepping_before_run(v);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_int_equal(v->stats.split_locks_detected, 0);
	assert_int_equal(regs(v)->rip, CODE);
	step_to(v, CODE + sizeof(lock_xadd), DR6_STEP);
	assert_int_equal(v->stats.unchecked_runs, 1);
	stepping_before_run(v);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	step_to(v, CODE + sizeof(lock_xadd) + 1, DR6_STEP);
	assert_int_equal(v->stats.unchecked_runs, 1);
}

/*
 * The same split lock on a VM of two vCPUs: decided again with the other
 * paused, which stays paused until the step's exit where a breakpoint
 * watches the #PF handler (the step ends there or right behind), and is
 * not paused at all where none can (the handler would run unwatched for
 * as long as it likes). One vCPU: nothing to pause.
 */
static void left_split_holds_others(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	bool watched = fv.vm.host.step_hwbp && fv.vm.ncpus > 1;
	(void)state;
	place_left_split(v);
	stepping_before_run(v);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_true(v->step.left_split);
	assert_int_equal(v->step.hw.mode, fv.vm.host.step_hwbp ? STEP_DEBUG_PREDICT : STEP_DEBUG_STEP);
	assert_ptr_equal(fv.vm.pauser, watched ? v : NULL);
	assert_int_equal(atomic_load(&fv.vm.pausing), watched);
	if (fv.vm.host.step_hwbp) {
		regs(v)->rsp = STACK - 48;
		v->run->debug.arch.pc = HANDLER(X86_VEC_PF);
		step_to(v, HANDLER(X86_VEC_PF), X86_DR6_ACTIVE_LOW | 1);
	} else {
		step_to(v, CODE + sizeof(lock_xadd), DR6_STEP);
	}
	assert_null(fv.vm.pauser);
	assert_false(atomic_load(&fv.vm.pausing));
	assert_false(v->step.holds_pause);
}

/*
 * A step with the #PF handler watched (the split lock left to the CPU)
 * while the guest has a write breakpoint in DR0 on the operand: the VMM's
 * breakpoint goes in DR1, the guest's stays armed, and its hit when the
 * CPU completes the instruction after all (a stale TLB) is the guest's
 * #DB. At the handler, DR1's hit is the VMM's and nothing is delivered.
 */
static void predict_keeps_guest_breakpoints(void **state)
{
	const uint64_t dr7 = 0x400 | (1ull << 0) | (0xdull << 16);	/* L0, write, 4 bytes */
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);
	(void)state;
	place_left_split(v);
	fc->debugregs.db[0] = 0x1ffffc;
	fc->debugregs.dr7 = dr7;
	stepping_before_run(v);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_PREDICT);
	assert_int_equal(fc->debug.arch.debugreg[0], 0x1ffffc);
	assert_int_equal(fc->debug.arch.debugreg[1], HANDLER(X86_VEC_PF));
	assert_int_equal(fc->debug.arch.debugreg[7], (dr7 & ~0x400ull) | (1ull << 2));
	/* Completed after all, the guest's breakpoint hit: its #DB, B0. */
	step_to(v, CODE + sizeof(lock_xadd), DR6_STEP | 1);
	assert_int_equal(v->stats.db_reinjected, 1);
	assert_int_equal(fc->debugregs.dr6 & X86_DR6_B0_3, 1);

	/* The handler reached: DR1 is the VMM's, nothing for the guest. */
	regs(v)->rip = CODE;
	stepping_before_run(v);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_PREDICT);
	regs(v)->rsp = STACK - 48;
	step_to(v, HANDLER(X86_VEC_PF), X86_DR6_ACTIVE_LOW | 2);
	assert_int_equal(v->stats.db_reinjected, 1);
	assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_PF));
}

/*
 * A MOV to DR7 that KVM emulates while it steps the guest, enabling DR0 on
 * the next instruction, with the guest's TF: KVM's step exit has BS alone.
 * Where the CPU reports an enabled instruction breakpoint beside a step
 * trap (the probe's exec_bp_beside_step; QEMU's TCG does, natively, under
 * inherit) the guest's #DB has B0 too; elsewhere BS alone. Returns its DR6.
 */
static uint64_t mov_dr7_step_dr6(bool cpu_reports)
{
	static const uint8_t mov_dr7[] = { 0x0f, 0x23, 0xfb, 0x90 };	/* mov %rbx,%dr7; nop */
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);

	fv.vm.host.exec_bp_beside_step = cpu_reports;
	memcpy(ram + CODE, mov_dr7, sizeof(mov_dr7));
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_TF;
	fc->debugregs.db[0] = CODE + 3;
	fc->debugregs.dr7 = 0x400;
	stepping_before_run(v);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	fc->debugregs.dr7 = 0x401;	/* L0, execute: what KVM's MOV wrote */
	step_to_emulated(v, CODE + 3);
	assert_int_equal(v->stats.db_reinjected, 1);
	return fc->debugregs.dr6;
}

static void mov_dr7_exec_bp_beside_step(void **state)
{
	(void)state;
	assert_step_trap(mov_dr7_step_dr6(true), 1);
}

static void mov_dr7_exec_bp_not_beside_step(void **state)
{
	(void)state;
	assert_step_trap(mov_dr7_step_dr6(false), 0);
}

static void syscall_msrs(struct fake_vcpu *fc, uint64_t fmask)
{
	fc->msrs[0].valid = fc->msrs[1].valid = fc->msrs[2].valid = true;
	fc->msrs[0].index = MSR_STAR;
	fc->msrs[0].value = (0x1bull << 48) | (0x08ull << 32);
	fc->msrs[1].index = MSR_LSTAR;
	fc->msrs[1].value = HANDLER(0x1f);
	fc->msrs[2].index = MSR_SYSCALL_MASK;
	fc->msrs[2].value = fmask;
}

/*
 * SYSCALL performed by the VMM: R11 holds the guest's TF (clear here),
 * never the VMM's; FMASK masks TF, so no trap is owed and the entry's
 * first instruction is checked next.
 */
static void syscall_performed(void **state)
{
	static const uint8_t syscall[] = { 0x0f, 0x05 };
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);

	(void)state;
	syscall_msrs(fc, X86_RFLAGS_TF | X86_RFLAGS_IF);
	v->run->s.regs.sregs.efer |= X86_EFER_SCE;
	memcpy(ram + CODE, syscall, sizeof(syscall));
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_IF;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, HANDLER(0x1f));
	assert_int_equal(regs(v)->rcx, CODE + 2);
	assert_int_equal(regs(v)->r11, X86_RFLAGS_FIXED | X86_RFLAGS_IF);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_STEP);
	assert_false(regs(v)->rflags & (X86_RFLAGS_TF | X86_RFLAGS_IF));
	assert_false(v->step.guest_tf);
	assert_int_equal(v->run->s.regs.sregs.ss.selector, 0x10);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_int_equal(v->step.rip, HANDLER(0x1f));
	assert_int_equal(FAKE_CALLS(fc, set_events), 0);
}

/* With the guest's TF and FMASK 0, the trap is owed: #DB at the entry, BS in DR6. */
static void syscall_trap_owed(void **state)
{
	static const uint8_t syscall[] = { 0x0f, 0x05 };
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);
	uint64_t frame = STACK - 40;

	(void)state;
	syscall_msrs(fc, 0);
	v->run->s.regs.sregs.efer |= X86_EFER_SCE;
	memcpy(ram + CODE, syscall, sizeof(syscall));
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_TF;
	fc->debugregs.dr6 = X86_DR6_ACTIVE_LOW;
	fc->debugregs.dr7 = 0x400 | X86_DR7_GD;
	stepping_before_run(v);
	assert_int_equal(regs(v)->r11, X86_RFLAGS_FIXED | X86_RFLAGS_TF);
	assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_DB));
	assert_int_equal(word_at(frame), HANDLER(0x1f));	/* trapped at the entry */
	assert_int_equal(word_at(frame + 16), X86_RFLAGS_FIXED | X86_RFLAGS_TF);
	assert_true(fc->debugregs.dr6 & X86_DR6_BS);
	assert_false(fc->debugregs.dr7 & X86_DR7_GD);	/* cleared for the handler */
	assert_int_equal(v->stats.db_reinjected, 1);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_int_equal(v->step.rip, HANDLER(X86_VEC_DB));
}

/*
 * SYSCALL from compatibility mode is the CPU's (CSTAR on AMD, #UD on
 * Intel): stepped, its trap forecast from FMASK. FMASK 0 keeps the
 * guest's TF, so the step ends in the guest's #DB at the entry; FMASK
 * with TF masks it, and no #DB is owed.
 */
static void syscall_compat_stepped(void **state)
{
	static const uint8_t syscall[] = { 0x0f, 0x05 };
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);
	struct kvm_sregs *sr = &v->run->s.regs.sregs;
	const struct kvm_segment cs64 = sr->cs;

	(void)state;
	sr->efer |= X86_EFER_SCE;
	memcpy(ram + CODE, syscall, sizeof(syscall));
	for (unsigned masked = 0; masked < 2; masked++) {
		syscall_msrs(fc, masked ? X86_RFLAGS_TF : 0);
		to_cpl3(v);
		sr->cs.l = 0;
		sr->cs.db = 1;
		regs(v)->rip = CODE;
		regs(v)->rsp = STACK;
		regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_TF;
		v->step.guest_tf = true;
		stepping_before_run(v);
		assert_int_equal(regs(v)->rip, CODE);		/* not performed: stepped */
		sr->cs = cs64;
		sr->ss.dpl = 0;
		step_to(v, HANDLER(0x1e), DR6_STEP);
		/* One #DB in all: the first SYSCALL's, on the stack SYSCALL left. */
		assert_int_equal(v->stats.db_reinjected, 1);
		if (!masked) {
			assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_DB));
			assert_int_equal(word_at(STACK - 40), HANDLER(0x1e));
		}
	}
}

/* What the VM said as it stopped; the status must be VMM_EXIT_HOST. */
static void assert_stopped_saying(struct capture *c, const char *what)
{
	assert_int_equal(capture_close(c), 0);
	assert_true(vm_stopping(&fv.vm));
	assert_int_equal(fv.vm.status, VMM_EXIT_HOST);
	assert_non_null(strstr(c->buf, what));
	free(c->buf);
}

/* msr_fault_restep()'s WRMSR, up to the KVM_RUN that completes it. */
static void reserved_wrmsr_refused(struct vcpu *v)
{
	static const uint8_t wrmsr[] = { 0x0f, 0x30 };

	memcpy(ram + CODE, wrmsr, sizeof(wrmsr));
	stepping_before_run(v);
	test_ctrl_reserved_write(v);
}

/* The #GP KVM queued cannot be taken back: the VM stops, naming the call. */
static void msr_fault_events_fail(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);
	struct capture c;

	(void)state;
	reserved_wrmsr_refused(v);
	fc->events.exception.injected = 1;
	fc->events.exception.nr = X86_VEC_GP;
	FAKE_FAIL(fc, set_events) = EIO;
	assert_int_equal(capture_stderr(&c), 0);
	stepping_interrupted(v);
	assert_stopped_saying(&c, "vCPU 0: KVM_SET_VCPU_EVENTS (#GP) failed: Input/output error (errno 5)");
	assert_int_equal(fc->events.exception.injected, 1);	/* left as KVM had it */
	assert_int_equal(v->stats.faults_delivered, 0);
}

static void msr_fault_get_events_fails(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct capture c;

	(void)state;
	reserved_wrmsr_refused(v);
	FAKE_FAIL(fake_vcpu(v), get_events) = ENOMEM;
	assert_int_equal(capture_stderr(&c), 0);
	stepping_interrupted(v);
	assert_stopped_saying(&c, "vCPU 0: KVM_GET_VCPU_EVENTS failed: Cannot allocate memory (errno 12)");
}

/* A delivery that cannot read the interrupt shadow it must end stops the VM. */
static void delivery_events_unreadable(void **state)
{
	static const uint8_t ud2[] = { 0x0f, 0x0b };
	struct vcpu *v = &fv.vm.vcpus[0];
	struct capture c;

	(void)state;
	memcpy(ram + CODE, ud2, sizeof(ud2));
	FAKE_FAIL(fake_vcpu(v), get_events) = EIO;
	assert_int_equal(capture_stderr(&c), 0);
	stepping_before_run(v);
	assert_stopped_saying(&c, "vCPU 0: KVM_GET_VCPU_EVENTS failed: Input/output error (errno 5)");
}

/* SYSCALL with an MSR KVM cannot read: stopped, never performed on a guess. */
static void syscall_msr_unreadable(void **state)
{
	static const uint8_t syscall[] = { 0x0f, 0x05 };
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);
	struct capture c;

	(void)state;
	syscall_msrs(fc, 0);
	fc->msrs[1].valid = false;	/* LSTAR */
	v->run->s.regs.sregs.efer |= X86_EFER_SCE;
	memcpy(ram + CODE, syscall, sizeof(syscall));
	assert_int_equal(capture_stderr(&c), 0);
	stepping_before_run(v);
	assert_stopped_saying(&c, "vCPU 0: KVM_GET_MSRS (MSR 0xc0000082) failed: No data available");
	assert_int_equal(regs(v)->rip, CODE);
	assert_int_equal(regs(v)->rcx, 0);
}

/* SYSRETQ with R11.TF clear: performed, so the CPL3 code after it is stepped too. */
static void sysret_performed(void **state)
{
	static const uint8_t sysretq[] = { 0x48, 0x0f, 0x07 };
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);

	(void)state;
	syscall_msrs(fc, 0);
	v->run->s.regs.sregs.efer |= X86_EFER_SCE;
	memcpy(ram + CODE, sysretq, sizeof(sysretq));
	regs(v)->rcx = CODE + 0x40;
	regs(v)->r11 = X86_RFLAGS_FIXED | X86_RFLAGS_IF;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, CODE + 0x40);
	assert_int_equal(v->run->s.regs.sregs.cs.selector, 0x2b);
	assert_int_equal(v->run->s.regs.sregs.cs.dpl, 3);
	assert_int_equal(v->run->s.regs.sregs.ss.selector, 0x23);
	assert_true(regs(v)->rflags & X86_RFLAGS_IF);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_int_equal(v->step.rip, CODE + 0x40);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_STEP);	/* stepped on */
	assert_false(v->step.guest_tf);
}

/* xbegin CODE + 0x26 (C7 F8 rel32) at CODE, RAX all ones, RTM in CPUID as rtm says. */
static struct vcpu *xbegin_at_code(bool rtm, uint64_t rflags)
{
	static const uint8_t xbegin[] = { 0xc7, 0xf8, 0x20, 0x00, 0x00, 0x00 };
	struct vcpu *v = &fv.vm.vcpus[0];

	memcpy(ram + CODE, xbegin, sizeof(xbegin));
	v->rtm = rtm;
	regs(v)->rax = ~0ull;
	regs(v)->rflags = rflags;
	stepping_before_run(v);
	return v;
}

/*
 * XBEGIN performed as an immediate abort: the fallback's first
 * instruction is the one checked and stepped, EAX 0 zero-extended, RF
 * clear, and no trap or event.
 */
static void xbegin_aborted(void **state)
{
	struct vcpu *v = xbegin_at_code(true, X86_RFLAGS_FIXED | X86_RFLAGS_RF);
	struct fake_vcpu *fc = fake_vcpu(v);

	(void)state;
	assert_int_equal(regs(v)->rip, CODE + 0x26);
	assert_int_equal(regs(v)->rax, 0);
	assert_int_equal(regs(v)->rflags, X86_RFLAGS_FIXED);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_int_equal(v->step.rip, CODE + 0x26);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_STEP);
	assert_int_equal(v->stats.rtm_aborts, 1);
	assert_int_equal(v->stats.unchecked_runs, 0);
	assert_int_equal(FAKE_CALLS(fc, set_events), 0);
	step_to(v, CODE + 0x27, DR6_STEP);
	assert_int_equal(v->stats.db_reinjected, 0);
}

/*
 * With the guest's own TF the CPU aborts too, on the step's #DB, which it
 * does not deliver: EAX has bit 4, and the guest's trap comes after the
 * fallback's first instruction.
 */
static void xbegin_aborted_guest_tf(void **state)
{
	struct vcpu *v = xbegin_at_code(true, X86_RFLAGS_FIXED | X86_RFLAGS_TF);
	struct fake_vcpu *fc = fake_vcpu(v);

	(void)state;
	assert_int_equal(regs(v)->rip, CODE + 0x26);
	assert_int_equal(regs(v)->rax, X86_RTM_ABORT_DEBUG);
	assert_true(v->step.guest_tf);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_int_equal(FAKE_CALLS(fc, set_events), 0);
	assert_int_equal(v->stats.db_reinjected, 0);
	step_to(v, CODE + 0x27, DR6_STEP);
	assert_int_equal(v->stats.db_reinjected, 1);	/* the trap after the fallback's nop */
}

/* Without RTM, XBEGIN is the CPU's (#UD, or an abort where TSX is off): stepped. */
static void xbegin_without_rtm_stepped(void **state)
{
	struct vcpu *v = xbegin_at_code(false, X86_RFLAGS_FIXED);

	(void)state;
	assert_int_equal(regs(v)->rip, CODE);
	assert_int_equal(regs(v)->rax, ~0ull);
	assert_int_equal(v->step.insn.kind, STEP_XBEGIN);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_int_equal(v->stats.rtm_aborts, 0);
}

/*
 * What the VMM completes in an interrupt shadow (STI's here) ends it, as
 * the CPU's completion would: INT3 delivered, SYSCALL performed (FMASK
 * clears IF: VMX refuses STI blocking with IF clear) and XBEGIN aborted.
 */
static void assert_shadow_ended(struct vcpu *v, uint64_t rip)
{
	struct fake_vcpu *fc = fake_vcpu(v);

	assert_int_equal(regs(v)->rip, rip);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_int_equal(fc->events.interrupt.shadow, 0);
	assert_true(fc->events.flags & KVM_VCPUEVENT_VALID_SHADOW);
	assert_int_equal(FAKE_CALLS(fc, set_events), 1);
}

static void shadow_ended_by_vmm(void **state)
{
	static const uint8_t syscall[] = { 0x0f, 0x05 };
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);

	(void)state;
	ram[CODE] = 0xcc;
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_IF;
	fc->events.interrupt.shadow = KVM_X86_SHADOW_INT_STI;
	stepping_before_run(v);
	assert_shadow_ended(v, HANDLER(X86_VEC_BP));

	FAKE_CALLS(fc, set_events) = 0;
	fc->events.interrupt.shadow = KVM_X86_SHADOW_INT_STI;
	syscall_msrs(fc, X86_RFLAGS_IF);
	v->run->s.regs.sregs.efer |= X86_EFER_SCE;
	memcpy(ram + CODE, syscall, sizeof(syscall));
	regs(v)->rip = CODE;
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_IF;
	stepping_before_run(v);
	assert_shadow_ended(v, HANDLER(0x1f));
	assert_false(regs(v)->rflags & X86_RFLAGS_IF);

	FAKE_CALLS(fc, set_events) = 0;
	fc->events.interrupt.shadow = KVM_X86_SHADOW_INT_MOV_SS;
	regs(v)->rip = CODE;
	xbegin_at_code(true, X86_RFLAGS_FIXED);
	assert_shadow_ended(v, CODE + 0x26);
}

/*
 * The instruction behind MOV SS runs in MOV SS's step, with the VMM's TF:
 * what it saves of RFLAGS is given the guest's TF afterwards, what it
 * loads becomes the guest's TF.
 */
static struct vcpu *movss_before_run(const uint8_t *next, size_t n, uint64_t rflags)
{
	static const uint8_t mov_ss_eax[] = { 0x8e, 0xd0 };
	struct vcpu *v = &fv.vm.vcpus[0];

	memcpy(ram + CODE, mov_ss_eax, sizeof(mov_ss_eax));
	memcpy(ram + CODE + 2, next, n);
	regs(v)->rflags = rflags;
	stepping_before_run(v);
	return v;
}

/* The same, which leaves MOV SS to be stepped. */
static struct vcpu *movss_then(const uint8_t *next, size_t n, uint64_t rflags)
{
	struct vcpu *v = movss_before_run(next, n, rflags);

	assert_int_equal(v->step.insn.kind, STEP_MOV_SS);
	return v;
}

/*
 * The pair's step ends at vector's handler, where the CPU pushed `frame`
 * (`words` of it, ending at STACK) with the VMM's TF; its RFLAGS slot is
 * the word at STACK - 24.
 */
static void pair_stops_at_handler(struct vcpu *v, unsigned vector, const uint64_t *frame,
				  unsigned words)
{
	memcpy(ram + STACK - 8 * words, frame, 8 * words);
	regs(v)->rsp = STACK - 8 * words;
	regs(v)->rflags = X86_RFLAGS_FIXED;
	step_to(v, HANDLER(vector), DR6_STEP);
}

/* That frame's RFLAGS got the guest's TF (clear), as the guest's TF in the handler. */
static void assert_frame_tf_clear(struct vcpu *v)
{
	assert_int_equal(word_at(STACK - 24), X86_RFLAGS_FIXED | X86_RFLAGS_IF);
	assert_false(v->step.guest_tf);
}

/* The pair at CODE once more, from STACK, with the guest's TF as given. */
static void pair_again(struct vcpu *v, bool guest_tf)
{
	v->step.guest_tf = guest_tf;
	regs(v)->rip = CODE;
	regs(v)->rsp = STACK;
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_IF;
	stepping_before_run(v);
}

static void movss_shadowed_pushf_popf(void **state)
{
	static const uint8_t pushfq[] = { 0x9c }, popfq[] = { 0x9d };
	uint64_t image = X86_RFLAGS_FIXED | X86_RFLAGS_TF | X86_RFLAGS_IF;
	struct vcpu *v = movss_then(pushfq, 1, X86_RFLAGS_FIXED | X86_RFLAGS_IF);

	(void)state;
	assert_int_equal(v->step.shadowed.kind, STEP_PUSHF);
	/* PUSHFQ pushed the hardware's RFLAGS, the VMM's TF in it. */
	memcpy(ram + STACK - 8, &image, 8);
	regs(v)->rsp = STACK - 8;
	step_to(v, CODE + 3, DR6_STEP);
	assert_int_equal(word_at(STACK - 8), X86_RFLAGS_FIXED | X86_RFLAGS_IF);
	assert_false(v->step.guest_tf);
	assert_int_equal(v->stats.db_reinjected, 0);

	/* POPFQ loading TF: the guest's from now on, with no trap yet (that follows the next). */
	regs(v)->rip = CODE;
	memcpy(ram + CODE + 2, popfq, 1);
	stepping_before_run(v);
	assert_int_equal(v->step.shadowed.kind, STEP_POPF);
	memcpy(ram + STACK - 8, &image, 8);	/* what it popped */
	regs(v)->rsp = STACK;
	step_to(v, CODE + 3, DR6_STEP);
	assert_true(v->step.guest_tf);
	assert_int_equal(v->stats.db_reinjected, 0);
}

/* SYSCALL behind MOV SS: R11 holds the guest's TF, not the VMM's. */
static void movss_shadowed_syscall(void **state)
{
	static const uint8_t syscall[] = { 0x0f, 0x05 };
	struct vcpu *v;

	(void)state;
	syscall_msrs(fake_vcpu(&fv.vm.vcpus[0]), 0);
	v = movss_then(syscall, sizeof(syscall), X86_RFLAGS_FIXED | X86_RFLAGS_IF);
	assert_int_equal(v->step.shadowed.kind, STEP_SYSCALL);
	regs(v)->rcx = CODE + 4;
	regs(v)->r11 = X86_RFLAGS_FIXED | X86_RFLAGS_IF | X86_RFLAGS_TF;
	step_to(v, HANDLER(0x1f), DR6_STEP);	/* MOV SS's held trap, at the entry */
	assert_int_equal(regs(v)->r11, X86_RFLAGS_FIXED | X86_RFLAGS_IF);
	assert_false(v->step.guest_tf);
	assert_int_equal(v->stats.db_reinjected, 0);
}

/*
 * INT3 behind MOV SS: with breakpoints, the pair runs unstepped (the
 * guest's TF clear) and the handler is watched; without, the frame the
 * CPU pushed is fixed where it stops at the handler.
 */
static void movss_shadowed_int3_watched(void **state)
{
	static const uint8_t int3[] = { 0xcc };
	struct vcpu *v = movss_then(int3, 1, X86_RFLAGS_FIXED | X86_RFLAGS_IF);

	(void)state;
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_WATCH);
	assert_int_equal(v->step.hw.addr, HANDLER(X86_VEC_BP));
	assert_false(regs(v)->rflags & X86_RFLAGS_TF);
}

static void movss_shadowed_int3_frame_fixed(void **state)
{
	static const uint8_t int3[] = { 0xcc };
	uint64_t frame[5] = { CODE + 3, BOOT_SEL_CODE64,
			      X86_RFLAGS_FIXED | X86_RFLAGS_IF | X86_RFLAGS_TF, STACK, BOOT_SEL_DATA };
	struct vcpu *v = movss_then(int3, 1, X86_RFLAGS_FIXED | X86_RFLAGS_IF);

	(void)state;
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_STEP);
	pair_stops_at_handler(v, X86_VEC_BP, frame, 5);
	assert_frame_tf_clear(v);
	assert_int_equal(v->stats.unchecked_runs, 0);
	assert_int_equal(v->stats.db_reinjected, 0);
}

/*
 * INT3 behind MOV SS with the guest's TF, stepped: where the CPU drops the
 * trap MOV SS held (QEMU's TCG), the handler runs with TF clear up to an
 * instruction KVM emulates, whose exit comes from inside it. No trap of
 * the guest's there (before: a #DB injected into the #BP handler, seed
 * 178 record 19); the handler ran unchecked, counted.
 */
static void movss_shadowed_int3_tf_emulated_in_handler(void **state)
{
	static const uint8_t int3[] = { 0xcc };
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);

	(void)state;
	v->step.guest_tf = true;
	v = movss_then(int3, 1, X86_RFLAGS_FIXED | X86_RFLAGS_IF | X86_RFLAGS_TF);
	assert_int_equal(v->step.shadowed.kind, STEP_INT3);
	step_to_emulated(v, HANDLER(X86_VEC_BP) + 5);
	assert_false(v->step.guest_tf);
	assert_int_equal(FAKE_CALLS(fc, set_events), 0);
	assert_int_equal(v->stats.db_reinjected, 0);
	assert_int_equal(v->stats.unchecked_runs, 1);
}

/*
 * IRETQ to a frame with TF set, whose step exit (the CPU's) comes one
 * instruction past the target: a KVM that performs IRET without its step
 * trap (the nested PVM KVM at CPL0) ran that instruction too. IRET
 * completed, the guest's TF is the frame's, the instruction ran unchecked
 * (counted), and its trap is the guest's. Elsewhere past the target: a
 * handler the CPU entered, as before (nothing owed). A null SS in the
 * frame: an IRET the VMM leaves to the CPU (iretq_performed()).
 */
static void iretq_step_exit_one_late(void **state)
{
	static const uint8_t iretq[] = { 0x48, 0xcf }, nop4[] = { 0x0f, 0x1f, 0x40, 0x00 };
	uint64_t frame[5] = { CODE + 0x40, BOOT_SEL_CODE64, X86_RFLAGS_FIXED | X86_RFLAGS_TF, STACK,
			      0 };
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	memcpy(ram + CODE, iretq, sizeof(iretq));
	memcpy(ram + CODE + 0x40, nop4, sizeof(nop4));
	memcpy(ram + STACK - 40, frame, sizeof(frame));
	regs(v)->rsp = STACK - 40;
	regs(v)->rflags = X86_RFLAGS_FIXED;
	stepping_before_run(v);
	assert_int_equal(v->step.insn.kind, STEP_IRET);
	regs(v)->rsp = STACK;
	step_to(v, CODE + 0x44, DR6_STEP);
	assert_int_equal(v->stats.db_reinjected, 1);
	assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_DB));	/* its #DB, delivered */
	assert_int_equal(v->stats.unchecked_runs, 1);
	assert_true(fv.vm.host.iret_step_lost);	/* the VMM performs such IRETs from now on */

	/* The frame's TF clear: the guest's TF clear after it, no trap owed. */
	frame[2] = X86_RFLAGS_FIXED;
	memcpy(ram + STACK - 40, frame, sizeof(frame));
	regs(v)->rip = CODE;
	regs(v)->rsp = STACK - 40;
	regs(v)->rflags = X86_RFLAGS_FIXED;
	v->step.guest_tf = false;
	stepping_before_run(v);
	regs(v)->rsp = STACK;
	step_to(v, CODE + 0x44, DR6_STEP);
	assert_false(v->step.guest_tf);
	assert_int_equal(v->stats.db_reinjected, 1);
	assert_int_equal(v->stats.unchecked_runs, 2);
}

/*
 * IRETQ behind MOV SS: its frame, read before the step, says what TF it
 * loads. The guest's TF clear and the frame's set: the guest steps itself
 * from the target on, no trap yet. The guest's TF set and the frame's
 * clear: MOV SS's held trap at the target, then none; RF loaded with it.
 * A step that ends elsewhere faulted: nothing loaded.
 */
static void movss_shadowed_iretq(void **state)
{
	static const uint8_t iretq[] = { 0x48, 0xcf };
	uint64_t frame[5] = { CODE + 0x40, BOOT_SEL_CODE64, X86_RFLAGS_FIXED | X86_RFLAGS_TF, STACK,
			      BOOT_SEL_DATA };
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	memcpy(ram + STACK - 40, frame, sizeof(frame));
	regs(v)->rsp = STACK - 40;
	v = movss_then(iretq, sizeof(iretq), X86_RFLAGS_FIXED);
	assert_int_equal(v->step.shadowed.kind, STEP_IRET);
	assert_true(v->step.shadowed_frame_valid);
	memset(ram + STACK - 40, 0, sizeof(frame));	/* read before the step, not after */
	regs(v)->rsp = STACK;
	step_to(v, CODE + 0x40, DR6_STEP);
	assert_true(v->step.guest_tf);
	assert_false(v->step.iret_rf);
	assert_int_equal(v->stats.db_reinjected, 0);

	frame[2] = X86_RFLAGS_FIXED | X86_RFLAGS_RF;
	memcpy(ram + STACK - 40, frame, sizeof(frame));
	regs(v)->rip = CODE;
	regs(v)->rsp = STACK - 40;
	stepping_before_run(v);
	assert_true(v->step.tf_at_start);
	step_to(v, CODE + 0x40, DR6_STEP);
	assert_false(v->step.guest_tf);
	assert_int_equal(v->stats.db_reinjected, 1);

	/* Its #GP: the step ends at the handler, the TF is the guest's as before. */
	frame[2] = X86_RFLAGS_FIXED | X86_RFLAGS_TF;
	memcpy(ram + STACK - 40, frame, sizeof(frame));
	v->step.guest_tf = false;
	regs(v)->rip = CODE;
	regs(v)->rsp = STACK - 40;
	stepping_before_run(v);
	step_to(v, CODE + 0x80, DR6_STEP);
	assert_false(v->step.guest_tf);
}

/*
 * A fault of the instruction behind MOV SS: where the CPU stops at the
 * handler (with MOV SS's held trap), the frame gets the guest's TF, the
 * guest's TF is clear in the handler, and that trap is the guest's where
 * its TF was set. Where it does not, the handler ran unchecked: counted.
 */
static void movss_shadowed_fault(void **state)
{
	static const uint8_t mov[] = { 0x8b, 0x03 };	/* mov (%rbx), %eax */
	uint64_t frame[6] = { 0, CODE + 2, BOOT_SEL_CODE64,
			      X86_RFLAGS_FIXED | X86_RFLAGS_IF | X86_RFLAGS_TF, STACK, BOOT_SEL_DATA };
	struct vcpu *v = movss_then(mov, sizeof(mov), X86_RFLAGS_FIXED | X86_RFLAGS_IF);

	(void)state;
	assert_int_equal(v->step.shadowed.kind, STEP_OTHER);
	assert_true(v->step.shadowed.falls);
	pair_stops_at_handler(v, X86_VEC_PF, frame, 6);
	assert_frame_tf_clear(v);
	assert_int_equal(v->stats.unchecked_runs, 0);
	assert_int_equal(v->stats.db_reinjected, 0);

	/* The guest's TF set: its frame keeps it, and the held trap is the guest's at the handler. */
	pair_again(v, true);
	pair_stops_at_handler(v, X86_VEC_PF, frame, 6);
	assert_true(word_at(STACK - 24) & X86_RFLAGS_TF);
	assert_int_equal(v->stats.db_reinjected, 1);
	assert_int_equal(v->stats.unchecked_runs, 0);

	/* The handler ran to its IRET before the step ended: unchecked. */
	pair_again(v, false);
	step_to(v, CODE + 0x80, DR6_STEP);
	assert_int_equal(v->stats.unchecked_runs, 1);
	assert_false(v->step.guest_tf);
}

/*
 * With breakpoints, the fault of the instruction behind MOV SS is forecast
 * (a non-canonical operand: #GP): the breakpoint on the handler stops the
 * pair there where the CPU does not, and the frame gets the guest's TF.
 */
static void movss_shadowed_fault_forecast(void **state)
{
	static const uint8_t mov[] = { 0x8b, 0x00 };	/* mov (%rax), %eax */
	uint64_t frame[6] = { 0, CODE + 2, BOOT_SEL_CODE64,
			      X86_RFLAGS_FIXED | X86_RFLAGS_IF | X86_RFLAGS_TF, STACK, BOOT_SEL_DATA };
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	regs(v)->rax = 0x8000000000000000ull;
	v = movss_then(mov, sizeof(mov), X86_RFLAGS_FIXED | X86_RFLAGS_IF);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_PREDICT);
	assert_int_equal(v->step.hw.addr, HANDLER(X86_VEC_GP));
	memcpy(ram + STACK - 48, frame, sizeof(frame));
	regs(v)->rsp = STACK - 48;
	regs(v)->rflags = X86_RFLAGS_FIXED;
	step_to(v, HANDLER(X86_VEC_GP), X86_DR6_ACTIVE_LOW | v->step.hw.mine);
	assert_frame_tf_clear(v);
	assert_int_equal(v->stats.unchecked_runs, 0);
	assert_int_equal(v->stats.db_reinjected, 0);

	/* A canonical operand: no forecast. */
	regs(v)->rax = STACK;
	pair_again(v, false);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_STEP);
}

/*
 * SYSENTER behind MOV SS, which may go anywhere: its #GP (SYSENTER_CS 0)
 * is told by a frame of its own RIP at the handler; a JMP to the handler's
 * address is no fault, whatever the stack holds.
 */
static void movss_shadowed_sysenter_fault(void **state)
{
	static const uint8_t sysenter[] = { 0x0f, 0x34 }, jmp[] = { 0xe9, 0, 0, 0, 0 };
	uint64_t frame[6] = { 0, CODE + 2, BOOT_SEL_CODE64,
			      X86_RFLAGS_FIXED | X86_RFLAGS_IF | X86_RFLAGS_TF, STACK, BOOT_SEL_DATA };
	int32_t rel = (int32_t)(HANDLER(X86_VEC_GP) - (CODE + 7));
	struct vcpu *v = movss_then(sysenter, sizeof(sysenter), X86_RFLAGS_FIXED | X86_RFLAGS_IF);

	(void)state;
	assert_int_equal(v->step.shadowed.kind, STEP_SYSENTER);
	pair_stops_at_handler(v, X86_VEC_GP, frame, 6);
	assert_frame_tf_clear(v);
	assert_int_equal(v->stats.db_reinjected, 0);

	memcpy(ram + CODE + 2, jmp, sizeof(jmp));
	memcpy(ram + CODE + 3, &rel, sizeof(rel));
	pair_again(v, false);
	assert_int_equal(v->step.shadowed.kind, STEP_BRANCH);
	/* What the stack holds there looks like a trap's frame of the JMP: left alone. */
	frame[1] = CODE + 7;
	pair_stops_at_handler(v, X86_VEC_GP, frame, 6);
	assert_true(word_at(STACK - 24) & X86_RFLAGS_TF);
	assert_false(v->step.guest_tf);
	assert_false(v->step.shadowed_faulted);
}

/*
 * IRETQ at CODE to CODE + 0x40 with `rflags` in its frame, checked with
 * breakpoints; a null SS in it, which the VMM leaves to the CPU.
 */
static struct vcpu *iretq_with(uint64_t rflags)
{
	static const uint8_t iretq[] = { 0x48, 0xcf };
	struct vcpu *v = &fv.vm.vcpus[0];
	uint64_t frame[5] = { CODE + 0x40, BOOT_SEL_CODE64, rflags, STACK, 0 };

	memcpy(ram + CODE, iretq, sizeof(iretq));
	regs(v)->rsp = STACK - 40;
	memcpy(ram + STACK - 40, frame, sizeof(frame));
	stepping_before_run(v);
	assert_true(v->step.tf_after);
	return v;
}

/* IRETQ loading TF with breakpoints: watched at the return address. */
static void iret_tf_watched(void **state)
{
	struct vcpu *v;

	(void)state;
	v = iretq_with(X86_RFLAGS_FIXED | X86_RFLAGS_TF);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_WATCH);
	assert_int_equal(v->step.hw.addr, CODE + 0x40);
}

/* With RF in the frame too that breakpoint would not fire: stepped instead. */
static void iret_tf_rf_stepped(void **state)
{
	struct vcpu *v;

	(void)state;
	v = iretq_with(X86_RFLAGS_FIXED | X86_RFLAGS_TF | X86_RFLAGS_RF);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_STEP);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
}

/* IRETQ at CODE, its frame at STACK - 40; before_run() on it. */
static struct vcpu *iretq_frame(const uint64_t frame[5], uint64_t rflags)
{
	static const uint8_t iretq[] = { 0x48, 0xcf };
	struct vcpu *v = &fv.vm.vcpus[0];

	memcpy(ram + CODE, iretq, sizeof(iretq));
	memcpy(ram + STACK - 40, frame, 40);
	regs(v)->rip = CODE;
	regs(v)->rsp = STACK - 40;
	regs(v)->rflags = rflags;
	v->step.guest_tf = (rflags & X86_RFLAGS_TF) != 0;
	stepping_before_run(v);
	return v;
}

/*
 * IRETQ at CPL0 back to CPL0 with the CS and SS there: performed by the
 * VMM (stepped, a KVM may run it without its trap, and the target's
 * instruction unchecked). RIP, RSP and RFLAGS the frame's (VM and the
 * reserved bits not loaded), the guest's TF the frame's, NMIs unblocked,
 * the target checked next; no trap where TF was clear before it. TF set
 * before it: the trap at the target, delivered.
 */
static void iretq_performed(void **state)
{
	const uint64_t flags = X86_RFLAGS_FIXED | X86_RFLAGS_TF | X86_RFLAGS_RF | X86_RFLAGS_ID |
			       X86_RFLAGS_VIP | X86_RFLAGS_AC | X86_RFLAGS_NT | (3u << 12) |
			       X86_RFLAGS_CF;
	uint64_t frame[5] = { CODE + 0x40, BOOT_SEL_CODE64, flags | X86_BIT(3) | X86_BIT(40),
			      STACK + 0x100, BOOT_SEL_DATA };
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);

	(void)state;
	fc->events.nmi.masked = 1;
	/* Not before this KVM was seen to lose IRET's step trap. */
	v = iretq_frame(frame, X86_RFLAGS_FIXED);
	assert_int_equal(v->stats.irets_performed, 0);
	assert_int_equal(v->step.rip, CODE);
	fv.vm.host.iret_step_lost = true;
	v = iretq_frame(frame, X86_RFLAGS_FIXED);
	assert_int_equal(v->stats.irets_performed, 1);
	assert_int_equal(regs(v)->rip, CODE + 0x40);
	assert_int_equal(regs(v)->rsp, STACK + 0x100);
	assert_int_equal(regs(v)->rflags, flags);
	assert_int_equal(fc->events.nmi.masked, 0);
	assert_true(v->step.guest_tf);
	assert_int_equal(v->step.rip, CODE + 0x40);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_int_equal(v->stats.db_reinjected, 0);

	frame[2] = X86_RFLAGS_FIXED;
	v = iretq_frame(frame, X86_RFLAGS_FIXED | X86_RFLAGS_TF);
	assert_int_equal(v->stats.irets_performed, 2);
	assert_int_equal(v->stats.db_reinjected, 1);
	assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_DB));
	assert_int_equal(word_at(regs(v)->rsp), CODE + 0x40);
	assert_false(v->step.guest_tf);
}

/*
 * RDPMC and XSETBV, which KVM runs and may fault itself: with breakpoints,
 * stepped with one at the handler of the fault it would queue (#GP; #UD
 * for XSETBV without CR4.OSXSAVE), where a KVM that stops one instruction
 * into the handler (the nested PVM KVM) would leave its frame unfixed.
 */
static void kvm_fault_handler_predicted(void **state)
{
	static const uint8_t rdpmc[] = { 0x0f, 0x33 }, xsetbv[] = { 0x0f, 0x01, 0xd1 };
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	memcpy(ram + CODE, rdpmc, sizeof(rdpmc));
	stepping_before_run(v);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_PREDICT);
	assert_int_equal(v->step.hw.addr, HANDLER(X86_VEC_GP));
	memcpy(ram + CODE, xsetbv, sizeof(xsetbv));
	v->run->s.regs.sregs.cr4 &= ~(uint64_t)X86_CR4_OSXSAVE;
	stepping_before_run(v);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_PREDICT);
	assert_int_equal(v->step.hw.addr, HANDLER(X86_VEC_UD));
}

/*
 * IRETQ at CPL0 to a 32-bit code segment at DPL0: compatibility mode, CS
 * loaded from its descriptor (performed where the KVM loses the trap).
 */
static void iretq_performed_to_compat(void **state)
{
	uint64_t code32 = 0x00cf9b000000ffffull;
	uint64_t frame[5] = { CODE + 0x40, 0x38, X86_RFLAGS_FIXED, STACK, BOOT_SEL_DATA };
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	fv.vm.host.iret_step_lost = true;
	memcpy(ram + BOOT_GDT_ADDR + 0x38, &code32, sizeof(code32));
	v->run->s.regs.sregs.gdt.limit = 0x3f;
	v = iretq_frame(frame, X86_RFLAGS_FIXED);
	assert_int_equal(v->stats.irets_performed, 1);
	assert_int_equal(v->run->s.regs.sregs.cs.selector, 0x38);
	assert_false(v->run->s.regs.sregs.cs.l);
	assert_true(v->run->s.regs.sregs.cs.db);
	assert_int_equal(v->run->s.regs.sregs.cs.limit, 0xffffffff);
	assert_true(v->run->kvm_dirty_regs & KVM_SYNC_X86_SREGS);
	assert_int_equal(regs(v)->rip, CODE + 0x40);
}

/*
 * What the VMM leaves to the CPU, stepped: a CS descriptor that would
 * give another cache (or be written: accessed bit clear), another SS,
 * NT set (#GP), a target that is not canonical, the guest's breakpoints
 * on, protection keys.
 */
static void iretq_left_to_cpu(void **state)
{
	uint64_t frame[5] = { CODE + 0x40, BOOT_SEL_CODE64, X86_RFLAGS_FIXED, STACK,
			      BOOT_SEL_DATA };
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);

	(void)state;
	fv.vm.host.iret_step_lost = true;
	ram[BOOT_GDT_ADDR + BOOT_SEL_CODE64 + 5] &= (uint8_t)~1u;
	v = iretq_frame(frame, X86_RFLAGS_FIXED);
	ram[BOOT_GDT_ADDR + BOOT_SEL_CODE64 + 5] |= 1u;
	assert_int_equal(v->step.rip, CODE);
	frame[4] = 0;
	v = iretq_frame(frame, X86_RFLAGS_FIXED);
	assert_int_equal(v->step.rip, CODE);
	frame[4] = BOOT_SEL_DATA;
	v = iretq_frame(frame, X86_RFLAGS_FIXED | X86_RFLAGS_NT);
	assert_int_equal(v->step.rip, CODE);
	frame[0] = 0x0000800000000000ull;
	v = iretq_frame(frame, X86_RFLAGS_FIXED);
	assert_int_equal(v->step.rip, CODE);
	frame[0] = CODE + 0x40;
	/* A DPL3 code segment (#GP(selector) at RPL0), one past its limit in compatibility mode. */
	memcpy(ram + BOOT_GDT_ADDR + 0x30, &(uint64_t){ 0x00affb000000ffffull }, 8);
	memcpy(ram + BOOT_GDT_ADDR + 0x38, &(uint64_t){ 0x00009b000000ffffull }, 8);
	v->run->s.regs.sregs.gdt.limit = 0x3f;
	frame[1] = 0x30;
	v = iretq_frame(frame, X86_RFLAGS_FIXED);
	assert_int_equal(v->step.rip, CODE);
	frame[1] = 0x38;
	frame[0] = 0x10000;
	v = iretq_frame(frame, X86_RFLAGS_FIXED);
	assert_int_equal(v->step.rip, CODE);
	frame[0] = CODE + 0x40;
	frame[1] = BOOT_SEL_CODE64;
	/* A guest data breakpoint (read/write, 8 bytes) on the frame's RFLAGS. */
	fc->debugregs.db[0] = STACK - 24;
	fc->debugregs.dr7 = X86_DR7_L0 | (3ull << 16) | (2ull << 18);
	v->step.dr_valid = false;
	v = iretq_frame(frame, X86_RFLAGS_FIXED);
	assert_int_equal(v->step.rip, CODE);
	fc->debugregs.dr7 = 0;
	v->step.dr_valid = false;
	v->run->s.regs.sregs.cr4 |= X86_CR4_PKE;
	v = iretq_frame(frame, X86_RFLAGS_FIXED);
	assert_int_equal(v->step.rip, CODE);
	assert_int_equal(v->step.insn.kind, STEP_IRET);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_STEP);
	assert_int_equal(v->stats.irets_performed, 0);
	/* All as it should be, a guest instruction breakpoint elsewhere: performed. */
	v->run->s.regs.sregs.cr4 &= ~(uint64_t)X86_CR4_PKE;
	fc->debugregs.db[0] = CODE + 0x80;
	fc->debugregs.dr7 = X86_DR7_L0;
	v->step.dr_valid = false;
	v = iretq_frame(frame, X86_RFLAGS_FIXED);
	assert_int_equal(v->stats.irets_performed, 1);
}

/*
 * A far JMP to a TSS in 32-bit protected mode: the CPU (or KVM) saved the
 * hardware EFLAGS, TF the VMM's, in the outgoing TSS; the guest's own goes
 * there, and its TF is now the incoming image's. LTR changes TR without a
 * task switch: nothing written then.
 */
static void task_switch_saved_tf(void **state)
{
	static const uint8_t ljmp[] = { 0xea, 0x00, 0x00, 0x00, 0x00, 0x90, 0x00 };
	static const uint8_t ltr[] = { 0x0f, 0x00, 0xd8 };
	struct vcpu *v = &fv.vm.vcpus[0];
	struct kvm_sregs *sr = &v->run->s.regs.sregs;

	(void)state;
	sr->efer = 0;
	sr->cr0 &= ~(uint64_t)X86_CR0_PG;
	sr->cs.l = 0;
	sr->cs.db = 1;
	sr->tr = (struct kvm_segment){ .base = 0x3000, .limit = 0x67, .selector = 0x88,
				       .type = 11, .present = 1 };
	memcpy(ram + CODE, ljmp, sizeof(ljmp));
	ram[0x4025] = 0x01;			/* the incoming image: TF set */
	stepping_before_run(v);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_false(v->step.guest_tf);
	ram[0x3025] = 0x01;			/* saved with the VMM's TF */
	sr->tr.selector = 0x90;
	sr->tr.base = 0x4000;
	step_to(v, 0x200000, DR6_STEP);
	assert_int_equal(ram[0x3025], 0x00);
	assert_true(v->step.guest_tf);
	assert_int_equal(v->stats.unchecked_runs, 0);

	/* LTR: TR changes, no TSS is touched. */
	regs(v)->rip = CODE;
	memcpy(ram + CODE, ltr, sizeof(ltr));
	v->step.guest_tf = false;
	ram[0x4025] = 0x01;
	stepping_before_run(v);
	sr->tr.selector = 0x88;
	sr->tr.base = 0x3000;
	step_to(v, CODE + sizeof(ltr), DR6_STEP);
	assert_int_equal(ram[0x4025], 0x01);
	assert_false(v->step.guest_tf);
}

/* INT3 at CODE from flat 32-bit CPL3 code (CS 0x1b, SS 0x23), the guest's TF set. */
static void int3_cpl3_flat32(struct vcpu *v)
{
	struct kvm_sregs *sr = &v->run->s.regs.sregs;

	sr->cs = (struct kvm_segment){ .limit = 0xffffffff, .selector = 0x1b, .type = 11,
				       .present = 1, .dpl = 3, .db = 1, .s = 1, .g = 1 };
	sr->ss = (struct kvm_segment){ .limit = 0xffffffff, .selector = 0x23, .type = 3,
				       .present = 1, .dpl = 3, .db = 1, .s = 1, .g = 1 };
	regs(v)->rip = CODE;
	regs(v)->rsp = STACK;
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_TF | X86_RFLAGS_IF;
	v->step.guest_tf = true;
	stepping_before_run(v);
}

/*
 * 32-bit protected mode without paging at CPL0, flat: a 32-bit code
 * segment at GDT 0x38 and vector's 8-byte interrupt gate to 0x38:0x130000.
 */
static void flat32_gate(struct vcpu *v, unsigned vector)
{
	struct kvm_sregs *sr = &v->run->s.regs.sregs;
	uint64_t code32 = 0x00cf9b000000ffffull;
	uint8_t gate[8] = { 0x00, 0x00, 0x38, 0x00, 0x00, 0x8e, 0x13, 0x00 };	/* 0x38:0x130000 */

	memcpy(ram + BOOT_GDT_ADDR + 0x38, &code32, sizeof(code32));
	memcpy(ram + IDT + 8 * vector, gate, sizeof(gate));
	sr->efer = 0;
	sr->cr0 &= ~(uint64_t)X86_CR0_PG;
	sr->cs.l = 0;
	sr->cs.db = 1;
	sr->cs.selector = 0x08;
	sr->ss.db = 1;
	sr->ss.limit = 0xffffffff;
	sr->idt.limit = 8 * NGATES - 1;
	sr->gdt.limit = 0x3f;
}

/*
 * IRETD in 32-bit protected mode to virtual-8086 mode (VM in its EFLAGS
 * image, CS 0x2000 with RPL 0): a return outward, unstepped where CPL3
 * cannot be stepped, as return_to_cpl3_unstepped has it for IRETQ.
 */
static void iretd_to_vm86_unstepped(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	fv.vm.host.step_cpl3 = false;
	flat32_gate(v, X86_VEC_GP);
	ram[CODE] = 0xcf;
	memcpy(ram + STACK - 36, (uint32_t[]){ 0x100, 0x2000, X86_RFLAGS_FIXED | X86_RFLAGS_VM,
					       0xf00, 0x2000, 0, 0, 0, 0 }, 36);
	regs(v)->rsp = STACK - 36;
	stepping_before_run(v);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_OFF);
	assert_int_equal(v->stats.unchecked_runs, 1);
	/* Without VM, back to CPL0 code (RPL 0): stepped. */
	memcpy(ram + STACK - 36, (uint32_t[]){ CODE + 0x40, 0x38, X86_RFLAGS_FIXED }, 12);
	stepping_before_run(v);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_STEP);
	assert_int_equal(v->stats.unchecked_runs, 1);
}

/*
 * 32-bit protected mode (flat32_gate) with `code` at CODE, which loads SS
 * with GDT 0x30 (data based at 0x10000) and then IRETDs through the frame
 * at STACK there, which sets TF.
 */
static void iretd_on_stack_at_64k(struct vcpu *v, const uint8_t *code, size_t n)
{
	const uint64_t data32_at_64k = 0x00cf93010000ffffull;
	uint32_t frame[3] = { CODE + 0x40, 0x38, X86_RFLAGS_FIXED | X86_RFLAGS_TF };

	flat32_gate(v, X86_VEC_GP);
	memcpy(ram + BOOT_GDT_ADDR + 0x30, &data32_at_64k, sizeof(data32_at_64k));
	memcpy(ram + CODE, code, n);
	memcpy(ram + 0x10000 + STACK, frame, sizeof(frame));
}

/* That IRETD completed, at 0x38:CODE + 0x40: the guest's TF is its frame's. */
static void iretd_at_64k_completes(struct vcpu *v)
{
	struct kvm_sregs *sr = &v->run->s.regs.sregs;

	regs(v)->rsp = STACK + 12;
	sr->ss.selector = 0x30;
	sr->ss.base = 0x10000;
	sr->cs.selector = 0x38;
	step_to(v, CODE + 0x40, DR6_STEP);
	assert_true(v->step.guest_tf);
}

/*
 * POP SS then IRETD in 32-bit protected mode: the frame is at the new
 * SS's base (0x10000, GDT 0x30) plus ESP as POP SS leaves it.
 */
static void popss_shadowed_iretd(void **state)
{
	static const uint8_t pop_ss_iretd[] = { 0x17, 0xcf };
	uint32_t sel = 0x30;
	struct vcpu *v = &fv.vm.vcpus[0];
	struct kvm_sregs *sr = &v->run->s.regs.sregs;

	(void)state;
	iretd_on_stack_at_64k(v, pop_ss_iretd, sizeof(pop_ss_iretd));
	memcpy(ram + STACK - 4, &sel, sizeof(sel));
	regs(v)->rsp = STACK - 4;
	regs(v)->rflags = X86_RFLAGS_FIXED;
	stepping_before_run(v);
	assert_int_equal(v->step.insn.kind, STEP_MOV_SS);
	assert_int_equal(v->step.shadowed.kind, STEP_IRET);
	assert_true(v->step.shadowed_frame_valid);
	iretd_at_64k_completes(v);

	/* Through an LDT selector, not read: the frame is not known, TF as it was. */
	sel = 0x34;
	memcpy(ram + STACK - 4, &sel, sizeof(sel));
	v->step.guest_tf = false;
	regs(v)->rip = CODE;
	regs(v)->rsp = STACK - 4;
	sr->ss = (struct kvm_segment){ .selector = 0x10, .db = 1, .limit = 0xffffffff, .present = 1,
				       .s = 1, .type = 3 };
	sr->cs.selector = 0x08;
	sr->ldt.limit = 0;
	stepping_before_run(v);
	assert_false(v->step.shadowed_frame_valid);
}

/*
 * MOV SS from memory, whose length the decoder gives: PUSHFQ behind it is
 * known, its image gets the guest's TF, and nothing runs unchecked.
 */
static void movss_mem_shadowed_pushf(void **state)
{
	static const uint8_t mov_ss_pushfq[] = { 0x8e, 0x53, 0x10, 0x9c };	/* mov 0x10(%rbx),%ss */
	uint64_t image = X86_RFLAGS_FIXED | X86_RFLAGS_TF | X86_RFLAGS_IF;
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	memcpy(ram + CODE, mov_ss_pushfq, sizeof(mov_ss_pushfq));
	regs(v)->rbx = STACK;
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_IF;
	stepping_before_run(v);
	assert_int_equal(v->step.insn.kind, STEP_MOV_SS);
	assert_int_equal(v->step.insn.len, 3);
	assert_int_equal(v->step.shadowed.kind, STEP_PUSHF);
	assert_int_equal(v->stats.unchecked_runs, 0);
	memcpy(ram + STACK - 8, &image, 8);
	regs(v)->rsp = STACK - 8;
	step_to(v, CODE + 4, DR6_STEP);
	assert_int_equal(word_at(STACK - 8), X86_RFLAGS_FIXED | X86_RFLAGS_IF);
	assert_int_equal(v->stats.unchecked_runs, 0);
}

/*
 * MOV SS from memory then IRETD in 32-bit protected mode: the selector is
 * the word at the operand through its segment (FS, based at 0x20000), the
 * frame at that selector's base (0x10000, GDT 0x30) plus ESP. Past FS's
 * limit MOV SS itself faults: #GP(0), certain, delivered by the VMM.
 */
static void movss_mem_shadowed_iretd(void **state)
{
	/* mov %fs:4(%ebx),%ss; iretd */
	static const uint8_t mov_ss_iretd[] = { 0x64, 0x8e, 0x53, 0x04, 0xcf };
	uint16_t sel = 0x30;
	struct vcpu *v = &fv.vm.vcpus[0];
	struct kvm_sregs *sr = &v->run->s.regs.sregs;

	(void)state;
	iretd_on_stack_at_64k(v, mov_ss_iretd, sizeof(mov_ss_iretd));
	sr->fs = (struct kvm_segment){ .selector = 0x10, .base = 0x20000, .db = 1,
				       .limit = 0xffffffff, .present = 1, .s = 1, .type = 3 };
	regs(v)->rbx = 0x100;
	memcpy(ram + 0x20000 + 0x104, &sel, sizeof(sel));
	regs(v)->rsp = STACK;
	regs(v)->rflags = X86_RFLAGS_FIXED;
	stepping_before_run(v);
	assert_int_equal(v->step.insn.kind, STEP_MOV_SS);
	assert_int_equal(v->step.insn.len, 4);
	assert_int_equal(v->step.shadowed.kind, STEP_IRET);
	assert_true(v->step.shadowed_frame_valid);
	assert_int_equal(v->step.shadowed_frame[0], CODE + 0x40);
	iretd_at_64k_completes(v);
	assert_int_equal(v->stats.unchecked_runs, 0);

	v->step.guest_tf = false;
	regs(v)->rip = CODE;
	regs(v)->rsp = STACK;
	sr->ss = sr->fs;
	sr->ss.base = 0;
	sr->cs.selector = 0x08;
	sr->fs.limit = 0x103;
	stepping_before_run(v);
	assert_int_equal(v->stats.faults_delivered, 1);
	assert_int_equal(regs(v)->rip, 0x130000);
}

/*
 * MOV SS from a non-canonical address faults before any shadow: without
 * breakpoints the VMM delivers that certain #GP itself; with them the
 * handler is watched (forecast), as for any access.
 */
static void movss_mem_gp(void **state)
{
	static const uint8_t mov_ss[] = { 0x8e, 0x10, 0x90 };	/* mov (%rax),%ss; nop */
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	memcpy(ram + CODE, mov_ss, sizeof(mov_ss));
	regs(v)->rax = 0x8000000000000000ull;
	regs(v)->rflags = X86_RFLAGS_FIXED;
	stepping_before_run(v);
	if (fv.vm.host.step_hwbp) {
		assert_int_equal(v->step.hw.mode, STEP_DEBUG_PREDICT);
		assert_int_equal(v->step.hw.addr, HANDLER(X86_VEC_GP));
		return;
	}
	assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_GP));
	assert_int_equal(v->stats.faults_delivered, 1);
	assert_int_equal(word_at(STACK - 40), CODE);
}

/*
 * MOV SS and POP SS loading a selector that faults, read where the CPU
 * reads it: from memory (RPL 3 at CPL0: #GP(0x40); the read set its
 * page's accessed bit, as the CPU's does), from R8 (REX.B), from the
 * stack (past the GDT, 32-bit code): certain, delivered by the VMM.
 */
static void movss_selector_gp(void **state)
{
	static const uint8_t mov_ss_mem[] = { 0x8e, 0x10 }, mov_ss_r8d[] = { 0x41, 0x8e, 0xd0 },
			     pop_ss[] = { 0x17 };
	uint16_t sel = 0x43;
	uint32_t past_gdt = 0x1000;
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	memcpy(ram + CODE, mov_ss_mem, sizeof(mov_ss_mem));
	memcpy(ram + 0x300000, &sel, sizeof(sel));	/* PDE 1's page; the frame is in PDE 0's */
	regs(v)->rax = 0x300000;
	regs(v)->rflags = X86_RFLAGS_FIXED;
	clear_pde_ad();
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_GP));
	assert_int_equal(word_at(STACK - 48), 0x40);
	assert_int_equal(word_at(STACK - 40), CODE);
	assert_int_equal(pde_ad(1), X86_PTE_A);

	/* With protection keys, which could fault the read first, the CPU says. */
	regs(v)->rip = CODE;
	regs(v)->rsp = STACK;
	v->run->s.regs.sregs.cr4 |= X86_CR4_PKE;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, CODE);
	assert_int_equal(v->stats.faults_delivered, 1);
	v->run->s.regs.sregs.cr4 &= ~(uint64_t)X86_CR4_PKE;

	memcpy(ram + CODE, mov_ss_r8d, sizeof(mov_ss_r8d));
	regs(v)->rip = CODE;
	regs(v)->rsp = STACK;
	regs(v)->rax = BOOT_SEL_DATA;
	regs(v)->r8 = 0x43;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_GP));
	assert_int_equal(word_at(STACK - 48), 0x40);
	assert_int_equal(v->stats.faults_delivered, 2);

	flat32_gate(v, X86_VEC_GP);
	memcpy(ram + CODE, pop_ss, sizeof(pop_ss));
	memcpy(ram + STACK - 4, &past_gdt, sizeof(past_gdt));
	regs(v)->rip = CODE;
	regs(v)->rsp = STACK - 4;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, 0x130000);
	assert_int_equal(v->stats.faults_delivered, 3);
}

/*
 * MOV SS of a selector whose descriptor the CPU rejects (SDM vol. 2 MOV):
 * a code segment, a read-only one, a DPL other than the CPL (#GP(selector)),
 * a data segment not present (#SS(selector)). Certain, delivered by the
 * VMM after the descriptor's read, which set the accessed bit of the LDT's
 * page (PDE 1; the GDT, read for the handler's CS, is in PDE 0). PDE 0
 * is made a supervisor page: then keys, or SMAP whatever RFLAGS.AC, may
 * deny the implicit read of the LDT's user page, and the CPU says.
 */
static void movss_descriptor_faults(void **state)
{
	static const uint8_t mov_ss_eax[] = { 0x8e, 0xd0 };
	static const struct {
		uint16_t sel;
		uint64_t desc;
		unsigned vector;
	} cases[] = {
		{ 0x24, 0x00cf13000000ffffull, X86_VEC_SS },	/* not present */
		{ 0x2c, 0x00cf91000000ffffull, X86_VEC_GP },	/* read-only */
		{ 0x34, 0x00cff3000000ffffull, X86_VEC_GP },	/* DPL3 */
		{ 0x0c, 0x00af9b000000ffffull, X86_VEC_GP },	/* code */
		{ 0x3c, 0x00cf11000000ffffull, X86_VEC_GP },	/* read-only and not present */
	};
	const uint64_t ldt = 0x300000, data = 0x00cf93000000ffffull;
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);
	struct kvm_sregs *sr = &v->run->s.regs.sregs;
	unsigned delivered = 0;
	uint64_t pde;

	(void)state;
	memcpy(&pde, ram + BOOT_PD_ADDR, 8);
	pde &= ~(uint64_t)X86_PTE_US;
	memcpy(ram + BOOT_PD_ADDR, &pde, 8);
	memcpy(ram + CODE, mov_ss_eax, sizeof(mov_ss_eax));
	sr->ldt = (struct kvm_segment){ .base = ldt, .limit = 0x4f, .type = 2, .present = 1 };
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		memcpy(ram + ldt + (cases[i].sel & ~7u), &cases[i].desc, 8);
	memcpy(ram + ldt + 0x48, &data, 8);
	regs(v)->rflags = X86_RFLAGS_FIXED;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		regs(v)->rip = CODE;
		regs(v)->rsp = STACK;
		regs(v)->rax = cases[i].sel;
		clear_pde_ad();
		stepping_before_run(v);
		assert_int_equal(regs(v)->rip, HANDLER(cases[i].vector));
		assert_int_equal(word_at(STACK - 48), cases[i].sel);
		assert_int_equal(word_at(STACK - 40), CODE);
		assert_int_equal(pde_ad(1), X86_PTE_A);
		assert_int_equal(v->stats.faults_delivered, ++delivered);
	}
	/* A writable data segment at DPL0, present: loaded, stepped. */
	regs(v)->rip = CODE;
	regs(v)->rsp = STACK;
	regs(v)->rax = 0x4c;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, CODE);
	/*
	 * The LDT in a user page: the guest's PKRU denying key 0, or not read
	 * (every key denied), leaves it unread; SMAP too, whatever RFLAGS.AC.
	 */
	regs(v)->rax = 0x24;
	sr->cr4 |= X86_CR4_PKE;
	fc->pkru = 1;	/* key 0: access disabled */
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, CODE);
	fc->pkru = 0;
	FAKE_FAIL(fc, get_pkru) = EIO;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, CODE);
	FAKE_FAIL(fc, get_pkru) = 0;
	sr->cr4 ^= X86_CR4_PKE | X86_CR4_SMAP;
	regs(v)->rflags |= X86_RFLAGS_AC;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, CODE);
	assert_int_equal(v->stats.faults_delivered, delivered);
	/* A PKRU that allows key 0: read, delivered. */
	sr->cr4 ^= X86_CR4_PKE | X86_CR4_SMAP;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_SS));
	assert_int_equal(v->stats.faults_delivered, ++delivered);
	/* With the LDT in a supervisor page, SMAP and keys do not apply. */
	memcpy(&pde, ram + BOOT_PD_ADDR + 8, 8);
	pde &= ~(uint64_t)X86_PTE_US;
	memcpy(ram + BOOT_PD_ADDR + 8, &pde, 8);
	fc->pkru = 0x55555555;
	sr->cr4 |= X86_CR4_SMAP;
	regs(v)->rip = CODE;
	regs(v)->rsp = STACK;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_SS));
	assert_int_equal(v->stats.faults_delivered, delivered + 1);
}

/*
 * MOV SS certain to complete in front of an instruction certain to fault
 * (UD2, a non-canonical operand, SYSCALL without EFER.SCE), or of INT3 or
 * INT n (past the IDT: #GP), with the guest's TF clear: the VMM performs
 * MOV SS (SS and its cache loaded, the descriptor's accessed bit set) and
 * delivers the second instruction's event, so that no CPU's handling of
 * the trap MOV SS holds matters. Behind anything else, or with the
 * guest's TF (but for a certain #UD), stepped.
 */
static void movss_pair_by_vmm(void **state)
{
	static const uint8_t ud2[] = { 0x0f, 0x0b }, int3[] = { 0xcc }, nop[] = { 0x90 },
			     load[] = { 0x8b, 0x03 };	/* mov (%rbx), %eax */
	const uint64_t data = 0x00cf92000000ffffull;	/* not accessed */
	struct vcpu *v = &fv.vm.vcpus[0];
	struct kvm_sregs *sr = &v->run->s.regs.sregs;
	const struct kvm_segment ss = sr->ss;

	(void)state;
	memcpy(ram + BOOT_GDT_ADDR + 0x28, &data, sizeof(data));
	sr->gdt.limit = 0x2f;
	regs(v)->rax = 0x28;
	movss_before_run(ud2, sizeof(ud2), X86_RFLAGS_FIXED | X86_RFLAGS_IF);
	assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_UD));
	assert_int_equal(word_at(STACK - 40), CODE + 2);
	assert_int_equal(word_at(STACK - 24),
			 X86_RFLAGS_FIXED | X86_RFLAGS_IF | X86_RFLAGS_RF);
	assert_int_equal(word_at(STACK - 8), 0x28);
	assert_int_equal(sr->ss.selector, 0x28);
	assert_int_equal(sr->ss.type, 3);
	assert_int_equal(ram[BOOT_GDT_ADDR + 0x28 + 5], 0x93);
	assert_int_equal(v->stats.faults_delivered, 1);

	/* INT3: its frame holds the next instruction. */
	sr->ss = ss;
	regs(v)->rip = CODE;
	regs(v)->rsp = STACK;
	movss_before_run(int3, sizeof(int3), X86_RFLAGS_FIXED | X86_RFLAGS_IF);
	assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_BP));
	assert_int_equal(word_at(STACK - 40), CODE + 3);
	assert_int_equal(sr->ss.selector, 0x28);

	/* The operand's certain #GP (non-canonical). */
	sr->ss = ss;
	regs(v)->rip = CODE;
	regs(v)->rsp = STACK;
	regs(v)->rbx = 0x8000000000000000ull;
	movss_before_run(load, sizeof(load), X86_RFLAGS_FIXED | X86_RFLAGS_IF);
	assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_GP));
	assert_int_equal(word_at(STACK - 48), 0);
	assert_int_equal(word_at(STACK - 40), CODE + 2);
	assert_int_equal(v->stats.faults_delivered, 2);

	/*
	 * INT n past the IDT's limit: the pair delivers #GP with the IDT bit
	 * set and EXT clear (SDM vol. 3 6.13), its frame at INT n's RIP.
	 */
	sr->ss = ss;
	regs(v)->rip = CODE;
	regs(v)->rsp = STACK;
	movss_before_run((const uint8_t[]){ 0xcd, 0x41 }, 2, X86_RFLAGS_FIXED | X86_RFLAGS_IF);
	assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_GP));
	assert_int_equal(word_at(STACK - 48), 0x41 * 8 + 2);
	assert_int_equal(word_at(STACK - 40), CODE + 2);
	assert_int_equal(sr->ss.selector, 0x28);
	assert_int_equal(v->stats.faults_delivered, 3);

	/* SYSCALL without EFER.SCE: #UD, certain. */
	sr->ss = ss;
	sr->efer &= ~(uint64_t)X86_EFER_SCE;
	regs(v)->rip = CODE;
	regs(v)->rsp = STACK;
	movss_before_run((const uint8_t[]){ 0x0f, 0x05 }, 2, X86_RFLAGS_FIXED | X86_RFLAGS_IF);
	assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_UD));
	assert_int_equal(word_at(STACK - 40), CODE + 2);
	assert_int_equal(v->stats.faults_delivered, 4);

	/* A NOP behind it, or the guest's TF with INT3: stepped, nothing changed. */
	sr->ss = ss;
	regs(v)->rip = CODE;
	regs(v)->rsp = STACK;
	movss_then(nop, sizeof(nop), X86_RFLAGS_FIXED | X86_RFLAGS_IF);
	assert_int_equal(regs(v)->rip, CODE);
	assert_int_equal(sr->ss.selector, ss.selector);
	memcpy(ram + CODE + 2, int3, sizeof(int3));
	pair_again(v, true);
	assert_int_equal(v->step.insn.kind, STEP_MOV_SS);
	assert_int_equal(regs(v)->rip, CODE);
	assert_int_equal(sr->ss.selector, ss.selector);

	/*
	 * With the guest's TF, a certain #UD: performed, the frame holding
	 * the guest's TF (KVM's own #UD would lose it), the held trap dropped.
	 */
	memcpy(ram + CODE + 2, ud2, sizeof(ud2));
	pair_again(v, true);
	assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_UD));
	assert_int_equal(word_at(STACK - 24),
			 X86_RFLAGS_FIXED | X86_RFLAGS_IF | X86_RFLAGS_TF | X86_RFLAGS_RF);
	assert_false(v->step.guest_tf);
	assert_int_equal(v->stats.faults_delivered, 5);
}

/*
 * A frame of three slots of `slot` bytes (4: a 32-bit gate's; 2: a 16-bit
 * gate's, real mode's) at guest-physical at: (E)IP, CS, (E)FLAGS.
 */
static void assert_frame(unsigned slot, uint64_t at, uint32_t ip, uint32_t cs, uint32_t flags)
{
	const uint32_t want[3] = { ip, cs, flags };

	for (unsigned i = 0; i < 3; i++) {
		uint32_t w = 0;

		memcpy(&w, ram + at + slot * i, slot);
		assert_int_equal(w, want[i]);
	}
}

/*
 * The pair in real mode: MOV SS from AX (then UD2) and POP SS (then INT3)
 * load the selector and a base of 16 times it, and keep the rest of SS's
 * cache (its limit here 4 GiB); POP SS moves SP by 2. The 16-bit frame
 * goes to the new stack, through the IVT, without the VMM's TF.
 */
static void movss_pair_real_mode(void **state)
{
	static const uint8_t mov_ud2[] = { 0x8e, 0xd0, 0x0f, 0x0b }, pop_int3[] = { 0x17, 0xcc };
	struct vcpu *v = &fv.vm.vcpus[0];
	struct kvm_sregs *sr = &v->run->s.regs.sregs;
	const struct kvm_segment ss = { .base = 0x20000, .limit = 0xffffffff, .selector = 0x2000,
					.type = 3, .present = 1, .s = 1 };
	const uint16_t sel = 0x3000;

	(void)state;
	sr->efer = 0;
	sr->cr0 &= ~(uint64_t)(X86_CR0_PE | X86_CR0_PG);
	sr->cs = (struct kvm_segment){ .base = 0x10000, .limit = 0xffff, .selector = 0x1000,
				       .type = 11, .present = 1, .s = 1 };
	sr->ss = ss;
	sr->idt = (struct kvm_dtable){ .base = IDT, .limit = 0x3ff };
	memcpy(ram + IDT + 4 * X86_VEC_UD, (const uint8_t[]){ 0x00, 0x02, 0x00, 0x10 }, 4);
	memcpy(ram + IDT + 4 * X86_VEC_BP, (const uint8_t[]){ 0x00, 0x03, 0x00, 0x10 }, 4);
	memcpy(ram + 0x10100, mov_ud2, sizeof(mov_ud2));
	regs(v)->rip = 0x100;
	regs(v)->rsp = 0x1000;
	regs(v)->rax = sel;
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_IF;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, 0x200);
	assert_int_equal(sr->ss.selector, sel);
	assert_int_equal(sr->ss.base, 0x30000);
	assert_int_equal(sr->ss.limit, 0xffffffff);
	assert_int_equal(regs(v)->rsp, 0x1000 - 6);
	assert_frame(2, 0x30000 + 0x1000 - 6, 0x102, 0x1000, X86_RFLAGS_FIXED | X86_RFLAGS_IF);
	assert_int_equal(v->stats.faults_delivered, 1);

	sr->ss = ss;
	memcpy(ram + 0x20000 + 0x1000 - 2, &sel, sizeof(sel));
	memcpy(ram + 0x10100, pop_int3, sizeof(pop_int3));
	regs(v)->rip = 0x100;
	regs(v)->rsp = 0x1000 - 2;
	regs(v)->rflags = X86_RFLAGS_FIXED;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, 0x300);
	assert_int_equal(sr->ss.base, 0x30000);
	assert_int_equal(regs(v)->rsp, 0x1000 - 6);
	assert_frame(2, 0x30000 + 0x1000 - 6, 0x102, 0x1000, X86_RFLAGS_FIXED);
}

/*
 * RET to a non-canonical address: #GP(0) at the RET, certain, delivered by
 * the VMM (its handler checked), the frame holding the RET's RIP and RSP.
 */
static void ret_noncanonical_gp(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	uint64_t bad = 0x0000800000000000ull, frame = STACK - 48;

	(void)state;
	ram[CODE] = 0xc3;
	memcpy(ram + STACK, &bad, sizeof(bad));
	regs(v)->rflags = X86_RFLAGS_FIXED;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_GP));
	assert_int_equal(v->stats.faults_delivered, 1);
	assert_int_equal(word_at(frame), 0);
	assert_int_equal(word_at(frame + 8), CODE);
	assert_int_equal(word_at(frame + 32), STACK);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	/* A canonical return address is no fault: stepped. */
	bad = CODE + 0x40;
	memcpy(ram + STACK, &bad, sizeof(bad));
	regs(v)->rip = CODE;
	regs(v)->rsp = STACK;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, CODE);
	assert_int_equal(v->stats.faults_delivered, 1);
}

/*
 * POP SS then UD2 in 32-bit protected mode: ESP moves past the selector,
 * and the #UD frame goes to the new SS (GDT 0x30, based at 0x10000).
 */
static void popss_pair_by_vmm(void **state)
{
	static const uint8_t pop_ss_ud2[] = { 0x17, 0x0f, 0x0b };
	uint32_t sel = 0x30;
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	iretd_on_stack_at_64k(v, pop_ss_ud2, sizeof(pop_ss_ud2));
	flat32_gate(v, X86_VEC_UD);
	memcpy(ram + STACK - 4, &sel, sizeof(sel));
	regs(v)->rsp = STACK - 4;
	regs(v)->rflags = X86_RFLAGS_FIXED;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, 0x130000);
	assert_int_equal(regs(v)->rsp, STACK - 12);
	assert_int_equal(v->run->s.regs.sregs.ss.base, 0x10000);
	assert_frame(4, 0x10000 + STACK - 12, CODE + 1, 0x08, X86_RFLAGS_FIXED | X86_RFLAGS_RF);
}

/*
 * MOV SS holds the step trap over the next instruction (SDM vol. 3 6.8.3):
 * that one runs unchecked, counted where it may be a split lock (a LOCK,
 * or bytes that cannot be read), not where it cannot (a NOP).
 */
static void mov_ss_shadow_counted(void **state)
{
	static const uint8_t mov_ss_nop[] = { 0x8e, 0xd0, 0x90 };		/* mov ss, eax; nop */
	static const uint8_t mov_ss_lock[] = { 0x8e, 0xd0, 0xf0, 0x01, 0x07 };	/* ...; lock add [rdi], eax */
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	regs(v)->rax = BOOT_SEL_DATA;
	memcpy(ram + CODE, mov_ss_nop, sizeof(mov_ss_nop));
	stepping_before_run(v);
	assert_int_equal(v->step.insn.kind, STEP_MOV_SS);
	assert_int_equal(v->stats.unchecked_runs, 0);
	step_to(v, CODE + 3, DR6_STEP);
	memcpy(ram + CODE, mov_ss_lock, sizeof(mov_ss_lock));
	regs(v)->rip = CODE;
	stepping_before_run(v);
	assert_int_equal(v->stats.unchecked_runs, 1);
}

/*
 * INTO outside 64-bit mode (#UD there): with OF clear it is no event and
 * is stepped as a NOP; with OF set and the guest's TF the VMM delivers #OF
 * through the 32-bit gate, the frame holding the guest's TF.
 */
static void legacy_into_delivered_with_of(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	uint64_t frame = STACK - 12;

	(void)state;
	flat32_gate(v, X86_VEC_OF);
	memset(ram + 0x130000, 0x90, 16);
	ram[CODE] = 0xce;
	regs(v)->rflags = X86_RFLAGS_FIXED;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, CODE);
	assert_int_equal(regs(v)->rsp, STACK);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	step_to(v, CODE + 1, DR6_STEP);
	assert_int_equal(v->stats.faults_delivered, 0);

	regs(v)->rip = CODE;
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_TF | X86_RFLAGS_OF;
	v->step.guest_tf = true;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, 0x130000);
	assert_int_equal(regs(v)->rsp, frame);
	assert_frame(4, frame, CODE + 1, 0x08, X86_RFLAGS_FIXED | X86_RFLAGS_TF | X86_RFLAGS_OF);
}

/* SS0:ESP0 of a 32-bit TSS at base: 0x10 (flat data at GDT 0x10):0x170000, returned. */
static uint32_t tss32_ring0_stack(uint64_t base)
{
	uint64_t data0 = 0x00cf93000000ffffull;
	uint32_t esp0 = 0x170000;
	uint16_t ss0 = 0x10;

	memcpy(ram + BOOT_GDT_ADDR + 0x10, &data0, sizeof(data0));
	memcpy(ram + base + 4, &esp0, 4);
	memcpy(ram + base + 8, &ss0, 2);
	return esp0;
}

/*
 * SYSCALL with EFER.SCE clear outside IA-32e mode: #UD, certain, delivered
 * by the VMM through the 32-bit gate (the frame holds SYSCALL's own EIP).
 * Stepped, KVM's injected #UD ran its handler unwatched.
 */
static void syscall_sce0_legacy_ud(void **state)
{
	static const uint8_t syscall[] = { 0x0f, 0x05 };
	struct vcpu *v = &fv.vm.vcpus[0];
	uint32_t f[3];

	(void)state;
	flat32_gate(v, X86_VEC_UD);
	memcpy(ram + CODE, syscall, sizeof(syscall));
	regs(v)->rflags = X86_RFLAGS_FIXED;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, 0x130000);
	assert_int_equal(regs(v)->rsp, STACK - 12);
	memcpy(f, ram + STACK - 12, sizeof(f));
	assert_int_equal(f[0], CODE);
	assert_int_equal(f[1], 0x08);
	assert_int_equal(f[2], X86_RFLAGS_FIXED | X86_RFLAGS_RF);
	assert_int_equal(v->stats.faults_delivered, 1);
}

/*
 * A LOCK the instruction does not take (LOCK CMP with XACQUIRE, seed 38
 * record 384, in 32-bit protected mode with the guest's TF): #UD, a
 * decode fault, certain in every mode: delivered by the VMM through the
 * 32-bit gate, the frame with the instruction's own EIP and the guest's
 * TF, the handler checked. Stepped, KVM's #UD ran its handler unwatched.
 * LOCK MOV to CR0 is AMD's MOV to CR8: stepped. So is one whose bytes end
 * at CS's limit before the instruction does (the fetch's #GP comes first).
 */
static void lock_ud_delivered(void **state)
{
	static const uint8_t lock_cmp[] = { 0x66, 0xf0, 0xf2, 0x81, 0xba, 0x44, 0xf5,
					    0xff, 0xff, 0x19, 0x3f };
	static const uint8_t lock_mov_cr0[] = { 0xf0, 0x0f, 0x22, 0xc0 };
	struct vcpu *v = &fv.vm.vcpus[0];
	struct kvm_sregs *sr = &v->run->s.regs.sregs;
	uint32_t f[3];

	(void)state;
	flat32_gate(v, X86_VEC_UD);
	sr->cs.limit = 0xffffffff;
	memcpy(ram + CODE, lock_cmp, sizeof(lock_cmp));
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_TF;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, 0x130000);
	assert_int_equal(regs(v)->rsp, STACK - 12);
	memcpy(f, ram + STACK - 12, sizeof(f));
	assert_int_equal(f[0], CODE);
	assert_int_equal(f[2], X86_RFLAGS_FIXED | X86_RFLAGS_RF | X86_RFLAGS_TF);
	assert_int_equal(v->stats.faults_delivered, 1);
	assert_false(v->step.guest_tf);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);

	regs(v)->rip = CODE;
	regs(v)->rsp = STACK;
	sr->cs.limit = CODE + sizeof(lock_cmp) - 2;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, CODE);
	assert_int_equal(v->stats.faults_delivered, 1);

	sr->cs.limit = 0xffffffff;
	memcpy(ram + CODE, lock_mov_cr0, sizeof(lock_mov_cr0));
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, CODE);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_int_equal(v->stats.faults_delivered, 1);
}

/*
 * A far JMP in 32-bit protected mode with the guest's TF whose step ends
 * neither at the pointer's offset nor at its call gate's: it faulted (the
 * CPU's #GP(0x38) for RPL 3 to a non-conforming segment at CPL0) and the
 * handler ran unwatched to an instruction KVM's emulator ended (the MOV
 * to CR0 back to long mode): no trap owed, the guest's TF clear, one
 * unchecked run. Ending at the offset, it completed: the guest's trap.
 * JMP far to a null selector is a certain #GP(0), delivered; to one in
 * an LDT where there is none, #GP(selector) (the lab's seed 38 case).
 */
static void far_jmp_faulted_to_emulated_exit(void **state)
{
	static const uint8_t ljmp_3b[] = { 0xea, 0x00, 0x20, 0x10, 0x00, 0x3b, 0x00 },
			     ljmp_null[] = { 0xea, 0x00, 0x20, 0x10, 0x00, 0x00, 0x00 },
			     ljmp_ldt[] = { 0xea, 0x00, 0x20, 0x10, 0x00, 0x3f, 0x00 };
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	flat32_gate(v, X86_VEC_GP);
	v->run->s.regs.sregs.cs.limit = 0xffffffff;
	v->run->s.regs.sregs.ldt.unusable = 1;
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_TF;
	memcpy(ram + CODE, ljmp_null, sizeof(ljmp_null));
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, 0x130000);
	assert_int_equal(v->stats.faults_delivered, 1);
	assert_int_equal(word_at(STACK - 16) & 0xffffffff, 0);		/* error code */

	regs(v)->rip = CODE;
	regs(v)->rsp = STACK;
	v->step.guest_tf = true;
	memcpy(ram + CODE, ljmp_ldt, sizeof(ljmp_ldt));
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, 0x130000);
	assert_int_equal(v->stats.faults_delivered, 2);
	assert_int_equal(word_at(STACK - 16) & 0xffffffff, 0x3c);

	regs(v)->rip = CODE;
	regs(v)->rsp = STACK;
	v->step.guest_tf = true;
	memcpy(ram + CODE, ljmp_3b, sizeof(ljmp_3b));
	stepping_before_run(v);
	assert_int_equal(v->step.branch.n, 1);
	assert_int_equal(v->step.branch.to[0], 0x102000);
	handler_ran_to_emulated_exit(v, 0x130040);

	regs(v)->rip = CODE;
	v->step.guest_tf = true;
	stepping_before_run(v);
	step_to(v, 0x102000, DR6_STEP);
	assert_int_equal(v->stats.unchecked_runs, 1);
	assert_int_equal(v->stats.db_reinjected, 1);
}

/*
 * A far branch in 32-bit protected mode through a call gate (GDT 0x30 to
 * 0x38:0x150000) completes at the pointer's offset or the gate's; a far
 * RET whose selector names that gate cannot complete (#GP), and one to a
 * code segment completes at the offset it pops.
 */
static void far_branch_call_gate(void **state)
{
	static const uint8_t ljmp_gate[] = { 0xea, 0x00, 0x20, 0x10, 0x00, 0x30, 0x00 },
			     lret[] = { 0xcb };
	uint8_t gate[8] = { 0x00, 0x00, 0x38, 0x00, 0x00, 0x8c, 0x15, 0x00 };
	struct vcpu *v = &fv.vm.vcpus[0];
	uint32_t frame[2] = { 0x102000, 0x30 };

	(void)state;
	flat32_gate(v, X86_VEC_GP);
	v->run->s.regs.sregs.cs.limit = 0xffffffff;
	memcpy(ram + BOOT_GDT_ADDR + 0x30, gate, sizeof(gate));
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_TF;
	memcpy(ram + CODE, ljmp_gate, sizeof(ljmp_gate));
	stepping_before_run(v);
	assert_int_equal(v->step.branch.n, 2);
	assert_int_equal(v->step.branch.to[0], 0x102000);
	assert_int_equal(v->step.branch.to[1], 0x150000);
	assert_false(v->step.branch.faults);

	memcpy(ram + STACK - 8, frame, sizeof(frame));
	memcpy(ram + CODE, lret, sizeof(lret));
	regs(v)->rsp = STACK - 8;
	stepping_before_run(v);
	assert_int_equal(v->step.branch.n, 0);
	assert_true(v->step.branch.faults);

	frame[1] = 0x38;
	memcpy(ram + STACK - 8, frame, sizeof(frame));
	stepping_before_run(v);
	assert_int_equal(v->step.branch.n, 1);
	assert_int_equal(v->step.branch.to[0], 0x102000);
	assert_false(v->step.branch.faults);
}

/*
 * A pointer past RAM, where no device answers, reads as all-ones there
 * too (KVM's emulator gets them through an MMIO exit): JMP through it
 * lands at 0xffffffff; JMP far through it gets selector 0xffff, past the
 * GDT, and cannot complete (#GP); nor can one whose selector is null.
 */
static void far_branch_unbacked_pointer(void **state)
{
	static const uint8_t jmp_mem[] = { 0xff, 0x25, 0x00, 0x00, 0x40, 0x00 },	/* jmp *0x400000 */
			     ljmp_mem[] = { 0xff, 0x2d, 0x00, 0x00, 0x40, 0x00 },	/* ljmp *0x400000 */
			     ljmp_null[] = { 0xff, 0x2d, 0x00, 0x00, 0x11, 0x00 };	/* ljmp *0x110000 */
	struct vcpu *v = &fv.vm.vcpus[0];
	const uint8_t ptr[6] = { 0x00, 0x20, 0x10, 0x00, 0x00, 0x00 };		/* 0x0:0x102000 */

	(void)state;
	flat32_gate(v, X86_VEC_GP);
	v->run->s.regs.sregs.cs.limit = 0xffffffff;
	v->run->s.regs.sregs.ds.limit = 0xffffffff;
	v->run->s.regs.sregs.ds.db = 1;
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_TF;
	memcpy(ram + CODE, jmp_mem, sizeof(jmp_mem));
	stepping_before_run(v);
	assert_int_equal(v->step.branch.n, 1);
	assert_int_equal(v->step.branch.to[0], 0xffffffff);

	memcpy(ram + CODE, ljmp_mem, sizeof(ljmp_mem));
	stepping_before_run(v);
	assert_int_equal(v->step.branch.n, 0);
	assert_true(v->step.branch.faults);

	memcpy(ram + 0x110000, ptr, sizeof(ptr));
	memcpy(ram + CODE, ljmp_null, sizeof(ljmp_null));
	stepping_before_run(v);
	assert_true(v->step.branch.faults);
	handler_ran_to_emulated_exit(v, 0x130040);
}

/*
 * The same for an indirect JMP and a RET in 64-bit code: the target they
 * read (memory, the stack top) is where they complete; a step ending
 * elsewhere at KVM's emulator's exit faulted (the CPU's #GP, say) and its
 * handler ran: no trap owed.
 */
static void indirect_branch_faulted_to_emulated_exit(void **state)
{
	static const uint8_t jmp_mem[] = { 0xff, 0x24, 0x25, 0x00, 0x00, 0x11, 0x00 },	/* jmp *0x110000 */
			     ret[] = { 0xc3 };
	struct vcpu *v = &fv.vm.vcpus[0];
	uint64_t target = CODE + 0x40, pde2 = RAM | 0x83;	/* 2 MiB at 4 MiB: past RAM */

	(void)state;
	memcpy(ram + 0x110000, &target, 8);
	memcpy(ram + CODE, jmp_mem, sizeof(jmp_mem));
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_TF;
	stepping_before_run(v);
	assert_int_equal(v->step.branch.n, 1);
	assert_int_equal(v->step.branch.to[0], target);
	handler_ran_to_emulated_exit(v, HANDLER(X86_VEC_GP) + 0x20);

	regs(v)->rip = CODE;
	v->step.guest_tf = true;
	stepping_before_run(v);
	step_to(v, target, DR6_STEP);
	assert_int_equal(v->stats.unchecked_runs, 1);
	assert_int_equal(v->stats.db_reinjected, 1);

	memcpy(ram + STACK - 8, &target, 8);
	memcpy(ram + CODE, ret, sizeof(ret));
	regs(v)->rip = CODE;
	regs(v)->rsp = STACK - 8;
	v->step.inject_vector = -1;
	v->step.guest_tf = true;
	stepping_before_run(v);
	assert_int_equal(v->step.branch.n, 1);
	assert_int_equal(v->step.branch.to[0], target);

	/* Its stack top runs into a page not present: it cannot complete */
	regs(v)->rsp = RAM - 4;
	stepping_before_run(v);
	assert_int_equal(v->step.branch.n, 0);
	assert_true(v->step.branch.faults);

	/* That page is no RAM: no device answers, KVM's emulator reads all-ones there */
	memcpy(ram + BOOT_PD_ADDR + 16, &pde2, sizeof(pde2));
	memcpy(ram + RAM - 4, &(uint32_t){ 0x101040 }, 4);
	stepping_before_run(v);
	assert_int_equal(v->step.branch.n, 1);
	assert_int_equal(v->step.branch.to[0], 0xffffffff00101040ull);
	assert_false(v->step.branch.faults);
}

/*
 * An indirect JMP whose target read faults (the page is not present, the
 * address non-canonical, a page table outside RAM) completes nowhere:
 * its #PF or #GP handler ran up to KVM's emulator's exit, and no trap is
 * owed there. Before, nothing was known of such a target and that exit
 * was taken for the JMP's.
 */
static void indirect_branch_unreadable(void **state)
{
	static const uint8_t jmp_mem[] = { 0xff, 0x24, 0x25, 0x00, 0x00, 0x40, 0x00 },	/* jmp *0x400000 */
			     jmp_rax[] = { 0xff, 0x20 };					/* jmp *(%rax) */
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	memcpy(ram + CODE, jmp_mem, sizeof(jmp_mem));
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_TF;
	stepping_before_run(v);
	assert_true(v->step.branch.faults);
	handler_ran_to_emulated_exit(v, HANDLER(X86_VEC_PF) + 0x20);

	memcpy(ram + CODE, jmp_rax, sizeof(jmp_rax));
	regs(v)->rip = CODE;
	regs(v)->rsp = STACK;
	regs(v)->rax = 0x0000800000000000ull;
	v->step.guest_tf = true;
	stepping_before_run(v);
	assert_true(v->step.branch.faults);
	handler_ran_to_emulated_exit(v, HANDLER(X86_VEC_GP) + 0x20);

	/* Its page table where no RAM is: KVM's walker raises #PF there too */
	memcpy(ram + BOOT_PD_ADDR + 16, &(uint64_t){ (RAM + 0x10000) | 3 }, 8);
	memcpy(ram + CODE, jmp_mem, sizeof(jmp_mem));
	regs(v)->rip = CODE;
	regs(v)->rsp = STACK;
	v->step.guest_tf = true;
	stepping_before_run(v);
	assert_true(v->step.branch.faults);
	handler_ran_to_emulated_exit(v, HANDLER(X86_VEC_PF) + 0x20);
	memcpy(ram + CODE, jmp_rax, sizeof(jmp_rax));

	/* Readable again: the JMP's own step exit at its target owes the guest's trap */
	regs(v)->rip = CODE;
	regs(v)->rax = 0x110000;
	memcpy(ram + 0x110000, &(uint64_t){ CODE + 0x40 }, 8);
	v->step.guest_tf = true;
	stepping_before_run(v);
	assert_false(v->step.branch.faults);
	step_to(v, CODE + 0x40, DR6_STEP);
	assert_int_equal(v->stats.db_reinjected, 1);
}

/*
 * With the guest's TF, an access KVM emulates (its page is no RAM) gets
 * single-step issued again at its RIP, even with nothing else changed:
 * a #PF KVM queues from that emulation (on the next page, seed 45 record
 * 283) then keeps TF in its frame, as the CPU's does. Not without the
 * guest's TF, not for RAM.
 */
static void mmio_access_guest_tf_again(void **state)
{
	static const uint8_t store[] = { 0x4d, 0x89, 0x0f };	/* mov %r9, (%r15) */
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);
	unsigned issued;
	uint64_t pde2 = RAM | 0x83;	/* 2 MiB at 4 MiB: past RAM */

	(void)state;
	memcpy(ram + BOOT_PD_ADDR + 16, &pde2, sizeof(pde2));
	memcpy(ram + CODE, store, sizeof(store));
	memcpy(ram + CODE + 3, store, sizeof(store));
	regs(v)->r15 = 0x400100;
	stepping_before_run(v);
	issued = FAKE_CALLS(fc, set_guest_debug);
	step_to(v, CODE + 3, DR6_STEP);
	v->step.guest_tf = true;	/* stepping already: its TF is the VMM's record */
	stepping_before_run(v);
	assert_true(v->step.tf_at_start);
	assert_int_equal(FAKE_CALLS(fc, set_guest_debug), issued + 1);

	/* Without the guest's TF, or to RAM: no call. */
	v->step.guest_tf = false;
	regs(v)->rip = CODE;
	stepping_before_run(v);
	assert_int_equal(FAKE_CALLS(fc, set_guest_debug), issued + 1);
	regs(v)->r15 = 0x2000;
	v->step.guest_tf = true;
	stepping_before_run(v);
	assert_int_equal(FAKE_CALLS(fc, set_guest_debug), issued + 1);
}

/*
 * INT3 from CPL3 to a DPL0 handler whose stack entry lies past the TSS's
 * limit (a 16-bit TSS of limit 8, SS0:SP0 at 2-5; a 32-bit one of limit
 * 8, at 4-9): #TS on the CPU, which the VMM leaves to it.
 */
static void legacy_int3_tss_limit(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct kvm_sregs *sr = &v->run->s.regs.sregs;

	(void)state;
	flat32_gate(v, X86_VEC_BP);
	ram[IDT + 8 * X86_VEC_BP + 5] = 0xee;
	ram[CODE] = 0xcc;
	sr->tr = (struct kvm_segment){ .base = 0x4000, .limit = 8, .selector = 0xa8,
				       .type = 3, .present = 1 };
	int3_cpl3_flat32(v);
	assert_int_equal(regs(v)->rip, CODE);
	sr->tr.type = 11;
	int3_cpl3_flat32(v);
	assert_int_equal(regs(v)->rip, CODE);
	/* A limit that holds the entry: delivered, on 0x10:0x170000. */
	tss32_ring0_stack(0x4000);
	sr->tr.limit = 9;
	int3_cpl3_flat32(v);
	assert_int_equal(regs(v)->rip, 0x130000);
}

/*
 * Outside IA-32e mode, a step that stops at the first instruction of a
 * fault's handler (a #PF through a 32-bit gate, its frame of 4-byte slots
 * behind an error code at SS:ESP): the frame's EFLAGS get the guest's TF
 * in place of the VMM's, and nothing is counted or delivered.
 */
static void legacy_fault_frame_at_handler(void **state)
{
	static const uint8_t mov[] = { 0x8b, 0x03 };	/* mov (%ebx), %eax */
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);
	struct kvm_sregs *sr = &v->run->s.regs.sregs;
	uint64_t frame = STACK - 16;
	uint32_t f[4] = { 2, CODE, 0x08, X86_RFLAGS_FIXED | X86_RFLAGS_TF };

	(void)state;
	flat32_gate(v, X86_VEC_PF);
	memcpy(ram + CODE, mov, sizeof(mov));
	regs(v)->rflags = X86_RFLAGS_FIXED;
	stepping_before_run(v);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	/* The CPU delivered #PF(2) with the VMM's TF and stopped at the handler. */
	memcpy(ram + frame, f, sizeof(f));
	regs(v)->rsp = frame;
	sr->cs.selector = 0x38;
	step_to(v, 0x130000, DR6_STEP);
	memcpy(f, ram + frame, sizeof(f));
	assert_int_equal(f[1], CODE);
	assert_int_equal(f[3], X86_RFLAGS_FIXED);
	assert_int_equal(v->stats.unchecked_runs, 0);
	assert_int_equal(FAKE_CALLS(fc, set_events), 0);
	assert_false(v->step.guest_tf);
}

/*
 * Breakpoints on handlers outside IA-32e mode take linear addresses: the
 * gate's offset plus its code segment's base (0x10000 here), the IVT's
 * segment times 16 in real mode. A forecast #GP (a DS limit) stops at the
 * handler and its frame gets the guest's TF; the #GP of a WRMSR, left to
 * KVM, has its handler watched at the same address, but stepped through a
 * gate that names an LDT selector.
 */
static void legacy_handler_breakpoints(void **state)
{
	static const uint8_t mov[] = { 0x8b, 0x03 };	/* mov (%ebx), %eax */
	static const uint8_t wrmsr[] = { 0x0f, 0x30 };
	const uint64_t code32_at_64k = 0x00cf9b010000ffffull;
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);
	struct kvm_sregs *sr = &v->run->s.regs.sregs;
	uint64_t frame = STACK - 16;
	uint32_t f[4] = { 0, CODE, 0x08, X86_RFLAGS_FIXED | X86_RFLAGS_TF };

	(void)state;
	flat32_gate(v, X86_VEC_GP);
	memcpy(ram + BOOT_GDT_ADDR + 0x38, &code32_at_64k, sizeof(code32_at_64k));
	memcpy(ram + CODE, mov, sizeof(mov));
	sr->ds.limit = 0xfff;
	regs(v)->rbx = 0x2000;
	/* EFER.LME without LMA too (paging off on the way out of IA-32e mode): 8-byte gates. */
	for (unsigned lme = 0; lme < 2; lme++) {
		sr->efer = lme ? X86_EFER_LME : 0;
		sr->cs.selector = 0x08;
		sr->cs.base = 0;
		regs(v)->rip = CODE;
		regs(v)->rflags = X86_RFLAGS_FIXED;
		f[3] = X86_RFLAGS_FIXED | X86_RFLAGS_TF;
		stepping_before_run(v);
		assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
		assert_int_equal(v->step.hw.mode, STEP_DEBUG_PREDICT);
		assert_int_equal(fc->debug.arch.debugreg[0], 0x140000);
		/* The CPU delivered #GP(0) with the VMM's TF; the VMM's breakpoint stopped it. */
		memcpy(ram + frame, f, sizeof(f));
		regs(v)->rsp = frame;
		sr->cs.selector = 0x38;
		sr->cs.base = 0x10000;
		step_to_la(v, 0x130000, 0x140000, X86_DR6_ACTIVE_LOW | 1);
		memcpy(f, ram + frame, sizeof(f));
		assert_int_equal(f[1], CODE);
		assert_int_equal(f[3], X86_RFLAGS_FIXED);
		assert_int_equal(v->stats.unchecked_runs, 0);
		assert_int_equal(FAKE_CALLS(fc, set_events), 0);
	}
	sr->efer = 0;

	/* WRMSR's #GP, left to KVM: its handler watched at 0x140000. */
	sr->cs.selector = 0x08;
	sr->cs.base = 0;
	memcpy(ram + CODE, wrmsr, sizeof(wrmsr));
	regs(v)->rip = CODE;
	stepping_before_run(v);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	test_ctrl_reserved_write(v);
	assert_int_equal(v->run->msr.error, 1);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_WATCH);
	assert_int_equal(v->step.hw.addr, 0x140000);
	assert_int_equal(fc->debug.arch.debugreg[0], 0x140000);
	step_to_la(v, 0x130000, 0x140000, X86_DR6_ACTIVE_LOW | 1);
	assert_int_equal(v->stats.unchecked_runs, 0);

	/* A gate naming an LDT selector: no base looked up, the handler stepped. */
	ram[IDT + 8 * X86_VEC_GP + 2] = 0x3c;
	regs(v)->rip = CODE;
	stepping_before_run(v);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	test_ctrl_reserved_write(v);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_STEP);
	assert_int_equal(v->step.frame_vector, X86_VEC_GP);
	ram[IDT + 8 * X86_VEC_GP + 2] = 0x38;

	/* Real mode: IVT entry 13 is 0x2000:0x0300, linear 0x20300. */
	sr->cr0 &= ~(uint64_t)X86_CR0_PE;
	sr->cs = (struct kvm_segment){ .base = 0x10000, .limit = 0xffff, .selector = 0x1000,
				       .type = 11, .present = 1, .s = 1 };
	sr->idt = (struct kvm_dtable){ .base = IDT, .limit = 0x3ff };
	memcpy(ram + IDT + 4 * X86_VEC_GP, (const uint8_t[]){ 0x00, 0x03, 0x00, 0x20 }, 4);
	memcpy(ram + 0x10100, wrmsr, sizeof(wrmsr));
	regs(v)->rip = 0x100;
	stepping_before_run(v);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	test_ctrl_reserved_write(v);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_WATCH);
	assert_int_equal(v->step.hw.addr, 0x20300);
}

/* Virtual-8086 mode under CR4.VME at 0x7000:0x1800, SS:SP 0x7000:0x2000, about to run INT $0x10. */
static void vm86_vme_int10(struct vcpu *v, uint64_t flags, bool guest_tf)
{
	struct kvm_sregs *sr = &v->run->s.regs.sregs;
	struct kvm_segment rs = { .base = 0x70000, .limit = 0xffff, .selector = 0x7000, .type = 3,
				  .present = 1, .dpl = 3, .s = 1 };

	flat32_gate(v, X86_VEC_GP);
	sr->cr4 |= X86_CR4_VME;
	sr->cs = sr->ss = sr->ds = sr->es = sr->fs = sr->gs = rs;
	memset(ram + 0x7fff0, 0, 16);
	ram[0x71800] = 0xcd;
	ram[0x71801] = 0x10;
	regs(v)->rip = 0x1800;
	regs(v)->rsp = 0x2000;
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_VM | flags;
	v->step.guest_tf = guest_tf;
}

/*
 * INT n in virtual-8086 mode under CR4.VME (SDM vol. 3 20.3.3): the TSS's
 * redirection bitmap (bit 0x10 of the 32 bytes below the I/O map base)
 * sends it to the 8086 program's IVT, delivered by the VMM with the
 * guest's TF in the pushed FLAGS (method 5), IOPL 3 and VIF as IF in it
 * below IOPL 3 (method 6); set, #GP(0) below IOPL 3 (method 3) and the
 * IDT at IOPL 3 (method 4); a bitmap beyond the TSS's limit is the CPU's.
 * Before, all of it was stepped: the CPU pushed the VMM's TF. A POPF
 * that would load TF there is a certain #GP(0) (step_certain_fault()).
 */
static void vm86_vme_intn_routes(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct kvm_sregs *sr = &v->run->s.regs.sregs;
	uint32_t esp0 = tss32_ring0_stack(0x3000), f[10];
	uint16_t w[3];

	(void)state;
	sr->tr = (struct kvm_segment){ .base = 0x3000, .limit = 0x88, .selector = 0xa8,
				       .type = 11, .present = 1 };
	memset(ram + 0x3068, 0, 32);
	ram[0x3066] = 0x88;
	ram[0x3067] = 0x00;
	memcpy(ram + 4 * 0x10, (const uint8_t[]){ 0x00, 0x03, 0x00, 0x20 }, 4);	/* 0x2000:0x0300 */
	ram[0x20300] = 0x90;
	memset(ram + 0x130000, 0x90, 16);

	/* Method 5: IOPL 3, bit clear. */
	vm86_vme_int10(v, X86_RFLAGS_TF | X86_RFLAGS_IF | X86_RFLAGS_AC | 0x3000, true);
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, 0x300);
	assert_int_equal(sr->cs.selector, 0x2000);
	assert_int_equal(sr->cs.base, 0x20000);
	assert_int_equal(regs(v)->rsp, 0x2000 - 6);
	assert_frame(2, 0x70000 + 0x2000 - 6, 0x1802, 0x7000,
		       X86_RFLAGS_FIXED | X86_RFLAGS_TF | X86_RFLAGS_IF | 0x3000);
	assert_int_equal(regs(v)->rflags & ~(uint64_t)X86_RFLAGS_TF,
			 X86_RFLAGS_FIXED | X86_RFLAGS_VM | X86_RFLAGS_AC | 0x3000);
	assert_false(v->step.guest_tf);
	step_to_la(v, 0x301, 0x20301, DR6_STEP);
	assert_int_equal(v->stats.unchecked_runs, 0);

	/* Method 6: IOPL 0, bit clear: IOPL 3 and VIF as IF in the image, VIF cleared. */
	vm86_vme_int10(v, X86_RFLAGS_VIF, false);
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, 0x300);
	memcpy(w, ram + 0x70000 + 0x2000 - 6, sizeof(w));
	assert_int_equal(w[2], X86_RFLAGS_FIXED | X86_RFLAGS_IF | 0x3000);
	assert_int_equal(regs(v)->rflags & ~(uint64_t)X86_RFLAGS_TF,
			 X86_RFLAGS_FIXED | X86_RFLAGS_VM);
	step_to_la(v, 0x301, 0x20301, DR6_STEP);

	/* Method 3: IOPL 0, bit set: #GP(0) at the INT, through the IDT. */
	ram[0x3068 + 2] = 1;
	vm86_vme_int10(v, X86_RFLAGS_TF, true);
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, 0x130000);
	memcpy(f, ram + esp0 - 40, sizeof(f));
	assert_int_equal(f[0], 0);
	assert_int_equal(f[1], 0x1800);
	assert_int_equal(f[3], X86_RFLAGS_FIXED | X86_RFLAGS_VM | X86_RFLAGS_TF | X86_RFLAGS_RF);
	step_to(v, 0x130001, DR6_STEP);

	/* Method 4: IOPL 3, bit set: through the IDT's DPL3 gate, the INT's next EIP pushed. */
	memcpy(ram + IDT + 8 * 0x10, ram + IDT + 8 * X86_VEC_GP, 8);
	ram[IDT + 8 * 0x10 + 5] = 0xee;
	vm86_vme_int10(v, X86_RFLAGS_TF | 0x3000, true);
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, 0x130000);
	memcpy(f, ram + esp0 - 36, 36);
	assert_int_equal(f[0], 0x1802);
	assert_int_equal(f[1], 0x7000);
	assert_int_equal(f[2], X86_RFLAGS_FIXED | X86_RFLAGS_VM | X86_RFLAGS_TF | 0x3000);
	step_to(v, 0x130001, DR6_STEP);
	assert_int_equal(v->stats.unchecked_runs, 0);

	/* The bitmap beyond the TSS's limit: the CPU's #GP(0); the INT is stepped. */
	ram[0x3066] = 0xc0;	/* the bitmap at 0xa0: byte 2 beyond 0x88 */
	vm86_vme_int10(v, 0x3000, false);
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, 0x1800);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	/* A 16-bit TSS has no bitmap: the CPU's to judge; the INT is stepped. */
	ram[0x3066] = 0x88;
	ram[0x3068 + 2] = 0;
	sr->tr.type = 3;
	vm86_vme_int10(v, 0x3000, false);
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, 0x1800);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	sr->tr.type = 11;

	/* A 16-bit POPF loading TF below IOPL 3 under VME: #GP(0) at the POPF; without TF, stepped. */
	for (unsigned tf = 0; tf < 2; tf++) {
		vm86_vme_int10(v, 0, false);
		ram[0x71800] = 0x9d;
		ram[0x72000] = 0x02;
		ram[0x72001] = (uint8_t)tf;
		stepping_before_run(v);
		assert_int_equal(regs(v)->rip, tf ? 0x130000 : 0x1800);
		if (tf) {
			memcpy(f, ram + esp0 - 40, sizeof(f));
			assert_int_equal(f[1], 0x1800);
			step_to(v, 0x130001, DR6_STEP);
		}
	}
	/* A 16-bit IRET whose FLAGS image (at SP + 4) loads TF: the same #GP(0). */
	vm86_vme_int10(v, 0, false);
	ram[0x71800] = 0xcf;
	memcpy(ram + 0x72000, (const uint16_t[]){ 0x1234, 0x7000, X86_RFLAGS_FIXED | X86_RFLAGS_TF }, 6);
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, 0x130000);
	memcpy(f, ram + esp0 - 40, sizeof(f));
	assert_int_equal(f[1], 0x1800);
	step_to(v, 0x130001, DR6_STEP);
	assert_int_equal(v->stats.unchecked_runs, 0);
}

/*
 * INT n (and IRET) in virtual-8086 mode below IOPL 3 (no CR4.VME):
 * #GP(0), certain, delivered by the VMM through the 32-bit gate to CPL0
 * on SS0:ESP0, GS, FS, DS and ES pushed, the guest's TF in the frame.
 * Stepped instead, the CPU's #GP ran its handler with the VMM's TF and
 * the step there was taken for the guest's own trap: a #DB the CPU never
 * raises. IRET was stepped so until by_vmm() judged it outside 64-bit code.
 */
static void vm86_intn_iopl0_gp(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);
	struct kvm_sregs *sr = &v->run->s.regs.sregs;
	struct kvm_segment rs = { .base = 0x70000, .limit = 0xffff, .selector = 0x7000, .type = 3,
				  .present = 1, .dpl = 3, .s = 1 };
	uint32_t esp0 = tss32_ring0_stack(0x3000), f[10];

	(void)state;
	flat32_gate(v, X86_VEC_GP);
	memset(ram + 0x130000, 0x90, 16);
	sr->tr = (struct kvm_segment){ .base = 0x3000, .limit = 0x67, .selector = 0xa8,
				       .type = 11, .present = 1 };
	/* int $0x21, then IRET: the same #GP(0) at the instruction, whatever IRET's frame. */
	for (unsigned iret = 0; iret < 2; iret++) {
		struct kvm_segment ds = rs;

		ds.selector = 0x8000;
		ds.base = 0x80000;
		sr->cs = sr->ss = rs;
		sr->ds = sr->es = sr->fs = sr->gs = ds;
		ram[0x71800] = iret ? 0xcf : 0xcd;
		ram[0x71801] = 0x21;
		regs(v)->rip = 0x1800;
		regs(v)->rsp = 0x2000;
		regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_VM | X86_RFLAGS_TF;
		v->step.guest_tf = true;
		stepping_before_run(v);
		assert_int_equal(regs(v)->rip, 0x130000);
		assert_int_equal(regs(v)->rsp, esp0 - 40);
		memcpy(f, ram + esp0 - 40, sizeof(f));
		assert_int_equal(f[0], 0);			/* error code */
		assert_int_equal(f[1], 0x1800);			/* the instruction itself: a fault */
		assert_int_equal(f[2], 0x7000);
		assert_int_equal(f[3], X86_RFLAGS_FIXED | X86_RFLAGS_VM | X86_RFLAGS_TF |
				 X86_RFLAGS_RF);
		assert_int_equal(f[4], 0x2000);
		assert_int_equal(f[5], 0x7000);
		for (unsigned i = 6; i < 10; i++)
			assert_int_equal(f[i], 0x8000);		/* ES, DS, FS, GS */
		assert_int_equal(sr->cs.selector, 0x38);
		assert_true(sr->ds.unusable);
		assert_false(regs(v)->rflags & X86_RFLAGS_VM);
		assert_false(v->step.guest_tf);
		step_to(v, 0x130001, DR6_STEP);
		assert_int_equal(v->stats.unchecked_runs, 0);
		assert_int_equal(FAKE_CALLS(fc, set_events), 0);	/* no #DB for the guest */
	}
}

/*
 * INT n through a task gate in 32-bit protected mode: KVM switches tasks
 * without a step exit and the old task's TSS keeps the EFLAGS it ran
 * with, so the INT runs unstepped with the guest's own TF (set, then
 * clear), counted. Stepped, the TSS saved the VMM's TF (the generator's
 * task-gate records, seeds 2 and 3).
 */
static void intn_task_gate_unstepped(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);
	struct kvm_sregs *sr = &v->run->s.regs.sregs;
	uint8_t task_gate[8] = { [2] = 0xb0, [5] = 0xe5 };	/* TSS B, DPL3, present */

	(void)state;
	flat32_gate(v, X86_VEC_GP);
	memcpy(ram + IDT + 8 * 0x11, task_gate, sizeof(task_gate));
	for (unsigned tf = 0; tf < 2; tf++) {
		ram[CODE] = 0xcd;		/* int $0x11 */
		ram[CODE + 1] = 0x11;
		regs(v)->rip = CODE;
		regs(v)->rflags = X86_RFLAGS_FIXED | (tf ? X86_RFLAGS_TF : 0);
		v->step.guest_tf = tf;
		stepping_before_run(v);
		assert_int_equal(regs(v)->rip, CODE);		/* the CPU's, through KVM */
		assert_int_equal(v->step.hw.mode, STEP_DEBUG_OFF);
		assert_int_equal(regs(v)->rflags & X86_RFLAGS_TF, tf ? X86_RFLAGS_TF : 0);
		assert_int_equal(v->stats.unchecked_runs, tf + 1);
		assert_int_equal(v->stats.faults_delivered, 0);
		/*
		 * The next exit (an OUT's) resumes stepping from where the guest
		 * went: single-step is on for the run that completes it, which
		 * KVM would otherwise let go on unstepped up to the next exit,
		 * and so on.
		 */
		ram[CODE + 3] = 0x90;
		regs(v)->rip = CODE + 2;
		exit_with(v, KVM_EXIT_IO);
		assert_int_equal(v->completion, VCPU_COMPLETION_KVM);
		assert_int_equal(v->step.hw.mode, STEP_DEBUG_STEP);
		assert_int_equal(v->step.guest_tf, tf);	/* the TF it came back with */
		step_to(v, CODE + 3, DR6_STEP);		/* KVM completed the OUT, then trapped */
		/* With its own TF the guest gets the trap the CPU raises after the OUT. */
		assert_int_equal(FAKE_CALLS(fc, set_events), tf);
		if (tf) {
			assert_int_equal(fc->events.exception.nr, X86_VEC_DB);
			/* Its delivery next (no #DB gate here: the CPU's, unchecked). */
			stepping_before_run(v);
			assert_int_equal(v->stats.unchecked_runs, 3);
			break;
		}
		stepping_before_run(v);
		assert_int_equal(v->step.hw.mode, STEP_DEBUG_STEP);
		assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
		assert_int_equal(v->step.rip, CODE + 3);
	}
	/*
	 * A far CALL to an available 32-bit TSS (GDT 0xb0) is stepped: a step
	 * exit follows in the new task (mode-legacy-pm32-task-switch), where
	 * task_switched() fixes both images.
	 */
	{
		static const uint8_t call_tss[] = { 0x9a, 0, 0, 0, 0, 0xb0, 0x00 };
		uint64_t tss32 = 0x0000890000000067ull;

		memcpy(ram + BOOT_GDT_ADDR + 0xb0, &tss32, sizeof(tss32));
		sr->gdt.limit = 0xb7;
		memcpy(ram + CODE, call_tss, sizeof(call_tss));
		regs(v)->rip = CODE;
		stepping_before_run(v);
		assert_int_not_equal(v->step.hw.mode, STEP_DEBUG_OFF);
		assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
		assert_int_equal(v->stats.unchecked_runs, 3);
	}
	/* Not present: #NP(0x11 * 8 + 2), delivered by the VMM through its gate. */
	memcpy(ram + CODE, "\xcd\x11", 2);
	ram[IDT + 8 * 0x11 + 5] = 0x65;
	flat32_gate(v, X86_VEC_NP);
	regs(v)->rip = CODE;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, 0x130000);
	assert_int_equal(v->stats.faults_delivered, 1);

	/* INTO through a task gate: no event with OF clear (stepped), the CPU's with OF set. */
	{
		unsigned unchecked;

		memcpy(ram + IDT + 8 * X86_VEC_OF, task_gate, sizeof(task_gate));
		ram[CODE] = 0xce;
		regs(v)->rip = CODE;
		regs(v)->rflags = X86_RFLAGS_FIXED;
		stepping_before_run(v);
		assert_int_equal(v->step.hw.mode, STEP_DEBUG_STEP);
		assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
		step_to(v, CODE + 1, DR6_STEP);
		unchecked = (unsigned)v->stats.unchecked_runs;
		regs(v)->rip = CODE;
		regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_OF;
		stepping_before_run(v);
		assert_int_equal(regs(v)->rip, CODE);
		assert_int_equal(v->step.hw.mode, STEP_DEBUG_OFF);
		assert_int_equal(v->stats.unchecked_runs, unchecked + 1);
	}
}

/*
 * A step that switched tasks into CPL3 code, under 32-bit paging with the
 * TSSes in supervisor pages (the rest user pages): both are implicit
 * supervisor accesses, so the old TSS's EFLAGS image gets the guest's TF
 * (clear) in place of the VMM's, and the guest's TF becomes the new
 * image's (set), nothing counted.
 */
static void task_switch_tss_supervisor_access(void **state)
{
	static const uint8_t call_tss[] = { 0x9a, 0, 0, 0, 0, 0xb0, 0x00 };	/* lcall $0xb0, $0 */
	const uint64_t tss32 = 0x0000890050000067ull;	/* available 32-bit TSS at 0x5000 */
	const uint32_t pd = 0x3ff000, pt = 0x3fe000, pde = pt | 7;
	uint32_t flags = X86_RFLAGS_FIXED | X86_RFLAGS_TF;
	struct vcpu *v = &fv.vm.vcpus[0];
	struct kvm_sregs *sr = &v->run->s.regs.sregs;

	(void)state;
	flat32_gate(v, X86_VEC_GP);
	for (uint32_t i = 0; i < 1024; i++) {
		uint32_t pte = i << 12 | (i == 3 || i == 5 ? 3 : 7);

		memcpy(ram + pt + 4 * i, &pte, sizeof(pte));
	}
	memcpy(ram + pd, &pde, sizeof(pde));
	sr->cr3 = pd;
	sr->cr4 = 0;
	sr->cr0 |= X86_CR0_PG;
	sr->tr = (struct kvm_segment){ .base = 0x3000, .limit = 0x67, .selector = 0xa8, .type = 11,
				       .present = 1 };
	memcpy(ram + 0x3000 + 0x24, &flags, sizeof(flags));	/* as the CPU saved it: the VMM's TF */
	memcpy(ram + 0x5000 + 0x24, &flags, sizeof(flags));	/* the new task's own */
	memcpy(ram + BOOT_GDT_ADDR + 0xb0, &tss32, sizeof(tss32));
	sr->gdt.limit = 0xb7;
	memcpy(ram + CODE, call_tss, sizeof(call_tss));
	regs(v)->rflags = X86_RFLAGS_FIXED;
	stepping_before_run(v);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	sr->tr = (struct kvm_segment){ .base = 0x5000, .limit = 0x67, .selector = 0xb0, .type = 11,
				       .present = 1 };
	sr->cs.dpl = 3;
	sr->ss.dpl = 3;
	step_to(v, CODE + 0x10, DR6_STEP);
	assert_int_equal(ram[0x3000 + 0x25] & 1, 0);
	assert_true(v->step.guest_tf);
	assert_int_equal(v->stats.unchecked_runs, 0);
}

/*
 * INT3 from CPL3 in 32-bit protected mode through a DPL0 gate: #GP(3 * 8 +
 * 2), certain, delivered by the VMM through the #GP gate to CPL0, the
 * frame holding the INT3 itself and the guest's TF. Stepped, the CPU's #GP
 * ran its handler with the VMM's TF, whose step there was taken for the
 * guest's own trap: a #DB the CPU never raises (generator, seed 1).
 */
static void legacy_int3_dpl0_gate_gp(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);
	struct kvm_sregs *sr = &v->run->s.regs.sregs;
	uint32_t esp0 = tss32_ring0_stack(0x3000), f[6];

	(void)state;
	flat32_gate(v, X86_VEC_BP);		/* DPL0: not for INT3 from CPL3 */
	flat32_gate(v, X86_VEC_GP);
	memset(ram + 0x130000, 0x90, 16);
	ram[CODE] = 0xcc;
	sr->tr = (struct kvm_segment){ .base = 0x3000, .limit = 0x67, .selector = 0xa8,
				       .type = 11, .present = 1 };
	int3_cpl3_flat32(v);
	assert_int_equal(regs(v)->rip, 0x130000);
	assert_int_equal(regs(v)->rsp, esp0 - 24);
	memcpy(f, ram + esp0 - 24, sizeof(f));
	assert_int_equal(f[0], 3 * 8 + 2);		/* the IDT bit, EXT clear */
	assert_int_equal(f[1], CODE);			/* the INT3 itself: a fault */
	assert_int_equal(f[2], 0x1b);
	assert_int_equal(f[3], X86_RFLAGS_FIXED | X86_RFLAGS_TF | X86_RFLAGS_IF | X86_RFLAGS_RF);
	assert_int_equal(f[4], STACK);
	assert_int_equal(f[5], 0x23);
	assert_int_equal(sr->cs.selector, 0x38);
	assert_int_equal(v->stats.faults_delivered, 1);
	step_to(v, 0x130001, DR6_STEP);
	assert_int_equal(v->stats.unchecked_runs, 0);
	assert_int_equal(FAKE_CALLS(fc, set_events), 0);	/* no #DB for the guest */
}

/*
 * 32-bit paging, 4 KiB pages identity-mapping RAM (PD at 0x200000, page
 * tables from 0x201000), none accessed or dirty yet.
 */
static void paging32(struct vcpu *v)
{
	struct kvm_sregs *sr = &v->run->s.regs.sregs;

	for (uint32_t t = 0; t < RAM >> 22; t++) {
		uint32_t pde = (0x201000 + 0x1000 * t) | X86_PTE_P | X86_PTE_RW;

		memcpy(ram + 0x200000 + 4 * t, &pde, 4);
		for (uint32_t i = 0; i < 1024; i++) {
			uint32_t pte = ((t << 22) | (i << 12)) | X86_PTE_P | X86_PTE_RW;

			memcpy(ram + 0x201000 + 0x1000 * t + 4 * i, &pte, 4);
		}
	}
	sr->cr3 = 0x200000;
	sr->cr4 &= ~(uint64_t)(X86_CR4_PAE | X86_CR4_PSE);
	sr->cr0 |= X86_CR0_PG;
}

static uint32_t pte32(uint64_t la)
{
	uint32_t pte;

	memcpy(&pte, ram + 0x201000 + 4 * (la >> 12), 4);
	return pte;
}

/*
 * The frame the VMM pushes for an INT3 across a page boundary under
 * 32-bit paging: both pages' PTEs get their accessed and dirty bits, as
 * the CPU's pushes give them; the page past the frame gets neither.
 */
static void legacy_frame_across_pages(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	flat32_gate(v, X86_VEC_BP);
	paging32(v);
	memset(ram + 0x130000, 0x90, 16);
	ram[CODE] = 0xcc;
	regs(v)->rsp = 0x160004;
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_TF;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, 0x130000);
	assert_int_equal(regs(v)->rsp, 0x15fff8);
	assert_int_equal(pte32(0x15f000) & (X86_PTE_A | X86_PTE_D), X86_PTE_A | X86_PTE_D);
	assert_int_equal(pte32(0x160000) & (X86_PTE_A | X86_PTE_D), X86_PTE_A | X86_PTE_D);
	assert_int_equal(pte32(0x161000) & (X86_PTE_A | X86_PTE_D), 0);
	assert_int_equal(pte32(0x15e000) & (X86_PTE_A | X86_PTE_D), 0);
	/* The IDT's page was read, not written. */
	assert_int_equal(pte32(IDT) & (X86_PTE_A | X86_PTE_D), X86_PTE_A);
}

/*
 * INT3 with the guest's TF outside IA-32e mode, delivered by the VMM: in
 * 32-bit protected mode through a 32-bit interrupt gate (a frame of 4-byte
 * slots, CS reloaded as 32-bit code), from CPL0 and from CPL3 (SS0:ESP0 of
 * the 32-bit TSS), into a conforming segment (staying at CPL3) or a DPL1
 * one (SS1:ESP1); in real mode through the IVT (2-byte slots, CS the
 * segment). Every frame holds the guest's TF; its handler is stepped, and
 * no #DB is owed for INT3 or after the handler's first instruction.
 */
static void legacy_int3_delivered(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);
	struct kvm_sregs *sr = &v->run->s.regs.sregs;
	uint64_t frame = STACK - 12;

	(void)state;
	flat32_gate(v, X86_VEC_BP);
	memset(ram + 0x130000, 0x90, 16);
	ram[CODE] = 0xcc;
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_TF | X86_RFLAGS_IF;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, 0x130000);
	assert_int_equal(regs(v)->rsp, frame);
	assert_frame(4, frame, CODE + 1, 0x08, X86_RFLAGS_FIXED | X86_RFLAGS_TF | X86_RFLAGS_IF);
	assert_int_equal(sr->cs.selector, 0x38);
	assert_true(sr->cs.db);
	assert_false(sr->cs.l);
	assert_false(v->step.guest_tf);
	assert_false(regs(v)->rflags & (X86_RFLAGS_TF | X86_RFLAGS_IF));
	step_to(v, 0x130001, DR6_STEP);
	assert_int_equal(v->stats.unchecked_runs, 0);
	assert_int_equal(FAKE_CALLS(fc, set_events), 0);	/* no #DB for the guest */

	/*
	 * From CPL3 through a DPL3 gate: to CPL0 on SS0:ESP0 of the 32-bit TSS
	 * (0x10:0x170000), the CPL3 SS:ESP pushed first.
	 */
	{
		uint32_t esp0 = tss32_ring0_stack(0x3000), f[5];

		ram[IDT + 8 * X86_VEC_BP + 5] = 0xee;
		sr->tr = (struct kvm_segment){ .base = 0x3000, .limit = 0x67, .selector = 0xa8,
					       .type = 11, .present = 1 };
		int3_cpl3_flat32(v);
		assert_int_equal(regs(v)->rip, 0x130000);
		assert_int_equal(regs(v)->rsp, esp0 - 20);
		memcpy(f, ram + esp0 - 20, sizeof(f));
		assert_int_equal(f[0], CODE + 1);
		assert_int_equal(f[1], 0x1b);
		assert_int_equal(f[2], X86_RFLAGS_FIXED | X86_RFLAGS_TF | X86_RFLAGS_IF);
		assert_int_equal(f[3], STACK);
		assert_int_equal(f[4], 0x23);
		assert_int_equal(sr->ss.selector, 0x10);
		assert_int_equal(sr->ss.dpl, 0);
		assert_true(sr->ss.db);
		assert_int_equal(sr->cs.selector, 0x38);
		assert_int_equal(sr->cs.dpl, 0);
		assert_false(v->step.guest_tf);
		step_to(v, 0x130001, DR6_STEP);
		assert_int_equal(v->stats.unchecked_runs, 0);
		assert_int_equal(FAKE_CALLS(fc, set_events), 0);
	}

	/*
	 * From CPL3 into a conforming DPL0 segment (0x40): the handler stays at
	 * CPL3, on the CPL3 stack, CS's RPL 3; SS (KVM's CPL) untouched.
	 */
	{
		uint64_t conforming = 0x00cf9f000000ffffull;
		uint32_t f[3];

		memcpy(ram + BOOT_GDT_ADDR + 0x40, &conforming, sizeof(conforming));
		sr->gdt.limit = 0x47;
		ram[IDT + 8 * X86_VEC_BP + 2] = 0x40;
		int3_cpl3_flat32(v);
		assert_int_equal(regs(v)->rip, 0x130000);
		assert_int_equal(regs(v)->rsp, STACK - 12);
		memcpy(f, ram + STACK - 12, sizeof(f));
		assert_int_equal(f[0], CODE + 1);
		assert_int_equal(f[1], 0x1b);
		assert_int_equal(f[2], X86_RFLAGS_FIXED | X86_RFLAGS_TF | X86_RFLAGS_IF);
		assert_int_equal(sr->cs.selector, 0x43);
		assert_int_equal(sr->cs.dpl, 0);
		assert_int_equal(sr->ss.selector, 0x23);
		assert_int_equal(sr->ss.dpl, 3);
		assert_false(v->step.guest_tf);
		step_to(v, 0x130001, DR6_STEP);
		assert_int_equal(v->stats.unchecked_runs, 0);
		assert_int_equal(FAKE_CALLS(fc, set_events), 0);
	}

	/*
	 * From CPL3 into a DPL1 segment (0x48): to CPL1 on SS1:ESP1 of the TSS
	 * (offsets 12 and 16: 0x51:0x160000), SS.DPL (KVM's CPL) 1.
	 */
	{
		uint64_t code1 = 0x00cfbb000000ffffull, data1 = 0x00cfb3000000ffffull;
		uint32_t esp1 = 0x160000, f[5];
		uint16_t ss1 = 0x51;

		memcpy(ram + BOOT_GDT_ADDR + 0x48, &code1, sizeof(code1));
		memcpy(ram + BOOT_GDT_ADDR + 0x50, &data1, sizeof(data1));
		memcpy(ram + 0x300c, &esp1, 4);
		memcpy(ram + 0x3010, &ss1, 2);
		sr->gdt.limit = 0x57;
		ram[IDT + 8 * X86_VEC_BP + 2] = 0x48;
		int3_cpl3_flat32(v);
		assert_int_equal(regs(v)->rip, 0x130000);
		assert_int_equal(regs(v)->rsp, esp1 - 20);
		memcpy(f, ram + esp1 - 20, sizeof(f));
		assert_int_equal(f[0], CODE + 1);
		assert_int_equal(f[1], 0x1b);
		assert_int_equal(f[3], STACK);
		assert_int_equal(f[4], 0x23);
		assert_int_equal(sr->cs.selector, 0x49);
		assert_int_equal(sr->ss.selector, 0x51);
		assert_int_equal(sr->ss.dpl, 1);
		step_to(v, 0x130001, DR6_STEP);
		assert_int_equal(v->stats.unchecked_runs, 0);
	}

	/*
	 * The same through a busy 16-bit TSS (0x4000, limit 0x2b): SP1 and SS1
	 * at offsets 6 and 8 (0x51:0xf000, SP zero-extended).
	 */
	{
		uint16_t sp_ss[2] = { 0xf000, 0x51 };

		memcpy(ram + 0x4006, sp_ss, sizeof(sp_ss));
		sr->tr = (struct kvm_segment){ .base = 0x4000, .limit = 0x2b, .selector = 0xa8,
					       .type = 3, .present = 1 };
		int3_cpl3_flat32(v);
		assert_int_equal(regs(v)->rip, 0x130000);
		assert_int_equal(regs(v)->rsp, 0xf000 - 20);
		assert_int_equal(sr->ss.selector, 0x51);
		assert_int_equal(word_at(0xf000 - 20) & 0xffffffff, CODE + 1);
		step_to(v, 0x130001, DR6_STEP);
		assert_int_equal(v->stats.unchecked_runs, 0);
	}

	/* Real mode: CS 0x1000, IP 0x100; IVT entry 3 is 0x1000:0x0200; SS 0x2000, SP 0x1000. */
	sr->cr0 &= ~(uint64_t)X86_CR0_PE;
	sr->cs = (struct kvm_segment){ .base = 0x10000, .limit = 0xffff, .selector = 0x1000,
				       .type = 11, .present = 1, .s = 1 };
	sr->ss = (struct kvm_segment){ .base = 0x20000, .limit = 0xffff, .selector = 0x2000,
				       .type = 3, .present = 1, .s = 1 };
	sr->idt = (struct kvm_dtable){ .base = IDT, .limit = 0x3ff };
	memcpy(ram + IDT + 4 * X86_VEC_BP, (const uint8_t[]){ 0x00, 0x02, 0x00, 0x10 }, 4);
	memset(ram + 0x10200, 0x90, 16);
	ram[0x10100] = 0xcc;
	regs(v)->rip = 0x100;
	regs(v)->rsp = 0x1000;
	regs(v)->rflags = X86_RFLAGS_FIXED | X86_RFLAGS_TF | X86_RFLAGS_IF | X86_RFLAGS_AC;
	v->step.guest_tf = true;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, 0x200);
	assert_int_equal(regs(v)->rsp, 0x1000 - 6);
	assert_frame(2, 0x20000 + 0x1000 - 6, 0x101, 0x1000,
		       X86_RFLAGS_FIXED | X86_RFLAGS_TF | X86_RFLAGS_IF);
	assert_int_equal(sr->cs.selector, 0x1000);
	assert_int_equal(sr->cs.base, 0x10000);
	assert_false(regs(v)->rflags & (X86_RFLAGS_IF | X86_RFLAGS_AC));	/* TF: the VMM's */
	assert_false(v->step.guest_tf);
	step_to(v, 0x201, DR6_STEP);
	assert_int_equal(v->stats.unchecked_runs, 0);
	assert_int_equal(FAKE_CALLS(fc, set_events), 0);
}

/* SYSRETQ at CPL3 is #GP(0), delivered by the VMM: R11's TF is never loaded. */
static void sysret_cpl3_faults(void **state)
{
	static const uint8_t sysretq[] = { 0x48, 0x0f, 0x07 };
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	to_cpl3(v);
	v->run->s.regs.sregs.efer |= X86_EFER_SCE;
	memcpy(ram + CODE, sysretq, sizeof(sysretq));
	regs(v)->r11 = X86_RFLAGS_FIXED | X86_RFLAGS_TF;
	stepping_before_run(v);
	assert_int_equal(regs(v)->rip, HANDLER(X86_VEC_GP));
	assert_int_equal(word_at(RSP0 - 48), 0);		/* the error code */
	assert_int_equal(word_at(RSP0 - 40), CODE);
	assert_false(v->step.guest_tf);
	assert_int_equal(v->stats.faults_delivered, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(plain_step, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(mov_dr7_exec_bp_beside_step, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(mov_dr7_exec_bp_not_beside_step, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(split_lock_emulated, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(split_lock_tf_exec_bp_beside, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(split_lock_tf_exec_bp_not_beside, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(msr_fault_restep, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(msr_fault_events_fail, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(msr_fault_get_events_fails, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(delivery_events_unreadable, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(syscall_msr_unreadable, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(watch_breakpoint_on_handler, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(watch_address_not_ours, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(frame_fix, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(resync_after_completed_exit, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(diverted_step_unchecked, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(debug_exit_unarmed, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(int3_delivered, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(int3_delivered, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(frame_across_pages, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(certain_segment_faults_delivered, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(ud2_cpl3_delivered, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(int3_cpl2_pushes_rf, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(int3_dpl0_gate_cpl3_gp, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(int3_cpl3_handler_frame_user_access, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(delivery_table_limits, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(legacy_into_delivered_with_of, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(ret_noncanonical_gp, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(mov_ss_shadow_counted, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(split_lock_data_breakpoint, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(int3_dpl0_gate_cpl3_gp, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(escaped_with_guest_tf, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(legacy_fault_frame_at_handler, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(legacy_handler_breakpoints, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(cpl3_unstepped_then_io_exit, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(cpl3_unstepped_then_mmio_write, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(left_split_completes_unchecked, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(left_split_completes_unchecked, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(left_split_holds_others, setup_hwbp_2cpus, teardown),
		cmocka_unit_test_setup_teardown(left_split_holds_others, setup_no_hwbp_2cpus, teardown),
		cmocka_unit_test_setup_teardown(left_split_holds_others, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(predict_keeps_guest_breakpoints, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(syscall_performed, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(syscall_trap_owed, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(syscall_compat_stepped, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(sysret_performed, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(xbegin_aborted, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(xbegin_aborted_guest_tf, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(xbegin_without_rtm_stepped, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(shadow_ended_by_vmm, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(shadow_ended_by_vmm, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(movss_shadowed_pushf_popf, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(movss_shadowed_pushf_popf, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(movss_shadowed_syscall, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(movss_shadowed_int3_watched, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(movss_shadowed_int3_frame_fixed, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(movss_shadowed_int3_tf_emulated_in_handler, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(iretq_step_exit_one_late, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(movss_shadowed_iretq, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(movss_shadowed_iretq, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(popss_shadowed_iretd, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(movss_shadowed_fault, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(movss_shadowed_fault, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(movss_shadowed_sysenter_fault, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(movss_shadowed_fault_forecast, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(movss_mem_shadowed_pushf, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(movss_mem_shadowed_pushf, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(movss_mem_shadowed_iretd, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(movss_mem_gp, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(movss_mem_gp, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(movss_selector_gp, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(movss_descriptor_faults, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(movss_pair_by_vmm, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(movss_pair_by_vmm, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(popss_pair_by_vmm, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(movss_pair_real_mode, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(sysret_cpl3_faults, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(iret_tf_watched, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(iretq_performed, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(iretq_performed_to_compat, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(kvm_fault_handler_predicted, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(return_to_cpl3_unstepped, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(fault_frame_behind_handler_push, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(iretd_to_vm86_unstepped, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(iretq_left_to_cpu, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(task_switch_saved_tf, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(iret_selector_fault_delivered, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(iret_tf_rf_stepped, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(iret_fault_keeps_tf, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(iret_fault_at_handler, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(branch_fault_at_handler, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(branch_to_handler_completes, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(undecodable_fault_at_handler, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(undecodable_handler_to_emulated_exit, setup_no_hwbp,
						teardown),
		cmocka_unit_test_setup_teardown(lock_ud_delivered, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(far_jmp_faulted_to_emulated_exit, setup_no_hwbp,
						teardown),
		cmocka_unit_test_setup_teardown(indirect_branch_faulted_to_emulated_exit,
						setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(indirect_branch_unreadable, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(far_branch_call_gate, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(far_branch_unbacked_pointer, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(mmio_access_guest_tf_again, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(kvm_fault_at_handler, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(sysenter_target, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(legacy_int3_delivered, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(vm86_intn_iopl0_gp, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(vm86_vme_intn_routes, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(legacy_int3_dpl0_gate_gp, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(intn_task_gate_unstepped, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(task_switch_tss_supervisor_access, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(intn_task_gate_unstepped, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(legacy_int3_delivered, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(legacy_frame_across_pages, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(legacy_int3_tss_limit, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(syscall_sce0_legacy_ud, setup_no_hwbp, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
