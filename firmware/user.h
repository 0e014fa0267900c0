/* SPDX-License-Identifier: MIT */
#ifndef FW_USER_H
#define FW_USER_H

/* run_user flags */
#define RUN_USER_AC  0x1  /* RFLAGS.AC=1 at CPL3: alignment checks on */

#ifndef __ASSEMBLER__
#include <stdint.h>

/*
 * Calls fn(arg) at CPL3 on this vCPU's user stack and returns its return
 * value, back at CPL0 with the caller's RFLAGS. fn must return (it comes
 * back through a DPL3 gate); it can use ASM_TRY, the *_safe helpers and
 * printf, but not port I/O. Not reentrant: call it from CPL0 only.
 */
uint64_t run_user(uint64_t (*fn)(uint64_t), uint64_t arg, unsigned flags);
/*
 * run_user at the CPL of the 64-bit code selector cs (1-3; RPL = DPL),
 * with the stack selector ss of that CPL: for guests that have such
 * segments in their own GDT (the runtime's has DPL0 and DPL3 only).
 */
uint64_t run_ring(uint64_t (*fn)(uint64_t), uint64_t arg, unsigned flags, uint16_t cs,
		  uint16_t ss);

#endif /* __ASSEMBLER__ */
#endif
