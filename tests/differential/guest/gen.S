/* SPDX-License-Identifier: MIT */
/*
 * Handlers for the generator's records (cases_gen.c, env != 0): each
 * records the frame or registers it was entered with in gen_frame (words
 * that cases_gen.c hashes into the record's line) and returns to the
 * record's program the way the record asks. None of them may fault: a
 * fault here is no record's outcome but the guest's bail-out.
 */
#include "percpu.h"

#define TF 0x100

	.data
	.p2align 3
	.globl gen_frame, gen_hits, gen_sc_xor, gen_sc_iret, gen_gate_tf, gen_farptr
	.globl gen_se_ret, gen_se_how, gen_se_cs, gen_se_stack_top
gen_frame:	.skip 8 * 6	/* what the handler saw, by handler */
gen_hits:	.quad 0		/* handler entries */
gen_sc_xor:	.quad 0		/* SYSCALL: R11 ^= this before the return */
gen_sc_iret:	.quad 0		/* SYSCALL: return with IRETQ (CPL0 origin), not SYSRETQ */
gen_gate_tf:	.quad 0		/* gate: 1 sets TF in the frame, 2 clears it */
gen_sc_rsp:	.quad 0
gen_se_ret:	.quad 0		/* SYSENTER: where the program goes on */
gen_se_how:	.quad 0		/* SYSENTER: 1 IRETQ to CPL0, else SYSEXIT; 2 REX.W */
gen_se_cs:	.quad 0		/* SYSENTER: the CPL0 caller's CS for IRETQ */
	.p2align 4
gen_se_stack:	.skip 4096	/* IA32_SYSENTER_ESP: #DB frames of a stepped handler too */
gen_se_stack_top:
	.p2align 3
gen_farptr:	.long 0		/* m16:32 for a far call through the call gate */
		.word 0

	.text
	.code64

/*
 * LSTAR. Entered with RFLAGS & ~FMASK (TF possibly still set: every
 * instruction here then traps into dbg_stub_db, on whatever RSP is).
 * SYSRETQ back to CPL3, or for a CPL0 caller an IRETQ to CPL0 with
 * RFLAGS = R11 (SYSRET from CPL0 would land at CPL3).
 */
	.globl gen_sc_entry
gen_sc_entry:
	movq %r11, gen_frame + 0(%rip)
	movq %rcx, gen_frame + 8(%rip)
	incq gen_hits(%rip)
	xorq gen_sc_xor(%rip), %r11
	cmpq $0, gen_sc_iret(%rip)
	jne 1f
	sysretq
1:	movq %rsp, gen_sc_rsp(%rip)
	pushq $SEL_KERNEL_DS
	pushq gen_sc_rsp(%rip)
	pushq %r11
	pushq $SEL_KERNEL_CS
	pushq %rcx
	iretq

/*
 * An IDT gate for INT n / INT3 / INTO (no error code): RIP, CS, RFLAGS,
 * RSP, SS of the frame; TF set or cleared in the frame as gen_gate_tf says;
 * back with IRETQ.
 */
	.globl gen_gate_stub
gen_gate_stub:
	pushq %rax
	.irp i, 0, 1, 2, 3, 4
	movq 8 + 8 * \i(%rsp), %rax
	movq %rax, gen_frame + 8 * \i(%rip)
	.endr
	incq gen_hits(%rip)
	testq $1, gen_gate_tf(%rip)
	jz 1f
	orq $TF, 24(%rsp)
1:	testq $2, gen_gate_tf(%rip)
	jz 2f
	andq $~TF, 24(%rsp)
2:	popq %rax
	iretq

/*
 * The call gate's target (64-bit, CPL0): RIP and CS, and RSP and SS when
 * the call came from CPL3; back with LRETQ (to CPL3 when from there).
 */
	.globl gen_cg_entry
gen_cg_entry:
	pushq %rax
	movq 8(%rsp), %rax
	movq %rax, gen_frame + 0(%rip)
	movq 16(%rsp), %rax
	movq %rax, gen_frame + 8(%rip)
	testq $3, %rax
	jz 1f
	movq 24(%rsp), %rax
	movq %rax, gen_frame + 16(%rip)
	movq 32(%rsp), %rax
	movq %rax, gen_frame + 24(%rip)
1:	incq gen_hits(%rip)
	popq %rax
	lretq

/*
 * IA32_SYSENTER_EIP: CPL0, 64-bit, IF and RF clear, TF as the caller had
 * it. Notes RFLAGS, RCX, RSP, CS and SS; back to gen_se_ret with RSP =
 * RCX: SYSEXIT (CPL3 caller) or IRETQ (CPL0 caller: SYSEXIT would land
 * at CPL3).
 */
	.globl gen_se_entry
gen_se_entry:
	pushfq
	popq gen_frame + 0(%rip)
	movq %rcx, gen_frame + 8(%rip)
	movq %rsp, gen_frame + 16(%rip)
	movw %cs, gen_frame + 24(%rip)
	movw %ss, gen_frame + 32(%rip)
	incq gen_hits(%rip)
	movq gen_se_ret(%rip), %rdx
	testq $1, gen_se_how(%rip)
	jnz 2f
	testq $2, gen_se_how(%rip)
	jz 1f
	sysexitq
1:	sysexitl
2:	pushq $SEL_KERNEL_DS
	pushq %rcx
	pushfq
	pushq gen_se_cs(%rip)
	pushq %rdx
	iretq

	.section .note.GNU-stack, "", @progbits
