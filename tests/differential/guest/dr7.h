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
#endif
