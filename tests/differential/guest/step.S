/* SPDX-License-Identifier: MIT */
/*
 * Instruction sequences for the stepping cases (cases_step.c). Each is a
 * function taking the split operand's address in %rdi; its *_start label is
 * where RIPs in the printed #DB/#BP log are counted from.
 */
#include "seq.h"

	.text
	.code64

/* The guest's own single-step over plain and split-locked instructions. */
SEQ seq_tf_basic
	TF_ON
	nop
	lock addl $1, (%rdi)
	movl $5, %eax
	lock xaddl %eax, (%rdi)
	xchgl %eax, (%rdi)
	nop
	TF_OFF
	ret

/* MOV SS: the #DB of the MOV SS is held until after the next instruction. */
SEQ seq_tf_movss
	movl %ss, %eax
	TF_ON
	nop
	movl %eax, %ss
	lock addl $1, (%rdi)
	nop
	movl %eax, %ss
	nop
	TF_OFF
	ret

/* STI: interrupt shadow only; single-step traps go on. */
SEQ seq_tf_sti
	pushfq
	cli
	TF_ON
	nop
	sti
	lock addl $1, (%rdi)
	cli
	nop
	TF_OFF
	popfq
	ret

/* A breakpoint instruction in the middle: INT3 traps with RIP after it. */
SEQ seq_int3
	nop
	lock addl $1, (%rdi)
	int3
	lock addl $1, (%rdi)
	nop
	ret

/* ICEBP (INT1, f1): #DB as a trap. */
SEQ seq_icebp
	nop
	lock addl $1, (%rdi)
	.byte 0xf1
	lock addl $1, (%rdi)
	nop
	ret

/* An instruction breakpoint (DR0) on the split lock itself. */
SEQ seq_drx_exec
	nop
	.globl seq_drx_exec_target
seq_drx_exec_target:
	lock addl $1, (%rdi)
	nop
	ret

/* A data breakpoint (DR1, write) hit by the split lock. */
SEQ seq_drx_data
	nop
	lock addl $1, (%rdi)
	nop
	lock incl (%rdi)
	nop
	ret

/* MOV SS from memory watched by DR0: the #DB waits for the next instruction. */
	.data
	.globl seq_ss_value
	.p2align 3
seq_ss_value:	.quad 0
	.text
SEQ seq_movss_data
	movl %ss, %eax
	movl %eax, seq_ss_value(%rip)
	nop
	movw seq_ss_value(%rip), %ss
	lock addl $1, (%rdi)
	nop
	ret

/* 200 split locks in a row, no other instruction between them. */
SEQ seq_200
	.rept 200
	lock addl $1, (%rdi)
	.endr
	ret

/* 200 in a row, four kinds: add, xadd, inc, xchg (implicitly locked). */
SEQ seq_200_mixed
	movl $1, %eax
	movl $3, %ecx
	.rept 50
	lock addl %ecx, (%rdi)
	lock xaddl %eax, (%rdi)
	lock incl (%rdi)
	xchgl %eax, (%rdi)
	.endr
	ret

/*
 * POP SS exists in compatibility mode only: the same sequence there, with
 * MOV SS too. Entered and left by far transfers; #DB is handled in 64-bit
 * mode and returns here.
 */
	.data
	.p2align 3
seq_popss_back:	.long seq_popss_back_to
		.word 0x08
	.text
SEQ seq_tf_popss_compat
	COMPAT_ENTER
	pushfl
	orl $TF, (%esp)
	popfl
	nop
	pushl %ss
	popl %ss
	lock addl $1, (%edi)
	nop
	movl %ss, %ebx
	movl %ebx, %ss
	lock addl $1, (%edi)
	nop
	pushfl
	andl $~TF, (%esp)
	popfl
	COMPAT_LEAVE seq_popss_back

/*
 * A #GP handler whose first and third instructions are split locks, then
 * the runtime's own handler. Events the VMM injects (a #GP for a write to
 * IA32_CORE_CAPABILITIES) enter it as well as the CPU's own #GP.
 */
	.data
	.p2align 6
	.globl gp_area
gp_area:	.skip 128
	/* The last frame: error code, RIP, CS, RFLAGS, RSP, SS, then its address. */
	.globl gp_frame
gp_frame:	.skip 56
	.text
	.globl gp_split_stub
gp_split_stub:
	lock addl $1, gp_area + 62(%rip)
	nop
	lock addl $1, gp_area + 62(%rip)
	pushq %rax
	.irp i, 0, 1, 2, 3, 4, 5
	movq 8 + 8 * \i(%rsp), %rax
	movq %rax, gp_frame + 8 * \i(%rip)
	.endr
	leaq 8(%rsp), %rax
	movq %rax, gp_frame + 48(%rip)
	popq %rax
	jmp *fw_exc_stubs + 13 * 8(%rip)

/* HLT with interrupts off: nothing can wake it. */
	.globl seq_hlt_forever
seq_hlt_forever:
	cli
1:	hlt
	jmp 1b

	.section .note.GNU-stack, "", @progbits
