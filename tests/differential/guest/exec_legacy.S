/* SPDX-License-Identifier: MIT */
/*
 * The executor outside IA-32e mode (exec_legacy.c drives it): legacy_run(14)
 * leaves long mode and comes here, in 32-bit protected mode at CPL0 with
 * paging off. lg_x_paging picks the paging (0 none, 1 32-bit with the
 * 4 MiB identity pages of lg_pd32, 2 PAE with lg_pdpt); lg_xidt catches
 * vectors 0-31 (1 and 3 at DPL3) and 32, the way back from CPL1-3, and
 * has room for all 256 (a record's gate: legacy_gate_borrow()). The
 * program's CS is lg_x_cs (32-bit or 16-bit code). With lg_x_ss set
 * the program runs at the CPL of lg_x_cs, 1-3 (lg_x_ss, flat data of that
 * DPL, in every data segment register, the stack lg_task_stack), entered
 * by IRET, its events taken to CPL0 on SS0:ESP0 of TSS A (LTR;
 * exec_legacy.c loads long mode's TR again). With lg_x_real set it runs
 * in real mode instead (lg_x_to_real, the blob lg_rx below). With
 * lg_x_vm86_end set it runs in virtual-8086 mode, where real mode's
 * program goes, DS/ES/FS/GS at VM86_WIN, entered by IRET; the HLT
 * after it raises the #GP at lg_x_vm86_end that ends it.
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
#define SEL_K_CODE16R 0x78
#define SEL_K_DATA16 0x80
#define REAL_SEG    0x7000		/* LEGACY_REAL_BASE >> 4 */
/* Real mode's layout in REAL_SEG (lg_rx_layout tells exec_legacy.c). */
#define RX_OFF      0x1000		/* the blob lg_rx .. lg_rx_end */
#define RX_PROG     0x1800		/* the program */
#define RX_IVT      0x1a00		/* the IVT: vectors 0-31 */
#define RX_STACK    0x2000
#define RX(l)       (RX_OFF + (l) - lg_rx)
#define SEL_TSS_A   0xa8
#define CR0_PG      0x80000000
#define CR4_PSE     0x10
#define CR4_PAE     0x20
#define TF          0x100
#define DF          0x400
#define NT          0x4000
#define RF          0x10000
#define AC          0x40000
#define EFLAGS_VM   0x20000
#define VM86_DSEG   0x8000		/* VM86_WIN >> 4 */

	.data
	.p2align 3
	.globl lg_x_paging, lg_x_ss, lg_x_cs, lg_x_vector, lg_x_error, lg_x_eip, lg_xidt
	.globl lg_x_stub_addr, lg_x_real, lg_x_vm86_end, lg_rx_layout, lg_rx_ip, lg_x_task_on
	.globl lg_x_task_stack, lg_x_real_pe
lg_x_paging:	.long 0
lg_x_ss:	.long 0			/* outside ring 0: the program's SS; 0 at CPL0 */
lg_x_real:	.long 0			/* the program runs in real mode (lg_x_to_real) */
lg_x_vm86_end:	.long 0			/* virtual-8086 mode: its HLT's IP; 0 otherwise */
lg_x_cs:	.long 0			/* the program's CS: 32- or 16-bit code, its CPL's */
lg_x_vector:	.long -1
lg_x_error:	.long 0
lg_x_eip:	.long 0
lg_x_esp:	.long 0
lg_x_task_on:	.long 0			/* a record's task gate: TR is TSS A at CPL0 too */
lg_x_real_pe:	.long 0			/* real mode: EBP = CR0, EDI = CR0 | PE (ENV_REAL_PE) */
	.p2align 3
lg_xidt:	.skip 8 * 256		/* 8-byte gates (exec_legacy.c) */
lg_xidtr:	.word 8 * 256 - 1
		.long lg_xidt
	.p2align 2
lg_x_stub_addr:
	.irp v, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	.long lg_x_stub_\v
	.endr
	.long lg_x_ret			/* 32: INT $32 from CPL1-3, the program done */
	.p2align 4
	.skip 512
lg_x_task_stack:			/* task B's (lg_x_task) */
lg_x_ivtr:	.word 4 * 32 - 1		/* real mode's IVT: vectors 0-31 */
		.long REAL_SEG * 16 + RX_IVT
lg_rx_layout:	.word RX_OFF, RX_PROG, RX_IVT, RX(rx_back), RX(rx_gate16)
lg_rx_ip:					/* IVT entries: IPs in REAL_SEG */
	.irp v, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	.word RX(rx_stub_\v)
	.endr

	.text
	.code32
	.globl lg_exec_entry, lg_x_back
lg_exec_entry:
	cmpl $0, lg_x_real
	jne lg_x_to_real
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
	cmpl $0, lg_x_task_on
	je 8f
	movl %cr3, %eax			/* this paging in both tasks: a task switch loads CR3 */
	movl %eax, lg_tss_a + 0x1c
	movl %eax, lg_tss_b + 0x1c
	call lg_x_tss			/* the program in task A at any CPL */
8:	cmpl $0, lg_x_ss
	jne 4f
	cmpl $0, lg_x_vm86_end
	jne 6f
	pushl exec_in + 128		/* EFLAGS */
	jmp 5f
4:	call lg_x_tss
	movl lg_x_ss, %eax		/* flat, DPL = CPL */
	movl %eax, %ds
	movl %eax, %es
	movl %eax, %fs
	movl %eax, %gs
	pushl lg_x_ss			/* SS */
	pushl $lg_task_stack		/* ESP */
	pushl exec_in + 128		/* EFLAGS */
5:	pushl lg_x_cs			/* CS */
	pushl exec_code			/* EIP: its offset in CS */
	jmp 7f
6:	call lg_x_tss
	pushl $VM86_DSEG		/* GS */
	pushl $VM86_DSEG		/* FS */
	pushl $VM86_DSEG		/* DS */
	pushl $VM86_DSEG		/* ES */
	pushl $REAL_SEG			/* SS */
	pushl $RX_STACK			/* ESP */
	movl exec_in + 128, %eax
	orl $EFLAGS_VM, %eax
	pushl %eax			/* EFLAGS */
	pushl $REAL_SEG			/* CS */
	pushl exec_code			/* IP */
7:	movl exec_in + 0, %eax
	movl exec_in + 8, %ecx
	movl exec_in + 16, %edx
	movl exec_in + 24, %ebx
	movl exec_in + 40, %ebp
	movl exec_in + 48, %esi
	movl exec_in + 56, %edi
	iretl				/* EFLAGS with the program's TF: a trap after its first instruction */

/*
 * TSS A for the events of a program outside ring 0, and the program's
 * task where a task gate is in play: SS0:ESP0 the stack lg_x_esp notes.
 * Loaded once (LTR of the busy TSS A would fault).
 */
lg_x_tss:
	movl lg_x_esp, %eax
	movl %eax, lg_tss_a + 4
	movl $SEL_K_DATA, lg_tss_a + 8
	str %ax
	cmpw $SEL_TSS_A, %ax
	je 1f
	movw $SEL_TSS_A, %ax
	ltr %ax
1:	ret

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
	cmpl $0, lg_x_ss
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

/*
 * Real mode: leave protected mode with DS, ES, FS and GS flat (base 0, a
 * 4 GiB limit their caches keep: "big real mode", where the window's RAM
 * at 16 MiB is within reach of 32-bit addresses) and SS with real-mode
 * limits; IDTR the IVT at REAL_SEG:RX_IVT. Interrupts are off (legacy_run).
 */
lg_x_to_real:
	lidt lg_x_ivtr
	movl %esp, lg_x_esp
	movl $SEL_K_DATA, %eax
	movl %eax, %ds
	movl %eax, %es
	movl %eax, %fs
	movl %eax, %gs
	movl $SEL_K_DATA16, %eax
	movl %eax, %ss
	ljmp $SEL_K_CODE16R, $RX(rx_pm16)

lg_x_from_real:
	movl $SEL_K_DATA, %eax
	movl %eax, %ss
	movl lg_x_esp, %esp
	jmp lg_x_done

/*
 * The generator's 32-bit IDT gate outside IA-32e mode (cases_gen.c,
 * ENV_GATE), gen.S's gen_gate_stub in 32-bit code: into gen_frame the
 * frame's EIP, CS and EFLAGS; its ESP and SS after a privilege change; from
 * virtual-8086 mode its ES, DS, FS and GS too, a word each in the sixth
 * slot (selectors zero-extended: the SDM leaves a slot's upper half
 * undefined). TF set or cleared in the frame as gen_gate_tf says; back
 * with IRETL. Memory through SS, flat here whatever DS the program had.
 */
	.globl lg_x_gate
lg_x_gate:
	pushl %eax
	movl 4(%esp), %eax		/* EIP */
	movl %eax, %ss:gen_frame + 0
	movzwl 8(%esp), %eax		/* CS */
	movl %eax, %ss:gen_frame + 8
	movl 12(%esp), %eax		/* EFLAGS */
	movl %eax, %ss:gen_frame + 16
	testl $EFLAGS_VM, %eax
	jnz 1f
	testl $3, 8(%esp)		/* from CPL1-3: ESP and SS too */
	jz 3f
1:	movl 16(%esp), %eax		/* ESP */
	movl %eax, %ss:gen_frame + 24
	movzwl 20(%esp), %eax		/* SS */
	movl %eax, %ss:gen_frame + 32
	testl $EFLAGS_VM, 12(%esp)
	jz 3f
	.irp i, 0, 1, 2, 3		/* ES, DS, FS, GS */
	movw 24 + 4 * \i(%esp), %ax
	movw %ax, %ss:gen_frame + 40 + 2 * \i
	.endr
3:	incl %ss:gen_hits
	testl $1, %ss:gen_gate_tf
	jz 4f
	orl $TF, 12(%esp)
4:	testl $2, %ss:gen_gate_tf
	jz 5f
	andl $~TF, 12(%esp)
5:	popl %eax
	iretl

/*
 * Task B of the generator's task gate (ENV_GATE, type 5): notes what the
 * task switch saved in TSS A (EIP, EFLAGS, CS, SS), B's back link and
 * B's own EFLAGS, sets or clears TF in A's saved EFLAGS as gen_gate_tf
 * says (the switch back loads them) and returns to A. Entered by an
 * event or a far CALL (NT set) with IRET: NT makes it a task switch back
 * to A, which leaves B available; entered by a far JMP (NT clear, A left
 * available) with a far JMP to TSS A. The next switch to B goes on after
 * either.
 */
	.globl lg_x_task
lg_x_task:
	movl lg_tss_a + 0x20, %eax	/* EIP */
	movl %eax, gen_frame + 0
	movl lg_tss_a + 0x24, %eax	/* EFLAGS */
	movl %eax, gen_frame + 8
	movzwl lg_tss_a + 0x4c, %eax	/* CS */
	movl %eax, gen_frame + 16
	movzwl lg_tss_a + 0x50, %eax	/* SS */
	movl %eax, gen_frame + 24
	movzwl lg_tss_b, %eax		/* the back link */
	movl %eax, gen_frame + 32
	pushfl
	popl gen_frame + 40
	incl gen_hits
	testl $1, gen_gate_tf
	jz 1f
	orl $TF, lg_tss_a + 0x24
1:	testl $2, gen_gate_tf
	jz 2f
	andl $~TF, lg_tss_a + 0x24
2:	testl $NT, gen_frame + 40
	jz 3f
	iretl
	jmp lg_x_task
3:	ljmp $SEL_TSS_A, $0
	jmp lg_x_task

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
	testl $EFLAGS_VM, 32(%esp)
	jz 1f
	/* From virtual-8086 mode DS and ES are null; IRET reloads the program's from the frame. */
	movl $SEL_K_DATA, %eax
	movl %eax, %ds
	movl %eax, %es
1:	movl 16(%esp), %eax
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
	/* The #GP of the HLT after a virtual-8086 program: it ended there. */
	cmpl $13, lg_x_vector
	jne 1f
	testl $EFLAGS_VM, exec_out + 128
	jz 1f
	movl lg_x_eip, %eax
	cmpl lg_x_vm86_end, %eax
	jne 1f
	movl $-1, lg_x_vector
1:	cld
	movl lg_x_esp, %esp
	jmp lg_x_done

/*
 * exec.S's dbg_common in 32-bit code: {vector, EIP, DR6 (B0-B3 of the
 * enabled breakpoints only), EFLAGS, CS} into dbg_log, DR6 reset, TF
 * cleared after dbg_tf_limit events, RF set in a #DB's frame. DS flat
 * meanwhile: a program that left IA-32e mode (cases_gen.c, ENV_LM_OFF)
 * keeps compatibility mode's, whose base may not be 0.
 */
lg_x_db:
	pushl %ds
	movl $SEL_K_DATA, %ecx
	movl %ecx, %ds
	movl dbg_count, %ecx
	cmpl $32, %ecx
	jae 2f
	imull $40, %ecx, %ebx
	addl $dbg_log, %ebx
	pushl %esi
	pushl %edi
	DBG_ENTRY movl, 36(%esp), 44(%esp), 40(%esp)	/* EIP 24, EFLAGS 32, CS 28 before the pushes */
	popl %edi
	popl %esi
2:	incl %ecx
	movl %ecx, dbg_count
	movl $0xffff0ff0, %edx
	movl %edx, %dr6
	cmpl dbg_tf_limit, %ecx
	jb 3f
	andl $~TF, 36(%esp)
3:	cmpl $1, %eax
	jne 4f
	orl $RF, 36(%esp)
4:	popl %ds
	popl %ebx
	popl %edx
	popl %ecx
	popl %eax
	addl $8, %esp
	iretl

/*
 * The real-mode executor, copied to REAL_SEG:RX_OFF (exec_legacy.c): code
 * that runs there reaches its data through 32-bit addresses (DS base 0).
 * The program is entered by IRET (its FLAGS: a trap after its first
 * instruction), ends with a far jump to rx_back, or faults: IVT entries
 * 0-31 lead to rx_stub_N, #DB and #BP are logged as lg_x_db does (IP
 * for EIP) and return with RF set, any other vector ends it.
 */
	.code16
	.p2align 4
	.globl lg_rx, lg_rx_end
lg_rx:
rx_pm16:				/* 16-bit protected mode, CS base LEGACY_REAL_BASE */
	movl %cr0, %eax
	andl $~1, %eax
	movl %eax, %cr0
	ljmp $REAL_SEG, $RX(rx_real)
rx_real:
	movw $REAL_SEG, %ax
	movw %ax, %ss
	movl $RX_STACK, %esp
	movl $exec_in, %esi
	movl $lg_x_real_pe, %eax
	cmpl $0, (%eax)
	je 1f
	movl %cr0, %eax			/* real mode's CR0 into the program's EBP and EDI */
	movl %eax, 40(%esi)
	orl $1, %eax
	movl %eax, 56(%esi)
1:	pushw 128(%esi)			/* FLAGS */
	pushw $REAL_SEG
	pushw $RX_PROG
	movl 0(%esi), %eax
	movl 8(%esi), %ecx
	movl 16(%esi), %edx
	movl 24(%esi), %ebx
	movl 40(%esi), %ebp
	movl 56(%esi), %edi
	movl 48(%esi), %esi
	iret

rx_back:
	pushfl
	call rx_save
	popl 128(%esi)
	pushfl
	andl $~(TF | AC | DF), (%esp)
	popfl
rx_exit:
	movl %cr0, %eax
	orl $1, %eax
	movl %eax, %cr0
	ljmpl $SEL_K_CODE32, $lg_x_from_real

	.irp v, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
rx_stub_\v:
	pushw $\v
	jmp rx_common
	.endr

rx_common:				/* vector, IP, CS, FLAGS at SS:SP */
	cmpw $1, (%esp)
	je rx_db
	cmpw $3, (%esp)
	je rx_db
	call rx_save
	movzwl 6(%esp), %eax		/* FLAGS */
	movl %eax, 128(%esi)
	movzwl (%esp), %eax		/* the vector */
	movl $lg_x_vector, %ebx
	movl %eax, (%ebx)
	movzwl 2(%esp), %eax		/* IP */
	movl $lg_x_eip, %ebx
	movl %eax, (%ebx)
	movl $lg_x_error, %ebx
	movl $0, (%ebx)			/* real mode pushes none */
	cld
	jmp rx_exit

/* The program's registers into exec_out; ESI is left pointing there. */
rx_save:
	pushl %esi
	movl $exec_out, %esi
	movl %eax, 0(%esi)
	movl %ecx, 8(%esi)
	movl %edx, 16(%esi)
	movl %ebx, 24(%esi)
	movl %ebp, 40(%esi)
	movl %edi, 56(%esi)
	popl 48(%esi)
	ret

rx_db:
	pushl %ebp
	movw %sp, %bp			/* vector at 4(%bp), IP 6, CS 8, FLAGS 10 */
	pushl %eax
	pushl %ebx
	pushl %ecx
	pushl %edx
	pushl %esi
	pushl %edi
	movl $dbg_count, %esi
	movl (%esi), %ecx
	cmpl $32, %ecx
	jae 2f
	imull $40, %ecx, %ebx
	addl $dbg_log, %ebx
	movzwl 4(%bp), %eax
	DBG_ENTRY movzwl, 6(%bp), 10(%bp), 8(%bp)
	movl $dbg_count, %esi
2:	incl %ecx
	movl %ecx, (%esi)
	movl $0xffff0ff0, %edx
	movl %edx, %dr6
	movl $dbg_tf_limit, %edi
	cmpl (%edi), %ecx
	jb 3f
	andw $~TF, 10(%bp)
	/*
	 * Back by IRETD with RF set, as lg_x_db: a 16-bit IRET cannot set
	 * RF, and an instruction breakpoint would fault again for ever.
	 * The 12 bytes from BP (EBP, vector, IP, CS, FLAGS) become EIP, CS
	 * and EFLAGS: FLAGS, the handler's upper EFLAGS (what a 16-bit
	 * IRET keeps) and RF.
	 */
3:	movzwl 6(%bp), %eax
	movzwl 8(%bp), %ebx
	pushfl
	popl %ecx
	andl $0xffff0000, %ecx
	movw 10(%bp), %cx
	orl $RF, %ecx
	movl 0(%bp), %edx
	movl %eax, 0(%bp)
	movl %ebx, 4(%bp)
	movl %ecx, 8(%bp)
	movl %edx, %ebp
	popl %edi
	popl %esi
	popl %edx
	popl %ecx
	popl %ebx
	popl %eax
	iretl
/*
 * The generator's 16-bit IDT gate (ENV_GATE, types 6 and 7), lg_x_gate's
 * twin for 16-bit code: CPL0 at SEL_K_CODE16R:RX(rx_gate16), so in the
 * blob wherever the program runs (exec_legacy.c copies it). Frame slots
 * of 2 bytes (IP, CS, FLAGS; SP and SS after a privilege change) on the
 * flat 32-bit stack, so ESP addresses them; back with a 16-bit IRET.
 */
rx_gate16:
	pushl %eax
	pushl %ebx			/* IP at 8(%esp), CS 10, FLAGS 12, SP 14, SS 16 */
	movl $gen_frame, %ebx
	.irp i, 0, 1, 2
	movzwl 8 + 2 * \i(%esp), %eax
	movl %eax, %ss:8 * \i(%ebx)
	.endr
	testw $3, 10(%esp)
	jz 1f
	movzwl 14(%esp), %eax
	movl %eax, %ss:24(%ebx)
	movzwl 16(%esp), %eax
	movl %eax, %ss:32(%ebx)
1:	movl $gen_hits, %ebx
	incl %ss:(%ebx)
	movl $gen_gate_tf, %ebx
	testl $1, %ss:(%ebx)
	jz 2f
	orw $TF, 12(%esp)
2:	testl $2, %ss:(%ebx)
	jz 3f
	andw $~TF, 12(%esp)
3:	popl %ebx
	popl %eax
	iret
	/* The blob ends below its program, or this fails to assemble. */
	.org lg_rx + RX_PROG - RX_OFF
lg_rx_end:
	.code64

	.section .note.GNU-stack, "", @progbits
