/* SPDX-License-Identifier: MIT */
/*
 * The run-time sandbox. Once /dev/kvm, the image and guest memory are set
 * up, vmm gives up every capability, sets no_new_privs and confines itself,
 * and the vCPU threads it starts afterwards, to a seccomp allow list: a guest
 * that found a bug in the exit handlers could then do little more than the
 * run loop already does. docs/security.md says what is allowed and why.
 */
#ifndef VMM_SANDBOX_H
#define VMM_SANDBOX_H

#include <stddef.h>

/* What a rule checks beyond the system call number. */
enum sandbox_check {
	SANDBOX_ANY,         /* allowed whatever the arguments */
	SANDBOX_KVM_IOCTL,   /* ioctl: only the requests in sandbox_ioctls() */
	SANDBOX_THREAD_ONLY, /* clone: only with CLONE_THREAD, never a new process */
	SANDBOX_NO_EXEC,     /* mmap, mprotect: never PROT_EXEC */
	SANDBOX_ENOSYS,      /* refused with ENOSYS so that libc falls back */
	SANDBOX_READ_ONLY,   /* open: O_RDONLY, never O_CREAT or O_TRUNC */
	SANDBOX_OWN_PROCESS, /* tgkill: only threads of this process */
};

struct sandbox_rule {
	const char *name;    /* as syscalls(2) and libseccomp spell it */
	enum sandbox_check check;
	const char *why;
};

struct sandbox_ioctl {
	unsigned long request;
	const char *name;
	const char *why;
};

/* The allow list of every build. */
const struct sandbox_rule *sandbox_rules(size_t *n);
/*
 * What AddressSanitizer and LeakSanitizer need on top, in a sanitizer build
 * only (*n is 0 otherwise). A name here replaces the base rule of that name.
 */
const struct sandbox_rule *sandbox_sanitizer_rules(size_t *n);
/* The KVM ioctls the run loop, exit handlers and register dumps make. */
const struct sandbox_ioctl *sandbox_ioctls(size_t *n);
/* The rule this build applies to `name`, or NULL if the call is refused. */
const struct sandbox_rule *sandbox_find(const char *name);

/*
 * Drops capabilities, sets no_new_privs, installs the filter on every
 * thread and a SIGSYS handler that names a refused call. Any failure is one
 * "vmm: error:" line naming the call, then exit 69 (VMM_EXIT_HOST). Call it after the last
 * open(), sigaction() and KVM setup ioctl and before the first vCPU thread.
 */
void sandbox_enter(void);

#endif
