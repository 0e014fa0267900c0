/* SPDX-License-Identifier: MIT */
#include "decode.h"
#include "array_size.h"

#include <pthread.h>
#include <string.h>

#include <Zydis/Utils.h>
#include <Zydis/Zydis.h>

static const struct {
	ZydisMnemonic mnemonic;
	enum decode_op op;
	const char *name;
} ops[] = {
	{ ZYDIS_MNEMONIC_ADD, DECODE_ADD, "add" },
	{ ZYDIS_MNEMONIC_ADC, DECODE_ADC, "adc" },
	{ ZYDIS_MNEMONIC_AND, DECODE_AND, "and" },
	{ ZYDIS_MNEMONIC_OR, DECODE_OR, "or" },
	{ ZYDIS_MNEMONIC_SBB, DECODE_SBB, "sbb" },
	{ ZYDIS_MNEMONIC_SUB, DECODE_SUB, "sub" },
	{ ZYDIS_MNEMONIC_XOR, DECODE_XOR, "xor" },
	{ ZYDIS_MNEMONIC_NOT, DECODE_NOT, "not" },
	{ ZYDIS_MNEMONIC_NEG, DECODE_NEG, "neg" },
	{ ZYDIS_MNEMONIC_INC, DECODE_INC, "inc" },
	{ ZYDIS_MNEMONIC_DEC, DECODE_DEC, "dec" },
	{ ZYDIS_MNEMONIC_XCHG, DECODE_XCHG, "xchg" },
	{ ZYDIS_MNEMONIC_XADD, DECODE_XADD, "xadd" },
	{ ZYDIS_MNEMONIC_CMPXCHG, DECODE_CMPXCHG, "cmpxchg" },
	{ ZYDIS_MNEMONIC_CMPXCHG8B, DECODE_CMPXCHG8B, "cmpxchg8b" },
	{ ZYDIS_MNEMONIC_CMPXCHG16B, DECODE_CMPXCHG16B, "cmpxchg16b" },
	{ ZYDIS_MNEMONIC_BTS, DECODE_BTS, "bts" },
	{ ZYDIS_MNEMONIC_BTR, DECODE_BTR, "btr" },
	{ ZYDIS_MNEMONIC_BTC, DECODE_BTC, "btc" },
};

const char *decode_op_name(enum decode_op op)
{
	for (size_t i = 0; i < ARRAY_SIZE(ops); i++)
		if (ops[i].op == op)
			return ops[i].name;
	return "?";
}

/*
 * Legacy prefixes and, in 64-bit mode only, REX bytes, in any order: a REX
 * that is not last is ignored by the CPU, but the instruction still
 * decodes. Elsewhere 0x40-0x4f are INC and DEC.
 */
static bool prefix_byte(enum decode_mode mode, uint8_t b)
{
	switch (b) {
	case 0xf0: case 0xf2: case 0xf3: case 0x2e: case 0x36: case 0x3e:
	case 0x26: case 0x64: case 0x65: case 0x66: case 0x67:
		return true;
	default:
		return mode == DECODE_MODE_64 && (b & 0xf0) == 0x40;
	}
}

bool decode_maybe_locked(enum decode_mode mode, const uint8_t *b, size_t len)
{
	size_t i = 0;

	for (; i < len && i < DECODE_INSN_MAX && prefix_byte(mode, b[i]); i++)
		if (b[i] == 0xf0)
			return true;
	/* XCHG r/m, r (0x86, 0x87) locks without a prefix when r/m is memory. */
	return i + 1 < len && (b[i] == 0x86 || b[i] == 0x87) && (b[i + 1] >> 6) != 3;
}

/* 0-15 for a general register, DECODE_REG_RIP, or DECODE_REG_NONE. */
static int gpr(ZydisRegister r, bool *high8)
{
	ZydisRegister big;

	if (high8)
		*high8 = r == ZYDIS_REGISTER_AH || r == ZYDIS_REGISTER_CH ||
			 r == ZYDIS_REGISTER_DH || r == ZYDIS_REGISTER_BH;
	if (r == ZYDIS_REGISTER_NONE)
		return DECODE_REG_NONE;
	if (r == ZYDIS_REGISTER_RIP || r == ZYDIS_REGISTER_EIP)
		return DECODE_REG_RIP;
	big = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r);
	if (big < ZYDIS_REGISTER_RAX || big > ZYDIS_REGISTER_R15)
		return -2;
	return (int)(big - ZYDIS_REGISTER_RAX);
}

static int memory_operand(const ZydisDecodedOperand *o, struct decode_insn *out)
{
	out->size = o->size / 8;
	switch (o->mem.segment) {
	case ZYDIS_REGISTER_ES: out->seg = DECODE_SEG_ES; break;
	case ZYDIS_REGISTER_CS: out->seg = DECODE_SEG_CS; break;
	case ZYDIS_REGISTER_SS: out->seg = DECODE_SEG_SS; break;
	case ZYDIS_REGISTER_DS: out->seg = DECODE_SEG_DS; break;
	case ZYDIS_REGISTER_FS: out->seg = DECODE_SEG_FS; break;
	case ZYDIS_REGISTER_GS: out->seg = DECODE_SEG_GS; break;
	default: return -1;
	}
	out->base = gpr(o->mem.base, NULL);
	out->index = gpr(o->mem.index, NULL);
	out->scale = o->mem.scale ? o->mem.scale : 1;
	out->disp = o->mem.disp.has_displacement ? o->mem.disp.value : 0;
	if (out->base < DECODE_REG_NONE || out->index < DECODE_REG_NONE || out->index == DECODE_REG_RIP)
		return -1;
	return out->size == 1 || out->size == 2 || out->size == 4 || out->size == 8 ||
	       out->size == 16 ? 0 : -1;
}

static int source_operand(const ZydisDecodedOperand *o, struct decode_insn *out)
{
	if (o->type == ZYDIS_OPERAND_TYPE_IMMEDIATE) {
		out->src = DECODE_SRC_IMM;
		out->imm = o->imm.is_signed ? o->imm.value.s : (int64_t)o->imm.value.u;
		return 0;
	}
	if (o->type != ZYDIS_OPERAND_TYPE_REGISTER)
		return -1;
	out->src = DECODE_SRC_REG;
	out->src_reg = gpr(o->reg.value, &out->src_high8);
	return out->src_reg >= 0 && out->src_reg < 16 ? 0 : -1;
}

static bool lookup(ZydisMnemonic m, enum decode_op *op)
{
	for (size_t i = 0; i < ARRAY_SIZE(ops); i++) {
		if (ops[i].mnemonic == m) {
			*op = ops[i].op;
			return true;
		}
	}
	return false;
}

/*
 * One decoder per mode, set up once for every vCPU thread. Compatibility
 * mode decodes as 32-bit protected mode does for these instructions.
 */
static ZydisDecoder decoders[3], minimal[3];
static bool decoders_ok;
static pthread_once_t decoders_once = PTHREAD_ONCE_INIT;

static void decoders_init(void)
{
	decoders_ok =
		ZYAN_SUCCESS(ZydisDecoderInit(&decoders[DECODE_MODE_64], ZYDIS_MACHINE_MODE_LONG_64,
					      ZYDIS_STACK_WIDTH_64)) &&
		ZYAN_SUCCESS(ZydisDecoderInit(&decoders[DECODE_MODE_32], ZYDIS_MACHINE_MODE_LONG_COMPAT_32,
					      ZYDIS_STACK_WIDTH_32)) &&
		ZYAN_SUCCESS(ZydisDecoderInit(&decoders[DECODE_MODE_16], ZYDIS_MACHINE_MODE_LONG_COMPAT_16,
					      ZYDIS_STACK_WIDTH_16));
	/* Lengths only: no semantic analysis, several times faster. */
	memcpy(minimal, decoders, sizeof(minimal));
	for (unsigned i = 0; i < 3 && decoders_ok; i++)
		decoders_ok = ZYAN_SUCCESS(ZydisDecoderEnableMode(&minimal[i], ZYDIS_DECODER_MODE_MINIMAL,
								  ZYAN_TRUE));
}

/* What runs after the instruction is right behind it: no branch, event or world switch. */
static bool falls_through(const ZydisDecodedInstruction *insn)
{
	switch (insn->meta.category) {
	case ZYDIS_CATEGORY_COND_BR:	/* XBEGIN among them */
	case ZYDIS_CATEGORY_UNCOND_BR:	/* XABORT among them */
	case ZYDIS_CATEGORY_CALL:
	case ZYDIS_CATEGORY_RET:
	case ZYDIS_CATEGORY_INTERRUPT:
	case ZYDIS_CATEGORY_SYSCALL:
	case ZYDIS_CATEGORY_SYSRET:
	case ZYDIS_CATEGORY_VTX:
	case ZYDIS_CATEGORY_SGX:
	case ZYDIS_CATEGORY_UINTR:
		return false;
	default:
		return insn->mnemonic != ZYDIS_MNEMONIC_RSM && insn->mnemonic != ZYDIS_MNEMONIC_VMRUN;
	}
}

unsigned decode_length(enum decode_mode mode, const uint8_t *b, size_t len, bool *falls)
{
	struct decode_view v;

	if (decode_view(mode, b, len, &v)) {
		*falls = false;
		return 0;
	}
	*falls = v.falls;
	return v.length;
}

bool decode_lock_faults(enum decode_mode mode, const uint8_t *b, size_t len)
{
	ZydisDecodedInstruction insn;
	uint8_t rest[DECODE_INSN_MAX];
	size_t i = 0, n = 0, locks = 0;

	if (pthread_once(&decoders_once, decoders_init) || !decoders_ok ||
	    (unsigned)mode > DECODE_MODE_16 || len > DECODE_INSN_MAX ||
	    ZydisDecoderDecodeInstruction(&decoders[mode], NULL, b, len, &insn) != ZYDIS_STATUS_ILLEGAL_LOCK)
		return false;
	/*
	 * Zydis stops at the LOCK, perhaps before the end: the same bytes
	 * without their LOCK prefixes must decode whole, within 15 with them.
	 */
	for (; i < len && prefix_byte(mode, b[i]); i++) {
		if (b[i] == 0xf0)
			locks++;
		else
			rest[n++] = b[i];
	}
	if (i + 1 < len && b[i] == 0x0f && (b[i + 1] == 0x20 || b[i + 1] == 0x22))
		return false;
	memcpy(rest + n, b + i, len - i);
	n += len - i;
	return ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&minimal[mode], NULL, rest, n, &insn)) &&
	       insn.length + locks <= DECODE_INSN_MAX;
}

/* An indirect JMP or CALL, or a RET: where it reads its target. */
static bool branch_source(enum decode_mode mode, const ZydisDecodedInstruction *insn,
			  ZydisDecodedOperand *o, struct decode_branch *out)
{
	out->far = insn->meta.branch_type == ZYDIS_BRANCH_TYPE_FAR;
	out->size = insn->operand_width / 8;
	if (out->far && mode == DECODE_MODE_64)
		return false;
	if (insn->mnemonic == ZYDIS_MNEMONIC_RET) {
		out->from = DECODE_FROM_STACK;
		return true;
	}
	if ((insn->mnemonic != ZYDIS_MNEMONIC_JMP && insn->mnemonic != ZYDIS_MNEMONIC_CALL) ||
	    !insn->operand_count_visible)
		return false;
	if (o[0].type == ZYDIS_OPERAND_TYPE_REGISTER) {
		out->reg = gpr(o[0].reg.value, NULL);
		if (out->reg < 0 || out->reg >= 16)
			return false;
		out->from = DECODE_FROM_REG;
		return true;
	}
	if (o[0].type != ZYDIS_OPERAND_TYPE_MEMORY || o[0].mem.type != ZYDIS_MEMOP_TYPE_MEM)
		return false;
	/* The offset alone: memory_operand() takes no 6- or 10-byte pointer. */
	o[0].size = (ZyanU16)(out->size * 8);
	out->mem.mode = mode;
	out->mem.length = insn->length;
	out->mem.addr_size = insn->address_width / 8;
	if (memory_operand(&o[0], &out->mem))
		return false;
	out->from = DECODE_FROM_MEM;
	return true;
}

bool decode_branch(enum decode_mode mode, const uint8_t *b, size_t len, uint64_t ip,
		   struct decode_branch *out)
{
	ZydisDecodedInstruction insn;
	ZydisDecodedOperand o[ZYDIS_MAX_OPERAND_COUNT];

	memset(out, 0, sizeof(*out));
	out->from = -1;
	if (pthread_once(&decoders_once, decoders_init) || !decoders_ok ||
	    (unsigned)mode > DECODE_MODE_16 ||
	    ZYAN_FAILED(ZydisDecoderDecodeFull(&decoders[mode], b, len, &insn, o)) ||
	    (mode == DECODE_MODE_64 && (insn.attributes & ZYDIS_ATTRIB_HAS_OPERANDSIZE)))
		return false;
	if (insn.meta.category != ZYDIS_CATEGORY_UNCOND_BR && insn.meta.category != ZYDIS_CATEGORY_COND_BR &&
	    insn.meta.category != ZYDIS_CATEGORY_CALL && insn.meta.category != ZYDIS_CATEGORY_RET)
		return false;
	if (insn.operand_count_visible && o[0].type == ZYDIS_OPERAND_TYPE_POINTER) {
		out->far = true;
		out->far_sel = o[0].ptr.segment;
		out->to[out->n++] = o[0].ptr.offset;
		return true;
	}
	if (!insn.operand_count_visible || o[0].type != ZYDIS_OPERAND_TYPE_IMMEDIATE ||
	    !o[0].imm.is_relative) {
		if (branch_source(mode, &insn, o, out))
			return true;
		out->from = -1;
		return false;
	}
	if (ZYAN_FAILED(ZydisCalcAbsoluteAddress(&insn, &o[0], ip, &out->to[0])))
		return false;
	out->n = 1;
	if (insn.meta.category == ZYDIS_CATEGORY_COND_BR) {
		uint64_t next = ip + insn.length;

		out->to[out->n++] = insn.operand_width == 64 ? next
				    : insn.operand_width == 32 ? (uint32_t)next : (uint16_t)next;
	}
	return true;
}

/*
 * One full decode in `mode`: 0, DECODE_TRUNCATED where the bytes end
 * first, DECODE_TOO_LONG past 15 bytes, -1 for what the CPU answers with
 * #UD (or a decoder that could not be set up).
 */
static int decode_full(enum decode_mode mode, const uint8_t *b, size_t len,
		       ZydisDecodedInstruction *insn, ZydisDecodedOperand *o)
{
	ZyanStatus status;

	if (pthread_once(&decoders_once, decoders_init) || !decoders_ok ||
	    (unsigned)mode > DECODE_MODE_16)
		return -1;
	status = ZydisDecoderDecodeFull(&decoders[mode], b, len, insn, o);
	if (status == ZYDIS_STATUS_NO_MORE_DATA)
		return DECODE_TRUNCATED;
	if (status == ZYDIS_STATUS_INSTRUCTION_TOO_LONG)
		return DECODE_TOO_LONG;
	return ZYAN_FAILED(status) ? -1 : 0;
}

static int decode_op(enum decode_mode mode, const uint8_t *b, size_t len, struct decode_insn *out,
		     bool locked_only)
{
	ZydisDecodedInstruction insn;
	ZydisDecodedOperand o[ZYDIS_MAX_OPERAND_COUNT];
	unsigned mem_at, src_at;
	int status;

	status = decode_full(mode, b, len, &insn, o);
	if (status)
		return status;
	memset(out, 0, sizeof(*out));
	if (!lookup(insn.mnemonic, &out->op))
		return -1;
	out->mode = mode;
	out->length = insn.length;
	out->addr_size = insn.address_width / 8;
	out->locked_by_prefix = insn.attributes & ZYDIS_ATTRIB_HAS_LOCK;
	if (insn.operand_count_visible < 1)
		return -1;
	/* XCHG is the one op whose memory operand may come second. */
	mem_at = o[0].type == ZYDIS_OPERAND_TYPE_MEMORY ? 0 : 1;
	src_at = mem_at ? 0 : 1;
	if (mem_at >= insn.operand_count_visible || o[mem_at].type != ZYDIS_OPERAND_TYPE_MEMORY ||
	    o[mem_at].mem.type != ZYDIS_MEMOP_TYPE_MEM)
		return -1;
	if (locked_only && !out->locked_by_prefix && out->op != DECODE_XCHG)
		return -1;
	if (memory_operand(&o[mem_at], out))
		return -1;
	if (src_at < insn.operand_count_visible && source_operand(&o[src_at], out))
		return -1;
	return 0;
}

int decode_insn(enum decode_mode mode, const uint8_t *b, size_t len, struct decode_insn *out)
{
	return decode_op(mode, b, len, out, true);
}

int decode_rmw(enum decode_mode mode, const uint8_t *b, size_t len, struct decode_insn *out)
{
	return decode_op(mode, b, len, out, false);
}

static bool plain_integer(const ZydisDecodedInstruction *insn)
{
	switch (insn->mnemonic) {
	case ZYDIS_MNEMONIC_BT: case ZYDIS_MNEMONIC_BTS: case ZYDIS_MNEMONIC_BTR:
	case ZYDIS_MNEMONIC_BTC: case ZYDIS_MNEMONIC_XCHG: case ZYDIS_MNEMONIC_XADD:
	case ZYDIS_MNEMONIC_CMPXCHG: case ZYDIS_MNEMONIC_MOVBE:
		return false;
	default:
		break;
	}
	if (insn->attributes & (ZYDIS_ATTRIB_HAS_LOCK | ZYDIS_ATTRIB_HAS_REP |
				ZYDIS_ATTRIB_HAS_REPE | ZYDIS_ATTRIB_HAS_REPNE))
		return false;
	switch (insn->meta.category) {
	case ZYDIS_CATEGORY_DATAXFER:
	case ZYDIS_CATEGORY_BINARY:
	case ZYDIS_CATEGORY_LOGICAL:
	case ZYDIS_CATEGORY_SHIFT:
	case ZYDIS_CATEGORY_ROTATE:
	case ZYDIS_CATEGORY_CMOV:
	case ZYDIS_CATEGORY_SETCC:
		return insn->meta.isa_set == ZYDIS_ISA_SET_I86 || insn->meta.isa_set == ZYDIS_ISA_SET_I186 ||
		       insn->meta.isa_set == ZYDIS_ISA_SET_I386 || insn->meta.isa_set == ZYDIS_ISA_SET_I486 ||
		       insn->meta.isa_set == ZYDIS_ISA_SET_I486REAL ||
		       insn->meta.isa_set == ZYDIS_ISA_SET_LONGMODE || insn->meta.isa_set == ZYDIS_ISA_SET_CMOV;
	default:
		return false;
	}
}

int decode_access(enum decode_mode mode, const uint8_t *b, size_t len, struct decode_insn *out,
		     bool *write, bool *plain)
{
	ZydisDecodedInstruction insn;
	ZydisDecodedOperand o[ZYDIS_MAX_OPERAND_COUNT];
	ZydisDecoderContext ctx;

	if (pthread_once(&decoders_once, decoders_init) || !decoders_ok ||
	    (unsigned)mode > DECODE_MODE_16 ||
	    ZYAN_FAILED(ZydisDecoderDecodeInstruction(&decoders[mode], &ctx, b, len, &insn)))
		return -1;
	/*
	 * An explicit memory operand comes from a ModRM memory form or a MOV
	 * moffs (A0-A3); most instructions have neither, and this runs on
	 * every step, so the operands are decoded only for those that may.
	 */
	if (!((insn.attributes & ZYDIS_ATTRIB_HAS_MODRM) && insn.raw.modrm.mod != 3) &&
	    !(insn.opcode_map == ZYDIS_OPCODE_MAP_DEFAULT && insn.opcode >= 0xa0 && insn.opcode <= 0xa3))
		return -1;
	if (ZYAN_FAILED(ZydisDecoderDecodeOperands(&decoders[mode], &ctx, &insn, o, insn.operand_count)))
		return -1;
	for (unsigned i = 0; i < insn.operand_count_visible; i++) {
		if (o[i].type != ZYDIS_OPERAND_TYPE_MEMORY || o[i].mem.type != ZYDIS_MEMOP_TYPE_MEM ||
		    o[i].visibility != ZYDIS_OPERAND_VISIBILITY_EXPLICIT)
			continue;
		memset(out, 0, sizeof(*out));
		out->mode = mode;
		out->length = insn.length;
		out->addr_size = insn.address_width / 8;
		*write = (o[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) != 0;
		if (plain)
			*plain = plain_integer(&insn);
		return memory_operand(&o[i], out);
	}
	return -1;
}

/* An explicit operand as decode_view() gives it. */
static void view_operand(const ZydisDecodedOperand *o, __typeof__(((struct decode_view *)0)->op[0]) *v)
{
	ZydisRegisterClass class;

	v->kind = DECODE_OPND_OTHER;
	switch (o->type) {
	case ZYDIS_OPERAND_TYPE_REGISTER:
		class = ZydisRegisterGetClass(o->reg.value);
		v->reg = ZydisRegisterGetId(o->reg.value);
		if (class == ZYDIS_REGCLASS_GPR8 || class == ZYDIS_REGCLASS_GPR16 ||
		    class == ZYDIS_REGCLASS_GPR32 || class == ZYDIS_REGCLASS_GPR64) {
			v->reg = gpr(o->reg.value, NULL);
			v->kind = v->reg >= 0 && v->reg < 16 ? DECODE_OPND_GPR : DECODE_OPND_OTHER;
		} else if (class == ZYDIS_REGCLASS_SEGMENT) {
			v->kind = DECODE_OPND_SEG;
		} else if (class == ZYDIS_REGCLASS_CONTROL) {
			v->kind = DECODE_OPND_CR;
		} else if (class == ZYDIS_REGCLASS_DEBUG) {
			v->kind = DECODE_OPND_DR;
		}
		break;
	case ZYDIS_OPERAND_TYPE_MEMORY:
		v->kind = DECODE_OPND_MEM;
		break;
	case ZYDIS_OPERAND_TYPE_IMMEDIATE:
		v->kind = DECODE_OPND_IMM;
		v->imm = o->imm.is_signed ? o->imm.value.s : (int64_t)o->imm.value.u;
		break;
	case ZYDIS_OPERAND_TYPE_POINTER:
		v->kind = DECODE_OPND_PTR;
		v->imm = o->ptr.offset;
		v->sel = o->ptr.segment;
		break;
	default:
		break;
	}
}

/*
 * decode_view() once per instruction: under emulate every step asks about
 * the same few instructions of a loop, and a full decode each time was
 * most of what a step costs in user space. An entry answers only for the
 * same mode and bytes, which decide the view alone. Per thread: each vCPU
 * thread decodes its own.
 */
static __thread struct {
	uint8_t len, mode;      /* len 0: empty */
	int status;
	uint8_t bytes[DECODE_INSN_MAX];
	struct decode_view view;
} view_memo[256];

static int view_uncached(enum decode_mode mode, const uint8_t *b, size_t len,
			 struct decode_view *out);

int decode_view(enum decode_mode mode, const uint8_t *b, size_t len, struct decode_view *out)
{
	__typeof__(view_memo[0]) *e;
	unsigned h = (unsigned)len * 7u + (unsigned)mode;

	for (size_t i = 0; i < len && i < 4; i++)
		h = h * 31u + b[i];
	e = &view_memo[h % ARRAY_SIZE(view_memo)];
	if (e->len && e->len == len && e->mode == mode && !memcmp(e->bytes, b, len)) {
		*out = e->view;
		return e->status;
	}
	e->status = view_uncached(mode, b, len, out);
	e->len = (uint8_t)(len <= sizeof(e->bytes) ? len : 0);
	e->mode = (uint8_t)mode;
	memcpy(e->bytes, b, e->len);
	e->view = *out;
	return e->status;
}

static int view_uncached(enum decode_mode mode, const uint8_t *b, size_t len,
			 struct decode_view *out)
{
	ZydisDecodedInstruction insn;
	ZydisDecodedOperand o[ZYDIS_MAX_OPERAND_COUNT];
	int status;

	memset(out, 0, sizeof(*out));
	status = decode_full(mode, b, len, &insn, o);
	if (status)
		return status;
	out->mnemonic = insn.mnemonic;
	out->length = insn.length;
	out->opsize = insn.operand_width / 8;
	for (unsigned i = 0; i < insn.raw.prefix_count; i++) {
		if (insn.raw.prefixes[i].type == ZYDIS_PREFIX_TYPE_MANDATORY)
			continue;	/* part of the opcode */
		out->prefixes++;
		out->osz += insn.raw.prefixes[i].value == 0x66;
	}
	out->rex = insn.attributes & ZYDIS_ATTRIB_HAS_REX;
	out->rex_w = out->rex && insn.raw.rex.W;
	out->rep = (insn.attributes & (ZYDIS_ATTRIB_HAS_REP | ZYDIS_ATTRIB_HAS_REPE |
				       ZYDIS_ATTRIB_HAS_REPNE)) &&
		   (insn.meta.category == ZYDIS_CATEGORY_STRINGOP ||
		    insn.meta.category == ZYDIS_CATEGORY_IOSTRINGOP);
	out->far = insn.meta.branch_type == ZYDIS_BRANCH_TYPE_FAR;
	out->falls = falls_through(&insn);
	out->operands = insn.operand_count_visible;
	for (unsigned i = 0; i < 2 && i < insn.operand_count_visible; i++)
		view_operand(&o[i], &out->op[i]);
	return 0;
}
