/* SPDX-License-Identifier: MIT */
/*
 * The executor's trampolines (exec.c drives them) and the #DB/#BP recorders.
 *
 * exec_run64/exec_run32 load every register from exec_in (struct
 * exec_regs: rax rcx rdx rbx rsp rbp rsi rdi r8-r15 rflags), jump to the
 * instruction buffer, and store everything into exec_out when the buffer
 * jumps back (or when the instruction faults: the exception table sends the
 * fault to the same place). Globals, not arguments: once the registers are
 * loaded there is no free one to point at anything.
 */
#include "percpu.h"
#include "dr7.h"

#define RF_TF 0x100
#define RF_RF 0x10000

	.code64
	.data
	.p2align 4
	.globl exec_in, exec_out, exec_code, exec_cs, exec_ds, exec_es, exec_fs
	.globl exec_farptr, exec_buf64, exec_buf32
exec_in:	.skip 17 * 8
exec_out:	.skip 17 * 8
exec_saved_rsp:	.quad 0
exec_code:	.quad 0		/* where the instruction is */
exec_cs:	.quad 0		/* compatibility-mode CS for exec_run32 */
exec_ds:	.word 0
exec_es:	.word 0
exec_fs:	.word 0
	.p2align 3
exec_farptr:	.long exec_back32	/* m16:32 for the way back from MODE_32 */
		.word 0

	/* Instruction buffers: the instruction, then a jump back. */
	.section .data.exec, "aw"
	.p2align 6
exec_buf64:	.skip 64, 0xcc
	.p2align 6
exec_buf32:	.skip 64, 0xcc

/*
 * MODE_16's page: a 16-bit code segment (CS.D=0) has a 64 KiB reach, so its
 * base is this page and everything it jumps to is inside it: the
 * instruction at offset 0 and its way back, a fault fixup at 0x30 and the
 * m16:32 pointer both use (exec.c writes them).
 */
	.section .data.exec16, "aw"
	.p2align 12
	.globl exec_page16
exec_page16:	.skip 64, 0xcc

	.pushsection .ex_table, "a"
	.balign 8
	.quad exec_buf64, exec_fault64
	.quad exec_buf32, exec_fault32
	.quad 0, 0x30			/* MODE_16: RIP is the offset in exec_page16 */
	/*
	 * The generator's programs (cases_gen.c) are several instructions:
	 * a fault at any of them comes back the same way (exec_insn tells
	 * where from exception_rip()).
	 */
	.irp i, 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47
	.quad exec_buf64 + \i, exec_fault64
	.quad exec_buf32 + \i, exec_fault32
	.quad \i, 0x30
	.endr
	/* Instructions placed in the test window (exec_req.code_va). */
	.quad 0xc0000000 + 4096 * 4, exec_fault64
	.quad 0xc0000000 + 4096 * 5 - 2, exec_fault64
	.popsection

.macro LOAD_REGS
	movq exec_in + 0(%rip), %rax
	movq exec_in + 8(%rip), %rcx
	movq exec_in + 16(%rip), %rdx
	movq exec_in + 24(%rip), %rbx
	movq exec_in + 40(%rip), %rbp
	movq exec_in + 48(%rip), %rsi
	movq exec_in + 56(%rip), %rdi
	movq exec_in + 64(%rip), %r8
	movq exec_in + 72(%rip), %r9
	movq exec_in + 80(%rip), %r10
	movq exec_in + 88(%rip), %r11
	movq exec_in + 96(%rip), %r12
	movq exec_in + 104(%rip), %r13
	movq exec_in + 112(%rip), %r14
	movq exec_in + 120(%rip), %r15
.endm

.macro STORE_REGS
	pushfq
	popq exec_out + 128(%rip)
	movq %rax, exec_out + 0(%rip)
	movq %rcx, exec_out + 8(%rip)
	movq %rdx, exec_out + 16(%rip)
	movq %rbx, exec_out + 24(%rip)
	movq %rbp, exec_out + 40(%rip)
	movq %rsi, exec_out + 48(%rip)
	movq %rdi, exec_out + 56(%rip)
	movq %r8, exec_out + 64(%rip)
	movq %r9, exec_out + 72(%rip)
	movq %r10, exec_out + 80(%rip)
	movq %r11, exec_out + 88(%rip)
	movq %r12, exec_out + 96(%rip)
	movq %r13, exec_out + 104(%rip)
	movq %r14, exec_out + 112(%rip)
	movq %r15, exec_out + 120(%rip)
	/* TF/AC must not outlive the instruction; DF must be clear for C. */
	pushfq
	andq $~(RF_TF | 0x40000 | 0x400), (%rsp)
	popfq
.endm

	.text
/* void exec_run64(void): the instruction at exec_code, 64-bit mode, this CPL. */
	.globl exec_run64
exec_run64:
	pushq %rbx
	pushq %rbp
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	movq %rsp, exec_saved_rsp(%rip)
	LOAD_REGS
	pushq exec_in + 128(%rip)
	popfq
	jmp *exec_code(%rip)

	.globl exec_back64
exec_back64:
	STORE_REGS
exec_done:
	movq exec_saved_rsp(%rip), %rsp
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbp
	popq %rbx
	ret

exec_fault64:
	jmp exec_back64

/*
 * void exec_run32(void): the instruction at exec_code in compatibility mode,
 * CS = exec_cs, with DS/ES/FS = exec_ds/es/fs. The buffer comes back with
 * "ljmp *%cs:exec_farptr" (CS base is 0), whose selector exec.c sets.
 */
	.globl exec_run32
exec_run32:
	pushq %rbx
	pushq %rbp
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	movq %rsp, exec_saved_rsp(%rip)
	movw exec_ds(%rip), %ds
	movw exec_es(%rip), %es
	movw exec_fs(%rip), %fs
	pushq exec_cs(%rip)
	pushq exec_code(%rip)
	LOAD_REGS
	pushq exec_in + 128(%rip)
	popfq
	lretq

	.globl exec_back32
exec_back32:
	STORE_REGS
	xorl %eax, %eax
	movw %ax, %ds
	movw %ax, %es
	movw %ax, %fs
	jmp exec_done

	.code32
exec_fault32:
	ljmp *%cs:exec_farptr
	.code64

/*
 * #DB and #BP recorders: log {vector, RIP, DR6, RFLAGS, CS} of each, clear
 * DR6, stop the guest's own single-step after dbg_tf_limit events, and set
 * RF so that an instruction breakpoint does not fire again on return.
 */
	.data
	.p2align 3
	.globl dbg_log, dbg_count, dbg_tf_limit, dbg_skip_rip
/* struct dbg_event: vector at 0, rip 8, dr6 16, rflags 24, cs 32; 40 bytes */
dbg_log:	.skip 40 * 32
dbg_count:	.long 0
dbg_tf_limit:	.long 0
	.p2align 3
/* A one-byte instruction that a host reports as a fault (RIP at it): skip it. */
dbg_skip_rip:	.quad 0

	.text
	.globl dbg_stub_db, dbg_stub_bp
dbg_stub_db:
	pushq %rax
	movl $1, %eax
	jmp dbg_common
dbg_stub_bp:
	pushq %rax
	movl $3, %eax
dbg_common:
	/* frame: [rsp] rax, 8 rip, 16 cs, 24 rflags, 32 rsp, 40 ss */
	pushq %rbx
	pushq %rcx
	pushq %rdx
	/* now rip at 32(%rsp), cs 40, rflags 48 */
	movl dbg_count(%rip), %ecx
	cmpl $32, %ecx
	jae 2f
	imull $40, %ecx, %edx
	leaq dbg_log(%rip), %rbx
	addq %rdx, %rbx
	movq %rax, 0(%rbx)
	movq 32(%rsp), %rdx
	movq %rdx, 8(%rbx)
	movq %dr6, %rdx
	movq %rdx, 16(%rbx)
	/* B0-B3 of the enabled breakpoints only (dr7.h) */
	pushq %rsi
	movq %dr7, %rdx
	DR7_ENABLED %edx, %esi
	orq $~0xf, %rdx
	andq %rdx, 16(%rbx)
	popq %rsi
	movq 48(%rsp), %rdx
	movq %rdx, 24(%rbx)
	movq 40(%rsp), %rdx
	movq %rdx, 32(%rbx)
2:	incl %ecx
	movl %ecx, dbg_count(%rip)
	movl $0xffff0ff0, %edx
	movq %rdx, %dr6
	cmpl dbg_tf_limit(%rip), %ecx
	jb 3f
	andq $~RF_TF, 48(%rsp)
	/* 0 is no RIP to skip: MODE_16 and MODE_32B code runs at RIP 0. */
3:	cmpq $0, dbg_skip_rip(%rip)
	je 5f
	movq 32(%rsp), %rdx
	cmpq dbg_skip_rip(%rip), %rdx
	jne 5f
	incq 32(%rsp)
5:	cmpl $1, %eax
	jne 4f
	orq $RF_RF, 48(%rsp)
4:	popq %rdx
	popq %rcx
	popq %rbx
	popq %rax
	iretq

	.section .note.GNU-stack, "", @progbits
