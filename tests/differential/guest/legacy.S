/* SPDX-License-Identifier: MIT */
/*
 * Issue 18: the CPU modes other than long mode. legacy_run(kind) leaves
 * long mode (compatibility mode, paging off, EFER.LME off), runs a payload
 * with two split locks and a PUSHF in the mode `kind` names, and comes back:
 *
 *   0  32-bit protected mode, paging off
 *   1  32-bit protected mode, 32-bit paging (4 MiB pages, CR4.PSE)
 *   2  32-bit protected mode, PAE paging (2 MiB pages)
 *   3  16-bit protected mode (CS.D=0), paging off
 *   4  real mode
 *   5  long mode again, with 5-level paging (CR4.LA57): lg_pml5's entries
 *      0 and 1 both name the PML4 in use, so linear 2^48 + x is x; the
 *      payload runs there, code, stack and split dword, above 2^47
 *   6  32-bit protected mode, paging off, the payload in another task:
 *      LTR of TSS A, a far JMP to TSS B (a task switch), whose task runs
 *      the payload and switches back by a far JMP to TSS A
 *   7  32-bit protected mode, PAE paging, the payload at CPL3: SYSEXIT
 *      there, SYSENTER back to CPL0, where one more split lock and a
 *      PUSHF follow (lg_se_flags). Outside IA-32e mode both load fixed
 *      flat segments from IA32_SYSENTER_CS (SEL_SE_K_CODE and the three
 *      after it) without reading the GDT: AMD runs them there too
 *   8  32-bit protected mode, paging off, the guest's own TF over two
 *      split locks, a PUSHF and an INT3, its #DB traps and the #BP logged
 *      through a 32-bit IDT (lg_idt32, gates 1 and 3) in lg_dblog
 *   9  real mode as kind 4, then the guest's own TF over a split lock and
 *      a PUSHF, its #DB traps logged through an IVT (lg_real_db)
 *  10  kind 8's payload at CPL3 as kind 7 enters it: its #DB and #BP
 *      handlers (32-bit gates, INT3's DPL3) run at CPL0 on SS0:ESP0 of
 *      TSS A (LTR), their frames holding the CPL3 SS:ESP too
 *  11  16-bit protected mode as kind 3, then the guest's own TF over a
 *      split lock, a PUSHF and an INT3, through 16-bit interrupt gates
 *      into 16-bit handlers (lg_db16, lg_bp16) that log as kind 8's do
 *  12  kind 10, but the handlers stay at CPL3: #DB's gate names a
 *      conforming DPL0 segment (SEL_K_CODE32C), #BP's a DPL3 one; no
 *      stack switch, and DR6 is out of their reach
 *  13  virtual-8086 mode (IOPL 3, segment REAL_SEG), entered by IRET from
 *      CPL0 with TSS A's SS0:ESP0 for its events: a split lock and a
 *      PUSHF, then the guest's own TF over another, a PUSHF and an INT3,
 *      its #DB traps and the #BP logged at CPL0 through 32-bit gates
 *      (frames with GS, FS, DS, ES; DS null in the handler); INT $2 (a DPL3
 *      gate, lg_vm86_out) leaves it
 *  14  the generator's executor (exec_legacy.S): one program in 32-bit
 *      protected mode with the paging lg_x_paging names
 *  15  kind 10 with a 16-bit TSS in TR (lg_tss_b through SEL_TSS_B, made
 *      16-bit by cases_legacy.c): the handlers' stack is its SS0:SP0
 *
 * Nothing in between may fault: the IDT is the 64-bit one (kind 8 loads
 * a 32-bit one that has only the #DB gate). cases_legacy.c
 * builds the page tables (lg_pd32, lg_pdpt, lg_pdpae) and copies the 16-bit
 * part (lg_blob .. lg_blob_end) to LEGACY_REAL_BASE.
 */
#define SEL_K_CODE64  0x08
#define SEL_K_DATA    0x10
#define SEL_K_CODE32  0x38
#define SEL_K_CODE16R 0x78
#define SEL_K_DATA16  0x80
#define SEL_TSS_A     0xa8
#define SEL_TSS_B     0xb0
#define REAL_SEG      0x7000
#define CR0_PG        0x80000000
#define CR4_PSE       0x10
#define CR4_PAE       0x20
#define CR4_LA57      0x1000
#define CR4_PCIDE     0x20000
#define SEL_SE_K_CODE 0xc8
#define SEL_SE_U_DATA32 0xe3
#define SEL_K_CODE32C 0xf8
#define MSR_SYSENTER_CS  0x174
#define MSR_SYSENTER_ESP 0x175
#define MSR_SYSENTER_EIP 0x176
#define MSR_EFER      0xc0000080
#define MSR_GS_BASE   0xc0000101
#define EFER_LME      0x100
#define TF            0x100
#define EFLAGS_IOPL3  0x3000
#define EFLAGS_VM     0x20000

	.data
	.p2align 6
	.globl lg_split, lg_flags, lg_kind, lg_tss_a, lg_tss_b, lg_task_b, lg_task_stack, lg_se_flags
	.globl lg_idt32, lg_dblog, lg_ndb, lg_payload_tf, lg_db32, lg_bp32, lg_real_db, lg_real_tf
	.globl lg_db32u, lg_db16, lg_bp16, lg_pm16_tf, lg_vm86, lg_vm86_out
	.skip 62
lg_split:	.long 0			/* across a cache line: 62 bytes into one */
	.p2align 3
lg_flags:	.skip 4 * 16		/* what PUSHF pushed, per kind */
lg_kind:	.long 0
lg_se_flags:	.long 0		/* kind 7: PUSHF at CPL0 after SYSENTER */
lg_rsp:		.quad 0
lg_cr0:		.quad 0
lg_cr3:		.quad 0
lg_cr4:		.quad 0
lg_efer:	.quad 0
lg_gsbase:	.quad 0
lg_idtr64:	.skip 10
	.p2align 3
lg_idt32:	.skip 8 * 4		/* kind 8: gates 1 and 3 (cases_legacy.c) */
lg_idtr32:	.word 8 * 4 - 1
		.long lg_idt32
	.p2align 3
lg_ndb:		.long 0
lg_db6:		.long 0
lg_dblog:	.skip 16 * 16		/* per #DB: EIP, EFLAGS, DR6, CS */
	.p2align 7
lg_tss_a:	.skip 104		/* 32-bit TSSes: cases_legacy.c fills B's image */
	.p2align 7
lg_tss_b:	.skip 104
	.p2align 4
	.skip 512
lg_task_stack:

	.text
	.code64
	.globl legacy_run
legacy_run:
	pushq %rbx
	pushq %rbp
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	pushfq
	cli
	movq %rsp, lg_rsp(%rip)
	movq %cr0, %rax
	movq %rax, lg_cr0(%rip)
	movq %cr3, %rax
	movq %rax, lg_cr3(%rip)
	movq %cr4, %rax
	movq %rax, lg_cr4(%rip)
	movl $MSR_EFER, %ecx
	rdmsr
	movl %eax, lg_efer(%rip)
	movl %edx, lg_efer + 4(%rip)
	movl $MSR_GS_BASE, %ecx
	rdmsr
	movl %eax, lg_gsbase(%rip)
	movl %edx, lg_gsbase + 4(%rip)
	movl %edi, lg_kind(%rip)
	sidt lg_idtr64(%rip)
	pushq $SEL_K_CODE32
	leaq 1f(%rip), %rax
	pushq %rax
	lretq

	.code32
1:	movl $SEL_K_DATA, %eax
	movl %eax, %ds
	movl %eax, %es
	movl %eax, %ss
	movl %cr0, %eax
	andl $~CR0_PG, %eax
	movl %eax, %cr0			/* paging off: legacy protected mode */
	movl $MSR_EFER, %ecx
	rdmsr
	andl $~EFER_LME, %eax
	wrmsr
	movl %cr4, %eax
	andl $~(CR4_PAE | CR4_LA57 | CR4_PCIDE), %eax
	movl %eax, %cr4
	movl lg_kind, %eax
	cmpl $14, %eax
	je lg_exec_entry		/* exec_legacy.S */
	cmpl $6, %eax
	je k_task
	cmpl $7, %eax
	je k_sysexit
	cmpl $8, %eax
	je k_tf
	cmpl $10, %eax
	je k_sysexit
	cmpl $12, %eax
	je k_sysexit
	cmpl $15, %eax
	je k_sysexit
	cmpl $13, %eax
	je k_vm86
	cmpl $1, %eax
	je k_paging32
	cmpl $2, %eax
	je k_pae
	cmpl $5, %eax
	je k_la57
	cmpl $3, %eax
	jae k_16
	call payload32
	jmp lg_up

k_paging32:
	movl %cr4, %eax
	orl $CR4_PSE, %eax
	movl %eax, %cr4
	movl $lg_pd32, %eax
	jmp 2f
k_pae:
	movl %cr4, %eax
	orl $CR4_PAE, %eax
	movl %eax, %cr4
	movl $lg_pdpt, %eax
2:	movl %eax, %cr3
	movl %cr0, %eax
	orl $CR0_PG, %eax
	movl %eax, %cr0
	call payload32
	movl %cr0, %eax
	andl $~CR0_PG, %eax
	movl %eax, %cr0
	jmp lg_up

k_16:
	ljmp $SEL_K_CODE16R, $(lg_pm16 - lg_blob)

k_task:
	movw $SEL_TSS_A, %ax
	ltr %ax
	ljmp $SEL_TSS_B, $0		/* task switch: A's state saved, B's loaded */
	jmp lg_up			/* back in task A */

/* Task B: the payload, then back to task A (JMP left it available). */
lg_task_b:
	call payload32
	ljmp $SEL_TSS_A, $0

k_sysexit:
	movl %cr4, %eax
	orl $CR4_PAE, %eax
	movl %eax, %cr4
	movl $lg_pdpt, %eax
	movl %eax, %cr3
	movl %cr0, %eax
	orl $CR0_PG, %eax
	movl %eax, %cr0
	xorl %edx, %edx
	movl $MSR_SYSENTER_CS, %ecx
	movl $SEL_SE_K_CODE, %eax
	wrmsr
	movl $MSR_SYSENTER_ESP, %ecx
	movl %esp, %eax
	wrmsr
	movl $MSR_SYSENTER_EIP, %ecx
	movl $lg_se_entry, %eax
	wrmsr
	cmpl $10, lg_kind
	je 2f
	cmpl $12, lg_kind
	je 2f
	cmpl $15, lg_kind
	jne 1f
	lidt lg_idtr32
	movw $SEL_TSS_B, %ax		/* 16-bit: SS0:SP0 as cases_legacy.c wrote them */
	ltr %ax
	jmp 1f
2:	lidt lg_idtr32
	movl %esp, lg_tss_a + 4		/* ESP0, SS0: the stack of a #DB from CPL3 */
	movl $SEL_K_DATA, lg_tss_a + 8
	movw $SEL_TSS_A, %ax
	ltr %ax
1:	movl $lg_task_stack, %ecx
	movl $lg_se_user, %edx
	sysexit
lg_se_user:				/* CPL3 */
	cmpl $10, lg_kind
	je 1f
	cmpl $12, lg_kind
	je 1f
	cmpl $15, lg_kind
	je 1f
	call payload32
	sysenter
	/*
	 * DS and ES at DPL3: an IRET back to CPL3 (the #DB handler's) nulls
	 * those of a lower DPL (SDM vol. 2 IRET), and a real CPU faults on them.
	 */
1:	movl $SEL_SE_U_DATA32, %eax
	movl %eax, %ds
	movl %eax, %es
	call lg_payload_tf
	sysenter
lg_se_entry:				/* CPL0, ESP = IA32_SYSENTER_ESP */
	lock addl $1, lg_split
	pushfl
	popl lg_se_flags
	movl %cr0, %eax
	andl $~CR0_PG, %eax
	movl %eax, %cr0
	jmp lg_up

k_vm86:
	lidt lg_idtr32
	movl %esp, lg_tss_a + 4		/* ESP0, SS0: every event from virtual-8086 mode */
	movl $SEL_K_DATA, lg_tss_a + 8
	movw $SEL_TSS_A, %ax
	ltr %ax
	pushl $0			/* GS */
	pushl $0			/* FS */
	pushl $REAL_SEG			/* DS */
	pushl $REAL_SEG			/* ES */
	pushl $REAL_SEG			/* SS */
	pushl $0xf00			/* ESP */
	pushl $(EFLAGS_VM | EFLAGS_IOPL3 | 2)
	pushl $REAL_SEG			/* CS */
	pushl $(lg_vm86 - lg_blob)	/* EIP */
	iretl
lg_vm86_out:				/* INT $2 from virtual-8086 mode: CPL0, DS null */
	movl $SEL_K_DATA, %eax
	movl %eax, %ds
	movl %eax, %es
	movl lg_tss_a + 4, %esp
	jmp lg_up

k_tf:
	lidt lg_idtr32
	call lg_payload_tf
	jmp lg_up

/* The guest's TF from the instruction after POPF to the POPF that clears it. */
lg_payload_tf:
	pushfl
	orl $TF, (%esp)
	popfl
	nop
	lock addl $1, lg_split
	pushfl
	movl lg_kind, %ecx
	popl lg_flags(, %ecx, 4)
	movl $1, %eax
	xchgl %eax, lg_split		/* implicitly locked: lg_split = 1 */
	addl %eax, lg_split
	int3				/* its frame holds TF; no trap after it */
	nop
	pushfl
	andl $~TF, (%esp)
	popfl
	ret

/*
 * 32-bit interrupt gates, entered at CPL0: log EIP, EFLAGS, DR6 (0xbbbb
 * for INT3's) and CS of the frame; a #DB also resets DR6. At CPL3 (kind
 * 12's lg_db32u) DR6 cannot be read: its word is 0.
 */
lg_db32u:
	pushl %eax
	movl $0, %eax
	jmp lg_log32
lg_bp32:
	pushl %eax
	movl $0xbbbb, %eax
	jmp lg_log32
lg_db32:
	pushl %eax
	movl %dr6, %eax
	movl %eax, %ss:lg_db6
	movl $0xffff0ff0, %eax
	movl %eax, %dr6
	movl %ss:lg_db6, %eax
	/* Through SS, flat in every kind: DS is null after virtual-8086 mode. */
lg_log32:				/* EAX: the DR6 word; frame at 4(%esp) */
	pushl %ebx
	movl %ss:lg_ndb, %ebx
	cmpl $16, %ebx
	jae 1f
	shll $4, %ebx
	movl %eax, %ss:lg_dblog + 8(%ebx)
	movl 8(%esp), %eax
	movl %eax, %ss:lg_dblog(%ebx)
	movl 16(%esp), %eax
	movl %eax, %ss:lg_dblog + 4(%ebx)
	movl 12(%esp), %eax
	movl %eax, %ss:lg_dblog + 12(%ebx)
1:	incl %ss:lg_ndb
	popl %ebx
	popl %eax
	iretl

/* The way back: long mode as it was, then 64-bit code. */
	.globl lg_up
lg_up:
	movl lg_cr4, %eax
	andl $~CR4_PCIDE, %eax
	movl %eax, %cr4
	movl lg_cr3, %eax
	movl %eax, %cr3
	movl $MSR_EFER, %ecx
	movl lg_efer, %eax
	movl lg_efer + 4, %edx
	wrmsr
	movl lg_cr0, %eax
	movl %eax, %cr0
	ljmp $SEL_K_CODE64, $lg_back64

/* Two split locks and a PUSHF, flat 32-bit code. */
payload32:
	lock addl $1, lg_split
	movl $1, %eax
	xchgl %eax, lg_split + 0	/* implicitly locked: lg_split = 1 */
	addl %eax, lg_split		/* lg_split = old + 1 + 1 */
	pushfl
	popl %eax
	movl lg_kind, %ecx
	movl %eax, lg_flags(, %ecx, 4)
	ret

/* 5-level paging: LA57 may only change with paging off, as it is here. */
k_la57:
	movl lg_cr4, %eax
	andl $~CR4_PCIDE, %eax
	orl $(CR4_PAE | CR4_LA57), %eax
	movl %eax, %cr4
	movl $lg_pml5, %eax
	movl %eax, %cr3
	movl $MSR_EFER, %ecx
	movl lg_efer, %eax
	movl lg_efer + 4, %edx
	wrmsr
	movl lg_cr0, %eax
	movl %eax, %cr0
	ljmp $SEL_K_CODE64, $la57_64

	.code64
la57_64:
	/* To the alias above 2^48: code, stack and operand. */
	leaq 1f(%rip), %rax
	btsq $48, %rax
	btsq $48, %rsp
	jmp *%rax
1:	leaq lg_split(%rip), %rbx
	lock addl $1, (%rbx)
	movl $1, %eax
	xchgl %eax, (%rbx)		/* implicitly locked: lg_split = 1 */
	addl %eax, (%rbx)		/* lg_split = old + 1 + 1 */
	pushfq
	popq %rax
	movl %eax, lg_flags + 5 * 4(%rip)
	btrq $48, %rsp
	leaq 2f(%rip), %rax
	btrq $48, %rax
	jmp *%rax
	/* Down again as on the way in: compatibility mode, paging off, LME off. */
2:	pushq $SEL_K_CODE32
	leaq 3f(%rip), %rax
	pushq %rax
	lretq
	.code32
3:	movl %cr0, %eax
	andl $~CR0_PG, %eax
	movl %eax, %cr0
	movl $MSR_EFER, %ecx
	rdmsr
	andl $~EFER_LME, %eax
	wrmsr
	jmp lg_up

	.code64
lg_back64:
	lidt lg_idtr64(%rip)
	movl $SEL_K_DATA, %eax
	movl %eax, %ss
	xorl %eax, %eax
	movl %eax, %ds
	movl %eax, %es
	movl $MSR_GS_BASE, %ecx
	movl lg_gsbase(%rip), %eax
	movl lg_gsbase + 4(%rip), %edx
	wrmsr
	movq lg_rsp(%rip), %rsp
	popfq
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbp
	popq %rbx
	ret

/*
 * The 16-bit part, run at LEGACY_REAL_BASE (CS base there): 16-bit
 * protected mode, and real mode (segment REAL_SEG) for kind 4. Its data:
 * the split dword at offset 0x23e (across the line at 0x240), PUSHF's
 * word at 0x250.
 */
	.globl lg_blob, lg_blob_end
	.code16
lg_blob:
lg_pm16:
	movl $lg_split, %ebx
	lock addl $1, (%ebx)		/* 67 66 f0 83 03 01 */
	movl $1, %eax
	xchgl %eax, (%ebx)
	addl %eax, (%ebx)
	pushfw
	popw %ax
	movl $lg_flags, %esi
	movw %ax, 3 * 4(%esi)
	movl $lg_kind, %esi
	cmpl $4, (%esi)
	je 1f
	cmpl $9, (%esi)
	je 1f
	cmpl $11, (%esi)
	je lg_pm16_tf
	ljmpl $SEL_K_CODE32, $lg_up
1:	movw $SEL_K_DATA16, %ax		/* real-mode limits before PE goes */
	movw %ax, %ds
	movw %ax, %es
	movw %ax, %ss
	movl %cr0, %eax
	andl $~1, %eax
	movl %eax, %cr0
	ljmp $REAL_SEG, $(lg_real - lg_blob)
lg_real:
	movw $REAL_SEG, %ax
	movw %ax, %ds
	movw %ax, %ss
	movw $0xf00, %sp
	lock addl $1, 0x23e		/* linear 0x7023e: across the line at 0x70240 */
	movl $1, %eax
	xchgl %eax, 0x23e
	addl %eax, 0x23e
	pushfw
	popw %ax
	movw %ax, 0x250
	cmpw $0, 0x26e			/* kind 9 (cases_legacy.c sets it) */
	je 1f
	call lg_real_tf			/* relative: the blob moves as one */
1:	movl %cr0, %eax
	orl $1, %eax
	movl %eax, %cr0
	ljmp $SEL_K_CODE16R, $(lg_pm16_back - lg_blob)

/*
 * Kind 9: the IVT at 0x278 (cases_legacy.c writes entry 1), the guest's TF
 * from the instruction after POPF to the POPF that clears it; PUSHF's word
 * at 0x2d0. Data: #DB count at 0x280, then per #DB its IP and FLAGS.
 */
lg_real_tf:
	lidt 0x270
	pushfw
	movw %sp, %bp
	orw $0x100, (%bp)
	popfw
	nop
	lock addl $1, 0x23e
	pushfw
	popw %ax
	movw %ax, 0x2d0
	pushfw
	movw %sp, %bp
	andw $~0x100, (%bp)
	popfw
	ret

lg_real_db:
	pushw %bx
	pushw %bp
	pushw %ax
	movw %sp, %bp
	movw 0x280, %bx
	cmpw $16, %bx
	jae 1f
	shlw $2, %bx
	movw 6(%bp), %ax
	movw %ax, 0x282(%bx)
	movw 10(%bp), %ax
	movw %ax, 0x284(%bx)
1:	incw 0x280
	popw %ax
	popw %bp
	popw %bx
	iret

/* Kind 13, in virtual-8086 mode: data as real mode's, PUSHF's word with TF at 0x2d0. */
lg_vm86:
	lock addl $1, 0x23e		/* linear 0x7023e: across the line at 0x70240 */
	pushfw
	popw %ax
	movw %ax, 0x250
	pushfw
	movw %sp, %bp
	orw $TF, (%bp)
	popfw
	nop
	lock addl $1, 0x23e
	pushfw
	popw %ax
	movw %ax, 0x2d0
	int3				/* to CPL0; its frame holds TF and VM */
	nop
	pushfw
	movw %sp, %bp
	andw $~TF, (%bp)
	popfw
	int $2				/* out: lg_vm86_out */

/* Kind 11: the guest's TF in 16-bit protected mode, over 16-bit gates. */
lg_pm16_tf:
	movl $lg_idtr32, %esi
	lidtl (%esi)
	movl $lg_split, %ebx
	pushfl
	orl $TF, (%esp)
	popfl
	nop
	lock addl $1, (%ebx)
	pushfw
	popw %ax
	movl $lg_flags, %esi
	movw %ax, 11 * 4(%esi)
	int3				/* its 16-bit frame holds TF */
	nop
	pushfl
	andl $~TF, (%esp)
	popfl
	ljmpl $SEL_K_CODE32, $lg_up

/*
 * 16-bit interrupt gates into this segment: log IP, FLAGS, DR6 (0xbbbb
 * for INT3's) and CS of the 16-bit frame as lg_log32 does.
 */
lg_bp16:
	pushl %eax
	movl $0xbbbb, %eax
	jmp lg_log16
lg_db16:
	pushl %eax
	movl %dr6, %eax
	pushl %eax
	movl $0xffff0ff0, %eax
	movl %eax, %dr6
	popl %eax
lg_log16:				/* EAX: the DR6 word; the frame at 4(%esp) */
	pushl %ebx
	pushl %esi
	movl $lg_ndb, %esi
	movl (%esi), %ebx
	cmpl $16, %ebx
	jae 1f
	shll $4, %ebx
	addl $lg_dblog, %ebx
	movl %eax, 8(%ebx)
	movzwl 12(%esp), %eax
	movl %eax, (%ebx)
	movzwl 16(%esp), %eax
	movl %eax, 4(%ebx)
	movzwl 14(%esp), %eax
	movl %eax, 12(%ebx)
1:	incl (%esi)
	popl %esi
	popl %ebx
	popl %eax
	iret

lg_pm16_back:
	movw $SEL_K_DATA, %ax
	movw %ax, %ds
	movw %ax, %es
	movw %ax, %ss
	ljmpl $SEL_K_CODE32, $lg_up
	/* The code ends below its data, or this fails to assemble. */
	.org lg_blob + 0x23e
lg_blob_end:
	.code64

	.section .note.GNU-stack, "", @progbits
