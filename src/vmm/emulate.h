/* SPDX-License-Identifier: MIT */
/*
 * Performing a locked read-modify-write for the guest, with exactly the
 * architectural result: memory, destination registers, RFLAGS, RIP. The
 * operation runs on the host CPU itself, on an aligned private copy of the
 * operand, so results (undefined flags included) are those of a real CPU,
 * and the host never makes a split lock of its own. Pure code: the caller
 * copies the bytes in and out with the other vCPUs paused.
 */
#ifndef VMM_EMULATE_H
#define VMM_EMULATE_H

#include <stdbool.h>
#include <stdint.h>

#include <linux/kvm.h>

#include "decode.h"

#define SL_CACHE_LINE 64

/* The bytes an instruction reads and writes: linear address and size. */
struct sl_access {
	uint64_t la;
	unsigned size;
};

uint64_t sl_reg_get(const struct kvm_regs *r, int reg);
void sl_reg_set(struct kvm_regs *r, int reg, uint64_t v);

/*
 * Where `i` touches memory, given the registers and FS/GS bases. For BTS,
 * BTR and BTC with a register bit offset that is not the operand itself but
 * the word the offset selects, as on the CPU.
 */
struct sl_access sl_operand(const struct sl_insn *i, const struct kvm_regs *r,
			    uint64_t fs_base, uint64_t gs_base);
/* The split-lock rule: the access spans two cache lines. */
bool sl_crosses_line(uint64_t la, unsigned size);
/*
 * Whether i at a is a split lock: it crosses a line and the CPU would get
 * that far (a misaligned CMPXCHG16B raises #GP before any lock).
 */
bool sl_is_split_lock(const struct sl_insn *i, const struct sl_access *a);

/*
 * Performs i on `mem` (its sl_operand() bytes, in a 16-byte aligned
 * buffer) and updates r: destination registers, RFLAGS and RIP.
 */
void sl_execute(const struct sl_insn *i, struct kvm_regs *r, uint8_t *mem);

#endif
