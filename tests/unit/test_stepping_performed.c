/* SPDX-License-Identifier: MIT */
/*
 * --split-lock=emulate's engine (src/vmm/stepping.c) through the fake KVM,
 * each flow as the run loop drives it, entry by entry: instructions the VMM performs itself instead of stepping them:
 * SYSCALL, SYSRET, IRETQ, XBEGIN, SYSENTER's target.
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
		cmocka_unit_test_setup_teardown(syscall_msr_unreadable, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(syscall_performed, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(syscall_trap_owed, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(syscall_compat_stepped, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(sysret_performed, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(xbegin_aborted, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(xbegin_aborted_guest_tf, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(xbegin_without_rtm_stepped, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(iretq_step_exit_one_late, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(sysret_cpl3_faults, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(iret_tf_watched, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(iretq_performed, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(iretq_performed_to_compat, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(iretq_left_to_cpu, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(iret_tf_rf_stepped, setup_hwbp, teardown),
		cmocka_unit_test_setup_teardown(sysenter_target, setup_no_hwbp, teardown),
		cmocka_unit_test_setup_teardown(syscall_sce0_legacy_ud, setup_no_hwbp, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
