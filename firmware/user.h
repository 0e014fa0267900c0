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

#endif /* __ASSEMBLER__ */
#endif
