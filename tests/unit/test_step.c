/* SPDX-License-Identifier: MIT */
/* The stepping decisions of --split-lock=emulate (src/vmm/step.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <linux/kvm.h>

#include "step.h"
#include "array_size.h"

static const struct step_mode m64 = { .cs_l = true };
static const struct step_mode m32 = { .cs_d = true };
static const struct step_mode m16 = { 0 };

static struct step_insn classify(const uint8_t *b, size_t n, struct step_mode m)
{
	struct step_insn i;

	step_classify(b, n, m, &i);
	return i;
}

#define CLASSIFY(m, ...) ({ \
	static const uint8_t b_[] = { __VA_ARGS__ }; \
	classify(b_, sizeof(b_), m); })

static void test_classify_hlt(void **state)
{
	(void)state;
	assert_int_equal(CLASSIFY(m64, 0xf4).kind, STEP_HLT);
	assert_int_equal(CLASSIFY(m64, 0x2e, 0xf4).kind, STEP_HLT);
	assert_int_equal(CLASSIFY(m64, 0x2e, 0xf4).len, 2);
	assert_int_equal(CLASSIFY(m64, 0x90).kind, STEP_OTHER);
	/* A truncated fetch is no HLT. */
	assert_int_equal(classify((const uint8_t *)"\x66", 1, m64).kind, STEP_OTHER);
}

static void test_classify_flags_sizes(void **state)
{
	(void)state;
	/* POPF: 64-bit code pops 8 bytes, 2 with 0x66; REX.W changes nothing. */
	assert_int_equal(CLASSIFY(m64, 0x9d).kind, STEP_POPF);
	assert_int_equal(CLASSIFY(m64, 0x9d).opsize, 8);
	assert_int_equal(CLASSIFY(m64, 0x66, 0x9d).opsize, 2);
	assert_int_equal(CLASSIFY(m64, 0x48, 0x9d).opsize, 8);
	assert_int_equal(CLASSIFY(m32, 0x9d).opsize, 4);
	assert_int_equal(CLASSIFY(m32, 0x66, 0x9d).opsize, 2);
	assert_int_equal(CLASSIFY(m16, 0x66, 0x9c).opsize, 4);
	assert_int_equal(CLASSIFY(m64, 0x9c).kind, STEP_PUSHF);
	assert_int_equal(CLASSIFY(m64, 0x9c).len, 1);
	/* IRET is 32-bit even in 64-bit code; IRETQ needs REX.W. */
	assert_int_equal(CLASSIFY(m64, 0xcf).opsize, 4);
	assert_int_equal(CLASSIFY(m64, 0x48, 0xcf).opsize, 8);
	assert_int_equal(CLASSIFY(m64, 0x48, 0xcf).kind, STEP_IRET);
	assert_int_equal(CLASSIFY(m64, 0x66, 0xcf).opsize, 2);
	/* REX not right before the opcode is ignored. */
	assert_int_equal(CLASSIFY(m64, 0x48, 0x66, 0xcf).opsize, 2);
	/* In 32-bit code 0x48 is DEC EAX, not a prefix. */
	assert_int_equal(CLASSIFY(m32, 0x48, 0xcf).kind, STEP_OTHER);
	assert_int_equal(CLASSIFY(m64, 0x0f, 0x05).kind, STEP_SYSCALL);
	assert_int_equal(CLASSIFY(m64, 0x48, 0x0f, 0x07).kind, STEP_SYSRET);
	assert_int_equal(CLASSIFY(m64, 0x48, 0x0f, 0x07).opsize, 8);
}

static void test_classify_events(void **state)
{
	struct step_insn i;

	(void)state;
	assert_int_equal(CLASSIFY(m64, 0xcc).kind, STEP_INT3);
	assert_int_equal(CLASSIFY(m64, 0xcc).vector, 3);
	i = CLASSIFY(m64, 0xcd, 0x80);
	assert_int_equal(i.kind, STEP_INTN);
	assert_int_equal(i.vector, 0x80);
	assert_int_equal(i.len, 2);
	assert_int_equal(CLASSIFY(m64, 0xcd).kind, STEP_OTHER);	/* truncated */
	assert_int_equal(CLASSIFY(m64, 0xf1).kind, STEP_INT1);
	assert_int_equal(CLASSIFY(m64, 0xf1).len, 1);
	/* INTO and POP SS are #UD in 64-bit code. */
	assert_int_equal(CLASSIFY(m64, 0xce).kind, STEP_OTHER);
	assert_int_equal(CLASSIFY(m32, 0xce).kind, STEP_INTO);
	assert_int_equal(CLASSIFY(m64, 0x17).kind, STEP_OTHER);
	assert_int_equal(CLASSIFY(m32, 0x17).kind, STEP_MOV_SS);
	/* mov %eax, %ss is 8e d0; mov %eax, %ds (8e d8) is no shadow. */
	assert_int_equal(CLASSIFY(m64, 0x8e, 0xd0).kind, STEP_MOV_SS);
	assert_int_equal(CLASSIFY(m64, 0x8e, 0xd0).len, 2);
	assert_int_equal(CLASSIFY(m64, 0x8e, 0x10).kind, STEP_MOV_SS);
	assert_int_equal(CLASSIFY(m64, 0x8e, 0x10).len, 0);	/* memory form: length unknown */
	assert_int_equal(CLASSIFY(m64, 0x8e, 0xd8).kind, STEP_OTHER);
	{
		/* Cut short after 8e: its ModR/M is not among the bytes read. */
		static const uint8_t mov_ss[] = { 0x8e, 0xd0 };

		step_classify(mov_ss, 1, m64, &i);
		assert_int_equal(i.kind, STEP_OTHER);
	}
	assert_true(CLASSIFY(m64, 0xf3, 0xa4).rep);
	assert_true(CLASSIFY(m64, 0xf2, 0x48, 0xaf).rep);	/* repne scasq */
	assert_true(CLASSIFY(m32, 0xf3, 0x6e).rep);		/* rep outsb */
	/* F2/F3 before anything else repeat nothing (seed 24 record 173: XACQUIRE LOCK CMP). */
	assert_false(CLASSIFY(m64, 0xf2, 0xf0, 0x41, 0x83, 0xbf, 0x5a, 0x0e, 0, 0, 0x31).rep);
	assert_false(CLASSIFY(m64, 0xf3, 0xc3).rep);		/* rep ret */
	assert_false(CLASSIFY(m64, 0xf3, 0x90).rep);		/* pause */
	assert_int_equal(CLASSIFY(m64, 0xeb, 0xfe).kind, STEP_BRANCH);
	assert_int_equal(CLASSIFY(m64, 0xff, 0xe0).kind, STEP_BRANCH);	/* jmp *%rax */
	assert_int_equal(CLASSIFY(m64, 0xff, 0xc0).kind, STEP_OTHER);	/* inc %eax */
	assert_int_equal(CLASSIFY(m64, 0x0f, 0x23, 0xf8).kind, STEP_MOV_DR);	/* mov %rax, %dr7 */
	/* Each end of the Jcc rel8 and LOOP/JrCXZ ranges is a jump; the bytes past them are not. */
	for (unsigned op = 0x6f; op <= 0x80; op++) {
		uint8_t b[] = { (uint8_t)op, 0x10 };

		assert_int_equal(classify(b, sizeof(b), m64).jump, op >= 0x70 && op <= 0x7f);
	}
	for (unsigned op = 0xdf; op <= 0xe4; op++) {
		uint8_t b[] = { (uint8_t)op, 0x10 };

		i = classify(b, sizeof(b), m64);
		assert_int_equal(i.jump, op >= 0xe0 && op <= 0xe3);
		assert_int_equal(i.kind == STEP_BRANCH, op >= 0xe0 && op <= 0xe3);
	}
	assert_int_equal(CLASSIFY(m64, 0x7f, 0x10).kind, STEP_BRANCH);
	assert_int_equal(CLASSIFY(m64, 0x70, 0x10).kind, STEP_BRANCH);
	/* The same for Jcc rel32 (0F 80-8F) and the opcodes either side. */
	for (unsigned op = 0x7f; op <= 0x90; op++) {
		uint8_t b[] = { 0x0f, (uint8_t)op, 0x10, 0, 0, 0 };

		assert_int_equal(classify(b, sizeof(b), m64).jump, op >= 0x80 && op <= 0x8f);
	}
}

/*
 * Where the old byte matchers and Zydis disagreed, the CPU's side: each of
 * these is #UD (or bytes that end first), undecodable, no kind.
 */
static void test_classify_as_the_cpu(void **state)
{
	struct step_insn i;

	(void)state;
	/* A LOCK on what takes none (SDM vol. 2 LOCK). */
	i = CLASSIFY(m64, 0xf0, 0xf4);
	assert_int_equal(i.kind, STEP_OTHER);
	assert_true(step_undecodable(&i));
	assert_int_equal(CLASSIFY(m32, 0xf0, 0xcd, 0x80).kind, STEP_OTHER);
	assert_int_equal(CLASSIFY(m64, 0xf0, 0xc3).kind, STEP_OTHER);
	/* Far direct in 64-bit code ("i64"); far indirect through a register. */
	assert_int_equal(CLASSIFY(m64, 0x9a, 0, 0, 0, 0, 8, 0).kind, STEP_OTHER);
	assert_int_equal(CLASSIFY(m32, 0x9a, 0, 0, 0, 0, 8, 0).kind, STEP_BRANCH);
	assert_int_equal(CLASSIFY(m32, 0xff, 0xd8).kind, STEP_OTHER);	/* lcall *%eax */
	assert_int_equal(CLASSIFY(m32, 0xff, 0x18).kind, STEP_BRANCH);	/* lcall *(%eax) */
	/* Bytes that end first. */
	assert_int_equal(CLASSIFY(m64, 0x70).kind, STEP_OTHER);
	assert_int_equal(CLASSIFY(m64, 0x0f, 0x23).kind, STEP_OTHER);
	/* MOV to CR5, DR8: #UD, no KVM fault; MOV to CR0 is KVM's (#GP). */
	assert_false(CLASSIFY(m64, 0x0f, 0x22, 0xe8).kvm_faults);
	assert_int_equal(CLASSIFY(m64, 0x44, 0x0f, 0x23, 0xc0).kind, STEP_OTHER);
	i = CLASSIFY(m64, 0x0f, 0x22, 0xc0);
	assert_true(i.kvm_faults);
	assert_int_equal(step_kvm_fault_vector(&i, 0, 0), X86_VEC_GP);
	/* VMREAD takes no prefix (NP); 66 0F 79 /r is AMD's EXTRQ. INVPCID needs 66. */
	assert_true(CLASSIFY(m64, 0x0f, 0x78, 0xc0).kvm_faults);
	assert_false(CLASSIFY(m64, 0x66, 0x0f, 0x79, 0xc0).kvm_faults);
	assert_false(CLASSIFY(m64, 0x0f, 0x38, 0x82, 0x00).kvm_faults);
	assert_true(CLASSIFY(m64, 0x66, 0x0f, 0x38, 0x82, 0x00).kvm_faults);
	/* REX.W takes precedence over 66 (SDM vol. 2 2.2.1.2): POPFQ. */
	assert_int_equal(CLASSIFY(m64, 0x66, 0x49, 0x9d).opsize, 8);
	assert_int_equal(CLASSIFY(m64, 0x66, 0x9d).opsize, 2);
}

/* What step_certain_fault() needs read off the stack, by instruction and mode. */
static void test_certain_fault_stack(void **state)
{
	static const struct {
		uint8_t b[3];
		size_t n;
		bool long64, vm86;
		enum step_stack_read want;
	} cases[] = {
		{ { 0xc3 }, 1, true, false, STEP_STACK_RET },
		{ { 0x48, 0xc3 }, 2, true, false, STEP_STACK_NONE },        /* judged with a prefix: none */
		{ { 0xc2, 0x08, 0x00 }, 3, true, false, STEP_STACK_NONE }, /* RET imm16 */
		{ { 0xc3 }, 1, false, false, STEP_STACK_NONE },             /* outside 64-bit code */
		{ { 0x9d }, 1, false, true, STEP_STACK_FLAGS_AT_0 },
		{ { 0xcf }, 1, false, true, STEP_STACK_FLAGS_AT_4 },
		{ { 0x66, 0x9d }, 2, false, true, STEP_STACK_NONE },        /* POPFD */
		{ { 0x9d }, 1, false, false, STEP_STACK_NONE },             /* not virtual-8086 */
		{ { 0x90 }, 1, false, true, STEP_STACK_NONE },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct step_cpu c = {
			.long64 = cases[i].long64, .real = cases[i].vm86,
			.rflags = cases[i].vm86 ? X86_RFLAGS_VM : 0,
		};

		if (step_certain_fault_stack(cases[i].b, cases[i].n, &c) != cases[i].want)
			fail_msg("case %zu: %d, not %d", i, step_certain_fault_stack(cases[i].b, cases[i].n, &c),
				 cases[i].want);
	}
}

static void test_tf_model(void **state)
{
	struct step_tf_inputs in = { .tf = false, .popped = 0x302, .popped_valid = true };

	(void)state;
	assert_true(step_tf_after(STEP_POPF, &in));
	in.tf = true;
	in.popped = 0x202;
	assert_false(step_tf_after(STEP_POPF, &in));
	assert_false(step_tf_after(STEP_IRET, &in));
	/* A stack that cannot be read: the POPF faults, TF stays. */
	in.popped_valid = false;
	assert_true(step_tf_after(STEP_POPF, &in));
	in = (struct step_tf_inputs){ .tf = false, .r11 = 0x302 };
	assert_true(step_tf_after(STEP_SYSRET, &in));
	in = (struct step_tf_inputs){ .tf = true, .fmask = 0x47700 };
	assert_false(step_tf_after(STEP_SYSCALL, &in));
	in.fmask = 0x200;
	assert_true(step_tf_after(STEP_SYSCALL, &in));
	in = (struct step_tf_inputs){ .tf = true };
	assert_false(step_tf_after(STEP_INT3, &in));
	assert_false(step_tf_after(STEP_INTN, &in));
	assert_false(step_tf_after(STEP_INT1, &in));
	/* INTO with OF clear delivers nothing: the guest's TF stays (it traps after it). */
	assert_true(step_tf_after(STEP_INTO, &in));
	in.of = true;
	assert_false(step_tf_after(STEP_INTO, &in));
	assert_true(step_tf_after(STEP_OTHER, &in));
	assert_true(step_tf_after(STEP_PUSHF, &in));
}

static void test_rearm(void **state)
{
	(void)state;
	/* After a step TF may be gone (POPF, IRET, KVM's own emulator). */
	assert_true(step_rearm_after_exit(KVM_EXIT_DEBUG));
	assert_true(step_rearm_after_exit(KVM_EXIT_INTR));
	/* Pending completions are steps themselves. */
	assert_false(step_rearm_after_exit(KVM_EXIT_IO));
	assert_false(step_rearm_after_exit(KVM_EXIT_MMIO));
	assert_false(step_rearm_after_exit(KVM_EXIT_X86_RDMSR));
	assert_false(step_rearm_after_exit(KVM_EXIT_X86_WRMSR));
	/* ... and until then the instruction is KVM's, not the VMM's to check. */
	assert_true(step_completes_in_kvm(KVM_EXIT_IO));
	assert_true(step_completes_in_kvm(KVM_EXIT_MMIO));
	assert_true(step_completes_in_kvm(KVM_EXIT_X86_RDMSR));
	assert_true(step_completes_in_kvm(KVM_EXIT_X86_WRMSR));
	assert_false(step_completes_in_kvm(KVM_EXIT_DEBUG));
	assert_false(step_completes_in_kvm(KVM_EXIT_HLT));
	assert_false(step_completes_in_kvm(KVM_EXIT_EXCEPTION));
}

static void test_hlt_and_delivery(void **state)
{
	struct step_insn hlt = { .kind = STEP_HLT }, into = { .kind = STEP_INTO };
	struct step_insn int3 = { .kind = STEP_INT3 }, nop = { .kind = STEP_OTHER };

	(void)state;
	assert_true(step_hlt_unstepped(&hlt, 0));
	assert_false(step_hlt_unstepped(&hlt, 3));	/* #GP there: stepped */
	assert_false(step_hlt_unstepped(&nop, 0));
	assert_true(step_delivers(&int3, 0));
	assert_false(step_delivers(&into, 0));
	assert_true(step_delivers(&into, X86_RFLAGS_OF));
	assert_false(step_delivers(&nop, 0));
}

static void test_debug_exit(void **state)
{
	struct step_db d;

	(void)state;
	/* The VMM's own step: nothing for the guest. */
	d = step_debug_exit(X86_DR6_ACTIVE_LOW | X86_DR6_BS, false, 0, 0);
	assert_true(d.completed);
	assert_false(d.inject);
	/* The guest's TF was set when the instruction began: #DB with BS. */
	d = step_debug_exit(X86_DR6_ACTIVE_LOW | X86_DR6_BS, true, 0, 0);
	assert_true(d.inject);
	assert_int_equal(d.payload, X86_DR6_BS);
	/* A data breakpoint of the guest's, hit in a step of the VMM's. */
	d = step_debug_exit(X86_DR6_ACTIVE_LOW | X86_DR6_BS | 2, false, 0x100004 /* L1, write */, 0);
	assert_true(d.inject);
	assert_int_equal(d.payload, 2);
	/* B1 for a disabled breakpoint never causes a #DB on its own. */
	d = step_debug_exit(X86_DR6_ACTIVE_LOW | X86_DR6_BS | 2, false, 0x1, 0);
	assert_false(d.inject);
	/*
	 * Nor rides along with one that does: KVM left another address in the
	 * hardware's DR1 (the lab: B0-3 of a step at RIP 0 in CS-based code).
	 */
	d = step_debug_exit(X86_DR6_ACTIVE_LOW | X86_DR6_BS | 3, true, 0x1, 0);
	assert_int_equal(d.payload, X86_DR6_BS | 1);
	d = step_debug_exit(X86_DR6_ACTIVE_LOW | X86_DR6_BS | 0xd, true, 0x400, 0);
	assert_int_equal(d.payload, X86_DR6_BS);
	/* The guest's own disabled DR2 at the next instruction: B2, computed. */
	d = step_debug_exit(X86_DR6_ACTIVE_LOW | X86_DR6_BS, true, 0x400, 4);
	assert_int_equal(d.payload, X86_DR6_BS | 4);
	d = step_debug_exit(X86_DR6_ACTIVE_LOW | X86_DR6_BS, false, 0x400, 4);
	assert_false(d.inject);
	/*
	 * The guest's enabled DR0 at the next instruction after a MOV DR that
	 * KVM emulated: its BS-only #DB gets B0 from the caller, as the CPU
	 * reports it beside the step trap; it causes no #DB by itself.
	 */
	d = step_debug_exit(X86_DR6_ACTIVE_LOW | X86_DR6_BS, true, 0x401, 1);
	assert_true(d.inject);
	assert_int_equal(d.payload, X86_DR6_BS | 1);
	d = step_debug_exit(X86_DR6_ACTIVE_LOW | X86_DR6_BS, false, 0x401, 1);
	assert_false(d.inject);
	/*
	 * The guest's enabled instruction breakpoint at the next instruction,
	 * reported beside a step of the VMM's (the lab's TCG does, even with
	 * RF set): the caller raises it before that instruction, unless RF
	 * holds it, never here. Beside the guest's own trap it rides along.
	 */
	d = step_debug_exit(X86_DR6_ACTIVE_LOW | X86_DR6_BS | 1, false, 0x401 /* L0, execute */, 0);
	assert_true(d.completed);
	assert_false(d.inject);
	d = step_debug_exit(X86_DR6_ACTIVE_LOW | X86_DR6_BS | 1, true, 0x401, 0);
	assert_true(d.inject);
	assert_int_equal(d.payload, X86_DR6_BS | 1);
	/* A data breakpoint (DR0 write) hit by the step still raises one. */
	d = step_debug_exit(X86_DR6_ACTIVE_LOW | X86_DR6_BS | 1, false, 0x10401 /* L0, R/W 01 */, 0);
	assert_true(d.inject);
	assert_int_equal(d.payload, 1);
	/* An instruction breakpoint: a fault, nothing completed. */
	d = step_debug_exit(X86_DR6_ACTIVE_LOW | 1, true, 0x2 /* G0 */, 0);
	assert_false(d.completed);
	assert_true(d.inject);
	assert_int_equal(d.payload, 1);
	/* General detect. */
	d = step_debug_exit(X86_DR6_ACTIVE_LOW | X86_DR6_BD, false, 0, 0);
	assert_true(d.inject);
	assert_int_equal(d.payload, X86_DR6_BD);
}

static void test_dr6_deliver(void **state)
{
	(void)state;
	/* B0-3 replaced, BS sticks until the guest clears it, fixed bits kept. */
	assert_int_equal(step_dr6_deliver(X86_DR6_ACTIVE_LOW | 2, 1), X86_DR6_ACTIVE_LOW | 1);
	assert_int_equal(step_dr6_deliver(X86_DR6_ACTIVE_LOW | X86_DR6_BS, 1), X86_DR6_ACTIVE_LOW | X86_DR6_BS | 1);
	assert_int_equal(step_dr6_deliver(X86_DR6_ACTIVE_LOW, X86_DR6_BS), X86_DR6_ACTIVE_LOW | X86_DR6_BS);
	/* RTM is active low in DR6, active high in the payload. */
	assert_int_equal(step_dr6_deliver(X86_DR6_ACTIVE_LOW, X86_DR6_RTM), X86_DR6_ACTIVE_LOW & ~X86_DR6_RTM);
	/* Bit 12 (enabled breakpoint in the payload format) never reaches DR6. */
	assert_int_equal(step_dr6_deliver(X86_DR6_ACTIVE_LOW, 1ull << 12), X86_DR6_ACTIVE_LOW);
}

static void test_escaped(void **state)
{
	struct step_insn nop = { .kind = STEP_OTHER, .len = 1 };
	struct step_insn jmp = { .kind = STEP_BRANCH };
	struct step_insn movs = { .kind = STEP_OTHER, .rep = true };

	(void)state;
	/* An OUT exits at itself; elsewhere means code ran in between. */
	assert_false(step_escaped(&nop, 0x1000, 0x1000, false, false));
	assert_true(step_escaped(&nop, 0x1000, 0x2000, false, false));
	/* A load that faulted, whose handler returned to retry it. */
	assert_true(step_escaped(&nop, 0x1000, 0x1000, true, true));
	assert_false(step_escaped(&nop, 0x1000, 0x1001, true, true));
	/* jmp . and a REP iteration land on themselves legitimately. */
	assert_false(step_escaped(&jmp, 0x1000, 0x1000, true, true));
	assert_false(step_escaped(&movs, 0x1000, 0x1000, true, true));
	/* An instruction breakpoint stops before it ran. */
	assert_false(step_escaped(&nop, 0x1000, 0x1000, true, false));
}

static void test_advance(void **state)
{
	(void)state;
	assert_int_equal(step_advance(0xfffffffffffffffeull, 3, m64), 1);
	assert_int_equal(step_advance(0xfffffffeull, 3, m64), 0x100000001ull);
	assert_int_equal(step_advance(0xfffffffeull, 3, m32), 1);		/* EIP wraps */
	assert_int_equal(step_advance(0xfffe, 3, m16), 1);			/* IP wraps */
	assert_int_equal(step_advance(0x1000, 3, m16), 0x1003);
}

static void test_diverted(void **state)
{
	struct step_insn load = { .kind = STEP_OTHER, .len = 3, .falls = true };
	struct step_insn popf = { .kind = STEP_POPF, .len = 1, .falls = true };
	struct step_insn unknown = { .kind = STEP_OTHER, .len = 3 };	/* no full decode */
	struct step_insn movs = { .kind = STEP_OTHER, .len = 2, .falls = true, .rep = true };
	struct step_insn iret = { .kind = STEP_IRET, .len = 1, .falls = true };
	struct step_insn movss = { .kind = STEP_MOV_SS, .len = 2, .falls = true };
	struct step_insn sti = CLASSIFY(m64, 0xfb);
	struct step_insn mov_dr7 = { .kind = STEP_MOV_DR, .len = 3, .falls = true };

	(void)state;
	assert_false(step_diverted(&load, 0x1000, 0x1003, m64));
	/* At a handler (stopped there), or past the handler's return. */
	assert_true(step_diverted(&load, 0x1000, 0x100080, m64));
	assert_true(step_diverted(&load, 0x1000, 0x1008, m64));
	/* Back on itself: step_escaped()'s case, not this one. */
	assert_true(step_diverted(&load, 0x1000, 0x1000, m64));
	assert_false(step_diverted(&popf, 0x1000, 0x1001, m32));
	assert_true(step_diverted(&popf, 0x1000, 0x2000, m32));
	/* EIP wraps to 0 after the last byte of a 32-bit segment. */
	assert_false(step_diverted(&load, 0xfffffffd, 0, m32));
	assert_true(step_diverted(&load, 0xfffffffd, 0x100000000ull, m32));
	/* Where the next instruction is not known, nothing is concluded. */
	assert_false(step_diverted(&unknown, 0x1000, 0x2000, m64));
	{
		/* No length at all, KVM's emulator's exit: a fault's handler ran, unless it is close behind. */
		struct step_insn none = { .kind = STEP_OTHER };

		assert_true(step_undecodable_diverted(&none, 0x1000, 0x2000, m64));
		assert_true(step_undecodable_diverted(&none, 0x1000, 0x1000, m64));
		assert_true(step_undecodable_diverted(&none, 0x1000, 0x1010, m64));
		assert_false(step_undecodable_diverted(&none, 0x1000, 0x100f, m64));
		assert_false(step_undecodable_diverted(&none, 0x1000, 0x1001, m64));
		assert_false(step_undecodable_diverted(&none, 0xfffe, 0x0003, m16));	/* IP wraps */
		assert_true(step_undecodable_diverted(&none, 0xfffe, 0x0020, m16));
		assert_false(step_undecodable_diverted(&unknown, 0x1000, 0x2000, m64));	/* a length */
	}
	{
		/* A branch: anywhere but where it completes faulted; a jump that moved RSP too. */
		struct step_insn jmp = CLASSIFY(m32, 0xea, 0, 0, 0, 0, 0x3b, 0),
				 call = CLASSIFY(m64, 0xe8, 0, 0, 0, 0),
				 jmp_ind = CLASSIFY(m64, 0xff, 0xe0), call_ind = CLASSIFY(m64, 0xff, 0xd0);
		const struct step_branch to = { .to = { 0x2000, 0x1005 }, .n = 2 },
					 unknown_to = { .n = 0 }, nowhere = { .faults = true };

		assert_int_equal(jmp.kind, STEP_BRANCH);
		assert_true(jmp.jump && jmp_ind.jump);
		assert_false(call.jump || call_ind.jump);
		assert_false(step_branch_missed(&call, &to, 0x1005));
		assert_false(step_branch_missed(&call, &to, 0x2000));
		assert_true(step_branch_missed(&call, &to, 0x3000));
		assert_false(step_branch_missed(&call, &unknown_to, 0x3000));	/* not known */
		assert_true(step_branch_missed(&jmp_ind, &nowhere, 0x2000));	/* its read faults */
		assert_true(step_branch_missed(&jmp_ind, &nowhere, 0x1002));
		assert_false(step_branch_missed(&load, &to, 0x3000));
		assert_true(step_jump_faulted(&jmp_ind, 0x8000, 0x7ff4));
		assert_false(step_jump_faulted(&jmp_ind, 0x8000, 0x8000));
		assert_false(step_jump_faulted(&call_ind, 0x8000, 0x7ff8));
	}
	assert_false(step_diverted(&movs, 0x1000, 0x1000, m64));
	assert_false(step_diverted(&iret, 0x1000, 0x2000, m64));
	assert_false(step_diverted(&movss, 0x1000, 0x1005, m32));	/* the shadowed one ran too */
	sti.falls = true;
	assert_int_equal(sti.kind, STEP_STI);
	assert_int_equal(sti.len, 1);
	assert_false(step_diverted(&sti, 0x1000, 0x1005, m64));	/* so may STI's, on some CPUs */
	/* MOV to DR7 with a reserved bit: the #GP KVM injects. */
	assert_false(step_diverted(&mov_dr7, 0x1000, 0x1003, m64));
	assert_true(step_diverted(&mov_dr7, 0x1000, 0x100080, m64));
}

static void test_task_switch_bits(void **state)
{
	static const uint8_t ltr[] = { 0x0f, 0x00, 0xd8 }, lldt[] = { 0x0f, 0x00, 0xd0 };
	const struct step_mode m32 = { .cs_d = true };
	struct step_insn i;

	(void)state;
	step_classify(ltr, sizeof(ltr), m32, &i);
	assert_int_equal(i.kind, STEP_LTR);
	step_classify(lldt, sizeof(lldt), m32, &i);
	assert_int_equal(i.kind, STEP_OTHER);
	assert_int_equal(step_tss_flags_offset(9), 0x24);
	assert_int_equal(step_tss_flags_offset(11), 0x24);
	assert_int_equal(step_tss_flags_offset(1), 0x10);
	assert_int_equal(step_tss_flags_offset(3), 0x10);
	assert_int_equal(step_tss_flags_offset(2), -1);	/* an LDT */
}

static void test_missed_target(void **state)
{
	struct step_insn iret = CLASSIFY(m64, 0x48, 0xcf), popf = CLASSIFY(m64, 0x9d);
	struct step_insn sysenter = CLASSIFY(m64, 0x0f, 0x34), sysexitq = CLASSIFY(m64, 0x48, 0x0f, 0x35);

	(void)state;
	assert_int_equal(iret.kind, STEP_IRET);
	/* Where its frame said: completed. Anywhere else: it faulted. */
	assert_false(step_missed_target(&iret, true, 0x2000, 0x2000));
	assert_true(step_missed_target(&iret, true, 0x2000, 0x1002));
	assert_true(step_missed_target(&iret, true, 0x2000, 0x100080));
	/* The frame unread, or a task switch: nothing concluded. */
	assert_false(step_missed_target(&iret, false, 0x2000, 0x1002));
	assert_false(step_missed_target(&popf, true, 0x2000, 0x1002));
	/* SYSENTER at IA32_SYSENTER_EIP, SYSEXIT at RDX: anywhere else, a fault. */
	assert_int_equal(sysenter.kind, STEP_SYSENTER);
	assert_int_equal(sysenter.len, 2);
	assert_int_equal(sysexitq.kind, STEP_SYSEXIT);
	assert_int_equal(sysexitq.opsize, 8);
	assert_int_equal(sysexitq.len, 3);
	assert_false(step_missed_target(&sysenter, true, 0x5000, 0x5000));
	assert_true(step_missed_target(&sysenter, true, 0x5000, 0x100080));
	assert_true(step_missed_target(&sysexitq, true, 0x1000, 0x100080));
}

static void test_frames(void **state)
{
	/* RIP, CS, RFLAGS (IF, TF, bit 1), RSP ... */
	const uint64_t plain[4] = { 0x1000, 0x08, 0x302, 0x7ff0 };
	const uint64_t with_err[4] = { 0, 0x1000, 0x08, 0x302 };
	const uint64_t trap[4] = { 0x1003, 0x08, 0x302, 0x7ff0 };
	const uint64_t no_tf[4] = { 0x1000, 0x08, 0x202, 0x7ff0 };
	const uint64_t no_bit1[4] = { 0x1000, 0x08, 0x300, 0x7ff0 };
	const uint64_t other_rip[4] = { 0x2000, 0x08, 0x302, 0x7ff0 };
	const uint64_t not_cs[4] = { 0x1000, 0x10008, 0x302, 0x7ff0 };

	(void)state;
	assert_true(step_vector_error_code(13));
	assert_true(step_vector_error_code(14));
	assert_true(step_vector_error_code(8));
	assert_true(step_vector_error_code(17));
	assert_false(step_vector_error_code(6));
	assert_false(step_vector_error_code(3));
	assert_false(step_vector_error_code(32));
	assert_int_equal(step_frame_rflags(plain, false, 0x1000, 0x1003), 2);
	assert_int_equal(step_frame_rflags(with_err, true, 0x1000, 0x1003), 3);
	assert_int_equal(step_frame_rflags(trap, false, 0x1000, 0x1003), 2);
	/* The wrong layout for the vector, or what is no frame of this step's. */
	assert_int_equal(step_frame_rflags(with_err, false, 0x1000, 0x1003), -1);
	assert_int_equal(step_frame_rflags(plain, true, 0x1000, 0x1003), -1);
	/* Some CPUs push TF clear, where stepping is done by emulation (this project's). */
	assert_int_equal(step_frame_rflags(no_tf, false, 0x1000, 0x1003), 2);
	assert_int_equal(step_frame_rflags(no_bit1, false, 0x1000, 0x1003), -1);
	assert_int_equal(step_frame_rflags(other_rip, false, 0x1000, 0x1003), -1);
	assert_int_equal(step_frame_rflags(not_cs, false, 0x1000, 0x1003), -1);
}

/* A 64-bit code descriptor (base 0, limit 4 GiB, accessed), DPL dpl. */
static uint64_t code64(unsigned dpl)
{
	return 0x00af9b000000ffffull | (uint64_t)dpl << X86_DESC_DPL_SHIFT;
}

static void test_code_segment(void **state)
{
	struct kvm_segment cs;

	(void)state;
	step_segment_cache(code64(0) & ~X86_DESC_A, 0x08, &cs);
	assert_int_equal(cs.selector, 0x08);
	assert_int_equal(cs.base, 0);
	assert_int_equal(cs.limit, 0xffffffff);
	assert_int_equal(cs.type, 0xb);			/* accessed set */
	assert_int_equal(cs.dpl, 0);
	assert_true(cs.present && cs.s && cs.l && cs.g);
	assert_false(cs.db);
	/* 32-bit code; a byte-granular data segment at 0x10000 for SS. */
	step_segment_cache(0x00cf9b000000ffffull, 0x38, &cs);
	assert_false(cs.l);
	assert_true(cs.db);
	step_segment_cache(0x0040930100000fffull, 0x10, &cs);
	assert_int_equal(cs.base, 0x10000);
	assert_int_equal(cs.limit, 0xfff);
	assert_int_equal(cs.type, 3);
	assert_true(cs.db && !cs.g && !cs.l);
}

static void test_syscall_sysret(void **state)
{
	/* SYSCALL CS 0x08 (SS 0x10); SYSRET base 0x1b: CS 0x2b (64) or 0x1b (32), SS 0x23. */
	uint64_t star = (0x1bull << 48) | (0x08ull << 32);
	struct step_syscall sc;

	(void)state;
	step_syscall_plan(0x4002, 0x10302 | X86_RFLAGS_AC, star, 0xffffffff81000000ull,
			  X86_RFLAGS_TF | X86_RFLAGS_IF, &sc);
	assert_int_equal(sc.rcx, 0x4002);
	assert_int_equal(sc.r11, 0x302 | X86_RFLAGS_AC);	/* RF clear, TF kept */
	assert_int_equal(sc.rflags, 0x2 | X86_RFLAGS_AC);	/* TF and IF masked */
	assert_int_equal(sc.rip, 0xffffffff81000000ull);
	assert_int_equal(sc.cs.selector, 0x08);
	assert_true(sc.cs.l && !sc.cs.db && sc.cs.dpl == 0);
	assert_int_equal(sc.ss.selector, 0x10);
	assert_true(sc.ss.db && sc.ss.dpl == 0 && sc.ss.type == 3);
	/* Flat, present, 4 GiB: the fixed caches SYSCALL loads (SDM vol. 2 SYSCALL). */
	assert_true(sc.cs.present && sc.cs.s && sc.cs.g && sc.cs.type == 0xb && sc.cs.base == 0);
	assert_true(sc.ss.present && sc.ss.s && sc.ss.g && sc.ss.base == 0);
	assert_int_equal(sc.cs.limit, 0xffffffff);
	assert_int_equal(sc.ss.limit, 0xffffffff);
	/* STAR's RPL bits never reach CS. */
	step_syscall_plan(0x4002, 0x2, star | (3ull << 32), 0x1000, 0, &sc);
	assert_int_equal(sc.cs.selector, 0x08);
	assert_int_equal(sc.ss.selector, 0x13);

	assert_true(step_sysret_plan(0x401000, 0x10302 | X86_RFLAGS_VM, star, true, false, &sc));
	assert_int_equal(sc.rip, 0x401000);
	assert_int_equal(sc.rflags, 0x302);			/* RF and VM clear */
	assert_int_equal(sc.cs.selector, 0x2b);
	assert_true(sc.cs.l && sc.cs.dpl == 3);
	assert_int_equal(sc.ss.selector, 0x23);
	assert_int_equal(sc.ss.dpl, 3);
	assert_true(step_sysret_plan(0xffffffff00401000ull, 0x2, star, false, false, &sc));
	assert_int_equal(sc.rip, 0x401000);			/* ECX */
	assert_int_equal(sc.cs.selector, 0x1b);
	assert_true(!sc.cs.l && sc.cs.db);
	assert_true(sc.cs.present && sc.ss.present && sc.ss.s && sc.ss.type == 3);
	/* A non-canonical RCX is #GP, the CPU's, for SYSRETQ; SYSRETD takes ECX. */
	assert_false(step_sysret_plan(0x0000800000000000ull, 0x2, star, true, false, &sc));
	assert_true(step_sysret_plan(0x0000800000401000ull, 0x2, star, false, false, &sc));
	assert_int_equal(sc.rip, 0x401000);
	/* The trap follows TF at their end. */
	assert_true(step_trap_owed(STEP_SYSCALL, false, true));
	assert_false(step_trap_owed(STEP_SYSCALL, true, false));
	assert_true(step_trap_owed(STEP_SYSRET, false, true));
	assert_true(step_trap_owed(STEP_OTHER, true, false));
	assert_false(step_trap_owed(STEP_POPF, false, true));
}

/* XBEGIN: C7 F8 with a 16- or 32-bit offset by the operand size; LOCK is #UD, left as any. */
static void test_xbegin(void **state)
{
	static const struct step_mode m64 = { .cs_l = true }, m32 = { .cs_d = true }, m16 = { 0 };
	static const uint8_t rel32[] = { 0xc7, 0xf8, 0xf0, 0xff, 0xff, 0xff };
	static const uint8_t rel16_64[] = { 0x66, 0xc7, 0xf8, 0x10, 0x80 };
	static const uint8_t rexw_66[] = { 0x66, 0x48, 0xc7, 0xf8, 0x10, 0x00, 0x00, 0x00 };
	static const uint8_t locked[] = { 0xf0, 0xc7, 0xf8, 0x00, 0x00, 0x00, 0x00 };
	static const uint8_t mov_imm[] = { 0xc7, 0xc0, 0x00, 0x00, 0x00, 0x00 }; /* mov eax, 0 */
	struct step_insn in;
	struct step_xbegin x;

	(void)state;
	step_classify(rel32, sizeof(rel32), m64, &in);
	assert_int_equal(in.kind, STEP_XBEGIN);
	assert_int_equal(in.len, 6);
	assert_int_equal(in.rel, -16);
	step_classify(rel32, 5, m64, &in);		/* the offset cut short */
	assert_int_equal(in.kind, STEP_OTHER);
	step_classify(rel16_64, sizeof(rel16_64), m64, &in);
	assert_int_equal(in.kind, STEP_XBEGIN);
	assert_int_equal(in.len, 5);
	assert_int_equal(in.rel, -0x7ff0);
	step_classify(rexw_66, sizeof(rexw_66), m64, &in);
	assert_int_equal(in.len, 8);
	assert_int_equal(in.rel, 0x10);
	step_classify(rel32, 4, m16, &in);		/* 16-bit code: rel16 */
	assert_int_equal(in.kind, STEP_XBEGIN);
	assert_int_equal(in.len, 4);
	assert_int_equal(in.rel, -16);
	step_classify(rel16_64 + 1, 4, m32, &in);
	assert_int_equal(in.kind, STEP_OTHER);	/* 32-bit code wants 4 bytes */
	step_classify(rel16_64, sizeof(rel16_64), m32, &in);
	assert_int_equal(in.len, 5);
	step_classify(locked, sizeof(locked), m64, &in);
	assert_int_equal(in.kind, STEP_OTHER);
	step_classify(mov_imm, sizeof(mov_imm), m64, &in);
	assert_int_equal(in.kind, STEP_OTHER);

	/* 64-bit: RIP + len + rel; a non-canonical fallback is #GP(0). */
	step_classify(rel32, sizeof(rel32), m64, &in);
	assert_true(step_xbegin_abort(&in, 0x401000, true, false, 0, false, &x));
	assert_int_equal(x.rip, 0x401000 + 6 - 16);
	assert_int_equal(x.status, 0);
	assert_true(step_xbegin_abort(&in, 0x401000, true, false, 0, true, &x));
	assert_int_equal(x.status, X86_RTM_ABORT_DEBUG);
	in.rel = 0x20;
	assert_false(step_xbegin_abort(&in, 0x7ffffffffff0ull, true, false, 0, false, &x));
	assert_true(step_xbegin_abort(&in, 0x7ffffffffff0ull, true, true, 0, false, &x));
	assert_int_equal(x.rip, 0x800000000016ull);	/* canonical with 5-level paging */
	/* Elsewhere: EIP + len + rel in 32 bits, never cut to 16, within CS's limit. */
	step_classify(rel32, 4, m16, &in);
	assert_true(step_xbegin_abort(&in, 0x20, false, false, 0xffff, false, &x));
	assert_int_equal(x.rip, 0x20 + 4 - 16);
	assert_true(step_xbegin_abort(&in, 0x8, false, false, 0xffffffff, false, &x));
	assert_int_equal(x.rip, 0xfffffffc);		/* wraps at 32 bits */
	assert_false(step_xbegin_abort(&in, 0x8, false, false, 0xffff, false, &x));
	in.rel = 0x10;
	assert_false(step_xbegin_abort(&in, 0xfff8, false, false, 0xffff, false, &x));
	assert_true(step_xbegin_abort(&in, 0xfff8, false, false, 0xfffff, false, &x));
	assert_int_equal(x.rip, 0x1000c);
	in.kind = STEP_OTHER;
	assert_false(step_xbegin_abort(&in, 0x20, false, false, 0xffff, false, &x));
}

static void test_iret_selector_fault(void **state)
{
	const struct kvm_dtable gdt = { .base = 0x1000, .limit = 0x3f };
	struct kvm_segment ldt = { .limit = 0xf, .present = 1 };
	uint32_t err = 7;

	(void)state;
	assert_int_equal(step_code_selector_fault(0x3b, &gdt, &ldt, &err), -1);	/* the last entry */
	assert_int_equal(step_code_selector_fault(0x43, &gdt, &ldt, &err), X86_VEC_GP);
	assert_int_equal(err, 0x40);					/* RPL gone */
	assert_int_equal(step_code_selector_fault(0xfff8, &gdt, &ldt, &err), X86_VEC_GP);
	assert_int_equal(err, 0xfff8);
	assert_int_equal(step_code_selector_fault(0x3, &gdt, &ldt, &err), X86_VEC_GP);
	assert_int_equal(err, 0);
	assert_int_equal(step_code_selector_fault(0xc, &gdt, &ldt, &err), -1);	/* LDT entry 1 */
	assert_int_equal(step_code_selector_fault(0x14, &gdt, &ldt, &err), X86_VEC_GP);
	assert_int_equal(err, 0x14);					/* TI kept */
	ldt.unusable = 1;
	assert_int_equal(step_code_selector_fault(0xc, &gdt, &ldt, &err), X86_VEC_GP);
}

/* Where KVM may inject a fault by itself: the decoder's #UD, the legacy #AC. */
static void test_kvm_may_inject(void **state)
{
	static const uint8_t lock_cmp[] = { 0xf0, 0x66, 0x41, 0x81, 0x3c, 0x33, 0x9e, 0xe4 },
			     lock_add[] = { 0xf0, 0x01, 0x37 };
	const uint64_t am = X86_CR0_AM | X86_CR0_PE, ac = X86_RFLAGS_FIXED | X86_RFLAGS_AC;
	struct step_insn insn;

	(void)state;
	step_classify(lock_cmp, sizeof(lock_cmp), (struct step_mode){ .cs_l = true }, &insn);
	assert_true(step_undecodable(&insn));	/* len 0: the caller's decoder gave none */
	assert_true(step_kvm_may_inject(&insn, 0, 0, X86_RFLAGS_FIXED));
	insn.len = sizeof(lock_cmp);
	assert_false(step_undecodable(&insn));
	assert_false(step_kvm_may_inject(&insn, 0, 0, X86_RFLAGS_FIXED));
	step_classify(lock_add, sizeof(lock_add), (struct step_mode){ .cs_l = true }, &insn);
	insn.len = sizeof(lock_add);
	assert_true(step_kvm_may_inject(&insn, 3, am, ac));
	assert_false(step_kvm_may_inject(&insn, 0, am, ac));
	assert_false(step_kvm_may_inject(&insn, 3, X86_CR0_PE, ac));
	assert_false(step_kvm_may_inject(&insn, 3, am, X86_RFLAGS_FIXED));
	insn.rep = true;
	insn.len = 0;
	assert_false(step_undecodable(&insn));	/* a string instruction: its own rules */

	/* What KVM runs itself and may answer with a fault it queues. */
	{
		static const struct { uint8_t b[5]; size_t n; bool faults; } t[] = {
			{ { 0x0f, 0x33 }, 2, true },			/* RDPMC */
			{ { 0x0f, 0x01, 0xd1 }, 3, true },		/* XSETBV */
			{ { 0x0f, 0x22, 0xd8 }, 3, true },		/* MOV CR3, RAX */
			{ { 0x0f, 0xa2 }, 2, true },			/* CPUID */
			{ { 0x0f, 0x01, 0xd8 }, 3, true },		/* VMRUN */
			{ { 0x0f, 0x01, 0xdf }, 3, true },		/* INVLPGA, the last SVM one */
			{ { 0xf3, 0x0f, 0xc7, 0x30 }, 4, true },	/* VMXON (%rax) */
			{ { 0x66, 0x0f, 0x38, 0x82, 0x08 }, 5, true },	/* INVPCID */
			{ { 0x0f, 0x01, 0xf9 }, 3, false },		/* RDTSCP */
			{ { 0x0f, 0xc7, 0xf0 }, 3, false },		/* RDRAND EAX */
			{ { 0x0f, 0xc7, 0x37 }, 3, true },		/* VMPTRST (%rdi) */
			{ { 0x0f, 0xc7, 0x0f }, 3, false },		/* CMPXCHG8B (%rdi) */
			{ { 0x0f, 0x01, 0xe0 }, 3, false },		/* SMSW EAX */
			{ { 0x90 }, 1, false },
		};

		for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
			step_classify(t[i].b, t[i].n, (struct step_mode){ .cs_l = true }, &insn);
			insn.len = (unsigned)t[i].n;
			assert_int_equal(insn.kvm_faults, t[i].faults);
			assert_int_equal(step_kvm_may_inject(&insn, 0, 0, X86_RFLAGS_FIXED), t[i].faults);
		}
	}
	/* A handler's first instruction: its length and the slots it pushed. */
	{
		static const struct { uint8_t b[5]; size_t n; bool l; int pushed; unsigned len; } t[] = {
			{ { 0x6a, 0x0e }, 2, true, 1, 2 },
			{ { 0x68, 1, 2, 3, 4 }, 5, true, 1, 5 },
			{ { 0x55 }, 1, true, 1, 1 },
			{ { 0x41, 0x57 }, 2, true, 1, 2 },
			{ { 0x41, 0x50 }, 2, true, 1, 2 },	/* PUSH R8, the first */
			{ { 0x50 }, 1, true, 1, 1 },
			{ { 0x57 }, 1, true, 1, 1 },
			{ { 0x41, 0x57 }, 2, false, -1, 0 },	/* INC ECX outside 64-bit code */
			{ { 0xf3, 0x0f, 0x1e, 0xfa }, 4, true, 0, 4 },
			{ { 0x0f, 0x01, 0xca }, 3, true, 0, 3 },
			{ { 0xfc }, 1, true, 0, 1 },
			{ { 0x48, 0x89, 0xe5 }, 3, true, -1, 0 },
			{ { 0x68, 1, 2 }, 3, true, -1, 0 },	/* cut short */
			/* A REX prefix changes nothing pushed; 66 halves the slot, 0F 1F is a hint. */
			{ { 0x48, 0x50 }, 2, true, 1, 2 },
			{ { 0x40, 0x6a, 1 }, 3, true, 1, 3 },
			{ { 0xff, 0xf0 }, 2, false, 1, 2 },	/* PUSH EAX as FF /6 */
			{ { 0x66, 0x50 }, 2, true, -1, 0 },
			{ { 0x26, 0x50 }, 2, false, -1, 0 },
			{ { 0x0f, 0x1f, 0x00 }, 3, true, -1, 0 },
		};

		for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
			unsigned len = 0;

			assert_int_equal(step_handler_first_push(t[i].b, t[i].n, t[i].l, &len),
					 t[i].pushed);
			if (t[i].pushed >= 0)
				assert_int_equal(len, t[i].len);
		}
	}
	/* The fault KVM queues for them: #UD where the feature is off, else #GP. */
	{
		static const struct { uint8_t b[5]; size_t n; uint64_t cr4, efer; int vector; } t[] = {
			{ { 0x0f, 0x33 }, 2, 0, 0, X86_VEC_GP },			/* RDPMC */
			{ { 0x0f, 0x01, 0xd1 }, 3, 0, 0, X86_VEC_UD },		/* XSETBV */
			{ { 0x0f, 0x01, 0xd1 }, 3, X86_CR4_OSXSAVE, 0, X86_VEC_GP },
			{ { 0x0f, 0x01, 0xd8 }, 3, 0, 0, X86_VEC_UD },		/* VMRUN */
			{ { 0x0f, 0x01, 0xd8 }, 3, 0, X86_EFER_SVME, X86_VEC_GP },
			{ { 0x0f, 0x01, 0xd9 }, 3, 0, 0, X86_VEC_GP },		/* VMMCALL */
			{ { 0xf3, 0x0f, 0xc7, 0x30 }, 4, 0, 0, X86_VEC_UD },	/* VMXON */
			{ { 0xf3, 0x0f, 0xc7, 0x30 }, 4, X86_CR4_VMXE, 0, X86_VEC_GP },
			{ { 0x0f, 0x78, 0xc0 }, 3, 0, 0, X86_VEC_UD },		/* VMREAD */
			{ { 0x66, 0x0f, 0x38, 0x80, 0x08 }, 5, 0, 0, X86_VEC_UD },	/* INVEPT */
			{ { 0x0f, 0x22, 0xd8 }, 3, 0, 0, X86_VEC_GP },		/* MOV CR3 */
		};

		for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
			step_classify(t[i].b, t[i].n, (struct step_mode){ .cs_l = true }, &insn);
			assert_int_equal(step_kvm_fault_vector(&insn, t[i].cr4, t[i].efer), t[i].vector);
		}
	}
}

static void test_certain_fault(void **state)
{
	static const uint8_t ud2[] = { 0x0f, 0x0b }, hlt[] = { 0xf4 },
			     mov_dr[] = { 0x0f, 0x21, 0xf8 }, lock_hlt[] = { 0xf0, 0xf4 },
			     cli[] = { 0xfa }, ret[] = { 0xc3 }, jmp_rax[] = { 0xff, 0xe0 },
			     call_r9[] = { 0x41, 0xff, 0xd1 }, mov_ss_ax[] = { 0x8e, 0xd0 };
	uint64_t gpr[16] = { [0] = 0x0000800000000000ull, [9] = 0x1000 };
	struct step_cpu c0 = { .cpl = 0, .rflags = 0x2, .long64 = true, .gpr = gpr, .gdt_limit = 0x3f };
	struct step_cpu c3 = c0;
	uint32_t err = 7;

	(void)state;
	c3.cpl = 3;
	assert_int_equal(step_certain_fault(ud2, 2, &c0, &err), X86_VEC_UD);
	assert_int_equal(err, 0);
	assert_int_equal(step_certain_fault(ud2, 1, &c0, &err), -1);
	{
		/* UD1 and UD0: their ModR/M may be fetched, so all 15 bytes must be there. */
		static const uint8_t ud1[15] = { 0x0f, 0xb9, 0x04, 0x25 }, ud0[15] = { 0x0f, 0xff, 0xc0 };

		assert_int_equal(step_certain_fault(ud1, 15, &c3, &err), X86_VEC_UD);
		assert_int_equal(step_certain_fault(ud0, 15, &c0, &err), X86_VEC_UD);
		assert_int_equal(step_certain_fault(ud1, 7, &c3, &err), -1);
		assert_int_equal(step_certain_fault(ud0, 3, &c0, &err), -1);
	}
	assert_int_equal(step_certain_fault(hlt, 1, &c0, &err), -1);	/* CPL0 halts */
	assert_int_equal(step_certain_fault(hlt, 1, &c3, &err), X86_VEC_GP);
	assert_int_equal(step_certain_fault(lock_hlt, 2, &c3, &err), -1);
	{
		/* JMP/CALL far direct: a null selector, one past the GDT, one with no LDT. */
		static const uint8_t jmp0[] = { 0xea, 0, 0, 0, 0, 0x03, 0 },
				     jmp_far[] = { 0xea, 0, 0, 0, 0, 0x40, 0 },
				     call_ldt[] = { 0x66, 0x9a, 0, 0, 0x0c, 0 },
				     jmp_ok[] = { 0xea, 0, 0, 0, 0, 0x38, 0 };
		struct step_cpu p32 = { .rflags = 0x2, .cs_d = true, .gdt_limit = 0x3f,
					.ldt_limit = -1 };

		assert_int_equal(step_certain_fault(jmp0, sizeof(jmp0), &p32, &err), X86_VEC_GP);
		assert_int_equal(err, 0);
		assert_int_equal(step_certain_fault(jmp_far, sizeof(jmp_far), &p32, &err), X86_VEC_GP);
		assert_int_equal(err, 0x40);
		assert_int_equal(step_certain_fault(call_ldt, sizeof(call_ldt), &p32, &err), X86_VEC_GP);
		assert_int_equal(err, 0x0c);
		assert_int_equal(step_certain_fault(jmp_ok, sizeof(jmp_ok), &p32, &err), -1);
		assert_int_equal(step_certain_fault(jmp0, 6, &p32, &err), -1);	/* cut short */
		p32.ldt_limit = 0xf;
		assert_int_equal(step_certain_fault(call_ldt, sizeof(call_ldt), &p32, &err), -1);
		p32.real = true;					/* real mode: a segment */
		assert_int_equal(step_certain_fault(jmp0, sizeof(jmp0), &p32, &err), -1);
	}
	{
		/* A LOCK it does not take (the caller's decoder says): #UD before HLT's #GP, real mode too. */
		struct step_cpu l3 = c3, real = { .real = true, .rflags = 0x2, .lock_ud = true };

		l3.lock_ud = true;
		assert_int_equal(step_certain_fault(lock_hlt, 2, &l3, &err), X86_VEC_UD);
		assert_int_equal(step_certain_fault(lock_hlt, 2, &real, &err), X86_VEC_UD);
		assert_int_equal(err, 0);
	}
	assert_int_equal(step_certain_fault(mov_dr, 3, &c3, &err), X86_VEC_GP);
	{
		static const uint8_t sysenter[] = { 0x0f, 0x34 };
		struct step_cpu amd = c3;

		/* SYSENTER: #UD in long mode on AMD only (Intel's goes to SYSENTER_EIP). */
		amd.lma = true;
		assert_int_equal(step_certain_fault(sysenter, 2, &amd, &err), -1);
		amd.amd = true;
		assert_int_equal(step_certain_fault(sysenter, 2, &amd, &err), X86_VEC_UD);
		amd.long64 = false;	/* compatibility mode */
		assert_int_equal(step_certain_fault(sysenter, 2, &amd, &err), X86_VEC_UD);
		amd.lma = false;
		assert_int_equal(step_certain_fault(sysenter, 2, &amd, &err), -1);
	}
	{
		static const uint8_t sysexit[] = { 0x0f, 0x35 }, sysexitq[] = { 0x48, 0x0f, 0x35 };

		/* SYSEXIT: #GP(0) above CPL0, with or without REX.W; at CPL0 it returns. */
		assert_int_equal(step_certain_fault(sysexit, 2, &c3, &err), X86_VEC_GP);
		assert_int_equal(step_certain_fault(sysexitq, 3, &c3, &err), X86_VEC_GP);
		assert_int_equal(err, 0);
		assert_int_equal(step_certain_fault(sysexitq, 3, &c0, &err), -1);
	}
	{
		static const uint8_t into[] = { 0xce }, push_es[] = { 0x06 }, evex[] = { 0x62 };
		struct step_cpu compat = c3;

		/* #UD in 64-bit code; INTO and PUSH ES are instructions elsewhere; 0x62 is EVEX. */
		assert_int_equal(step_certain_fault(into, 1, &c3, &err), X86_VEC_UD);
		assert_int_equal(step_certain_fault(push_es, 1, &c0, &err), X86_VEC_UD);
		assert_int_equal(step_certain_fault(evex, 1, &c0, &err), -1);
		compat.long64 = false;
		assert_int_equal(step_certain_fault(into, 1, &compat, &err), -1);
		assert_int_equal(step_certain_fault(push_es, 1, &compat, &err), -1);
	}
	assert_int_equal(step_certain_fault(mov_dr, 3, &c0, &err), -1);
	{
		static const uint8_t to_dr7[] = { 0x0f, 0x23, 0xfb }, to_dr0[] = { 0x0f, 0x23, 0xc3 },
				     to_dr6_r9[] = { 0x41, 0x0f, 0x23, 0xf1 };
		uint64_t g[16] = { [3] = 0x100000000000401ull, [9] = 1ull << 32 };
		struct step_cpu c = c0;

		c.gpr = g;
		assert_int_equal(step_certain_fault(to_dr7, 3, &c, &err), X86_VEC_GP);
		assert_int_equal(err, 0);
		assert_int_equal(step_certain_fault(to_dr0, 3, &c, &err), -1);	/* any address */
		assert_int_equal(step_certain_fault(to_dr6_r9, 4, &c, &err), X86_VEC_GP);
		g[3] = 0x401;
		assert_int_equal(step_certain_fault(to_dr7, 3, &c, &err), -1);
		c.long64 = false;			/* a 32-bit operand */
		g[3] = 0x100000000000401ull;
		assert_int_equal(step_certain_fault(to_dr7, 3, &c, &err), -1);
	}
	c3.dr7 = X86_DR7_GD;
	assert_int_equal(step_certain_fault(mov_dr, 3, &c3, &err), -1);
	c3.dr7 = 0;
	c0.dr7 = X86_DR7_GD;
	assert_int_equal(step_certain_fault(mov_dr, 3, &c0, &err), X86_VEC_DB);
	c0.dr7 = 0;
	/* CLI above IOPL; not with IOPL 3, not with CR4.PVI at CPL3. */
	assert_int_equal(step_certain_fault(cli, 1, &c3, &err), X86_VEC_GP);
	assert_int_equal(step_certain_fault(cli, 1, &c0, &err), -1);
	c3.rflags = 0x3002;
	assert_int_equal(step_certain_fault(cli, 1, &c3, &err), -1);
	c3.rflags = 0x2;
	c3.cr4 = X86_CR4_PVI;
	assert_int_equal(step_certain_fault(cli, 1, &c3, &err), -1);
	assert_int_equal(step_certain_fault((const uint8_t[]){ 0xfb }, 1, &c3, &err), -1);
	c3.rflags |= X86_RFLAGS_VIP;	/* STI with VIP set: #GP(0) */
	assert_int_equal(step_certain_fault((const uint8_t[]){ 0xfb }, 1, &c3, &err), X86_VEC_GP);
	assert_int_equal(step_certain_fault(cli, 1, &c3, &err), -1);
	c3.rflags = 0x2;
	c3.cr4 = 0;
	/* RET and JMP/CALL through a register to a non-canonical address. */
	c0.ret_valid = true;
	c0.ret_target = 0x1000;
	assert_int_equal(step_certain_fault(ret, 1, &c0, &err), -1);
	c0.ret_target = 0xffff7fffffffffffull;
	assert_int_equal(step_certain_fault(ret, 1, &c0, &err), X86_VEC_GP);
	c0.la57 = true;
	assert_int_equal(step_certain_fault(ret, 1, &c0, &err), -1);
	c0.la57 = false;
	assert_int_equal(step_certain_fault(jmp_rax, 2, &c0, &err), X86_VEC_GP);
	assert_int_equal(step_certain_fault(call_r9, 3, &c0, &err), -1);	/* R9 canonical */
	gpr[9] = gpr[0];
	assert_int_equal(step_certain_fault(call_r9, 3, &c0, &err), X86_VEC_GP);
	c0.long64 = false;					/* 32-bit code: EIP wraps */
	assert_int_equal(step_certain_fault(jmp_rax, 2, &c0, &err), -1);
	c0.long64 = true;
	/* MOV SS, AX: null at CPL3; past the GDT; RPL not the CPL. */
	gpr[0] = 0;
	assert_int_equal(step_certain_fault(mov_ss_ax, 2, &c0, &err), -1);	/* null, 64-bit, CPL0 */
	assert_int_equal(step_certain_fault(mov_ss_ax, 2, &c3, &err), X86_VEC_GP);
	assert_int_equal(err, 0);
	{
		/* Below CPL3 a null selector's RPL must be the CPL. */
		struct step_cpu c1 = c0;

		c1.cpl = 1;
		assert_int_equal(step_certain_fault(mov_ss_ax, 2, &c1, &err), X86_VEC_GP);
		gpr[0] = 1;
		assert_int_equal(step_certain_fault(mov_ss_ax, 2, &c1, &err), -1);
		assert_int_equal(step_certain_fault(mov_ss_ax, 2, &c0, &err), X86_VEC_GP);
		gpr[0] = 0;
	}
	gpr[0] = 0x43;
	assert_int_equal(step_certain_fault(mov_ss_ax, 2, &c3, &err), X86_VEC_GP);
	assert_int_equal(err, 0x40);
	gpr[0] = 0x13;
	assert_int_equal(step_certain_fault(mov_ss_ax, 2, &c0, &err), X86_VEC_GP);
	assert_int_equal(err, 0x10);
	gpr[0] = 0x10;
	assert_int_equal(step_certain_fault(mov_ss_ax, 2, &c0, &err), -1);
	{
		/*
		 * POP SS and MOV SS from memory (or with prefixes): the selector
		 * the caller read, under the same rules; 32-bit code takes no null.
		 */
		static const uint8_t pop_ss[] = { 0x17 }, mov_ss_mem[] = { 0x8e, 0x10 };
		struct step_cpu c32 = c0;

		c32.long64 = false;
		c32.lma = false;
		c32.ss_sel_valid = true;
		c32.ss_sel = 0;
		assert_int_equal(step_certain_fault(pop_ss, 1, &c32, &err), X86_VEC_GP);
		assert_int_equal(err, 0);
		c32.ss_sel = 0x10;
		assert_int_equal(step_certain_fault(pop_ss, 1, &c32, &err), -1);
		c32.ss_sel = 0x1000;
		assert_int_equal(step_certain_fault(mov_ss_mem, 2, &c32, &err), X86_VEC_GP);
		assert_int_equal(err, 0x1000);
		c32.ss_sel_valid = false;	/* not read: not certain */
		assert_int_equal(step_certain_fault(mov_ss_mem, 2, &c32, &err), -1);
	}
	{
		/*
		 * Then its descriptor, where the caller read it: a writable data
		 * segment at the CPL's DPL (#GP(selector)), present (#SS(selector)).
		 */
		static const uint8_t mov_ss_mem[] = { 0x8e, 0x10 };
		const uint64_t data = 0x00cf93000000ffffull;
		struct step_cpu cd = c0;

		cd.ss_sel_valid = true;
		cd.ss_sel = 0x18;
		cd.ss_desc_valid = true;
		cd.ss_desc = data;
		assert_int_equal(step_certain_fault(mov_ss_mem, 2, &cd, &err), -1);
		cd.ss_desc = data & ~X86_DESC_P;
		assert_int_equal(step_certain_fault(mov_ss_mem, 2, &cd, &err), X86_VEC_SS);
		assert_int_equal(err, 0x18);
		cd.ss_desc = data & ~(X86_DESC_P | X86_DESC_W);	/* the type before presence */
		assert_int_equal(step_certain_fault(mov_ss_mem, 2, &cd, &err), X86_VEC_GP);
		assert_int_equal(err, 0x18);
		cd.ss_desc = data | X86_DESC_CODE;
		assert_int_equal(step_certain_fault(mov_ss_mem, 2, &cd, &err), X86_VEC_GP);
		cd.ss_desc = data & ~X86_DESC_S;
		assert_int_equal(step_certain_fault(mov_ss_mem, 2, &cd, &err), X86_VEC_GP);
		cd.ss_desc = data | 1ull << X86_DESC_DPL_SHIFT;
		assert_int_equal(step_certain_fault(mov_ss_mem, 2, &cd, &err), X86_VEC_GP);
		cd.ss_desc_valid = false;	/* not read: not certain */
		assert_int_equal(step_certain_fault(mov_ss_mem, 2, &cd, &err), -1);
		/* CPL3 and a DPL3 descriptor through its RPL3 selector. */
		cd.cpl = 3;
		cd.ss_sel = 0x1b;
		cd.ss_desc_valid = true;
		cd.ss_desc = data | 3ull << X86_DESC_DPL_SHIFT;
		assert_int_equal(step_certain_fault(mov_ss_mem, 2, &cd, &err), -1);
		cd.ss_desc = data;
		assert_int_equal(step_certain_fault(mov_ss_mem, 2, &cd, &err), X86_VEC_GP);
		assert_int_equal(err, 0x18);
		/* An LDT selector with no LDT, then past the LDT's limit. */
		cd.cpl = 0;
		cd.ss_sel = 0x1c;
		cd.ss_desc_valid = false;
		cd.ldt_limit = -1;
		assert_int_equal(step_certain_fault(mov_ss_mem, 2, &cd, &err), X86_VEC_GP);
		assert_int_equal(err, 0x1c);
		cd.ldt_limit = 0x17;
		assert_int_equal(step_certain_fault(mov_ss_mem, 2, &cd, &err), X86_VEC_GP);
		cd.ldt_limit = 0x1f;
		assert_int_equal(step_certain_fault(mov_ss_mem, 2, &cd, &err), -1);
	}
	/* Real mode: MOV SS takes any value, HLT and MOV DR at CPL0 run; UD2 is #UD. */
	{
		struct step_cpu real = c0;

		real.long64 = false;
		real.real = true;
		real.dr7 = X86_DR7_GD;
		gpr[0] = 0;
		assert_int_equal(step_certain_fault(mov_ss_ax, 2, &real, &err), -1);
		gpr[0] = 0x13;
		assert_int_equal(step_certain_fault(mov_ss_ax, 2, &real, &err), -1);
		assert_int_equal(step_certain_fault(mov_dr, 3, &real, &err), -1);
		real.cpl = 3;
		real.rflags |= X86_RFLAGS_VM;		/* virtual-8086 mode */
		assert_int_equal(step_certain_fault(ud2, 2, &real, &err), X86_VEC_UD);
		/* ... where CPL3's privilege faults hold, its selectors still real mode's. */
		assert_int_equal(step_certain_fault(hlt, 1, &real, &err), X86_VEC_GP);
		real.dr7 = 0;
		assert_int_equal(step_certain_fault(mov_dr, 3, &real, &err), X86_VEC_GP);
		assert_int_equal(step_certain_fault(mov_ss_ax, 2, &real, &err), -1);
		{
			/* Below IOPL 3 without VME: the IOPL-sensitive ones; INT3 is not. */
			static const uint8_t pushfd[] = { 0x66, 0x9c }, iret[] = { 0xcf },
					     int_n[] = { 0xcd, 0x21 }, int3[] = { 0xcc },
					     rep_pushf[] = { 0xf3, 0x9c }, popfd[] = { 0x66, 0x9d },
					     iretd[] = { 0x66, 0xcf }, sti[] = { 0xfb };

			assert_int_equal(step_certain_fault(pushfd, 2, &real, &err), X86_VEC_GP);
			assert_int_equal(err, 0);
			assert_int_equal(step_certain_fault(iret, 1, &real, &err), X86_VEC_GP);
			assert_int_equal(step_certain_fault(cli, 1, &real, &err), X86_VEC_GP);
			assert_int_equal(step_certain_fault(int_n, 2, &real, &err), X86_VEC_GP);
			assert_int_equal(step_certain_fault(int_n, 1, &real, &err), -1);
			assert_int_equal(step_certain_fault(int3, 1, &real, &err), -1);
			assert_int_equal(step_certain_fault(rep_pushf, 2, &real, &err), -1);
			/*
			 * With CR4.VME: the 32-bit forms still, STI with VIP,
			 * a 16-bit POPF or IRET loading TF, or IF with VIP.
			 */
			real.cr4 |= X86_CR4_VME;
			assert_int_equal(step_certain_fault(pushfd, 2, &real, &err), X86_VEC_GP);
			assert_int_equal(step_certain_fault(pushfd + 1, 1, &real, &err), -1);
			assert_int_equal(step_certain_fault(popfd, 2, &real, &err), X86_VEC_GP);
			assert_int_equal(step_certain_fault(iretd, 2, &real, &err), X86_VEC_GP);
			assert_int_equal(step_certain_fault(cli, 1, &real, &err), -1);
			assert_int_equal(step_certain_fault(sti, 1, &real, &err), -1);
			assert_int_equal(step_certain_fault(int_n, 2, &real, &err), -1);
			assert_int_equal(step_certain_fault(iret, 1, &real, &err), -1);
			real.popped_valid = true;
			real.popped = X86_RFLAGS_FIXED | X86_RFLAGS_IF;
			assert_int_equal(step_certain_fault(iret, 1, &real, &err), -1);
			assert_int_equal(step_certain_fault(popfd + 1, 1, &real, &err), -1);
			real.popped |= X86_RFLAGS_TF;
			assert_int_equal(step_certain_fault(iret, 1, &real, &err), X86_VEC_GP);
			assert_int_equal(step_certain_fault(popfd + 1, 1, &real, &err), X86_VEC_GP);
			real.popped &= ~X86_RFLAGS_TF;
			real.rflags |= X86_RFLAGS_VIP;
			assert_int_equal(step_certain_fault(iret, 1, &real, &err), X86_VEC_GP);
			assert_int_equal(step_certain_fault(sti, 1, &real, &err), X86_VEC_GP);
			assert_int_equal(step_certain_fault(cli, 1, &real, &err), -1);
			real.popped = X86_RFLAGS_FIXED;
			assert_int_equal(step_certain_fault(popfd + 1, 1, &real, &err), -1);
			real.rflags &= ~X86_RFLAGS_VIP;
			real.popped_valid = false;
			real.cr4 &= ~X86_CR4_VME;
			real.rflags |= 3u << 12;	/* IOPL 3 */
			assert_int_equal(step_certain_fault(pushfd, 2, &real, &err), -1);
		}
	}
}

/* The VMM's execute breakpoint beside the guest's own: the lowest free slot. */
static void test_merge_breakpoint(void **state)
{
	const uint64_t db[4] = { 0x1000, 0x2000, 0x3000, 0x4000 };
	/* DR0: write, 4 bytes (RW 01, LEN 11); DR2 global, execute; GD; DR1, DR3 off. */
	const uint64_t dr7 = 0x400 | X86_DR7_GD | (1ull << 0) | (0xdull << 16) | (2ull << 4);
	uint64_t out[8];

	(void)state;
	assert_int_equal(step_merge_breakpoint(db, 0x400, 0xabc, out), 0);
	assert_int_equal(out[0], 0xabc);
	assert_int_equal(out[7], X86_DR7_L0);
	assert_int_equal(out[1] | out[2] | out[3], 0);

	assert_int_equal(step_merge_breakpoint(db, dr7, 0xabc, out), 1);
	assert_int_equal(out[0], 0x1000);
	assert_int_equal(out[1], 0xabc);
	assert_int_equal(out[2], 0x3000);
	assert_int_equal(out[3], 0);	/* off: not armed */
	assert_int_equal(out[7], (1ull << 0) | (0xdull << 16) | (1ull << 2) | (2ull << 4));

	/* All four the guest's: no slot, out untouched. */
	out[0] = 7;
	assert_int_equal(step_merge_breakpoint(db, 0x400 | 0x55, 0xabc, out), -1);
	assert_int_equal(out[0], 7);
}

static void test_breakpoints(void **state)
{
	const uint64_t db[4] = { 0x1000, 0x2003, 0x3000, 0x4000 };
	/* DR0 execute (L0); DR1 write, 4 bytes (G1); DR2 read/write, 8 bytes, disabled; DR3 I/O. */
	uint64_t dr7 = 0x1 | 0x8 | (1ull << 20) | (3ull << 22) | (3ull << 24) | (2ull << 26) |
		       (2ull << 28);

	(void)state;
	assert_int_equal(step_exec_hits(db, dr7, 0x1000, 0), 1);
	assert_int_equal(step_exec_hits(db, dr7, 0x1000, X86_RFLAGS_RF), 0);	/* RF suppresses it */
	assert_int_equal(step_exec_hits(db, dr7, 0x1001, 0), 0);
	assert_int_equal(step_exec_hits(db, 0, 0x1000, 0), 0);		/* not enabled */
	assert_int_equal(step_exec_beside(db, 0, 0x1000, false), 1);
	assert_int_equal(step_exec_beside(db, dr7, 0x1000, false), 0);	/* enabled: the CPU's */
	assert_int_equal(step_exec_beside(db, 0x10000, 0x1000, false), 0); /* a data one */
	/* A #DB KVM or the VMM made up: the enabled one too, where the CPU reports it. */
	assert_int_equal(step_exec_beside(db, dr7, 0x1000, true), 1);
	assert_int_equal(step_exec_beside(db, dr7, 0x1001, true), 0);
	assert_int_equal(step_exec_beside(db, dr7, 0x2003, true), 0);	/* DR1: a write one */
	assert_int_equal(step_exec_beside(db, 0x10000, 0x1000, true), 0);
	/* DR1 covers 0x2000-0x2003 (aligned down); a split write reaching it hits. */
	assert_int_equal(step_data_hits(db, dr7, 0x1ffe, 4), 2);
	assert_int_equal(step_data_hits(db, dr7, 0x1ffc, 4), 0);
	assert_int_equal(step_data_hits(db, dr7, 0x2003, 8), 2);
	assert_int_equal(step_data_hits(db, dr7, 0x2004, 8), 0);
	/* DR2 is not enabled; once it is, read/write counts too. */
	assert_int_equal(step_data_hits(db, dr7, 0x3000, 1), 0);
	assert_int_equal(step_data_hits(db, dr7 | 0x10, 0x3007, 1), 4);
	assert_true(step_has_data_bp(dr7));
	assert_false(step_has_data_bp(0x1));		/* execute only */
	assert_false(step_has_data_bp(dr7 & ~0x8ull));
}

static void test_gate_offset(void **state)
{
	static const uint8_t gate[16] = {
		0x34, 0x12, 0x08, 0x00, 0x00, 0x8e, 0x78, 0x56,
		0xbc, 0x9a, 0xf0, 0xde, 0, 0, 0, 0,
	};

	(void)state;
	assert_int_equal(step_gate_offset(gate), 0xdef09abc56781234ull);
}

/* Each IDT format: 64-bit gates, 32- and 16-bit gates, task gates, the real-mode IVT. */
static void test_idt_handler(void **state)
{
	uint8_t e[16] = { 0x34, 0x12, 0x08, 0x00, 0x00, 0x8e, 0x78, 0x56,
			  0xbc, 0x9a, 0xf0, 0xde, 0, 0, 0, 0 };
	uint64_t off = 0;
	unsigned slot = 0;

	(void)state;
	assert_int_equal(step_idt_entry_size(STEP_IDT_LONG), 16);
	assert_int_equal(step_idt_entry_size(STEP_IDT_PROT), 8);
	assert_int_equal(step_idt_entry_size(STEP_IDT_REAL), 4);
	assert_true(step_idt_handler(STEP_IDT_LONG, e, &off, &slot));
	assert_int_equal(off, 0xdef09abc56781234ull);
	assert_int_equal(slot, 8);
	assert_true(step_idt_handler(STEP_IDT_PROT, e, &off, &slot));	/* 32-bit interrupt gate */
	assert_int_equal(off, 0x56781234);
	assert_int_equal(slot, 4);
	e[5] = 0xef;							/* 32-bit trap gate, DPL3 */
	assert_true(step_idt_handler(STEP_IDT_PROT, e, &off, &slot));
	assert_int_equal(off, 0x56781234);
	e[5] = 0x86;							/* 16-bit interrupt gate */
	assert_true(step_idt_handler(STEP_IDT_PROT, e, &off, &slot));
	assert_int_equal(off, 0x1234);
	assert_int_equal(slot, 2);
	e[5] = 0x85;							/* task gate */
	assert_false(step_idt_handler(STEP_IDT_PROT, e, &off, &slot));
	e[5] = 0x9e;							/* S set: no gate */
	assert_false(step_idt_handler(STEP_IDT_PROT, e, &off, &slot));
	e[5] = 0x0e;							/* not present */
	assert_false(step_idt_handler(STEP_IDT_PROT, e, &off, &slot));
	assert_false(step_idt_handler(STEP_IDT_LONG, e, &off, &slot));
	assert_true(step_idt_handler(STEP_IDT_REAL, e, &off, &slot));	/* IP 0x1234, CS 0x0008 */
	assert_int_equal(off, 0x1234);
	assert_int_equal(slot, 2);
}

/*
 * INT n in virtual-8086 mode under CR4.VME (SDM vol. 3 table 20-2): the
 * redirection bit picks the IDT or #GP(0) by IOPL; clear, the IVT, with
 * the FLAGS image and the handler's flags of methods 5 and 6.
 */
static void test_vme_int(void **state)
{
	const uint32_t vm = X86_RFLAGS_VM | X86_RFLAGS_FIXED, iopl3 = 3u << 12;
	uint16_t image = 0;
	uint32_t flags = 0;

	(void)state;
	assert_int_equal(step_vme_int(vm | iopl3, true, &image, &flags), STEP_VME_IDT);
	assert_int_equal(step_vme_int(vm | 2u << 12, true, &image, &flags), STEP_VME_GP);
	assert_int_equal(step_vme_int(vm, true, &image, &flags), STEP_VME_GP);
	/* Method 5: FLAGS as they are; IF, TF and RF cleared, AC and VIF kept. */
	assert_int_equal(step_vme_int(vm | iopl3 | X86_RFLAGS_TF | X86_RFLAGS_IF | X86_RFLAGS_RF |
				      X86_RFLAGS_AC | X86_RFLAGS_VIF | X86_RFLAGS_CF,
				      false, &image, &flags), STEP_VME_IVT);
	assert_int_equal(image, X86_RFLAGS_FIXED | iopl3 | X86_RFLAGS_TF | X86_RFLAGS_IF |
			 X86_RFLAGS_CF);
	assert_int_equal(flags, vm | iopl3 | X86_RFLAGS_AC | X86_RFLAGS_VIF | X86_RFLAGS_CF);
	/* Method 6: IOPL 3 and VIF as IF in the image; VIF cleared, IF kept. */
	assert_int_equal(step_vme_int(vm | 1u << 12 | X86_RFLAGS_IF | X86_RFLAGS_TF, false, &image,
				      &flags), STEP_VME_IVT);
	assert_int_equal(image, X86_RFLAGS_FIXED | iopl3 | X86_RFLAGS_TF);
	assert_int_equal(flags, vm | 1u << 12 | X86_RFLAGS_IF);
	assert_int_equal(step_vme_int(vm | X86_RFLAGS_VIF, false, &image, &flags), STEP_VME_IVT);
	assert_int_equal(image, X86_RFLAGS_FIXED | iopl3 | X86_RFLAGS_IF);
	assert_int_equal(flags, vm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classify_hlt),
		cmocka_unit_test(test_certain_fault_stack),
		cmocka_unit_test(test_classify_flags_sizes),
		cmocka_unit_test(test_classify_events),
		cmocka_unit_test(test_classify_as_the_cpu),
		cmocka_unit_test(test_tf_model),
		cmocka_unit_test(test_rearm),
		cmocka_unit_test(test_hlt_and_delivery),
		cmocka_unit_test(test_debug_exit),
		cmocka_unit_test(test_dr6_deliver),
		cmocka_unit_test(test_escaped),
		cmocka_unit_test(test_advance),
		cmocka_unit_test(test_diverted),
		cmocka_unit_test(test_missed_target),
		cmocka_unit_test(test_frames),
		cmocka_unit_test(test_code_segment),
		cmocka_unit_test(test_syscall_sysret),
		cmocka_unit_test(test_xbegin),
		cmocka_unit_test(test_kvm_may_inject),
		cmocka_unit_test(test_certain_fault),
		cmocka_unit_test(test_iret_selector_fault),
		cmocka_unit_test(test_task_switch_bits),
		cmocka_unit_test(test_merge_breakpoint),
		cmocka_unit_test(test_breakpoints),
		cmocka_unit_test(test_gate_offset),
		cmocka_unit_test(test_idt_handler),
		cmocka_unit_test(test_vme_int),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
