/* SPDX-License-Identifier: MIT */
/*
 * --split-lock=emulate's engine (src/vmm/stepping.c) through the fake KVM,
 * each flow as the run loop drives it, entry by entry: MOV SS and POP SS: the instruction behind them runs in the same step,
 * performed as a pair or its frame fixed.
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(mov_ss_shadow_counted, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(shadow_ended_by_vmm, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(shadow_ended_by_vmm, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(movss_shadowed_pushf_popf, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(movss_shadowed_pushf_popf, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(movss_shadowed_syscall, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(movss_shadowed_int3_watched, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(movss_shadowed_int3_frame_fixed, setup_no_hwbp,
						teardown),
		cmocka_unit_test_setup_teardown(movss_shadowed_int3_tf_emulated_in_handler, setup_no_hwbp,
						teardown),
		cmocka_unit_test_setup_teardown(movss_shadowed_iretq, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(movss_shadowed_iretq, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(popss_shadowed_iretd, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(movss_shadowed_fault, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(movss_shadowed_fault, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(movss_shadowed_sysenter_fault, setup_no_hwbp,
						teardown),
		cmocka_unit_test_setup_teardown(movss_shadowed_fault_forecast, setup_hwbp,
						teardown),
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
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
