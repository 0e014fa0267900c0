/* SPDX-License-Identifier: MIT */
/* run_user: CPL3 round trips, exceptions caught at CPL3, legacy #AC. */
#include "guest.h"

struct probe {
	uint64_t in;
	uint64_t rflags;
	uint16_t cs;
};

static uint64_t user_probe(uint64_t arg)
{
	struct probe *p = (struct probe *)arg;

	p->cs = read_cs();
	p->rflags = read_rflags();
	return p->in * 3 + 7;
}

static void test_round_trip(const struct boot_info *bi)
{
	struct probe p = { .in = 0x1234 };
	uint64_t ret = run_user(user_probe, (uint64_t)&p, 0);

	(void)bi;
	tap_ok(ret == p.in * 3 + 7 && (p.cs & 3) == 3 && (read_cs() & 3) == 0,
	       "run_user returns 0x%lx computed at CPL3 (CS 0x%x there, 0x%x after)",
	       ret, p.cs, read_cs());
}

static void test_ac_flag(const struct boot_info *bi)
{
	struct probe p = { .in = 1 };

	(void)bi;
	run_user(user_probe, (uint64_t)&p, RUN_USER_AC);
	tap_ok((p.rflags & X86_RFLAGS_AC) && !(read_rflags() & X86_RFLAGS_AC),
	       "RUN_USER_AC sets RFLAGS.AC at CPL3 (0x%lx) and not after (0x%lx)",
	       p.rflags, read_rflags());
}

struct fault {
	const void *addr;
	uint64_t insn;          /* address of the instruction that may fault */
	uint64_t rip;           /* exception_rip() */
	uint64_t error_code;
	uint32_t val;
	int vector;
	uint16_t cs_after;      /* CS at the fixup */
};

static void record(struct fault *f)
{
	f->vector = exception_vector();
	f->rip = exception_rip();
	f->error_code = exception_error_code();
	f->cs_after = read_cs();
}

static uint64_t user_ud(uint64_t arg)
{
	struct fault *f = (struct fault *)arg;

	asm volatile("leaq 2f(%%rip), %0\n\t"
		     ASM_TRY("1f")
		     "2: ud2\n\t"
		     "1:"
		     : "=r"(f->insn) : : "memory");
	record(f);
	return 0;
}

static void test_user_ud(const struct boot_info *bi)
{
	struct fault f = { 0 };

	(void)bi;
	run_user(user_ud, (uint64_t)&f, 0);
	tap_ok(f.vector == X86_VEC_UD && f.rip == f.insn && (f.cs_after & 3) == 3,
	       "ud2 at CPL3 raises #UD (vector %d at 0x%lx), resumes at CPL3 (CS 0x%x)",
	       f.vector, f.rip, f.cs_after);
}

static uint64_t user_rdmsr(uint64_t arg)
{
	uint64_t val;

	(void)arg;
	return (uint64_t)(int64_t)rdmsr_safe(MSR_GS_BASE, &val);
}

static void test_user_rdmsr(const struct boot_info *bi)
{
	int vec = (int)run_user(user_rdmsr, 0, 0);

	(void)bi;
	tap_ok(vec == X86_VEC_GP, "rdmsr_safe at CPL3 raises #GP (vector %d)", vec);
}

static uint64_t user_load(uint64_t arg)
{
	struct fault *f = (struct fault *)arg;
	uint32_t val = 0;

	asm volatile("leaq 2f(%%rip), %[insn]\n\t"
		     ASM_TRY("1f")
		     "2: movl (%[p]), %[val]\n\t"
		     "1:"
		     : [val] "+r"(val), [insn] "=&r"(f->insn)
		     : [p] "r"(f->addr)
		     : "memory");
	f->val = val;
	record(f);
	return 0;
}

static const uint8_t ac_data[16] __attribute__((aligned(16))) = {
	0x10, 0x21, 0x32, 0x43, 0x54, 0x65, 0x76, 0x87,
	0x98, 0xa9, 0xba, 0xcb, 0xdc, 0xed, 0xfe, 0x0f,
};

static void test_ac(const struct boot_info *bi)
{
	struct fault f = { .addr = ac_data + 1 };

	if (bi->flags & BOOT_FLAG_NO_ALIGNMENT_CHECK) {
		tap_skip("vmm's probe found that this host's CPU raises no alignment-check #AC (QEMU's TCG)",
			 "misaligned load at CPL3 with AC=1 raises #AC");
		return;
	}
	run_user(user_load, (uint64_t)&f, RUN_USER_AC);
	tap_ok(f.vector == X86_VEC_AC && f.rip == f.insn && f.error_code == 0 &&
	       (f.cs_after & 3) == 3,
	       "misaligned load at CPL3 with AC=1 raises #AC (vector %d, error 0x%lx) at the load (0x%lx, load at 0x%lx)",
	       f.vector, f.error_code, f.rip, f.insn);
}

static void test_no_ac(const struct boot_info *bi)
{
	struct fault f = { .addr = ac_data + 1 };
	uint32_t want;

	(void)bi;
	memcpy(&want, ac_data + 1, sizeof(want));
	run_user(user_load, (uint64_t)&f, 0);
	tap_ok(f.vector == EXC_NONE && f.val == want,
	       "same misaligned load at CPL3 with AC=0 reads 0x%x (vector %d)",
	       f.val, f.vector);
}

static uint64_t user_tap(uint64_t arg)
{
	(void)arg;
	return tap_ok((read_cs() & 3) == 3, "tap_ok from CPL3, its line written by the CPL0 handler");
}

static void test_user_console(const struct boot_info *bi)
{
	(void)bi;
	run_user(user_tap, 0, 0);
}

static const struct guest_test tests[] = {
	{ "round_trip", test_round_trip },
	{ "ac_flag", test_ac_flag },
	{ "user_ud", test_user_ud },
	{ "user_rdmsr", test_user_rdmsr },
	{ "ac", test_ac },
	{ "no_ac", test_no_ac },
	{ "user_console", test_user_console },
};

TEST_GROUP(user_tests, "CPL3 (run_user)", tests);
