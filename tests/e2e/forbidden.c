/* SPDX-License-Identifier: MIT */
/*
 * An LD_PRELOAD shim for sandbox_test.py's "forbidden" case: at a vCPU
 * thread's first KVM_RUN, when vmm's seccomp filter is in force, it makes
 * a system call the filter refuses (socket), so that the test watches vmm
 * refuse it. The main thread's KVM_RUNs are the host probes', before the
 * filter: not those. A socket() that returns is said on stderr, one line
 * "forbidden: socket() was allowed", and ends vmm with status 1.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <linux/kvm.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static atomic_bool tried;

int ioctl(int fd, unsigned long req, ...)
{
	static int (*real)(int, unsigned long, ...);
	va_list ap;
	void *arg;
	long r;

	if (!real)
		real = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (req == KVM_RUN && gettid() != getpid() && !atomic_exchange(&tried, true)) {
		/* Raw, so that no libc wrapper stands between the test and the filter. */
		r = syscall(SYS_socket, AF_UNIX, SOCK_STREAM, 0);
		fprintf(stderr, "forbidden: socket() was allowed (returned %ld)\n", r);
		_exit(1);
	}
	return real(fd, req, arg);
}
