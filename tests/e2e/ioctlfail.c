/* SPDX-License-Identifier: MIT */
/*
 * An LD_PRELOAD shim that makes chosen calls of one KVM ioctl fail, as a
 * host's KVM may, or of one of the calls that set up the VM around them
 * (guest RAM's mmap, the vCPU threads), so that ioctlfail_test.py sees
 * what vmm does then.
 *
 *   VMM_TEST_IOCTLFAIL=NAME:WHICH:ERR
 *
 * NAME  the ioctl, e.g. KVM_SET_SREGS, or the call, e.g. pthread_create
 *       (the tables below)
 * WHICH N: its Nth call only; N+: the Nth and every later one;
 *       %K: every Kth
 * ERR   an errno name of the table below: the call returns -1 with it,
 *       without reaching KVM; or "short": it returns 0, the count of
 *       entries a KVM_GET_MSRS or KVM_SET_MSRS that did none returns
 *
 * The first failure it makes is said on stderr, one line "ioctlfail: NAME
 * call N: ERR", so that a test knows the failure happened (the later ones
 * of "N+" and "%K" are not: KVM_RUN is called for every step).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <linux/kvm.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "array_size.h"

#define ENTRY(x) { #x, x }

static const struct {
	const char *name;
	unsigned long req;
} requests[] = {
	ENTRY(KVM_GET_API_VERSION), ENTRY(KVM_CHECK_EXTENSION), ENTRY(KVM_GET_SUPPORTED_CPUID),
	ENTRY(KVM_GET_VCPU_MMAP_SIZE), ENTRY(KVM_CREATE_VM), ENTRY(KVM_SET_USER_MEMORY_REGION),
	ENTRY(KVM_CREATE_VCPU), ENTRY(KVM_SET_CPUID2), ENTRY(KVM_ENABLE_CAP),
	ENTRY(KVM_X86_SET_MSR_FILTER), ENTRY(KVM_RUN), ENTRY(KVM_GET_REGS), ENTRY(KVM_SET_REGS),
	ENTRY(KVM_GET_SREGS), ENTRY(KVM_SET_SREGS), ENTRY(KVM_GET_XSAVE),
	ENTRY(KVM_GET_VCPU_EVENTS), ENTRY(KVM_SET_VCPU_EVENTS), ENTRY(KVM_SET_GUEST_DEBUG),
	ENTRY(KVM_GET_DEBUGREGS), ENTRY(KVM_SET_DEBUGREGS), ENTRY(KVM_GET_MSRS),
	ENTRY(KVM_SET_MSRS),
};

/* The other calls, by name; their wrappers are at the end. */
enum { CALL_MMAP, CALL_EVENTFD, CALL_SIGNALFD, CALL_PTHREAD_CREATE };
static const char *const calls[] = {
	[CALL_MMAP] = "mmap", [CALL_EVENTFD] = "eventfd", [CALL_SIGNALFD] = "signalfd",
	[CALL_PTHREAD_CREATE] = "pthread_create",
};

static const struct {
	const char *name;
	int err;
} errnos[] = {
	ENTRY(EINTR), ENTRY(EAGAIN), ENTRY(EIO), ENTRY(EINVAL), ENTRY(EFAULT), ENTRY(ENOMEM),
	ENTRY(EBUSY), ENTRY(ENXIO), ENTRY(E2BIG), ENTRY(EPERM), ENTRY(ENOSPC), ENTRY(EMFILE),
};

#define SHORT (-1)

static struct {
	const char *name;
	bool ioctl;
	unsigned long req;
	unsigned long nth, every;
	int err;
	const char *err_name;
	_Atomic unsigned long calls;
	atomic_flag said;
} plan = { .said = ATOMIC_FLAG_INIT };

static void die(const char *what, const char *spec)
{
	fprintf(stderr, "ioctlfail: %s in VMM_TEST_IOCTLFAIL=%s\n", what, spec);
	_exit(2);
}

/* Before main, while the process may still do all it likes. */
__attribute__((constructor)) static void ioctlfail_init(void)
{
	const char *spec = getenv("VMM_TEST_IOCTLFAIL");
	char name[64], which[32], err[32], *end;
	size_t i;

	if (!spec || !*spec)
		return;
	if (sscanf(spec, "%63[^:]:%31[^:]:%31s", name, which, err) != 3)
		die("want NAME:WHICH:ERR", spec);
	for (i = 0; i < ARRAY_SIZE(requests); i++)
		if (!strcmp(name, requests[i].name))
			break;
	if (i < ARRAY_SIZE(requests)) {
		plan.name = requests[i].name;
		plan.ioctl = true;
		plan.req = requests[i].req;
	}
	for (i = 0; i < ARRAY_SIZE(calls); i++)
		if (!strcmp(name, calls[i]))
			plan.name = calls[i];
	if (!plan.name)
		die("unknown ioctl or call", spec);

	if (which[0] == '%') {
		plan.every = strtoul(which + 1, &end, 10);
		if (*end || !plan.every)
			die("bad %K", spec);
	} else {
		plan.nth = strtoul(which, &end, 10);
		if (!plan.nth || (*end && strcmp(end, "+")))
			die("bad WHICH", spec);
		if (*end)
			plan.every = 1;
	}

	if (!strcmp(err, "short")) {
		if (!plan.ioctl)
			die("\"short\" is for ioctls", spec);
		plan.err = SHORT;
		plan.err_name = "short";
		return;
	}
	for (i = 0; i < ARRAY_SIZE(errnos); i++)
		if (!strcmp(err, errnos[i].name))
			break;
	if (i == ARRAY_SIZE(errnos))
		die("unknown errno", spec);
	plan.err = errnos[i].err;
	plan.err_name = errnos[i].name;
}

static int chosen(unsigned long n)
{
	if (plan.nth && n < plan.nth)
		return 0;
	if (plan.nth && n == plan.nth)
		return 1;
	return plan.every && (n - plan.nth) % plan.every == 0;
}

/* Is this call of `name` to fail? Counts it, and says so the first time. */
static bool fail_now(const char *name)
{
	unsigned long n;
	char line[128];
	int len;

	if (!plan.name || name != plan.name)
		return false;
	n = atomic_fetch_add(&plan.calls, 1) + 1;
	if (!chosen(n))
		return false;
	/* write(2) alone: vmm's seccomp filter lets it through from any thread. */
	if (!atomic_flag_test_and_set(&plan.said)) {
		len = snprintf(line, sizeof(line), "ioctlfail: %s call %lu: %s\n", plan.name, n,
			       plan.err_name);
		if (write(STDERR_FILENO, line, (size_t)len) < 0)
			_exit(2);
	}
	return true;
}

/* The real call, looked up on first use: a library may call it before our constructor. */
#define REAL(fn) \
	static __typeof__(fn) *real; \
	if (!real) \
		real = (__typeof__(fn) *)dlsym(RTLD_NEXT, #fn)

int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	REAL(ioctl);
	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (!plan.ioctl || req != plan.req || !fail_now(plan.name))
		return real(fd, req, arg);
	if (plan.err == SHORT)
		return 0;
	errno = plan.err;
	return -1;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	REAL(mmap);
	if (fail_now(calls[CALL_MMAP])) {
		errno = plan.err;
		return MAP_FAILED;
	}
	return real(addr, len, prot, flags, fd, off);
}

int eventfd(unsigned int initval, int flags)
{
	REAL(eventfd);
	if (fail_now(calls[CALL_EVENTFD])) {
		errno = plan.err;
		return -1;
	}
	return real(initval, flags);
}

int signalfd(int fd, const sigset_t *mask, int flags)
{
	REAL(signalfd);
	if (fail_now(calls[CALL_SIGNALFD])) {
		errno = plan.err;
		return -1;
	}
	return real(fd, mask, flags);
}

int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	REAL(pthread_create);
	if (fail_now(calls[CALL_PTHREAD_CREATE]))
		return plan.err;
	return real(thread, attr, fn, arg);
}
