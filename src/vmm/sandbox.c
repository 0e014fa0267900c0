/* SPDX-License-Identifier: MIT */
/* For REG_RSI: the SIGSYS handler names the refused ioctl request. */
#define _GNU_SOURCE
#include "sandbox.h"
#include "array_size.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>
#include <unistd.h>

#include "log.h"
#include "vmm_status.h"

#if defined(__SANITIZE_ADDRESS__)
#define SANDBOX_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANDBOX_SANITIZER 1
#endif
#endif

static const struct sandbox_rule base_rules[] = {
	{ "read", SANDBOX_ANY,
	  "the main thread reads the stop signals from its signalfd, and the PC machine's console input" },
	{ "write", SANDBOX_ANY,
	  "guest console to stdout, diagnostics to stderr, waking the main thread through the stop eventfd, --stats" },
	{ "poll", SANDBOX_ANY,
	  "the main thread waits for the stop eventfd, the signalfd, console input or the --timeout deadline" },
	{ "ppoll", SANDBOX_ANY, "the same wait, for C libraries whose poll() uses ppoll" },
	{ "restart_syscall", SANDBOX_ANY,
	  "the kernel resumes that poll() through it after the process was stopped and continued" },
	{ "ioctl", SANDBOX_KVM_IOCTL, "KVM_RUN, and the exit handlers' register and event ioctls" },
	{ "futex", SANDBOX_ANY,
	  "mutexes, the condition variable that halted and paused vCPUs park on and that --split-lock-ratelimit waits on, pthread_join" },
	{ "clone", SANDBOX_THREAD_ONLY, "pthread_create of the vCPU threads" },
	{ "clone3", SANDBOX_ENOSYS,
	  "glibc tries it first in pthread_create; its flags are in memory, where seccomp cannot check CLONE_THREAD, so ENOSYS makes glibc fall back to clone" },
	{ "set_robust_list", SANDBOX_ANY, "glibc sets it up in every new thread" },
	{ "rseq", SANDBOX_ANY, "glibc registers it in every new thread" },
	{ "mmap", SANDBOX_NO_EXEC, "thread stacks, malloc" },
	{ "mprotect", SANDBOX_NO_EXEC, "thread stacks, malloc" },
	{ "munmap", SANDBOX_ANY, "free, thread stacks, run pages and guest RAM at exit" },
	{ "madvise", SANDBOX_ANY, "glibc gives back the stack of a vCPU thread that ended, and freed memory" },
	{ "brk", SANDBOX_ANY, "malloc in the main thread" },
	{ "rt_sigaction", SANDBOX_ANY, "glibc installs its SIGSETXID handler in the first pthread_create" },
	{ "rt_sigprocmask", SANDBOX_ANY,
	  "vCPU threads unblock the kick signal; glibc masks signals around clone and pthread_kill" },
	{ "rt_sigreturn", SANDBOX_ANY, "return from the kick, SIGBUS and SIGSYS handlers" },
	{ "getpid", SANDBOX_ANY, "pthread_kill and abort() name the process" },
	{ "gettid", SANDBOX_ANY, "abort() names the thread" },
	{ "tgkill", SANDBOX_OWN_PROCESS,
	  "vm_stop() kicks vCPU threads out of KVM_RUN with SIGUSR1; abort()" },
	{ "clock_gettime", SANDBOX_ANY,
	  "the --timeout deadline: normally the vDSO, a system call where the clock source has no vDSO" },
	{ "close", SANDBOX_ANY, "teardown: vCPU and VM fds, /dev/kvm, signalfd, eventfd, --stats file" },
	{ "exit", SANDBOX_ANY, "a vCPU thread ends" },
	{ "exit_group", SANDBOX_ANY, "vmm exits" },
};

#ifdef SANDBOX_SANITIZER
/*
 * AddressSanitizer sets up every new thread, and LeakSanitizer's check at
 * exit runs a tracer task (clone without CLONE_THREAD) that ptrace-attaches
 * to every thread and lists them in /proc/self/task. This widens the filter
 * of sanitizer builds only; the release build never has these.
 */
static const struct sandbox_rule sanitizer_rules[] = {
	{ "clone", SANDBOX_ANY, "LeakSanitizer's tracer task at exit" },
	{ "prctl", SANDBOX_ANY, "LeakSanitizer: PR_SET_PTRACER, PR_SET_PDEATHSIG, PR_GET_DUMPABLE" },
	{ "open", SANDBOX_READ_ONLY, "LeakSanitizer lists /proc/self/task" },
	{ "getdents", SANDBOX_ANY, "LeakSanitizer lists /proc/self/task" },
	{ "ptrace", SANDBOX_ANY, "LeakSanitizer's tracer stops every thread to read its registers" },
	{ "wait4", SANDBOX_ANY, "LeakSanitizer waits for the threads it stops, and for its tracer" },
	{ "getppid", SANDBOX_ANY, "LeakSanitizer's tracer checks that vmm still lives" },
	{ "lseek", SANDBOX_ANY, "LeakSanitizer rewinds /proc/self/task" },
	{ "sched_yield", SANDBOX_ANY, "vmm spins on it while LeakSanitizer's tracer works" },
	{ "sched_getaffinity", SANDBOX_ANY, "AddressSanitizer's thread start" },
	{ "sigaltstack", SANDBOX_ANY, "AddressSanitizer gives every thread an alternate signal stack" },
};
#endif

static const struct sandbox_ioctl allowed_ioctls[] = {
	{ KVM_RUN, "KVM_RUN", "the run loop" },
	{ KVM_GET_REGS, "KVM_GET_REGS", "register dumps, --timeout's RIP report, #AC handling" },
	{ KVM_GET_SREGS, "KVM_GET_SREGS", "register dumps, #AC handling" },
	{ KVM_GET_VCPU_EVENTS, "KVM_GET_VCPU_EVENTS", "#AC injection" },
	{ KVM_SET_VCPU_EVENTS, "KVM_SET_VCPU_EVENTS", "#AC injection" },
	{ KVM_SET_REGS, "KVM_SET_REGS", "completing an emulated split lock after a hardware #AC" },
	{ KVM_SET_SREGS, "KVM_SET_SREGS", "CR2 for a #PF given in place of a hardware split-lock #AC" },
	{ KVM_GET_XSAVE, "KVM_GET_XSAVE", "PKRU, for the protection-key check of a split lock's operand" },
	{ KVM_SET_GUEST_DEBUG, "KVM_SET_GUEST_DEBUG",
	  "--split-lock=emulate switches between single-step and a breakpoint on a handler" },
	{ KVM_GET_DEBUGREGS, "KVM_GET_DEBUGREGS", "--split-lock=emulate hands the guest its own #DB" },
	{ KVM_SET_DEBUGREGS, "KVM_SET_DEBUGREGS", "--split-lock=emulate hands the guest its own #DB" },
	{ KVM_GET_MSRS, "KVM_GET_MSRS", "--split-lock=emulate reads IA32_FMASK at a guest SYSCALL" },
	{ KVM_IRQ_LINE, "KVM_IRQ_LINE", "the PC machine's COM1 interrupt (IRQ 4)" },
	{ TCSETS, "TCSETS", "the PC machine's console: restoring a terminal's mode at exit" },
	{ TCGETS, "TCGETS", "glibc's tcsetattr() reads the mode back after TCSETS" },
};


const struct sandbox_rule *sandbox_rules(size_t *n)
{
	*n = ARRAY_SIZE(base_rules);
	return base_rules;
}

const struct sandbox_rule *sandbox_sanitizer_rules(size_t *n)
{
#ifdef SANDBOX_SANITIZER
	*n = ARRAY_SIZE(sanitizer_rules);
	return sanitizer_rules;
#else
	*n = 0;
	return NULL;
#endif
}

const struct sandbox_ioctl *sandbox_ioctls(size_t *n)
{
	*n = ARRAY_SIZE(allowed_ioctls);
	return allowed_ioctls;
}

static const struct sandbox_rule *find_in(const struct sandbox_rule *r, size_t n,
					  const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(r[i].name, name) == 0)
			return &r[i];
	return NULL;
}

const struct sandbox_rule *sandbox_find(const char *name)
{
	size_t n;
	const struct sandbox_rule *extra = sandbox_sanitizer_rules(&n);
	const struct sandbox_rule *r = extra ? find_in(extra, n, name) : NULL;

	return r ? r : find_in(base_rules, ARRAY_SIZE(base_rules), name);
}

/*
 * The SIGSYS handler may not allocate, and libseccomp's name lookup does, so
 * every name is looked up before the filter goes in.
 */
#define SYSCALL_NAMES 512
static const char *syscall_names[SYSCALL_NAMES];
static uint32_t native_arch;

static void resolve_names(void)
{
	native_arch = seccomp_arch_native();
	for (int nr = 0; nr < SYSCALL_NAMES; nr++)
		syscall_names[nr] = seccomp_syscall_resolve_num_arch(native_arch, nr);
}

static size_t put_str(char *buf, size_t off, size_t size, const char *s)
{
	while (*s && off < size)
		buf[off++] = *s++;
	return off;
}

static size_t put_num(char *buf, size_t off, size_t size, unsigned long v, unsigned base)
{
	char digits[24];
	size_t n = 0;

	do {
		digits[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v && n < sizeof(digits));
	while (n && off < size)
		buf[off++] = digits[--n];
	return off;
}

/*
 * A refused call means vmm itself did something its allow list did not
 * foresee (or a guest took over the VMM): say so on one line and stop,
 * rather than die silently of SIGSYS. Only write(2) and _exit(2), both
 * allowed, happen here.
 */
static void sigsys_handler(int sig, siginfo_t *si, void *uc)
{
	char msg[256];
	size_t n = 0;
	int nr = si->si_syscall;

	(void)sig;
	(void)uc;
	n = put_str(msg, n, sizeof(msg), "vmm: error: seccomp: forbidden system call ");
	n = put_num(msg, n, sizeof(msg), (unsigned long)(unsigned)nr, 10);
	if (si->si_arch != native_arch) {
		n = put_str(msg, n, sizeof(msg), " of foreign architecture 0x");
		n = put_num(msg, n, sizeof(msg), si->si_arch, 16);
	} else if (nr >= 0 && nr < SYSCALL_NAMES && syscall_names[nr]) {
		n = put_str(msg, n, sizeof(msg), " (");
		n = put_str(msg, n, sizeof(msg), syscall_names[nr]);
#ifdef __x86_64__
		/* Most likely a KVM ioctl someone added to the run loop: which one? */
		if (nr == SYS_ioctl) {
			const ucontext_t *ctx = uc;

			n = put_str(msg, n, sizeof(msg), ", request 0x");
			n = put_num(msg, n, sizeof(msg),
				    (unsigned long)ctx->uc_mcontext.gregs[REG_RSI], 16);
		}
#endif
		n = put_str(msg, n, sizeof(msg), ")");
	}
	n = put_str(msg, n, sizeof(msg),
		    "; this is a bug in vmm, please report it\n");
	if (write(STDERR_FILENO, msg, n) < 0)
		_exit(VMM_EXIT_SOFTWARE);
	_exit(VMM_EXIT_SOFTWARE);
}

static void drop_capabilities(void)
{
	cap_flag_value_t setpcap = CAP_CLEAR;
	cap_t caps = cap_get_proc();

	if (!caps)
		die_errno("cap_get_proc", errno, NULL);
	if (cap_get_flag(caps, CAP_SETPCAP, CAP_EFFECTIVE, &setpcap) < 0)
		die_errno("cap_get_flag(CAP_SETPCAP)", errno, NULL);

	/* Kernels before 4.3 have no ambient set, so nothing to clear. */
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		die_errno("prctl(PR_CAP_AMBIENT_CLEAR_ALL)", errno, NULL);

	/*
	 * Shrinking the bounding set takes CAP_SETPCAP, so it goes before the
	 * effective set is cleared. A user without it (in the kvm group, say)
	 * cannot and need not: with no_new_privs and execve refused, nothing
	 * can ever draw on the bounding set again. EINVAL: a capability
	 * libcap knows and this kernel does not.
	 */
	if (setpcap == CAP_SET)
		for (cap_value_t c = 0; c < cap_max_bits(); c++)
			if (prctl(PR_CAPBSET_DROP, (unsigned long)c, 0, 0, 0) < 0 &&
			    errno != EINVAL) {
				char call[64];

				snprintf(call, sizeof(call), "prctl(PR_CAPBSET_DROP, %d)", (int)c);
				die_errno(call, errno, NULL);
			}

	if (cap_clear(caps) < 0)
		die_errno("cap_clear", errno, NULL);
	if (cap_set_proc(caps) < 0)
		die_errno("cap_set_proc", errno, NULL);
	if (cap_free(caps) < 0)
		die_errno("cap_free", errno, NULL);
}

static void add_rule(scmp_filter_ctx ctx, uint32_t action, const char *name, int nr,
		     const char *what, unsigned argc, const struct scmp_arg_cmp *arg)
{
	int r = seccomp_rule_add_array(ctx, action, nr, argc, arg);

	if (r < 0) {
		char call[96];

		snprintf(call, sizeof(call), "seccomp_rule_add(%s%s%s)", name,
			 what ? " " : "", what ? what : "");
		die_errno(call, -r, NULL);
	}
}

static void add(scmp_filter_ctx ctx, const struct sandbox_rule *rule)
{
	int nr = seccomp_syscall_resolve_name(rule->name);
	struct scmp_arg_cmp arg;

	if (nr == __NR_SCMP_ERROR)
		die(VMM_EXIT_HOST, "seccomp: libseccomp does not know the system call '%s'",
		    rule->name);
	switch (rule->check) {
	case SANDBOX_ANY:
		add_rule(ctx, SCMP_ACT_ALLOW, rule->name, nr, NULL, 0, NULL);
		break;
	case SANDBOX_KVM_IOCTL:
		/* The kernel takes the request as an unsigned int: compare those 32 bits. */
		for (size_t i = 0; i < ARRAY_SIZE(allowed_ioctls); i++) {
			arg = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, allowed_ioctls[i].request);
			add_rule(ctx, SCMP_ACT_ALLOW, rule->name, nr, allowed_ioctls[i].name, 1, &arg);
		}
		break;
	case SANDBOX_THREAD_ONLY:
		arg = SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD);
		add_rule(ctx, SCMP_ACT_ALLOW, rule->name, nr, "CLONE_THREAD", 1, &arg);
		break;
	case SANDBOX_NO_EXEC:
		arg = SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0);
		add_rule(ctx, SCMP_ACT_ALLOW, rule->name, nr, "without PROT_EXEC", 1, &arg);
		break;
	case SANDBOX_ENOSYS:
		add_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), rule->name, nr, "ENOSYS", 0, NULL);
		break;
	case SANDBOX_OWN_PROCESS:
		/*
		 * vmm keeps its uid (often 0), and signalling any process of
		 * that uid needs no capability: keep it to its own threads.
		 */
		arg = SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, (scmp_datum_t)getpid());
		add_rule(ctx, SCMP_ACT_ALLOW, rule->name, nr, "own process", 1, &arg);
		break;
	case SANDBOX_READ_ONLY:
		/* open(2) has the flags in its second argument, openat(2) in its third. */
		arg = (struct scmp_arg_cmp){
			.arg = strcmp(rule->name, "open") == 0 ? 1 : 2,
			.op = SCMP_CMP_MASKED_EQ,
			.datum_a = O_ACCMODE | O_CREAT | O_TRUNC,
			.datum_b = O_RDONLY,
		};
		add_rule(ctx, SCMP_ACT_ALLOW, rule->name, nr, "O_RDONLY", 1, &arg);
		break;
	}
}

static void install_filter(void)
{
	struct sigaction sa = { .sa_sigaction = sigsys_handler, .sa_flags = SA_SIGINFO };
	size_t nextra;
	const struct sandbox_rule *extra = sandbox_sanitizer_rules(&nextra);
	scmp_filter_ctx ctx;
	int r;

	resolve_names();
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, NULL) < 0)
		die_errno("sigaction(SIGSYS)", errno, NULL);

	/* TRAP rather than KILL_PROCESS: the handler can say what happened. */
	ctx = seccomp_init(SCMP_ACT_TRAP);
	if (!ctx)
		die(VMM_EXIT_HOST, "seccomp_init failed");
	/* Another ABI's system call numbers (i386 int 0x80, x32) get the same treatment. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_TRAP);
	if (r < 0)
		die_errno("seccomp_attr_set(SCMP_FLTATR_ACT_BADARCH)", -r, NULL);
	/* Any thread that already exists (a sanitizer's, say) gets the filter too. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
	if (r < 0)
		die_errno("seccomp_attr_set(SCMP_FLTATR_CTL_TSYNC)", -r, NULL);

	for (size_t i = 0; i < ARRAY_SIZE(base_rules); i++)
		if (!extra || !find_in(extra, nextra, base_rules[i].name))
			add(ctx, &base_rules[i]);
	for (size_t i = 0; i < nextra; i++)
		add(ctx, &extra[i]);

	r = seccomp_load(ctx);
	if (r < 0)
		die_errno("seccomp_load", -r,
			  "the host kernel needs seccomp filters (CONFIG_SECCOMP_FILTER)");
	seccomp_release(ctx);
}

void sandbox_enter(void)
{
	drop_capabilities();
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		die_errno("prctl(PR_SET_NO_NEW_PRIVS)", errno, NULL);
	install_filter();
}
