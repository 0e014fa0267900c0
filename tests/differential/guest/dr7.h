/* SPDX-License-Identifier: MIT */
#ifndef DIFF_DR7_H
#define DIFF_DR7_H
/*
 * For exec.S's and exec_legacy.S's #DB recorders: DR7's value in the
 * 32-bit register r becomes a mask with bit n set where breakpoint n is
 * enabled (L or G), t a scratch register. As the SDM tells a handler
 * (vol. 3 17.2.3), only those B0-B3 of DR6 are kept: the others "may or
 * may not" be set, and on KVM they depend on whether the guest's DR0-3
 * were loaded.
 */
.macro DR7_ENABLED r, t
	movl \r, \t
	shrl $1, \t
	orl \t, \r
	andl $0x55, \r		/* bit 2n: L or G of breakpoint n */
	movl \r, \t
	shrl $1, \t
	orl \t, \r
	andl $0x33, \r
	movl \r, \t
	shrl $2, \t
	orl \t, \r
	andl $0x0f, \r		/* bit n: breakpoint n enabled */
.endm

/*
 * exec_legacy.S's recorders (32-bit and real mode): dbg_log's entry at
 * %ebx, 8 bytes a field: the vector (in %eax), (E)IP, DR6 with only the
 * enabled breakpoints' B0-B3, (E)FLAGS and CS. \ld loads a field of the
 * frame into %edx (movl, or movzwl from a 16-bit frame) from the operands
 * ip, fl and cs name. Clobbers %edx, %esi and %edi.
 */
.macro DBG_ENTRY ld, ip, fl, cs
	movl %eax, 0(%ebx)
	movl $0, 4(%ebx)
	\ld \ip, %edx
	movl %edx, 8(%ebx)
	movl $0, 12(%ebx)
	movl %dr7, %esi
	DR7_ENABLED %esi, %edi
	orl $~0xf, %esi
	movl %dr6, %edx
	andl %esi, %edx
	movl %edx, 16(%ebx)
	movl $0, 20(%ebx)
	\ld \fl, %edx
	movl %edx, 24(%ebx)
	movl $0, 28(%ebx)
	\ld \cs, %edx
	movl %edx, 32(%ebx)
	movl $0, 36(%ebx)
.endm
#endif
