/* SPDX-License-Identifier: MIT */
#include "emulate.h"

#include <string.h>

/* CF PF AF ZF SF OF: the flags these instructions may write. */
#define ARITH_FLAGS 0x8d5ull

/* struct kvm_regs orders registers its own way; x86 numbers them so. */
static __u64 *gpr(struct kvm_regs *r, int reg)
{
	__u64 *const gprs[16] = {
		&r->rax, &r->rcx, &r->rdx, &r->rbx, &r->rsp, &r->rbp, &r->rsi, &r->rdi,
		&r->r8, &r->r9, &r->r10, &r->r11, &r->r12, &r->r13, &r->r14, &r->r15,
	};

	return reg >= 0 && reg < 16 ? gprs[reg] : NULL;
}

uint64_t sl_reg_get(const struct kvm_regs *r, int reg)
{
	const __u64 *p = gpr((struct kvm_regs *)r, reg);

	if (reg == SL_REG_RIP)
		return r->rip;
	return p ? *p : 0;
}

void sl_reg_set(struct kvm_regs *r, int reg, uint64_t v)
{
	__u64 *p = gpr(r, reg);

	if (p)
		*p = v;
}

/* A register source of `size` bytes: AH..BH are bits 15:8 of RAX..RBX. */
static uint64_t src_value(const struct sl_insn *i, const struct kvm_regs *r)
{
	if (i->src == SL_SRC_IMM)
		return (uint64_t)i->imm;
	if (i->src_high8)
		return (sl_reg_get(r, i->src_reg) >> 8) & 0xff;
	return sl_reg_get(r, i->src_reg);
}

/* Writes as the CPU does: 32-bit results zero-extend, 8/16-bit merge. */
static void reg_write_sized(struct kvm_regs *r, int reg, bool high8, unsigned size, uint64_t v)
{
	uint64_t old;

	if (high8) {
		old = sl_reg_get(r, reg);
		sl_reg_set(r, reg, (old & ~0xff00ull) | ((v & 0xff) << 8));
		return;
	}
	old = sl_reg_get(r, reg);
	switch (size) {
	case 1: sl_reg_set(r, reg, (old & ~0xffull) | (v & 0xff)); break;
	case 2: sl_reg_set(r, reg, (old & ~0xffffull) | (v & 0xffff)); break;
	case 4: sl_reg_set(r, reg, v & 0xffffffffull); break;
	default: sl_reg_set(r, reg, v); break;
	}
}

static int64_t sign_extend(uint64_t v, unsigned bytes)
{
	unsigned shift = 64 - 8 * bytes;

	return (int64_t)(v << shift) >> shift;
}

struct sl_access sl_operand(const struct sl_insn *i, const struct kvm_regs *r,
			    uint64_t fs_base, uint64_t gs_base)
{
	uint64_t ea = (uint64_t)i->disp;
	struct sl_access a = { .size = i->size };

	if (i->base == SL_REG_RIP)
		ea += r->rip + i->length;
	else if (i->base != SL_REG_NONE)
		ea += sl_reg_get(r, i->base);
	if (i->index != SL_REG_NONE)
		ea += sl_reg_get(r, i->index) * i->scale;
	if (i->addr_size == 4)
		ea &= 0xffffffffull;
	/* Register bit offsets are signed and reach beyond the operand. */
	if ((i->op == SL_BTS || i->op == SL_BTR || i->op == SL_BTC) && i->src == SL_SRC_REG) {
		int64_t bit = sign_extend(src_value(i, r), i->size);

		/*
		 * floor(bit / (8 * size)) * size, without negating: a guest may
		 * hand in INT64_MIN. The size is a power of two.
		 */
		ea += (uint64_t)((bit >> 3) & -(int64_t)i->size);
	}
	if (i->seg == SL_SEG_FS)
		ea += fs_base;
	else if (i->seg == SL_SEG_GS)
		ea += gs_base;
	a.la = ea;
	return a;
}

bool sl_crosses_line(uint64_t la, unsigned size)
{
	return size > 1 && (la % SL_CACHE_LINE) + size > SL_CACHE_LINE;
}

bool sl_is_split_lock(const struct sl_insn *i, const struct sl_access *a)
{
	if (i->op == SL_CMPXCHG16B && (a->la & 15))
		return false;
	return sl_crosses_line(a->la, a->size);
}

/*
 * Runs `insn` with the guest's arithmetic flags loaded and leaves the host
 * flags it produced in `fl`. The stack is moved below the red zone, which
 * the compiler may be using, before pushing anything.
 */
#define WITH_FLAGS(insn)                         \
	"lea -128(%%rsp), %%rsp\n\t"             \
	"pushfq\n\t"                             \
	"andq $~0x8d5, (%%rsp)\n\t"              \
	"orq %[fl], (%%rsp)\n\t"                 \
	"popfq\n\t"                              \
	insn "\n\t"                              \
	"pushfq\n\t"                             \
	"popq %[fl]\n\t"                         \
	"lea 128(%%rsp), %%rsp"

/* Two-operand ops: memory op= source (add ... xchg, xadd, bt*). */
#define BINARY(NAME, OP)                                                          \
	static uint64_t NAME(uint8_t *m, unsigned size, uint64_t src, uint64_t *fl)     \
	{                                                                         \
		switch (size) {                                                   \
		case 1: asm volatile(WITH_FLAGS(OP "b %b[s], (%[m])")                \
				     : [fl] "+r"(*fl), [s] "+q"(src) : [m] "r"(m) : "memory", "cc"); break; \
		case 2: asm volatile(WITH_FLAGS(OP "w %w[s], (%[m])")                \
				     : [fl] "+r"(*fl), [s] "+r"(src) : [m] "r"(m) : "memory", "cc"); break; \
		case 4: asm volatile(WITH_FLAGS(OP "l %k[s], (%[m])")                \
				     : [fl] "+r"(*fl), [s] "+r"(src) : [m] "r"(m) : "memory", "cc"); break; \
		default: asm volatile(WITH_FLAGS(OP "q %q[s], (%[m])")               \
				      : [fl] "+r"(*fl), [s] "+r"(src) : [m] "r"(m) : "memory", "cc"); break; \
		}                                                                 \
		return src;                                                       \
	}

#define UNARY(NAME, OP)                                                           \
	static void NAME(uint8_t *m, unsigned size, uint64_t *fl)                 \
	{                                                                         \
		switch (size) {                                                   \
		case 1: asm volatile(WITH_FLAGS(OP "b (%[m])") : [fl] "+r"(*fl) : [m] "r"(m) : "memory", "cc"); break; \
		case 2: asm volatile(WITH_FLAGS(OP "w (%[m])") : [fl] "+r"(*fl) : [m] "r"(m) : "memory", "cc"); break; \
		case 4: asm volatile(WITH_FLAGS(OP "l (%[m])") : [fl] "+r"(*fl) : [m] "r"(m) : "memory", "cc"); break; \
		default: asm volatile(WITH_FLAGS(OP "q (%[m])") : [fl] "+r"(*fl) : [m] "r"(m) : "memory", "cc"); break; \
		}                                                                 \
	}

BINARY(op_add, "add")
BINARY(op_adc, "adc")
BINARY(op_and, "and")
BINARY(op_or, "or")
BINARY(op_sbb, "sbb")
BINARY(op_sub, "sub")
BINARY(op_xor, "xor")
BINARY(op_xchg, "xchg")
BINARY(op_xadd, "xadd")
UNARY(op_not, "not")
UNARY(op_neg, "neg")
UNARY(op_inc, "inc")
UNARY(op_dec, "dec")

/* Bit tests exist for 16, 32 and 64 bits; the offset is already in range. */
#define BITOP(NAME, OP)                                                           \
	static void NAME(uint8_t *m, unsigned size, uint64_t bit, uint64_t *fl)   \
	{                                                                         \
		switch (size) {                                                   \
		case 2: asm volatile(WITH_FLAGS(OP "w %w[b], (%[m])")                \
				     : [fl] "+r"(*fl) : [m] "r"(m), [b] "r"(bit) : "memory", "cc"); break; \
		case 4: asm volatile(WITH_FLAGS(OP "l %k[b], (%[m])")                \
				     : [fl] "+r"(*fl) : [m] "r"(m), [b] "r"(bit) : "memory", "cc"); break; \
		default: asm volatile(WITH_FLAGS(OP "q %q[b], (%[m])")               \
				      : [fl] "+r"(*fl) : [m] "r"(m), [b] "r"(bit) : "memory", "cc"); break; \
		}                                                                 \
	}

BITOP(op_bts, "bts")
BITOP(op_btr, "btr")
BITOP(op_btc, "btc")

static uint64_t op_cmpxchg(uint8_t *m, unsigned size, uint64_t src, uint64_t acc, uint64_t *fl)
{
	switch (size) {
	case 1: asm volatile(WITH_FLAGS("cmpxchgb %b[s], (%[m])")
			     : [fl] "+r"(*fl), "+a"(acc) : [m] "r"(m), [s] "q"(src) : "memory", "cc"); break;
	case 2: asm volatile(WITH_FLAGS("cmpxchgw %w[s], (%[m])")
			     : [fl] "+r"(*fl), "+a"(acc) : [m] "r"(m), [s] "r"(src) : "memory", "cc"); break;
	case 4: asm volatile(WITH_FLAGS("cmpxchgl %k[s], (%[m])")
			     : [fl] "+r"(*fl), "+a"(acc) : [m] "r"(m), [s] "r"(src) : "memory", "cc"); break;
	default: asm volatile(WITH_FLAGS("cmpxchgq %q[s], (%[m])")
			      : [fl] "+r"(*fl), "+a"(acc) : [m] "r"(m), [s] "r"(src) : "memory", "cc"); break;
	}
	return acc;
}

static void op_cmpxchg8b(uint8_t *m, uint64_t *a, uint64_t *d, uint64_t b, uint64_t c, uint64_t *fl)
{
	uint32_t eax = (uint32_t)*a, edx = (uint32_t)*d;

	asm volatile(WITH_FLAGS("cmpxchg8b (%[m])")
		     : [fl] "+r"(*fl), "+a"(eax), "+d"(edx)
		     : [m] "r"(m), "b"((uint32_t)b), "c"((uint32_t)c) : "memory", "cc");
	*a = eax;
	*d = edx;
}

static void op_cmpxchg16b(uint8_t *m, uint64_t *a, uint64_t *d, uint64_t b, uint64_t c, uint64_t *fl)
{
	asm volatile(WITH_FLAGS("cmpxchg16b (%[m])")
		     : [fl] "+r"(*fl), "+a"(*a), "+d"(*d)
		     : [m] "r"(m), "b"(b), "c"(c) : "memory", "cc");
}

static void execute_cmpxchg_wide(const struct sl_insn *i, struct kvm_regs *r, uint8_t *mem,
				 uint64_t *fl)
{
	uint64_t a = r->rax, d = r->rdx;

	if (i->op == SL_CMPXCHG8B) {
		op_cmpxchg8b(mem, &a, &d, r->rbx, r->rcx, fl);
		/* Like any 32-bit register write, a failed compare zero-extends. */
		if (!(*fl & (1u << 6))) {
			r->rax = a;
			r->rdx = d;
		}
	} else {
		op_cmpxchg16b(mem, &a, &d, r->rbx, r->rcx, fl);
		r->rax = a;
		r->rdx = d;
	}
}

void sl_execute(const struct sl_insn *i, struct kvm_regs *r, uint8_t *mem)
{
	uint64_t fl = r->rflags & ARITH_FLAGS;
	uint64_t src = src_value(i, r), out;

	switch (i->op) {
	case SL_ADD: op_add(mem, i->size, src, &fl); break;
	case SL_ADC: op_adc(mem, i->size, src, &fl); break;
	case SL_AND: op_and(mem, i->size, src, &fl); break;
	case SL_OR: op_or(mem, i->size, src, &fl); break;
	case SL_SBB: op_sbb(mem, i->size, src, &fl); break;
	case SL_SUB: op_sub(mem, i->size, src, &fl); break;
	case SL_XOR: op_xor(mem, i->size, src, &fl); break;
	case SL_NOT: op_not(mem, i->size, &fl); break;
	case SL_NEG: op_neg(mem, i->size, &fl); break;
	case SL_INC: op_inc(mem, i->size, &fl); break;
	case SL_DEC: op_dec(mem, i->size, &fl); break;
	case SL_XCHG:
	case SL_XADD:
		out = i->op == SL_XCHG ? op_xchg(mem, i->size, src, &fl)
				       : op_xadd(mem, i->size, src, &fl);
		reg_write_sized(r, i->src_reg, i->src_high8, i->size, out);
		break;
	case SL_CMPXCHG:
		out = op_cmpxchg(mem, i->size, src, r->rax, &fl);
		/*
		 * The accumulator is written only when the compare fails, so a
		 * successful 32-bit cmpxchg leaves RAX's upper half alone.
		 */
		if (!(fl & (1u << 6)))
			reg_write_sized(r, 0, false, i->size, out);
		break;
	case SL_CMPXCHG8B:
	case SL_CMPXCHG16B:
		execute_cmpxchg_wide(i, r, mem, &fl);
		break;
	case SL_BTS: op_bts(mem, i->size, src & (8ull * i->size - 1), &fl); break;
	case SL_BTR: op_btr(mem, i->size, src & (8ull * i->size - 1), &fl); break;
	case SL_BTC: op_btc(mem, i->size, src & (8ull * i->size - 1), &fl); break;
	case SL_OP_COUNT: break;
	}
	r->rflags = (r->rflags & ~ARITH_FLAGS) | (fl & ARITH_FLAGS);
	r->rip += i->length;
}
