/* SPDX-License-Identifier: MIT */
/*
 * Split-lock detection as the guest sees it. The guest is never told the
 * VM's policy: it reads the enumeration, decides what to expect, and prints
 * what it saw as diagnostics (sld=..., core_capabilities=...) so that the
 * harness can hold them against the policy it gave.
 */
#include "guest.h"

/* Reserved TEST_CTRL bits the test writes, each must raise #GP. */
static const unsigned reserved_bits[] = { 0, 1, 28, 30, 31, 32, 48, 63 };

/* ~5 s at CPL0 on the project's hosts; plenty on real hardware. */
#define AP_WAIT_SPINS 1000000u

static bool enumerated;
/* vCPU 0 -> vCPU 1 handshake for the per-vCPU TEST_CTRL check. */
enum { AP_IDLE, AP_READ_TEST_CTRL, AP_RELEASE };
static uint32_t ap_request;
static uint32_t ap_done;
static int ap_vector;
static uint64_t ap_value;

/*
 * A 64-byte aligned scratch area: `split` crosses the cache line at 64 for
 * any operand of 4 or 8 bytes, `aligned` is the same operation's control.
 */
static uint8_t scratch[256] __attribute__((aligned(64)));
#define SPLIT_OFFSET   61
#define ALIGNED_OFFSET 128

struct locked_op {
	const char *name;
	unsigned size;
	/* Runs the op under ASM_TRY; returns exception_vector(). */
	int (*run)(void *p, uint64_t *reg);
};

static int op_lock_inc32(void *p, uint64_t *reg)
{
	(void)reg;
	asm volatile(ASM_TRY("1f") "lock incl (%0)\n\t1:" : : "r"(p) : "memory", "cc");
	return exception_vector();
}

static int op_lock_add64(void *p, uint64_t *reg)
{
	asm volatile(ASM_TRY("1f") "lock addq %1, (%0)\n\t1:"
		     : : "r"(p), "r"(*reg) : "memory", "cc");
	return exception_vector();
}

static int op_lock_xadd32(void *p, uint64_t *reg)
{
	uint32_t v = (uint32_t)*reg;

	asm volatile(ASM_TRY("1f") "lock xaddl %0, (%1)\n\t1:"
		     : "+r"(v) : "r"(p) : "memory", "cc");
	*reg = v;
	return exception_vector();
}

/* XCHG with memory is locked without a prefix. */
static int op_xchg64(void *p, uint64_t *reg)
{
	uint64_t v = *reg;

	asm volatile(ASM_TRY("1f") "xchgq %0, (%1)\n\t1:" : "+r"(v) : "r"(p) : "memory");
	*reg = v;
	return exception_vector();
}

static int op_lock_cmpxchg64(void *p, uint64_t *reg)
{
	uint64_t expected = *(volatile uint64_t *)p;

	asm volatile(ASM_TRY("1f") "lock cmpxchgq %2, (%1)\n\t1:"
		     : "+a"(expected) : "r"(p), "r"(*reg) : "memory", "cc");
	*reg = expected;
	return exception_vector();
}

static int op_lock_bts32(void *p, uint64_t *reg)
{
	uint64_t carry = 0;

	asm volatile(ASM_TRY("1f") "lock btsl $31, (%1)\n\t"
		     "adcq $0, %0\n\t1:" : "+r"(carry) : "r"(p) : "memory", "cc");
	*reg = carry;
	return exception_vector();
}

static const struct locked_op ops[] = {
	{ "lock inc dword", 4, op_lock_inc32 },
	{ "lock add qword", 8, op_lock_add64 },
	{ "lock xadd dword", 4, op_lock_xadd32 },
	{ "xchg qword", 8, op_xchg64 },
	{ "lock cmpxchg qword", 8, op_lock_cmpxchg64 },
	{ "lock bts dword", 4, op_lock_bts32 },
};

static const uint64_t seed_value = 0x8877665544332211ull;
static const uint64_t reg_value = 0x0123456789abcdefull;

static void fill(void *p, unsigned size)
{
	memcpy(p, &seed_value, size);
}

/*
 * Runs op at `split` and at `aligned` from the same start; true when both
 * completed without an exception and left the same memory and register.
 */
static bool same_as_aligned(const struct locked_op *op, int *vector)
{
	uint8_t *split = scratch + SPLIT_OFFSET, *aligned = scratch + ALIGNED_OFFSET;
	uint64_t r_split = reg_value, r_aligned = reg_value;
	int v_aligned;

	fill(split, op->size);
	fill(aligned, op->size);
	*vector = op->run(split, &r_split);
	v_aligned = op->run(aligned, &r_aligned);
	return *vector == EXC_NONE && v_aligned == EXC_NONE && r_split == r_aligned &&
	       !memcmp(split, aligned, op->size) && memcmp(split, &seed_value, op->size);
}

static void test_enumeration(const struct boot_info *bi)
{
	struct cpuid_regs r = cpuid_count(7, 0);
	bool cpuid_bit = r.d >> CPUID_7_EDX_CORE_CAPABILITIES_BIT & 1;
	uint64_t caps = 0;
	int vec;

	(void)bi;
	tap_diag("cpuid.7.0.edx[30]=%d", cpuid_bit);
	if (cpuid_bit)
		tap_ok(true, "CPUID.(7,0):EDX[30] enumerates IA32_CORE_CAPABILITIES");
	else
		tap_skip("this KVM answers CPUID leaf 7 from the host, so the VMM's EDX[30] never arrives; reading the MSR anyway",
			 "CPUID.(7,0):EDX[30] enumerates IA32_CORE_CAPABILITIES");

	vec = rdmsr_safe(MSR_IA32_CORE_CAPABILITIES, &caps);
	tap_diag("core_capabilities=0x%llx", (unsigned long long)caps);
	tap_ok(vec == EXC_NONE, "IA32_CORE_CAPABILITIES reads without a fault (vector %d)", vec);
	tap_ok((caps & ~CORE_CAP_SPLIT_LOCK_DETECT) == 0,
	       "IA32_CORE_CAPABILITIES has no bit but 5 (0x%llx)", (unsigned long long)caps);
	enumerated = caps & CORE_CAP_SPLIT_LOCK_DETECT;
	tap_diag("sld=%s", enumerated ? "enumerated" : "not-enumerated");

	vec = wrmsr_safe(MSR_IA32_CORE_CAPABILITIES, caps);
	tap_ok(vec == X86_VEC_GP, "writing IA32_CORE_CAPABILITIES (its own value) raises #GP (vector %d)", vec);
	vec = wrmsr_safe(MSR_IA32_CORE_CAPABILITIES, 0);
	tap_ok(vec == X86_VEC_GP, "writing 0 to IA32_CORE_CAPABILITIES raises #GP (vector %d)", vec);
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

	tap_ok(rd == X86_VEC_GP, "not enumerated: reading TEST_CTRL raises #GP (vector %d)", rd);
	tap_ok(wr0 == X86_VEC_GP && wr29 == X86_VEC_GP,
	       "not enumerated: writing TEST_CTRL (0, bit 29) raises #GP (vectors %d, %d)", wr0, wr29);
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
	       "each reserved TEST_CTRL bit (0 1 28 30 31 32 48 63) raises #GP and leaves the value (%u of %zu faulted, %u changed it)",
	       faults, ARRAY_SIZE(reserved_bits), bad);
}

/* vCPU 1 reads its own TEST_CTRL while vCPU 0's bit 29 is set. */
static void test_ctrl_per_vcpu(const struct boot_info *bi)
{
	if (bi->cpu_count < 2) {
		tap_skip("needs 2 vCPUs", "TEST_CTRL is per vCPU");
		return;
	}
	atomic_store(&ap_request, AP_READ_TEST_CTRL);
	if (!spin_wait_eq32(&ap_done, 1, AP_WAIT_SPINS)) {
		tap_ok(false, "TEST_CTRL is per vCPU: vCPU 1 never answered");
		return;
	}
	tap_ok(ap_vector == EXC_NONE && ap_value == 0,
	       "TEST_CTRL is per vCPU: vCPU 0 has bit 29 set, vCPU 1 reads 0x%llx (vector %d)",
	       (unsigned long long)ap_value, ap_vector);
}

static void test_ctrl_present(const struct boot_info *bi)
{
	bool set, cleared;

	tap_ok(test_ctrl_is(0), "TEST_CTRL is 0 at reset");
	set = wrmsr_safe(MSR_TEST_CTRL, TEST_CTRL_SPLIT_LOCK_DETECT) == EXC_NONE &&
	      test_ctrl_is(TEST_CTRL_SPLIT_LOCK_DETECT);
	tap_ok(set, "TEST_CTRL bit 29 can be set and reads back");
	test_ctrl_reserved_bits();
	test_ctrl_per_vcpu(bi);
	cleared = wrmsr_safe(MSR_TEST_CTRL, 0) == EXC_NONE && test_ctrl_is(0);
	tap_ok(cleared, "TEST_CTRL bit 29 can be cleared and reads back 0");
}

static void test_test_ctrl(const struct boot_info *bi)
{
	if (enumerated)
		test_ctrl_present(bi);
	else
		test_ctrl_absent();
}

static void test_no_ac_without_split_lock(const struct boot_info *bi)
{
	unsigned bad = 0;
	uint32_t word;

	(void)bi;
	for (size_t i = 0; i < ARRAY_SIZE(ops); i++) {
		uint64_t reg = reg_value;

		fill(scratch + ALIGNED_OFFSET, ops[i].size);
		if (ops[i].run(scratch + ALIGNED_OFFSET, &reg) != EXC_NONE)
			bad++;
	}
	tap_ok(bad == 0, "aligned locked operations complete without #AC (%u faulted)", bad);

	/* A misaligned access that is not locked is no split lock. */
	asm volatile(ASM_TRY("1f") "movl %1, (%2)\n\t"
		     "movl (%2), %0\n\t1:"
		     : "=&r"(word) : "r"(0xa1b2c3d4u), "r"(scratch + SPLIT_OFFSET) : "memory");
	tap_ok(exception_vector() == EXC_NONE && word == 0xa1b2c3d4u,
	       "unlocked access across a cache line completes without #AC (vector %d)",
	       exception_vector());
}

/*
 * With TEST_CTRL bit 29 clear the guest expects split locks to just work.
 * On a split_lock_detect=fatal host the VMM cannot let them complete yet and
 * stops the VM, so a harness that knows it runs on one passes
 * selftest.no-unasked-split-lock.
 */
static void test_split_lock_unasked(const struct boot_info *bi)
{
	(void)bi;
	if (enumerated || cmdline_has("selftest.no-unasked-split-lock")) {
		tap_skip(enumerated ? "split-lock detection is enumerated, so the host traps split locks fatally and the VMM would stop this VM"
				    : "selftest.no-unasked-split-lock given",
			 "split locks with TEST_CTRL bit 29 clear complete like aligned ones");
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(ops); i++) {
		int vec;
		bool same = same_as_aligned(&ops[i], &vec);

		tap_ok(same, "split %s with TEST_CTRL bit 29 clear completes like the aligned one (vector %d)",
		       ops[i].name, vec);
	}
}

static uint64_t user_split_lock(uint64_t arg)
{
	uint64_t reg = 0;

	return (uint64_t)op_lock_inc32((void *)(uintptr_t)arg, &reg);
}

static void test_split_lock_ac(const struct boot_info *bi)
{
	unsigned raised = 0, unchanged = 0;
	int user_vec;

	(void)bi;
	if (!enumerated) {
		tap_skip("split-lock detection is not enumerated: this host cannot raise split-lock #AC",
			 "split locks with TEST_CTRL bit 29 set raise #AC at CPL0 and CPL3");
		return;
	}
	wrmsr_safe(MSR_TEST_CTRL, TEST_CTRL_SPLIT_LOCK_DETECT);
	for (size_t i = 0; i < ARRAY_SIZE(ops); i++) {
		uint64_t reg = reg_value;
		uint8_t *p = scratch + SPLIT_OFFSET;

		fill(p, ops[i].size);
		if (ops[i].run(p, &reg) == X86_VEC_AC && exception_error_code() == 0)
			raised++;
		if (!memcmp(p, &seed_value, ops[i].size))
			unchanged++;
	}
	tap_ok(raised == ARRAY_SIZE(ops) && unchanged == ARRAY_SIZE(ops),
	       "with TEST_CTRL bit 29 set, every split locked op raises #AC(0) and leaves memory (%u raised, %u unchanged of %zu)",
	       raised, unchanged, ARRAY_SIZE(ops));
	user_vec = (int)run_user(user_split_lock, (uint64_t)(uintptr_t)(scratch + SPLIT_OFFSET), 0);
	tap_ok(user_vec == X86_VEC_AC, "with TEST_CTRL bit 29 set, a split lock at CPL3 raises #AC (vector %d)",
	       user_vec);
	wrmsr_safe(MSR_TEST_CTRL, 0);
}

/* The #AC's RIP is the locked instruction itself: it is a fault. */
static void test_split_lock_ac_rip(const struct boot_info *bi)
{
	uint8_t *p = scratch + SPLIT_OFFSET;
	uint64_t insn;

	(void)bi;
	if (!enumerated) {
		tap_skip("split-lock detection is not enumerated", "split-lock #AC reports the RIP of the instruction");
		return;
	}
	wrmsr_safe(MSR_TEST_CTRL, TEST_CTRL_SPLIT_LOCK_DETECT);
	asm volatile("leaq 2f(%%rip), %0\n\t" ASM_TRY("1f") "2: lock incl (%1)\n\t1:"
		     : "=&r"(insn) : "r"(p) : "memory", "cc");
	tap_ok(exception_vector() == X86_VEC_AC && exception_rip() == insn,
	       "split-lock #AC reports the RIP of the instruction (0x%llx, instruction at 0x%llx)",
	       (unsigned long long)exception_rip(), (unsigned long long)insn);
	wrmsr_safe(MSR_TEST_CTRL, 0);
}

static void release_ap(const struct boot_info *bi)
{
	(void)bi;
	atomic_store(&ap_request, AP_RELEASE);
}

void splitlock_ap(const struct boot_info *bi)
{
	uint32_t req;

	if (bi->cpu_index != 1)
		return;
	/* Bounded: a vCPU 0 that died must not leave this one spinning for ever. */
	for (uint64_t i = 0; i < 20 * (uint64_t)AP_WAIT_SPINS; i++) {
		req = atomic_load(&ap_request);
		if (req == AP_RELEASE)
			return;
		if (req == AP_READ_TEST_CTRL) {
			ap_vector = rdmsr_safe(MSR_TEST_CTRL, &ap_value);
			atomic_store(&ap_done, 1);
			return;
		}
		cpu_relax();
	}
}

static const struct guest_test tests[] = {
	{ "enumeration", test_enumeration },
	{ "test_ctrl", test_test_ctrl },
	{ "no_ac", test_no_ac_without_split_lock },
	{ "unasked", test_split_lock_unasked },
	{ "ac", test_split_lock_ac },
	{ "ac_rip", test_split_lock_ac_rip },
	{ "release_ap", release_ap },
};

TEST_GROUP(splitlock_tests, "split-lock detection", tests);
