/* SPDX-License-Identifier: MIT */
/* The exception table at CPL0: ASM_TRY and the *_safe helpers. */
#include "guest.h"

/* Outside every range KVM or the CPU defines: RDMSR/WRMSR must #GP. */
#define BOGUS_MSR 0x12345678u

static void test_no_fault(const struct boot_info *bi)
{
	(void)bi;
	asm volatile(ASM_TRY("1f") "nop\n\t" "1:" ::: "memory");
	tap_ok(exception_vector() == EXC_NONE,
	       "ASM_TRY around nop reports EXC_NONE (%d)", exception_vector());
}

static void test_ud(const struct boot_info *bi)
{
	uint64_t insn;
	int vec;

	(void)bi;
	asm volatile("leaq 2f(%%rip), %0\n\t"
		     ASM_TRY("1f")
		     "2: ud2\n\t"
		     "1:"
		     : "=r"(insn) : : "memory");
	vec = exception_vector();
	tap_ok(vec == X86_VEC_UD && exception_rip() == insn,
	       "ud2 at CPL0 raises #UD (vector %d, RIP 0x%lx, ud2 at 0x%lx) and resumes",
	       vec, exception_rip(), insn);
	tap_ok(try_ud2() == X86_VEC_UD, "try_ud2() reports #UD");
}

static void test_de(const struct boot_info *bi)
{
	int vec = try_div0();

	(void)bi;
	tap_ok(vec == X86_VEC_DE, "divide by zero raises #DE (vector %d)", vec);
}

static void test_rdmsr_bogus(const struct boot_info *bi)
{
	uint64_t val = 1;
	int vec = rdmsr_safe(BOGUS_MSR, &val);

	(void)bi;
	tap_ok(vec == X86_VEC_GP && exception_error_code() == 0 && val == 0,
	       "rdmsr_safe of nonexistent MSR 0x%x raises #GP(0) (vector %d, error 0x%lx)",
	       BOGUS_MSR, vec, exception_error_code());
}

static void test_wrmsr_bogus(const struct boot_info *bi)
{
	int vec = wrmsr_safe(BOGUS_MSR, 0);

	(void)bi;
	tap_ok(vec == X86_VEC_GP,
	       "wrmsr_safe of nonexistent MSR 0x%x raises #GP (vector %d)", BOGUS_MSR, vec);
}

static void test_gs_base(const struct boot_info *bi)
{
	uint64_t val = 0;
	int vec = rdmsr_safe(MSR_GS_BASE, &val);

	(void)bi;
	tap_ok(vec == EXC_NONE && val == (uint64_t)this_cpu(),
	       "rdmsr_safe(MSR_GS_BASE) succeeds (%d) and reads this CPU's struct (0x%lx)",
	       vec, val);
	vec = wrmsr_safe(MSR_GS_BASE, val);
	tap_ok(vec == EXC_NONE && this_cpu() == (struct cpu *)val,
	       "wrmsr_safe(MSR_GS_BASE) of the same value succeeds (%d)", vec);
}

static const struct guest_test tests[] = {
	{ "no_fault", test_no_fault },
	{ "ud", test_ud },
	{ "de", test_de },
	{ "rdmsr_bogus", test_rdmsr_bogus },
	{ "wrmsr_bogus", test_wrmsr_bogus },
	{ "gs_base", test_gs_base },
};

TEST_GROUP(exception_tests, "exceptions at CPL0", tests);
