/* SPDX-License-Identifier: MIT */
/*
 * Issue 18: sequences for cases_event.c. Each takes nothing (or the split
 * operand's address in %rdi); its *_start label is where RIPs in the
 * printed #DB/#BP log are counted from.
 */
#include "percpu.h"
#include "seq.h"

	.data
	.p2align 3
	.globl sc_r11, sc_rcx, sc_tf
sc_r11:		.quad 0		/* R11 as SYSCALL left it */
sc_rcx:		.quad 0
sc_tf:		.quad 0		/* run the sequence with the guest's TF */
	.globl ev_frames, ev_nframes
ev_frames:	.skip 8 * 6 * 8	/* vector, then 5 words at RSP, per event */
ev_nframes:	.quad 0
	.globl skip_rflags, skip_error, skip_vector
skip_rflags:	.quad 0		/* the skip stubs (#UD, #SS, #GP): the RFLAGS their frame held */
skip_error:	.quad 0		/* its error code */
skip_vector:	.quad 0		/* and which of them ran */
	.globl df_hit, df_resume_rsp
df_hit:		.quad 0
df_resume_rsp:	.quad 0

	.text
	.code64

/*
 * SYSCALL from CPL0 into sc_entry0 (LSTAR), which keeps R11 and returns
 * with POPF from R11 and a jump: TF as R11 has it.
 */
SEQ seq_syscall0
	cmpq $0, sc_tf(%rip)
	je 1f
	TF_ON
1:	nop
	syscall
	nop
	TF_OFF
	ret

	.globl sc_entry0
sc_entry0:
	movq %r11, sc_r11(%rip)
	movq %rcx, sc_rcx(%rip)
	pushq %r11
	popfq
	jmp *%rcx

/*
 * The shadow of MOV SS holds the step trap for one instruction, so the
 * instruction behind it runs in the same step as MOV SS: each of these
 * puts one that saves or loads RFLAGS there. Flags or R11 come back in
 * %rax (sc_r11 for SYSCALL, through sc_entry0).
 */
/* TF on where sc_tf asks, then MOV SS: the next instruction is in its shadow. */
.macro MOVSS_SHADOW
	cmpq $0, sc_tf(%rip)
	je 1f
	TF_ON
1:	nop
	movl %ss, %ecx
	movl %ecx, %ss
.endm

SEQ seq_movss_pushf
	MOVSS_SHADOW
	pushfq
	popq %rax
	nop
	TF_OFF
	ret

SEQ seq_movss_popf_tf
	movl %ss, %ecx
	pushfq
	orq $TF, (%rsp)
	movl %ecx, %ss
	popfq
	nop
	nop
	TF_OFF
	ret

SEQ seq_movss_syscall0
	MOVSS_SHADOW
	syscall
	nop
	TF_OFF
	ret

SEQ seq_movss_int3
	movl %ss, %ecx
	movl %ecx, %ss
	int3
	nop
	ret

/*
 * IRET behind MOV SS or POP SS loads TF from its frame in the pair's step:
 * the frame's TF is the opposite of the guest's (sc_tf), so the guest's
 * own stepping starts, or stops after the held trap, at the target.
 */
/* IRETQ to 2f with the frame's TF flipped, behind `load` (SS in ECX, and in the frame at 32(%rsp)). */
.macro IRETQ_BEHIND load:vararg
	cmpq $0, sc_tf(%rip)
	je 1f
	TF_ON
1:	nop
	movq %rsp, %rax
	movl %ss, %ecx
	pushq %rcx
	pushq %rax
	pushfq
	xorq $TF, (%rsp)
	movl %cs, %edx
	pushq %rdx
	leaq 2f(%rip), %rdx
	pushq %rdx
	\load
	iretq
2:	nop
	nop
	TF_OFF
	ret
.endm

SEQ seq_movss_iretq
	IRETQ_BEHIND movl %ecx, %ss

/* The same in compatibility mode, with POP SS and IRETD (a frame of three). */
	.data
	.p2align 3
seq_iretd_back:	.long seq_iretd_back_to
		.word 0x08
	.text
/*
 * IRETD to 3f with the frame's TF flipped, behind POP SS (popss 1) or MOV
 * SS from the copy of SS pushed above the frame (popss 0); back through
 * `back`.
 */
.macro IRETD_BEHIND_COMPAT back, popss
	COMPAT_ENTER
	cmpl $0, sc_tf
	je 2f
	pushfl
	orl $TF, (%esp)
	popfl
2:	nop
	pushl %ss
	pushfl
	xorl $TF, (%esp)
	pushl $SEL_K_CODE32
	pushl $3f
	.if \popss
	pushl %ss
	popl %ss
	.else
	movw 12(%esp), %ss
	.endif
	iretl
3:	nop
	nop
	pushfl
	andl $~TF, (%esp)
	popfl
	addl $4, %esp
	COMPAT_LEAVE \back
.endm

SEQ seq_popss_iretd_compat
	IRETD_BEHIND_COMPAT seq_iretd_back, 1

/*
 * The same behind MOV SS from memory (8E /2 with a memory operand), whose
 * length only a decoder knows: PUSHF and SYSCALL behind a RIP-relative
 * one, IRETQ behind one that loads the frame's own SS slot.
 */
	.data
	.p2align 1
movss_sel:	.word 0
	.text
.macro MOVSS_MEM_SHADOW
	cmpq $0, sc_tf(%rip)
	je 1f
	TF_ON
1:	nop
	movw %ss, movss_sel(%rip)
	movw movss_sel(%rip), %ss
.endm

SEQ seq_movss_mem_pushf
	MOVSS_MEM_SHADOW
	pushfq
	popq %rax
	nop
	TF_OFF
	ret

SEQ seq_movss_mem_syscall0
	MOVSS_MEM_SHADOW
	syscall
	nop
	TF_OFF
	ret

SEQ seq_movss_mem_iretq
	IRETQ_BEHIND movw 32(%rsp), %ss

/*
 * MOV SS from (%rax) (from = mem) or from AX (from = ax), set up by
 * `setup`, that may fault: #GP or #SS, no shadow (the skip stubs skip its
 * 2 bytes). From a non-canonical address, and loading movss_load.
 */
.macro MOVSS_FAULTS from, setup:vararg
	\setup
	cmpq $0, sc_tf(%rip)
	je 1f
	TF_ON
1:	nop
.ifc \from,ax
	movw %ax, %ss
.else
	movw (%rax), %ss
.endif
	nop
	nop
	TF_OFF
	ret
.endm

SEQ seq_movss_mem_gp
	MOVSS_FAULTS mem, movabsq $0x8000000000000000, %rax

	.data
	.p2align 1
	.globl movss_load
movss_load:	.word 0		/* the selector the next two load */
	.text
SEQ seq_movss_mem_sel
	MOVSS_FAULTS mem, leaq movss_load(%rip), %rax

SEQ seq_movss_reg_sel
	MOVSS_FAULTS ax, movzwl movss_load(%rip), %eax

/* IRETD behind MOV SS from the stack in compatibility mode: the selector comes through SS. */
	.data
	.p2align 3
seq_mem_iretd_back:	.long seq_mem_iretd_back_to
		.word 0x08
	.text
SEQ seq_movss_mem_iretd_compat
	IRETD_BEHIND_COMPAT seq_mem_iretd_back, 0

/*
 * A #GP behind MOV SS (a non-canonical operand), which runs in MOV SS's
 * step; gp_skip_stub records its frame's RFLAGS and returns past the
 * 2-byte instruction.
 */
SEQ seq_movss_gp
	movabsq $0x8000000000000000, %rax
	MOVSS_SHADOW
	movl (%rax), %edx
	nop
	nop
	TF_OFF
	ret

/* #UD, #SS and #GP: the vector, error code and RFLAGS of the frame; on past 2 bytes. */
	.globl ud_skip_stub, ss_skip_stub, gp_skip_stub
ud_skip_stub:
	pushq $0		/* #UD pushes no error code: as if it did */
	movq $6, skip_vector(%rip)
	jmp 1f
ss_skip_stub:
	movq $12, skip_vector(%rip)
	jmp 1f
gp_skip_stub:
	movq $13, skip_vector(%rip)
1:	pushq %rax
	movq 8(%rsp), %rax	/* error code, RIP, CS, then RFLAGS */
	movq %rax, skip_error(%rip)
	movq 32(%rsp), %rax
	movq %rax, skip_rflags(%rip)
	addq $2, 16(%rsp)
	popq %rax
	addq $8, %rsp
	iretq

/*
 * Behind MOV SS, an instruction certain to fault without a memory operand:
 * UD2 (#UD), HLT above CPL0 (#GP(0)); UD2 behind MOV SS from memory. The
 * skip stubs step over 2 bytes (HLT and the NOP after it).
 */
SEQ seq_movss_ud2
	MOVSS_SHADOW
	ud2
	nop
	TF_OFF
	ret

SEQ seq_movss_hlt
	MOVSS_SHADOW
	hlt
	nop
	nop
	TF_OFF
	ret

SEQ seq_movss_mem_ud2
	MOVSS_MEM_SHADOW
	ud2
	nop
	TF_OFF
	ret

/* STI's shadow, which holds the step trap on some CPUs (the lab's) as MOV SS's does. */
SEQ seq_sti_pushf
	pushfq
	cli
	sti
	pushfq
	popq %rax
	popfq
	ret

/* The same from CPL3 (run_user), back with SYSRET. */
SEQ seq_syscall3
	cmpq $0, sc_tf(%rip)
	je 1f
	TF_ON
1:	nop
	syscall
	nop
	TF_OFF
	ret

	.globl sc_entry3
sc_entry3:
	movq %r11, sc_r11(%rip)
	movq %rcx, sc_rcx(%rip)
	sysretq

/* INT3 with the guest's TF set; the #BP handler returns with IRETQ. */
SEQ seq_int3_tf
	TF_ON
	nop
	int3
	nop
	nop
	nop
	nop
	TF_OFF
	ret

/*
 * INT n for vectors whose exceptions push an error code: INT n never does.
 * ev_stub records the 5 words at RSP and returns with IRETQ as if there
 * were no error code (right for INT n).
 */
SEQ seq_intn_tf
	TF_ON
	nop
	int $13
	nop
	int $14
	nop
	int $17
	nop
	TF_OFF
	ret

	.globl ev_stub
ev_stub:
	pushq %rax
	pushq %rbx
	pushq %rcx
	movq ev_nframes(%rip), %rcx
	cmpq $8, %rcx
	jae 2f
	imulq $48, %rcx, %rbx
	leaq ev_frames(%rip), %rax
	addq %rax, %rbx
	.irp i, 0, 1, 2, 3, 4
	movq 24 + 8 * \i(%rsp), %rax
	movq %rax, 8 + 8 * \i(%rbx)
	.endr
2:	incq ev_nframes(%rip)
	popq %rcx
	popq %rbx
	popq %rax
	iretq

/*
 * An IRETQ that faults (#GP: its CS is beyond the GDT) with TF set in the
 * RFLAGS it did not load: the guest's TF must stay clear.
 */
SEQ seq_iret_fault
	movq %rsp, %rax
	pushq $0x10
	pushq %rax
	pushfq
	orq $TF, (%rsp)
	pushq $0xfff8
	leaq 2f(%rip), %rax
	pushq %rax
	movl $-1, %gs:CPU_EXC_VECTOR
1:	iretq
2:	ud2
3:	addq $40, %rsp
	nop
	nop
	nop
	ret
	.pushsection .ex_table, "a"
	.balign 8
	.quad 1b, 3b
	.popsection

/*
 * Ends a TF sequence whose faulting instructions at 1: and 3: resume at
 * 2: and at this macro (their exception-table fixups).
 */
.macro TF_TWO_FAULTS_END
4:	nop
	nop
	TF_OFF
	ret
	.pushsection .ex_table, "a"
	.balign 8
	.quad 1b, 2b
	.quad 3b, 4b
	.popsection
.endm

/*
 * With the guest's TF: #UD for LOCK CMP, a LOCK it does not take (the VMM
 * delivers that certain fault itself), and for the undefined 0F 04 behind
 * an F3 that repeats nothing, which the decoder rejects and KVM intercepts
 * and injects back. The frame holds TF, so single-stepping goes on after
 * the fixup's IRETQ.
 */
SEQ seq_ud_tf
	TF_ON
	nop
	movl $-1, %gs:CPU_EXC_VECTOR
1:	.byte 0xf0, 0x66, 0x81, 0x3c, 0x24, 0x34, 0x12	/* lock cmpw $0x1234, (%rsp) */
2:	nop
	movl $-1, %gs:CPU_EXC_VECTOR
3:	.byte 0xf3, 0x0f, 0x04
	TF_TWO_FAULTS_END

/*
 * With the guest's TF: instructions KVM runs itself and answers with a
 * fault it queues (RDPMC of a counter that does not exist: #GP; XSETBV:
 * #GP for clearing XCR0.x87, #UD where CR4.OSXSAVE is clear, as here). The
 * frame holds TF, so single-stepping goes on after the fixup's IRETQ.
 */
SEQ seq_gp_tf
	TF_ON
	nop
	movl $-1, %gs:CPU_EXC_VECTOR
	movl $0x12345, %ecx
1:	rdpmc
2:	nop
	movl $-1, %gs:CPU_EXC_VECTOR
	xorl %ecx, %ecx
	xorl %eax, %eax
	xorl %edx, %edx
3:	xsetbv
	TF_TWO_FAULTS_END

/*
 * With the guest's TF: UD2's fixup returns by IRETQ with RF and TF set in
 * its frame (a fault pushes RF), to a split lock. RF would suppress an
 * instruction breakpoint there, so that IRETQ must be stepped for the split
 * lock to be seen (issue 18 item 6).
 */
SEQ seq_iret_rf_tf
	TF_ON
	nop
	movl $-1, %gs:CPU_EXC_VECTOR
1:	ud2
2:	lock addl $1, gp_area + 62(%rip)
	nop
	lock addl $1, gp_area + 62(%rip)
	TF_OFF
	ret
	.pushsection .ex_table, "a"
	.balign 8
	.quad 1b, 2b
	.popsection

/* DR7.GD: MOV DR faults with #DB (BD), and the CPU clears GD for the handler. */
SEQ seq_dr7_gd
	nop
	movq %dr0, %rax
	nop
	ret

/* SYSCALL with EFER.SCE clear: #UD. */
	.globl try_syscall_ud
try_syscall_ud:
	movl $-1, %gs:CPU_EXC_VECTOR
1:	syscall
2:	ret
	.pushsection .ex_table, "a"
	.balign 8
	.quad 1b, 2b
	.popsection

/* HLT and MOV DR at CPL3: #GP. */
	.globl try_hlt, try_movdr
try_hlt:
	movl $-1, %gs:CPU_EXC_VECTOR
1:	hlt
2:	ret
	.pushsection .ex_table, "a"
	.balign 8
	.quad 1b, 2b
	.popsection
try_movdr:
	movl $-1, %gs:CPU_EXC_VECTOR
1:	movq %dr7, %rax
2:	ret
	.pushsection .ex_table, "a"
	.balign 8
	.quad 1b, 2b
	.popsection

/* A #UD handler whose first and third instructions are split locks. */
	.globl ud_split_stub
ud_split_stub:
	lock addl $1, gp_area + 62(%rip)
	nop
	lock addl $1, gp_area + 62(%rip)
	jmp *fw_exc_stubs + 6 * 8(%rip)

/* #DF: note it, then resume where df_resume_rsp says (a RET there). */
	.globl df_stub
df_stub:
	movq $1, df_hit(%rip)
	movq df_resume_rsp(%rip), %rsp
	ret

/* A non-canonical load whose #GP handler is non-canonical: #DF. */
	.globl seq_df
seq_df:
	movq %rsp, df_resume_rsp(%rip)
	movabsq $0x8000000000000000, %rax
	movq (%rax), %rax
	ret

	.section .note.GNU-stack, "", @progbits
