/* SPDX-License-Identifier: MIT */
/*
 * Issue 18: code at CPL1 and CPL2 in 64-bit mode (cases_ring.c).
 *
 * ring_run(cpl, how, tf) IRETQs to ring_payload at CPL `cpl` (1 or 2: the DPL1
 * or DPL2 code and data selectors of exec.c's GDT) on ring_stack. The
 * payload makes two split locks and a PUSHF there, then goes back to CPL0
 * through an interrupt gate, INT $RING_VEC (how 0: a DPL3 gate) or UD2
 * (how 1: #UD's DPL0 gate), both into ring_back on the TSS's RSP0 stack,
 * which keeps the frame it got and returns from ring_run. With tf, the
 * payload sets the guest's own TF first (exec.S's #DB recorder logs it).
 */
#define SEL_K_DATA 0x10
#define RING_VEC   0x81

	.data
	.p2align 6
	.skip 62
	.globl ring_split
ring_split:	.long 0			/* across a cache line */
	.p2align 3
	.globl ring_flags, ring_frame
ring_flags:	.quad 0			/* what PUSHF pushed at CPLn */
ring_frame:	.skip 8 * 5		/* RIP, CS, RFLAGS, RSP, SS of ring_back's frame */
ring_how:	.quad 0
ring_tf:	.quad 0
ring_saved:	.quad 0

	.bss
	.p2align 4
	.globl ring_stack_top
ring_stack:	.skip 4096
ring_stack_top:

	.text
	.code64
	.globl ring_run
ring_run:
	pushq %rbp
	pushq %rbx
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	pushfq
	movq %rsp, ring_saved(%rip)
	movq %rsi, ring_how(%rip)
	movq %rdx, ring_tf(%rip)
	/* Code 0x88 + 0x10 * (cpl - 1), data 8 above; RPL = cpl. */
	leal -1(%rdi), %eax
	shll $4, %eax
	leal 0x90(%rax, %rdi), %ecx
	leal 0x88(%rax, %rdi), %edx
	pushq %rcx			/* SS */
	leaq ring_stack_top(%rip), %rax
	pushq %rax			/* RSP */
	pushfq				/* RFLAGS: as now, TF clear */
	pushq %rdx			/* CS */
	leaq ring_payload(%rip), %rax
	pushq %rax			/* RIP */
	iretq

	.globl ring_payload, ring_int, ring_ud
ring_payload:
	cmpq $0, ring_tf(%rip)
	je 1f
	pushfq
	orq $0x100, (%rsp)
	popfq
1:	lock addl $1, ring_split(%rip)
	movl $2, %eax
	lock xaddl %eax, ring_split(%rip)
	pushfq
	popq %rax
	movq %rax, ring_flags(%rip)
	cmpq $0, ring_how(%rip)
	jne ring_ud
ring_int:
	int $RING_VEC
ring_ud:
	ud2

/* Through an interrupt gate, no error code: RIP, CS, RFLAGS, RSP, SS at RSP. */
	.globl ring_back
ring_back:
	popq ring_frame(%rip)
	popq ring_frame + 8(%rip)
	popq ring_frame + 16(%rip)
	popq ring_frame + 24(%rip)
	popq ring_frame + 32(%rip)
	movl $SEL_K_DATA, %eax
	movl %eax, %ss
	movq ring_saved(%rip), %rsp
	popfq
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbx
	popq %rbp
	ret

	.section .note.GNU-stack, "", @progbits
