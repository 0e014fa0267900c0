/* SPDX-License-Identifier: MIT */
/*
 * The split-lock decoder (decode.c, Zydis glue). The input is the
 * instruction bytes, in a buffer of exactly their length, decoded in each
 * of 64-bit, 32-bit and 16-bit mode.
 *
 * Oracles:
 *  - decode_maybe_locked, the cheap filter, never says no to bytes that
 *    decode_insn accepts (its header's promise);
 *  - an accepted instruction is well formed: a known op, length within the
 *    input and DECODE_INSN_MAX, a 1/2/4/8/16-byte operand (16 exactly for
 *    CMPXCHG16B, only in 64-bit mode; 8 for CMPXCHG8B), 4- or 8-byte
 *    addressing in 64-bit mode and 2 or 4 elsewhere, a segment register,
 *    registers in range (RIP only as a base, in 64-bit mode), scale 1/2/4/8, the source kind each op
 *    takes, AH..BH only for byte operands, LOCK-prefixed unless XCHG, and
 *    the LOCK flag set exactly when an F0 byte is among its prefixes
 *    (REX bytes are prefixes only in 64-bit mode);
 *  - decoding depends on the instruction's own bytes only: the same
 *    answer from exactly `length` bytes, no answer from one byte fewer;
 *  - decode_rmw gives decode_insn's answer wherever decode_insn accepts,
 *    and beyond it only unlocked instructions other than XCHG.
 */
#include "fuzz.h"

#include "decode.h"

static bool is_prefix(enum decode_mode mode, uint8_t b)
{
	switch (b) {
	case 0xf0: case 0xf2: case 0xf3: case 0x2e: case 0x36: case 0x3e:
	case 0x26: case 0x64: case 0x65: case 0x66: case 0x67:
		return true;
	}
	return mode == DECODE_MODE_64 && (b & 0xf0) == 0x40;	/* REX */
}

static bool same(const struct decode_insn *a, const struct decode_insn *b)
{
	return a->op == b->op && a->length == b->length && a->size == b->size &&
	       a->mode == b->mode && a->addr_size == b->addr_size && a->seg == b->seg && a->base == b->base &&
	       a->index == b->index && a->scale == b->scale && a->disp == b->disp &&
	       a->src == b->src && a->src_reg == b->src_reg && a->src_high8 == b->src_high8 &&
	       a->imm == b->imm && a->locked_by_prefix == b->locked_by_prefix;
}

static void check_insn(const uint8_t *b, size_t len, const struct decode_insn *i)
{
	bool lock_byte = false;
	size_t p;

	FUZZ_CHECK((unsigned)i->op < DECODE_OP_COUNT && strcmp(decode_op_name(i->op), "?") != 0,
		   "op %d", (int)i->op);
	FUZZ_CHECK(i->length >= 1 && i->length <= len && i->length <= DECODE_INSN_MAX,
		   "length %u of %zu bytes", i->length, len);
	FUZZ_CHECK(i->size == 1 || i->size == 2 || i->size == 4 || i->size == 8 || i->size == 16,
		   "operand size %u", i->size);
	FUZZ_CHECK((i->size == 16) == (i->op == DECODE_CMPXCHG16B), "%s with a %u-byte operand",
		   decode_op_name(i->op), i->size);
	FUZZ_CHECK(i->op != DECODE_CMPXCHG8B || i->size == 8, "cmpxchg8b with %u bytes", i->size);
	FUZZ_CHECK(!(i->op == DECODE_BTS || i->op == DECODE_BTR || i->op == DECODE_BTC) || i->size >= 2,
		   "%s on a byte", decode_op_name(i->op));
	FUZZ_CHECK(i->size != 16 || i->mode == DECODE_MODE_64, "16-byte operand outside 64-bit mode");
	FUZZ_CHECK(i->mode == DECODE_MODE_64 ? i->addr_size == 4 || i->addr_size == 8
					 : i->addr_size == 2 || i->addr_size == 4,
		   "address size %u in mode %d", i->addr_size, (int)i->mode);
	FUZZ_CHECK((unsigned)i->seg <= DECODE_SEG_GS, "segment %d", (int)i->seg);
	FUZZ_CHECK(i->base != DECODE_REG_RIP || i->mode == DECODE_MODE_64, "RIP-relative outside 64-bit mode");
	FUZZ_CHECK(i->base == DECODE_REG_NONE || i->base == DECODE_REG_RIP ||
		   (i->base >= 0 && i->base < 16), "base %d", i->base);
	FUZZ_CHECK(i->index == DECODE_REG_NONE || (i->index >= 0 && i->index < 16), "index %d", i->index);
	FUZZ_CHECK(i->base != DECODE_REG_RIP || i->index == DECODE_REG_NONE, "RIP-relative with an index");
	FUZZ_CHECK(i->scale == 1 || i->scale == 2 || i->scale == 4 || i->scale == 8,
		   "scale %u", i->scale);

	switch (i->op) {
	case DECODE_NOT: case DECODE_NEG: case DECODE_INC: case DECODE_DEC:
	case DECODE_CMPXCHG8B: case DECODE_CMPXCHG16B:
		FUZZ_CHECK(i->src == DECODE_SRC_NONE, "%s with a source", decode_op_name(i->op));
		break;
	case DECODE_XCHG: case DECODE_XADD: case DECODE_CMPXCHG:
		FUZZ_CHECK(i->src == DECODE_SRC_REG, "%s without a register source", decode_op_name(i->op));
		break;
	default:
		FUZZ_CHECK(i->src == DECODE_SRC_REG || i->src == DECODE_SRC_IMM, "%s without a source",
			   decode_op_name(i->op));
		break;
	}
	if (i->src == DECODE_SRC_REG)
		FUZZ_CHECK(i->src_reg >= 0 && i->src_reg < 16, "source register %d", i->src_reg);
	if (i->src_high8)
		FUZZ_CHECK(i->src == DECODE_SRC_REG && i->src_reg < 4 && i->size == 1,
			   "high-byte source %d for a %u-byte operand", i->src_reg, i->size);
	FUZZ_CHECK(i->locked_by_prefix || i->op == DECODE_XCHG, "%s without LOCK", decode_op_name(i->op));

	for (p = 0; p < i->length && is_prefix(i->mode, b[p]); p++)
		lock_byte |= b[p] == 0xf0;
	FUZZ_CHECK(p < i->length, "the instruction is all prefixes");
	FUZZ_CHECK(lock_byte == i->locked_by_prefix, "LOCK flag %d, F0 among the prefixes %d",
		   i->locked_by_prefix, lock_byte);
}

static void one_mode(enum decode_mode mode, const uint8_t *data, size_t size)
{
	struct decode_insn a, b, r;
	bool maybe;
	uint8_t *exact;
	int rmw;

	maybe = decode_maybe_locked(mode, data, size);
	memset(&a, 0, sizeof(a));
	memset(&r, 0, sizeof(r));
	rmw = decode_rmw(mode, data, size, &r);
	if (decode_insn(mode, data, size, &a) != 0) {
		FUZZ_CHECK(rmw != 0 || (!r.locked_by_prefix && r.op != DECODE_XCHG),
			   "decode_rmw accepts a locked %s that decode_insn turns down", decode_op_name(r.op));
		return;
	}
	FUZZ_CHECK(rmw == 0 && same(&a, &r), "decode_rmw differs from decode_insn on a locked RMW");
	FUZZ_CHECK(a.mode == mode, "decoded in mode %d, asked %d", (int)a.mode, (int)mode);
	FUZZ_CHECK(maybe, "decode_maybe_locked said no to a locked RMW (%s, %u bytes, mode %d)",
		   decode_op_name(a.op), a.length, (int)mode);
	check_insn(data, size, &a);

	/* The instruction alone, in a buffer of its own size, decodes the same. */
	exact = malloc(a.length);
	FUZZ_SETUP(exact);
	memcpy(exact, data, a.length);
	memset(&b, 0x55, sizeof(b));
	FUZZ_CHECK(decode_insn(mode, exact, a.length, &b) == 0 && same(&a, &b),
		   "decoding %u bytes alone differs", a.length);
	FUZZ_CHECK(decode_maybe_locked(mode, exact, a.length), "decode_maybe_locked depends on trailing bytes");
	FUZZ_CHECK(decode_insn(mode, exact, a.length - 1, &b) == DECODE_TRUNCATED,
		   "%u bytes decode from %u, or are not called truncated", a.length, a.length - 1);
	free(exact);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 64)
		return 0;
	one_mode(DECODE_MODE_64, data, size);
	one_mode(DECODE_MODE_32, data, size);
	one_mode(DECODE_MODE_16, data, size);
	return 0;
}
