/* SPDX-License-Identifier: MIT */
/* vmm: boots a guest image on /dev/kvm. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "array_size.h"
#include "boot.h"
#include "cli.h"
#include "console.h"
#include "tty.h"
#include "hostinfo.h"
#include "loader.h"
#include "log.h"
#include "sandbox.h"
#include "vcpu.h"
#include "vm.h"
#include "vmm_status.h"

#ifndef VMM_VERSION
#define VMM_VERSION "unknown"
#endif
/* Where `meson install` puts the self-test guest (meson.build sets it). */
#ifndef VMM_SELF_TEST_IMAGE
#define VMM_SELF_TEST_IMAGE "/usr/local/share/vmm/guest.bin"
#endif

/* While COM1's input queue is full, stdin is looked at again this often. */
#define CONSOLE_RETRY_MS 10

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * The stop signals (vm_stop_signals) are blocked in every thread and read
 * from a signalfd here, so the main thread is the only one that sees them.
 */
static int block_stop_signals(void)
{
	sigset_t set;
	int fd;

	vm_stop_signals(&set);
	sigaddset(&set, VM_KICK_SIGNAL);
	if (pthread_sigmask(SIG_BLOCK, &set, NULL))
		die(VMM_EXIT_HOST, "pthread_sigmask failed");
	sigdelset(&set, VM_KICK_SIGNAL);
	fd = signalfd(-1, &set, SFD_CLOEXEC);
	if (fd < 0)
		die_errno("signalfd", errno, NULL);
	return fd;
}

static void start_vcpus(struct vm *vm)
{
	pthread_attr_t attr;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	for (unsigned i = 0; i < vm->ncpus; i++) {
		int r = vm_start_vcpu(vm, &vm->vcpus[i], &attr, vcpu_thread);

		if (r) {
			vm_fail(vm, VMM_EXIT_HOST, "starting the thread of vCPU %u failed: %s (errno %d)",
				i, strerror(r), r);
			break;
		}
	}
	pthread_attr_destroy(&attr);
}

/* How long to wait: up to the deadline, a minute at most, briefly while input waits. */
static int poll_wait(uint64_t deadline, bool retry)
{
	int wait = -1;

	if (deadline) {
		uint64_t now = now_ms(), left = now < deadline ? deadline - now : 0;

		wait = (int)(left > 60000 ? 60000 : left);
	}
	if (retry && (wait < 0 || wait > CONSOLE_RETRY_MS))
		wait = CONSOLE_RETRY_MS;
	return wait;
}

static void stop_on_signal(struct vm *vm, int sig_fd)
{
	struct signalfd_siginfo si;

	if (read(sig_fd, &si, sizeof(si)) == sizeof(si) &&
	    vm_stop(vm, VMM_EXIT_SIGNAL_BASE + (int)si.ssi_signo))
		fprintf(stderr, "vmm: stopping the VM on %s\n", strsignal((int)si.ssi_signo));
}

/*
 * Waits for the VM to stop, a stop signal, or the watchdog; on the PC
 * machine it also hands the console's input to COM1 (console.c).
 */
static void wait_for_stop(struct vm *vm, int sig_fd, uint64_t timeout_ms, struct console *con)
{
	uint64_t deadline = timeout_ms ? now_ms() + timeout_ms : 0;

	while (!vm_stopping(vm)) {
		bool retry;
		struct pollfd fds[3] = {
			{ .fd = vm->stop_fd, .events = POLLIN },
			{ .fd = sig_fd, .events = POLLIN },
			{ .fd = console_poll_fd(con, vm, &retry), .events = POLLIN },
		};

		if (deadline && now_ms() >= deadline) {
			vm_fail(vm, VMM_EXIT_TIMEOUT,
				"--timeout of %.3g s expired; stopping the VM (a guest spinning or waiting with interrupts off?)",
				(double)timeout_ms / 1000.0);
			return;
		}
		if (poll(fds, 3, poll_wait(deadline, retry)) < 0 && errno != EINTR)
			die_errno("poll", errno, NULL);
		if (fds[1].revents & POLLIN)
			stop_on_signal(vm, sig_fd);
		if (fds[2].fd >= 0 && fds[2].revents)
			console_read(con, vm);
	}
}

static int host_info(const struct cli_options *o)
{
	struct hostinfo hi;

	hostinfo_init(&hi);
	hostinfo_read_proc(&hi);
	hostinfo_read_kvm(&hi, true);
	if (o->json)
		hostinfo_print_json(stdout, &hi);
	else
		hostinfo_print(stdout, &hi);
	if (fflush(stdout) != 0) {
		errmsg("--host-info: writing the report failed: %s", strerror(errno));
		return VMM_EXIT_IOERR;
	}
	return 0;
}

/*
 * Decides this VM's split-lock policy before anything is allocated. The
 * line saying so waits in d until the VM starts; a refusal is the error.
 */
static int decide_split_lock(const struct cli_options *o, struct vm_config *c,
			     struct policy_decision *d)
{
	struct hostinfo hi;

	hostinfo_init(&hi);
	hostinfo_read_proc(&hi);
	policy_decide(o->split_lock, o->split_lock_watch, &hi, d);
	if (!d->start) {
		errmsg("%s", d->line);
		return VMM_EXIT_POLICY;
	}
	c->split_lock_enumerated = d->enumerate;
	c->split_lock_emulate = o->split_lock == POLICY_EMULATE;
	c->split_lock_watch = o->split_lock_watch;
	c->cpuid_hypervisor = o->cpuid_hypervisor;
	return 0;
}

/*
 * Opened before the guest runs, so that a file that cannot be written is
 * an error at once rather than lost work at the end, and before the
 * sandbox, which refuses open(). Non-blocking, so that a FIFO nobody reads
 * is an error rather than a hang. The buffer is allocated now too: glibc
 * would otherwise fstat() the file at the first write.
 */
static FILE *open_stats(const char *path)
{
	FILE *out = NULL;
	int fd, err;

	if (!path)
		return stderr;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK, 0666);
	if (fd >= 0 && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) == 0 &&
	    (out = fdopen(fd, "w")) && setvbuf(out, NULL, _IOFBF, BUFSIZ) == 0)
		return out;
	err = errno;
	if (out)
		fclose(out);
	else if (fd >= 0)
		close(fd);
	die(VMM_EXIT_CANTCREAT, "--stats: cannot write '%s': %s", path,
	    err == ENXIO ? "a FIFO that nobody reads" : strerror(err));
}

/*
 * With descriptor 0, 1 or 2 closed, the first descriptor vmm opens would
 * take its place: the stop eventfd as stdout would receive the guest's
 * console. /dev/null stands in for a closed one.
 */
static void fill_standard_fds(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		/* The lowest free descriptor, and those below are open: it is fd. */
		if (open("/dev/null", O_RDWR) != fd)
			die_errno("open of /dev/null for a closed standard descriptor", errno, NULL);
	}
}

/*
 * --self-test: the guest installed beside this vmm (BINDIR/../share/vmm, so
 * that a relocated install finds its own), at the configured prefix, or
 * built beside it (a build tree has build/vmm and build/guest.bin).
 */
static const char *self_test_image(void)
{
	static const char *const beside[] = { "/../share/vmm/guest.bin", "/guest.bin" };
	static char path[4096];
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash = NULL;

	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
	}
	for (size_t i = 0; slash && i < ARRAY_SIZE(beside); i++) {
		*slash = '\0';
		if ((size_t)snprintf(path, sizeof(path), "%s%s", exe, beside[i]) < sizeof(path) &&
		    access(path, R_OK) == 0)
			return path;
	}
	if (access(VMM_SELF_TEST_IMAGE, R_OK) == 0)
		return VMM_SELF_TEST_IMAGE;
	die(VMM_EXIT_NOINPUT, "--self-test: no self-test guest beside this vmm (../share/vmm/guest.bin "
	    "or guest.bin) nor at %s; install it with 'meson install' or name an image: "
	    "vmm [options] guest.bin", VMM_SELF_TEST_IMAGE);
}

/*
 * A VM stopped by signal N ends vmm by that signal once cleaned up, so that
 * a shell loop sees it (Ctrl-C stops the loop too). The status 128+N stays
 * in --stats.
 */
static void die_by_signal(int status)
{
	int sig = status - VMM_EXIT_SIGNAL_BASE;
	sigset_t set;

	if (sig <= 0 || sig >= NSIG)
		return;
	fflush(NULL);
	signal(sig, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	raise(sig);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

static void close_stats(FILE *out, const char *path)
{
	if (out && out != stderr && fclose(out) != 0)
		warn("--stats: writing '%s' failed: %s", path, strerror(errno));
}

/* --stats once opened: written whatever ends vmm, a VM that never ran included. */
static struct {
	FILE *out;
	const char *path;
	enum policy policy;
	bool done;
} stats_file;

/* on_exit: vmm stopped before its VM ran (an error, or die()). */
static void stats_at_exit(int status, void *arg)
{
	(void)arg;
	if (stats_file.done)
		return;
	stats_file.done = true;
	fprintf(stats_file.out,
		"{\"status\":%d,\"split_lock\":{\"policy\":\"%s\",\"enumerated\":false},\"vcpus\":[]}\n",
		status, policy_name(stats_file.policy));
	close_stats(stats_file.out, stats_file.path);
}

static void stats_start(const struct cli_options *o)
{
	stats_file = (typeof(stats_file)){
		.out = open_stats(o->stats_path), .path = o->stats_path, .policy = o->split_lock,
	};
	if (on_exit(stats_at_exit, NULL))
		die(VMM_EXIT_HOST, "on_exit failed");
}

/*
 * Reads and recognises the image, before /dev/kvm is opened so that a bad
 * one is reported on any host; its kind decides the machine.
 */
static int open_image(const struct cli_options *o, struct vm_config *c, struct loader_image *img)
{
	struct boot_layout *l = (struct boot_layout *)c->layout;
	char err[512];
	int r = loader_open(img, o->image, o->initrd, o->ram_size, err, sizeof(err));

	if (r) {
		errmsg("%s", err);
		return r == LOADER_NO_INPUT ? VMM_EXIT_NOINPUT :
		       r == LOADER_USAGE ? VMM_EXIT_USAGE : VMM_EXIT_IMAGE;
	}
	c->image = img;
	c->machine = loader_machine(img);
	/* Probed before the layout is built: its boot flags depend on the answers. */
	*l = (struct boot_layout){ .ram_size = o->ram_size, .cpus = o->cpus, .cmdline = o->append };
	if (c->split_lock_emulate && !c->host.step_cpl3)
		l->flags |= BOOT_FLAG_SPLIT_LOCK_CPL0_ONLY;
	return 0;
}

/*
 * The PC machine's console input: stdin, a terminal in raw mode. Not a
 * terminal in the background: that would stop vmm (SIGTTIN, SIGTTOU).
 */
static void console_start(const struct vm *vm, struct console *con)
{
	console_init(con, STDIN_FILENO);
	if (vm->machine != MACHINE_PC)
		return;
	if (tty_in_background(STDIN_FILENO)) {
		con->done = true;
		info("standard input is a terminal and vmm runs in the background: the guest gets no console input");
	} else if (tty_raw(STDIN_FILENO)) {
		info("the console is in raw mode: Ctrl-A x stops the VM, Ctrl-A Ctrl-A sends Ctrl-A");
	}
}

/* Runs the VM to its end; its status, --stats written. */
static int run(struct vm *vm, const struct cli_options *o, const struct policy_decision *d,
	       int sig_fd)
{
	struct console con;
	int status;

	vcpu_signals_init();
	console_start(vm, &con);
	sandbox_enter();
	info("%s", d->line);
	start_vcpus(vm);
	wait_for_stop(vm, sig_fd, o->timeout_ms, &con);
	for (unsigned i = 0; i < vm->ncpus; i++)
		if (vm->vcpus[i].started)
			pthread_join(vm->vcpus[i].thread, NULL);
	serial_flush_all(&vm->serial);
	if (vm->status == VMM_EXIT_TIMEOUT)
		for (unsigned i = 0; i < vm->ncpus; i++)
			vcpu_report_rip(&vm->vcpus[i]);

	status = vm->status;
	if (o->stats) {
		vm_print_stats(stats_file.out, vm);
		stats_file.done = true;
		close_stats(stats_file.out, stats_file.path);
	}
	return status;
}

int main(int argc, char **argv)
{
	struct cli_options opts;
	struct boot_layout layout;
	struct vm_config config;
	struct vm vm;
	struct policy_decision decision;
	struct loader_image image = { 0 };
	char err[512];
	int sig_fd, status;

	fill_standard_fds();
	switch (cli_parse(argc, argv, &opts, err, sizeof(err))) {
	case CLI_HELP:
		cli_usage(stdout);
		return 0;
	case CLI_VERSION:
		printf("vmm %s\n", VMM_VERSION);
		return 0;
	case CLI_ERROR:
		errmsg("%s", err);
		return VMM_EXIT_USAGE;
	case CLI_RUN:
		break;
	}
	log_set_quiet(opts.quiet);
	signal(SIGPIPE, SIG_IGN);
	if (opts.host_info)
		return host_info(&opts);
	if (opts.self_test)
		opts.image = self_test_image();
	if (opts.stats)
		stats_start(&opts);
	/* From here a stop signal is held until the VM runs, then stops it. */
	sig_fd = block_stop_signals();

	config = (struct vm_config){
		.policy = opts.split_lock, .split_lock_ratelimit = opts.split_lock_ratelimit,
		.layout = &layout, .console_fd = STDOUT_FILENO,
		.host_quirks = opts.host_quirks,
	};
	status = decide_split_lock(&opts, &config, &decision);
	if (!status)
		status = vm_probe(config.split_lock_emulate, opts.host_quirks, &config.host);
	if (!status)
		status = open_image(&opts, &config, &image);
	if (status)
		goto out;
	status = vm_create(&vm, &config);
	/* In guest RAM now, or refused. */
	loader_close(&image);
	if (status)
		goto out;

	status = run(&vm, &opts, &decision, sig_fd);
	vm_destroy(&vm);
out:
	loader_close(&image);
	close(sig_fd);
	tty_restore();
	die_by_signal(status);
	return status;
}
