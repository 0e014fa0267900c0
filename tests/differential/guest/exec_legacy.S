/* SPDX-License-Identifier: MIT */
/*
 * The executor outside IA-32e mode (exec_legacy.c drives it): legacy_run(14)
 * leaves long mode and comes here, in 32-bit protected mode at CPL0 with
 * paging off. lg_x_paging picks the paging (0 none, 1 32-bit with the
 * 4 MiB identity pages of lg_pd32, 2 PAE with lg_pdpt); lg_xidt catches
 * vectors 0-31 (1 and 3 at DPL3) and 32, the way back from CPL3. With
 * lg_x_cpl3 set the program runs at CPL3 (CS SEL_U_CODE32, flat DPL3 data,
 * the stack lg_task_stack), entered by IRET, its events taken to CPL0 on
 * SS0:ESP0 of TSS A (LTR; exec_legacy.c loads long mode's TR again).
 * Every register is loaded from exec_in (low halves), the program at
 * exec_code runs and jumps to lg_x_back, or faults:
 *
 *   #DB, #BP   logged in dbg_log as exec.S's recorders do, then IRET
 *   the rest   the program ends; its registers as the handler found them,
 *              the frame's EFLAGS in exec_out's, vector, error code and
 *              EIP in lg_x_vector, lg_x_error, lg_x_eip
 *
 * then back to long mode through legacy.S's lg_up.
 */
#include "dr7.h"

#define SEL_K_DATA  0x10
#define SEL_K_CODE32 0x38
#define SEL_U_CODE32 0x43
#define SEL_TSS_A   0xa8
#define SEL_U_DATA32 0xe3
#define CR0_PG      0x80000000
#define CR4_PSE     0x10
#define CR4_PAE     0x20
#define TF          0x100
#define DF          0x400
#define RF          0x10000
#define AC          0x40000

	.data
	.p2align 3
	.globl lg_x_paging, lg_x_cpl3, lg_x_vector, lg_x_error, lg_x_eip, lg_xidt, lg_x_stub_addr
lg_x_paging:	.long 0
lg_x_cpl3:	.long 0
lg_x_vector:	.long -1
lg_x_error:	.long 0
lg_x_eip:	.long 0
lg_x_esp:	.long 0
	.p2align 3
lg_xidt:	.skip 8 * 33		/* 32-bit interrupt gates (exec_legacy.c) */
lg_xidtr:	.word 8 * 33 - 1
		.long lg_xidt
	.p2align 2
lg_x_stub_addr:
	.irp v, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	.long lg_x_stub_\v
	.endr
	.long lg_x_ret			/* 32: INT $32 from CPL3, the program done */

	.text
	.code32
	.globl lg_exec_entry, lg_x_back
lg_exec_entry:
	movl lg_x_paging, %eax
	cmpl $1, %eax
	je 1f
	cmpl $2, %eax
	jne 3f
	movl %cr4, %eax
	orl $CR4_PAE, %eax
	movl %eax, %cr4
	movl $lg_pdpt, %eax
	jmp 2f
1:	movl %cr4, %eax
	orl $CR4_PSE, %eax
	movl %eax, %cr4
	movl $lg_pd32, %eax
2:	movl %eax, %cr3
	movl %cr0, %eax
	orl $CR0_PG, %eax
	movl %eax, %cr0
3:	lidt lg_xidtr
	movl $SEL_K_DATA, %eax
	movl %eax, %fs
	movl %eax, %gs
	movl %esp, lg_x_esp
	cmpl $0, lg_x_cpl3
	je 4f
	movl %esp, lg_tss_a + 4		/* ESP0, SS0: CPL3's events */
	movl $SEL_K_DATA, lg_tss_a + 8
	movw $SEL_TSS_A, %ax
	ltr %ax
	movl $SEL_U_DATA32, %eax
	movl %eax, %ds
	movl %eax, %es
	movl %eax, %fs
	movl %eax, %gs
	pushl $SEL_U_DATA32		/* SS */
	pushl $lg_task_stack		/* ESP */
	pushl exec_in + 128		/* EFLAGS */
	pushl $SEL_U_CODE32		/* CS */
	jmp 5f
4:	pushl exec_in + 128
	pushl $SEL_K_CODE32
5:	pushl exec_code			/* EIP */
	movl exec_in + 0, %eax
	movl exec_in + 8, %ecx
	movl exec_in + 16, %edx
	movl exec_in + 24, %ebx
	movl exec_in + 40, %ebp
	movl exec_in + 48, %esi
	movl exec_in + 56, %edi
	iretl				/* EFLAGS with the program's TF: a trap after its first instruction */

lg_x_back:
	pushfl
	popl exec_out + 128
	movl %eax, exec_out + 0
	movl %ecx, exec_out + 8
	movl %edx, exec_out + 16
	movl %ebx, exec_out + 24
	movl %ebp, exec_out + 40
	movl %esi, exec_out + 48
	movl %edi, exec_out + 56
	pushfl
	andl $~(TF | AC | DF), (%esp)
	popfl
	cmpl $0, lg_x_cpl3
	je 1f
	int $32				/* to lg_x_ret at CPL0 */
1:	movl lg_x_esp, %esp
lg_x_done:
	movl $SEL_K_DATA, %eax
	movl %eax, %ds
	movl %eax, %es
	xorl %eax, %eax
	movl %eax, %fs
	movl %eax, %gs
	movl %cr0, %eax
	andl $~CR0_PG, %eax
	movl %eax, %cr0
	jmp lg_up

/* Vectors with an error code push theirs; the others a 0 in its place. */
	.irp v, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
lg_x_stub_\v:
	.if (\v == 8) | ((\v >= 10) & (\v <= 14)) | (\v == 17) | (\v == 21) | (\v == 29) | (\v == 30)
	pushl $\v
	.else
	pushl $0
	pushl $\v
	.endif
	jmp lg_x_common
	.endr

lg_x_ret:
	cld
	movl lg_x_esp, %esp
	jmp lg_x_done

lg_x_common:
	pushl %eax
	pushl %ecx
	pushl %edx
	pushl %ebx
	/* vector at 16(%esp), error code 20, EIP 24, CS 28, EFLAGS 32 */
	movl 16(%esp), %eax
	cmpl $1, %eax
	je lg_x_db
	cmpl $3, %eax
	je lg_x_db
	movl %ebp, exec_out + 40
	movl %esi, exec_out + 48
	movl %edi, exec_out + 56
	popl exec_out + 24
	popl exec_out + 16
	popl exec_out + 8
	popl exec_out + 0
	popl lg_x_vector
	popl lg_x_error
	popl lg_x_eip
	popl %eax			/* CS */
	popl exec_out + 128
	cld
	movl lg_x_esp, %esp
	jmp lg_x_done

/*
 * exec.S's dbg_common in 32-bit code: {vector, EIP, DR6 (B0-B3 of the
 * enabled breakpoints only), EFLAGS, CS} into dbg_log, DR6 reset, TF
 * cleared after dbg_tf_limit events, RF set in a #DB's frame.
 */
lg_x_db:
	movl dbg_count, %ecx
	cmpl $32, %ecx
	jae 2f
	imull $40, %ecx, %ebx
	addl $dbg_log, %ebx
	movl %eax, 0(%ebx)
	movl $0, 4(%ebx)
	movl 24(%esp), %edx
	movl %edx, 8(%ebx)
	movl $0, 12(%ebx)
	pushl %esi
	pushl %edi
	movl %dr7, %esi
	DR7_ENABLED %esi, %edi
	orl $~0xf, %esi
	movl %dr6, %edx
	andl %esi, %edx
	popl %edi
	popl %esi
	movl %edx, 16(%ebx)
	movl $0, 20(%ebx)
	movl 32(%esp), %edx
	movl %edx, 24(%ebx)
	movl $0, 28(%ebx)
	movl 28(%esp), %edx
	movl %edx, 32(%ebx)
	movl $0, 36(%ebx)
2:	incl %ecx
	movl %ecx, dbg_count
	movl $0xffff0ff0, %edx
	movl %edx, %dr6
	cmpl dbg_tf_limit, %ecx
	jb 3f
	andl $~TF, 32(%esp)
3:	cmpl $1, %eax
	jne 4f
	orl $RF, 32(%esp)
4:	popl %ebx
	popl %edx
	popl %ecx
	popl %eax
	addl $8, %esp
	iretl
	.code64

	.section .note.GNU-stack, "", @progbits
