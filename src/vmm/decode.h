/* SPDX-License-Identifier: MIT */
/*
 * Recognising split-lock candidates: locked read-modify-write instructions
 * with a memory operand, decoded by Zydis in the mode the CPU is in. Pure
 * code.
 */
#ifndef VMM_DECODE_H
#define VMM_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DECODE_INSN_MAX 15      /* longest x86 instruction */

enum decode_op {
	DECODE_ADD, DECODE_ADC, DECODE_AND, DECODE_OR, DECODE_SBB, DECODE_SUB, DECODE_XOR,
	DECODE_NOT, DECODE_NEG, DECODE_INC, DECODE_DEC,
	DECODE_XCHG, DECODE_XADD, DECODE_CMPXCHG, DECODE_CMPXCHG8B, DECODE_CMPXCHG16B,
	DECODE_BTS, DECODE_BTR, DECODE_BTC,
	DECODE_OP_COUNT,
};

/* General registers by their x86 encoding: 0 RAX ... 15 R15. */
#define DECODE_REG_NONE  (-1)
#define DECODE_REG_RIP   16

/*
 * The code size the CPU decodes in: 64-bit mode (EFER.LMA and CS.L), else
 * CS.D's 32 or 16 bits (compatibility mode, protected mode; real and
 * virtual-8086 mode are 16). It sets the default operand and address
 * sizes, and whether 0x40-0x4f are REX prefixes or INC/DEC.
 */
enum decode_mode { DECODE_MODE_64, DECODE_MODE_32, DECODE_MODE_16 };

/* Segment registers by their x86 encoding. */
enum decode_seg { DECODE_SEG_ES, DECODE_SEG_CS, DECODE_SEG_SS, DECODE_SEG_DS, DECODE_SEG_FS, DECODE_SEG_GS };

enum decode_src { DECODE_SRC_NONE, DECODE_SRC_REG, DECODE_SRC_IMM };

struct decode_insn {
	enum decode_op op;
	unsigned length;        /* instruction bytes */
	unsigned size;          /* memory operand bytes: 1, 2, 4, 8 or 16 */
	enum decode_mode mode;      /* the mode it was decoded in */
	unsigned addr_size;     /* 2, 4 or 8 */
	enum decode_seg seg;        /* the override, or DS or SS by default */
	int base, index;        /* DECODE_REG_* or 0-15 */
	unsigned scale;
	int64_t disp;
	enum decode_src src;
	int src_reg;            /* 0-15, the enclosing 64-bit register */
	bool src_high8;         /* AH, CH, DH, BH: bits 15:8 of src_reg */
	int64_t imm;
	bool locked_by_prefix;  /* false: XCHG, locked without one */
};

/*
 * Cheap look at raw bytes, to spare a full decode for the many instructions
 * a single-stepped guest runs: false means they cannot start a locked RMW.
 */
bool decode_maybe_locked(enum decode_mode mode, const uint8_t *b, size_t len);
/*
 * 0 and *out for a locked RMW with a memory operand in `mode`;
 * DECODE_TRUNCATED when the bytes end before the instruction does,
 * DECODE_TOO_LONG past 15 bytes; -1 otherwise (other instructions, and
 * what the CPU answers with #UD).
 * Thread-safe.
 */
#define DECODE_TRUNCATED (-2)
int decode_insn(enum decode_mode mode, const uint8_t *b, size_t len, struct decode_insn *out);
/*
 * The same for those instructions with or without LOCK (CMPXCHG16B %gs:...,
 * as Linux's per-CPU operations run it): what the VMM completes where KVM
 * cannot run it (gap.c), not a split-lock candidate. Thread-safe.
 */
int decode_rmw(enum decode_mode mode, const uint8_t *b, size_t len, struct decode_insn *out);
const char *decode_op_name(enum decode_op op);
/*
 * Length of any instruction at b, from decode_view() and so its memo
 * (every step asks): 0 where the bytes end first or Zydis cannot decode
 * them (what the CPU answers with #UD among them). *falls_through: what
 * runs next, unless an exception intervenes, is the instruction right
 * behind it in memory; false for branches, calls, returns, INT n, SYSCALL,
 * SYSRET, transactions and VMX/SGX leaves. Thread-safe.
 */
unsigned decode_length(enum decode_mode mode, const uint8_t *b, size_t len, bool *falls_through);
/*
 * LOCK on an instruction that takes none, or on one whose destination is a
 * register: #UD (SDM vol. 2 "LOCK"; APM vol. 3 1.2.5), a decode fault that
 * comes before any fault of the instruction's own. true only where every
 * byte of the instruction is in b (so that no fetch fault comes first) and
 * it is no longer than 15 bytes; never for MOV to or from a control
 * register, which AMD's CPUs take with LOCK as CR8. Thread-safe.
 */
bool decode_lock_faults(enum decode_mode mode, const uint8_t *b, size_t len);
/*
 * Where the branch at ip can complete, from its bytes alone. A direct one:
 * a relative JMP or CALL at its target; a conditional one (Jcc, LOOPcc,
 * JCXZ, XBEGIN) there or behind itself; JMP or CALL far direct at the
 * pointer's offset (far_sel its selector: a call gate's target is the
 * caller's to add). An indirect JMP or CALL, or a RET: where it reads its
 * target (from), for the caller to read. Offsets in CS, as RIP holds them.
 */
enum { DECODE_FROM_REG, DECODE_FROM_MEM, DECODE_FROM_STACK };
struct decode_branch {
	unsigned n;             /* direct: targets in to[] (at most 2) */
	uint64_t to[2];
	uint16_t far_sel;       /* direct far: the pointer's selector */
	int from;               /* indirect or RET: DECODE_FROM_*; else -1 */
	int reg;                /* DECODE_FROM_REG: 0-15 */
	struct decode_insn mem; /* DECODE_FROM_MEM, as decode_access() gives it */
	unsigned size;          /* the offset's bytes */
	bool far;               /* a far branch; indirect: its selector right after the offset */
};
/*
 * false (n 0, from -1) for any other instruction, for a far indirect one
 * in 64-bit mode, and for near branches with an operand-size prefix in
 * 64-bit mode (AMD and Intel differ there). Thread-safe.
 */
bool decode_branch(enum decode_mode mode, const uint8_t *b, size_t len, uint64_t ip,
		   struct decode_branch *out);
/*
 * The first explicit memory operand of any instruction (LEA's is no
 * access), in out's length, size, mode, addr_size, seg, base, index, scale
 * and disp, and whether it is written: 0, or -1 where there is none this
 * can describe (sizes other than 1, 2, 4, 8 or 16 bytes among them).
 * *plain (may be NULL): an integer instruction whose only possible fault
 * before its access is none (MOV, ADD, CMP, shifts, CMOVcc, SETcc ...: no
 * x87 or SIMD state, no stack, no lock, no string, no bit offset that
 * moves the address). For predicting the fault an access will take.
 * Thread-safe.
 */
int decode_access(enum decode_mode mode, const uint8_t *b, size_t len, struct decode_insn *out,
		     bool *write, bool *plain);

/*
 * Any instruction as Zydis decodes it, for tables keyed on its mnemonic
 * (step.c's classifications): no guest byte is matched by hand.
 */
enum decode_opnd { DECODE_OPND_NONE, DECODE_OPND_GPR, DECODE_OPND_SEG, DECODE_OPND_CR,
		   DECODE_OPND_DR, DECODE_OPND_MEM, DECODE_OPND_IMM, DECODE_OPND_PTR,
		   DECODE_OPND_OTHER };
struct decode_view {
	int mnemonic;           /* a ZydisMnemonic */
	unsigned length;
	unsigned opsize;        /* operand width in bytes */
	unsigned prefixes;      /* legacy and REX prefix bytes (not a mandatory one) */
	unsigned osz;           /* of them operand-size (0x66) */
	bool rex, rex_w;        /* a REX prefix that counts (64-bit mode), its W */
	bool rep;               /* F2/F3 on a string instruction: it repeats */
	bool far;               /* a far branch */
	bool falls;             /* what runs next is right behind it (decode_length()) */
	unsigned operands;      /* explicit operands, the first two in op[] */
	struct {
		enum decode_opnd kind;
		int reg;        /* GPR 0-15 (the enclosing 64-bit one); SEG, CR, DR: its number */
		int64_t imm;    /* IMM: the value (sign-extended where signed); PTR: the offset */
		uint16_t sel;   /* PTR: the selector */
	} op[2];
};
/*
 * 0 and *out; DECODE_TRUNCATED where the bytes end first; -1 for what the
 * CPU answers with #UD (and DECODE_TOO_LONG past 15 bytes: #GP).
 * Thread-safe.
 */
#define DECODE_TOO_LONG (-3)
int decode_view(enum decode_mode mode, const uint8_t *b, size_t len, struct decode_view *out);

#endif
