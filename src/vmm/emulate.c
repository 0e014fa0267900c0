/* SPDX-License-Identifier: MIT */
#include "emulate.h"

#include <string.h>

#include "x86.h"
/* CF PF AF ZF SF OF: the flags these instructions may write. */

/* struct kvm_regs orders registers its own way; x86 numbers them so. */
static __u64 *gpr(struct kvm_regs *r, int reg)
{
	__u64 *const gprs[16] = {
		&r->rax, &r->rcx, &r->rdx, &r->rbx, &r->rsp, &r->rbp, &r->rsi, &r->rdi,
		&r->r8, &r->r9, &r->r10, &r->r11, &r->r12, &r->r13, &r->r14, &r->r15,
	};

	return reg >= 0 && reg < 16 ? gprs[reg] : NULL;
}

uint64_t emulate_reg_get(const struct kvm_regs *r, int reg)
{
	const __u64 *p = gpr((struct kvm_regs *)r, reg);

	if (reg == DECODE_REG_RIP)
		return r->rip;
	return p ? *p : 0;
}

void emulate_reg_set(struct kvm_regs *r, int reg, uint64_t v)
{
	__u64 *p = gpr(r, reg);

	if (p)
		*p = v;
}

/* A register source of `size` bytes: AH..BH are bits 15:8 of RAX..RBX. */
static uint64_t src_value(const struct decode_insn *i, const struct kvm_regs *r)
{
	if (i->src == DECODE_SRC_IMM)
		return (uint64_t)i->imm;
	if (i->src_high8)
		return (emulate_reg_get(r, i->src_reg) >> 8) & 0xff;
	return emulate_reg_get(r, i->src_reg);
}

/* Writes as the CPU does: 32-bit results zero-extend, 8/16-bit merge. */
static void reg_write_sized(struct kvm_regs *r, int reg, bool high8, unsigned size, uint64_t v)
{
	uint64_t old;

	if (high8) {
		old = emulate_reg_get(r, reg);
		emulate_reg_set(r, reg, (old & ~0xff00ull) | ((v & 0xff) << 8));
		return;
	}
	old = emulate_reg_get(r, reg);
	switch (size) {
	case 1: emulate_reg_set(r, reg, (old & ~0xffull) | (v & 0xff)); break;
	case 2: emulate_reg_set(r, reg, (old & ~0xffffull) | (v & 0xffff)); break;
	case 4: emulate_reg_set(r, reg, v & 0xffffffffull); break;
	default: emulate_reg_set(r, reg, v); break;
	}
}

static int64_t sign_extend(uint64_t v, unsigned bytes)
{
	unsigned shift = 64 - 8 * bytes;

	return (int64_t)(v << shift) >> shift;
}

enum decode_mode emulate_cpu_mode(const struct kvm_sregs *s, uint64_t rflags)
{
	if (!(s->cr0 & X86_CR0_PE) || (rflags & X86_RFLAGS_VM))
		return DECODE_MODE_16;
	if ((s->efer & X86_EFER_LMA) && s->cs.l)
		return DECODE_MODE_64;
	return s->cs.db ? DECODE_MODE_32 : DECODE_MODE_16;
}

uint64_t emulate_code_la(const struct kvm_sregs *s, uint64_t rflags, uint64_t rip)
{
	enum decode_mode mode = emulate_cpu_mode(s, rflags);

	if (mode == DECODE_MODE_64)
		return rip;
	return (s->cs.base + (rip & (mode == DECODE_MODE_32 ? 0xffffffffull : 0xffffull))) &
	       0xffffffffull;
}

uint64_t emulate_stack_la(const struct kvm_sregs *s, uint64_t rflags, uint64_t rsp)
{
	bool real = !(s->cr0 & X86_CR0_PE) || (rflags & X86_RFLAGS_VM);

	if (emulate_cpu_mode(s, rflags) == DECODE_MODE_64)
		return rsp;
	return (s->ss.base + (rsp & (!real && s->ss.db ? 0xffffffffull : 0xffffull))) &
	       0xffffffffull;
}

unsigned emulate_cpl(const struct kvm_sregs *s, uint64_t rflags)
{
	if (!(s->cr0 & X86_CR0_PE))
		return 0;
	if (rflags & X86_RFLAGS_VM)
		return 3;
	return s->ss.dpl;
}

void emulate_paging(struct paging *p, const struct kvm_sregs *s, const struct kvm_regs *r,
		    uint32_t pkru, unsigned maxphyaddr)
{
	pagewalk_from_sregs(p, s);
	p->cpl = emulate_cpl(s, r->rflags);
	p->ac = r->rflags & X86_RFLAGS_AC;
	p->pkru = pkru;
	p->maxphyaddr = maxphyaddr;
}

static uint64_t size_mask(unsigned bytes)
{
	return bytes >= 8 ? ~0ull : (1ull << (8 * bytes)) - 1;
}

uint64_t emulate_effective(const struct decode_insn *i, const struct kvm_regs *r)
{
	uint64_t ea = (uint64_t)i->disp;

	if (i->base == DECODE_REG_RIP)
		ea += r->rip + i->length;
	else if (i->base != DECODE_REG_NONE)
		ea += emulate_reg_get(r, i->base);
	if (i->index != DECODE_REG_NONE)
		ea += emulate_reg_get(r, i->index) * i->scale;
	/* Register bit offsets are signed and reach beyond the operand. */
	if ((i->op == DECODE_BTS || i->op == DECODE_BTR || i->op == DECODE_BTC) && i->src == DECODE_SRC_REG) {
		int64_t bit = sign_extend(src_value(i, r), i->size);

		/*
		 * floor(bit / (8 * size)) * size, without negating: a guest may
		 * hand in INT64_MIN. The size is a power of two.
		 */
		ea += (uint64_t)((bit >> 3) & -(int64_t)i->size);
	}
	return ea & size_mask(i->addr_size);
}

static const struct kvm_segment *segment(const struct kvm_sregs *s, enum decode_seg seg)
{
	switch (seg) {
	case DECODE_SEG_ES: return &s->es;
	case DECODE_SEG_CS: return &s->cs;
	case DECODE_SEG_SS: return &s->ss;
	case DECODE_SEG_FS: return &s->fs;
	case DECODE_SEG_GS: return &s->gs;
	case DECODE_SEG_DS: break;
	}
	return &s->ds;
}

bool emulate_linear(const struct decode_insn *i, const struct kvm_sregs *s, uint64_t rflags,
		    uint64_t ea, unsigned size, uint64_t *la, struct emulate_exception *fault)
{
	return emulate_linear_access(i, s, rflags, ea, size, true, la, fault);
}

bool emulate_linear_access(const struct decode_insn *i, const struct kvm_sregs *s,
			   uint64_t rflags, uint64_t ea, unsigned size, bool write, uint64_t *la,
			   struct emulate_exception *fault)
{
	const struct kvm_segment *sg = segment(s, i->seg);
	bool real = !(s->cr0 & X86_CR0_PE), ok = true;
	uint64_t last = ea + size - 1;

	*fault = (struct emulate_exception){
		.vector = i->seg == DECODE_SEG_SS ? X86_VEC_SS : X86_VEC_GP,
		.has_error_code = !real,
	};
	if (i->mode == DECODE_MODE_64) {
		struct paging p = { .la57 = s->cr4 & X86_CR4_LA57 };

		*la = ea + (i->seg == DECODE_SEG_FS || i->seg == DECODE_SEG_GS ? sg->base : 0);
		return pagewalk_canonical(*la, p.la57) && pagewalk_canonical(*la + size - 1, p.la57);
	}
	if (!real && !(rflags & X86_RFLAGS_VM)) {
		bool code = sg->type & 8;

		/*
		 * A null selector, a write to code or to a read-only segment,
		 * a read of execute-only code. Bit 2 of a code segment is
		 * conforming, not expand-down.
		 */
		if (sg->unusable || (write && (code || !(sg->type & 2))) ||
		    (!write && code && !(sg->type & 2)))
			ok = false;
		else if (!code && (sg->type & 4))	/* expand-down: above the limit */
			ok = ea > sg->limit && last <= (sg->db ? 0xffffffffull : 0xffffull);
		else
			ok = last <= sg->limit;
	} else {
		ok = last <= sg->limit;
	}
	*la = (sg->base + ea) & 0xffffffffull;
	return ok;
}

bool emulate_crosses_line(uint64_t la, unsigned size)
{
	return size > 1 && (la % EMULATE_CACHE_LINE) + size > EMULATE_CACHE_LINE;
}

/*
 * Whether i at a is a split lock: it crosses a line and the CPU would get
 * that far (a misaligned CMPXCHG16B raises #GP before any lock).
 */
static bool emulate_is_split_lock(const struct decode_insn *i, const struct emulate_access *a)
{
	if (i->op == DECODE_CMPXCHG16B && (a->la & 15))
		return false;
	return emulate_crosses_line(a->la, a->size);
}

/*
 * Runs `insn` with the guest's arithmetic flags loaded and leaves the host
 * flags it produced in `fl`. The stack is moved below the red zone, which
 * the compiler may be using, before pushing anything.
 */
_Static_assert(X86_RFLAGS_ARITH == 0x8d5, "WITH_FLAGS spells the arithmetic flags out");
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

static void execute_cmpxchg_wide(const struct decode_insn *i, struct kvm_regs *r, uint8_t *mem,
				 uint64_t *fl)
{
	uint64_t a = r->rax, d = r->rdx;

	if (i->op == DECODE_CMPXCHG8B) {
		op_cmpxchg8b(mem, &a, &d, r->rbx, r->rcx, fl);
		/* Like any 32-bit register write, a failed compare zero-extends. */
		if (!(*fl & X86_RFLAGS_ZF)) {
			r->rax = a;
			r->rdx = d;
		}
	} else {
		op_cmpxchg16b(mem, &a, &d, r->rbx, r->rcx, fl);
		r->rax = a;
		r->rdx = d;
	}
}

void emulate_execute(const struct decode_insn *i, struct kvm_regs *r, uint8_t *mem)
{
	uint64_t fl = r->rflags & X86_RFLAGS_ARITH;
	uint64_t src = src_value(i, r), out;

	switch (i->op) {
	case DECODE_ADD: op_add(mem, i->size, src, &fl); break;
	case DECODE_ADC: op_adc(mem, i->size, src, &fl); break;
	case DECODE_AND: op_and(mem, i->size, src, &fl); break;
	case DECODE_OR: op_or(mem, i->size, src, &fl); break;
	case DECODE_SBB: op_sbb(mem, i->size, src, &fl); break;
	case DECODE_SUB: op_sub(mem, i->size, src, &fl); break;
	case DECODE_XOR: op_xor(mem, i->size, src, &fl); break;
	case DECODE_NOT: op_not(mem, i->size, &fl); break;
	case DECODE_NEG: op_neg(mem, i->size, &fl); break;
	case DECODE_INC: op_inc(mem, i->size, &fl); break;
	case DECODE_DEC: op_dec(mem, i->size, &fl); break;
	case DECODE_XCHG:
	case DECODE_XADD:
		out = i->op == DECODE_XCHG ? op_xchg(mem, i->size, src, &fl)
				       : op_xadd(mem, i->size, src, &fl);
		reg_write_sized(r, i->src_reg, i->src_high8, i->size, out);
		break;
	case DECODE_CMPXCHG:
		out = op_cmpxchg(mem, i->size, src, r->rax, &fl);
		/*
		 * The accumulator is written only when the compare fails, so a
		 * successful 32-bit cmpxchg leaves RAX's upper half alone.
		 */
		if (!(fl & X86_RFLAGS_ZF))
			reg_write_sized(r, 0, false, i->size, out);
		break;
	case DECODE_CMPXCHG8B:
	case DECODE_CMPXCHG16B:
		execute_cmpxchg_wide(i, r, mem, &fl);
		break;
	case DECODE_BTS: op_bts(mem, i->size, src & (8ull * i->size - 1), &fl); break;
	case DECODE_BTR: op_btr(mem, i->size, src & (8ull * i->size - 1), &fl); break;
	case DECODE_BTC: op_btc(mem, i->size, src & (8ull * i->size - 1), &fl); break;
	case DECODE_OP_COUNT: break;
	}
	r->rflags = (r->rflags & ~X86_RFLAGS_ARITH) | (fl & X86_RFLAGS_ARITH);
	r->rip = (r->rip + i->length) &
		 (i->mode == DECODE_MODE_64 ? ~0ull : i->mode == DECODE_MODE_32 ? 0xffffffffull : 0xffffull);
}

/* ---- the decision */

static void plan_stop(struct emulate_plan *p, const char *why)
{
	p->kind = EMULATE_PLAN_STOP;
	p->why = why;
}

static void plan_native(struct emulate_plan *p, const char *why)
{
	p->kind = EMULATE_PLAN_NATIVE;
	p->why = why;
}

static void plan_inject(struct emulate_plan *p, const struct emulate_exception *ex, const char *why)
{
	p->kind = EMULATE_PLAN_INJECT;
	p->ex = *ex;
	p->why = why;
}

static const struct emulate_exception ac0 = { .vector = X86_VEC_AC, .has_error_code = true };
static const struct emulate_exception gp0 = { .vector = X86_VEC_GP, .has_error_code = true };

/*
 * Instruction bytes at CS:RIP as the CPU fetches them, page by page, up to
 * where a fetch would fault, leave RAM or pass CS's limit; the walks are
 * kept for their accessed bits.
 */
static void fetch(const struct emulate_snapshot *s, const struct paging *pg, enum decode_mode mode,
		  struct emulate_plan *p)
{
	uint64_t la = s->regs.rip, want = DECODE_INSN_MAX;

	if (mode != DECODE_MODE_64) {
		uint64_t ip = s->regs.rip & (mode == DECODE_MODE_32 ? 0xffffffffull : 0xffffull);

		want = ip > s->sregs.cs.limit ? 0 : s->sregs.cs.limit - ip + 1;
		if (want >= DECODE_INSN_MAX)
			want = DECODE_INSN_MAX;
		else
			p->fetch_faults = true;	/* fewer bytes than an instruction may take: #GP past them */
		la = (s->sregs.cs.base + ip) & 0xffffffffull;
	}
	while (p->nbytes < want && p->nfetch < 2) {
		struct walk *w = &p->fetch[p->nfetch];
		uint64_t chunk = want - p->nbytes;

		enum walk_result r = pagewalk(&s->mem, pg, la + p->nbytes, WALK_FETCH, w);

		if (r == WALK_FAULT || r == WALK_NONCANONICAL)
			p->fetch_faults = true;
		if (r != WALK_OK || w->gpa >= s->mem.size)
			break;
		p->nfetch++;
		if (chunk > w->page_left)
			chunk = w->page_left;
		if (chunk > s->mem.size - w->gpa)
			chunk = s->mem.size - w->gpa;
		memcpy(p->bytes + p->nbytes, s->mem.base + w->gpa, (size_t)chunk);
		p->nbytes += (size_t)chunk;
	}
}

/*
 * The operand's pages: walks both, first page first as the CPU does, and
 * fills p->part. Returns WALK_OK or the first failure, with *cr2 the first
 * byte of the page that faulted.
 */
static enum walk_result walk_operand(const struct emulate_snapshot *s, const struct paging *pg,
				     struct emulate_plan *p, uint64_t *cr2)
{
	uint64_t la = p->access.la;
	unsigned done = 0;
	enum walk_result r;

	p->nparts = 0;
	while (done < p->access.size) {
		struct walk *w = &p->op[p->nparts];
		struct emulate_part *part = &p->part[p->nparts];

		*cr2 = la;
		r = pagewalk(&s->mem, pg, la, WALK_WRITE, w);
		if (r != WALK_OK)
			return r;
		part->gpa = w->gpa;
		part->len = p->access.size - done < w->page_left ? p->access.size - done
								 : (unsigned)w->page_left;
		part->ram = w->gpa < s->mem.size && s->mem.size - w->gpa >= part->len;
		p->nparts++;
		done += part->len;
		la += part->len;
		/* Outside 64-bit mode linear addresses are 32 bits. */
		if (p->insn.mode != DECODE_MODE_64)
			la &= 0xffffffffull;
	}
	return WALK_OK;
}

/*
 * Fetches and decodes the instruction at RIP. false where it is no
 * instruction to emulate, p planned if anything is to be done about it.
 */
static bool fetch_and_decode(const struct emulate_snapshot *s, const struct paging *pg,
			     enum decode_mode mode, bool hw, struct emulate_plan *p)
{
	int d;

	fetch(s, pg, mode, p);
	if (!p->nbytes && !hw)
		return false;	/* the fetch faults: the CPU says so */
	if (!hw && !decode_maybe_locked(mode, p->bytes, p->nbytes))
		return false;
	/* What KVM could not run may be a CMPXCHG16B without LOCK too (Linux's per-CPU ops). */
	d = s->source == EMULATE_SOURCE_KVM ? decode_rmw(mode, p->bytes, p->nbytes, &p->insn) :
	    decode_insn(mode, p->bytes, p->nbytes, &p->insn);
	/*
	 * The CPU fetched it before raising #AC, so the tables changed since:
	 * re-entering lets the CPU raise the fetch fault itself. Only then:
	 * resuming on anything else would meet the same #AC again.
	 */
	if (d == DECODE_TRUNCATED && hw && p->fetch_faults) {
		plan_native(p, "the instruction fetch faults now: the CPU raises it on re-entry");
		return false;
	}
	if (d) {
		if (hw)
			plan_stop(p, "it is not a locked read-modify-write the VMM can emulate");
		return false;
	}
	return true;
}

/*
 * The operand's linear address, through its segment. false where a segment
 * fault comes first or the access is no split lock, p planned if anything
 * is to be done about it.
 */
static bool operand_is_split(const struct emulate_snapshot *s, bool hw, struct emulate_plan *p)
{
	struct emulate_exception fault;
	uint64_t ea = emulate_effective(&p->insn, &s->regs);

	p->access.size = p->insn.size;
	if (!emulate_linear(&p->insn, &s->sregs, s->regs.rflags, ea, p->insn.size, &p->access.la,
		       &fault)) {
		if (!hw) {
			plan_native(p, "a segment fault comes first");
			return false;
		}
		plan_inject(p, &fault, "segment fault");
		return false;
	}
	if (!emulate_is_split_lock(&p->insn, &p->access)) {
		if (hw)
			plan_stop(p, "the #AC is not at a split lock the VMM can see");
		return false;
	}
	return true;
}

/*
 * For a locked RMW KVM could not run: the operand through its segment and
 * the alignment faults, in the CPU's order, split or not. false, p
 * planned, where one of them comes first.
 */
static bool operand_for_kvm(const struct emulate_snapshot *s, bool legacy_ac, struct emulate_plan *p)
{
	struct emulate_exception fault;
	uint64_t ea = emulate_effective(&p->insn, &s->regs);

	p->access.size = p->insn.size;
	if (!emulate_linear(&p->insn, &s->sregs, s->regs.rflags, ea, p->insn.size, &p->access.la,
			    &fault)) {
		plan_inject(p, &fault, "segment fault");
		return false;
	}
	if (p->insn.op == DECODE_CMPXCHG16B && (p->access.la & 15)) {
		plan_inject(p, &gp0, "CMPXCHG16B's operand is not 16-byte aligned");
		return false;
	}
	if (legacy_ac && (p->access.la & (p->access.size - 1))) {
		plan_inject(p, &ac0, "legacy alignment check (CPL3, CR0.AM, RFLAGS.AC)");
		return false;
	}
	p->split = emulate_is_split_lock(&p->insn, &p->access);
	return true;
}

/*
 * The operand's pages, walked for a write with the protection keys. false,
 * p planned, where the walk does not reach RAM the VMM can write.
 */
static bool operand_in_ram(const struct emulate_snapshot *s, const struct paging *pg, bool hw,
			   struct emulate_plan *p)
{
	struct emulate_exception fault;
	enum walk_result r;
	uint64_t cr2 = 0;

	if (pg->pke && !s->pkru_known) {
		p->needs_pkru = true;
		if (hw)
			plan_stop(p, "PKRU could not be read");
		else
			plan_native(p, "PKRU could not be read: the CPU checks the keys");
		return false;
	}
	r = walk_operand(s, pg, p, &cr2);
	if (r == WALK_FAULT) {
		if (!hw) {
			plan_native(p, "a page fault comes first");
			return false;
		}
		fault = (struct emulate_exception){ .vector = X86_VEC_PF, .has_error_code = true,
					       .error_code = p->op[p->nparts].error_code,
					       .has_cr2 = true, .cr2 = cr2 };
		plan_inject(p, &fault, "page fault");
		return false;
	}
	if (r != WALK_OK) {
		if (hw)
			plan_stop(p, pagewalk_result_name(r));
		else
			plan_native(p, pagewalk_result_name(r));
		return false;
	}
	if (!hw && (!p->part[0].ram || (p->nparts > 1 && !p->part[1].ram))) {
		plan_native(p, "the operand is MMIO: KVM emulates it as without the VMM");
		return false;
	}
	return true;
}

void emulate_plan(const struct emulate_snapshot *s, struct emulate_plan *p)
{
	enum decode_mode mode = emulate_cpu_mode(&s->sregs, s->regs.rflags);
	/* The hardware path and KVM's: the faults the CPU raises are computed for injection. */
	bool hw = s->source != EMULATE_SOURCE_SOFTWARE;
	struct paging pg;
	bool legacy_ac;

	memset(p, 0, sizeof(*p));
	emulate_paging(&pg, &s->sregs, &s->regs, s->pkru, s->maxphyaddr);

	/*
	 * Legacy alignment checking raises #AC(0) for any misaligned access at
	 * CPL3 with CR0.AM and RFLAGS.AC, whatever TEST_CTRL says. KVM itself
	 * tells a hardware #AC apart so (vmx_guest_inject_ac()) and reflects it
	 * to the guest; mirror it for a KVM that did not.
	 */
	legacy_ac = pg.cpl == 3 && (s->sregs.cr0 & X86_CR0_AM) && (s->regs.rflags & X86_RFLAGS_AC);

	if (s->source == EMULATE_SOURCE_HARDWARE && legacy_ac) {
		plan_inject(p, &ac0, "legacy alignment check (CPL3, CR0.AM, RFLAGS.AC)");
		return;
	}
	/* On the hardware path #AC is what the CPU raised: the guest asked for it. */
	if (s->source == EMULATE_SOURCE_HARDWARE && s->ac_requested) {
		plan_inject(p, &ac0, "the guest set TEST_CTRL bit 29");
		return;
	}
	if (!fetch_and_decode(s, &pg, mode, hw, p))
		return;
	p->decoded = true;
	if (s->source == EMULATE_SOURCE_KVM) {
		if (!operand_for_kvm(s, legacy_ac, p))
			return;
	} else if (!operand_is_split(s, hw, p)) {
		return;
	} else {
		p->split = true;
		if (legacy_ac) {
			plan_native(p, "the legacy alignment check comes first");
			return;
		}
	}
	if (!operand_in_ram(s, &pg, hw, p))
		return;
	if (s->ac_requested && p->split) {
		plan_inject(p, &ac0, "the guest set TEST_CTRL bit 29");
		return;
	}
	p->kind = EMULATE_PLAN_EMULATE;
	p->why = p->split ? "split lock" : "a locked read-modify-write KVM could not run";
}

void emulate_plan_fetched(const struct emulate_plan *p, const struct guest_mem *m)
{
	for (unsigned i = 0; i < p->nfetch; i++)
		pagewalk_set_ad(m, &p->fetch[i], false);
}

void emulate_perform(const struct emulate_plan *p, const struct guest_mem *m, struct kvm_regs *r)
{
	uint8_t op[16] __attribute__((aligned(16)));
	unsigned off = 0;

	emulate_plan_fetched(p, m);
	for (unsigned i = 0; i < p->nparts; i++)
		pagewalk_set_ad(m, &p->op[i], true);
	for (unsigned i = 0; i < p->nparts; i++) {
		if (p->part[i].ram)
			memcpy(op + off, m->base + p->part[i].gpa, p->part[i].len);
		else
			memset(op + off, 0xff, p->part[i].len);
		off += p->part[i].len;
	}
	emulate_execute(&p->insn, r, op);
	off = 0;
	for (unsigned i = 0; i < p->nparts; i++) {
		if (p->part[i].ram)
			memcpy(m->base + p->part[i].gpa, op + off, p->part[i].len);
		off += p->part[i].len;
	}
}

static int predict(const struct emulate_snapshot *s, const uint8_t *bytes, size_t n,
		   struct emulate_forecast *out, bool walk)
{
	enum decode_mode mode = emulate_cpu_mode(&s->sregs, s->regs.rflags);
	struct emulate_forecast f = { .ex = { 0 } };
	struct decode_insn insn;
	struct paging pg;
	uint64_t la;
	unsigned done = 0;
	bool write, plain;

	if (out)
		*out = f;
	if (decode_access(mode, bytes, n, &insn, &write, &plain))
		return -1;
	if (!emulate_linear_access(&insn, &s->sregs, s->regs.rflags, emulate_effective(&insn, &s->regs),
				   insn.size, write, &la, &f.ex)) {
		f.certain = plain;
		if (out)
			*out = f;
		return f.ex.vector;
	}
	if (!walk)
		return -1;
	emulate_paging(&pg, &s->sregs, &s->regs, s->pkru, s->maxphyaddr);
	if (!pg.enabled)
		return -1;
	while (done < insn.size) {
		struct walk w;
		enum walk_result r = pagewalk(&s->mem, &pg, la, write ? WALK_WRITE : 0, &w);

		if (r == WALK_OK && w.gpa >= s->mem.size)
			f.mmio = true;
		if (r == WALK_FAULT || r == WALK_NONCANONICAL) {
			f.ex = r == WALK_FAULT ?
			       (struct emulate_exception){ .vector = X86_VEC_PF, .has_error_code = true,
						      .error_code = w.error_code } :
			       (struct emulate_exception){ .vector = insn.seg == DECODE_SEG_SS ? X86_VEC_SS : X86_VEC_GP,
						      .has_error_code = true };
			if (out)
				*out = f;
			return f.ex.vector;
		}
		if (r != WALK_OK)
			break;
		done += insn.size - done < w.page_left ? insn.size - done : (unsigned)w.page_left;
		la += w.page_left;
		if (mode != DECODE_MODE_64)
			la &= 0xffffffffull;
	}
	if (out)
		*out = f;
	return -1;
}

int emulate_predict_fault(const struct emulate_snapshot *s, const uint8_t *bytes, size_t n,
			  struct emulate_forecast *out)
{
	return predict(s, bytes, n, out, true);
}

int emulate_predict_segment_fault(const struct emulate_snapshot *s, const uint8_t *bytes,
				  size_t n, struct emulate_forecast *out)
{
	return predict(s, bytes, n, out, false);
}
