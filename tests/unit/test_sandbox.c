/* SPDX-License-Identifier: MIT */
/*
 * The sandbox: the allow list itself, and the filter at work in forked
 * children (no /dev/kvm needed), each of which enters the sandbox and then
 * makes one call that it must or must not survive.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox.h"
#include "array_size.h"
#include "vmm_status.h"


static void run_loop_needs_are_allowed(void **state)
{
	static const struct {
		const char *name;
		enum sandbox_check check;
	} need[] = {
		{ "ioctl", SANDBOX_KVM_IOCTL },   /* KVM_RUN */
		{ "read", SANDBOX_ANY },          /* signalfd */
		{ "write", SANDBOX_ANY },         /* console, eventfd */
		{ "poll", SANDBOX_ANY },
		{ "futex", SANDBOX_ANY },
		{ "tgkill", SANDBOX_OWN_PROCESS }, /* the kick */
		{ "rt_sigreturn", SANDBOX_ANY },
		{ "rt_sigprocmask", SANDBOX_ANY },
		{ "mmap", SANDBOX_NO_EXEC },
		{ "mprotect", SANDBOX_NO_EXEC },
		{ "clone3", SANDBOX_ENOSYS },
		{ "exit", SANDBOX_ANY },
		{ "exit_group", SANDBOX_ANY },
	};
	size_t n;
	const struct sandbox_rule *base = sandbox_rules(&n);

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(need); i++) {
		const struct sandbox_rule *r = sandbox_find(need[i].name);

		if (!r)
			fail_msg("%s is not allowed", need[i].name);
		if (r->check != need[i].check)
			fail_msg("%s has check %d, expected %d", need[i].name, r->check, need[i].check);
	}
	/* Only a sanitizer build may let clone make a process. */
	for (size_t i = 0; i < n; i++)
		if (strcmp(base[i].name, "clone") == 0)
			assert_int_equal(base[i].check, SANDBOX_THREAD_ONLY);
}

static void dangerous_calls_are_refused(void **state)
{
	/* Refused in every build, sanitizers included. */
	static const char *const never[] = {
		"execve", "execveat", "fork", "vfork", "socket", "socketpair", "connect",
		"bind", "accept4", "sendmsg", "openat2", "creat", "unlink", "unlinkat",
		"rename", "chmod", "chown", "setuid", "setgid", "setresuid", "capset",
		"seccomp", "bpf", "mount", "umount2", "pivot_root", "chroot", "unshare",
		"setns", "init_module", "finit_module", "delete_module", "kexec_load",
		"kexec_file_load", "reboot", "process_vm_readv", "process_vm_writev",
		"memfd_create", "userfaultfd", "io_uring_setup", "perf_event_open",
		"pkey_mprotect", "personality", "kill", "keyctl", "add_key",
	};
	/* Refused in the release build; LeakSanitizer needs some of them. */
	static const char *const not_in_base[] = {
		"open", "openat", "ptrace", "prctl", "wait4", "getdents64", "getdents",
	};
	size_t n;
	const struct sandbox_rule *base = sandbox_rules(&n);

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(never); i++)
		if (sandbox_find(never[i]))
			fail_msg("%s is allowed", never[i]);
	for (size_t i = 0; i < ARRAY_SIZE(not_in_base); i++)
		for (size_t j = 0; j < n; j++)
			if (strcmp(base[j].name, not_in_base[i]) == 0)
				fail_msg("%s is in the release allow list", not_in_base[i]);
}

static void every_rule_resolves_and_says_why(void **state)
{
	size_t n[2];
	const struct sandbox_rule *t[2] = { sandbox_rules(&n[0]), sandbox_sanitizer_rules(&n[1]) };

	(void)state;
	for (int k = 0; k < 2; k++)
		for (size_t i = 0; i < n[k]; i++) {
			const struct sandbox_rule *r = &t[k][i];

			if (seccomp_syscall_resolve_name(r->name) == __NR_SCMP_ERROR)
				fail_msg("libseccomp does not know '%s'", r->name);
			if (!r->why || !*r->why)
				fail_msg("'%s' does not say why", r->name);
			for (size_t j = 0; j < i; j++)
				if (strcmp(t[k][j].name, r->name) == 0)
					fail_msg("'%s' is listed twice", r->name);
		}
}

static void kvm_ioctls(void **state)
{
	static const unsigned long need[] = {
		KVM_RUN, KVM_GET_REGS, KVM_GET_SREGS, KVM_GET_VCPU_EVENTS,
		KVM_SET_VCPU_EVENTS,
		KVM_SET_REGS,           /* completing an emulated split lock */
		KVM_SET_GUEST_DEBUG,    /* emulate steps CPL0, not CPL3, where KVM cannot */
		KVM_SET_SREGS,          /* CR2 of a #PF given for a hardware split-lock #AC */
		KVM_GET_XSAVE,          /* PKRU, for protection keys on a split lock's operand */
		KVM_GET_DEBUGREGS, KVM_SET_DEBUGREGS, /* the guest's own #DB under emulate */
		KVM_GET_MSRS,           /* IA32_FMASK: the guest's TF after SYSCALL */
	};
	/* Once the VM runs it may not grow or change shape. */
	static const unsigned long never[] = {
		KVM_CREATE_VM, KVM_CREATE_VCPU, KVM_SET_USER_MEMORY_REGION,
		KVM_SET_CPUID2, KVM_X86_SET_MSR_FILTER, KVM_ENABLE_CAP, KVM_SET_MSRS,
		KVM_TRANSLATE,          /* guest memory is read through the page walker */
	};
	size_t n;
	const struct sandbox_ioctl *io = sandbox_ioctls(&n);

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(need); i++) {
		size_t j = 0;

		while (j < n && io[j].request != need[i])
			j++;
		if (j == n)
			fail_msg("ioctl 0x%lx is not allowed", need[i]);
	}
	for (size_t j = 0; j < n; j++) {
		for (size_t i = 0; i < ARRAY_SIZE(never); i++)
			if (io[j].request == never[i])
				fail_msg("%s is allowed", io[j].name);
		assert_true(io[j].why && *io[j].why);
	}
}

/* ------------------------------------------------------------ docs/security.md */

#define DOC_NAMES 64

struct name_list {
	size_t n;
	char name[DOC_NAMES][40];
};

static char *read_security_md(void)
{
	const char *root = getenv("VMM_SOURCE_ROOT");
	char path[4096];
	FILE *f;
	char *buf;
	long len;

	if (!root)
		fail_msg("VMM_SOURCE_ROOT is not set (tests/unit/meson.build sets it)");
	snprintf(path, sizeof(path), "%s/docs/security.md", root);
	f = fopen(path, "r");
	if (!f)
		fail_msg("cannot read %s", path);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	buf = malloc((size_t)len + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
	buf[len] = '\0';
	fclose(f);
	return buf;
}

/*
 * The names in the first column of the table whose header line starts
 * with `header`, after `section`: "poll, ppoll" is two, "open (read-only,
 * ...)" is open, backticks go.
 */
static void doc_table(const char *doc, const char *section, const char *header,
		      struct name_list *out)
{
	const char *p = strstr(doc, section);

	out->n = 0;
	if (!p || !(p = strstr(p, header)))
		fail_msg("docs/security.md has no table '%s' after '%s'", header, section);
	p = strchr(p, '\n') + 1;             /* the header */
	p = strchr(p, '\n') + 1;             /* |---|---| */
	while (*p == '|') {
		const char *end = strchr(p + 1, '|');
		int depth = 0;
		char cur[40];
		size_t len = 0;

		for (const char *c = p + 1; c <= end; c++) {
			if (*c == '(')
				depth++;
			else if (*c == ')')
				depth--;
			else if (depth == 0 && (*c == ',' || *c == '|')) {
				while (len && cur[len - 1] == ' ')
					len--;
				cur[len] = '\0';
				if (len) {
					assert_true(out->n < DOC_NAMES);
					strcpy(out->name[out->n++], cur);
				}
				len = 0;
			} else if (depth == 0 && *c != '`' && !(*c == ' ' && len == 0) &&
				   len < sizeof(cur) - 1) {
				cur[len++] = *c;
			}
		}
		p = strchr(p, '\n');
		if (!p)
			break;
		p++;
	}
}

static bool listed(const struct name_list *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->name[i], name) == 0)
			return true;
	return false;
}

/* The doc's list and the code's hold the same names, each once. */
static void same_names(const char *what, const struct name_list *doc,
		       const char *const *code, size_t n)
{
	struct name_list c = { .n = 0 };

	for (size_t i = 0; i < n; i++) {
		if (!listed(doc, code[i]))
			fail_msg("%s: sandbox.c has %s, docs/security.md does not", what, code[i]);
		strcpy(c.name[c.n++], code[i]);
	}
	for (size_t i = 0; i < doc->n; i++) {
		if (!listed(&c, doc->name[i]))
			fail_msg("%s: docs/security.md has %s, sandbox.c does not", what, doc->name[i]);
		for (size_t j = 0; j < i; j++)
			if (strcmp(doc->name[i], doc->name[j]) == 0)
				fail_msg("%s: docs/security.md lists %s twice", what, doc->name[i]);
	}
}

static void security_md_lists_what_sandbox_c_allows(void **state)
{
	char *doc = read_security_md();
	struct name_list *t = calloc(1, sizeof(*t));
	const char *names[DOC_NAMES];
	size_t n;
	const struct sandbox_rule *r;
	const struct sandbox_ioctl *io;

	(void)state;
	assert_non_null(t);
	r = sandbox_rules(&n);
	assert_true(n <= DOC_NAMES);
	for (size_t i = 0; i < n; i++)
		names[i] = r[i].name;
	doc_table(doc, "### The allow list", "| system call | arguments allowed | why |", t);
	same_names("system calls", t, names, n);

	io = sandbox_ioctls(&n);
	for (size_t i = 0; i < n; i++)
		names[i] = io[i].name;
	doc_table(doc, "### The allow list", "| request | why |", t);
	same_names("KVM ioctls", t, names, n);

	/* Only a sanitizer build has its extra rules to compare. */
	r = sandbox_sanitizer_rules(&n);
	doc_table(doc, "## Sanitizer builds", "| system call | why |", t);
	if (r) {
		for (size_t i = 0; i < n; i++)
			names[i] = r[i].name;
		same_names("sanitizer system calls", t, names, n);
	} else {
		assert_true(t->n > 0);
	}
	free(t);
	free(doc);
}

/* ------------------------------------------------------------ children */

/* Exit statuses a child uses to say which check failed before the end. */
enum { CHILD_OK = 0, CHILD_BROKEN = 10 };

static void *thread_fn(void *arg)
{
	return arg;
}

static void child_allowed(void)
{
	static int token;
	pthread_t t;
	void *ret = NULL;
	void *p;

	if (getpid() <= 0)
		_exit(CHILD_BROKEN + 1);
	/* glibc must be able to fall back from clone3 to clone. */
	if (syscall(SYS_clone3, NULL, 0) != -1 || errno != ENOSYS)
		_exit(CHILD_BROKEN + 2);
	if (pthread_create(&t, NULL, thread_fn, &token) || pthread_join(t, &ret) || ret != &token)
		_exit(CHILD_BROKEN + 3);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || munmap(p, 4096))
		_exit(CHILD_BROKEN + 4);
	_exit(CHILD_OK);
}

static void child_socket(void)
{
	syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
}

static void child_execve(void)
{
	char *const argv[] = { "true", NULL };

	syscall(SYS_execve, "/bin/true", argv, environ);
}

static void child_openat(void)
{
	syscall(SYS_openat, AT_FDCWD, "/etc/hostname", O_RDONLY);
}

static void child_open_write(void)
{
	syscall(SYS_open, "/tmp/vmm-sandbox-test", O_WRONLY | O_CREAT, 0600);
}

static void child_mmap_exec(void)
{
	syscall(SYS_mmap, NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

static void child_create_vm(void)
{
	syscall(SYS_ioctl, 0, KVM_CREATE_VM, 0);
}

static pid_t parent;

static void child_kill_parent(void)
{
	/* Signal 0 only checks permission: harmless if it got through. */
	syscall(SYS_tgkill, parent, parent, 0);
}

static void child_fork(void)
{
	/* fork() as the kernel sees it: clone without CLONE_THREAD. */
	if (syscall(SYS_clone, SIGCHLD, 0, NULL, NULL, 0) == 0)
		_exit(CHILD_BROKEN + 5);
}

/*
 * Runs fn in a sandboxed child. Returns its exit status (or 1000 + the
 * signal that killed it) and what it wrote on stderr.
 */
static int in_sandbox(void (*fn)(void), char *err, size_t size)
{
	int fds[2], status;
	size_t len = 0;
	ssize_t r;
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], STDERR_FILENO);
		close(fds[0]);
		sandbox_enter();
		fn();
		_exit(CHILD_BROKEN);	/* the call came back: it was allowed */
	}
	close(fds[1]);
	while (len + 1 < size && (r = read(fds[0], err + len, size - 1 - len)) > 0)
		len += (size_t)r;
	err[len] = '\0';
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1000 + WTERMSIG(status);
}

static void expect_refused(void (*fn)(void), const char *what)
{
	char err[512];
	int status = in_sandbox(fn, err, sizeof(err));

	if (status != VMM_EXIT_SOFTWARE)
		fail_msg("%s: child exit status %d, expected %d; stderr: %s", what, status,
			 VMM_EXIT_SOFTWARE, err);
	if (!strstr(err, "vmm: error: seccomp: forbidden system call ") ||
	    !strstr(err, what) || !strstr(err, "this is a bug in vmm"))
		fail_msg("%s: stderr is '%s'", what, err);
}

static void allowed_calls_work(void **state)
{
	char err[512];
	int status;

	(void)state;
	status = in_sandbox(child_allowed, err, sizeof(err));
	if (status != CHILD_OK)
		fail_msg("child exit status %d; stderr: %s", status, err);
}

static void forbidden_calls_stop_with_a_message(void **state)
{
	(void)state;
	expect_refused(child_socket, "(socket)");
	expect_refused(child_execve, "(execve)");
	expect_refused(child_openat, "(openat)");
	expect_refused(child_open_write, "(open)");
	expect_refused(child_mmap_exec, "(mmap)");
	expect_refused(child_create_vm, "(ioctl, request 0xae01)");
	parent = getpid();
	expect_refused(child_kill_parent, "(tgkill)");
	if (sandbox_find("clone")->check == SANDBOX_THREAD_ONLY)
		expect_refused(child_fork, "(clone)");
}

/* Reads "Field:\tvalue" from /proc/PID/status. */
static void status_field(pid_t pid, const char *field, char *val, size_t size)
{
	char path[64], line[256];
	size_t len = strlen(field);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	assert_non_null(f);
	*val = '\0';
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, len) == 0 && line[len] == ':') {
			snprintf(val, size, "%s", line + len + 1 + strspn(line + len + 1, " \t"));
			val[strcspn(val, "\n")] = '\0';
		}
	fclose(f);
}

static void child_reports_no_privileges(void **state)
{
	int ready[2], go[2], status;
	char c = 0, val[64];
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(go), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		sandbox_enter();
		if (write(ready[1], "r", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(CHILD_BROKEN);
		_exit(CHILD_OK);
	}
	assert_int_equal(read(ready[0], &c, 1), 1);
	status_field(pid, "CapEff", val, sizeof(val));
	assert_string_equal(val, "0000000000000000");
	status_field(pid, "CapPrm", val, sizeof(val));
	assert_string_equal(val, "0000000000000000");
	status_field(pid, "CapInh", val, sizeof(val));
	assert_string_equal(val, "0000000000000000");
	status_field(pid, "CapAmb", val, sizeof(val));
	assert_string_equal(val, "0000000000000000");
	/* Only a process holding CAP_SETPCAP can shrink its bounding set. */
	if (geteuid() == 0) {
		status_field(pid, "CapBnd", val, sizeof(val));
		assert_string_equal(val, "0000000000000000");
	}
	status_field(pid, "NoNewPrivs", val, sizeof(val));
	assert_string_equal(val, "1");
	status_field(pid, "Seccomp", val, sizeof(val));
	assert_string_equal(val, "2");
	assert_int_equal(write(go[1], "g", 1), 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), CHILD_OK);
	close(ready[0]);
	close(ready[1]);
	close(go[0]);
	close(go[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(run_loop_needs_are_allowed),
		cmocka_unit_test(dangerous_calls_are_refused),
		cmocka_unit_test(every_rule_resolves_and_says_why),
		cmocka_unit_test(kvm_ioctls),
		cmocka_unit_test(security_md_lists_what_sandbox_c_allows),
		cmocka_unit_test(allowed_calls_work),
		cmocka_unit_test(forbidden_calls_stop_with_a_message),
		cmocka_unit_test(child_reports_no_privileges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
