/* SPDX-License-Identifier: MIT */
/*
 * Issue 49: what KVM's instruction emulator cannot run at CPL0 on the
 * nested PVM KVM (its internal error), which vmm completes there itself
 * (src/vmm/gap.c): a locked CMPXCHG16B that succeeds, fails, faults on a
 * misaligned operand (#GP(0)) or an absent page (#PF), and INT3 and INT n.
 * On a stock KVM the CPU runs them: both must end the same, every register,
 * flag, frame and byte of memory alike.
 */
#include "diff.h"

static const uint8_t cx16[] = { 0xf0, 0x48, 0x0f, 0xc7, 0x0f };	/* lock cmpxchg16b (%rdi) */
static const uint8_t cx16_nolock[] = { 0x48, 0x0f, 0xc7, 0x0f };	/* cmpxchg16b (%rdi) */

/* What the architecture says, checked here too: both runs agreeing is not enough on a KVM where vmm runs them both. */
static unsigned wrong;

static void expect(bool ok, const char *label, const char *what)
{
	if (ok)
		return;
	wrong++;
	printf("WRONG: %s: %s\n", label, what);
}

/*
 * CMPXCHG16B at addr at CPL0: RDX:RAX equal to the operand or not; RCX:RBX
 * from seed. vector: the fault it must raise (EXC_NONE: none).
 */
static void cmpxchg16b(const char *label, uint64_t addr, bool equal, uint32_t seed, int vector)
{
	bool lock = seed < 20;
	struct exec_req req = { .mode = MODE_64, .cpl = 0, .insn = lock ? cx16 : cx16_nolock,
				.len = lock ? sizeof(cx16) : sizeof(cx16_nolock) };
	struct exec_result res;
	uint64_t mem[2] = { 0, 0 }, after[2] = { 0, 0 };

	seed_regs(&req.in, seed);
	win_fill(addr & ~63ull, 128, seed);
	req.in.r[R_DI] = addr;
	if (win_read(addr, mem, sizeof(mem)) && equal) {
		req.in.r[R_AX] = mem[0];
		req.in.r[R_DX] = mem[1];
	}
	exec_insn(&req, &res);
	print_result(label, &req, &res);
	print_mem(label, addr & ~63ull, 128);
	win_read(addr, after, sizeof(after));
	expect(res.vector == vector, label, "the fault");
	if (vector == X86_VEC_PF)
		expect(res.cr2 == addr && res.at_insn, label, "CR2 or the faulting RIP");
	if (vector != EXC_NONE) {
		expect(after[0] == mem[0] && after[1] == mem[1], label, "memory written");
		return;
	}
	expect(!!(res.out.r[R_FLAGS] & X86_RFLAGS_ZF) == equal, label, "ZF");
	if (equal)
		expect(after[0] == req.in.r[R_BX] && after[1] == req.in.r[R_CX], label,
		       "RCX:RBX not stored");
	else
		expect(res.out.r[R_AX] == mem[0] && res.out.r[R_DX] == mem[1] &&
		       after[0] == mem[0] && after[1] == mem[1], label, "RDX:RAX not loaded");
}

static int cmpxchg16b_cpl0(const struct boot_info *bi)
{
	(void)bi;
	wrong = 0;
	cmpxchg16b("cmpxchg16b equal", WIN_PAGE(0) + 0x40, true, 1, EXC_NONE);
	cmpxchg16b("cmpxchg16b not equal", WIN_PAGE(0) + 0x80, false, 2, EXC_NONE);
	cmpxchg16b("cmpxchg16b equal, high qword differs", WIN_PAGE(0) + 0xc0, false, 3, EXC_NONE);
	cmpxchg16b("cmpxchg16b misaligned (#GP)", WIN_PAGE(0) + 0x108, true, 4, X86_VEC_GP);
	cmpxchg16b("cmpxchg16b across a line (#GP)", WIN_PAGE(0) + 0x138, true, 5, X86_VEC_GP);
	win_set(1, PG_W | PG_U);
	cmpxchg16b("cmpxchg16b in an absent page (#PF)", WIN_PAGE(1) + 0x10, true, 6, X86_VEC_PF);
	win_set(1, PG_P | PG_U);
	cmpxchg16b("cmpxchg16b in a read-only page (#PF, CR0.WP)", WIN_PAGE(1) + 0x20, true, 7,
		   X86_VEC_PF);
	cmpxchg16b("cmpxchg16b not equal in a read-only page (#PF)", WIN_PAGE(1) + 0x30, false, 8,
		   X86_VEC_PF);
	win_set(1, PG_NORMAL);
	/* Without LOCK, as Linux's per-CPU operations run it (seeds from 20: no LOCK). */
	cmpxchg16b("cmpxchg16b without lock, equal", WIN_PAGE(2) + 0x40, true, 21, EXC_NONE);
	cmpxchg16b("cmpxchg16b without lock, not equal", WIN_PAGE(2) + 0x80, false, 22, EXC_NONE);
	cmpxchg16b("cmpxchg16b without lock, misaligned (#GP)", WIN_PAGE(2) + 0xc4, true, 23,
		   X86_VEC_GP);
	return wrong ? 1 : 0;
}

void ev_stub(void);
extern uint64_t ev_frames[8 * 6], ev_nframes;

/* INT3 and INT n at CPL0: the #BP logged (exec.S), INT n's frame recorded (event.S's ev_stub). */
static int soft_int_cpl0(const struct boot_info *bi)
{
	static const uint8_t int3[] = { 0xcc }, int3_long[] = { 0xcd, 0x03 }, intn[] = { 0xcd, 0x30 };
	static const struct {
		const char *label;
		const uint8_t *insn;
		unsigned len;
	} insns[] = {
		{ "int3", int3, sizeof(int3) },
		{ "int $3", int3_long, sizeof(int3_long) },
		{ "int $0x30", intn, sizeof(intn) },
	};
	struct gate saved = idt()[0x30];

	(void)bi;
	wrong = 0;
	idt()[0x30] = make_gate((uint64_t)ev_stub, 0x8e, 0);
	ev_nframes = 0;
	for (size_t i = 0; i < ARRAY_SIZE(insns); i++) {
		struct exec_req req = { .mode = MODE_64, .cpl = 0, .insn = insns[i].insn,
					.len = insns[i].len };
		struct exec_result res;

		seed_regs(&req.in, 10 + (uint32_t)i);
		dbg_reset();
		exec_insn(&req, &res);
		print_result(insns[i].label, &req, &res);
		dbg_print(insns[i].label, exec_code);
		expect(res.vector == EXC_NONE, insns[i].label, "a fault");
		if (i < 2)
			expect(dbg_count == 1 && dbg_log[1] == exec_code + insns[i].len, insns[i].label,
			       "#BP not logged once, behind the instruction");
		dbg_reset();
	}
	idt()[0x30] = saved;
	for (uint64_t i = 0; i < ev_nframes && i < 8; i++) {
		const uint64_t *w = &ev_frames[i * 6 + 1];

		/* No error code: RIP, CS, RFLAGS, RSP, SS. */
		printf("int $0x30 frame %lu: rip start+%ld cs %lx rflags %lx rsp&15 %lx ss %lx\n",
		       (unsigned long)i, (long)(w[0] - exec_code), (unsigned long)w[1],
		       (unsigned long)w[2], (unsigned long)(w[3] & 15), (unsigned long)w[4]);
	}
	printf("int $0x30: %lu frames\n", (unsigned long)ev_nframes);
	expect(ev_nframes == 1 && ev_frames[1] == exec_code + 2 && ev_frames[2] == SEL_KERNEL_CS,
	       "int $0x30", "its frame");
	return wrong ? 1 : 0;
}

static const struct diff_case cases[] = {
	{ "gap-cmpxchg16b-cpl0", cmpxchg16b_cpl0 },
	{ "gap-soft-int-cpl0", soft_int_cpl0 },
};

CASE_TABLE(gap_cases, cases);
