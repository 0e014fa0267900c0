/* SPDX-License-Identifier: MIT */
/* Runtime-internal glue between boot.c, desc.c and entry.S. */
#ifndef FW_INTERNAL_H
#define FW_INTERNAL_H

#ifndef __ASSEMBLER__
#include <stdbool.h>
#include <stdint.h>

#include "percpu.h"

/* entry.S */
extern const uint64_t fw_exc_stubs[32];
/* ud2 instructions at CPL3 that fw_exception treats as requests. */
extern char fw_user_return_insn[];
extern char fw_console_insn[];
__attribute__((noreturn)) void fw_user_return(uint64_t value);
void fw_user_console_write(const char *s, uint64_t len);

/* desc.c: own GDT, TSS, segments, GS base and IDT for this vCPU. */
void desc_init(struct cpu *c);

/* tap.c */
void tap_begin(void);

/* console.c: lines from different CPUs go out one at a time (pvh.c). */
extern bool fw_console_serialize;

/* boot.c calls it after "TAP version 13"; pvh.c has the real one. */
void fw_boot_diag(void);

void fw_start(struct boot_info *bi, uint64_t entry_rsp);

#endif /* __ASSEMBLER__ */
#endif
