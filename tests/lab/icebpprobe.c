/* SPDX-License-Identifier: MIT */
/*
 * What does this CPU do with ICEBP (0xf1, INT1) at CPL3? The architecture
 * (Intel SDM, AMD APM) raises #DB, which Linux turns into SIGTRAP. QEMU's
 * TCG raises #UD (SIGILL). The lab runs this probe in L1, on the same
 * emulated CPU that runs the differential guest, so that a differential case
 * whose oracle (--split-lock=inherit) cannot behave as real CPUs do is
 * reported as skipped with this measured reason (tests/lab/lab_test.py).
 *
 * Prints "icebp=sigtrap", "icebp=sigill" or "icebp=none"; exits 0, or 1 if
 * the probe itself went wrong.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>

static sigjmp_buf env;

static void on_signal(int sig)
{
	siglongjmp(env, sig);
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	int sig;

	if (sigaction(SIGTRAP, &sa, NULL) < 0 || sigaction(SIGILL, &sa, NULL) < 0) {
		perror("icebpprobe: sigaction");
		return 1;
	}
	sig = sigsetjmp(env, 1);
	if (sig) {
		printf("icebp=%s\n", sig == SIGTRAP ? "sigtrap" : "sigill");
		return 0;
	}
	asm volatile(".byte 0xf1" ::: "memory");
	printf("icebp=none\n");
	return 0;
}
