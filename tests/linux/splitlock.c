/* SPDX-License-Identifier: MIT */
/*
 * Split locks at CPL3 in a Linux guest, and what the guest saw of them.
 * Runs in the test initramfs (tests/linux/), static: it has no libc there.
 *
 *   splitlock [OPS]
 *
 * On each online CPU in turn (sched_setaffinity), OPS times (default 1000)
 * a LOCK ADD of 1 to a 4-byte counter that straddles a 64-byte cache line.
 * Under split_lock_detect=fatal the kernel sends SIGBUS: the handler counts
 * it and that CPU's loop stops. Prints one line:
 *
 *   SPLITLOCK cpus=N ops=N done=N value=N ok=0|1 sigbus=N vendor=ID
 *             hypervisor=0|1 cpuid_7_edx30=0|1 cpu_flag=0|1 kernel_lines=N
 *             kernel_traps=N kernel="FIRST LINE"
 *
 * done: locked adds that completed; value: the counter at the end (ok=1
 * when value == done, and done == cpus * ops without SIGBUS); vendor: CPUID
 * leaf 0's; hypervisor: the flag in /proc/cpuinfo (Linux sets split-lock
 * detection up only without it, on Intel models it lists); cpuid_7_edx30:
 * CORE_CAPABILITIES enumerated, as CPUID tells CPL3; cpu_flag:
 * `split_lock_detect` in /proc/cpuinfo; kernel_lines: kernel log lines
 * "x86/split lock detection:" (the set-up line and one per trap), of which
 * kernel_traps name a trap; kernel: the first such line, or empty. Exits 0
 * after printing, 2 when it cannot run the test (a line says why).
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>

#define KLOG_READ_ALL 3
#define KLOG_SIZE_BUFFER 10
#define SLD_PREFIX "x86/split lock detection:"

static sigjmp_buf on_sigbus;
static volatile sig_atomic_t sigbus_seen;

static void sigbus_handler(int sig)
{
	(void)sig;
	sigbus_seen++;
	siglongjmp(on_sigbus, 1);
}

/* The counter at byte 62 of a line: bytes 62-63 here, 0-1 in the next. */
static _Alignas(64) unsigned char lines[128];

static inline void locked_add(volatile uint32_t *p)
{
	__asm__ volatile("lock addl $1, %0" : "+m"(*p) : : "memory", "cc");
}

/* OPS locked adds on this CPU; returns how many completed before a SIGBUS. */
static unsigned long run_ops(volatile uint32_t *p, unsigned long ops)
{
	volatile unsigned long done = 0;

	if (sigsetjmp(on_sigbus, 1))
		return done;
	for (unsigned long i = 0; i < ops; i++) {
		locked_add(p);
		done++;
	}
	return done;
}

/* 1 if the first CPU's flags in /proc/cpuinfo have FLAG, 0 if not, -1 if unreadable. */
static int cpu_flag(const char *flag)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	static char line[8192];
	int found = -1;

	if (!f)
		return -1;
	while (found < 0 && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5))
			continue;
		found = 0;
		for (char *w = strtok(strchr(line, ':') ? strchr(line, ':') + 1 : line, " \n"); w;
		     w = strtok(NULL, " \n"))
			if (!strcmp(w, flag))
				found = 1;
	}
	fclose(f);
	return found;
}

struct klog_view {
	unsigned lines, traps;
	char first[256];
};

/* The kernel's log lines about split-lock detection; -1 if unreadable. */
static int read_klog(struct klog_view *v)
{
	int size = klogctl(KLOG_SIZE_BUFFER, NULL, 0);
	char *buf, *line, *save = NULL;
	int n;

	memset(v, 0, sizeof(*v));
	if (size <= 0 || !(buf = malloc((size_t)size + 1)))
		return -1;
	n = klogctl(KLOG_READ_ALL, buf, size);
	if (n < 0) {
		free(buf);
		return -1;
	}
	buf[n] = 0;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *at = strstr(line, SLD_PREFIX);

		if (!at)
			continue;
		if (!v->lines++) {
			snprintf(v->first, sizeof(v->first), "%s", at);
			for (char *c = v->first; *c; c++)
				if (*c == '"' || *c == '\\')
					*c = '\'';
		}
		if (strstr(at, "trap") || strstr(at, "took a split_lock"))
			v->traps++;
	}
	free(buf);
	return 0;
}

static void cpuid_vendor(char out[13])
{
	unsigned a, b, c, d;

	__cpuid(0, a, b, c, d);
	memcpy(out, &b, 4);
	memcpy(out + 4, &d, 4);
	memcpy(out + 8, &c, 4);
	out[12] = 0;
}

static int cpuid_core_caps(void)
{
	unsigned a, b, c, d;

	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
		return 0;
	return (d >> 30) & 1;
}

int main(int argc, char **argv)
{
	unsigned long ops = argc > 1 ? strtoul(argv[1], NULL, 0) : 1000;
	volatile uint32_t *counter = (volatile uint32_t *)(lines + 62);
	struct sigaction sa = { .sa_handler = sigbus_handler };
	unsigned long done = 0;
	unsigned cpus = 0;
	struct klog_view kl;
	cpu_set_t online;
	char vendor[13];
	uint32_t value;

	if (sigaction(SIGBUS, &sa, NULL) || sched_getaffinity(0, sizeof(online), &online)) {
		perror("splitlock: sigaction/sched_getaffinity");
		return 2;
	}
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		cpu_set_t one;

		if (!CPU_ISSET(cpu, &online))
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		if (sched_setaffinity(0, sizeof(one), &one)) {
			perror("splitlock: sched_setaffinity");
			return 2;
		}
		cpus++;
		done += run_ops(counter, ops);
	}
	if (read_klog(&kl))
		snprintf(kl.first, sizeof(kl.first), "(kernel log unreadable)");
	cpuid_vendor(vendor);
	memcpy(&value, lines + 62, sizeof(value)); /* misaligned on purpose */
	printf("SPLITLOCK cpus=%u ops=%lu done=%lu value=%u ok=%d sigbus=%d vendor=%s "
	       "hypervisor=%d cpuid_7_edx30=%d cpu_flag=%d kernel_lines=%u kernel_traps=%u "
	       "kernel=\"%s\"\n",
	       cpus, ops, done, (unsigned)value,
	       value == done && (sigbus_seen || done == (unsigned long)cpus * ops),
	       (int)sigbus_seen, vendor, cpu_flag("hypervisor"), cpuid_core_caps(),
	       cpu_flag("split_lock_detect"), kl.lines, kl.traps, kl.first);
	return 0;
}
