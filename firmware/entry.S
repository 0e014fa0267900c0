/* SPDX-License-Identifier: MIT */
/*
 * Entry point, exception stubs and the CPL0 <-> CPL3 transitions.
 * struct ex_regs in except.h mirrors the frame built by exc_common.
 */
#include "internal.h"
#include "percpu.h"
#include "user.h"
#include "x86.h"


	.code64

/* The VMM jumps to the first byte of the image; guest.ld puts this first. */
	.section .text.entry, "ax"
	.globl _start
_start:
	cld
	movq %rsp, %rsi		/* fw_start checks it against boot_info */
	xorl %ebp, %ebp		/* ends frame-pointer backtraces */
	andq $-16, %rsp
	call fw_start
1:	cli
	hlt
	jmp 1b

	.text

/* Vectors for which the CPU pushes an error code. */
#define HAS_ERROR_CODE(v) ((v) == 8 || (v) == 10 || (v) == 11 || (v) == 12 || \
			   (v) == 13 || (v) == 14 || (v) == 17 || (v) == 21 || \
			   (v) == 29 || (v) == 30)

/* Every frame gets an error code slot so that exc_common has one layout. */
.macro EXC_STUB vec
	.p2align 4
fw_exc_stub_\vec:
	.if HAS_ERROR_CODE(\vec)
	.else
	pushq $0
	.endif
	pushq $\vec
	jmp exc_common
.endm

	.irp vec, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	EXC_STUB \vec
	.endr

exc_common:
	pushq %rax
	pushq %rbx
	pushq %rcx
	pushq %rdx
	pushq %rsi
	pushq %rdi
	pushq %rbp
	pushq %r8
	pushq %r9
	pushq %r10
	pushq %r11
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	/* A RUN_USER_AC function leaves AC set; the handler must not inherit it. */
	pushfq
	andq $~X86_RFLAGS_AC, (%rsp)
	popfq
	cld
	movq %rsp, %rdi		/* 22 qwords pushed in all: RSP is 16-aligned */
	call fw_exception
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %r11
	popq %r10
	popq %r9
	popq %r8
	popq %rbp
	popq %rdi
	popq %rsi
	popq %rdx
	popq %rcx
	popq %rbx
	popq %rax
	addq $16, %rsp		/* vector and error code */
	iretq

/*
 * uint64_t run_user(uint64_t (*fn)(uint64_t), uint64_t arg, unsigned flags)
 * uint64_t run_ring(fn, arg, flags, uint16_t cs, uint16_t ss)
 * Saves the callee-saved registers and RFLAGS on the kernel stack, remembers
 * that RSP in struct cpu and IRETs to user_trampoline at CPL3 (run_ring: at
 * the CPL of cs) on the user stack. The way back
 * is the ud2 at fw_user_return_insn: fw_exception recognises it and calls
 * fw_user_return, which returns from here with fn's value.
 *
 * Not INT n through a DPL3 gate: on the project's hosts INT n at CPL3
 * raises #UD instead of going through the IDT.
 */
	.globl run_user, run_ring
run_user:
	movl $SEL_USER_CS, %ecx
	movl $SEL_USER_DS, %r8d
run_ring:
	pushq %rbp
	pushq %rbx
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	pushfq
	movq %rsp, %gs:CPU_USER_SAVED_RSP
	pushq %r8			/* SS */
	pushq %gs:CPU_USER_STACK
	movl $X86_RFLAGS_FIXED, %eax
	testl $RUN_USER_AC, %edx
	jz 1f
	orl $X86_RFLAGS_AC, %eax
1:	pushq %rax
	pushq %rcx			/* CS */
	leaq user_trampoline(%rip), %rax
	pushq %rax
	xchgq %rdi, %rsi	/* arg for fn, fn for the trampoline */
	iretq

/* Runs at CPL3 (run_ring: 1-3). */
user_trampoline:
	xorl %ebp, %ebp
	call *%rsi
	movq %rax, %rdi
	.globl fw_user_return_insn
fw_user_return_insn:
	ud2

/*
 * void fw_user_return(uint64_t value), called by fw_exception on the RSP0
 * stack: abandons that stack and returns from run_user with value.
 */
	.globl fw_user_return
fw_user_return:
	movq %rdi, %rax
	movq %gs:CPU_USER_SAVED_RSP, %rsp
	movq $0, %gs:CPU_USER_SAVED_RSP
	/* Entry from CPL1-3 loaded a null SS; put back the real one. */
	movl $SEL_KERNEL_DS, %ecx
	movl %ecx, %ss
	popfq
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbx
	popq %rbp
	ret

/*
 * void fw_user_console_write(const char *s, uint64_t len), CPL3 only: the
 * ud2 asks fw_exception to do the OUT, which CPL3 may not.
 */
	.globl fw_user_console_write
fw_user_console_write:
	movq %rsi, %rcx
	movq %rdi, %rsi
	.globl fw_console_insn
fw_console_insn:
	ud2
	ret

	.section .rodata
	.p2align 3
	.globl fw_exc_stubs
fw_exc_stubs:
	.irp vec, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	.quad fw_exc_stub_\vec
	.endr

	.section .note.GNU-stack, "", @progbits
