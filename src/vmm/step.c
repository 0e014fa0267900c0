/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "step.h"
#include "decode.h"
#include "pagewalk.h"
#include "array_size.h"

#include <Zydis/Zydis.h>

#include <linux/kvm.h>

/*
 * Guest bytes are classified by their decode (decode_view(), Zydis) in the
 * mode CS gives them, through the mnemonic tables below: never by hand.
 */
static enum decode_mode step_decode_mode(struct step_mode mode)
{
	return mode.cs_l ? DECODE_MODE_64 : mode.cs_d ? DECODE_MODE_32 : DECODE_MODE_16;
}

/*
 * Instructions their mnemonic alone classes; with_len: their length is
 * given (the rest leave it to the caller's decode, as branches do).
 * vector 0xff: INT n's, its immediate.
 */
static const struct {
	int mnemonic;
	enum step_kind kind;
	uint8_t vector;
	bool with_len, opsize;
} by_mnemonic[] = {
	{ ZYDIS_MNEMONIC_HLT, STEP_HLT, 0, true, false },
	{ ZYDIS_MNEMONIC_STI, STEP_STI, 0, true, false },
	{ ZYDIS_MNEMONIC_INT3, STEP_INT3, 3, true, false },
	{ ZYDIS_MNEMONIC_INT1, STEP_INT1, 1, true, false },
	{ ZYDIS_MNEMONIC_INTO, STEP_INTO, 4, true, false },	/* #UD in 64-bit code */
	{ ZYDIS_MNEMONIC_INT, STEP_INTN, 0xff, true, false },
	/* PUSHF, POPF, IRET: their operand size is how much of RFLAGS they move. */
	{ ZYDIS_MNEMONIC_PUSHF, STEP_PUSHF, 0, true, true },
	{ ZYDIS_MNEMONIC_PUSHFD, STEP_PUSHF, 0, true, true },
	{ ZYDIS_MNEMONIC_PUSHFQ, STEP_PUSHF, 0, true, true },
	{ ZYDIS_MNEMONIC_POPF, STEP_POPF, 0, true, true },
	{ ZYDIS_MNEMONIC_POPFD, STEP_POPF, 0, true, true },
	{ ZYDIS_MNEMONIC_POPFQ, STEP_POPF, 0, true, true },
	{ ZYDIS_MNEMONIC_IRET, STEP_IRET, 0, true, true },
	{ ZYDIS_MNEMONIC_IRETD, STEP_IRET, 0, true, true },
	{ ZYDIS_MNEMONIC_IRETQ, STEP_IRET, 0, true, true },
	{ ZYDIS_MNEMONIC_SYSCALL, STEP_SYSCALL, 0, true, false },
	{ ZYDIS_MNEMONIC_SYSRET, STEP_SYSRET, 0, true, false },
	{ ZYDIS_MNEMONIC_SYSENTER, STEP_SYSENTER, 0, true, false },
	{ ZYDIS_MNEMONIC_SYSEXIT, STEP_SYSEXIT, 0, true, false },
	{ ZYDIS_MNEMONIC_LTR, STEP_LTR, 0, false, false },
	{ ZYDIS_MNEMONIC_RSM, STEP_BRANCH, 0, false, false },
	{ ZYDIS_MNEMONIC_CALL, STEP_BRANCH, 0, false, false },
	{ ZYDIS_MNEMONIC_RET, STEP_BRANCH, 0, false, false },
};

/* The branches that leave the stack alone (jump): JMP, Jcc, LOOPcc, JCXZ. */
static const int jumps[] = {
	ZYDIS_MNEMONIC_JMP, ZYDIS_MNEMONIC_JB, ZYDIS_MNEMONIC_JBE, ZYDIS_MNEMONIC_JL,
	ZYDIS_MNEMONIC_JLE, ZYDIS_MNEMONIC_JNB, ZYDIS_MNEMONIC_JNBE, ZYDIS_MNEMONIC_JNL,
	ZYDIS_MNEMONIC_JNLE, ZYDIS_MNEMONIC_JNO, ZYDIS_MNEMONIC_JNP, ZYDIS_MNEMONIC_JNS,
	ZYDIS_MNEMONIC_JNZ, ZYDIS_MNEMONIC_JO, ZYDIS_MNEMONIC_JP, ZYDIS_MNEMONIC_JS,
	ZYDIS_MNEMONIC_JZ, ZYDIS_MNEMONIC_LOOP, ZYDIS_MNEMONIC_LOOPE, ZYDIS_MNEMONIC_LOOPNE,
	ZYDIS_MNEMONIC_JCXZ, ZYDIS_MNEMONIC_JECXZ, ZYDIS_MNEMONIC_JRCXZ,
};

/*
 * What KVM intercepts and may answer with a #GP or #UD it queues itself:
 * RDPMC of a counter that does not exist, XSETBV of a bad value, MOV to a
 * CR (apart), CPUID with CPUID faulting, MONITOR/MWAIT (and AMD's
 * MONITORX/MWAITX) the guest lacks, and the VMX and SVM instructions
 * without nested virtualization; `needs`: the enable bit without which
 * that fault is #UD.
 */
static const struct {
	int mnemonic;
	uint8_t needs;
} intercepted_by_kvm[] = {
	{ ZYDIS_MNEMONIC_RDPMC, STEP_KVM_NEEDS_NONE },
	{ ZYDIS_MNEMONIC_CPUID, STEP_KVM_NEEDS_NONE },
	{ ZYDIS_MNEMONIC_MONITOR, STEP_KVM_NEEDS_NONE },
	{ ZYDIS_MNEMONIC_MWAIT, STEP_KVM_NEEDS_NONE },
	{ ZYDIS_MNEMONIC_MONITORX, STEP_KVM_NEEDS_NONE },
	{ ZYDIS_MNEMONIC_MWAITX, STEP_KVM_NEEDS_NONE },
	{ ZYDIS_MNEMONIC_VMCALL, STEP_KVM_NEEDS_NONE },		/* KVM's hypercalls */
	{ ZYDIS_MNEMONIC_VMMCALL, STEP_KVM_NEEDS_NONE },
	{ ZYDIS_MNEMONIC_INVPCID, STEP_KVM_NEEDS_NONE },
	{ ZYDIS_MNEMONIC_XSETBV, STEP_KVM_NEEDS_OSXSAVE },
	{ ZYDIS_MNEMONIC_VMREAD, STEP_KVM_NEEDS_VMXE },
	{ ZYDIS_MNEMONIC_VMWRITE, STEP_KVM_NEEDS_VMXE },
	{ ZYDIS_MNEMONIC_VMLAUNCH, STEP_KVM_NEEDS_VMXE },
	{ ZYDIS_MNEMONIC_VMRESUME, STEP_KVM_NEEDS_VMXE },
	{ ZYDIS_MNEMONIC_VMXOFF, STEP_KVM_NEEDS_VMXE },
	{ ZYDIS_MNEMONIC_VMPTRLD, STEP_KVM_NEEDS_VMXE },
	{ ZYDIS_MNEMONIC_VMPTRST, STEP_KVM_NEEDS_VMXE },
	{ ZYDIS_MNEMONIC_VMCLEAR, STEP_KVM_NEEDS_VMXE },
	{ ZYDIS_MNEMONIC_VMXON, STEP_KVM_NEEDS_VMXE },
	{ ZYDIS_MNEMONIC_INVEPT, STEP_KVM_NEEDS_VMXE },
	{ ZYDIS_MNEMONIC_INVVPID, STEP_KVM_NEEDS_VMXE },
	{ ZYDIS_MNEMONIC_VMRUN, STEP_KVM_NEEDS_SVME },
	{ ZYDIS_MNEMONIC_VMLOAD, STEP_KVM_NEEDS_SVME },
	{ ZYDIS_MNEMONIC_VMSAVE, STEP_KVM_NEEDS_SVME },
	{ ZYDIS_MNEMONIC_STGI, STEP_KVM_NEEDS_SVME },
	{ ZYDIS_MNEMONIC_CLGI, STEP_KVM_NEEDS_SVME },
	{ ZYDIS_MNEMONIC_SKINIT, STEP_KVM_NEEDS_SVME },
	{ ZYDIS_MNEMONIC_INVLPGA, STEP_KVM_NEEDS_SVME },
};

static bool is_one_of(int mnemonic, const int *set, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (set[k] == mnemonic)
			return true;
	return false;
}

/* Whether v is one of by_mnemonic[]. */
static bool classify_fixed(const struct decode_view *v, struct step_insn *out)
{
	for (size_t k = 0; k < ARRAY_SIZE(by_mnemonic); k++) {
		if (by_mnemonic[k].mnemonic != v->mnemonic)
			continue;
		out->kind = by_mnemonic[k].kind;
		out->vector = by_mnemonic[k].vector == 0xff ? (uint8_t)v->op[0].imm
							    : by_mnemonic[k].vector;
		if (by_mnemonic[k].with_len)
			out->len = v->length;
		if (by_mnemonic[k].opsize)
			out->opsize = v->opsize;
		/* SYSRET, SYSENTER, SYSEXIT: to 64-bit code with REX.W. */
		if (out->kind == STEP_SYSRET || out->kind == STEP_SYSENTER || out->kind == STEP_SYSEXIT)
			out->opsize = v->rex_w ? 8 : 4;
		return true;
	}
	return false;
}

/*
 * MOV and POP into SS (the next instruction runs in their shadow; MOV's
 * memory form's length is left to the caller's decode), MOV DR, MOV to CR.
 */
static void classify_mov(const struct decode_view *v, struct step_insn *out)
{
	if (v->op[0].kind == DECODE_OPND_SEG && v->op[0].reg == DECODE_SEG_SS) {
		out->kind = STEP_MOV_SS;
		if (v->mnemonic == ZYDIS_MNEMONIC_POP) {
			out->opsize = v->opsize;	/* the bytes it pops */
			out->len = v->length;
		} else if (v->op[1].kind != DECODE_OPND_MEM) {
			out->len = v->length;
		}
	} else if (v->mnemonic == ZYDIS_MNEMONIC_MOV && v->op[0].kind == DECODE_OPND_DR) {
		out->kind = STEP_MOV_DR;
	} else if (v->mnemonic == ZYDIS_MNEMONIC_MOV && v->op[0].kind == DECODE_OPND_CR) {
		out->kvm_faults = true;
	}
}

void step_classify(const uint8_t *b, size_t len, struct step_mode mode, struct step_insn *out)
{
	struct decode_view v;

	*out = (struct step_insn){ .kind = STEP_OTHER };
	/* Undecodable (the CPU's #UD, or bytes that end first): no length, STEP_OTHER. */
	if (decode_view(step_decode_mode(mode), b, len, &v))
		return;
	/* Only a string instruction repeats; elsewhere F2/F3 select an opcode or are ignored. */
	out->rep = v.rep;
	for (size_t k = 0; k < ARRAY_SIZE(intercepted_by_kvm); k++) {
		if (intercepted_by_kvm[k].mnemonic == v.mnemonic) {
			out->kvm_faults = true;
			out->kvm_needs = intercepted_by_kvm[k].needs;
		}
	}
	if (classify_fixed(&v, out))
		return;
	if (v.mnemonic == ZYDIS_MNEMONIC_MOV || v.mnemonic == ZYDIS_MNEMONIC_POP) {
		classify_mov(&v, out);
	} else if (v.mnemonic == ZYDIS_MNEMONIC_XBEGIN) {
		out->kind = STEP_XBEGIN;
		out->opsize = v.opsize == 2 ? 2 : 4;	/* its offset's bytes */
		out->len = v.length;
		out->rel = (int32_t)v.op[0].imm;
	} else if (is_one_of(v.mnemonic, jumps, ARRAY_SIZE(jumps))) {
		out->kind = STEP_BRANCH;
		out->jump = true;
	}
}

/*
 * A checked step lasts until its exit is judged or the next entry; giving
 * detection up lasts until planning sees CPL0 (OUTER) or the next entry
 * (TO_EXIT), whatever exits KVM completes in between; not watching lasts
 * until the guest sets TEST_CTRL bit 29 (UNWATCHED), whatever happens.
 */
static const enum step_phase phase_next[STEP_PHASE_COUNT][STEP_EVENT_COUNT] = {
	[STEP_PHASE_FREE] = {
		[STEP_ON_ENTRY] = STEP_PHASE_FREE, [STEP_ON_CPL0] = STEP_PHASE_FREE,
		[STEP_ON_ARMED] = STEP_PHASE_CHECKED, [STEP_ON_DONE] = STEP_PHASE_FREE,
		[STEP_ON_OUTER] = STEP_PHASE_OUTER, [STEP_ON_TASK_GATE] = STEP_PHASE_TO_EXIT,
		[STEP_ON_UNWATCH] = STEP_PHASE_UNWATCHED, [STEP_ON_WATCH] = STEP_PHASE_FREE,
	},
	[STEP_PHASE_CHECKED] = {
		[STEP_ON_ENTRY] = STEP_PHASE_FREE, [STEP_ON_CPL0] = STEP_PHASE_FREE,
		[STEP_ON_ARMED] = STEP_PHASE_CHECKED, [STEP_ON_DONE] = STEP_PHASE_FREE,
		[STEP_ON_OUTER] = STEP_PHASE_OUTER, [STEP_ON_TASK_GATE] = STEP_PHASE_TO_EXIT,
		[STEP_ON_UNWATCH] = STEP_PHASE_UNWATCHED, [STEP_ON_WATCH] = STEP_PHASE_CHECKED,
	},
	[STEP_PHASE_OUTER] = {
		[STEP_ON_ENTRY] = STEP_PHASE_OUTER, [STEP_ON_CPL0] = STEP_PHASE_FREE,
		[STEP_ON_ARMED] = STEP_PHASE_CHECKED, [STEP_ON_DONE] = STEP_PHASE_OUTER,
		[STEP_ON_OUTER] = STEP_PHASE_OUTER, [STEP_ON_TASK_GATE] = STEP_PHASE_TO_EXIT,
		[STEP_ON_UNWATCH] = STEP_PHASE_UNWATCHED, [STEP_ON_WATCH] = STEP_PHASE_OUTER,
	},
	[STEP_PHASE_TO_EXIT] = {
		[STEP_ON_ENTRY] = STEP_PHASE_FREE, [STEP_ON_CPL0] = STEP_PHASE_FREE,
		[STEP_ON_ARMED] = STEP_PHASE_CHECKED, [STEP_ON_DONE] = STEP_PHASE_TO_EXIT,
		[STEP_ON_OUTER] = STEP_PHASE_OUTER, [STEP_ON_TASK_GATE] = STEP_PHASE_TO_EXIT,
		[STEP_ON_UNWATCH] = STEP_PHASE_UNWATCHED, [STEP_ON_WATCH] = STEP_PHASE_TO_EXIT,
	},
	[STEP_PHASE_UNWATCHED] = {
		[STEP_ON_ENTRY] = STEP_PHASE_UNWATCHED, [STEP_ON_CPL0] = STEP_PHASE_UNWATCHED,
		[STEP_ON_ARMED] = STEP_PHASE_UNWATCHED, [STEP_ON_DONE] = STEP_PHASE_UNWATCHED,
		[STEP_ON_OUTER] = STEP_PHASE_UNWATCHED, [STEP_ON_TASK_GATE] = STEP_PHASE_UNWATCHED,
		[STEP_ON_UNWATCH] = STEP_PHASE_UNWATCHED, [STEP_ON_WATCH] = STEP_PHASE_FREE,
	},
};

enum step_phase step_phase_next(enum step_phase p, enum step_event e)
{
	return p < STEP_PHASE_COUNT && e < STEP_EVENT_COUNT ? phase_next[p][e] : STEP_PHASE_FREE;
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
	static const int none[] = { ZYDIS_MNEMONIC_ENDBR64, ZYDIS_MNEMONIC_ENDBR32,
				    ZYDIS_MNEMONIC_CLAC, ZYDIS_MNEMONIC_NOP, ZYDIS_MNEMONIC_CLD };
	struct decode_view v;

	/* A REX prefix at most: a legacy one may change what it pushes. */
	if (decode_view(long64 ? DECODE_MODE_64 : DECODE_MODE_32, b, n, &v) ||
	    v.length > STEP_HANDLER_FIRST_MAX || v.prefixes > (v.rex ? 1u : 0u))
		return -1;
	*len = v.length;
	/* NOP: 0x90's alone, not the hint space (0F 18-1F) that may take new meanings. */
	if (is_one_of(v.mnemonic, none, ARRAY_SIZE(none)) && !v.operands)
		return 0;
	/* PUSH imm or a general register, of one whole slot. */
	if (v.mnemonic == ZYDIS_MNEMONIC_PUSH && v.opsize == (long64 ? 8u : 4u) &&
	    (v.op[0].kind == DECODE_OPND_IMM || v.op[0].kind == DECODE_OPND_GPR))
		return 1;
	return -1;
}

int step_kvm_fault_vector(const struct step_insn *insn, uint64_t cr4, uint64_t efer)
{
	switch (insn->kvm_needs) {
	case STEP_KVM_NEEDS_OSXSAVE:
		return cr4 & X86_CR4_OSXSAVE ? X86_VEC_GP : X86_VEC_UD;
	case STEP_KVM_NEEDS_VMXE:
		return cr4 & X86_CR4_VMXE ? X86_VEC_GP : X86_VEC_UD;
	case STEP_KVM_NEEDS_SVME:
		return efer & X86_EFER_SVME ? X86_VEC_GP : X86_VEC_UD;
	default:
		return X86_VEC_GP;
	}
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

uint32_t step_desc_limit(uint64_t desc)
{
	uint32_t limit = (uint32_t)(desc & 0xffff) | (uint32_t)((desc >> 48) & 0xf) << 16;

	return desc & X86_DESC_G ? limit << 12 | 0xfff : limit;
}

uint32_t step_desc_base(uint64_t desc)
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
		.base = step_desc_base(desc),
		.limit = step_desc_limit(desc),
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
		if (!pagewalk_canonical(out->rip, la57))
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

	if (rex_w && !pagewalk_canonical(rcx, la57))
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
	if ((rflags & X86_RFLAGS_NT) || (frame[2] & X86_RFLAGS_VM) || !pagewalk_canonical(frame[3], la57))
		return false;
	/* RPL 0, a present DPL0 code segment, not both L and D (#GP), accessed. */
	if (!(cs_sel & ~(unsigned)X86_SEL_RPL) || (cs_sel & X86_SEL_RPL) ||
	    (cs_desc & (X86_DESC_P | X86_DESC_S | X86_DESC_CODE | X86_DESC_A)) !=
		    (X86_DESC_P | X86_DESC_S | X86_DESC_CODE | X86_DESC_A) ||
	    ((cs_desc >> X86_DESC_DPL_SHIFT) & 3) ||
	    ((cs_desc & X86_DESC_L) && (cs_desc & X86_DESC_DB)))
		return false;
	step_segment_cache(cs_desc, cs_sel, new_cs);
	if (new_cs->l ? !pagewalk_canonical(frame[0], la57) : frame[0] > new_cs->limit)
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

static const int flags_ops[] = {
	ZYDIS_MNEMONIC_PUSHF, ZYDIS_MNEMONIC_PUSHFD, ZYDIS_MNEMONIC_POPF,
	ZYDIS_MNEMONIC_POPFD, ZYDIS_MNEMONIC_IRET, ZYDIS_MNEMONIC_IRETD,
};

/*
 * Virtual-8086 mode below IOPL 3, without CR4.VME: PUSHF, POPF, INT n,
 * IRET, CLI and STI are #GP(0) (vol. 3 20.2.7; INT3 and INTO are not).
 * With it (vol. 3 20.4; vol. 2 PUSHF, POPF, IRET, STI) their 32-bit
 * forms still are, STI is with VIP set, and a 16-bit POPF or IRET that
 * would load TF, or IF with VIP set; INT n goes by the TSS's bitmap
 * (step_vme_int()). Operand-size prefixes only: with others, the CPU says.
 */
static bool vm86_iopl_faults(const struct decode_view *v, const struct step_cpu *c)
{
	bool flags_op = is_one_of(v->mnemonic, flags_ops, ARRAY_SIZE(flags_ops)),
	     pop16 = (v->mnemonic == ZYDIS_MNEMONIC_POPF || v->mnemonic == ZYDIS_MNEMONIC_IRET) &&
		     !v->osz;

	if (v->prefixes != v->osz)
		return false;
	if (!(c->cr4 & X86_CR4_VME))
		return flags_op || v->mnemonic == ZYDIS_MNEMONIC_CLI ||
		       v->mnemonic == ZYDIS_MNEMONIC_STI || v->mnemonic == ZYDIS_MNEMONIC_INT;
	return (flags_op && v->osz) ||
	       (v->mnemonic == ZYDIS_MNEMONIC_STI && (c->rflags & X86_RFLAGS_VIP)) ||
	       (pop16 && c->popped_valid &&
		((c->popped & X86_RFLAGS_TF) ||
		 ((c->popped & X86_RFLAGS_IF) && (c->rflags & X86_RFLAGS_VIP))));
}

/* Without prefixes, or (64-bit code) with a REX prefix alone. */
static bool rex_only(const struct decode_view *v)
{
	return !v->prefixes || (v->prefixes == 1 && v->rex);
}

/*
 * SYSEXIT (REX.W too) above CPL0: #GP(0) (SDM vol. 2 SYSEXIT); on AMD
 * in long mode the CPU's #UD reaches KVM's emulator, whose privilege
 * check gives the guest the same #GP(0).
 */
static bool sysexit_above_cpl0(const struct decode_view *v, const struct step_cpu *c)
{
	return c->cpl && v->mnemonic == ZYDIS_MNEMONIC_SYSEXIT && rex_only(v);
}

/*
 * One-byte opcodes invalid in 64-bit code (SDM vol. 2 appendix A,
 * "i64"): PUSH/POP of ES, CS, SS, DS, DAA, DAS, AAA, AAS, PUSHA, POPA,
 * the 0x82 alias of group 1, far CALL/JMP direct, INTO, AAM, AAD, SALC:
 * what decodes, prefix-free, in 32-bit code and not in 64-bit code. The
 * opcode alone decides, so the bytes are padded: no fetch of the rest.
 */
static bool invalid_in_64bit(const uint8_t *b, size_t len, const struct step_cpu *c)
{
	static const int i64[] = {
		ZYDIS_MNEMONIC_PUSH, ZYDIS_MNEMONIC_POP, ZYDIS_MNEMONIC_DAA, ZYDIS_MNEMONIC_DAS,
		ZYDIS_MNEMONIC_AAA, ZYDIS_MNEMONIC_AAS, ZYDIS_MNEMONIC_PUSHA, ZYDIS_MNEMONIC_PUSHAD,
		ZYDIS_MNEMONIC_POPA, ZYDIS_MNEMONIC_POPAD, ZYDIS_MNEMONIC_ADD, ZYDIS_MNEMONIC_OR,
		ZYDIS_MNEMONIC_ADC, ZYDIS_MNEMONIC_SBB, ZYDIS_MNEMONIC_AND, ZYDIS_MNEMONIC_SUB,
		ZYDIS_MNEMONIC_XOR, ZYDIS_MNEMONIC_CMP, ZYDIS_MNEMONIC_CALL, ZYDIS_MNEMONIC_JMP,
		ZYDIS_MNEMONIC_INTO, ZYDIS_MNEMONIC_AAM, ZYDIS_MNEMONIC_AAD, ZYDIS_MNEMONIC_SALC,
	};
	uint8_t pad[DECODE_INSN_MAX] = { 0 };
	struct decode_view v;

	if (!c->long64 || !len)
		return false;
	memcpy(pad, b, len < sizeof(pad) ? len : sizeof(pad));
	return decode_view(DECODE_MODE_64, pad, sizeof(pad), &v) == -1 &&
	       !decode_view(DECODE_MODE_32, pad, sizeof(pad), &v) && !v.prefixes &&
	       is_one_of(v.mnemonic, i64, ARRAY_SIZE(i64));
}

/*
 * MOV to DR6 or DR7 (DR4/DR5 alias them without CR4.DE) of a value
 * with a bit of 63:32 set: #GP(0) (SDM vol. 2 MOV DR), which KVM
 * injects from its emulation, where the handler would run unchecked.
 */
static bool mov_dr_value_faults(const struct decode_view *v, const struct step_cpu *c)
{
	int dr = v->op[0].reg;

	if (!c->long64 || !c->gpr || c->cpl || v->mnemonic != ZYDIS_MNEMONIC_MOV ||
	    v->op[0].kind != DECODE_OPND_DR || v->op[1].kind != DECODE_OPND_GPR || !rex_only(v))
		return false;
	return (dr == 6 || dr == 7 || ((dr == 4 || dr == 5) && !(c->cr4 & X86_CR4_DE))) &&
	       (c->gpr[v->op[1].reg] >> 32);
}

/*
 * CLI/STI: protected-mode virtual interrupts change VIF instead at
 * CPL3, but for STI with VIP set (SDM vol. 2 STI).
 */
static bool sti_cli_above_iopl(const struct decode_view *v, const struct step_cpu *c)
{
	bool sti = v->mnemonic == ZYDIS_MNEMONIC_STI;

	return !v->prefixes && (sti || v->mnemonic == ZYDIS_MNEMONIC_CLI) &&
	       c->cpl > X86_RFLAGS_IOPL(c->rflags) && !(c->rflags & X86_RFLAGS_VM) &&
	       !(c->cpl == 3 && (c->cr4 & X86_CR4_PVI) && !(sti && (c->rflags & X86_RFLAGS_VIP)));
}

/* In 64-bit code: RET, or JMP/CALL near through a register, to a non-canonical address. */
static bool near_branch_noncanonical(const struct decode_view *v, const struct step_cpu *c)
{
	if (!c->long64 || v->far)
		return false;
	if (v->mnemonic == ZYDIS_MNEMONIC_RET && !v->prefixes && !v->operands)
		return c->ret_valid && !pagewalk_canonical(c->ret_target, c->la57);
	return c->gpr && (v->mnemonic == ZYDIS_MNEMONIC_CALL || v->mnemonic == ZYDIS_MNEMONIC_JMP) &&
	       rex_only(v) && v->op[0].kind == DECODE_OPND_GPR &&
	       !pagewalk_canonical(c->gpr[v->op[0].reg], c->la57);
}

/* MOV SS, r16/r32; from memory and POP SS, the selector the caller read. */
static int ss_load_fault(const struct decode_view *v, const struct step_cpu *c, uint32_t *err)
{
	bool mov_ss_reg = c->gpr && v->mnemonic == ZYDIS_MNEMONIC_MOV && !v->prefixes &&
			  v->op[0].kind == DECODE_OPND_SEG && v->op[0].reg == DECODE_SEG_SS &&
			  v->op[1].kind == DECODE_OPND_GPR;
	uint16_t sel;

	if (c->real || (!mov_ss_reg && !c->ss_sel_valid))
		return -1;
	sel = mov_ss_reg ? (uint16_t)c->gpr[v->op[1].reg] : c->ss_sel;
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
 * JMP or CALL far direct in protected mode: a null selector is #GP(0),
 * one past its table (or into no LDT) #GP(selector), before anything
 * else (SDM vol. 2 JMP, CALL). Operand-size prefixes only.
 */
static int far_direct_fault(const struct decode_view *v, const struct step_cpu *c, uint32_t *err)
{
	if (!c->real && !c->long64 && v->prefixes == v->osz && v->op[0].kind == DECODE_OPND_PTR &&
	    (v->mnemonic == ZYDIS_MNEMONIC_JMP || v->mnemonic == ZYDIS_MNEMONIC_CALL) &&
	    selector_fault(v->op[0].sel, c->gdt_limit, c->ldt_limit, err) >= 0)
		return X86_VEC_GP;
	*err = 0;
	return -1;
}

/*
 * UD2; UD1 and UD0 where all 15 bytes could be fetched, so that no #PF on
 * their ModR/M comes first (SDM vol. 2 UD; APM vol. 3 UD0-2).
 */
static bool ud_insn(const struct decode_view *v, size_t len)
{
	return !v->prefixes && (v->mnemonic == ZYDIS_MNEMONIC_UD2 ||
				((v->mnemonic == ZYDIS_MNEMONIC_UD1 || v->mnemonic == ZYDIS_MNEMONIC_UD0) &&
				 len >= DECODE_INSN_MAX));
}

/* The faults of the instruction v once the decode faults are out of the way. */
static int certain_fault_of(const struct decode_view *v, const struct step_cpu *c, uint32_t *err)
{
	int vector;

	if ((c->rflags & X86_RFLAGS_VM) && X86_RFLAGS_IOPL(c->rflags) < 3 && vm86_iopl_faults(v, c))
		return X86_VEC_GP;
	/* APM vol. 3 SYSENTER: #UD in long mode. */
	if (c->amd && c->lma && v->mnemonic == ZYDIS_MNEMONIC_SYSENTER && !v->prefixes)
		return X86_VEC_UD;
	if (sysexit_above_cpl0(v, c))
		return X86_VEC_GP;
	if (c->cpl && v->mnemonic == ZYDIS_MNEMONIC_HLT && !v->prefixes)
		return X86_VEC_GP;
	/*
	 * MOV DR: with DR7.GD, #DB (BD) at CPL0 before anything else (SDM vol.
	 * 3 17.2.4); above CPL0 which of it and #GP comes first is the CPU's.
	 */
	if (v->mnemonic == ZYDIS_MNEMONIC_MOV && !v->prefixes &&
	    (v->op[0].kind == DECODE_OPND_DR || v->op[1].kind == DECODE_OPND_DR)) {
		if (c->dr7 & X86_DR7_GD)
			return c->cpl ? -1 : X86_VEC_DB;
		if (c->cpl)
			return X86_VEC_GP;
	}
	if (mov_dr_value_faults(v, c) || sti_cli_above_iopl(v, c) || near_branch_noncanonical(v, c))
		return X86_VEC_GP;
	vector = ss_load_fault(v, c, err);
	if (vector >= 0)
		return vector;
	return far_direct_fault(v, c, err);
}

/* Real and virtual-8086 mode decode as 16-bit code, as emulate_cpu_mode() has it. */
static enum decode_mode cpu_decode_mode(const struct step_cpu *c)
{
	return c->long64 ? DECODE_MODE_64 : c->cs_d && !c->real ? DECODE_MODE_32 : DECODE_MODE_16;
}

enum step_stack_read step_certain_fault_stack(const uint8_t *b, size_t len,
					      const struct step_cpu *c)
{
	struct decode_view v;

	if (decode_view(cpu_decode_mode(c), b, len, &v) || v.prefixes)
		return STEP_STACK_NONE;
	/* As near_branch_noncanonical() and vm86_iopl_faults() judge them. */
	if (c->long64 && v.mnemonic == ZYDIS_MNEMONIC_RET && !v.operands)
		return STEP_STACK_RET;
	if (!(c->rflags & X86_RFLAGS_VM))
		return STEP_STACK_NONE;
	return v.mnemonic == ZYDIS_MNEMONIC_POPF ? STEP_STACK_FLAGS_AT_0
	       : v.mnemonic == ZYDIS_MNEMONIC_IRET ? STEP_STACK_FLAGS_AT_4 : STEP_STACK_NONE;
}

int step_certain_fault(const uint8_t *b, size_t len, const struct step_cpu *c, uint32_t *err)
{
	struct decode_view v;
	bool whole = !decode_view(cpu_decode_mode(c), b, len, &v);

	*err = 0;
	/* A LOCK the instruction does not take: a decode fault too. */
	if (c->lock_ud || (whole && ud_insn(&v, len)))
		return X86_VEC_UD;
	/*
	 * No selectors, privilege or IOPL checks as below in real mode (MOV SS
	 * never faults there). Virtual-8086 mode has real mode's selectors but
	 * runs at CPL3: HLT, MOV DR and SYSEXIT fault there (vol. 3 20.2.7).
	 */
	if (c->real && !(c->rflags & X86_RFLAGS_VM))
		return -1;
	/* What decodes needs no second look for an opcode 64-bit code lacks. */
	if (!whole && invalid_in_64bit(b, len, c))
		return X86_VEC_UD;
	/* Undecoded, v is empty: only the selector the caller read may decide. */
	return certain_fault_of(&v, c, err);
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
