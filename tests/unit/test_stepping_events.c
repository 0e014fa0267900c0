/* SPDX-License-Identifier: MIT */
/*
 * --split-lock=emulate's engine (src/vmm/stepping.c) through the fake KVM,
 * each flow as the run loop drives it, entry by entry: events the VMM delivers through the guest's IDT, IVT or a task gate,
 * in every mode (64-bit, legacy protected, real, virtual-8086).
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(delivery_events_unreadable, setup_no_hwbp,
						teardown),
		cmocka_unit_test_setup_teardown(int3_delivered, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(int3_delivered, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(frame_across_pages, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(certain_segment_faults_delivered, setup_no_hwbp,
						teardown),
		cmocka_unit_test_setup_teardown(ud2_cpl3_delivered, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(int3_cpl2_pushes_rf, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(int3_dpl0_gate_cpl3_gp, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(int3_cpl3_handler_frame_user_access, setup_no_hwbp,
						teardown),
		cmocka_unit_test_setup_teardown(delivery_table_limits, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(legacy_into_delivered_with_of, setup_no_hwbp,
						teardown),
		cmocka_unit_test_setup_teardown(int3_dpl0_gate_cpl3_gp, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(legacy_fault_frame_at_handler, setup_no_hwbp,
						teardown),
		cmocka_unit_test_setup_teardown(legacy_handler_breakpoints, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(iretd_to_vm86_unstepped, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(task_switch_saved_tf, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(lock_ud_delivered, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(far_branch_call_gate, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(legacy_int3_delivered, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(vm86_intn_iopl0_gp, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(vm86_vme_intn_routes, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(legacy_int3_dpl0_gate_gp, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(intn_task_gate_unstepped, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(task_switch_tss_supervisor_access, setup_no_hwbp,
						teardown),
		cmocka_unit_test_setup_teardown(intn_task_gate_unstepped, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(legacy_int3_delivered, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(legacy_frame_across_pages, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(legacy_int3_tss_limit, setup_no_hwbp, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
