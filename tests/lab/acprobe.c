/* SPDX-License-Identifier: MIT */
/*
 * Does this CPU raise the legacy alignment-check #AC for a CPL3 program?
 * Linux runs with CR0.AM set, so a user program that sets RFLAGS.AC and then
 * loads from a misaligned address must get #AC, which Linux turns into
 * SIGBUS (BUS_ADRALN). QEMU's TCG never raises it; the lab runs this probe to
 * report the self-test's legacy #AC check as skipped with that measured
 * reason (tests/lab/lab_test.py) instead of as a failure or a pass.
 *
 * Prints "ac_flag=0|1 result=sigbus si_code=N" or "ac_flag=1 result=none";
 * exits 0 either way, 1 if the probe itself went wrong.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>

static sigjmp_buf env;
static volatile sig_atomic_t bus_code;

static void on_bus(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	/* The kernel leaves RFLAGS.AC set in the handler; libc must not run with it. */
	asm volatile("pushfq; andq $~0x40000, (%%rsp); popfq" ::: "memory", "cc");
	bus_code = si->si_code;
	siglongjmp(env, 1);
}

int main(void)
{
	static uint8_t buf[16] __attribute__((aligned(16))) = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct sigaction sa = { .sa_sigaction = on_bus, .sa_flags = SA_SIGINFO };
	volatile uint64_t flags = 0;
	uint32_t val = 0;

	if (sigaction(SIGBUS, &sa, NULL) < 0) {
		perror("acprobe: sigaction");
		return 1;
	}
	if (sigsetjmp(env, 1)) {
		printf("ac_flag=1 result=sigbus si_code=%d\n", (int)bus_code);
		return 0;
	}
	/* One asm block: no compiler-generated access may run with AC=1. */
	asm volatile("pushfq; orq $0x40000, (%%rsp); popfq\n\t"
		     "pushfq; popq %[flags]\n\t"
		     "movl (%[p]), %[val]\n\t"
		     "pushfq; andq $~0x40000, (%%rsp); popfq"
		     : [val] "=&r"(val), [flags] "=&r"(flags)
		     : [p] "r"(buf + 1)
		     : "memory", "cc");
	printf("ac_flag=%d result=none value=0x%x\n", (flags & 0x40000) != 0, val);
	return (flags & 0x40000) ? 0 : 1;
}
