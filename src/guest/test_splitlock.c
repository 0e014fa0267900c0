/* SPDX-License-Identifier: MIT */
/*
 * Split-lock detection as the guest sees it. The guest is never told the
 * VM's policy: it reads the enumeration, decides what to expect, and prints
 * what it saw as diagnostics (sld=..., core_capabilities=...) so that the
 * harness can hold them against the policy it gave.
 *
 * Each TAP description starts with a check identifier ("core_caps.read:")
 * that tests/conformance/run.py turns into a row of docs/conformance.md;
 * several lines may share one. Keep them stable, and the verdicts about
 * the architecture, not about one VMM: this test also runs under QEMU.
 */
#include "guest.h"

/* Reserved TEST_CTRL bits the test writes, each must raise #GP. */
static const unsigned reserved_bits[] = { 0, 1, 28, 30, 31, 32, 48, 63 };

static bool enumerated, enumeration_read;
/*
 * Every split lock this test makes, by privilege level, whatever became of
 * it (completed or #AC): printed as split_locks_made.cpl0= and .cpl3= for
 * the harness to hold against --split-lock=emulate's --stats
 * (split_locks_detected), which must see each one.
 */
static unsigned made_cpl0, made_cpl3;

/*
 * Two pages, so that operands can cross a cache line inside a page and a
 * page boundary too. `ref` is where the same operation runs aligned.
 */
static uint8_t area[2 * 4096] __attribute__((aligned(4096)));
static uint8_t ref[64] __attribute__((aligned(64)));
#define LINE_SPLIT(size)  (area + 64 - (size) / 2)
#define PAGE_SPLIT(size)  (area + 4096 - (size) / 2)
#define IN_LINE           (area + 128 + 16)

/* What an operation reads and leaves in registers. */
struct opregs {
	uint64_t rax, rbx, rcx, rdx, src, flags;
};

struct locked_op {
	const char *name;
	unsigned size;
	/* Runs under ASM_TRY on [p]; exception_vector() tells how it went. */
	void (*run)(void *p, struct opregs *r);
};

/*
 * Each op runs with chosen registers and arithmetic flags and hands back
 * what it left in them, so results compare to the bit.
 */
#define GUEST_OP(fn, insn)                                                        \
	static void fn(void *p, struct opregs *r)                                 \
	{                                                                         \
		asm volatile("pushq %[fl]\n\tpopfq\n\t" ASM_TRY("1f") insn "\n\t"   \
			     "1:\n\tpushfq\n\tpopq %[fl]"                            \
			     : "+a"(r->rax), "+b"(r->rbx), "+c"(r->rcx), "+d"(r->rdx), \
			       "+S"(r->src), [fl] "+r"(r->flags)                    \
			     : "D"(p) : "memory", "cc");                             \
	}

#define LOCKED_OPS(X)                                              \
	X(add_b, "lock add byte", 1, "lock addb %%sil, (%%rdi)")   \
	X(add_w, "lock add word", 2, "lock addw %%si, (%%rdi)")    \
	X(add_l, "lock add dword", 4, "lock addl %%esi, (%%rdi)")  \
	X(add_q, "lock add qword", 8, "lock addq %%rsi, (%%rdi)")  \
	X(adc_l, "lock adc dword", 4, "lock adcl %%esi, (%%rdi)")  \
	X(and_q, "lock and qword", 8, "lock andq %%rsi, (%%rdi)")  \
	X(or_w, "lock or word imm", 2, "lock orw $0x8001, (%%rdi)") \
	X(sbb_q, "lock sbb qword", 8, "lock sbbq %%rsi, (%%rdi)")  \
	X(sub_l, "lock sub dword imm", 4, "lock subl $-3, (%%rdi)") \
	X(xor_w, "lock xor word", 2, "lock xorw %%si, (%%rdi)")    \
	X(not_q, "lock not qword", 8, "lock notq (%%rdi)")         \
	X(neg_l, "lock neg dword", 4, "lock negl (%%rdi)")         \
	X(inc_w, "lock inc word", 2, "lock incw (%%rdi)")          \
	X(inc_l, "lock inc dword", 4, "lock incl (%%rdi)")         \
	X(dec_q, "lock dec qword", 8, "lock decq (%%rdi)")         \
	X(xchg_l, "xchg dword", 4, "xchgl %%esi, (%%rdi)")         \
	X(xchg_q, "xchg qword", 8, "xchgq %%rsi, (%%rdi)")         \
	X(xadd_w, "lock xadd word", 2, "lock xaddw %%si, (%%rdi)") \
	X(xadd_l, "lock xadd dword", 4, "lock xaddl %%esi, (%%rdi)") \
	X(cmpxchg_l, "lock cmpxchg dword", 4, "lock cmpxchgl %%esi, (%%rdi)") \
	X(cmpxchg_q, "lock cmpxchg qword", 8, "lock cmpxchgq %%rsi, (%%rdi)") \
	X(cmpxchg8b, "lock cmpxchg8b", 8, "lock cmpxchg8b (%%rdi)") \
	X(cmpxchg16b, "lock cmpxchg16b", 16, "lock cmpxchg16b (%%rdi)") \
	X(bts_l, "lock bts dword imm", 4, "lock btsl $13, (%%rdi)") \
	X(btr_q, "lock btr qword reg", 8, "lock btrq %%rsi, (%%rdi)") \
	X(btc_w, "lock btc word reg", 2, "lock btcw %%si, (%%rdi)")

#define DEFINE_OP(fn, name, size, insn) GUEST_OP(op_##fn, insn)
LOCKED_OPS(DEFINE_OP)

#define TABLE_OP(fn, name, size, insn) { name, size, op_##fn },
static const struct locked_op ops[] = { LOCKED_OPS(TABLE_OP) };

/* CMPXCHG16B needs 16-byte alignment, so it can never split a line. */
static bool can_split(const struct locked_op *op)
{
	return op->size > 1 && op->size < 16;
}

static const uint64_t seed_lo = 0x8877665544332211ull, seed_hi = 0xffeeddccbbaa9988ull;

static void seed(void *p, unsigned size)
{
	uint64_t v[2] = { seed_lo, seed_hi };

	memcpy(p, v, size);
}

/*
 * Registers that make every op do something: compare-exchanges succeed
 * (accumulators hold the seed), bit offsets stay in the operand.
 */
static struct opregs start_regs(void)
{
	return (struct opregs){
		.rax = seed_lo, .rdx = seed_hi, .rbx = 0x0123456789abcdefull,
		.rcx = 0xfedcba9876543210ull, .src = 5, .flags = 0x2 | 0x1 | 0x800,
	};
}

/* Runs op at p and on the aligned `ref`; true when both agree to the bit. */
static bool same_as_aligned(const struct locked_op *op, uint8_t *p, int *vector)
{
	struct opregs a = start_regs(), b = start_regs();

	seed(p, op->size);
	seed(ref, op->size);
	op->run(p, &a);
	*vector = exception_vector();
	op->run(ref, &b);
	return *vector == EXC_NONE && exception_vector() == EXC_NONE &&
	       !memcmp(p, ref, op->size) && a.rax == b.rax && a.rbx == b.rbx &&
	       a.rcx == b.rcx && a.rdx == b.rdx && a.src == b.src &&
	       (a.flags & X86_RFLAGS_ARITH) == (b.flags & X86_RFLAGS_ARITH);
}

/* With TEST_CTRL bit 29 set: #AC(0), and memory untouched. */
static bool raises_ac(const struct locked_op *op, uint8_t *p)
{
	struct opregs r = start_regs();
	bool untouched;
	uint8_t before[16];

	seed(p, op->size);
	memcpy(before, p, op->size);
	op->run(p, &r);
	untouched = !memcmp(p, before, op->size);
	return exception_vector() == X86_VEC_AC && exception_error_code() == 0 && untouched;
}

static void test_enumeration(const struct boot_info *bi)
{
	struct cpuid_regs r = cpuid_count(7, 0);
	bool cpuid_bit = r.d >> CPUID_7_EDX_CORE_CAPABILITIES_BIT & 1;
	uint64_t caps = 0;
	int vec;

	tap_diag("cpuid.7.0.edx[30]=%d", cpuid_bit);
	if (cpuid_bit)
		tap_ok(true, "cpuid: CPUID.(7,0):EDX[30] enumerates IA32_CORE_CAPABILITIES");
	else if (bi->flags & BOOT_FLAG_CPUID_7_EDX30_SET)
		tap_ok(false, "cpuid: CPUID.(7,0):EDX[30] enumerates IA32_CORE_CAPABILITIES (0, though vmm says it set it and its probe saw it reach a guest)");
	else
		tap_skip("EDX[30] is 0: not enumerated, or hidden by a KVM that answers CPUID leaf 7 from the host (vmm --host-info tells); reading the MSR anyway",
			 "cpuid: CPUID.(7,0):EDX[30] enumerates IA32_CORE_CAPABILITIES");

	/*
	 * With EDX[30] clear the MSR may be absent (#GP, as the SDM says) or
	 * there all the same (a VMM that provides it behind such a KVM); the
	 * diagnostic tells which, for the harness to hold against the policy.
	 */
	vec = rdmsr_safe(MSR_IA32_CORE_CAPABILITIES, &caps);
	if (vec == EXC_NONE)
		tap_diag("core_capabilities=0x%llx", (unsigned long long)caps);
	else
		tap_diag("core_capabilities=absent");
	tap_ok(vec == EXC_NONE || (!cpuid_bit && vec == X86_VEC_GP),
	       "core_caps.read: IA32_CORE_CAPABILITIES reads without a fault, or raises #GP where EDX[30] is 0 (vector %d)",
	       vec);
	if (vec == EXC_NONE)
		tap_ok((caps & ~CORE_CAP_SPLIT_LOCK_DETECT) == 0,
		       "core_caps.value: IA32_CORE_CAPABILITIES has no bit but 5 (0x%llx)",
		       (unsigned long long)caps);
	else
		tap_skip("IA32_CORE_CAPABILITIES is absent",
			 "core_caps.value: IA32_CORE_CAPABILITIES has no bit but 5");
	enumerated = caps & CORE_CAP_SPLIT_LOCK_DETECT;
	enumeration_read = true;
	tap_diag("sld=%s", enumerated ? "enumerated" : "not-enumerated");

	vec = wrmsr_safe(MSR_IA32_CORE_CAPABILITIES, caps);
	tap_ok(vec == X86_VEC_GP, "core_caps.write_gp: writing IA32_CORE_CAPABILITIES (its own value) raises #GP (vector %d)", vec);
	vec = wrmsr_safe(MSR_IA32_CORE_CAPABILITIES, 0);
	tap_ok(vec == X86_VEC_GP, "core_caps.write_gp: writing 0 to IA32_CORE_CAPABILITIES raises #GP (vector %d)", vec);
}

static bool test_ctrl_is(uint64_t want)
{
	uint64_t v = ~0ull;

	return rdmsr_safe(MSR_TEST_CTRL, &v) == EXC_NONE && v == want;
}

static void test_ctrl_absent(void)
{
	uint64_t v;
	int rd = rdmsr_safe(MSR_TEST_CTRL, &v);
	int wr0 = wrmsr_safe(MSR_TEST_CTRL, 0);
	int wr29 = wrmsr_safe(MSR_TEST_CTRL, TEST_CTRL_SPLIT_LOCK_DETECT);

	tap_ok(rd == X86_VEC_GP, "test_ctrl.exists: not enumerated, and reading TEST_CTRL raises #GP (vector %d)", rd);
	tap_ok(wr0 == X86_VEC_GP && wr29 == X86_VEC_GP,
	       "test_ctrl.exists: not enumerated, and writing TEST_CTRL (0, bit 29) raises #GP (vectors %d, %d)", wr0, wr29);
	tap_skip("TEST_CTRL is not enumerated", "test_ctrl.reset: TEST_CTRL is 0 at reset");
	tap_skip("TEST_CTRL is not enumerated", "test_ctrl.set: TEST_CTRL bit 29 can be set and reads back");
	tap_skip("TEST_CTRL is not enumerated", "test_ctrl.reserved_gp: each reserved TEST_CTRL bit raises #GP");
	tap_skip("TEST_CTRL is not enumerated", "test_ctrl.per_cpu: TEST_CTRL is per vCPU");
	tap_skip("TEST_CTRL is not enumerated", "test_ctrl.clear: TEST_CTRL bit 29 can be cleared and reads back 0");
}

static void test_ctrl_reserved_bits(void)
{
	unsigned bad = 0, faults = 0;

	for (size_t i = 0; i < ARRAY_SIZE(reserved_bits); i++) {
		uint64_t val = TEST_CTRL_SPLIT_LOCK_DETECT | (1ull << reserved_bits[i]);

		if (wrmsr_safe(MSR_TEST_CTRL, val) == X86_VEC_GP)
			faults++;
		if (!test_ctrl_is(TEST_CTRL_SPLIT_LOCK_DETECT))
			bad++;
	}
	tap_ok(faults == ARRAY_SIZE(reserved_bits) && bad == 0,
	       "test_ctrl.reserved_gp: each reserved TEST_CTRL bit (0 1 28 30 31 32 48 63) raises #GP and leaves the value (%u of %zu faulted, %u changed it)",
	       faults, ARRAY_SIZE(reserved_bits), bad);
}

/*
 * Each AP (up to PERCPU_MAX_APS) reads its own TEST_CTRL, never written,
 * while vCPU 0's bit 29 is set: its reset value, 0.
 */
static void test_ctrl_per_vcpu(const struct boot_info *bi)
{
	unsigned n = percpu_aps(bi), wrong;
	bool answered;

	if (n == 0) {
		tap_skip("needs 2 vCPUs", "test_ctrl.per_cpu: TEST_CTRL is per vCPU");
		return;
	}
	answered = ap_call(AP_OP_READ, 0, percpu_mask(n));
	wrong = ap_replies_not(percpu_mask(n), EXC_NONE, 0);
	tap_ok(answered && wrong == 0,
	       "test_ctrl.per_cpu: TEST_CTRL is per vCPU, vCPU 0 has bit 29 set and each AP reads its reset value 0 (vCPU 1 reads 0x%llx, vector %d; %u of %u APs wrong)",
	       (unsigned long long)ap_reply(1)->value, ap_reply(1)->vector, wrong, n);
}

static void test_ctrl_present(const struct boot_info *bi)
{
	uint64_t v;
	int vec = rdmsr_safe(MSR_TEST_CTRL, &v);
	bool set, cleared;

	tap_ok(vec == EXC_NONE, "test_ctrl.exists: enumerated, and TEST_CTRL reads without a fault (vector %d)", vec);
	tap_ok(test_ctrl_is(0), "test_ctrl.reset: TEST_CTRL is 0 at reset");
	set = wrmsr_safe(MSR_TEST_CTRL, TEST_CTRL_SPLIT_LOCK_DETECT) == EXC_NONE &&
	      test_ctrl_is(TEST_CTRL_SPLIT_LOCK_DETECT);
	tap_ok(set, "test_ctrl.set: TEST_CTRL bit 29 can be set and reads back");
	test_ctrl_reserved_bits();
	test_ctrl_per_vcpu(bi);
	cleared = wrmsr_safe(MSR_TEST_CTRL, 0) == EXC_NONE && test_ctrl_is(0);
	tap_ok(cleared, "test_ctrl.clear: TEST_CTRL bit 29 can be cleared and reads back 0");
}

static void test_test_ctrl(const struct boot_info *bi)
{
	if (splitlock_enumerated())
		test_ctrl_present(bi);
	else
		test_ctrl_absent();
}

/*
 * The project's hosts emulate CPL0 guest code and their KVM cannot emulate
 * CMPXCHG16B (it ends in KVM_EXIT_INTERNAL_ERROR), so that one runs at CPL3.
 */
static uint64_t user_in_line(uint64_t i)
{
	int vec;

	return same_as_aligned(&ops[i], IN_LINE, &vec);
}

static void test_no_ac_without_split_lock(const struct boot_info *bi)
{
	unsigned bad = 0;
	uint32_t word;

	(void)bi;
	/* Inside one line nothing is a split lock, whatever TEST_CTRL says. */
	if (splitlock_enumerated())
		wrmsr_safe(MSR_TEST_CTRL, TEST_CTRL_SPLIT_LOCK_DETECT);
	for (size_t i = 0; i < ARRAY_SIZE(ops); i++) {
		int vec;
		bool ok = ops[i].size == 16 ? run_user(user_in_line, i, 0) != 0
					   : same_as_aligned(&ops[i], IN_LINE, &vec);

		if (!ok)
			bad++;
	}
	tap_ok(bad == 0, "split_lock.in_line: locked operations of 1 to 16 bytes inside one cache line complete without #AC%s (%u wrong)",
	       splitlock_enumerated() ? ", TEST_CTRL bit 29 set" : "", bad);

	/* A misaligned access that is not locked is no split lock. */
	asm volatile(ASM_TRY("1f") "movl %1, (%2)\n\t"
		     "movl (%2), %0\n\t1:"
		     : "=&r"(word) : "r"(0xa1b2c3d4u), "r"(LINE_SPLIT(4)) : "memory");
	tap_ok(exception_vector() == EXC_NONE && word == 0xa1b2c3d4u,
	       "split_lock.unlocked: unlocked access across a cache line completes without #AC (vector %d)",
	       exception_vector());
	if (splitlock_enumerated())
		wrmsr_safe(MSR_TEST_CTRL, 0);
}

/*
 * With TEST_CTRL bit 29 clear the guest expects split locks to just work:
 * natively where the host does not detect them, emulated by the VMM where
 * it does (split_lock_detect=fatal, or --split-lock=emulate).
 */
static void test_split_lock_unasked(const struct boot_info *bi)
{
	(void)bi;
	for (size_t i = 0; i < ARRAY_SIZE(ops); i++) {
		int v_line, v_page;
		bool line, page;

		if (!can_split(&ops[i]))
			continue;
		line = same_as_aligned(&ops[i], LINE_SPLIT(ops[i].size), &v_line);
		page = same_as_aligned(&ops[i], PAGE_SPLIT(ops[i].size), &v_page);
		made_cpl0 += 2;
		tap_ok(line && page,
		       "split_lock.clear: split %s across a line and across a page, TEST_CTRL bit 29 clear: same memory, registers and flags as aligned (vectors %d, %d)",
		       ops[i].name, v_line, v_page);
	}
}

static uint64_t user_split_lock(uint64_t arg)
{
	struct opregs r = start_regs();

	(void)arg;
	op_inc_l(LINE_SPLIT(4), &r);
	return (uint64_t)exception_vector();
}

static void test_split_lock_ac(const struct boot_info *bi)
{
	int user_vec;

	if (!splitlock_enumerated()) {
		tap_skip("split-lock detection is not enumerated",
			 "split_lock.ac: split locks with TEST_CTRL bit 29 set raise #AC");
		tap_skip("split-lock detection is not enumerated",
			 "split_lock.ac_cpl3: with TEST_CTRL bit 29 set, a split lock at CPL3 raises #AC");
		return;
	}
	wrmsr_safe(MSR_TEST_CTRL, TEST_CTRL_SPLIT_LOCK_DETECT);
	for (size_t i = 0; i < ARRAY_SIZE(ops); i++) {
		bool line, page;

		if (!can_split(&ops[i]))
			continue;
		line = raises_ac(&ops[i], LINE_SPLIT(ops[i].size));
		page = raises_ac(&ops[i], PAGE_SPLIT(ops[i].size));
		made_cpl0 += 2;
		tap_ok(line && page,
		       "split_lock.ac: split %s across a line and across a page, TEST_CTRL bit 29 set: #AC(0), memory unchanged",
		       ops[i].name);
	}
	if (bi->flags & BOOT_FLAG_SPLIT_LOCK_CPL0_ONLY) {
		tap_skip("the VMM emulates split-lock detection by single-stepping, and this host's KVM cannot single-step CPL3",
			 "split_lock.ac_cpl3: with TEST_CTRL bit 29 set, a split lock at CPL3 raises #AC");
	} else {
		user_vec = (int)run_user(user_split_lock, 0, 0);
		made_cpl3++;
		tap_ok(user_vec == X86_VEC_AC,
		       "split_lock.ac_cpl3: with TEST_CTRL bit 29 set, a split lock at CPL3 raises #AC (vector %d)", user_vec);
	}
	wrmsr_safe(MSR_TEST_CTRL, 0);
}

static void test_split_lock_user_unasked(const struct boot_info *bi)
{
	int vec;

	(void)bi;
	vec = (int)run_user(user_split_lock, 0, 0);
	made_cpl3++;
	tap_ok(vec == EXC_NONE, "split_lock.clear_cpl3: a split lock at CPL3 with TEST_CTRL bit 29 clear completes (vector %d)", vec);
}

/* The #AC's RIP is the locked instruction itself: it is a fault. */
static void test_split_lock_ac_rip(const struct boot_info *bi)
{
	uint8_t *p = LINE_SPLIT(4);
	uint64_t insn;

	(void)bi;
	if (!splitlock_enumerated()) {
		tap_skip("split-lock detection is not enumerated",
			 "split_lock.ac_rip: split-lock #AC reports the RIP of the instruction");
		tap_skip("split-lock detection is not enumerated",
			 "split_lock.ac_rf: the split-lock #AC frame has RF set");
		return;
	}
	wrmsr_safe(MSR_TEST_CTRL, TEST_CTRL_SPLIT_LOCK_DETECT);
	asm volatile("leaq 2f(%%rip), %0\n\t" ASM_TRY("1f") "2: lock incl (%1)\n\t1:"
		     : "=&r"(insn) : "r"(p) : "memory", "cc");
	made_cpl0++;
	tap_ok(exception_vector() == X86_VEC_AC && exception_rip() == insn,
	       "split_lock.ac_rip: split-lock #AC reports the RIP of the instruction (0x%llx, instruction at 0x%llx)",
	       (unsigned long long)exception_rip(), (unsigned long long)insn);
	/* A fault pushes RF set, so that a code breakpoint there does not fire twice. */
	tap_ok(exception_vector() == X86_VEC_AC && (exception_rflags() & X86_RFLAGS_RF),
	       "split_lock.ac_rf: the split-lock #AC frame has RF set (rflags 0x%llx)",
	       (unsigned long long)exception_rflags());
	wrmsr_safe(MSR_TEST_CTRL, 0);
}

/* Run after every test that makes split locks (test_percpu.c's last). */
void splitlock_count_made(const struct boot_info *bi)
{
	(void)bi;
	tap_diag("split_locks_made.cpl0=%u", made_cpl0);
	tap_diag("split_locks_made.cpl3=%u", made_cpl3);
}

void splitlock_made_cpl0(unsigned n)
{
	made_cpl0 += n;
}

/* test_enumeration's answer; where selftest.only left it out, read here. */
bool splitlock_enumerated(void)
{
	uint64_t caps = 0;

	if (!enumeration_read) {
		enumerated = rdmsr_safe(MSR_IA32_CORE_CAPABILITIES, &caps) == EXC_NONE &&
			     (caps & CORE_CAP_SPLIT_LOCK_DETECT);
		enumeration_read = true;
		tap_diag("sld=%s", enumerated ? "enumerated" : "not-enumerated");
	}
	return enumerated;
}

static const struct guest_test tests[] = {
	{ "enumeration", test_enumeration },
	{ "test_ctrl", test_test_ctrl },
	{ "no_ac", test_no_ac_without_split_lock },
	{ "unasked", test_split_lock_unasked },
	{ "ac", test_split_lock_ac },
	{ "user_unasked", test_split_lock_user_unasked },
	{ "ac_rip", test_split_lock_ac_rip },
};

TEST_GROUP(splitlock_tests, "split-lock detection", tests);
