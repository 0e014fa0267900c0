/* SPDX-License-Identifier: MIT */
#ifndef DIFF_SEQ_H
#define DIFF_SEQ_H
/*
 * For the sequences of step.S and event.S: the guest's own TF set and
 * cleared, a sequence's entry and *_start labels (where RIPs in the
 * printed #DB/#BP log are counted from), and the way into compatibility
 * mode and back.
 */
#define TF 0x100
#define SEL_K_CODE32 0x38	/* diff.h: CS.L=0 CS.D=1, DPL0 */

.macro TF_ON
	pushfq
	orq $TF, (%rsp)
	popfq
.endm

.macro TF_OFF
	pushfq
	andq $~TF, (%rsp)
	popfq
.endm

.macro SEQ name
	.globl \name, \name\()_start
\name:
\name\()_start:
.endm

/*
 * From 64-bit code at CPL0 to compatibility mode by a far return, RBX
 * saved and DS flat (a null DS faults outside 64-bit mode); back by a far
 * jump through `back` (.long, .word 0x08) to the matching COMPAT_LEAVE.
 */
.macro COMPAT_ENTER
	pushq %rbx
	movl $0x10, %eax
	movl %eax, %ds
	pushq $SEL_K_CODE32
	leaq .Lcompat\@(%rip), %rax
	pushq %rax
	lretq
	.code32
.Lcompat\@:
.endm

.macro COMPAT_LEAVE back
	ljmp *%cs:\back
	.code64
\back\()_to:
	xorl %eax, %eax
	movl %eax, %ds
	popq %rbx
	ret
.endm

#endif
