/* SPDX-License-Identifier: MIT */
/*
 * "--append bench": exit round-trip timings instead of the self-test.
 * bench/run.sh runs this and turns the lines into a table; bench/README.md
 * says what each number means.
 *
 * Every measurement is the same asm loop with one instruction swapped, so
 * that subtracting the "baseline_loop" (a NOP in that slot) leaves the cost
 * of the instruction alone. That matters here: CPL0 guest code is emulated
 * on the project's hosts, and the loop around an exit costs a good part of
 * the exit itself.
 *
 * Output, one TAP diagnostic per measurement (vCPU 0 only):
 *   # bench <name> round=<k|all> cycles=<total> iterations=<n>
 *           per_iter=<cycles> net_per_iter=<cycles - baseline> [msr=... path=...]
 * followed by a few sanity tests as TAP, so that a broken measurement (an
 * MSR that faulted when it should not have) fails the run.
 */
#include "guest.h"

/*
 * Many short rounds rather than a few long ones: the host's noise comes in
 * bursts, and a median over 20 rounds shrugs them off where a sum would not.
 */
#define DEFAULT_ITERS  1250u
#define DEFAULT_ROUNDS 20u
/*
 * A #GP costs ~20 OUTs here (the guest's handler is emulated CPL0 code), so
 * by default those loops run a tenth as often, to keep a run to a second or two.
 */
#define DEFAULT_GP_DIVISOR 10u
/* Untimed, to take one-off costs (the VMM's first-use warning) out of round 1. */
#define WARMUP_ITERS   16u

/* No 'u' suffix: it is pasted into asm too. */
#define PORT_UNUSED 0x80

/* MSRs KVM answers itself, tried in this order; the first that reads is used. */
static const uint32_t kernel_msrs[] = { 0x277 /* PAT */, 0x1b /* APIC_BASE */, 0x10 /* TSC */ };
/* MSRs nobody implements, so KVM raises #GP without leaving the kernel. */
static const uint32_t bogus_msrs[] = { 0xbad, 0x4b564dff };

enum op_kind { OP_NOP, OP_OUT, OP_RDMSR };

struct op {
	const char *name;
	enum op_kind kind;
	uint32_t msr;
	int want_vector;	/* what the last iteration must have ended with */
	const char *path;	/* what the number measures, for the reader */
	uint64_t n;		/* iterations per round */
	uint64_t cycles;	/* over all rounds */
	uint64_t iters;
};

/*
 * One loop shape for every op. ASM_TRY is there even where nothing can
 * fault so that the #GP measurement pays for no more loop than the others;
 * the fixup label is also where a faulting RDMSR resumes.
 */
#define BENCH_LOOP(fn, insn)                                                 \
	static __attribute__((noinline)) uint64_t fn(uint64_t n, uint32_t msr) \
	{                                                                    \
		uint32_t lo = 0, hi = 0;                                     \
		uint64_t t0, t1;                                             \
                                                                             \
		t0 = rdtsc();                                                \
		asm volatile("2:\n\t"                                        \
			     ASM_TRY("3f")                                   \
			     insn "\n\t"                                     \
			     "3:\n\t"                                        \
			     "dec %[n]\n\t"                                  \
			     "jnz 2b"                                        \
			     : [n] "+r"(n), "+a"(lo), "+d"(hi)               \
			     : "c"(msr)                                      \
			     : "memory", "cc");                              \
		t1 = rdtsc();                                                \
		return t1 - t0;                                              \
	}

BENCH_LOOP(loop_nop, "nop")
BENCH_LOOP(loop_out, "outb %%al, $" FW_STR(PORT_UNUSED))
BENCH_LOOP(loop_rdmsr, "rdmsr")

/* Never called with n == 0: the loop would run 2^64 times. */
static uint64_t run_op(const struct op *op, uint64_t n)
{
	switch (op->kind) {
	case OP_OUT:
		return loop_out(n, op->msr);
	case OP_RDMSR:
		return loop_rdmsr(n, op->msr);
	case OP_NOP:
	default:
		return loop_nop(n, op->msr);
	}
}

static uint64_t cmdline_uint(const char *key, uint64_t def, uint64_t max)
{
	char buf[24];
	uint64_t v = 0;

	if (!cmdline_value(key, buf, sizeof(buf)))
		return def;
	for (const char *p = buf; *p; p++) {
		if (*p < '0' || *p > '9' || v > (max - (uint64_t)(*p - '0')) / 10) {
			tap_diag("bench: %s=%s is not a number from 1 to %lu; using %lu",
				 key, buf, max, def);
			return def;
		}
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (v == 0) {
		tap_diag("bench: %s=0 makes no measurement; using %lu", key, def);
		return def;
	}
	return v;
}

static const char *vector_name(int vec)
{
	return vec == EXC_NONE ? "none" : exception_mnemonic((unsigned)vec);
}

/* First MSR of the list whose read ends with `want`; 0 if none does. */
static uint32_t probe_msr(const uint32_t *msrs, size_t count, int want)
{
	uint64_t val;

	for (size_t i = 0; i < count; i++) {
		int vec = rdmsr_safe(msrs[i], &val);

		tap_diag("bench probe msr=0x%x vector=%s", msrs[i], vector_name(vec));
		if (vec == want)
			return msrs[i];
	}
	return 0;
}

static void print_op(const struct op *op, const char *round, uint64_t cycles,
		     uint64_t iters, int64_t base_per_iter)
{
	uint64_t per_iter = cycles / iters;
	int64_t net = (int64_t)per_iter - base_per_iter;
	char extra[64] = "";

	if (op->kind == OP_RDMSR)
		snprintf(extra, sizeof(extra), " msr=0x%x path=%s", op->msr, op->path);
	else if (op->kind == OP_OUT)
		snprintf(extra, sizeof(extra), " port=0x%x path=%s", PORT_UNUSED, op->path);
	tap_diag("bench %s round=%s cycles=%lu iterations=%lu per_iter=%lu net_per_iter=%ld%s",
		 op->name, round, cycles, iters, per_iter, net, extra);
}

/* Room for every op choose_ops() may add. */
#define MAX_OPS 6

/*
 * The ops this VM can measure, baseline first: the probes decide which
 * MSRs read, and which raise #GP, here. Returns how many.
 */
static size_t choose_ops(struct op ops[MAX_OPS], uint64_t iters, uint64_t gp_iters)
{
	size_t nops = 0;
	uint64_t val;
	int gp_vec;
	uint32_t kmsr, bogus;

	/* Index 0 is the baseline: the others subtract it. */
	ops[nops++] = (struct op){ "baseline_loop", OP_NOP, 0, EXC_NONE, "nop", iters, 0, 0 };
	ops[nops++] = (struct op){ "out_unused_port", OP_OUT, 0, EXC_NONE, "userspace", iters, 0, 0 };

	int cc_vec = rdmsr_safe(MSR_IA32_CORE_CAPABILITIES, &val);

	tap_diag("bench probe msr=0x%x vector=%s", MSR_IA32_CORE_CAPABILITIES, vector_name(cc_vec));
	tap_ok(cc_vec == EXC_NONE, "rdmsr 0x%x (emulated in the VMM) reads without a fault",
	       MSR_IA32_CORE_CAPABILITIES);
	if (cc_vec == EXC_NONE)
		ops[nops++] = (struct op){ "rdmsr_emulated", OP_RDMSR,
					   MSR_IA32_CORE_CAPABILITIES, EXC_NONE, "userspace", iters, 0, 0 };

	/*
	 * TEST_CTRL reads only where the VM enumerates split-lock detection;
	 * elsewhere the VMM answers #GP, and this measures that path, guest
	 * exception handling included.
	 */
	gp_vec = rdmsr_safe(MSR_TEST_CTRL, &val);
	tap_diag("bench probe msr=0x%x vector=%s", MSR_TEST_CTRL, vector_name(gp_vec));
	tap_ok(gp_vec == EXC_NONE || gp_vec == X86_VEC_GP,
	       "rdmsr 0x%x reads or raises #GP (%s)", MSR_TEST_CTRL, vector_name(gp_vec));
	if (gp_vec == EXC_NONE || gp_vec == X86_VEC_GP)
		ops[nops++] = (struct op){ "rdmsr_test_ctrl", OP_RDMSR, MSR_TEST_CTRL, gp_vec,
					   gp_vec == EXC_NONE ? "userspace" : "userspace_gp",
					   gp_vec == EXC_NONE ? iters : gp_iters, 0, 0 };

	kmsr = probe_msr(kernel_msrs, ARRAY_SIZE(kernel_msrs), EXC_NONE);
	tap_ok(kmsr != 0, "an MSR that KVM handles in the kernel reads without a fault (0x%x)", kmsr);
	if (kmsr)
		ops[nops++] = (struct op){ "rdmsr_kernel", OP_RDMSR, kmsr, EXC_NONE, "kernel", iters, 0, 0 };

	/*
	 * The #GP path's cost is mostly the guest's own exception handling;
	 * a #GP that KVM raises without leaving the kernel shows how much.
	 * Absent if the host ignores unknown MSRs: not an error.
	 */
	bogus = probe_msr(bogus_msrs, ARRAY_SIZE(bogus_msrs), X86_VEC_GP);
	if (bogus)
		ops[nops++] = (struct op){ "rdmsr_kernel_gp", OP_RDMSR, bogus, X86_VEC_GP,
					   "kernel_gp", gp_iters, 0, 0 };
	else
		tap_diag("bench: no MSR raised #GP in the kernel; rdmsr_kernel_gp not measured");
	return nops;
}

/*
 * The timed rounds, each op's line per round; adds up each op's cycles
 * and iterations. false if a loop ended otherwise than its probe did.
 */
static bool run_rounds(struct op *ops, size_t nops, uint64_t rounds)
{
	bool outcomes_ok = true;

	for (uint64_t r = 1; r <= rounds; r++) {
		uint64_t cycles[MAX_OPS];
		char round[24];

		/* A different op first each round, so slow drift spreads over all of them. */
		for (size_t k = 0; k < nops; k++) {
			size_t i = (k + r) % nops;

			cycles[i] = run_op(&ops[i], ops[i].n);
			if (exception_vector() != ops[i].want_vector) {
				tap_diag("bench %s round=%lu ended with %s, want %s", ops[i].name, r,
					 vector_name(exception_vector()), vector_name(ops[i].want_vector));
				outcomes_ok = false;
			}
			ops[i].cycles += cycles[i];
			ops[i].iters += ops[i].n;
		}
		snprintf(round, sizeof(round), "%lu", r);
		for (size_t i = 0; i < nops; i++)
			print_op(&ops[i], round, cycles[i], ops[i].n,
				 (int64_t)(cycles[0] / ops[0].n));
	}
	return outcomes_ok;
}

int bench_main(const struct boot_info *bi)
{
	uint64_t iters = cmdline_uint("bench.iters", DEFAULT_ITERS, 100000000);
	uint64_t rounds = cmdline_uint("bench.rounds", DEFAULT_ROUNDS, 1000);
	uint64_t gp_iters = cmdline_uint("bench.gp_iters",
					 iters / DEFAULT_GP_DIVISOR ? iters / DEFAULT_GP_DIVISOR : 1,
					 100000000);
	struct op ops[MAX_OPS];
	size_t nops;
	bool outcomes_ok;

	tap_diag("bench config iterations=%lu gp_iterations=%lu rounds=%lu cpus=%u timer=rdtsc",
		 iters, gp_iters, rounds, bi->cpu_count);
	nops = choose_ops(ops, iters, gp_iters);

	/* The first OUT to a port makes the VMM print a warning: keep it out of the timing. */
	for (size_t i = 0; i < nops; i++)
		run_op(&ops[i], WARMUP_ITERS);

	tap_diag("bench tsc mark=start tsc=%lu", rdtsc());
	outcomes_ok = run_rounds(ops, nops, rounds);
	tap_diag("bench tsc mark=end tsc=%lu", rdtsc());
	for (size_t i = 0; i < nops; i++)
		print_op(&ops[i], "all", ops[i].cycles, ops[i].iters,
			 (int64_t)(ops[0].cycles / ops[0].iters));

	tap_ok(outcomes_ok, "every timed loop ended as its probe did");
	return tap_done();
}
