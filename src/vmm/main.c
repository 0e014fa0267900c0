/* SPDX-License-Identifier: MIT */
/* vmm: boots a guest image on /dev/kvm. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "boot.h"
#include "cli.h"
#include "hostinfo.h"
#include "kvm.h"
#include "loader.h"
#include "log.h"
#include "sandbox.h"
#include "vcpu.h"
#include "vm.h"
#include "vmm_msr.h"
#include "vmm_status.h"
#include "array_size.h"

#ifndef VMM_VERSION
#define VMM_VERSION "unknown"
#endif
/* Where `meson install` puts the self-test guest (meson.build sets it). */
#ifndef VMM_SELF_TEST_IMAGE
#define VMM_SELF_TEST_IMAGE "/usr/local/share/vmm/guest.bin"
#endif

static const struct kvm_cap_need base_caps[] = {
	{ KVM_CAP_USER_MEMORY, "KVM_CAP_USER_MEMORY", "guest RAM" },
	{ KVM_CAP_EXT_CPUID, "KVM_CAP_EXT_CPUID", "the guest's CPUID table" },
	{ KVM_CAP_IMMEDIATE_EXIT, "KVM_CAP_IMMEDIATE_EXIT",
	  "stopping vCPUs without a race (--timeout, SIGINT)" },
	{ KVM_CAP_X86_USER_SPACE_MSR, "KVM_CAP_X86_USER_SPACE_MSR",
	  "emulating TEST_CTRL and CORE_CAPABILITIES in the VMM" },
	{ KVM_CAP_X86_MSR_FILTER, "KVM_CAP_X86_MSR_FILTER",
	  "routing MSRs 0x33 and 0xcf to the VMM" },
	{ KVM_CAP_VCPU_EVENTS, "KVM_CAP_VCPU_EVENTS", "injecting split-lock #AC" },
};

static const uint32_t emulated_msrs[] = { MSR_TEST_CTRL, MSR_IA32_CORE_CAPABILITIES };

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint8_t *alloc_guest_ram(uint64_t size)
{
	void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (mem == MAP_FAILED)
		die_errno("mmap of guest RAM", errno, "try a smaller -m");
	return mem;
}

static const struct kvm_cap_need stepping_caps[] = {
	{ KVM_CAP_SET_GUEST_DEBUG, "KVM_CAP_SET_GUEST_DEBUG",
	  "single-stepping the guest under --split-lock=emulate" },
	{ KVM_CAP_SYNC_REGS, "KVM_CAP_SYNC_REGS",
	  "cheap register access on every single-step under --split-lock=emulate" },
};

/* What this KVM can do for --split-lock=emulate, probed once, before the layout is built. */
struct kvm_probes {
	bool step_cpl3;     /* single-steps CPL3 code */
	bool step_hwbp;     /* stops on a KVM_GUESTDBG_USE_HW_BP breakpoint */
	bool guest_databp;  /* the guest's own data breakpoints fire at CPL0 */
};

/*
 * --split-lock=emulate single-steps the guest: find out where this KVM can.
 * Without CPL3 stepping the guest is told, in boot_info, that split locks at
 * CPL3 go unseen.
 */
static void probe_kvm(int kvm_fd, bool emulate, struct kvm_probes *p)
{
	char err[160] = "";
	int cpl0;

	memset(p, 0, sizeof(*p));
	if (!emulate)
		return;
	kvm_require(kvm_fd, stepping_caps, ARRAY_SIZE(stepping_caps));
	if ((kvm_cap(kvm_fd, KVM_CAP_SYNC_REGS) & (KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS)) !=
	    (KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS))
		die(VMM_EXIT_HOST, "this host's KVM cannot sync registers and sregs in the run page, which --split-lock=emulate needs");
	cpl0 = hostinfo_probe_singlestep(kvm_fd, 0, err, sizeof(err));
	if (cpl0 != 1)
		die(VMM_EXIT_HOST, "--split-lock=emulate needs KVM single-stepping, and on this host it %s%s",
		    cpl0 == 0 ? "does not stop after one instruction" : "could not be probed: ", err);
	p->step_cpl3 = hostinfo_probe_singlestep(kvm_fd, 3, NULL, 0) == 1;
	if (!p->step_cpl3)
		info("split-lock emulation: this KVM cannot single-step CPL3 code, so split locks at CPL3 are not detected");
	/* Tests take the path of hosts without working breakpoints (the lab's) here too. */
	p->step_hwbp = !getenv("VMM_TEST_NO_HWBP") && hostinfo_probe_hwbp(kvm_fd, NULL, 0) == 1;
	p->guest_databp = hostinfo_probe_databp(kvm_fd, NULL, 0) == 1;
}

/* The VM on the already open vm->kvm_fd, over vm->mem as laid out. */
static void vm_create(struct vm *vm, const struct cli_options *o,
		      const struct boot_layout *layout, const struct kvm_probes *probes)
{
	struct kvm_cpuid2 *cpuid;
	unsigned max;

	vm->step_cpl3 = probes->step_cpl3;
	vm->step_hwbp = probes->step_hwbp;
	vm->guest_databp = probes->guest_databp;
	kvm_require(vm->kvm_fd, base_caps, ARRAY_SIZE(base_caps));
	max = kvm_max_vcpus(vm->kvm_fd);
	if (o->cpus > max)
		die(VMM_EXIT_USAGE, "--cpus %u is more than this host's KVM allows (%u)",
		    o->cpus, max);
	vm->vm_fd = kvm_vm_create(vm->kvm_fd, vm->mem, vm->ram_size);
	kvm_route_msrs_to_user(vm->vm_fd, emulated_msrs, ARRAY_SIZE(emulated_msrs));
	vm->run_size = kvm_run_size(vm->kvm_fd);
	cpuid = kvm_supported_cpuid(vm->kvm_fd);
	for (unsigned i = 0; i < vm->ncpus; i++)
		vcpu_create(&vm->vcpus[i], cpuid, layout);
	free(cpuid);
}

/* Everything vm_init_common, main and vm_create acquired for the VM. */
static void vm_destroy(struct vm *vm)
{
	for (unsigned i = 0; i < vm->ncpus; i++)
		vcpu_destroy(&vm->vcpus[i]);
	if (vm->vm_fd >= 0)
		close(vm->vm_fd);
	if (vm->kvm_fd >= 0)
		close(vm->kvm_fd);
	if (vm->mem)
		munmap(vm->mem, vm->ram_size);
	vm_destroy_common(vm);
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

/* Waits for the VM to stop, a stop signal, or the watchdog. */
static void wait_for_stop(struct vm *vm, int sig_fd, uint64_t timeout_ms)
{
	uint64_t deadline = timeout_ms ? now_ms() + timeout_ms : 0;

	while (!vm_stopping(vm)) {
		struct pollfd fds[2] = {
			{ .fd = vm->stop_fd, .events = POLLIN },
			{ .fd = sig_fd, .events = POLLIN },
		};
		int wait = -1;

		if (deadline) {
			uint64_t now = now_ms();

			if (now >= deadline) {
				vm_fail(vm, VMM_EXIT_TIMEOUT,
					"--timeout of %.3g s expired; stopping the VM (a guest spinning or waiting with interrupts off?)",
					(double)timeout_ms / 1000.0);
				return;
			}
			wait = (int)(deadline - now > 60000 ? 60000 : deadline - now);
		}
		if (poll(fds, 2, wait) < 0 && errno != EINTR)
			die_errno("poll", errno, NULL);
		if (fds[1].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(sig_fd, &si, sizeof(si)) == sizeof(si) &&
			    vm_stop(vm, VMM_EXIT_SIGNAL_BASE + (int)si.ssi_signo))
				fprintf(stderr, "vmm: stopping the VM on %s\n",
					strsignal((int)si.ssi_signo));
		}
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
	return fflush(stdout) == 0 ? 0 : VMM_EXIT_HOST;
}

/* Decides this VM's split-lock policy before anything is allocated. */
static void decide_split_lock(struct vm *vm, const struct cli_options *o)
{
	struct hostinfo hi;
	struct policy_decision d;

	hostinfo_init(&hi);
	hostinfo_read_proc(&hi);
	policy_decide(o->split_lock, &hi, &d);
	if (!d.start)
		die(VMM_EXIT_POLICY, "%s", d.line);
	info("%s", d.line);
	vm->split_lock_enumerated = d.enumerate;
	vm->split_lock_emulate = o->split_lock == POLICY_EMULATE;
	ratelimit_init(&vm->split_lock_rate, o->split_lock_ratelimit, o->split_lock_ratelimit);
}

/*
 * Opened before the guest runs, so that a file that cannot be written is
 * an error at once rather than lost work at the end, and before the
 * sandbox, which refuses open(). The buffer is allocated now too: glibc
 * would otherwise fstat() the file at the first write.
 */
static FILE *open_stats(const char *path)
{
	FILE *out;
	int err;

	if (!path)
		return stderr;
	if (!(out = fopen(path, "w")) || setvbuf(out, NULL, _IOFBF, BUFSIZ) != 0) {
		err = errno;
		if (out)
			fclose(out);
		die(VMM_EXIT_USAGE, "--stats: cannot write '%s': %s", path, strerror(err));
	}
	return out;
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
 * --self-test: the installed guest, else the one built beside this vmm (a
 * build tree has build/vmm and build/guest.bin), so that the same command
 * works installed and uninstalled.
 */
static const char *self_test_image(void)
{
	static char beside[4096];
	ssize_t n = readlink("/proc/self/exe", beside, sizeof(beside) - 1);
	char *slash;

	if (access(VMM_SELF_TEST_IMAGE, R_OK) == 0)
		return VMM_SELF_TEST_IMAGE;
	if (n > 0) {
		beside[n] = '\0';
		slash = strrchr(beside, '/');
		if (slash && (size_t)(slash - beside) + sizeof("/guest.bin") <= sizeof(beside)) {
			strcpy(slash, "/guest.bin");
			if (access(beside, R_OK) == 0)
				return beside;
		}
	}
	die(VMM_EXIT_IMAGE, "--self-test: no self-test guest at %s nor beside this vmm; "
	    "install it with 'meson install' or name an image: vmm [options] guest.bin",
	    VMM_SELF_TEST_IMAGE);
}

static void print_stats(const struct vm *vm, FILE *out, const char *path)
{
	vm_print_stats(out, vm);
	if (out != stderr && fclose(out) != 0)
		warn("--stats: writing '%s' failed: %s", path, strerror(errno));
}

int main(int argc, char **argv)
{
	struct cli_options opts;
	struct boot_layout layout;
	struct kvm_probes probes;
	struct vm vm;
	char err[512];
	int sig_fd, status;
	FILE *stats_out = NULL;

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
		stats_out = open_stats(opts.stats_path);
	/* From here a stop signal is held until the VM runs, then stops it. */
	sig_fd = block_stop_signals();

	if (vm_init_common(&vm, opts.split_lock, opts.cpus, STDOUT_FILENO))
		die_errno("setting up the VM", errno, NULL);
	decide_split_lock(&vm, &opts);
	vm.ram_size = opts.ram_size;
	vm.mem = alloc_guest_ram(opts.ram_size);
	layout = (struct boot_layout){
		.ram_size = opts.ram_size, .cpus = opts.cpus, .cmdline = opts.append,
	};
	if (loader_load(opts.image, vm.mem, opts.ram_size, opts.cpus,
			&layout.image_size, err, sizeof(err)))
		die(VMM_EXIT_IMAGE, "%s", err);
	/* Probed before the layout is built: its boot flags depend on the answers. */
	vm.kvm_fd = kvm_open();
	probe_kvm(vm.kvm_fd, vm.split_lock_emulate, &probes);
	if (vm.split_lock_emulate && !probes.step_cpl3)
		layout.flags |= BOOT_FLAG_SPLIT_LOCK_CPL0_ONLY;
	boot_setup_memory(vm.mem, &layout);

	vm_create(&vm, &opts, &layout, &probes);
	vcpu_signals_init();
	sandbox_enter();
	start_vcpus(&vm);
	sandbox_test_hook();
	wait_for_stop(&vm, sig_fd, opts.timeout_ms);
	for (unsigned i = 0; i < vm.ncpus; i++)
		if (vm.vcpus[i].started)
			pthread_join(vm.vcpus[i].thread, NULL);
	serial_flush_all(&vm.serial);
	if (vm.status == VMM_EXIT_TIMEOUT)
		for (unsigned i = 0; i < vm.ncpus; i++)
			vcpu_report_rip(&vm.vcpus[i]);

	status = vm.status;
	if (opts.stats)
		print_stats(&vm, stats_out, opts.stats_path);
	close(sig_fd);
	vm_destroy(&vm);
	return status;
}
