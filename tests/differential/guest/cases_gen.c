/* SPDX-License-Identifier: MIT */
/*
 * "case=gen": runs the records tests/differential/gen.py appended to the
 * image (random instructions, registers, placements, page states), one
 * line each. Layout of the payload, little-endian, right after the linked
 * image (__image_end):
 *
 *   header: "DIFFGEN1", u32 count, u32 record size
 *   record: see struct gen_record
 */
#include "diff.h"

struct gen_record {
	uint8_t mode;        /* 0: 64-bit, 1: compatibility, 2: 16-bit code (CS base),
				3: compatibility with a CS base; outside IA-32e mode
				(legacy_exec; ENV_NONE, ENV_DR at CPL0, ENV_GATE
				but for vector 32 and in real mode), 32-bit
				protected mode with 4: no paging, 5: 32-bit paging,
				6: PAE paging, and 7: 16-bit code with PAE paging;
				8: real mode (CPL0, 4 GiB data segments); 9:
				virtual-8086 mode (CPL3, PAE paging, the window
				at VM86_WIN) */
	uint8_t cpl;         /* 0-3 (not 1 or 2 with ENV_SYSCALL, ENV_SYSENTER) */
	uint8_t len;         /* instruction bytes */
	uint8_t addr_reg;    /* register that gets target - segment base added; 0xff none */
	uint8_t seg;         /* segment override in effect: 0, 0x64 or 0x65 */
	uint8_t page0, page1;/* PG_* of window pages 0 and 1 (low byte) */
	uint8_t flags;       /* GEN_* */
	int32_t target;      /* operand's linear address - WIN_PAGE(1) */
	uint32_t seed;       /* fill of the operand's lines */
	uint32_t ds_base;    /* compatibility mode: base of DS/ES/FS */
	uint8_t env;         /* ENV_*: what the program's events reach */
	uint8_t env_arg;     /* ENV_GATE: the vector */
	uint8_t env_reg;     /* gets an address (ENV_DR, ENV_CALLGATE, ENV_SELF); 0xff none */
	uint8_t reserved;
	uint8_t insn[32];    /* the program: one instruction or several */
	uint64_t aux;        /* ENV_* parameters, below */
	uint64_t regs[R_COUNT];
};

#define GEN_AC      0x01  /* RFLAGS.AC (checked at CPL3) */
#define GEN_WP      0x02  /* CR0.WP */
#define GEN_NXE     0x04  /* EFER.NXE */
#define GEN_EQUAL   0x08  /* accumulator(s) = the operand: compare-exchange succeeds */
#define GEN_TF      0x10  /* the guest's own TF from the instruction on: #DB traps counted */
#define GEN_LOG     0x20  /* print each #DB/#BP event after the line (gen.py --log) */
#define GEN_IOPL3   0x40  /* RFLAGS.IOPL = 3 (virtual-8086 mode only) */

/*
 * Environments (issue 18): what the program's SYSCALL, INT n, MOV DR or far
 * call reaches. Each handler (gen.S) notes what it was entered with in
 * gen_frame, hashed into the line as f=.
 *
 * ENV_SYSCALL: EFER.SCE=1, LSTAR = gen_sc_entry, FMASK = aux bits 0-31,
 *   R11 ^= aux bits 32-63 before the return; env_arg 1: the handler returns
 *   with IRETQ (a CPL0 caller), 0: with SYSRETQ (a CPL3 caller).
 * ENV_GATE: IDT gate env_arg -> gen_gate_stub, type aux bits 0-7 (0x8e/0x8f
 *   and DPL), aux bit 8 / 9: the stub sets / clears TF in its frame.
 *   Outside IA-32e mode a 32-bit gate of that type to exec_legacy.S's
 *   lg_x_gate (not vector 32, legacy_exec's way back from CPL1-3), for
 *   16-bit code at CPL0 a 16-bit one (0x86/0x87) to its rx_gate16, or a
 *   task gate (0x85) to TSS B, whose task lg_x_task notes TSS A's image.
 * ENV_DR: register env_reg += the program's linear address (a breakpoint
 *   address aux bits 0-7 into the program; 0xff: gen_farptr, data never
 *   executed). DR0-3 and DR7 are cleared again after the record.
 * ENV_CALLGATE: a call gate at SEL_CALLGATE (DPL aux bits 0-1) to
 *   gen_cg_entry; gen_farptr's selector is SEL_CALLGATE | aux bits 4-5
 *   (RPL); register env_reg += gen_farptr's address.
 * ENV_SYSENTER: IA32_SYSENTER_CS/ESP/EIP = SEL_SE_K_CODE, gen_se_stack,
 *   gen_se_entry (SYSENTER_CS 0 with env_arg bit 1: #GP); the handler
 *   returns to the program's offset aux, with SYSEXIT (64-bit with REX.W)
 *   to a CPL3 caller or IRETQ to a CPL0 one (env_arg bit 0), RSP = RCX.
 * ENV_SELF: register env_reg += the program's linear address (a program
 *   that far-returns into itself in another mode computes its targets;
 *   protected mode only, as in IA-32e mode).
 * ENV_REAL_PE: real mode only; EBP = CR0 and EDI = CR0 | PE at the
 *   program's start (exec_legacy.S rx_real), for a program that moves
 *   them to CR0 to enter 16-bit protected mode (SEL_K_CODE16R, the same
 *   base) and to come back.
 * ENV_LM_OFF: compatibility mode at CPL0 only; EBP = CR0 without PG, EDI
 *   = CR0 and ESI = WIN_PHYS - WIN_BASE (mod 2^32) are added at the
 *   program's start, for a program that leaves IA-32e mode by clearing
 *   CR0.PG (its code and stack are identity-mapped), reaches the window
 *   where its RAM is, and sets PG again (EFER.LME stays set). IDTR stays
 *   put, so the IDT serves both formats for #DB: the upper half of gate 0
 *   (bytes 8-15, the 8-byte gate of vector 1 outside IA-32e mode) becomes
 *   legacy_exec's 32-bit #DB gate, and the guest's TF may be set across
 *   both switches. Vector 3's 8-byte gate would be the upper half of 64-bit
 *   gate 1, so with env_arg 1 EDX also gets the address (from DS's base)
 *   of two IDTR images, legacy_exec's IDT at 0 and IA-32e mode's at 8,
 *   for a program that loads them with LIDT while paging is off and then
 *   may raise #BP there (gen.py switch_lm_off_program).
 */
#define ENV_NONE     0
#define ENV_SYSCALL  1
#define ENV_GATE     2
#define ENV_DR       3
#define ENV_CALLGATE 4
#define ENV_SYSENTER 5
#define ENV_SELF     6
#define ENV_REAL_PE  7
#define ENV_LM_OFF   8

#define MSR_STAR    0xc0000081
#define MSR_LSTAR   0xc0000082
#define MSR_FMASK   0xc0000084
#define MSR_SYSENTER_CS  0x174
#define MSR_SYSENTER_ESP 0x175
#define MSR_SYSENTER_EIP 0x176

extern uint64_t gen_frame[6], gen_hits, gen_sc_xor, gen_sc_iret, gen_gate_tf;
extern uint64_t gen_se_ret, gen_se_how, gen_se_cs;
extern uint8_t gen_se_stack_top[];
extern uint8_t gen_farptr[6];
extern uint32_t lg_x_real_pe;
/* ENV_LM_OFF with env_arg 1: the IDTR images its program loads (identity-mapped). */
static uint8_t lm_off_idtrs[16] __attribute__((aligned(8)));
extern uint8_t exec_page16[64], exec_buf64[64], exec_buf32[64];
void gen_sc_entry(void);
void gen_gate_stub(void);
void gen_cg_entry(void);
void gen_se_entry(void);

/* The program's linear address in its mode (exec_insn and legacy_exec put it there). */
static uint64_t code_linear(enum exec_mode m, bool real)
{
	if (real)
		return legacy_real_code();
	return (uint64_t)(m == MODE_64 ? exec_buf64 : m == MODE_32 ? exec_buf32 : exec_page16);
}

static uint32_t hash_words(const uint64_t *w, unsigned n)
{
	return fnv((const uint8_t *)w, n * 8);
}

/*
 * DR0-3 at data never executed or accessed (not 0: RIP 0 is code in
 * MODE_16/32B): a CPU may set DR6.B0-3 for breakpoints that match but are
 * not enabled, and which it does is no architectural fact to compare.
 */
static void dr_park(void)
{
	for (unsigned d = 0; d < 4; d++)
		write_dr(d, (uint64_t)gen_farptr);
}

/* Each #DB/#BP of the record, RIP from the program's start (base: its RIP, EIP or IP). */
static void print_events(uint64_t base)
{
	for (uint32_t e = 0; e < dbg_count && e < DBG_LOG_MAX; e++) {
		const uint64_t *w = &dbg_log[e * 5];
		uint64_t rip = w[0] == 1 || w[0] == 3 ? w[1] : 0;

		printf("  ev %s rip=%lx (program %ld) dr6=%lx rflags=%lx cs=%lx\n",
		       w[0] == 1 ? "#DB" : "#BP", rip, (long)(rip - base), w[2], w[3], w[4]);
	}
}

_Static_assert(sizeof(struct gen_record) == 200, "gen.py's RECORD layout");

extern char __image_start[], __image_end[];

static int gen(const struct boot_info *bi)
{
	const uint8_t *payload = (const uint8_t *)__image_end;
	uint64_t have = bi->image_size - (uint64_t)(__image_end - __image_start);
	uint32_t count, rsize;
	uint64_t efer = rdmsr(MSR_EFER), star = rdmsr(MSR_STAR), lstar = rdmsr(MSR_LSTAR),
		 fmask = rdmsr(MSR_FMASK), se_cs = rdmsr(MSR_SYSENTER_CS),
		 se_esp = rdmsr(MSR_SYSENTER_ESP), se_eip = rdmsr(MSR_SYSENTER_EIP);

	if (bi->image_size < (uint64_t)(__image_end - __image_start) + 16 ||
	    memcmp(payload, "DIFFGEN1", 8)) {
		printf("Bail out! no generator payload after the image (tests/differential/gen.py makes it)\n");
		return GUEST_STATUS_FAIL;
	}
	dr_park();
	memcpy(&count, payload + 8, 4);
	memcpy(&rsize, payload + 12, 4);
	if (rsize != sizeof(struct gen_record) || 16 + (uint64_t)count * rsize > have) {
		printf("Bail out! payload of %u records of %u bytes does not fit %lu bytes\n",
		       count, rsize, have);
		return GUEST_STATUS_FAIL;
	}
	for (uint32_t i = 0; i < count; i++) {
		struct gen_record r;
		struct exec_req req = { 0 };
		struct exec_result res;
		uint64_t target, base = 0;
		char label[80];
		struct gate saved_gate = { 0 };
		uint64_t saved_lgate = 0;
		bool legacy, vm86, ring12;
		size_t n;

		memcpy(&r, payload + 16 + (uint64_t)i * rsize, sizeof(r));
		legacy = r.mode >= 4;
		vm86 = r.mode == 9;
		/* SYSRET and SYSEXIT land at CPL3, gen.S's IRETQs at CPL0: not at CPL1-2. */
		ring12 = r.cpl == 1 || r.cpl == 2;
		if (r.mode > 9 || r.cpl > 3 || (r.mode == 8 && r.cpl) || (vm86 && r.cpl != 3) ||
		    (!vm86 && (r.flags & GEN_IOPL3)) ||
		    (legacy && r.env && !(r.env == ENV_DR && !r.cpl) &&
		     !(r.env == ENV_GATE && r.mode != 8 && r.env_arg != 32) &&
		     !(r.env == ENV_SELF && r.mode <= 7) && !(r.env == ENV_REAL_PE && r.mode == 8)) ||
		    (r.env == ENV_REAL_PE && r.mode != 8) ||
		    (r.env == ENV_LM_OFF && (r.mode != 1 || r.cpl)) ||
		    (legacy && r.env == ENV_GATE && ((r.aux & 0x1f) == 6 || (r.aux & 0x1f) == 7) &&
		     (r.mode != 7 || r.cpl)) ||
		    (ring12 && (r.env == ENV_SYSCALL || r.env == ENV_SYSENTER))) {
			printf("Bail out! record %u: mode %u at CPL%u with environment %u is none the executor runs\n",
			       i, r.mode, r.cpl, r.env);
			return GUEST_STATUS_FAIL;
		}
		target = WIN_PAGE(1) + (int64_t)r.target;
		win_set(0, r.page0);
		win_set(1, r.page1);
		write_cr0(r.flags & GEN_WP ? read_cr0() | X86_CR0_WP : read_cr0() & ~X86_CR0_WP);
		wrmsr(MSR_EFER, (r.flags & GEN_NXE ? efer | X86_EFER_NXE : efer & ~X86_EFER_NXE) |
				(r.env == ENV_SYSCALL ? X86_EFER_SCE : 0));
		static const enum exec_mode modes[10] = { MODE_64, MODE_32, MODE_16, MODE_32B,
							   MODE_32, MODE_32, MODE_32, MODE_16,
							   MODE_16, MODE_16 };
		/* Outside IA-32e mode: none, 32-bit or PAE paging (legacy_exec). */
		static const unsigned paging[10] = { [5] = 1, [6] = 2, [7] = 2, [9] = 2 };

		req.mode = modes[r.mode];
		req.tf = r.flags & GEN_TF;
		dbg_reset();
		dbg_tf_limit = 1000;
		req.cpl = r.cpl;
		req.insn = r.insn;
		req.len = r.len > 32 ? 32 : r.len;
		req.ac = r.flags & GEN_AC;
		req.iopl = r.flags & GEN_IOPL3 ? 3 : 0;
		memcpy(req.in.r, r.regs, sizeof(req.in.r));
		if (vm86) {
			/* DS, ES, FS and GS at VM86_WIN, where the window is seen again. */
			base = WIN_BASE;
		} else if (legacy) {
			/* Flat segments; without paging the window is where its RAM is. */
			base = r.mode == 4 || r.mode == 8 ? WIN_BASE - WIN_PHYS : 0;
		} else if (req.mode != MODE_64) {
			seg_set_data(r.ds_base, 0xffffffff);
			req.ds = req.es = req.fs = req.cpl ? SEL_U_DATA_B : SEL_K_DATA_B;
			base = r.ds_base;
		} else if (r.seg == 0x65) {
			base = rdmsr(MSR_GS_BASE);
		} else {
			wrmsr(MSR_FS_BASE, 0);
		}
		if (r.addr_reg < R_COUNT)
			req.in.r[r.addr_reg] += target - base;
		win_fill((target & ~63ull) - 64, 256, r.seed);
		if (r.flags & GEN_EQUAL) {
			uint8_t m[8];

			win_read(target, m, 8);
			memcpy(&req.in.r[R_AX], m, 8);
			req.in.r[R_DX] = 0;
			memcpy(&req.in.r[R_DX], m + 4, 4);
		}
		for (unsigned w = 0; w < 6; w++)
			gen_frame[w] = 0;
		gen_hits = 0;
		switch (r.env) {
		case ENV_SYSCALL:
			/* SYSCALL: CS 0x08, SS 0x10; SYSRETQ: CS 0x23, SS 0x1b. */
			wrmsr(MSR_STAR, (0x10ull << 48) | (0x08ull << 32));
			wrmsr(MSR_LSTAR, (uint64_t)gen_sc_entry);
			wrmsr(MSR_FMASK, (uint32_t)r.aux);
			gen_sc_xor = r.aux >> 32;
			gen_sc_iret = r.env_arg & 1;
			break;
		case ENV_GATE: {
			uint64_t h = (uint64_t)gen_gate_stub;

			if (legacy) {
				saved_lgate = legacy_gate_borrow(r.env_arg, (uint8_t)r.aux);
			} else {
				saved_gate = idt()[r.env_arg];
				idt()[r.env_arg] = make_gate(h, (uint8_t)r.aux, 0);
			}
			gen_gate_tf = r.aux >> 8 & 3;
			break;
		}
		case ENV_DR:
			if (r.env_reg < R_COUNT)
				req.in.r[r.env_reg] += (r.aux & 0xff) == 0xff ? (uint64_t)gen_farptr
						       : code_linear(req.mode, r.mode == 8) + (r.aux & 0xff);
			break;
		case ENV_CALLGATE: {
			uint16_t sel = SEL_CALLGATE | (r.aux >> 4 & 3);

			seg_set_callgate((uint64_t)gen_cg_entry, r.aux & 3);
			memcpy(gen_farptr + 4, &sel, 2);
			if (r.env_reg < R_COUNT)
				req.in.r[r.env_reg] += (uint64_t)gen_farptr - base;
			break;
		}
		case ENV_SELF:
			if (r.env_reg < R_COUNT)
				req.in.r[r.env_reg] += code_linear(req.mode, false);
			break;
		case ENV_REAL_PE:
			lg_x_real_pe = 1;
			break;
		case ENV_LM_OFF: {
			uint64_t db32 = legacy_xidt_gate(X86_VEC_DB);

			req.in.r[R_BP] += read_cr0() & ~(uint64_t)X86_CR0_PG;
			req.in.r[R_DI] += read_cr0();
			req.in.r[R_SI] += (uint32_t)(WIN_PHYS - WIN_BASE);
			saved_gate = idt()[X86_VEC_DE];
			memcpy((uint8_t *)&idt()[X86_VEC_DE] + 8, &db32, sizeof(db32));
			if (r.env_arg & 1) {
				uint32_t legacy = legacy_xidt_base(), ia32e;
				uint16_t limit = 8 * 256 - 1;
				struct __attribute__((packed)) { uint16_t limit; uint64_t base; } idtr;

				__asm__ volatile("sidt %0" : "=m"(idtr));
				/* LIDT outside IA-32e mode loads 32 bits of base. */
				if (idtr.base >> 32) {
					printf("Bail out! record %u: the IDT is above 4 GiB\n", i);
					return GUEST_STATUS_FAIL;
				}
				ia32e = (uint32_t)idtr.base;
				memcpy(lm_off_idtrs, &limit, 2);
				memcpy(lm_off_idtrs + 2, &legacy, 4);
				memcpy(lm_off_idtrs + 8, &idtr.limit, 2);
				memcpy(lm_off_idtrs + 10, &ia32e, 4);
				req.in.r[R_DX] += (uint32_t)((uint64_t)lm_off_idtrs - r.ds_base);
			}
			break;
		}
		case ENV_SYSENTER:
			wrmsr(MSR_SYSENTER_CS, r.env_arg & 2 ? 0 : SEL_SE_K_CODE);
			wrmsr(MSR_SYSENTER_ESP, (uint64_t)gen_se_stack_top);
			wrmsr(MSR_SYSENTER_EIP, (uint64_t)gen_se_entry);
			gen_se_ret = code_linear(req.mode, false) + (r.aux & 0xff);
			/* 1: IRETQ to CPL0; 2: SYSEXIT with REX.W (to 64-bit code). */
			gen_se_how = (r.env_arg & 1) | (req.mode == MODE_64 ? 2 : 0);
			gen_se_cs = req.mode == MODE_64 ? SEL_KERNEL_CS : SEL_K_CODE32;
			break;
		}
		if (legacy)
			legacy_exec(&req, paging[r.mode],
				    vm86 ? LEGACY_VM86 : r.mode == 8 ? LEGACY_REAL : LEGACY_PROTECTED, &res);
		else
			exec_insn(&req, &res);
		write_dr(7, 0x400);
		switch (r.env) {
		case ENV_SYSCALL:
			wrmsr(MSR_STAR, star);
			wrmsr(MSR_LSTAR, lstar);
			wrmsr(MSR_FMASK, fmask);
			break;
		case ENV_GATE:
			if (legacy)
				legacy_gate_restore(r.env_arg, saved_lgate);
			else
				idt()[r.env_arg] = saved_gate;
			break;
		case ENV_DR:
			dr_park();
			break;
		case ENV_REAL_PE:
			lg_x_real_pe = 0;
			break;
		case ENV_LM_OFF:
			idt()[X86_VEC_DE] = saved_gate;
			break;
		case ENV_SYSENTER:
			wrmsr(MSR_SYSENTER_CS, se_cs);
			wrmsr(MSR_SYSENTER_ESP, se_esp);
			wrmsr(MSR_SYSENTER_EIP, se_eip);
			break;
		}
		/*
		 * db: the #DB/#BP events (with TF or a breakpoint), d: a hash of
		 * their log (vector, RIP, DR6, RFLAGS, CS), at: where a fault
		 * was raised in the program, f: what a handler saw (and how often).
		 */
		n = put_str(label, 0, "g");
		n = put_dec(label, n, i);
		if (req.tf || dbg_count || r.env) {
			n = put_str(label, n, " db");
			n = put_dec(label, n, dbg_count);
		}
		label[n] = 0;
		if (dbg_count || res.vector != EXC_NONE || r.env) {
			char *t = compact_tail;
			size_t m = 0;

			if (dbg_count) {
				m = put_str(t, m, " d=");
				m = put_hex(t, m, hash_words(dbg_log, 5 * (dbg_count < DBG_LOG_MAX ?
									   dbg_count : DBG_LOG_MAX)));
			}
			if (res.vector != EXC_NONE) {
				m = put_str(t, m, " at=+");
				m = put_hex(t, m, res.at);
			}
			if (legacy && res.vector != EXC_NONE) {
				/*
				 * The fault frame's EFLAGS as the CPU pushes them (AC, IF,
				 * IOPL...), but TF and RF. TF: where the VMM cannot watch
				 * the handler (no hardware breakpoints; outside IA-32e
				 * mode) the frame holds the VMM's TF, a limitation counted
				 * as an unchecked run (docs/stepping.md, "Afterwards"). RF:
				 * the lab's CPU (QEMU's TCG) pushes it clear for the
				 * faults it delivers itself, where the SDM, KVM and the
				 * VMM set it (docs/lab.md, "What the lab cannot show").
				 */
				m = put_str(t, m, " ef=");
				m = put_hex(t, m, res.frame_rflags &
						  ~(uint64_t)(X86_RFLAGS_TF | X86_RFLAGS_RF));
			}
			if (r.env) {
				m = put_str(t, m, " f=");
				m = put_hex(t, m, gen_hits);
				m = put_str(t, m, ":");
				m = put_hex(t, m, hash_words(gen_frame, 6));
			}
			t[m] = 0;
		} else {
			compact_tail[0] = 0;
		}
		print_compact(label, &req, &res, target, 8);
		if (r.flags & GEN_LOG) {
			print_events(exec_code);
			if (r.env)
				printf("  ev frame %lx %lx %lx %lx %lx %lx\n", gen_frame[0], gen_frame[1],
				       gen_frame[2], gen_frame[3], gen_frame[4], gen_frame[5]);
		}
		dbg_reset();
	}
	win_set(0, PG_NORMAL);
	win_set(1, PG_NORMAL);
	wrmsr(MSR_EFER, efer);
	compact_tail[0] = 0;
	printf("gen: %u records\n", count);
	return 0;
}

static const struct diff_case cases[] = {
	{ "gen", gen },
};
CASE_TABLE(gen_cases, cases);
