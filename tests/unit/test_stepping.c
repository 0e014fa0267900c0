/* SPDX-License-Identifier: MIT */
/*
 * --split-lock=emulate's engine (src/vmm/stepping.c) through the fake KVM,
 * each flow as the run loop drives it, entry by entry: the step itself: planning a run, judging the exit, watching a handler,
 * forecasting faults, resyncing after exits KVM completes, MSR faults.
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
#include "stepping_fixture.h"

/* lock xadd [rdi], eax */
static const uint8_t lock_xadd[] = { 0xf0, 0x0f, 0xc1, 0x07 };

/* vector's gate gets IST 1 and TR no TSS: only the CPU can deliver it. */
static void no_vmm_delivery(struct vcpu *v, unsigned vector)
{
	ram[IDT + 16 * vector + 4] = 1;
	v->run->s.regs.sregs.tr.present = 0;
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

/* wrmsr; lock xadd [rdi], eax */
static const uint8_t wrmsr_lock_xadd[] = { 0x0f, 0x30, 0xf0, 0x0f, 0xc1, 0x07 };

/* A WRMSR of TEST_CTRL exits: the filter's, answered without a fault. */
static void write_test_ctrl(struct vcpu *v, uint64_t value)
{
	v->run->msr.reason = KVM_MSR_EXIT_REASON_FILTER;
	v->run->msr.index = MSR_TEST_CTRL;
	v->run->msr.data = value;
	v->run->msr.error = 0;
	exit_with(v, KVM_EXIT_X86_WRMSR);
	assert_int_equal(v->run->msr.error, 0);
	assert_int_equal(v->msrs.test_ctrl, value);
}

/*
 * --split-lock-watch=armed, TEST_CTRL bit 29 clear: no step, no check (a
 * split lock at RIP runs as the CPU's), the guest's TF left alone, and so
 * across exits, until the guest asks for #AC.
 */
static void unwatched_runs_unstepped(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);

	(void)state;
	fv.vm.split_lock_watch = SPLIT_LOCK_WATCH_ARMED;
	memcpy(ram + CODE, lock_xadd, sizeof(lock_xadd));
	regs(v)->rdi = 0x20003e;
	regs(v)->rflags |= X86_RFLAGS_TF;
	for (int i = 0; i < 2; i++) {
		stepping_before_run(v);
		assert_int_equal(v->step.phase, STEP_PHASE_UNWATCHED);
		assert_int_equal(v->step.hw.mode, STEP_DEBUG_OFF);
		assert_int_equal(FAKE_CALLS(fc, set_guest_debug), 0);
		assert_int_equal(v->stats.split_locks_detected, 0);
		assert_int_equal(regs(v)->rip, CODE);
		assert_true(regs(v)->rflags & X86_RFLAGS_TF);
		exit_with(v, KVM_EXIT_IO);
		assert_int_equal(v->step.phase, STEP_PHASE_UNWATCHED);
		v->completion = VCPU_COMPLETION_NONE;	/* KVM completed the OUT */
	}
	assert_int_equal(v->stats.single_steps, 0);
	assert_int_equal(v->stats.unchecked_runs, 0);
}

/*
 * The guest sets bit 29: the WRMSR's completing run is stepped, so the
 * instruction behind it is the first checked; a split lock there is #AC.
 */
static void arming_watches_next(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);

	(void)state;
	fv.vm.split_lock_watch = SPLIT_LOCK_WATCH_ARMED;
	memcpy(ram + CODE, wrmsr_lock_xadd, sizeof(wrmsr_lock_xadd));
	regs(v)->rdi = 0x20003e;
	stepping_before_run(v);
	assert_int_equal(v->step.phase, STEP_PHASE_UNWATCHED);
	write_test_ctrl(v, TEST_CTRL_SPLIT_LOCK_DETECT);
	assert_int_equal(v->completion, VCPU_COMPLETION_KVM);
	assert_int_equal(v->step.phase, STEP_PHASE_FREE);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_STEP);
	assert_int_equal(FAKE_CALLS(fc, set_guest_debug), 1);
	assert_int_equal(fc->debug.control, KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_SINGLESTEP);
	/* KVM completes the WRMSR and traps right behind it. */
	step_to(v, CODE + 2, DR6_STEP);
	assert_int_equal(v->stats.single_steps, 1);
	assert_int_equal(v->stats.unchecked_runs, 0);
	assert_int_equal(v->stats.db_reinjected, 0);
	stepping_before_run(v);
	assert_int_equal(v->stats.split_locks_detected, 1);
	assert_int_equal(v->stats.ac_injected, 1);
	assert_false(vm_stopping(&fv.vm));
}

/*
 * Armed with the guest's own TF set: the trap the CPU raises behind the
 * WRMSR is the guest's, handed back; the handler of that #DB is watched.
 */
static void arming_with_guest_tf(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	fv.vm.split_lock_watch = SPLIT_LOCK_WATCH_ARMED;
	memcpy(ram + CODE, wrmsr_lock_xadd, sizeof(wrmsr_lock_xadd));
	regs(v)->rflags |= X86_RFLAGS_TF;
	stepping_before_run(v);
	assert_int_equal(v->step.phase, STEP_PHASE_UNWATCHED);
	write_test_ctrl(v, TEST_CTRL_SPLIT_LOCK_DETECT);
	assert_true(v->step.guest_tf);
	regs(v)->rflags &= ~X86_RFLAGS_TF;	/* KVM hides TF while it steps */
	step_to(v, CODE + 2, DR6_STEP);
	assert_int_equal(v->stats.db_reinjected, 1);
	assert_int_equal(v->stats.unchecked_runs, 0);
	stepping_before_run(v);
	assert_int_not_equal(v->step.phase, STEP_PHASE_UNWATCHED);
	assert_false(vm_stopping(&fv.vm));
}

/*
 * The guest clears bit 29 while stepped: the WRMSR's step ends, and the
 * next entry turns stepping off, the guest's TF back in RFLAGS, its
 * debug registers to be read again when stepping resumes.
 */
static void disarming_stops_stepping(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];
	struct fake_vcpu *fc = fake_vcpu(v);

	(void)state;
	fv.vm.split_lock_watch = SPLIT_LOCK_WATCH_ARMED;
	v->msrs.test_ctrl = TEST_CTRL_SPLIT_LOCK_DETECT;
	memcpy(ram + CODE, wrmsr_lock_xadd, sizeof(wrmsr_lock_xadd));
	regs(v)->rdi = 0x20003e;
	stepping_before_run(v);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	assert_int_equal(FAKE_CALLS(fc, set_guest_debug), 1);
	v->step.dr_valid = true;
	write_test_ctrl(v, 0);
	assert_int_equal(v->step.phase, STEP_PHASE_CHECKED);
	step_to(v, CODE + 2, DR6_STEP);
	assert_int_equal(v->stats.single_steps, 1);
	regs(v)->rflags |= X86_RFLAGS_TF;	/* the VMM's, were KVM to show it */
	stepping_before_run(v);
	assert_int_equal(v->step.phase, STEP_PHASE_UNWATCHED);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_OFF);
	assert_int_equal(FAKE_CALLS(fc, set_guest_debug), 2);
	assert_int_equal(fc->debug.control, 0);
	assert_false(regs(v)->rflags & X86_RFLAGS_TF);
	assert_false(v->step.dr_valid);
	assert_int_equal(v->stats.split_locks_detected, 0);
	assert_int_equal(regs(v)->rip, CODE + 2);
	/* A KVM_EXIT_DEBUG now is none of the VMM's. */
	assert_false(stepping_debug_exit(v));
}

/* Cleared while a delivery is watched: stepping stays on until the handler is reached. */
static void disarming_waits_for_delivery(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	fv.vm.split_lock_watch = SPLIT_LOCK_WATCH_ARMED;
	v->step.inject_vector = X86_VEC_GP;
	stepping_before_run(v);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_WATCH);
	stepping_before_run(v);
	assert_int_equal(v->step.hw.mode, STEP_DEBUG_WATCH);
	assert_int_not_equal(v->step.phase, STEP_PHASE_UNWATCHED);
	v->step.frame_vector = X86_VEC_GP;
	v->step.hw.mode = STEP_DEBUG_STEP;
	stepping_before_run(v);
	assert_int_not_equal(v->step.phase, STEP_PHASE_UNWATCHED);
	v->step.frame_vector = -1;
	stepping_before_run(v);
	assert_int_equal(v->step.phase, STEP_PHASE_UNWATCHED);
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
 * Detection given up outside CPL0 stays given up through an entry that
 * plans nothing (an event's handler watched first): only planning at CPL0
 * ends it, so that an exit KVM completes there still gets its stepped run.
 */
static void outer_lasts_to_cpl0(void **state)
{
	struct vcpu *v = &fv.vm.vcpus[0];

	(void)state;
	fv.vm.host.step_cpl3 = false;
	to_cpl3(v);
	stepping_before_run(v);
	assert_int_equal(v->step.phase, STEP_PHASE_OUTER);
	exit_with(v, KVM_EXIT_INTR);
	v->step.inject_vector = X86_VEC_GP;	/* an event is due: its handler comes first */
	stepping_before_run(v);
	assert_int_equal(v->step.phase, STEP_PHASE_OUTER);
	assert_int_equal(v->stats.unchecked[STATS_UNCHECKED_OUTER], 1);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(plain_step, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(unwatched_runs_unstepped, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(arming_watches_next, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(arming_watches_next, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(arming_with_guest_tf, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(arming_with_guest_tf, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(disarming_stops_stepping, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(disarming_waits_for_delivery, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(mov_dr7_exec_bp_beside_step, setup_no_hwbp,
						teardown),
		cmocka_unit_test_setup_teardown(mov_dr7_exec_bp_not_beside_step, setup_no_hwbp,
						teardown),
		cmocka_unit_test_setup_teardown(split_lock_emulated, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(split_lock_tf_exec_bp_beside, setup_no_hwbp,
						teardown),
		cmocka_unit_test_setup_teardown(split_lock_tf_exec_bp_not_beside, setup_no_hwbp,
						teardown),
		cmocka_unit_test_setup_teardown(msr_fault_restep, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(msr_fault_events_fail, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(msr_fault_get_events_fails, setup_no_hwbp,
						teardown),
		cmocka_unit_test_setup_teardown(watch_breakpoint_on_handler, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(watch_address_not_ours, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(frame_fix, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(resync_after_completed_exit, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(diverted_step_unchecked, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(debug_exit_unarmed, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(ret_noncanonical_gp, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(split_lock_data_breakpoint, setup_no_hwbp,
						teardown),
		cmocka_unit_test_setup_teardown(escaped_with_guest_tf, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(cpl3_unstepped_then_io_exit, setup_no_hwbp,
						teardown),
		cmocka_unit_test_setup_teardown(outer_lasts_to_cpl0, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(cpl3_unstepped_then_mmio_write, setup_no_hwbp,
						teardown),
		cmocka_unit_test_setup_teardown(left_split_completes_unchecked, setup_no_hwbp,
						teardown),
		cmocka_unit_test_setup_teardown(left_split_completes_unchecked, setup_hwbp,
						teardown),
		cmocka_unit_test_setup_teardown(left_split_holds_others, setup_hwbp_2cpus,
						teardown),
		cmocka_unit_test_setup_teardown(left_split_holds_others, setup_no_hwbp_2cpus,
						teardown),
		cmocka_unit_test_setup_teardown(left_split_holds_others, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(predict_keeps_guest_breakpoints, setup_hwbp,
						teardown),
		cmocka_unit_test_setup_teardown(kvm_fault_handler_predicted, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(return_to_cpl3_unstepped, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(fault_frame_behind_handler_push, setup_no_hwbp,
						teardown),
		cmocka_unit_test_setup_teardown(iret_selector_fault_delivered, setup_no_hwbp,
						teardown),
		cmocka_unit_test_setup_teardown(iret_fault_keeps_tf, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(iret_fault_at_handler, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(branch_fault_at_handler, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(branch_to_handler_completes, setup_no_hwbp,
						teardown),
		cmocka_unit_test_setup_teardown(undecodable_fault_at_handler, setup_no_hwbp,
						teardown),
		cmocka_unit_test_setup_teardown(undecodable_handler_to_emulated_exit, setup_no_hwbp,
						teardown),
		cmocka_unit_test_setup_teardown(far_jmp_faulted_to_emulated_exit, setup_no_hwbp,
						teardown),
		cmocka_unit_test_setup_teardown(indirect_branch_faulted_to_emulated_exit, setup_no_hwbp,
						teardown),
		cmocka_unit_test_setup_teardown(indirect_branch_unreadable, setup_no_hwbp,
						teardown),
		cmocka_unit_test_setup_teardown(far_branch_unbacked_pointer, setup_no_hwbp,
						teardown),
		cmocka_unit_test_setup_teardown(mmio_access_guest_tf_again, setup_no_hwbp,
						teardown),
		cmocka_unit_test_setup_teardown(kvm_fault_at_handler, setup_no_hwbp, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
