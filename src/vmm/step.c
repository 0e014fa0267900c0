/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "step.h"
#include "decode.h"
#include "array_size.h"

#include <linux/kvm.h>

static bool is_legacy_prefix(uint8_t b)
{
	switch (b) {
	case 0x66: case 0x67: case 0xf0: case 0xf2: case 0xf3:
	case 0x26: case 0x2e: case 0x36: case 0x3e: case 0x64: case 0x65:
		return true;
	default:
		return false;
	}
}

/*
 * The two-byte opcodes (b just past 0x0f) KVM intercepts and may answer
 * with a #GP or #UD it queues itself: RDPMC of a counter that does not
 * exist, XSETBV of a bad value, MOV to a CR of one, CPUID with CPUID
 * faulting, MONITOR/MWAIT (and AMD's MONITORX/MWAITX) the guest lacks,
 * and the VMX and SVM instructions (VMXON, VMPTRLD ... in their memory
 * forms, INVEPT, INVVPID, INVPCID, VMRUN ... INVLPGA) without nested
 * virtualization.
 */
static bool intercepted_may_fault(const uint8_t *b, size_t len)
{
	unsigned reg = len >= 2 ? (b[1] >> 3) & 7 : 0;

	switch (b[0]) {
	case 0x33: case 0x22: case 0xa2: case 0x78: case 0x79:
		return true;
	case 0x01:
		return len >= 2 && ((b[1] >= 0xc1 && b[1] <= 0xc4) || b[1] == 0xc8 || b[1] == 0xc9 ||
				    b[1] == 0xd1 || (b[1] >= 0xd8 && b[1] <= 0xdf) ||
				    b[1] == 0xfa || b[1] == 0xfb);
	case 0xc7:	/* the register forms are RDRAND, RDSEED, RDPID */
		return len >= 2 && (reg == 6 || reg == 7) && (b[1] >> 6) != 3;
	case 0x38:
		return len >= 2 && b[1] >= 0x80 && b[1] <= 0x82;
	default:
		return false;
	}
}

/* The instruction step_classify() reads: its bytes, its opcode at b[i], what its prefixes say. */
struct insn_bytes {
	const uint8_t *b;
	size_t len, i;
	struct step_mode mode;
	bool osz, rex_w, f2f3, lock;
	unsigned def;		/* the default operand size in bytes: 4, or 2 in 16-bit code */
};

static void scan_prefixes(struct insn_bytes *x)
{
	const uint8_t *b = x->b;

	/* REX counts only right before the opcode; an earlier one is ignored. */
	for (; x->i < x->len && x->i < 15; x->i++) {
		if (x->mode.cs_l && (b[x->i] & 0xf0) == 0x40) {
			x->rex_w = b[x->i] & 8;
			continue;
		}
		if (!is_legacy_prefix(b[x->i]))
			break;
		x->rex_w = false;
		if (b[x->i] == 0x66)
			x->osz = true;
		if (b[x->i] == 0xf2 || b[x->i] == 0xf3)
			x->f2f3 = true;
		if (b[x->i] == 0xf0)
			x->lock = true;
	}
}

/*
 * Only a string instruction repeats: INS, OUTS, MOVS, CMPS, STOS, LODS,
 * SCAS. Elsewhere F2/F3 select an opcode or are ignored (XACQUIRE with
 * LOCK, REP RET), and the instruction is judged, decoded, as any other.
 */
static bool is_string_op(uint8_t op)
{
	return (op >= 0x6c && op <= 0x6f) || (op >= 0xa4 && op <= 0xa7) || (op >= 0xaa && op <= 0xaf);
}

/* One-byte instructions their opcode alone classes; not64: #UD in 64-bit code, left STEP_OTHER. */
static const struct {
	uint8_t op;
	enum step_kind kind;
	uint8_t vector;
	bool not64;
} fixed_one_byte[] = {
	{ 0xf4, STEP_HLT, 0, false },
	{ 0xfb, STEP_STI, 0, false },
	{ 0xcc, STEP_INT3, 3, false },
	{ 0xf1, STEP_INT1, 1, false },
	{ 0xce, STEP_INTO, 4, true },
};

/* Whether op is one of fixed_one_byte[]. */
static bool classify_fixed(const struct insn_bytes *x, uint8_t op, struct step_insn *out)
{
	for (size_t k = 0; k < ARRAY_SIZE(fixed_one_byte); k++) {
		if (fixed_one_byte[k].op != op)
			continue;
		if (!fixed_one_byte[k].not64 || !x->mode.cs_l) {
			out->kind = fixed_one_byte[k].kind;
			out->vector = fixed_one_byte[k].vector;
			out->len = (unsigned)x->i + 1;
		}
		return true;
	}
	return false;
}

/* PUSHF, POPF, IRET: their operand size is how much of RFLAGS they move. */
static void classify_flags_op(const struct insn_bytes *x, uint8_t op, struct step_insn *out)
{
	if (op == 0xcf) {
		out->kind = STEP_IRET;
		/* 32 bits by default even in 64-bit code: IRETQ needs REX.W. */
		out->opsize = x->rex_w ? 8 : x->osz ? 6 - x->def : x->def;
	} else {
		out->kind = op == 0x9c ? STEP_PUSHF : STEP_POPF;
		/* 64-bit code: 64 bits, or 16 with 0x66; REX.W changes nothing. */
		out->opsize = x->mode.cs_l ? (x->osz ? 2 : 8) : (x->osz ? 6 - x->def : x->def);
	}
	out->len = (unsigned)x->i + 1;
}

/* POP SS and MOV SS, r/m: the next instruction runs in their shadow. */
static void classify_ss_load(const struct insn_bytes *x, uint8_t op, struct step_insn *out)
{
	const uint8_t *b = x->b;
	size_t i = x->i;

	if (op == 0x17) {
		if (!x->mode.cs_l) {	/* POP SS: #UD in 64-bit code */
			out->kind = STEP_MOV_SS;
			out->opsize = x->osz ? 6 - x->def : x->def;	/* the bytes it pops */
			out->len = (unsigned)i + 1;
		}
		return;
	}
	/* MOV Sreg, r/m with reg = 2 (SS); the memory form's length is left to the decoder. */
	if (i + 1 < x->len && ((b[i + 1] >> 3) & 7) == 2) {
		out->kind = STEP_MOV_SS;
		if ((b[i + 1] >> 6) == 3)
			out->len = (unsigned)i + 2;
	}
}

/* C7 F8: XBEGIN and its offset, whole, without LOCK; any other C7, STEP_OTHER. */
static void classify_xbegin(const struct insn_bytes *x, struct step_insn *out)
{
	const uint8_t *b = x->b;
	size_t i = x->i;
	/* XBEGIN's offset: 16 bits where the operand size is (REX.W wins over 0x66). */
	bool rel16 = x->mode.cs_l ? x->osz && !x->rex_w : (x->osz ? 6 - x->def : x->def) == 2;
	size_t end = i + 2 + (rel16 ? 2 : 4);

	if (i + 1 >= x->len || b[i + 1] != 0xf8 || x->lock || end > x->len)
		return;
	out->kind = STEP_XBEGIN;
	out->opsize = rel16 ? 2 : 4;
	out->len = (unsigned)end;
	out->rel = rel16 ? (int16_t)(b[i + 2] | b[i + 3] << 8)
			 : (int32_t)((uint32_t)b[i + 2] | (uint32_t)b[i + 3] << 8 |
				     (uint32_t)b[i + 4] << 16 | (uint32_t)b[i + 5] << 24);
}

/* The two-byte opcodes (0F xx). */
static void classify_two_byte(const struct insn_bytes *x, struct step_insn *out)
{
	const uint8_t *b = x->b;
	size_t i = x->i, len = x->len;

	if (i + 1 >= len)
		return;
	out->kvm_faults = intercepted_may_fault(b + i + 1, len - i - 1);
	out->op0f[0] = b[i + 1];
	out->op0f[1] = i + 2 < len ? b[i + 2] : 0;
	switch (b[i + 1]) {
	case 0x05:
		out->kind = STEP_SYSCALL;
		out->len = (unsigned)i + 2;
		return;
	case 0x07:
		out->kind = STEP_SYSRET;
		out->opsize = x->rex_w ? 8 : 4;
		out->len = (unsigned)i + 2;
		return;
	case 0x34:
	case 0x35:
		out->kind = b[i + 1] == 0x34 ? STEP_SYSENTER : STEP_SYSEXIT;
		out->opsize = x->rex_w ? 8 : 4;
		out->len = (unsigned)i + 2;
		return;
	case 0x23:
		out->kind = STEP_MOV_DR;
		return;
	case 0x00:
		if (i + 2 < len && ((b[i + 2] >> 3) & 7) == 3)
			out->kind = STEP_LTR;
		return;
	case 0xaa:	/* RSM */
		out->kind = STEP_BRANCH;
		return;
	default:
		if (b[i + 1] >= 0x80 && b[i + 1] <= 0x8f) {	/* Jcc rel32 */
			out->kind = STEP_BRANCH;
			out->jump = true;
		}
		/* VM* and the rest: as for any. */
		return;
	}
}

/* The one-byte direct branches and returns; jump: those that leave the stack alone. */
static const struct {
	uint8_t first, last;
	bool jump;
} one_byte_branches[] = {
	{ 0x70, 0x7f, true },	/* Jcc rel8 */
	{ 0xe0, 0xe3, true },	/* LOOPNE, LOOPE, LOOP, JCXZ */
	{ 0xe8, 0xe8, false },	/* CALL rel */
	{ 0xe9, 0xeb, true },	/* JMP rel, JMP far direct, JMP rel8 */
	{ 0x9a, 0x9a, false },	/* CALL far direct */
	{ 0xc2, 0xc3, false },	/* RET near */
	{ 0xca, 0xcb, false },	/* RET far */
};

static void classify_branch(const struct insn_bytes *x, uint8_t op, struct step_insn *out)
{
	if (op == 0xff) {
		unsigned reg = x->i + 1 < x->len ? (x->b[x->i + 1] >> 3) & 7 : 0;

		/* CALL/JMP near and far, indirect. */
		if (reg >= 2 && reg <= 5)
			out->kind = STEP_BRANCH;
		out->jump = reg == 4 || reg == 5;
		return;
	}
	for (size_t k = 0; k < ARRAY_SIZE(one_byte_branches); k++) {
		if (op >= one_byte_branches[k].first && op <= one_byte_branches[k].last) {
			out->kind = STEP_BRANCH;
			out->jump = one_byte_branches[k].jump;
			return;
		}
	}
}

void step_classify(const uint8_t *b, size_t len, struct step_mode mode, struct step_insn *out)
{
	struct insn_bytes x = { .b = b, .len = len, .mode = mode };
	uint8_t op;

	*out = (struct step_insn){ .kind = STEP_OTHER };
	scan_prefixes(&x);
	if (x.i >= len)
		return;
	op = b[x.i];
	out->rep = x.f2f3 && is_string_op(op);
	x.def = mode.cs_l || mode.cs_d ? 4 : 2;
	if (classify_fixed(&x, op, out))
		return;
	switch (op) {
	case 0x9c:
	case 0x9d:
	case 0xcf:
		classify_flags_op(&x, op, out);
		return;
	case 0xcd:
		if (x.i + 1 < len) {
			out->kind = STEP_INTN;
			out->vector = b[x.i + 1];
			out->len = (unsigned)x.i + 2;
		}
		return;
	case 0x17:
	case 0x8e:
		classify_ss_load(&x, op, out);
		return;
	case 0xc7:
		classify_xbegin(&x, out);
		return;
	case 0x0f:
		classify_two_byte(&x, out);
		return;
	default:
		classify_branch(&x, op, out);
		return;
	}
}

bool step_tf_after(enum step_kind kind, const struct step_tf_inputs *in)
{
	switch (kind) {
	case STEP_POPF:
	case STEP_IRET:
		/* TF is writable by POPF and IRET at every CPL and IOPL. */
		return in->popped_valid ? (in->popped & X86_RFLAGS_TF) != 0 : in->tf;
	case STEP_SYSRET:
		return (in->r11 & X86_RFLAGS_TF) != 0;
	case STEP_SYSCALL:
		return in->tf && !(in->fmask & X86_RFLAGS_TF);
	case STEP_INTO:
		if (!in->of)
			return in->tf;	/* a no-op */
		/* fallthrough */
	case STEP_INT3:
	case STEP_INTN:
	case STEP_INT1:
		/* Delivery clears TF; the frame keeps the old value. */
		return false;
	default:
		return in->tf;
	}
}

bool step_completes_in_kvm(uint32_t exit_reason)
{
	switch (exit_reason) {
	case KVM_EXIT_IO:
	case KVM_EXIT_MMIO:
	case KVM_EXIT_X86_RDMSR:
	case KVM_EXIT_X86_WRMSR:
		return true;
	default:
		return false;
	}
}

bool step_rearm_after_exit(uint32_t exit_reason)
{
	return !step_completes_in_kvm(exit_reason);
}

bool step_hlt_unstepped(const struct step_insn *insn, unsigned cpl)
{
	return insn->kind == STEP_HLT && cpl == 0;
}

bool step_delivers(const struct step_insn *insn, uint64_t rflags)
{
	switch (insn->kind) {
	case STEP_INT3:
	case STEP_INTN:
		return true;
	case STEP_INTO:
		return (rflags & X86_RFLAGS_OF) != 0;
	default:
		return false;
	}
}

static uint64_t exec_bps(uint64_t dr7);

struct step_db step_debug_exit(uint64_t exit_dr6, bool tf_at_start, uint64_t guest_dr7,
			       uint64_t beside)
{
	uint64_t hit = (exit_dr6 ^ X86_DR6_ACTIVE_LOW) & X86_DR6_VOLATILE;
	struct step_db d = { .completed = (hit & X86_DR6_BS) != 0 };
	uint64_t enabled = step_enabled_bps(guest_dr7), cause;

	/*
	 * KVM's own TF makes BS on every step; it is the guest's only when the
	 * guest's TF was set as the instruction began. B0-3 come from the
	 * guest's enabled breakpoints (the caller takes the VMM's out). The CPU
	 * also reports matches of disabled ones, but while KVM steps the guest
	 * its DR0-3 are in the hardware only where its DR7 enables them: a
	 * disabled one was compared with someone else's address. The caller's
	 * matches of the guest's own go there instead; they ride along, never
	 * cause a #DB.
	 */
	hit &= ~(X86_DR6_B0_3 & ~enabled);
	/*
	 * An instruction breakpoint at the next instruction, reported beside
	 * a completed step (QEMU's TCG does, RF set or not), is that
	 * instruction's fault: the caller raises it before the instruction
	 * runs, unless RF holds it (step_exec_hits). It rides along only.
	 */
	cause = d.completed ? hit & ~exec_bps(guest_dr7) : hit;
	d.inject = (d.completed && tf_at_start) ||
		   (cause & (X86_DR6_B0_3 | X86_DR6_BD | X86_DR6_BT | X86_DR6_RTM));
	if (d.inject)
		d.payload = (hit | (beside & X86_DR6_B0_3)) &
			    ~(tf_at_start ? 0 : X86_DR6_BS);
	return d;
}

uint64_t step_dr6_deliver(uint64_t dr6, uint64_t payload)
{
	/* As kvm_deliver_exception_payload(): B0-3 are replaced, the rest stick. */
	dr6 &= ~X86_DR6_B0_3;
	dr6 |= X86_DR6_ACTIVE_LOW;
	dr6 |= payload;
	dr6 ^= payload & X86_DR6_ACTIVE_LOW;
	return dr6 & ~(1ull << 12);
}

bool step_escaped(const struct step_insn *insn, uint64_t checked_rip, uint64_t exit_rip,
		  bool debug_exit, bool completed)
{
	if (!debug_exit)
		return exit_rip != checked_rip;
	if (!completed || exit_rip != checked_rip || insn->rep)
		return false;
	switch (insn->kind) {
	case STEP_OTHER:
	case STEP_PUSHF:
	case STEP_POPF:
	case STEP_MOV_SS:
		return true;
	default:
		return false;
	}
}

uint64_t step_advance(uint64_t rip, unsigned len, struct step_mode mode)
{
	uint64_t next = rip + len;

	if (mode.cs_l)
		return next;
	return mode.cs_d ? (uint32_t)next : (uint16_t)next;
}

bool step_undecodable(const struct step_insn *insn)
{
	return insn->kind == STEP_OTHER && !insn->rep && !insn->len;
}

int step_handler_first_push(const uint8_t *b, size_t n, bool long64, unsigned *len)
{
	if (n >= 4 && b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && (b[3] == 0xfa || b[3] == 0xfb)) {
		*len = 4;	/* ENDBR64, ENDBR32 */
		return 0;
	}
	if (n >= 3 && b[0] == 0x0f && b[1] == 0x01 && b[2] == 0xca) {
		*len = 3;	/* CLAC */
		return 0;
	}
	if (n >= 1 && (b[0] == 0x90 || b[0] == 0xfc)) {
		*len = 1;	/* NOP, CLD */
		return 0;
	}
	if (n >= 2 && b[0] == 0x6a) {
		*len = 2;	/* PUSH imm8 */
		return 1;
	}
	if (n >= 5 && b[0] == 0x68) {
		*len = 5;	/* PUSH imm32 */
		return 1;
	}
	if (n >= 1 && b[0] >= 0x50 && b[0] <= 0x57) {
		*len = 1;
		return 1;
	}
	if (long64 && n >= 2 && b[0] == 0x41 && b[1] >= 0x50 && b[1] <= 0x57) {
		*len = 2;	/* PUSH r8-r15 */
		return 1;
	}
	return -1;
}

int step_kvm_fault_vector(const struct step_insn *insn, uint64_t cr4, uint64_t efer)
{
	uint8_t op = insn->op0f[0], m = insn->op0f[1];
	bool vmx = op == 0x78 || op == 0x79 || (op == 0x01 && m >= 0xc2 && m <= 0xc4) ||
		   (op == 0xc7 && (m >> 6) != 3 && ((m >> 3) & 7) >= 6) ||
		   (op == 0x38 && (m == 0x80 || m == 0x81));
	bool svm = op == 0x01 && m >= 0xd8 && m <= 0xdf && m != 0xd9;

	if (op == 0x01 && m == 0xd1)
		return cr4 & X86_CR4_OSXSAVE ? X86_VEC_GP : X86_VEC_UD;
	if (vmx)
		return cr4 & X86_CR4_VMXE ? X86_VEC_GP : X86_VEC_UD;
	if (svm)
		return efer & X86_EFER_SVME ? X86_VEC_GP : X86_VEC_UD;
	return X86_VEC_GP;
}

bool step_kvm_may_inject(const struct step_insn *insn, unsigned cpl, uint64_t cr0,
			 uint64_t rflags)
{
	return step_undecodable(insn) || insn->kvm_faults ||
	       (cpl == 3 && (cr0 & X86_CR0_AM) && (rflags & X86_RFLAGS_AC));
}

bool step_diverted(const struct step_insn *insn, uint64_t checked_rip, uint64_t exit_rip,
		   struct step_mode mode)
{
	if (!insn->falls || !insn->len || insn->rep)
		return false;
	switch (insn->kind) {
	case STEP_OTHER:
	case STEP_PUSHF:
	case STEP_POPF:
	case STEP_MOV_DR:	/* #GP for a reserved DR6/DR7 bit, which KVM injects */
		return exit_rip != step_advance(checked_rip, insn->len, mode);
	default:
		/* HLT, MOV SS's shadow, INT n, IRET ...: their own rules. */
		return false;
	}
}

bool step_undecodable_diverted(const struct step_insn *insn, uint64_t checked_rip,
			       uint64_t exit_rip, struct step_mode mode)
{
	uint64_t mask = mode.cs_l ? ~0ull : mode.cs_d ? 0xffffffffull : 0xffffull,
		 ahead = (exit_rip - checked_rip) & mask;

	return step_undecodable(insn) && (ahead == 0 || ahead > DECODE_INSN_MAX);
}

bool step_jump_faulted(const struct step_insn *insn, uint64_t rsp_before, uint64_t rsp_after)
{
	return insn->kind == STEP_BRANCH && insn->jump && rsp_before != rsp_after;
}

bool step_branch_missed(const struct step_insn *insn, const struct step_branch *b,
			uint64_t exit_rip)
{
	if (insn->kind != STEP_BRANCH || (!b->n && !b->faults))
		return false;
	for (unsigned i = 0; i < b->n; i++)
		if (b->to[i] == exit_rip)
			return false;
	return true;
}

bool step_missed_target(const struct step_insn *insn, bool to_known, uint64_t to,
			uint64_t exit_rip)
{
	return (insn->kind == STEP_IRET || insn->kind == STEP_SYSENTER ||
		insn->kind == STEP_SYSEXIT) && to_known && exit_rip != to;
}

bool step_vector_error_code(unsigned vector)
{
	/* #DF, #TS, #NP, #SS, #GP, #PF, #AC, #CP, #VC, #SX (SDM vol. 3 6.13, APM vol. 2 8.2). */
	return vector == 8 || (vector >= 10 && vector <= 14) || vector == 17 ||
	       vector == 21 || vector == 29 || vector == 30;
}

int step_frame_rflags(const uint64_t w[4], bool error_code, uint64_t fault_rip,
		      uint64_t next_rip)
{
	unsigned at = error_code ? 1 : 0;
	uint64_t rflags = w[at + 2];

	/* RIP, CS (a selector), RFLAGS (bit 1 always set, the upper half clear). */
	if ((w[at] != fault_rip && w[at] != next_rip) || w[at + 1] > 0xffff ||
	    !(rflags & 2) || (rflags >> 32))
		return -1;
	return (int)at + 2;
}

static bool canonical(uint64_t la, bool la57)
{
	unsigned bits = la57 ? 57 : 48;

	return (uint64_t)((int64_t)(la << (64 - bits)) >> (64 - bits)) == la;
}

static uint32_t desc_limit(uint64_t desc)
{
	uint32_t limit = (uint32_t)(desc & 0xffff) | (uint32_t)((desc >> 48) & 0xf) << 16;

	return desc & X86_DESC_G ? limit << 12 | 0xfff : limit;
}

static uint32_t desc_base(uint64_t desc)
{
	return (uint32_t)(((desc >> 16) & 0xffffff) | ((desc >> 56) & 0xff) << 24);
}

enum step_vme_int step_vme_int(uint32_t flags, bool redirect_bit, uint16_t *image,
			       uint32_t *handler_flags)
{
	bool iopl3 = X86_RFLAGS_IOPL(flags) == 3;

	if (redirect_bit)
		return iopl3 ? STEP_VME_IDT : STEP_VME_GP;
	*image = (uint16_t)flags;
	if (!iopl3)
		*image = (uint16_t)((*image & ~X86_RFLAGS_IF) | (3u << 12) |
				    (flags & X86_RFLAGS_VIF ? X86_RFLAGS_IF : 0));
	*handler_flags = flags & ~(uint32_t)(X86_RFLAGS_TF | X86_RFLAGS_RF |
					     (iopl3 ? X86_RFLAGS_IF : X86_RFLAGS_VIF));
	return STEP_VME_IVT;
}

void step_segment_cache(uint64_t desc, uint16_t sel, struct kvm_segment *out)
{
	*out = (struct kvm_segment){
		.base = desc_base(desc),
		.limit = desc_limit(desc),
		.selector = sel,
		.type = (uint8_t)(((desc >> 40) & 0xf) | 1),	/* accessed, as the CPU sets it */
		.present = 1,
		.dpl = (uint8_t)((desc >> X86_DESC_DPL_SHIFT) & 3),
		.db = (desc & X86_DESC_DB) != 0,
		.s = 1,
		.l = (desc & X86_DESC_L) != 0,
		.g = (desc & X86_DESC_G) != 0,
		.avl = (desc >> 52) & 1,
	};
}

void step_syscall_plan(uint64_t next_rip, uint64_t rflags, uint64_t star, uint64_t target,
		       uint64_t fmask, struct step_syscall *out)
{
	uint16_t sel = (uint16_t)(star >> 32);

	out->rcx = next_rip;
	out->r11 = rflags & ~X86_RFLAGS_RF;
	out->rflags = (rflags & ~fmask & ~X86_RFLAGS_RF) | X86_RFLAGS_FIXED;
	out->rip = target;
	out->cs = (struct kvm_segment){
		.limit = 0xffffffff, .selector = sel & 0xfffc, .type = 0xb, .present = 1,
		.s = 1, .l = 1, .g = 1,
	};
	out->ss = (struct kvm_segment){
		.limit = 0xffffffff, .selector = (uint16_t)(sel + 8), .type = 0x3, .present = 1,
		.s = 1, .db = 1, .g = 1,
	};
}

bool step_xbegin_abort(const struct step_insn *insn, uint64_t rip, bool long64, bool la57,
		       uint32_t cs_limit, bool guest_tf, struct step_xbegin *out)
{
	if (insn->kind != STEP_XBEGIN)
		return false;
	if (long64) {
		out->rip = rip + insn->len + (uint64_t)(int64_t)insn->rel;
		if (!canonical(out->rip, la57))
			return false;
	} else {
		out->rip = (uint32_t)((uint32_t)rip + insn->len + (uint32_t)insn->rel);
		if (out->rip > cs_limit)
			return false;
	}
	out->status = guest_tf ? X86_RTM_ABORT_DEBUG : 0;
	return true;
}

bool step_sysret_plan(uint64_t rcx, uint64_t r11, uint64_t star, bool rex_w, bool la57,
		      struct step_syscall *out)
{
	uint16_t base = (uint16_t)(star >> 48);

	if (rex_w && !canonical(rcx, la57))
		return false;
	out->rip = rex_w ? rcx : (uint32_t)rcx;
	out->rcx = rcx;
	out->r11 = r11;
	/* RF and VM clear, bit 1 set, the reserved bits as they read (SDM: R11 & 3C7FD7H). */
	out->rflags = (r11 & 0x3c7fd7) | X86_RFLAGS_FIXED;
	out->cs = (struct kvm_segment){
		.limit = 0xffffffff, .selector = (uint16_t)((rex_w ? base + 16 : base) | 3),
		.type = 0xb, .present = 1, .dpl = 3, .s = 1, .l = rex_w, .db = !rex_w, .g = 1,
	};
	out->ss = (struct kvm_segment){
		.limit = 0xffffffff, .selector = (uint16_t)((base + 8) | 3), .type = 0x3,
		.present = 1, .dpl = 3, .s = 1, .db = 1, .g = 1,
	};
	return true;
}

/* The flags IRET loads at CPL0 in IA-32e mode: all but VM and the reserved bits. */
#define IRET_CPL0_FLAGS (X86_RFLAGS_ARITH | X86_RFLAGS_TF | X86_RFLAGS_IF | X86_RFLAGS_DF | \
			 (3u << 12) | X86_RFLAGS_NT | X86_RFLAGS_RF | X86_RFLAGS_AC | \
			 X86_RFLAGS_VIF | X86_RFLAGS_VIP | X86_RFLAGS_ID)

/* desc, loaded for seg's selector, gives seg's cache again and writes nothing. */
static bool same_cache(uint64_t desc, const struct kvm_segment *seg)
{
	struct kvm_segment c;

	if (!(desc & X86_DESC_P) || !(desc & X86_DESC_S) || !(desc & X86_DESC_A) ||
	    seg->unusable || !seg->present)
		return false;
	step_segment_cache(desc, seg->selector, &c);
	return c.base == seg->base && c.limit == seg->limit && c.type == seg->type &&
	       c.dpl == seg->dpl && c.db == seg->db && c.s == seg->s && c.l == seg->l &&
	       c.g == seg->g && c.avl == seg->avl;
}

bool step_iret_plan(const uint64_t frame[5], uint64_t cs_desc, uint64_t ss_desc,
		    const struct kvm_segment *ss, uint64_t rflags, bool la57,
		    struct kvm_segment *new_cs, uint64_t *new_rflags)
{
	uint16_t cs_sel = (uint16_t)frame[1], ss_sel = (uint16_t)frame[4];

	/* NT: a task return, #GP(0) in IA-32e mode; VM in the image: not this path. */
	if ((rflags & X86_RFLAGS_NT) || (frame[2] & X86_RFLAGS_VM) || !canonical(frame[3], la57))
		return false;
	/* RPL 0, a present DPL0 code segment, not both L and D (#GP), accessed. */
	if (!(cs_sel & ~(unsigned)X86_SEL_RPL) || (cs_sel & X86_SEL_RPL) ||
	    (cs_desc & (X86_DESC_P | X86_DESC_S | X86_DESC_CODE | X86_DESC_A)) !=
		    (X86_DESC_P | X86_DESC_S | X86_DESC_CODE | X86_DESC_A) ||
	    ((cs_desc >> X86_DESC_DPL_SHIFT) & 3) ||
	    ((cs_desc & X86_DESC_L) && (cs_desc & X86_DESC_DB)))
		return false;
	step_segment_cache(cs_desc, cs_sel, new_cs);
	if (new_cs->l ? !canonical(frame[0], la57) : frame[0] > new_cs->limit)
		return false;
	/* A null SS (RPL 0) loads a null SS again; any other must be the one there. */
	if (ss_sel != ss->selector || (ss_sel & X86_SEL_RPL) ||
	    ((ss_sel & ~(unsigned)X86_SEL_RPL) &&
	     ((ss_desc & (X86_DESC_CODE | X86_DESC_W)) != X86_DESC_W || !same_cache(ss_desc, ss))))
		return false;
	*new_rflags = (rflags & X86_RFLAGS_VM) | (frame[2] & IRET_CPL0_FLAGS) | X86_RFLAGS_FIXED;
	return true;
}

/*
 * A code selector that is null, or past its descriptor table (ldt_limit
 * -1: no usable LDT): #GP(selector), which is #GP(0) for a null one.
 */
static int selector_fault(uint16_t sel, int64_t gdt_limit, int64_t ldt_limit, uint32_t *err)
{
	*err = sel & 0xfffc;
	if (!(sel & ~(unsigned)X86_SEL_RPL) ||
	    (int64_t)(sel | 7u) > (sel & X86_SEL_TI ? ldt_limit : gdt_limit))
		return X86_VEC_GP;
	return -1;
}

int step_code_selector_fault(uint16_t cs, const struct kvm_dtable *gdt,
			     const struct kvm_segment *ldt, uint32_t *err)
{
	int64_t ldt_limit = ldt->unusable || !ldt->present ? -1 : (int64_t)ldt->limit;

	return selector_fault(cs, gdt->limit, ldt_limit, err);
}

bool step_trap_owed(enum step_kind kind, bool tf_at_start, bool tf_after)
{
	return kind == STEP_SYSCALL || kind == STEP_SYSRET ? tf_after : tf_at_start;
}

/*
 * Virtual-8086 mode below IOPL 3, without CR4.VME: PUSHF, POPF, INT n,
 * IRET, CLI and STI are #GP(0) (vol. 3 20.2.7; INT3 and INTO are not).
 * With it (vol. 3 20.4; vol. 2 PUSHF, POPF, IRET, STI) their 32-bit
 * forms still are, STI is with VIP set, and a 16-bit POPF or IRET that
 * would load TF, or IF with VIP set; INT n goes by the TSS's bitmap
 * (step_vme_int()). Operand-size prefixes only: with others, the CPU says.
 */
static bool vm86_iopl_faults(const uint8_t *b, size_t len, const struct step_cpu *c)
{
	size_t i = 0;

	while (i < len && b[i] == 0x66)
		i++;
	if (i < len && !(c->cr4 & X86_CR4_VME) &&
	    (b[i] == 0x9c || b[i] == 0x9d || b[i] == 0xcf || b[i] == 0xfa ||
	     b[i] == 0xfb || (b[i] == 0xcd && i + 1 < len)))
		return true;
	return i < len && (c->cr4 & X86_CR4_VME) &&
	       ((i && (b[i] == 0x9c || b[i] == 0x9d || b[i] == 0xcf)) ||
		(b[i] == 0xfb && (c->rflags & X86_RFLAGS_VIP)) ||
		(!i && (b[i] == 0x9d || b[i] == 0xcf) && c->popped_valid &&
		 ((c->popped & X86_RFLAGS_TF) ||
		  ((c->popped & X86_RFLAGS_IF) && (c->rflags & X86_RFLAGS_VIP)))));
}

/*
 * SYSEXIT (REX.W too) above CPL0: #GP(0) (SDM vol. 2 SYSEXIT); on AMD
 * in long mode the CPU's #UD reaches KVM's emulator, whose privilege
 * check gives the guest the same #GP(0).
 */
static bool sysexit_above_cpl0(const uint8_t *b, size_t len, const struct step_cpu *c)
{
	return c->cpl && len >= 2 && ((b[0] == 0x0f && b[1] == 0x35) ||
				      (c->long64 && len >= 3 && (b[0] & 0xf0) == 0x40 &&
				       b[1] == 0x0f && b[2] == 0x35));
}

/*
 * One-byte opcodes invalid in 64-bit code (SDM vol. 2 appendix A,
 * "i64"): PUSH/POP of ES, CS, SS, DS, DAA, DAS, AAA, AAS, PUSHA, POPA,
 * the 0x82 alias of group 1, far CALL/JMP direct, INTO, AAM, AAD, SALC.
 */
static bool invalid_in_64bit(const uint8_t *b, size_t len, const struct step_cpu *c)
{
	static const uint8_t i64[] = { 0x06, 0x07, 0x0e, 0x16, 0x17, 0x1e, 0x1f, 0x27, 0x2f,
				       0x37, 0x3f, 0x60, 0x61, 0x82, 0x9a, 0xce, 0xd4, 0xd5,
				       0xd6, 0xea };

	return c->long64 && len >= 1 && memchr(i64, b[0], sizeof(i64));
}

/*
 * MOV to DR6 or DR7 (DR4/DR5 alias them without CR4.DE) of a value
 * with a bit of 63:32 set: #GP(0) (SDM vol. 2 MOV DR), which KVM
 * injects from its emulation, where the handler would run unchecked.
 */
static bool mov_dr_value_faults(const uint8_t *b, size_t len, const struct step_cpu *c)
{
	unsigned i = len >= 1 && (b[0] & 0xf0) == 0x40 ? 1 : 0, rex = i ? b[0] : 0;

	if (!c->long64 || !c->gpr || c->cpl)
		return false;
	if (len >= i + 3 && b[i] == 0x0f && b[i + 1] == 0x23 && !(rex & 4)) {
		unsigned dr = (b[i + 2] >> 3) & 7, rm = ((rex & 1) << 3) | (b[i + 2] & 7);

		if ((dr == 6 || dr == 7 || ((dr == 4 || dr == 5) && !(c->cr4 & X86_CR4_DE))) &&
		    (c->gpr[rm] >> 32))
			return true;
	}
	return false;
}

/*
 * CLI/STI: protected-mode virtual interrupts change VIF instead at
 * CPL3, but for STI with VIP set (SDM vol. 2 STI).
 */
static bool sti_cli_above_iopl(const uint8_t *b, size_t len, const struct step_cpu *c)
{
	return len >= 1 && (b[0] == 0xfa || b[0] == 0xfb) && c->cpl > X86_RFLAGS_IOPL(c->rflags) &&
	       !(c->rflags & X86_RFLAGS_VM) &&
	       !(c->cpl == 3 && (c->cr4 & X86_CR4_PVI) &&
		 !(b[0] == 0xfb && (c->rflags & X86_RFLAGS_VIP)));
}

/* In 64-bit code: RET, or JMP/CALL near through a register, to a non-canonical address. */
static bool near_branch_noncanonical(const uint8_t *b, size_t len, const struct step_cpu *c)
{
	unsigned i = 0, rexb = 0;

	if (!c->long64)
		return false;
	if (len >= 1 && b[0] == 0xc3 && c->ret_valid && !canonical(c->ret_target, c->la57))
		return true;
	if (!c->gpr)
		return false;
	/* FF /2, /4, mod 3, REX.B only. */
	if (len >= 1 && (b[0] & 0xf0) == 0x40) {
		rexb = (b[0] & 1) << 3;
		i = 1;
	}
	return len >= i + 2 && b[i] == 0xff && (b[i + 1] >> 6) == 3 &&
	       (((b[i + 1] >> 3) & 7) == 2 || ((b[i + 1] >> 3) & 7) == 4) &&
	       !canonical(c->gpr[rexb | (b[i + 1] & 7)], c->la57);
}

/* MOV SS, r16/r32 (8E /2, mod 3); from memory and POP SS, the selector the caller read. */
static int ss_load_fault(const uint8_t *b, size_t len, const struct step_cpu *c, uint32_t *err)
{
	bool mov_ss_reg = c->gpr && len >= 2 && b[0] == 0x8e && (b[1] >> 6) == 3 &&
			  ((b[1] >> 3) & 7) == 2;
	uint16_t sel;

	if (c->real || (!mov_ss_reg && !c->ss_sel_valid))
		return -1;
	sel = mov_ss_reg ? (uint16_t)c->gpr[b[1] & 7] : c->ss_sel;
	/* 64-bit mode takes a null SS below CPL3 whose RPL is the CPL (MOV, vol. 2). */
	if (!(sel & ~(unsigned)X86_SEL_RPL))
		return !c->long64 || c->cpl == 3 || (sel & X86_SEL_RPL) != c->cpl ? X86_VEC_GP : -1;
	if (selector_fault(sel, c->gdt_limit, c->ldt_limit, err) >= 0 ||
	    (sel & X86_SEL_RPL) != c->cpl)
		return X86_VEC_GP;
	/* Then its descriptor: a writable data segment at the CPL's DPL, present. */
	if (c->ss_desc_valid) {
		uint64_t d = c->ss_desc;

		if (!(d & X86_DESC_S) || (d & X86_DESC_CODE) || !(d & X86_DESC_W) ||
		    ((d >> X86_DESC_DPL_SHIFT) & 3) != c->cpl)
			return X86_VEC_GP;
		if (!(d & X86_DESC_P))
			return X86_VEC_SS;
	}
	*err = 0;
	return -1;
}

/*
 * JMP or CALL far direct (EA, 9A) in protected mode: a null selector
 * is #GP(0), one past its table (or into no LDT) #GP(selector),
 * before anything else (SDM vol. 2 JMP, CALL). Operand-size prefixes
 * only.
 */
static int far_direct_fault(const uint8_t *b, size_t len, const struct step_cpu *c, uint32_t *err)
{
	size_t i = 0, at;

	if (c->real || c->long64)
		return -1;
	while (i < len && b[i] == 0x66)
		i++;
	at = i + 1 + (c->cs_d == !i ? 4 : 2);
	if (i < len && (b[i] == 0xea || b[i] == 0x9a) && at + 2 <= len &&
	    selector_fault((uint16_t)(b[at] | b[at + 1] << 8), c->gdt_limit, c->ldt_limit, err) >= 0)
		return X86_VEC_GP;
	*err = 0;
	return -1;
}

int step_certain_fault(const uint8_t *b, size_t len, const struct step_cpu *c, uint32_t *err)
{
	int vector;

	*err = 0;
	/*
	 * UD2; UD1 and UD0 where all 15 bytes could be fetched, so that no #PF
	 * on their ModR/M comes first (SDM vol. 2 UD; APM vol. 3 UD0-2); a
	 * LOCK the instruction does not take, a decode fault too.
	 */
	if (c->lock_ud || (len >= 2 && b[0] == 0x0f &&
			   (b[1] == 0x0b || (len >= DECODE_INSN_MAX && (b[1] == 0xb9 || b[1] == 0xff)))))
		return X86_VEC_UD;
	/*
	 * No selectors, privilege or IOPL checks as below in real mode (MOV SS
	 * never faults there). Virtual-8086 mode has real mode's selectors but
	 * runs at CPL3: HLT, MOV DR and SYSEXIT fault there (vol. 3 20.2.7).
	 */
	if (c->real && !(c->rflags & X86_RFLAGS_VM))
		return -1;
	if ((c->rflags & X86_RFLAGS_VM) && X86_RFLAGS_IOPL(c->rflags) < 3 &&
	    vm86_iopl_faults(b, len, c))
		return X86_VEC_GP;
	/* APM vol. 3 SYSENTER: #UD in long mode. */
	if (c->amd && c->lma && len >= 2 && b[0] == 0x0f && b[1] == 0x34)
		return X86_VEC_UD;
	if (sysexit_above_cpl0(b, len, c))
		return X86_VEC_GP;
	if (invalid_in_64bit(b, len, c))
		return X86_VEC_UD;
	if (c->cpl && len >= 1 && b[0] == 0xf4)
		return X86_VEC_GP;
	/*
	 * MOV DR: with DR7.GD, #DB (BD) at CPL0 before anything else (SDM vol.
	 * 3 17.2.4); above CPL0 which of it and #GP comes first is the CPU's.
	 */
	if (len >= 3 && b[0] == 0x0f && (b[1] == 0x21 || b[1] == 0x23)) {
		if (c->dr7 & X86_DR7_GD)
			return c->cpl ? -1 : X86_VEC_DB;
		if (c->cpl)
			return X86_VEC_GP;
	}
	if (mov_dr_value_faults(b, len, c) || sti_cli_above_iopl(b, len, c) ||
	    near_branch_noncanonical(b, len, c))
		return X86_VEC_GP;
	vector = ss_load_fault(b, len, c, err);
	if (vector >= 0)
		return vector;
	return far_direct_fault(b, len, c, err);
}

uint64_t step_syscall_r11(uint64_t r11, bool guest_tf)
{
	return (r11 & ~X86_RFLAGS_TF) | (guest_tf ? X86_RFLAGS_TF : 0);
}

int step_tss_flags_offset(unsigned type)
{
	switch (type) {
	case 9: case 11:
		return 0x24;
	case 1: case 3:
		return 0x10;
	default:
		return -1;
	}
}

uint64_t step_gate_offset(const uint8_t gate[16])
{
	return (uint64_t)gate[0] | (uint64_t)gate[1] << 8 |
	       (uint64_t)gate[6] << 16 | (uint64_t)gate[7] << 24 |
	       (uint64_t)gate[8] << 32 | (uint64_t)gate[9] << 40 |
	       (uint64_t)gate[10] << 48 | (uint64_t)gate[11] << 56;
}

unsigned step_idt_entry_size(enum step_idt f)
{
	return f == STEP_IDT_LONG ? 16 : f == STEP_IDT_PROT ? 8 : 4;
}

bool step_idt_handler(enum step_idt f, const uint8_t *e, uint64_t *offset, unsigned *slot)
{
	uint64_t low = (uint64_t)e[0] | (uint64_t)e[1] << 8;

	if (f == STEP_IDT_REAL) {	/* IP, then CS: no gate, nothing absent */
		*offset = low;
		*slot = 2;
		return true;
	}
	if (!(e[X86_GATE_TYPE_BYTE] & X86_GATE_P))
		return false;
	if (f == STEP_IDT_LONG) {
		*offset = step_gate_offset(e);
		*slot = 8;
		return true;
	}
	switch (e[X86_GATE_TYPE_BYTE] & 0x1f) {	/* S (bit 4) clear, then the type */
	case 0x6: case 0x7:			/* 16-bit interrupt and trap gates */
		*offset = low;
		*slot = 2;
		return true;
	case 0xe: case 0xf:			/* 32-bit interrupt and trap gates */
		*offset = low | (uint64_t)e[6] << 16 | (uint64_t)e[7] << 24;
		*slot = 4;
		return true;
	}
	return false;
}

static bool bp_enabled(uint64_t dr7, unsigned i)
{
	return (dr7 >> (2 * i)) & 3;
}

uint64_t step_enabled_bps(uint64_t dr7)
{
	uint64_t enabled = 0;

	for (unsigned i = 0; i < 4; i++)
		if (bp_enabled(dr7, i))
			enabled |= 1ull << i;
	return enabled;
}

static unsigned bp_rw(uint64_t dr7, unsigned i)
{
	return (unsigned)(dr7 >> (16 + 4 * i)) & 3;
}

static uint64_t bp_len(uint64_t dr7, unsigned i)
{
	static const uint64_t len[4] = { 1, 2, 8, 4 };

	return len[(dr7 >> (18 + 4 * i)) & 3];
}

/* The enabled instruction breakpoints (R/W 00). */
static uint64_t exec_bps(uint64_t dr7)
{
	uint64_t bps = 0;

	for (unsigned i = 0; i < 4; i++)
		if (bp_enabled(dr7, i) && bp_rw(dr7, i) == 0)
			bps |= 1ull << i;
	return bps;
}

uint64_t step_exec_hits(const uint64_t db[4], uint64_t dr7, uint64_t rip, uint64_t rflags)
{
	uint64_t hits = 0, bps = exec_bps(dr7);

	if (rflags & X86_RFLAGS_RF)
		return 0;
	for (unsigned i = 0; i < 4; i++)
		if ((bps >> i & 1) && db[i] == rip)
			hits |= 1ull << i;
	return hits;
}

uint64_t step_exec_beside(const uint64_t db[4], uint64_t dr7, uint64_t la, bool made_up)
{
	uint64_t hits = 0;

	for (unsigned i = 0; i < 4; i++)
		if ((made_up || !bp_enabled(dr7, i)) && bp_rw(dr7, i) == 0 && db[i] == la)
			hits |= 1ull << i;
	return hits;
}

uint64_t step_data_hits(const uint64_t db[4], uint64_t dr7, uint64_t la, unsigned size)
{
	uint64_t hits = 0;

	for (unsigned i = 0; i < 4; i++) {
		uint64_t len = bp_len(dr7, i), start = db[i] & ~(len - 1);
		unsigned rw = bp_rw(dr7, i);

		/* Write (01) and read/write (11); a locked RMW does both. */
		if (bp_enabled(dr7, i) && (rw == 1 || rw == 3) && la < start + len && start < la + size)
			hits |= 1ull << i;
	}
	return hits;
}

int step_merge_breakpoint(const uint64_t db[4], uint64_t dr7, uint64_t addr, uint64_t out[8])
{
	int slot = -1;

	for (unsigned i = 0; i < 4 && slot < 0; i++)
		if (!bp_enabled(dr7, i))
			slot = (int)i;
	if (slot < 0)
		return -1;
	memset(out, 0, 8 * sizeof(*out));
	for (unsigned i = 0; i < 4; i++) {
		if (!bp_enabled(dr7, i))
			continue;
		out[i] = db[i];
		out[7] |= dr7 & ((3ull << (2 * i)) | (15ull << (16 + 4 * i)));
	}
	out[slot] = addr;
	out[7] |= 1ull << (2 * slot);	/* L: execute, one byte (RW and LEN 0) */
	return slot;
}

bool step_has_data_bp(uint64_t dr7)
{
	for (unsigned i = 0; i < 4; i++)
		if (bp_enabled(dr7, i) && (bp_rw(dr7, i) == 1 || bp_rw(dr7, i) == 3))
			return true;
	return false;
}
